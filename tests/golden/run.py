#!/usr/bin/env python3
"""Golden reports: each case of cases.txt runs a wrong-case program under
attachcheck, and for each finding it names its stderr block, JSON finding,
SARIF result and HTML finding are compared with expected/CASE.txt, after
what differs from machine to machine is normalised away (addresses become
numbered labels, so two fields that hold the same address still say so;
pids, paths, columns, and the C library's and loader's frames). Every
finding is also checked for fields that mean nothing for its kind (the kinds'
fields are read from docs/report-schema.md): a driver answer on a CPU
access, a NULL pointer or an offset outside the allocation, a busy stream
with nothing outstanding.

  run.py BUILD [--driver fake|real] [--only NAME] [--update]

--update writes the expected files from this run (review the diff)."""
import argparse
import difflib
import html
import json
import os
import platform
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from elfmachine import machine  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
SCHEMA_DOC = os.path.join(SOURCE, "docs", "report-schema.md")
FOREIGN = re.compile(r"libc\.so|ld-linux|libpthread|\b_start\b|__libc_start")


def parse_cases(path):
    cases = []
    for lineno, line in enumerate(open(path), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        cols = [c.strip() for c in line.split("|")]
        if len(cols) != 4:
            sys.exit(f"{path}:{lineno}: expected 4 columns, got {len(cols)}")
        words, env = cols[1].split(), {}
        while words and re.match(r"^[A-Z][A-Z0-9_]*=", words[0]):
            key, value = words.pop(0).split("=", 1)
            env[key] = value
        cases.append({"name": cols[0], "env": env, "command": words, "options": cols[2].split(),
                      "rules": cols[3].split()})
    return cases


def section(text, title):
    return text.split(title)[1].split("\n#")[0]


def kind_fields():
    """{kind: (required, optional)} and the fields of every finding, from the schema's tables."""
    text = open(SCHEMA_DOC).read()
    common = set()
    for line in section(text, "### Fields of every finding").splitlines():
        if line.startswith("| `"):
            common |= set(re.findall(r"`([a-z_]+)`", line.split("|")[1]))
    kinds = {}
    for line in section(text, "### Fields of each kind").splitlines():
        cells = line.split("|")
        if len(cells) == 5 and cells[1].strip().startswith("`") and "AC" in cells[2]:
            names = re.findall(r"`([a-z_]+\??)`", cells[3])
            kinds[cells[1].strip().strip("`")] = ({n for n in names if not n.endswith("?")},
                                                  {n.rstrip("?") for n in names if n.endswith("?")})
    return kinds, common | {"type"}


KINDS, COMMON = kind_fields()


# ---- fields that mean nothing for their kind ----

def meaningless(f, block, result, article):
    """What in a finding's four forms makes no sense for its kind; [] when all does."""
    problems = []
    kind = f.get("kind")
    if kind not in KINDS:
        return [f"unknown kind {kind!r}"]
    required, optional = KINDS[kind]
    extra = set(f) - COMMON - required - optional
    missing = required - set(f)
    if extra:
        problems.append(f"JSON: fields a {kind} finding does not have: {sorted(extra)}")
    if missing:
        problems.append(f"JSON: fields a {kind} finding must have: {sorted(missing)}")
    alloc = f.get("allocation")
    if isinstance(alloc, dict) and "offset" in alloc and not 0 <= alloc["offset"] < alloc["size"]:
        problems.append(f"JSON: offset {alloc['offset']} outside an allocation of {alloc['size']}")
    if kind in ("launch", "copy", "host_access") and isinstance(alloc, dict) and "offset" not in alloc:
        problems.append("JSON: the address at fault lies outside its allocation")
    if isinstance(alloc, dict) and "association" in alloc and "managed" not in alloc["kind"]:
        problems.append(f"JSON: an association for {alloc['kind']} memory, which is never attached")
    if kind == "attach" and f["call"]["dptr"] == "0x0" and f.get("memory_kind") != "NULL":
        problems.append("JSON: a NULL dptr for memory that is not NULL")
    busy = f.get("busy")
    if isinstance(busy, dict) and busy.get("outstanding", 0) < 1:
        problems.append("JSON: a busy stream with no operation outstanding")
    arg = f.get("argument")
    if kind == "launch" and isinstance(alloc, dict) and \
            int(arg["value"], 16) != int(alloc["base"], 16) + alloc["offset"]:
        problems.append("JSON: the argument's value is not where the allocation says")
    for n in re.findall(r"offset (\d+)", block):
        if alloc and int(n) >= alloc.get("size", 0):
            problems.append(f"text: offset {n} outside the allocation")
    if kind != "attach" and re.search(r"driver:|dptr=|flags=", block):
        problems.append("text: a call's arguments or driver answer on a " + kind)
    if re.search(r"has 0 operations|0x0\b(?! \(NULL)", block) and f.get("memory_kind") != "NULL":
        problems.append("text: a zero that means nothing (0x0, 0 operations)")
    lines = [ln for ln in block.splitlines() if ln.strip()]
    for a, b in zip(lines, lines[1:]):
        if a == b:
            problems.append(f"text: a line written twice: {a.strip()!r}")
    if kind != "attach" and "driver" in (result or {}).get("properties", {}):
        problems.append("SARIF: a driver answer on a " + kind)
    if kind != "attach" and re.search(r"<dt>(driver|call)</dt>", article):
        problems.append("HTML: a call or driver answer on a " + kind)
    return problems


def self_test():
    """The check above finds what it is for (a launch with a driver answer)."""
    f = {"rule": "AC301", "kind": "launch", "api": "cuLaunchKernel", "stream": {}, "kernel": {},
         "argument": {"value": "0x10"}, "allocation": {"base": "0x10", "size": 8, "offset": 0},
         "driver": {"outcome": "returned"}}
    found = meaningless(f, "  driver: returned CUDA_SUCCESS\n  driver: returned CUDA_SUCCESS",
                        {}, "<dt>driver</dt>")
    return len(found) == 4


# ---- normalising ----

class Labels:
    """Addresses as labels numbered by first appearance: the same address keeps its label."""

    def __init__(self):
        self.seen = {}

    def __call__(self, m):
        return self.seen.setdefault(m.group(0), f"0x@{len(self.seen) + 1}")


def normalise_text(text, build):
    text = re.sub(r"==attachcheck:\d+==", "==attachcheck:PID==", text)
    text = re.sub(r"(#\d+) 0x[0-9a-f]+ in ", r"\1 0x? in ", text)  # a frame's return address
    text = re.sub(r'data-pids="[\d ]*"', 'data-pids="PID"', text)
    text = text.replace(build, "<build>").replace(SOURCE, "<src>")
    text = re.sub(r"\+0x[0-9a-f]+", "+0x?", text)  # offsets in functions and modules
    text = re.sub(r"(\.(?:c|h|cu|cpp)):(\d+):(\d+)", r"\1:\2:C", text)
    return re.sub(r"\b0x[0-9a-f]{4,}\b", Labels(), text)


def own_frames(frames):
    return [fr for fr in frames if not FOREIGN.search(fr.get("module", "") + " " +
                                                      fr.get("function", ""))]


def strip_json(o):
    """Frames of the C library and loader dropped; what changes from build to build blanked."""
    if isinstance(o, dict):
        out = {}
        for k, v in o.items():
            if k in ("pc", "offset", "function_offset") and isinstance(v, str):
                v = "0x?"
            elif k == "relativeAddress":
                v = 0
            elif k in ("column", "startColumn"):
                v = "C"
            elif k in ("pid", "processes", "processId", "key", "device"):
                v = "?"
            elif k in ("stack", "frames") and isinstance(v, list):
                v = own_frames(v) if k == "stack" else [x for x in v if not FOREIGN.search(
                    x.get("module", "") + json.dumps(x.get("location", {})))]
            out[k] = strip_json(v)
        return out
    if isinstance(o, list):
        return [strip_json(x) for x in o]
    return o


def normalise_json(o, build):
    return normalise_text(json.dumps(strip_json(o), indent=1, sort_keys=True), build)


def text_blocks(stderr):
    """Each finding's block on stderr, its foreign frames left out."""
    blocks, current = [], None
    for line in stderr.splitlines():
        if re.match(r"==attachcheck(:\d+)?== AC\d{3} ", line):
            current = [line]
            blocks.append(current)
        elif current is not None:
            if re.match(r"==attachcheck(:\d+)?== $", line):
                current = None
            elif not (re.search(r"#\d+ 0x", line) and FOREIGN.search(line)):
                current.append(line)
    return ["\n".join(b) for b in blocks]


def html_article(page, index):
    m = re.search(r'<article [^>]*id="f%d".*?</article>' % index, page, re.S)
    if not m:
        return ""
    art = re.sub(r'<li class="fold">.*?</details></li>', "", m.group(0), flags=re.S)
    art = re.sub(r"<li[^>]*>(?:(?!</li>).)*?</li>",
                 lambda li: "" if FOREIGN.search(html.unescape(li.group(0))) else li.group(0),
                 art, flags=re.S)
    return re.sub(r"(<(?:dt|li|h3|h4|h5|p|div|details|ol|dl)\b)", r"\n\1", art)


# ---- running ----

def emulated(program):
    """Whether the program runs under qemu-user (the aarch64 build on an x86-64 machine): its
    signal frames carry no ESR record, so every page fault is judged a write (docs/platforms.md)."""
    return machine(program) not in (platform.machine(), None)


def blur_access(text):
    """A page fault's read or write made one, where the platform cannot tell them apart."""
    text = re.sub(r"access: (?:read|write) (of .*\(seen by page fault\))", r"access: read or write \1",
                  text)
    text = re.sub(r'"kind": "(?:read|write)",(\s*)"via": "page fault"',
                  r'"kind": "read or write",\1"via": "page fault"', text)
    text = re.sub(r"the CPU's (?:read|write) (of \S+ on thread \d+ \(seen by page fault\))",
                  r"the CPU's read or write \1", text)
    return re.sub(r"<dd>(?:read|write) (of <code>[^<]*</code> by the CPU \(seen by page fault\))",
                  r"<dd>read or write \1", text)


def run_case(case, build, driver):
    env = dict(os.environ, **case["env"])
    env.pop("ATTACHCHECK_JSON", None)
    if driver == "fake":
        env["LD_LIBRARY_PATH"] = os.path.join(build, "tests", "fakecuda")
    with tempfile.TemporaryDirectory() as d:
        out = {k: os.path.join(d, "r." + k) for k in ("json", "sarif", "html")}
        cmd = [os.path.join(build, "bin", "attachcheck"), "--json", out["json"], "--sarif",
               out["sarif"], "--html", out["html"]] + case["options"] + ["--"] + \
            [os.path.join(build, case["command"][0])] + case["command"][1:]
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        try:
            report = json.load(open(out["json"]))
            sarif = json.load(open(out["sarif"]))
            page = open(out["html"]).read()
        except (OSError, ValueError) as e:
            return None, False, [f"no reports ({e}); stderr:\n{p.stderr[-2000:]}"]
    findings = report["findings"]
    blind = emulated(os.path.join(build, case["command"][0]))
    rules = [f["rule"] for f in findings]
    if rules != case["rules"]:
        return None, blind, [f"findings {rules}, expected {case['rules']}"]
    blocks = text_blocks(p.stderr)
    results = sarif["runs"][0]["results"]
    sections, problems = [], []
    for i, f in enumerate(findings):
        block = next((b for b in blocks if f" {f['rule']} " in b.splitlines()[0]), "")
        if block:
            blocks.remove(block)
        f = dict(f)
        f.pop("timeline", None)
        result, article = results[i], html_article(page, i)
        device = f.get("semantics", {}).get("device")
        if device:  # the stand-in's name, or the GPU's
            block, article = block.replace(device, "<device>"), article.replace(device, "<device>")
        problems += [f"{f['rule']}: {x}" for x in meaningless(f, block, result, article)]
        sections.append((f"== {f['rule']} text", normalise_text(block, build)))
        sections.append((f"== {f['rule']} json", normalise_json(f, build)))
        sections.append((f"== {f['rule']} sarif", normalise_json(result, build)))
        sections.append((f"== {f['rule']} html", normalise_text(article, build)))
    got = "\n".join(f"{title}\n{body}\n" for title, body in sections)
    return (blur_access(got) if blind else got), blind, problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build")
    ap.add_argument("--driver", choices=["fake", "real"], default="fake")
    ap.add_argument("--only")
    ap.add_argument("--update", action="store_true")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    failed = 0 if self_test() else 1
    if failed:
        print("FAIL the check for meaningless fields misses a driver answer on a launch")
    for case in parse_cases(os.path.join(HERE, "cases.txt")):
        if args.only and case["name"] != args.only:
            continue
        if args.driver == "real" and any(k.startswith("FAKECUDA_") for k in case["env"]):
            continue
        got, blind, problems = run_case(case, build, args.driver)
        path = os.path.join(HERE, "expected", case["name"] + ".txt")
        if got is not None and args.update and not blind:
            open(path, "w").write(got)
        expected = open(path).read() if os.path.exists(path) else None
        if blind and expected is not None:
            expected = blur_access(expected)
        if got is not None and got != expected:
            diff = "".join(difflib.unified_diff((expected or "").splitlines(True),
                                                got.splitlines(True), "expected", "got"))
            problems.append("differs from expected/%s.txt:\n%s" % (case["name"], diff[:6000]))
        print(f"{'FAIL' if problems else 'ok  '} {case['name']}")
        for x in problems:
            print("     " + x.replace("\n", "\n     "))
        failed += bool(problems)
    print(f"golden reports: {failed} failed")
    sys.exit(1 if failed else 0)


main()
