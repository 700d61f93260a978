#!/usr/bin/env python3
"""The shim's reporting against what real programs and runs do to it: a fork
while memory is protected, a wrapper script under plain LD_PRELOAD, a report
name of 250 characters, a log that cannot be written, a suppression file that
never ends, --driver naming the shim, a storm of findings with the text sent
to a log, a program that closes and reuses descriptors or changes folder,
signals sent to the CLI alone, and a program built with AddressSanitizer.

Arguments: the build folder, CUDA's include folder, the driver stub to link."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

from harness import CLI, DEMO, ENV, PREFIX, SHIM, SOURCE, check, finish, run, write_file

CUDA_INCLUDE, DRIVER_STUB = sys.argv[2], sys.argv[3]
PROG = os.path.join(os.path.dirname(CLI), "..", "tests", "cli", "robust_prog")
FAKE_DRIVER = os.path.join(ENV["LD_LIBRARY_PATH"], "libcuda.so.1")


def rules_printed(text):
    return sorted(re.findall(r"^" + PREFIX + r"(AC\d{3}) ", text, re.M))


def shim_lines(text):
    """Lines of the shim's on a program's stderr, the CLI's summary aside."""
    return [l for l in text.splitlines() if l.startswith("==attachcheck") and
            "summary:" not in l]


def load(path):
    """A JSON report, or {} when there is none."""
    return json.load(open(path)) if os.path.exists(path) else {}


def text_of(path):
    return open(path).read() if os.path.exists(path) else ""


def errors_in(path):
    return load(path).get("summary", {}).get("errors")


def run_bounded(args, env=ENV, timeout=30, **kw):
    """run(), but a hang (a fork child stuck on a lock) is killed with all of its
    process group and answered None."""
    p = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True, **kw)
    try:
        out, err = p.communicate(timeout=timeout)
        return subprocess.CompletedProcess(args, p.returncode, out, err)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None


def preload(**options):
    return dict(ENV, LD_PRELOAD=SHIM, **{f"ATTACHCHECK_{k.upper()}": v
                                         for k, v in options.items()})


def fork_while_protected(d):
    # The fork handlers run with the model lock held: the report code there must
    # not reach the shim's own read/write wrappers, which take it.
    for how, args, env in [("CLI", [CLI, "--json", f"{d}/fork.json", PROG, "fork-busy"], ENV),
                           ("LD_PRELOAD", [PROG, "fork-busy"],
                            preload(json=f"{d}/fork-preload.json"))]:
        p = run_bounded(args, env)
        report = f"{d}/fork.json" if how == "CLI" else f"{d}/fork-preload.json"
        check(f"{how}: a fork while memory is protected neither hangs nor loses the report",
              p is not None and p.returncode == 0 and len(load(report).get("processes", [])) >= 1,
              p and p.stderr[-300:])
    p = run([CLI, "--json", f"{d}/fork2.json", os.path.join(os.path.dirname(PROG),
                                                            "two_processes")])
    check("a fork with nothing protected: both processes reported",
          load(f"{d}/fork2.json").get("summary", {}).get("processes") == 2, p.stderr[-300:])


def no_raw_io_in_report_code(d):
    # The report code and the floor under it, linked into the shim, must not
    # name the I/O functions the shim exports (they would bind to its own
    # wrappers): only base/sys.c's raw calls.
    archives = [os.path.join(os.path.dirname(SHIM), f"libac_{a}.a") for a in ("report", "base")]
    undefined = subprocess.run(["nm", "-A", "-u"] + archives, capture_output=True,
                               text=True).stdout
    exported = {"read", "write", "pread", "pread64", "pwrite", "pwrite64", "readv", "writev",
                "recv", "recvfrom", "send", "sendto", "open", "open64", "close", "fstat",
                "sigaction", "signal", "json_dumpfd", "json_dump_file", "json_loadfd",
                "nanosleep", "clock_nanosleep", "usleep", "sleep", "poll", "ppoll", "select",
                "pselect", "epoll_wait", "epoll_pwait", "pause", "sigsuspend", "sigwaitinfo",
                "sigtimedwait"}
    bad = [l for l in undefined.splitlines() if l.strip() and l.split()[-1] in exported]
    check("the report code inside the shim calls no exported I/O wrapper, only raw calls",
          undefined and not bad and "syscall" in undefined, bad)


def wrapper_script(d):
    # The first process to exit (ls) used no CUDA: it must not take the report's name.
    script = write_file(d, "wrap.sh", f"#!/bin/sh\nls >/dev/null\n{DEMO} >/dev/null\n")
    os.chmod(script, 0o755)
    p = run([script], preload(json=f"{d}/wrapped.json", print_stderr="off"))
    report = load(f"{d}/wrapped.json")
    check("LD_PRELOAD through a wrapper script: the report is the CUDA program's",
          report.get("summary", {}).get("errors") == 5 and
          report["summary"]["cuda_processes"] == 1 and "already exists" not in p.stderr,
          (report.get("summary"), p.stderr[-300:]))
    check("LD_PRELOAD: the processes without CUDA leave no stream behind",
          not [f for f in os.listdir(d) if f.endswith(".jsonl")], os.listdir(d))
    p = run(["/bin/sh", "-c", "ls >/dev/null"], preload(json=f"{d}/nocuda.json"))
    check("LD_PRELOAD: a run without CUDA and without findings writes no report",
          p.returncode == 0 and not os.path.exists(f"{d}/nocuda.json"), os.listdir(d))


def long_names(d):
    name = "r" * 245 + ".json"  # 250 characters: a valid name, whose ".tmp.<pid>" is not
    p = run([CLI, "--print-stderr", "off", "--json", f"{d}/{name}", DEMO])
    check("CLI: a 250-character report name gets its report",
          p.returncode == 0 and errors_in(f"{d}/{name}") == 5, p.stderr[-300:])
    if os.path.exists(f"{d}/{name}"):
        os.unlink(f"{d}/{name}")
    p = run([DEMO], preload(json=f"{d}/{name}", print_stderr="off"))
    check("LD_PRELOAD: a 250-character report name gets its report (stream and all)",
          errors_in(f"{d}/{name}") == 5 and not [f for f in os.listdir(d) if "attachcheck-" in f],
          p.stderr[-300:])
    # A report that cannot be written at the end: one line, status 2.
    os.mkdir(f"{d}/gone")
    p = run([CLI, "--print-stderr", "off", "--json", f"{d}/gone/r.json", "/bin/sh", "-c",
             f"rmdir {d}/gone; exec {DEMO} >/dev/null"])
    check("CLI: a report that cannot be written is one line and status 2",
          p.returncode == 2 and p.stderr.count("cannot write the report") == 1, p.stderr[-300:])


def unwritable_log(d):
    p = run([DEMO], preload(log_file="/dev/full", json=f"{d}/full.json"))
    summary = load(f"{d}/full.json").get("summary", {})
    check("LD_PRELOAD: a log that cannot be written is one line on stderr",
          p.stderr.count("cannot write the log file /dev/full") == 1 and
          len(shim_lines(p.stderr)) == 1 and summary.get("output_errors") == 1,
          (p.stderr[-300:], summary))
    p = run([CLI, "--log-file", "/dev/full", DEMO])
    check("CLI --log-file /dev/full: the program runs; one line, status 2",
          p.returncode == 2 and p.stderr.count("cannot write the log file") == 1 and
          "No space left on device" in p.stderr and
          not rules_printed(p.stderr), p.stderr[-400:])
    os.mkdir(f"{d}/logs")
    p = run([CLI, "--log-file", f"{d}/logs/run.log", "/bin/sh", "-c",
             f"rm -r {d}/logs; exec {DEMO} >/dev/null"])
    check("CLI: a log that cannot be opened: said once, status 2",
          p.returncode == 2 and p.stderr.count("cannot open the log file") == 1, p.stderr[-400:])
    p = run([CLI, "--log-file", "/dev/null", DEMO])
    check("CLI --log-file /dev/null: a device that takes the text is fine",
          p.returncode == 0 and not shim_lines(p.stderr), p.stderr[-300:])


def unbounded_inputs(d):
    big = write_file(d, "big.supp", "# padding\n" * 120000)
    fifo = os.path.join(d, "fifo.supp")
    os.mkfifo(fifo)
    for name, path, words in [("/dev/zero", "/dev/zero", "not a regular file"),
                              ("a FIFO", fifo, "not a regular file"),
                              ("a file over 1 MiB", big, "larger than")]:
        p = run_bounded([CLI, "--suppressions", path, DEMO], timeout=10)
        check(f"CLI --suppressions {name}: refused at once with one line, status 2",
              p is not None and p.returncode == 2 and words in p.stderr and
              len(p.stderr.splitlines()) == 1, p and p.stderr)
    p = run_bounded([DEMO], preload(suppressions="/dev/zero"), timeout=10)
    check("LD_PRELOAD: suppressions from /dev/zero: one error, every finding printed",
          p is not None and p.stderr.count("not a regular file") == 1 and
          len(set(rules_printed(p.stderr))) == 5, p and p.stderr[:300])
    small = write_file(d, "ok.supp", "AC101:main\n")
    p = run([CLI, "--suppressions", small, DEMO])
    check("a small suppression file still works", p.returncode == 0 and
          "AC101" not in rules_printed(p.stderr), p.stderr[-300:])


def driver_is_shim(d):
    os.symlink(SHIM, f"{d}/libcuda.so.1")
    for name, driver in [("the shim", SHIM), ("a link to the shim", f"{d}/libcuda.so.1")]:
        p = run_bounded([CLI, "--driver", driver, DEMO]) or subprocess.CompletedProcess([], -1, "", "")
        check(f"--driver naming {name}: refused, status 2, one line",
              p.returncode == 2 and "own library" in p.stderr and len(p.stderr.splitlines()) == 1,
              p.stderr[-300:])
    p = run([CLI, "--print-stderr", "off", "--driver", FAKE_DRIVER, DEMO])
    check("--driver naming a driver: accepted", p.returncode == 0, p.stderr[-300:])


def messages_follow_the_log(d):
    # A storm of CPU accesses: every one judged and counted, nothing on stderr.
    log, report = f"{d}/storm.log", f"{d}/storm.json"
    p = run([CLI, "--print-stderr", "off", "--log-file", log, "--json", report, PROG, "storm",
             "4000"])
    text = text_of(log)
    counts = [f["count"] for f in json.load(open(report))["findings"]] if p.returncode == 0 else []
    check("a storm with --print-stderr off --log-file: all 4000 accesses counted, the text in "
          "the log, none on stderr",
          counts == [4000] and "AC202" in text and "not judged" not in text and
          not shim_lines(p.stderr), (p.stderr[-300:], text[-300:], counts))
    env = dict(ENV, FAKECUDA_CONCURRENT_MANAGED_ACCESS="0")
    args = ["--semantics", "device", DEMO]
    p = run([CLI, "--print-stderr", "off", "--log-file", f"{d}/semantics.log", *args], env)
    check("a shim message goes to the log file, not stderr",
          "judging strictly" in text_of(f"{d}/semantics.log") and
          not shim_lines(p.stderr), p.stderr[-300:])
    p = run([CLI, "--print-stderr", "off", *args], env)
    check("--print-stderr off, no log: no shim message on stderr", not shim_lines(p.stderr),
          p.stderr[-300:])
    p = run([CLI, *args], env)
    check("by default the same message is on stderr", "judging strictly" in p.stderr,
          p.stderr[-300:])


def reused_descriptors(d):
    # A daemon closes every descriptor >= 3 and opens its data file at 3.
    data, log = f"{d}/daemon.data", f"{d}/daemon.log"
    p = run([CLI, "--log-file", log, PROG, "close-fds", data])
    check("the program closes fds >= 3: its data file gets no finding, the log gets both",
          p.returncode == 0 and text_of(data) == "data\n" and
          rules_printed(text_of(log)) == ["AC101", "AC102"], (p.stderr[-300:],
                                                                  text_of(data)[:200]))
    data = f"{d}/stderr.data"
    p = run([CLI, PROG, "close-stderr", data])
    check("the program closes fd 2: its data file gets no finding, the first stderr both",
          p.returncode == 0 and text_of(data) == "data\n" and
          rules_printed(p.stderr) == ["AC101", "AC102"], (p.stderr[-300:],
                                                          text_of(data)[:200]))
    p = run([PROG, "close-fds", f"{d}/plain.data"], preload(log_file=f"{d}/plain.log"))
    check("LD_PRELOAD: the same daemon, the same", text_of(f"{d}/plain.data") == "data\n" and
          rules_printed(text_of(f"{d}/plain.log")) == ["AC101", "AC102"], p.stderr[-300:])


def relative_paths(d):
    os.mkdir(f"{d}/sub")
    p = run([PROG, "chdir", "sub"], preload(json="rel.json", log_file="rel.log",
                                            print_stderr="off"), cwd=d)
    report = load(f"{d}/rel.json")
    check("LD_PRELOAD: relative report paths and a chdir: one report, one log",
          sorted(f["rule"] for f in report.get("findings", [])) == ["AC101", "AC102"] and
          rules_printed(text_of(f"{d}/rel.log")) == ["AC101", "AC102"] and
          os.listdir(f"{d}/sub") == [], (os.listdir(d), os.listdir(f"{d}/sub")))
    write_file(d, "rel.supp", "*:main\n")
    p = run([CLI, "--suppressions", "rel.supp", "--json", "supp.json", "/bin/sh", "-c",
             f"cd sub && exec {DEMO} >/dev/null"], cwd=d)
    check("CLI: a relative suppression file still applies in a program run from another folder",
          load(f"{d}/supp.json").get("summary", {}).get("suppressed") == 5 and
          "no finding is suppressed" not in p.stderr, p.stderr[-300:])
    os.mkdir(f"{d}/out")
    p = run([PROG, "chdir", "sub"], dict(preload(json="%q{OUT}/q.json", print_stderr="off"),
                                         OUT=f"{d}/out"), cwd=d)
    check("LD_PRELOAD: %q{OUT} holding an absolute folder stays absolute",
          len(load(f"{d}/out/q.json").get("findings", [])) == 2, (p.stderr[-300:],
                                                                  os.listdir(f"{d}/out")))
    p = run([CLI, "--log-file", "cli.log", "--json", "cli.json", PROG, "chdir", "sub"], cwd=d)
    check("CLI: a relative log and a chdir: one log with both findings",
          rules_printed(text_of(f"{d}/cli.log")) == ["AC101", "AC102"] and
          os.listdir(f"{d}/sub") == [], (p.stderr[-300:], os.listdir(f"{d}/sub")))


def forwarded_signals(d):
    # A program that says which signal it got; the signal is sent to the CLI alone.
    script = write_file(d, "sig.sh", "trap 'exit 7' INT\ntrap 'exit 8' USR1\ntrap 'exit 9' TERM\n"
                        "echo ready\nwhile :; do sleep 0.05; done\n")
    for sig, status in [(signal.SIGINT, 7), (signal.SIGUSR1, 8), (signal.SIGTERM, 9)]:
        cli = subprocess.Popen([CLI, "--require-cuda-init", "no", "/bin/sh", script], env=ENV,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
        cli.stdout.readline()  # the program runs, its traps set
        cli.send_signal(sig)  # to the CLI's pid alone
        try:
            cli.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(cli.pid, signal.SIGKILL)  # the program too
            cli.wait()
        check(f"{sig.name} sent to the CLI alone reaches the program; its status is the CLI's",
              cli.returncode == status, cli.returncode)
        cli.stdout.close(), cli.stderr.close()


def sanitized_program(d):
    compiler = shutil.which("gcc") or shutil.which("cc")
    exe = f"{d}/asan_demo"
    source = os.path.join(SOURCE, "examples", "attach_mistakes.c")
    subprocess.run([compiler, "-fsanitize=address", "-g", f"-I{CUDA_INCLUDE}", "-o", exe, source,
                    DRIVER_STUB], check=True)
    needed = subprocess.run(["readelf", "-d", exe], capture_output=True, text=True).stdout
    check("the AddressSanitizer program links libasan dynamically", "libasan" in needed)
    p = run([exe], preload())
    check("wrong way: with the shim first in LD_PRELOAD, ASan refuses to start",
          p.returncode != 0 and "ASan runtime does not come first" in p.stderr, p.stderr[-300:])
    # The user's own ASAN_OPTIONS stay in force (verbosity=1 makes ASan talk).
    p = run([CLI, "--json", f"{d}/asan.json", exe], dict(ENV, ASAN_OPTIONS="verbosity=1"))
    check("CLI: an AddressSanitizer program runs checked, its findings reported",
          p.returncode == 0 and errors_in(f"{d}/asan.json") == 5 and
          "ASan runtime" not in p.stderr and "AddressSanitizer: " in p.stderr, p.stderr[-400:])
    # The programs it runs must not get ASan's runtime: its leak check would
    # change their exit status.
    script = write_file(d, "child.sh", f"#!/bin/sh\n{exe} >/dev/null\n"
                        f"{sys.executable} -c 'import json'\n")
    os.chmod(script, 0o755)
    p = run([CLI, "--json", f"{d}/asan-child.json", "--target-processes", "all", script])
    check("CLI: a script running it: every process keeps its own status",
          p.returncode == 0 and errors_in(f"{d}/asan-child.json") == 5 and
          "LeakSanitizer" not in p.stderr, p.stderr[-400:])


def guard_backend_said(d):
    # The page guard's backend: protection keys where the CPU has them, else
    # mprotect - said once with --verbose, and always when keys were asked for
    # by name and are missing; the findings do not depend on it.
    has_keys = " pku " in " " + open("/proc/cpuinfo").read().replace("\n", " ") + " "
    counts = {}
    for backend in ["auto", "pkeys", "mprotect"]:
        p = run([CLI, "--json", f"{d}/{backend}.json", "--verbose", "1", "--guard-pages", backend,
                 DEMO])
        lines = [l for l in shim_lines(p.stderr)
                 if re.search(r"page guard: (mprotect|protection keys)", l)]
        counts[backend] = sorted(f["rule"] for f in load(f"{d}/{backend}.json").get("findings", []))
        if backend == "mprotect" or not has_keys:
            said = len(lines) == 1 and "page guard: mprotect" in lines[0]
            if backend == "pkeys" and not has_keys:
                warned = [l for l in shim_lines(p.stderr) if "--guard-pages pkeys:" in l]
                said = said or (len(warned) == 1 and "using mprotect" in warned[0])
        else:
            said = len(lines) >= 1 and "protection keys" in lines[0]
        check(f"--guard-pages {backend}: the backend is said once", said, "\n".join(lines))
    p = run([CLI, "--guard-pages", "pkeys", DEMO])
    warned = [l for l in shim_lines(p.stderr) if "--guard-pages pkeys:" in l]
    check("--guard-pages pkeys without keys: one warning, even without --verbose",
          has_keys or (len(warned) == 1 and "using mprotect" in warned[0]), p.stderr[-300:])
    check("the findings are the same under every backend",
          counts["auto"] == counts["pkeys"] == counts["mprotect"] and counts["auto"], str(counts))


def never_loaded(d):
    static = os.path.join(os.path.dirname(PROG), "static_prog")
    p = run([CLI, static])
    check("the shim never loaded into a static program: status 3, says it is static",
          p.returncode == 3 and "statically linked" in p.stderr, p.stderr[-300:])
    script = write_file(d, "static.sh", f"#!{static}\n")  # not ELF: the CLI cannot tell why
    os.chmod(script, 0o755)
    p = run([CLI, script])
    check("the shim never loaded, the cause unknown: status 3, the possible causes listed",
          p.returncode == 3 and "clears the environment" in p.stderr and
          "sanitizer" in p.stderr, p.stderr[-300:])


for case in [no_raw_io_in_report_code, fork_while_protected, wrapper_script, long_names, unwritable_log, unbounded_inputs,
             driver_is_shim, messages_follow_the_log, reused_descriptors, relative_paths,
             forwarded_signals, sanitized_program, never_loaded, guard_backend_said]:
    with tempfile.TemporaryDirectory() as folder:
        case(folder)

finish("robustness")
