#!/usr/bin/env python3
"""The record streams: nothing lost in silence, nothing taken from anyone else.

- a full TMPDIR: a record that cannot be written waits and is written once
  there is room; where it never is, the CLI says so in one line and exits 5,
  also when the process leaves with _exit; under plain LD_PRELOAD the report
  counts the records it lost (summary.incomplete_processes) and says so;
- a limit of 16 descriptors: the program opens as many files checked as bare,
  and a finding made while it holds every descriptor still reaches the report;
- a torn stream (a partial last line) fails the run, as does a process whose
  page guard let CPU accesses through unjudged;
- a planted stream in a shared folder (a file with a forged record, or a
  symbolic link, at the name a stream once had) is neither adopted, read nor
  deleted; a session folder other users may write is not used; a stream left
  by a crash is private;
- a finding made in a library's destructor, after the shim's own, is in the
  report;
- a set-user-ID program takes no path or driver from the environment.

The full TMPDIR is a small tmpfs when the test runs as root and may mount one;
else the program sets RLIMIT_FSIZE below the stream's size with SIGXFSZ
ignored, which makes the stream's next write(2) fail (EFBIG) as a full disk
makes it fail (ENOSPC): the same path in the shim, a real failed append."""
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile

from harness import CLI, ENV, SHIM, check, finish, run, write_file

TESTS = os.path.join(os.path.dirname(CLI), "..", "tests", "cli")
PROG = os.path.join(TESTS, "stream_prog")
SECURE = os.path.join(TESTS, "secure_prog")
IS_ROOT = os.geteuid() == 0


def load(path):
    return json.load(open(path)) if os.path.exists(path) else {}


def rules(report):
    return sorted(f["rule"] for f in report.get("findings", []))


def summary(report, key):
    return report.get("summary", {}).get(key)


def preload(**options):
    return dict(ENV, LD_PRELOAD=SHIM, **{f"ATTACHCHECK_{k.upper()}": v
                                         for k, v in options.items()})


def incomplete_lines(text):
    return [l for l in text.splitlines() if "the report is incomplete" in l]


class FullFolder:
    """A folder whose file system the program can fill: a 16 MiB tmpfs (root),
    else a plain folder, the program then limiting its file size instead."""

    def __init__(self, parent):
        self.path = os.path.join(parent, "full")
        os.mkdir(self.path)
        self.mounted = IS_ROOT and subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=16m,mode=1777", "tmpfs", self.path],
            capture_output=True).returncode == 0

    def arg(self):
        """stream_prog's argument: the folder to fill, or '-' for RLIMIT_FSIZE."""
        return self.path if self.mounted else "-"

    def empty(self):
        for name in os.listdir(self.path):
            p = os.path.join(self.path, name)
            shutil.rmtree(p) if os.path.isdir(p) and not os.path.islink(p) else os.unlink(p)

    def close(self):
        if self.mounted:
            subprocess.run(["umount", self.path])


def full_tmpdir(d):
    full = FullFolder(d)
    how = "a full tmpfs" if full.mounted else "RLIMIT_FSIZE"
    env = dict(ENV, TMPDIR=full.path)
    try:
        # The CLI: the session folder is in the full TMPDIR.
        p = run([CLI, "--json", f"{d}/cut.json", PROG, "fill", full.arg()], env)
        report = load(f"{d}/cut.json")
        check(f"CLI, {how}: a record that never reaches the stream: one line, status 5",
              p.returncode == 5 and len(incomplete_lines(p.stderr)) == 1 and
              summary(report, "incomplete_processes") == 1 and rules(report) == ["AC101"],
              (p.returncode, p.stderr[-600:], report.get("summary")))
        full.empty()
        p = run([CLI, "--json", f"{d}/quit.json", PROG, "fill", full.arg(), "quit"], env)
        check(f"CLI, {how}: a process that leaves with _exit while records wait: status 5",
              p.returncode == 5 and len(incomplete_lines(p.stderr)) == 1,
              (p.returncode, p.stderr[-600:]))
        full.empty()
        p = run([CLI, "--json", f"{d}/room.json", PROG, "fill", full.arg(), "free"], env)
        report = load(f"{d}/room.json")
        check(f"CLI, {how}: room made before exit: the waiting record is written, status 0",
              p.returncode == 0 and rules(report) == ["AC101", "AC102"] and
              summary(report, "incomplete_processes") == 0 and
              "written to the record stream after all" in p.stderr,
              (p.returncode, p.stderr[-600:], report.get("summary")))
        full.empty()
        # Plain LD_PRELOAD: the stream is beside the report, in the full folder.
        out = os.path.join(full.path, "r.json")
        p = run([PROG, "fill", full.arg(), "free", "100000"], preload(json=out, print_stderr="off"))
        report = load(out)
        lost = report.get("process", {}).get("incomplete", {}).get("lost_records", 0)
        check(f"LD_PRELOAD, {how}: more records wait than memory keeps: the report counts the "
              "lost ones and says so",
              summary(report, "incomplete_processes") == 1 and lost > 0 and
              rules(report) == ["AC101", "AC102"] and len(incomplete_lines(p.stderr)) == 1,
              (p.stderr[-600:], report.get("summary"), lost))
        full.empty()
        p = run([PROG, "fill", full.arg(), "free"], preload(json=out, print_stderr="off"))
        report = load(out)
        check(f"LD_PRELOAD, {how}: room made before exit: every record in the report",
              rules(report) == ["AC101", "AC102"] and summary(report, "incomplete_processes") == 0,
              (p.stderr[-600:], report.get("summary")))
    finally:
        full.close()


def limit(soft, hard):
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def files_opened(p):
    m = re.search(r"^files (\d+)$", p.stdout, re.M)
    return int(m.group(1)) if m else None


def sixteen_descriptors(d):
    for soft, hard in [(16, 16), (16, 4096)]:
        name = f"RLIMIT_NOFILE {soft}:{hard}"
        bare = files_opened(run([PROG, "files"], preexec_fn=limit(soft, hard)))
        cli = run([CLI, "--require-cuda-init", "no", "--log-file", f"{d}/{hard}.log", PROG,
                   "files"], preexec_fn=limit(soft, hard))
        plain = run([PROG, "files"], preload(log_file=f"{d}/{hard}-plain.log", json=f"{d}/x.json"),
                    preexec_fn=limit(soft, hard))
        check(f"{name}: the program opens as many files checked as bare (CLI, LD_PRELOAD)",
              bare is not None and bare == files_opened(cli) == files_opened(plain),
              (bare, files_opened(cli), files_opened(plain), cli.stderr[-300:]))
        p = run([CLI, "--json", f"{d}/hog-{hard}.json", PROG, "files", "hog"],
                preexec_fn=limit(soft, hard))
        report = load(f"{d}/hog-{hard}.json")
        check(f"{name}: a finding made while the program holds every descriptor is reported",
              p.returncode == 0 and rules(report) == ["AC101", "AC102"],
              (p.returncode, p.stderr[-400:], rules(report)))
        p = run([PROG, "files", "hog"], preload(json=f"{d}/hog-plain-{hard}.json"),
                preexec_fn=limit(soft, hard))
        check(f"{name}, LD_PRELOAD: the same",
              rules(load(f"{d}/hog-plain-{hard}.json")) == ["AC101", "AC102"], p.stderr[-400:])


def torn_stream(d):
    # The program writes half a record into its own stream and leaves as a
    # killed process would: without an end.
    p = run([CLI, "--require-cuda-init", "no", "--json", f"{d}/torn.json", PROG, "torn"])
    report = load(f"{d}/torn.json")
    check("a torn stream: one line naming the process, status 5",
          p.returncode == 5 and len(incomplete_lines(p.stderr)) == 1 and "torn" in p.stderr and
          summary(report, "dropped_records") == 1 and summary(report, "incomplete_processes") == 1,
          (p.returncode, p.stderr[-400:], report.get("summary")))


def unjudged_accesses(d):
    # The page guard let CPU accesses through without judging them: a
    # finding may be missing, so the run fails as one with records lost.
    p = run([CLI, "--require-cuda-init", "no", "--json", f"{d}/unjudged.json", PROG, "unjudged"])
    report = load(f"{d}/unjudged.json")
    inc = report.get("process", {}).get("incomplete", {})
    lines = incomplete_lines(p.stderr)
    check("CPU accesses let through unjudged: one line that says so, status 5",
          p.returncode == 5 and len(lines) == 1 and "3 CPU accesses unjudged" in lines[0] and
          inc.get("unjudged_accesses") == 3 and summary(report, "incomplete_processes") == 1,
          (p.returncode, p.stderr[-400:], inc))


def forged_stream(pid):
    """What another user plants: a process record and a finding of its own."""
    return (json.dumps({"type": "process", "pid": pid, "argv": ["forged"]}) + "\n" +
            json.dumps({"type": "finding", "pid": pid, "rule": "AC999", "severity": "error",
                        "key": "forged", "stack": []}) + "\n")


def run_with_planted(d, plant):
    """The program under plain LD_PRELOAD in a shared folder (mode 1777, as
    /tmp), its pid known before it starts: a shell runs plant (Python, given
    the name the stream once had and the pid), then execs the program."""
    shared = os.path.join(d, "shared")
    os.mkdir(shared)
    os.chmod(shared, 0o1777)
    out = os.path.join(shared, "r.json")
    helper = write_file(d, "plant.py", "import json, os, sys\n" + plant)
    p = run(["/bin/sh", "-c", f'{sys.executable} {helper} "{out}.$$.jsonl" $$ && '
             f"LD_PRELOAD={SHIM} ATTACHCHECK_JSON={out} ATTACHCHECK_PRINT_STDERR=off "
             f"exec {PROG} finding"], ENV)
    return p, out, shared


def planted_streams(d):
    # A file with a forged record at the predictable name, owned by another
    # user (when root: nobody), writable by all.
    plant = (f"text = {forged_stream(0)!r}.replace('\"pid\": 0', '\"pid\": ' + sys.argv[2])\n"
             "open(sys.argv[1], 'w').write(text)\n"
             "os.chmod(sys.argv[1], 0o666)\n"
             f"{'os.chown(sys.argv[1], 65534, 65534)' if IS_ROOT else ''}\n")
    folder = os.path.join(d, "file")
    os.mkdir(folder)
    p, out, shared = run_with_planted(folder, plant)
    report = load(out)
    planted = [n for n in os.listdir(shared) if n.endswith(".jsonl")]
    kept = planted and open(os.path.join(shared, planted[0])).read().count("\n") == 2
    check("a planted stream with a forged finding: not adopted, not read, not deleted; nothing "
          "of the process's own left beside the report",
          rules(report) == ["AC101"] and "forged" not in json.dumps(report) and
          len(planted) == 1 and kept and
          sorted(os.listdir(shared)) == sorted(["r.json"] + planted),
          (p.stderr[-400:], rules(report), os.listdir(shared)))
    # A symbolic link at the predictable name, to a file of the victim's.
    folder = os.path.join(d, "link")
    os.mkdir(folder)
    victim = write_file(folder, "victim", "untouched\n")
    p, out, shared = run_with_planted(folder, f"os.symlink({victim!r}, sys.argv[1])\n")
    report = load(out)
    links = [n for n in os.listdir(shared) if os.path.islink(os.path.join(shared, n))]
    check("a symbolic link at the stream's name: not followed, the findings still reported",
          rules(report) == ["AC101"] and open(victim).read() == "untouched\n" and
          len(links) == 1, (p.stderr[-400:], rules(report), os.listdir(shared)))


def crash_leaves_private_stream(d):
    # A process killed before its exit leaves its stream: in a folder of its
    # own (0700), the file 0600, holding the finding.
    p = run([PROG, "crash"], preload(json=f"{d}/crash.json", print_stderr="off"))
    folders = [n for n in os.listdir(d) if n.startswith("crash.json.") and
               os.path.isdir(os.path.join(d, n))]
    folder = os.path.join(d, folders[0]) if len(folders) == 1 else d
    streams = [n for n in os.listdir(folder) if n.endswith(".jsonl")] if folders else []
    stream = os.path.join(folder, streams[0]) if streams else folder
    check("a crash leaves its stream private: folder 0700, file 0600, the finding in it",
          p.returncode < 0 and len(streams) == 1 and
          os.stat(folder).st_mode & 0o777 == 0o700 and
          os.stat(stream).st_mode & 0o777 == 0o600 and "AC101" in open(stream).read(),
          (p.returncode, os.listdir(d), streams))


def shared_session_folder(d):
    # A session folder other users may write: the shim writes no stream there.
    shared = os.path.join(d, "session")
    os.mkdir(shared)
    os.chmod(shared, 0o1777)
    p = run([PROG, "finding"], preload(session_dir=shared))
    check("a session folder others may write is not used",
          os.listdir(shared) == [] and "open to other users" in p.stderr,
          (os.listdir(shared), p.stderr[-300:]))


def late_finding(d):
    out = f"{d}/late.json"
    p = run([PROG, "late"], preload(json=out, print_stderr="off"))
    check("LD_PRELOAD: a finding made in a library destructor after the shim's is in the report",
          rules(load(out)) == ["AC101"] and not [n for n in os.listdir(d) if ".jsonl" in n or
                                                 n.startswith("late.json.")],
          (p.stderr[-400:], os.listdir(d)))
    p = run([CLI, "--json", f"{d}/late-cli.json", PROG, "late"])
    check("CLI: the same", rules(load(f"{d}/late-cli.json")) == ["AC101"], p.stderr[-400:])


def secure_exec(d):
    if not IS_ROOT:
        print("skip AT_SECURE: making a set-user-ID copy needs root; as root the test runs a "
              "set-user-ID copy of secure_prog as user nobody")
        return
    os.chmod(d, 0o755)
    copy = os.path.join(d, "secure_prog")
    shutil.copy(SECURE, copy)
    os.chown(copy, 0, 0)
    os.chmod(copy, 0o4755)
    drop = os.path.join(d, "drop")
    os.mkdir(drop)
    os.chmod(drop, 0o777)
    env = dict(ENV, ATTACHCHECK_LOG_FILE=f"{drop}/log", ATTACHCHECK_JSON=f"{drop}/r.json",
               ATTACHCHECK_DRIVER=f"{drop}/libevil.so", ATTACHCHECK_VERBOSE="1")
    p = run([copy], env, user=65534, group=65534, extra_groups=[])
    if "AT_SECURE 1" not in p.stdout:
        print(f"skip AT_SECURE: the set-user-ID copy did not run secure-exec here ({p.stdout!r}: "
              "a nosuid mount, an emulator)")
        return
    said = [l for l in p.stderr.splitlines() if "AT_SECURE" in l]
    check("set-user-ID: path and driver options from the environment ignored, said in one line",
          not os.path.exists(f"{drop}/log") and len(said) == 1 and
          all(v in said[0] for v in ["ATTACHCHECK_LOG_FILE", "ATTACHCHECK_JSON",
                                     "ATTACHCHECK_DRIVER"]), (p.stderr[-400:], os.listdir(drop)))
    p = run([copy], env)  # the same program, not secure-exec (root runs it): honoured
    check("the same program run by its owner (no AT_SECURE): the log is written",
          "AT_SECURE 0" in p.stdout and os.path.exists(f"{drop}/log"), (p.stdout, p.stderr[-300:]))


for case in [full_tmpdir, sixteen_descriptors, torn_stream, unjudged_accesses, planted_streams,
             shared_session_folder, crash_leaves_private_stream, late_finding, secure_exec]:
    with tempfile.TemporaryDirectory() as folder:
        case(folder)

finish("streams")
