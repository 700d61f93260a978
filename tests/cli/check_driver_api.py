#!/usr/bin/env python3
"""The driver-API table (shim/driver_api.inc) against its references: it lists
exactly the functions the installed cuda.h declares, each once, under a name
libcuda.so.1 exports; every wrapped row has its parameter list; every row has
a known class and a reason; and docs/driver-api.md explains every class the
table uses. With DRIVER (a real libcuda.so.1, on the GPU machine):
every cu* function it exports is a row of the table, or is declared by one
of the toolkit's other driver headers (graphics interop, the profiler), so a
driver that gains an entry point fails until the table classifies it. The
table's `undeclared` rows are the exports no header declares at all: they
are exempt from the cuda.h and stub checks, as no toolkit names them.

usage: check_driver_api.py TABLE CC CUDA_INCLUDE STUB DOC [DRIVER]
"""
import re
import subprocess
import sys

table, cc, cuda_include, stub, doc = sys.argv[1:6]
driver = sys.argv[6] if len(sys.argv) > 6 else None
# Driver functions cuda.h does not declare, by the header that does: left
# alone, as the table's graphics_interop rows and the profiler's settings are.
OTHER_HEADERS = ("cudaGL.h", "cudaEGL.h", "cudaVDPAU.h", "cudaProfiler.h")

EFFECTS = {"init", "door", "reads_layouts", "attach", "creates_object", "ends_object",
           "updates_object", "capture", "makes_stream_busy", "quiet_work", "judged_as_device_access",
           "orders", "recorded", "answered"}
REASONS = {"query", "setting", "code_loading", "other_memory", "untracked_object",
           "graph_building", "graphics_interop", "legacy_abi", "undeclared", "not_yet"}


def declared_functions():
    """Every CUresult function of cuda.h, each ABI under its own name."""
    out = subprocess.run([cc, "-E", "-P", "-D__CUDA_API_VERSION_INTERNAL", "-I", cuda_include,
                          "-x", "c", "-"], input="#include <cuda.h>\n", capture_output=True,
                         text=True, check=True).stdout
    return re.findall(r"\bCUresult\s+(?:CUDAAPI\s+)?(\w+)\s*\(", out)


def exports(lib, functions_only=False):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True,
                         check=True).stdout
    rows = [line.split() for line in out.splitlines() if line.strip()]
    return {r[-1].split("@")[0] for r in rows
            if not functions_only or (len(r) >= 2 and r[-2] in ("T", "t", "W", "i"))}


def other_header_functions():
    """The functions the toolkit's other driver headers declare (read as text:
    they include GL and EGL headers this machine may not have)."""
    found = set()
    for header in OTHER_HEADERS:
        try:
            text = open(f"{cuda_include}/{header}").read()
        except OSError:
            continue
        found |= set(re.findall(r"\bCUresult\s+CUDAAPI\s+(\w+)\s*\(", text))
        # The exported names behind the header's macros: cuGLCtxCreate is
        # cuGLCtxCreate_v2, cuGLMapBufferObject also cuGLMapBufferObject_v2_ptds.
        found |= set(re.findall(r"^#define\s+cu\w+\s+(cu\w+)\s*$", text, re.M))
        for suffix, api in re.findall(r"__CUDA_API_PT(DS|SZ)\((cu\w+)\)", text):
            found |= {api, f"{api}_pt{suffix.lower()}"}
    return found


def rows_of(path):
    """(macro, name, class, reason) per row; string literals may be split. A
    wrapped row has its Params after the name - a parenthesised list, or a
    shared one of shim/driver_params.h (AC_LAUNCH_PARAMS, AC_SEMAPHORES_PARAMS(T))
    - and a row left alone has none."""
    text = re.sub(r"/\*.*?\*/", "", open(path).read(), flags=re.S)
    literal = r'"((?:[^"\\]|\\.)*)"'
    params = r"(?:\((?:[^()]|\([^()]*\))*\)|AC_\w+_PARAMS(?:\(\w+\))?)"
    row = re.compile(r"^(?:(AC_WRAPPED)\(\s*(\w+),\s*" + params + r",|(AC_LEFT_ALONE)\(\s*(\w+),)"
                     r"\s*(\w+),\s*((?:" + literal + r"\s*)+)\)", re.M)
    rows = [(m.group(1) or m.group(3), m.group(2) or m.group(4), m.group(5),
             "".join(re.findall(literal, m.group(6))))
            for m in row.finditer(text)]
    unparsed = len(re.findall(r"^AC_(WRAPPED|LEFT_ALONE)\(", text, re.M)) - len(rows)
    return rows, unparsed


problems = []
rows, unparsed = rows_of(table)
if unparsed:
    problems.append(f"{unparsed} rows do not read as "
                    'AC_WRAPPED(Name, (Params), Effect, "why") or '
                    'AC_LEFT_ALONE(Name, Reason, "why")')
names = [r[1] for r in rows]
undeclared = {r[1] for r in rows if r[2] == "undeclared"}
dups = sorted({n for n in names if names.count(n) > 1})
if dups:
    problems.append(f"listed more than once: {dups}")

declared = declared_functions()
missing = [n for n in declared if n not in set(names)]
if missing:
    problems.append(f"cuda.h declares functions the table does not list: {missing}")
extra = sorted(set(names) - set(declared) - undeclared)
if undeclared & set(declared):
    problems.append(f"marked undeclared but declared by cuda.h: {sorted(undeclared & set(declared))}")
if extra:
    problems.append(f"the table lists functions cuda.h does not declare: {extra}")
not_exported = sorted(set(names) - exports(stub) - undeclared)
if not_exported:
    problems.append(f"not exported by libcuda.so: {not_exported}")
if driver:
    entry_points = {n for n in exports(driver, True) if re.match(r"cu[A-Z]", n)}
    unclassified = sorted(entry_points - set(names) - other_header_functions())
    if unclassified:
        problems.append(f"{driver} exports entry points the table does not classify: "
                        f"{unclassified}")
    print(f"{driver}: {len(entry_points)} entry points exported, "
          f"{len(entry_points & set(names))} of them rows of the table")

wrapped = {r[1] for r in rows if r[0] == "AC_WRAPPED"}

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
