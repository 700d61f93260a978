#!/usr/bin/env python3
"""SARIF and multi-process reports: the log validates against the official
SARIF 2.1.0 schema (sarif-schema-2.1.0.json beside this file, OASIS errata01),
results point at the program's own code with the stack and code flows, each
rule carries its page's text, the fingerprints do not change from run to run
(the program loads at other addresses each time) nor from commit to commit (a
comment added above the bug, a function added elsewhere) but do when the bug's
line changes, and a program that forks gives one merged report in which every
finding says which processes it came from."""
import glob
import json
import os
import re
import socket
import subprocess
import sys
import tempfile

try:
    import jsonschema
except ImportError:  # a Python of its own (pyenv, venv) without it: Debian's has python3-jsonschema
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    raise

from harness import BUILD, CLI, DEMO, ENV, FORKS, HERE, SHIM, SOURCE, check, finish, write_file

SCHEMA = json.load(open(os.path.join(HERE, "sarif-schema-2.1.0.json")))


def attachcheck(folder, name, program, *options, env=ENV):
    sarif, js = os.path.join(folder, name + ".sarif"), os.path.join(folder, name + ".json")
    p = subprocess.run([CLI, "--print-stderr", "off", "--sarif", sarif, "--json", js, *options,
                        program], env=env, capture_output=True, text=True, timeout=60)
    return p, json.load(open(sarif)), json.load(open(js))


def schema_errors(log):
    return [e.message for e in jsonschema.Draft4Validator(SCHEMA).iter_errors(log)][:3]


# A program with two findings (AC101 in attach_wrong, AC102 in main), built
# from this template as three commits would have it.
PROGRAM = r"""#include <cuda.h>
#include <dlfcn.h>
#include <stdlib.h>
{unrelated}
static __typeof__(&cuStreamAttachMemAsync) attach;

static void attach_wrong(CUdeviceptr m) {{
  {comment}
  {bug}
}}

int main(void) {{
  void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
  if (!cuda) return 1;
  __typeof__(&cuInit) init = (__typeof__(&cuInit))dlsym(cuda, "cuInit");
  __typeof__(&cuDevicePrimaryCtxRetain) retain =
      (__typeof__(&cuDevicePrimaryCtxRetain))dlsym(cuda, "cuDevicePrimaryCtxRetain");
  __typeof__(&cuCtxSetCurrent) set = (__typeof__(&cuCtxSetCurrent))dlsym(cuda, "cuCtxSetCurrent");
  __typeof__(&cuMemAllocManaged) alloc =
      (__typeof__(&cuMemAllocManaged))dlsym(cuda, "cuMemAllocManaged");
  attach = (__typeof__(&cuStreamAttachMemAsync))dlsym(cuda, "cuStreamAttachMemAsync");
  CUcontext ctx;
  CUdeviceptr m;
  if (init(0) || retain(&ctx, 0) || set(ctx) || alloc(&m, 1 << 20, CU_MEM_ATTACH_GLOBAL)) return 1;
  attach_wrong(m);
  attach(CU_STREAM_LEGACY, m, 4096, CU_MEM_ATTACH_GLOBAL);
  return 0;
}}
"""
BUG = "attach(CU_STREAM_LEGACY, m, 0, CU_MEM_ATTACH_SINGLE);"


def build_tools():
    """The build's C compiler (a cross compiler in the aarch64 build) and the CUDA headers."""
    cache = dict(re.findall(r"^([A-Za-z_]+):[A-Z]+=(.*)$", open(os.path.join(BUILD, "CMakeCache.txt"))
                            .read(), re.M))
    include = os.path.join(os.path.dirname(cache.get("CUDAToolkit_BIN_DIR", "/usr/local/cuda/bin")),
                           "include")
    found = [m for f in glob.glob(os.path.join(BUILD, "CMakeFiles", "*", "CMakeCCompiler.cmake"))
             for m in re.findall(r'^set\(CMAKE_C_COMPILER "([^"]+)"\)', open(f).read(), re.M)]
    return (found[0] if found else "cc"), include


def fingerprints_of(folder, name, **parts):
    """The program as one commit has it, in a checkout of its own (same file names)."""
    folder = os.path.join(folder, name)
    os.makedirs(folder)
    source = write_file(folder, "program.c", PROGRAM.format(**dict(
        {"unrelated": "", "comment": "", "bug": BUG}, **parts)))
    cc, include = build_tools()
    exe = os.path.join(folder, "program")
    built = subprocess.run([cc, "-g", "-O0", "-I", include, "-o", exe, source, "-ldl"],
                           capture_output=True, text=True)
    if built.returncode:
        return {"build failed": built.stderr[-300:]}
    _, log, _ = attachcheck(folder, name, exe)
    return {r["ruleId"]: r["partialFingerprints"]["attachcheckSource/v2"]
            for r in log["runs"][0]["results"]}


def test_fingerprints_across_commits(d):
    """Code scanning keeps one alert across commits: a comment above the bug
    and a function added elsewhere move every line but change no
    fingerprint; changing the bug's own line changes its fingerprint only."""
    first = fingerprints_of(d, "commit1")
    moved = fingerprints_of(d, "commit2", comment="/* the legacy stream takes no SINGLE */",
                            unrelated="static int unrelated(int x) {\n  return 3 * x;\n}\n")
    changed = fingerprints_of(d, "commit3", bug=BUG.replace("0, CU_MEM", "0 /* all */, CU_MEM"))
    check("fingerprints: both findings of the rebuilt program",
          sorted(first) == ["AC101", "AC102"], first)
    check("fingerprints: a comment above the bug, a function added: the same", moved == first,
          (first, moved))
    check("fingerprints: the bug's line changed: its fingerprint changes, the other's does not",
          changed.get("AC101") != first.get("AC101") and changed.get("AC102") == first.get("AC102"),
          (first, changed))


with tempfile.TemporaryDirectory() as d:
    p, log, report = attachcheck(d, "demo", DEMO)
    check("demo: SARIF written", p.returncode == 0, p.stderr)
    check("demo: valid SARIF 2.1.0", not schema_errors(log), schema_errors(log))
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    check("rules table: the whole catalogue, with help",
          len(rules) >= 13 and all(r["id"].startswith("AC") and r["help"]["text"] for r in rules))
    docs = os.path.join(SOURCE, "docs")
    pages = {r["id"]: open(os.path.join(docs, "rules", r["id"] + ".md")).read() for r in rules
             if os.path.exists(os.path.join(docs, "rules", r["id"] + ".md"))}
    check("every rule has its page in docs/rules/, listed in the index",
          len(pages) == len(rules) and all(f"(rules/{i}.md)" in open(os.path.join(docs, "rules.md"))
                                           .read() for i in pages), sorted(pages))
    check("help carries the rule page's text (code and all), no link needed",
          all(r["help"]["markdown"].split("\n")[0] == pages[r["id"]].split("\n")[0] and
              "\n```" in r["help"]["markdown"] and "\n```" in r["help"]["text"] for r in rules))
    check("without --docs-url: no helpUri, no informationUri, no relative link left",
          not any("helpUri" in r or re.search(r"\]\((?!http)", r["help"]["markdown"])
                  for r in rules) and "informationUri" not in run["tool"]["driver"],
          [r["help"]["markdown"][-200:] for r in rules][:1])
    check("fullDescription: the rule's description, not its summary again",
          all(r["fullDescription"]["text"] != r["shortDescription"]["text"] and
              len(r["fullDescription"]["text"]) > 80 and
              r["fullDescription"]["text"][:40] in " ".join(pages[r["id"]].split()) for r in rules),
          [r["fullDescription"]["text"][:60] for r in rules])
    results = run["results"]
    ids = [r["ruleId"] for r in results]
    check("one result per finding, same rules as the JSON report",
          ids == [f["rule"] for f in report["findings"]] and
          sorted(ids) == ["AC101", "AC102", "AC107", "AC201", "AC301"], ids)
    check("rule indexes point into the table",
          all(rules[r["ruleIndex"]]["id"] == r["ruleId"] for r in results))
    check("levels from severities", all(r["level"] == "error" for r in results))
    primary = [r["locations"][0] for r in results]
    check("primary location: the program's own source line (main in attach_mistakes.c)",
          all(loc["logicalLocations"][0]["name"] == "main" and
              loc["physicalLocation"]["artifactLocation"]["uri"].endswith("/attach_mistakes.c") and
              loc["physicalLocation"]["region"]["startLine"] > 0 for loc in primary), primary[:1])
    check("full stack on every result", all(len(r["stacks"][0]["frames"]) >= 2 for r in results))
    ac201 = results[ids.index("AC201")]
    flows = ac201["codeFlows"][0]["threadFlows"]
    check("AC201 code flows: the host and the busy stream",
          [f["id"] for f in flows][0] == "host" and any(f["id"].startswith("stream-") for f in flows)
          and len(flows[0]["locations"]) == 3, [f["id"] for f in flows])
    ac301 = results[ids.index("AC301")]
    flows = [f["id"] for f in ac301["codeFlows"][0]["threadFlows"]]
    check("AC301 code flows: the host, the launch's stream and the memory's stream",
          flows[0] == "host" and len([f for f in flows if f.startswith("stream-")]) == 2, flows)
    check("invocation: the command line and pid",
          run["invocations"][0]["commandLine"].endswith("attach_mistakes") and
          run["invocations"][0]["processId"] == report["process"]["pid"])

    proc = report["process"]
    check("session details: host, driver version, GPUs, options",
          proc["host"] == socket.gethostname() and proc["cuda_driver_version"] == "13.0" and
          proc["gpus"] == ["attachcheck stand-in driver"] and proc["options"]["semantics"] ==
          "strict" and run["invocations"][0]["machine"] == proc["host"] and
          run["invocations"][0]["properties"]["gpus"] == proc["gpus"], proc)

    files = [fr["location"]["physicalLocation"].get("artifactLocation", {}).get("uri", "")
             for r in results for fr in r["stacks"][0]["frames"]]
    check("frames outside the program's source are no files of the repository",
          files and not [u for u in files if u.startswith("../") or
                         (not u.startswith("file:///") and "sysdeps" in u)] and
          all(u.endswith("attach_mistakes.c") or not u.endswith((".c", ".h")) for u in files),
          sorted(set(files)))

    _, again, _ = attachcheck(d, "again", DEMO)
    # (AC201 comes from the page guard's reporter thread: its place in the order may vary.)
    prints = lambda log: sorted((r["ruleId"], r["partialFingerprints"]["attachcheckSource/v2"])
                                for r in log["runs"][0]["results"])
    check("fingerprints: the same from run to run", prints(again) == prints(log),
          (prints(again), prints(log)))
    check("fingerprints: distinct per finding", len({json.dumps(x) for x in prints(log)}) == 5)

    p, log, report = attachcheck(d, "forks", FORKS)
    check("two processes: valid SARIF", not schema_errors(log), schema_errors(log))
    check("two processes: both in the report, one invocation each",
          len(report["processes"]) == 2 and len(log["runs"][0]["invocations"]) == 2,
          report["processes"])
    pids = sorted(pr["pid"] for pr in report["processes"])
    by_rule = {f["rule"]: f for f in report["findings"]}
    check("the shared mistake is one finding from both processes",
          sorted(by_rule.get("AC101", {}).get("processes", [])) == pids and
          by_rule["AC101"]["count"] == 2, by_rule.get("AC101"))
    check("the child's own mistake names the child only",
          len(by_rule.get("AC102", {}).get("processes", [])) == 1)
    check("SARIF results carry the processes",
          all(r["properties"]["processes"] for r in log["runs"][0]["results"]))

    supp = write_file(d, "demo.supp", "AC201:main\n")
    _, log, _ = attachcheck(d, "supp", DEMO, "--suppressions", supp)
    marked = [r for r in log["runs"][0]["results"] if r.get("suppressions")]
    check("a suppressed finding is a result with an external suppression, still valid",
          [r["ruleId"] for r in marked] == ["AC201"] and marked[0]["suppressions"][0]["kind"] ==
          "external" and not schema_errors(log), marked)

    # MPI-style: a launcher (no CUDA) starts four ranks of the same program.
    launcher = write_file(d, "launch.py",
                          "import os, subprocess, sys\n"
                          "ranks = [subprocess.Popen([sys.argv[1]], stdout=subprocess.DEVNULL,\n"
                          "                          env=dict(os.environ, RANK=str(r))) "
                          "for r in range(4)]\n"
                          "sys.exit(max(p.wait() for p in ranks))\n")
    p = subprocess.run([CLI, "--print-stderr", "off", "--sarif", os.path.join(d, "mpi.sarif"),
                        "--json", os.path.join(d, "mpi.json"), sys.executable, launcher, DEMO],
                       env=ENV, capture_output=True, text=True, timeout=120)
    log, report = json.load(open(os.path.join(d, "mpi.sarif"))), json.load(open(os.path.join(d, "mpi.json")))
    ranks = sorted(pr["pid"] for pr in report["processes"] if pr.get("cuda_initialized"))
    check("MPI-style: one report, the launcher and four ranks, each finding from all four",
          p.returncode == 0 and len(report["processes"]) == 5 and len(ranks) == 4 and
          len(report["findings"]) == 5 and
          all(sorted(f["processes"]) == ranks and f["count"] == 4 for f in report["findings"]) and
          len(log["runs"][0]["invocations"]) == 5 and "5 errors" in p.stderr and
          "in 5 processes" in p.stderr, (p.stderr[-300:], [f["processes"] for f in report["findings"]]))

    # Without the CLI: the shim writes the SARIF log itself at exit.
    sarif = os.path.join(d, "alone.sarif")
    p = subprocess.run([DEMO], env=dict(ENV, LD_PRELOAD=SHIM, ATTACHCHECK_SARIF=sarif,
                                         ATTACHCHECK_PRINT_STDERR="off"),
                       capture_output=True, text=True, timeout=60)
    alone = json.load(open(sarif)) if os.path.exists(sarif) else {}
    check("plain LD_PRELOAD: SARIF written at exit, valid, nothing left behind",
          alone and not schema_errors(alone) and len(alone["runs"][0]["results"]) == 5 and
          not [f for f in os.listdir(d) if f.endswith(".jsonl")], p.stderr)

    # Source lines from debug information, C++ names demangled, --strip-paths.
    cpp = os.path.join(BUILD, "tests", "cli", "cpp_frames")
    source = os.path.join(HERE, "cpp_frames.cpp")
    line = next(i for i, text in enumerate(open(source), 1) if "AC101 here" in text)
    checkout = SOURCE + "/"
    p = subprocess.run([CLI, "--strip-paths", checkout, "--sarif", os.path.join(d, "cpp.sarif"),
                        cpp], env=ENV, capture_output=True, text=True, timeout=60)
    check("text: demangled function, file and line of the call",
          f"in model::buffer<float>::attach_to_legacy_stream()+0x" in p.stderr and
          f" tests/cli/cpp_frames.cpp:{line} (cpp_frames+0x" in p.stderr, p.stderr[-1500:])
    check("text: a static function is named from the full symbol table",
          " in run()+0x" in p.stderr)
    cpp_log = json.load(open(os.path.join(d, "cpp.sarif")))
    loc = cpp_log["runs"][0]["results"][0]["locations"][0]
    check("SARIF: the primary location is the source line, relative to the checkout",
          loc["physicalLocation"]["artifactLocation"]["uri"] == "tests/cli/cpp_frames.cpp" and
          loc["physicalLocation"]["region"]["startLine"] == line and
          loc["logicalLocations"][0]["name"] == "model::buffer<float>::attach_to_legacy_stream()",
          loc)
    check("SARIF with source lines: valid", not schema_errors(cpp_log), schema_errors(cpp_log))

    # --docs-url: the rules' pages linked where they are published.
    base = "https://example.org/attachcheck/blob/v1/docs/"
    _, linked, _ = attachcheck(d, "linked", DEMO, "--docs-url", base)
    lrules = linked["runs"][0]["tool"]["driver"]["rules"]
    check("--docs-url: helpUri, informationUri, absolute links in the help",
          all(r["helpUri"] == f"{base}rules/{r['id']}.md" and
              f"]({base}suppressions.md)" in r["help"]["markdown"] for r in lrules) and
          linked["runs"][0]["tool"]["driver"]["informationUri"] == base + "rules.md",
          lrules[0].get("helpUri"))
    p = subprocess.run([CLI, "--docs-url", "docs/", DEMO], env=ENV, capture_output=True, text=True)
    check("--docs-url: a relative address is refused", p.returncode == 2 and
          "absolute" in p.stderr, p.stderr)

    test_fingerprints_across_commits(d)

finish("sarif")
