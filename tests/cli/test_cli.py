#!/usr/bin/env python3
"""The front end's contract: option errors, exit statuses, and the shim under
plain LD_PRELOAD (malformed ATTACHCHECK_* values, the standalone JSON report)."""
import importlib.util
import json
import os
import re
import subprocess
import sys
import resource
import tempfile

from harness import x86_64

BUILD = os.path.abspath(sys.argv[1])
CLI = os.path.join(BUILD, "bin", "attachcheck")
SHIM = os.path.join(BUILD, "lib", "libattachcheck.so")
SCENARIO = os.path.join(BUILD, "tests", "scenarios", "attach_rules")
HELPERS = os.path.join(BUILD, "tests", "cli")
ENV = dict(os.environ, LD_LIBRARY_PATH=os.path.join(BUILD, "tests", "fakecuda"))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
passed = failed = 0


def run(args, env=ENV, **kw):
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=60, **kw)


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name} {detail}")


def scenario_runner():
    """tests/scenarios/run.py: whether this CPU has protection keys is its answer."""
    spec = importlib.util.spec_from_file_location(
        "scenario_run", os.path.join(ROOT, "tests", "scenarios", "run.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SHIM_HAS_KEYS = scenario_runner().shim_has_keys(BUILD)  # x86-64 shim, CPU with keys


def usage_error(name, args, words):
    p = run([CLI] + args)
    lines = p.stderr.strip().splitlines()
    check(name, p.returncode == 2 and len(lines) == 1 and all(w in p.stderr for w in words),
          f"rc={p.returncode} stderr={p.stderr!r}")


usage_error("unknown option", ["--colour", "on", "true"], ["unknown option"])
usage_error("malformed bool", ["--guard=maybe", "true"], ["guard", "maybe"])
usage_error("malformed number", ["--error-exitcode", "x", "true"], ["--error-exitcode"])
usage_error("number out of range", ["--error-exitcode", "300", "true"], ["--error-exitcode"])
usage_error("option without value", ["--json"], ["needs a value"])

# The conventions of a command line (docs/options.md, "The command line").
usage_error("an unknown option is named as typed, not as needing a value", ["--bogus"],
            ["unknown option '--bogus'"])
usage_error("an unknown option with a value: its name alone", ["--bogus=1", "true"],
            ["unknown option '--bogus'"])
usage_error("an unknown short option", ["-x", "true"], ["unknown option '-x'"])
usage_error("the internal session folder is no option", ["--session-dir", "/tmp", "true"],
            ["unknown option '--session-dir'"])
usage_error("an on/off option never takes the program for its value: the bad value named",
            ["--guard", "maybe", "true"], ["invalid value 'maybe' for --guard"])
usage_error("a bare on/off option before the program: the program is no value",
            ["--gen-suppressions", "/bin/true"],
            ["invalid value '/bin/true' for --gen-suppressions"])
p = run([CLI, "--print-limit", "x", "true"])
check("an option is named as typed, never by its internal name", p.returncode == 2 and
      "--print-limit" in p.stderr and "print_limit" not in p.stderr, p.stderr)
usage_error("an underscore spelling is named as typed", ["--print_limit", "x", "true"],
            ["invalid value 'x' for --print_limit"])
with tempfile.TemporaryDirectory() as d:
    usage_error("two reports on one path: refused before the run",
                ["--json", f"{d}/r.json", "--sarif", f"{d}/./r.json", "true"],
                ["--json and --sarif name the same file"])
    usage_error("a report and the log on one path: refused",
                ["--log-file", f"{d}/r.%p", "--html", f"{d}/r.%p", "true"],
                ["--html and --log-file name the same file"])
    marker = os.path.join(d, "ran")
    p = run([CLI, "--driver", "/nonexistent/libcuda.so", "/bin/sh", "-c", f"touch {marker}"])
    check("--driver that cannot be loaded: status 2 before the program runs",
          p.returncode == 2 and "cannot be loaded" in p.stderr and "--driver" in p.stderr and
          not os.path.exists(marker), p.stderr)
    p = run([CLI, "--driver", SHIM.replace("libattachcheck.so", "libunwind.so.8"), "true"])
    check("--driver that is not the CUDA driver: status 2", p.returncode == 2 and
          "not the CUDA driver" in p.stderr, p.stderr)
    p = run([CLI, "--driver", os.path.join(BUILD, "tests", "fakecuda", "libcuda.so.1"), SCENARIO,
             "link", "legacy_single"])
    check("--driver that loads: the run goes on over it", p.returncode == 0 and "AC101" in p.stderr,
          p.stderr[-300:])
    p = run([CLI, "true"], dict(ENV, ATTACHCHECK_DRIVER="/nonexistent/libcuda.so"))
    check("ATTACHCHECK_DRIVER that cannot be loaded: named as the variable", p.returncode == 2 and
          "ATTACHCHECK_DRIVER /nonexistent/libcuda.so cannot be loaded" in p.stderr, p.stderr)
for flag in ["-h", "--help"]:
    p = run([CLI, flag])
    check(f"{flag}: the help, status 0", p.returncode == 0 and p.stdout.startswith("usage:"))
p = run([CLI, "-V"])
check("-V: the version", p.returncode == 0 and p.stdout.startswith("attachcheck "), p.stdout)

# A misspelt ATTACHCHECK_* variable is said once at start-up (ASan's "unrecognized flag"): by
# the CLI for the whole run, by the shim in each process under plain LD_PRELOAD.
FORKS = os.path.join(HELPERS, "two_processes")
p = run([CLI, FORKS], dict(ENV, ATTACHCHECK_JSOM="r.json"))
said = [l for l in p.stderr.splitlines() if "ATTACHCHECK_JSOM" in l]
check("CLI: an unknown ATTACHCHECK_ variable said once for a run of two processes, with the "
      "likely name", len(said) == 1 and "did you mean ATTACHCHECK_JSON?" in said[0] and
      p.returncode == 0, p.stderr[-400:])
p = run([SCENARIO, "link", "legacy_single"],
        dict(ENV, LD_PRELOAD=SHIM, ATTACHCHECK_JSOM="r.json", ATTACHCHECK_REQUIRE_CUDA_INIT="no"))
said = [l for l in p.stderr.splitlines() if "ATTACHCHECK_" in l and "warning" in l]
check("LD_PRELOAD: unknown and CLI-only variables said once each at start-up",
      len(said) == 2 and "unrecognized environment variable ATTACHCHECK_JSOM" in said[0] + said[1]
      and "--require-cuda-init is an option of the attachcheck command only" in said[0] + said[1]
      and p.returncode == 0, p.stderr[-400:])

# --on-error halt: the first unsuppressed error stops the program there, its
# reports written first; a suppressed one does not. (No core files: limit 0.)
def no_core():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


with tempfile.TemporaryDirectory() as d:
    report = os.path.join(d, "h.json")
    p = run([CLI, "--on-error", "halt", "--json", report, SCENARIO, "link", "legacy_single"],
            preexec_fn=no_core)
    r = json.load(open(report)) if os.path.exists(report) else {}
    procs = r.get("processes", [{}])
    check("halt at a driver call: killed by SIGABRT there, the report holds its one finding and "
          "says where it stopped",
          p.returncode == 134 and [f["rule"] for f in r.get("findings", [])] == ["AC101"] and
          procs[0].get("halted_at") == "AC101" and
          "halted at its first error (AC101)" in p.stderr, p.stderr[-600:])
    p = run([CLI, "--on-error", "halt", "--guard-pages", "mprotect",
             os.path.join(HELPERS, "timeline_prog"), "3"], preexec_fn=no_core)
    check("halt at a CPU access: stopped in the faulting thread before the next finding",
          p.returncode == 134 and "halted at its first error (AC201)" in p.stderr and
          "AC301" not in p.stderr, p.stderr[-600:])
    quiet = os.path.join(d, "quiet.supp")
    with open(quiet, "w") as f:
        f.write("AC101:*\n")
    p = run([CLI, "--on-error", "halt", "--suppressions", quiet, SCENARIO, "link",
             "legacy_single"], preexec_fn=no_core)
    check("halt: a suppressed error does not stop the program", p.returncode == 0 and
          "halted" not in p.stderr, p.stderr[-600:])
    alone = os.path.join(d, "alone.json")
    p = run([SCENARIO, "link", "legacy_single"],
            dict(ENV, LD_PRELOAD=SHIM, ATTACHCHECK_ON_ERROR="halt", ATTACHCHECK_JSON=alone),
            preexec_fn=no_core)
    r = json.load(open(alone)) if os.path.exists(alone) else {}
    check("halt under plain LD_PRELOAD: the final report written before the abort",
          p.returncode == -6 and r.get("process", {}).get("halted_at") == "AC101" and
          len(r.get("findings", [])) == 1, p.stderr[-600:])

# --on-error repair: the CLI says what the repairs came to, and a repair that
# cannot end is given up, said, and counted (tests/scenarios/platforms.c).
PLATFORMS = os.path.join(BUILD, "tests", "scenarios", "platforms")
with tempfile.TemporaryDirectory() as d:
    report = os.path.join(d, "r.json")
    p = run([CLI, "--on-error", "repair", "--json", report, PLATFORMS, "touch_launched"],
            dict(ENV, FAKECUDA_PROFILE="tegra"))
    r = json.load(open(report)) if os.path.exists(report) else {}
    check("repair on a Jetson: the program runs, the CLI and the report count the repair",
          p.returncode == 0 and "repaired: 1 time the program was made to wait" in p.stderr and
          r.get("processes", [{}])[0].get("repairs") == {"made": 1, "given_up": 0} and
          [f.get("repair") is not None for f in r.get("findings", [])] == [True], p.stderr[-600:])
    p = run([CLI, "--on-error", "repair", "--repair-wait", "1", "--json", report, PLATFORMS,
             "touch_held"])
    r = json.load(open(report)) if os.path.exists(report) else {}
    check("repair given up: said at the time and after the summary, and counted",
          p.returncode == 0 and "a repair was given up" in p.stderr and
          "1 repair was given up" in p.stderr and "repaired:" not in p.stderr and
          r.get("processes", [{}])[0].get("repairs", {}).get("given_up") == 1, p.stderr[-600:])
    p = run([CLI, "--json", report, PLATFORMS, "touch_launched"])
    check("report, the default: nothing is repaired or said of repair",
          p.returncode == 0 and "repair" not in p.stderr, p.stderr[-600:])

# The same access by several threads is one finding that says how many threads
# made it: with protection keys each thread's first access is judged, and under
# mprotect too, where the judged access is stepped (x86-64) or carried out by the
# handler (aarch64).
HOST_ACCESS = os.path.join(BUILD, "tests", "scenarios", "host_access")


with tempfile.TemporaryDirectory() as d:
    def same_site(backend):
        report, html, sarif = (os.path.join(d, backend + ext) for ext in (".json", ".html",
                                                                          ".sarif"))
        p = run([CLI, "--guard-pages", backend, "--json", report, "--html", html, "--sarif", sarif,
                 HOST_ACCESS, "threads_same_site"])
        found = json.load(open(report)).get("findings", []) if os.path.exists(report) else []
        page = open(html).read() if os.path.exists(html) else ""
        results = json.load(open(sarif))["runs"][0]["results"] if os.path.exists(sarif) else []
        return p, found, page, results

    def three_threads(backend):
        p, found, page, results = same_site(backend)
        check(f"three threads' one finding under {backend}: count and threads 3 in JSON, SARIF "
              "and HTML",
              p.returncode == 0 and len(found) == 1 and found[0].get("count") == 3 and
              found[0].get("threads") == 3 and
              results[0].get("properties", {}).get("threads") == 3 and
              "3 threads</span>" in page, p.stderr[-600:])
    three_threads("mprotect")
    if SHIM_HAS_KEYS:
        three_threads("pkeys")
    else:
        print("skip three threads' one finding: the shim under test has no protection keys")

# --verbose 3 traces every change of protection the page guard makes, with
# its time: the busy memory closed, its page let go at the touch, the rest
# opened at the synchronisation.
p = run([CLI, "--guard-pages", "mprotect", "--verbose", "3", HOST_ACCESS, "global_touch_busy"])
traced = re.findall(r"guard: mprotect \[0x[0-9a-f]+, 0x[0-9a-f]+\) (\d+) pages, prot (\d) key -1: "
                    r"[0-9.]+ us", p.stderr)
check("--verbose 3: each protection change traced with its time",
      p.returncode == 0 and len(traced) >= 3 and traced[0][1] == "0" and traced[-1][1] == "3",
      p.stderr[-600:])
p = run([CLI, "--guard-pages", "mprotect", "--verbose", "1", HOST_ACCESS, "global_touch_busy"])
check("--verbose 1: no protection trace", p.returncode == 0 and "guard: mprotect [" not in p.stderr,
      p.stderr[-600:])

# --verbose 1 says how long a stepped access's page was open to every thread
# (x86-64 steps; aarch64 carries the access out with the page open to the
# handler alone, and says nothing).
p = run([CLI, "--guard-pages", "mprotect", "--verbose", "1", HOST_ACCESS, "two_threads_touch_busy"])
stepped = re.search(r"(\d+) accesses stepped", p.stderr)
window = re.search(r"page guard: a stepped access's page was open to every thread ([0-9.]+) us on "
                   r"average, ([0-9.]+) us at most \((\d+) steps\)", p.stderr)
if x86_64(HOST_ACCESS):
    check("--verbose 1: how long a stepped access's page was open",
          p.returncode == 0 and stepped and window and window.group(3) == stepped.group(1)
          and 0 < float(window.group(1)) <= float(window.group(2)), p.stderr[-900:])
else:
    check("--verbose 1: no step, no window", p.returncode == 0 and not window, p.stderr[-600:])

# A page under a protection key of the program's own takes no key of the
# guard's: after the judged fault it is opened, not tagged with the lift key
# (which would leave it closed and fault again).
if SHIM_HAS_KEYS:
    p = run([CLI, "--guard-pages", "pkeys", "--verbose", "1", HOST_ACCESS, "own_key_touch_busy"])
    faults = re.search(r"page guard: .* (\d+) faults \(.*; (\d+) more on pages already let go",
                       p.stderr)
    check("the program's own key: one finding, one fault",
          p.returncode == 0 and "AC201" in p.stderr and faults and faults.groups() == ("1", "0"),
          p.stderr[-600:])
else:
    print("skip the program's own key: the shim under test has no protection keys")

# A temporary made and freed at each step where the driver hands its address
# back: on protection keys its page keeps its key while freed, so after the
# first steps a step changes no protection at all - twelve steps make as many
# changes as six.
if SHIM_HAS_KEYS:
    def protection_changes(steps):
        env = dict(ENV, FAKECUDA_REUSE_SMALL="1", TEMP_STEPS=str(steps))
        p = run([CLI, "--guard-pages", "pkeys", "--verbose", "3", HOST_ACCESS,
                 "temps_touched_after_sync"], env=env)
        return p.returncode, len(re.findall(r"guard: (?:pkey_)?mprotect \[", p.stderr))
    six, twelve = protection_changes(6), protection_changes(12)
    check("a temporary at each step: no protection change once its page kept its key",
          six[0] == 0 and twelve[0] == 0 and six[1] == twelve[1], f"{six} {twelve}")
else:
    print("skip a temporary at each step: the shim under test has no protection keys")

usage_error("no program", ["--guard", "on"], ["no program"])
usage_error("report folder missing", ["--json", "/nonexistent/r.json", "true"], ["/nonexistent"])
with tempfile.TemporaryDirectory() as d:
    os.chmod(d, 0o500)
    if os.geteuid() != 0:  # root writes anywhere
        usage_error("report folder not writable", ["--json", f"{d}/r.json", "true"], ["not writable"])
    usage_error("report path is a folder", ["--json", d, "true"], ["not a regular file"])
    os.chmod(d, 0o700)

# The version is written once, in CMakeLists.txt's project(); the CLI prints that one.
VERSION = re.search(r"project\(attachcheck VERSION ([0-9.]+)",
                    open(os.path.join(ROOT, "CMakeLists.txt")).read()).group(1)
p = run([CLI, "--version"])
check("--version prints project()'s version", p.returncode == 0 and
      p.stdout == f"attachcheck {VERSION}\n", p.stdout)
p = run([CLI, "--help"])
check("--help lists every option", p.returncode == 0 and all(
    o in p.stdout for o in ["--json", "--error-exitcode", "--guard", "--require-cuda-init"]))

p = run([CLI, os.path.join(HELPERS, "static_prog")])
check("shim never loaded: status 3", p.returncode == 3 and "never loaded" in p.stderr, p.stderr)
p = run([CLI, os.path.join(HELPERS, "exit_with"), "0"])
check("no CUDA initialised: status 4", p.returncode == 4 and "never initialised" in p.stderr)
p = run([CLI, "--require-cuda-init=no", os.path.join(HELPERS, "exit_with"), "5"])
check("program status passes through", p.returncode == 5, f"rc={p.returncode}")
# Killed before the shim wrote its exit record: the finding it wrote is kept,
# and the summary says what went with the process (a line of its own).
p = run([CLI, os.path.join(HELPERS, "stream_prog"), "crash"])
check("killed program: 128+9, its finding kept, the report said to miss what it held",
      p.returncode == 137 and "summary: 1 error" in p.stderr and
      "killed (signal 9) before attachcheck finished its records" in p.stderr, p.stderr)
p = run([CLI, os.path.join(HELPERS, "stream_prog"), "finding", "0"])
check("a program that exits has no such line",
      p.returncode == 0 and "finished its records" not in p.stderr, p.stderr)
p = run([CLI, "--", "/nonexistent/program"])
check("program that cannot run: 127", p.returncode == 127, f"rc={p.returncode}")
p = run([CLI, "--error-exitcode=9", SCENARIO, "link", "legacy_single"])
check("--opt=value form", p.returncode == 9, f"rc={p.returncode}")

# Plain LD_PRELOAD: a malformed value is one warning and the default.
env = dict(ENV, LD_PRELOAD=SHIM, ATTACHCHECK_GUARD="maybe")
p = run([SCENARIO, "link", "flags_zero"], env)
warnings = [l for l in p.stderr.splitlines() if "ATTACHCHECK_GUARD" in l]
check("malformed ATTACHCHECK_GUARD: one warning naming the variable, guard stays on",
      p.returncode == 0 and len(warnings) == 1 and "for ATTACHCHECK_GUARD:" in warnings[0] and
      "AC105" in p.stderr, p.stderr)

# ATTACHCHECK_ERROR_EXITCODE under plain LD_PRELOAD: a process with error findings that exits
# with 0 exits with N (its report written first); its own failure status is kept; a finding
# made in a library destructor after the shim's counts; stdio buffers still reach the pipe.
PROG = os.path.join(HELPERS, "stream_prog")
with tempfile.TemporaryDirectory() as d:
    env = dict(ENV, LD_PRELOAD=SHIM, ATTACHCHECK_ERROR_EXITCODE="7", ATTACHCHECK_PRINT_STDERR="off")
    p = run([PROG, "finding"], dict(env, ATTACHCHECK_JSON=f"{d}/r.json"))
    check("ATTACHCHECK_ERROR_EXITCODE: a finding, status 0 becomes N, the report written first",
          p.returncode == 7 and os.path.exists(f"{d}/r.json"), (p.returncode, os.listdir(d)))
    p = run([PROG, "finding", "3"], env)
    check("ATTACHCHECK_ERROR_EXITCODE: the program's own failure status is kept", p.returncode == 3,
          p.returncode)
    p = run([PROG, "forked"], env)
    check("ATTACHCHECK_ERROR_EXITCODE: each process by its own findings (a forked child that "
          "made none exits with 0)", p.returncode == 7 and p.stdout == "child status 0\n",
          (p.returncode, p.stdout))
    p = run([PROG, "late"], env)
    check("ATTACHCHECK_ERROR_EXITCODE: a finding from a library destructor after the shim's",
          p.returncode == 7, p.returncode)
    clean = run([SCENARIO, "link", "exact_size"], env)
    check("ATTACHCHECK_ERROR_EXITCODE: no finding, the program's status", clean.returncode == 0,
          clean.stderr[-300:])
    supp = os.path.join(d, "all.supp")
    open(supp, "w").write("AC101:*\n")
    p = run([PROG, "finding"], dict(env, ATTACHCHECK_SUPPRESSIONS=supp))
    check("ATTACHCHECK_ERROR_EXITCODE: suppressed findings do not fail", p.returncode == 0,
          p.returncode)
    DEMO = os.path.join(BUILD, "examples", "attach_mistakes")
    bare, p = run([DEMO]), run([DEMO], env)
    check("ATTACHCHECK_ERROR_EXITCODE: the program's buffered stdout is flushed before _exit",
          p.returncode == 7 and p.stdout == bare.stdout and "data[0]" in p.stdout,
          (p.returncode, len(p.stdout), len(bare.stdout)))
    p = run([CLI, "--error-exitcode", "0", os.path.join(HELPERS, "two_processes")],
            dict(ENV, ATTACHCHECK_ERROR_EXITCODE="9"))
    check("under the CLI the CLI decides: the command line's 0 wins, no process exits with 9",
          p.returncode == 0, (p.returncode, p.stderr[-300:]))
    p = run([CLI, os.path.join(HELPERS, "two_processes")], dict(ENV, ATTACHCHECK_ERROR_EXITCODE="9"))
    check("the CLI reads ATTACHCHECK_ERROR_EXITCODE too", p.returncode == 9, p.returncode)

# Plain LD_PRELOAD with ATTACHCHECK_JSON: the shim writes the report itself.
with tempfile.TemporaryDirectory() as d:
    report = os.path.join(d, "r.json")
    env = dict(ENV, LD_PRELOAD=SHIM, ATTACHCHECK_JSON=report, ATTACHCHECK_PRINT_STDERR="off")
    p = run([SCENARIO, "link", "legacy_single"], env)
    try:
        data = json.load(open(report))
    except (OSError, ValueError):
        data = {}
    rules = [f.get("rule") for f in data.get("findings", [])]
    check("standalone JSON report", p.returncode == 0 and rules == ["AC101"] and
          data.get("summary", {}).get("errors") == 1 and "AC101" not in p.stderr, str(data)[:300])
    check("standalone stream removed once merged", os.listdir(d) == ["r.json"], str(os.listdir(d)))
    for key in ["schema_version", "tool", "process", "summary", "findings"]:
        check(f"report has '{key}'", key in data)
    f = data.get("findings", [{}])[0]
    for key in ["rule", "severity", "message", "api", "stack"]:
        check(f"finding has '{key}'", key in f)

# A program whose path (and so argv[0] and its stack's module) is not UTF-8:
# the finding still reaches the report.
with tempfile.TemporaryDirectory() as d:
    odd = os.path.join(os.fsencode(d), b"attach_\xff")
    os.symlink(SCENARIO, odd)
    report = os.path.join(d, "r.json")
    p = subprocess.run([os.fsencode(CLI), b"--json", os.fsencode(report), odd, b"link",
                        b"legacy_single"], env=ENV, capture_output=True, timeout=60)
    try:
        rules = [f["rule"] for f in json.load(open(report))["findings"]]
    except (OSError, ValueError, KeyError):
        rules = []
    check("non-UTF-8 program path keeps the finding", p.returncode == 0 and rules == ["AC101"],
          str(rules))

# A driver that has the parameter-info API but refuses it (FAKECUDA_NO_PARAM_INFO): images
# are read only when the API is missing (module_images.c), so no layout is known: said
# once, arguments not judged, no guess.
DEVICE = os.path.join(BUILD, "tests", "scenarios", "device_access")
with tempfile.TemporaryDirectory() as d:
    report = os.path.join(d, "r.json")
    p = run([CLI, "--json", report, DEVICE, "plain_arg_foreign"], dict(ENV, FAKECUDA_NO_PARAM_INFO="1"))
    try:
        rules = [f["rule"] for f in json.load(open(report))["findings"]]
    except (OSError, ValueError, KeyError):
        rules = None
    said = p.stderr.count("does not tell kernel parameter layouts")
    check("param info refused, no image read: said once, no argument finding", p.returncode == 0 and said == 1 and rules == [],
          f"rc={p.returncode} said={said} rules={rules}")

# A driver before 12.4 (the stand-in built as 11.4): no parameter-info API, so the layout
# comes from the PTX the program loaded and the argument is judged; nothing is said.
OLD_DRIVER = os.path.join(BUILD, "tests", "fakecuda", "driver-11040")
with tempfile.TemporaryDirectory() as d:
    report = os.path.join(d, "r.json")
    p = run([CLI, "--json", report, DEVICE, "plain_arg_foreign"],
            dict(ENV, LD_LIBRARY_PATH=OLD_DRIVER))
    try:
        rules = [f["rule"] for f in json.load(open(report))["findings"]]
    except (OSError, ValueError, KeyError):
        rules = None
    said = p.stderr.count("does not tell kernel parameter layouts")
    check("11.4 driver: layouts read from the PTX, argument judged", p.returncode == 0 and said == 0
          and rules == ["AC301"], f"rc={p.returncode} said={said} rules={rules}")

# The exit statuses are declared once (cli/exit_status.inc): --help prints
# each, and the README's table has a row for each.
codes = re.findall(r"^AC_EXIT\(\w+, (\d+),", open(os.path.join(ROOT, "cli", "exit_status.inc")).read(),
                   re.M)
readme = open(os.path.join(ROOT, "README.md")).read()
help_text = run([CLI, "--help"]).stdout
check("exit statuses: each in --help and in the README's table",
      codes and all(re.search(rf"^\| {c} \|", readme, re.M) and re.search(rf"^  {c} ", help_text, re.M)
                    for c in codes), codes)

print(f"cli: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
