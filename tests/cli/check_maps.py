#!/usr/bin/env python3
"""Every folder's map - the "Layout of" or file list in the comment that
opens its header - names each of the folder's source files, and names no
file that is not there (a name may be a glob such as interceptors_*.c, or
a subfolder with a slash). A newcomer reads the map to know where things
are: a map that misses a file, or names one that went, misleads. And no
product source file is longer than 500 lines: one concern per file."""
import fnmatch
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
MAPS = {"shim": "shim/shim.h", "shim/guard": "shim/guard/guard_internal.h",
        "report": "report/report.h"}
SOURCE = re.compile(r".*\.(c|h|inc|S|in|cmake|css|js)$")
# A map line: " *   name[, name...]   what it is" (two spaces or more on each side).
ENTRY = re.compile(r"^[ \t]*\*[ \t]{2,}([\w*./]+(?:, [\w*./]+)*)[ \t]{2,}\S", re.M)

problems = []
for folder, header in MAPS.items():
    text = open(os.path.join(ROOT, header)).read()
    comment = text[:text.index("*/")]
    names = {n for entry in ENTRY.findall(comment) for n in entry.split(", ")}
    files = [f for f in os.listdir(os.path.join(ROOT, folder))
             if SOURCE.match(f) and f != os.path.basename(header)]
    dirs = [d + "/" for d in os.listdir(os.path.join(ROOT, folder))
            if os.path.isdir(os.path.join(ROOT, folder, d))]
    for f in files:
        if f.endswith(".h") and f[:-2] + ".c" in files:
            continue  # a file's own header goes with it
        if f == "CMakeLists.txt":
            continue
        if not any(fnmatch.fnmatch(f, n) for n in names):
            problems.append(f"{header}: the map does not name {folder}/{f}")
    for n in names:
        if n.endswith("/"):
            if n not in dirs:
                problems.append(f"{header}: the map names {folder}/{n}, which is not there")
        elif not any(fnmatch.fnmatch(f, n) for f in files) and \
                not os.path.exists(os.path.join(ROOT, n)):
            problems.append(f"{header}: the map names {n}, which is not in {folder}")
PRODUCT = ["base", "cli", "report", "rules", "shim", "shim/guard"]
LIMIT = 500
for folder in PRODUCT:
    for f in sorted(os.listdir(os.path.join(ROOT, folder))):
        if f.endswith((".c", ".h")):
            lines = sum(1 for _ in open(os.path.join(ROOT, folder, f)))
            if lines > LIMIT:
                problems.append(f"{folder}/{f}: {lines} lines, more than {LIMIT}")
for p in problems:
    print(p)
print(f"check_maps: {len(MAPS)} maps, {len(problems)} problems")
sys.exit(1 if problems else 0)
