#!/usr/bin/env python3
"""Every lock of the product is a row of base/locks.inc: no mutex, rwlock or
spinlock is defined anywhere else (a pointer to one, a parameter, is no lock of ours) (the fork handlers and the order checks
are made from the table, and a lock outside it is outside both), and every
row is named in docs/design.md's paragraph on locks."""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
FOLDERS = ["base", "rules", "report", "cli", "shim"]
LOCK_TYPES = re.compile(r"\b(pthread_mutex_t|pthread_rwlock_t|pthread_spinlock_t)\s+\w+\s*(=|;|\[)")
ALLOWED = {os.path.join("base", "locks.h"), os.path.join("base", "locks.c")}

problems = []
for folder in FOLDERS:
    for dirpath, _, files in os.walk(os.path.join(ROOT, folder)):
        for name in files:
            if not name.endswith((".c", ".h", ".inc")):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, ROOT)
            if rel in ALLOWED:
                continue
            for number, line in enumerate(open(path, encoding="utf-8"), 1):
                code = line.split("//")[0]
                if LOCK_TYPES.search(code) and not code.lstrip().startswith(("*", "/*")):
                    problems.append(f"{rel}:{number}: a lock outside base/locks.inc: {line.strip()}")

rows = re.findall(r"^AC_LOCK\((\w+),", open(os.path.join(ROOT, "base", "locks.inc")).read(), re.M)
design = open(os.path.join(ROOT, "docs", "design.md")).read()
paragraph = design[design.index("- **Locks.**"):]
paragraph = paragraph[:paragraph.index("\n- **")]
for row in rows:
    if not re.search(r"\b" + row + r"\b", paragraph):
        problems.append(f"docs/design.md: the paragraph on locks does not name the lock {row}")
if not rows:
    problems.append("base/locks.inc: no AC_LOCK rows read")
for p in problems:
    print(p)
print(f"check_locks: {len(rows)} locks in the table, {len(problems)} problems")
sys.exit(1 if problems else 0)
