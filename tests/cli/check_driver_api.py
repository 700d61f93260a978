#!/usr/bin/env python3
"""The driver-API table (shim/driver_api.inc) against its references: it lists
exactly the functions the installed cuda.h declares, each once, under a name
libcuda.so.1 exports; its wrapped rows are exactly entrypoints.inc's; every
row has a known class and a reason; and docs/driver-api.md explains every
class the table uses.

usage: check_driver_api.py TABLE ENTRYPOINTS CC CUDA_INCLUDE STUB DOC
"""
import re
import subprocess
import sys

table, entrypoints, cc, cuda_include, stub, doc = sys.argv[1:7]

EFFECTS = {"init", "door", "reads_layouts", "attach", "creates_object", "ends_object",
           "updates_object", "capture", "makes_stream_busy", "judged_as_device_access", "orders",
           "recorded"}
REASONS = {"query", "setting", "code_loading", "other_memory", "untracked_object",
           "graph_building", "graphics_interop", "legacy_abi", "not_yet"}


def declared_functions():
    """Every CUresult function of cuda.h, each ABI under its own name."""
    out = subprocess.run([cc, "-E", "-P", "-D__CUDA_API_VERSION_INTERNAL", "-I", cuda_include,
                          "-x", "c", "-"], input="#include <cuda.h>\n", capture_output=True,
                         text=True, check=True).stdout
    return re.findall(r"\bCUresult\s+(?:CUDAAPI\s+)?(\w+)\s*\(", out)


def exports(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True,
                         check=True).stdout
    return {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}


def rows_of(path):
    """(macro, name, class, reason) per row; string literals may be split."""
    text = re.sub(r"/\*.*?\*/", "", open(path).read(), flags=re.S)
    literal = r'"((?:[^"\\]|\\.)*)"'
    row = re.compile(r"^(AC_WRAPPED|AC_LEFT_ALONE)\(\s*(\w+),\s*(\w+),\s*((?:" + literal +
                     r"\s*)+)\)", re.M)
    rows = [(m.group(1), m.group(2), m.group(3), "".join(re.findall(literal, m.group(4))))
            for m in row.finditer(text)]
    unparsed = len(re.findall(r"^AC_(WRAPPED|LEFT_ALONE)\(", text, re.M)) - len(rows)
    return rows, unparsed


problems = []
rows, unparsed = rows_of(table)
if unparsed:
    problems.append(f"{unparsed} rows do not read as "
                    'AC_WRAPPED/AC_LEFT_ALONE(Name, Class, "why")')
names = [r[1] for r in rows]
dups = sorted({n for n in names if names.count(n) > 1})
if dups:
    problems.append(f"listed more than once: {dups}")

declared = declared_functions()
missing = [n for n in declared if n not in set(names)]
if missing:
    problems.append(f"cuda.h declares functions the table does not list: {missing}")
extra = sorted(set(names) - set(declared))
if extra:
    problems.append(f"the table lists functions cuda.h does not declare: {extra}")
not_exported = sorted(set(names) - exports(stub))
if not_exported:
    problems.append(f"not exported by libcuda.so: {not_exported}")

hooks = set(re.findall(r"^AC_HOOK\((\w+)", re.sub(r"/\*.*?\*/", "", open(entrypoints).read(),
                                                  flags=re.S), re.M))
wrapped = {r[1] for r in rows if r[0] == "AC_WRAPPED"}
if wrapped - hooks:
    problems.append(f"marked wrapped but not in entrypoints.inc: {sorted(wrapped - hooks)}")
if hooks - wrapped:
    problems.append(f"in entrypoints.inc but not marked wrapped: {sorted(hooks - wrapped)}")

for macro, name, cls, why in rows:
    allowed = EFFECTS if macro == "AC_WRAPPED" else REASONS
    if cls not in allowed:
        problems.append(f"{name}: {cls} is no class of {macro} ({sorted(allowed)})")
    if not why.strip():
        problems.append(f"{name}: no reason")
    if cls == "not_yet" and "would need" not in why:
        problems.append(f"{name}: a not_yet row says what it would need")

doc_text = open(doc).read()
undocumented = sorted({r[2] for r in rows if f"`{r[2]}`" not in doc_text})
if undocumented:
    problems.append(f"classes docs/driver-api.md does not explain: {undocumented}")

for p in problems:
    print(p)
counts = {}
for _, _, cls, _ in rows:
    counts[cls] = counts.get(cls, 0) + 1
print(", ".join(f"{cls} {n}" for cls, n in sorted(counts.items(), key=lambda c: -c[1])))
print(f"driver API table: {len(rows)} rows, {len(wrapped)} wrapped, "
      f"{len(rows) - len(wrapped)} left alone; {len(problems)} problems")
sys.exit(1 if problems else 0)
