#!/usr/bin/env python3
"""check_deb.py DEB ARCH - what CI checks of a Debian package of either architecture (the arm64
one cannot run here): `dpkg-deb --info` gives the package, the version of CMakeLists.txt's
project(), the architecture ARCH and the run-time dependencies; `dpkg-deb --contents` holds the
CLI, the shim, the man page and the documents under /usr; the programs inside are ARCH's
machine code (a mislabelled package is what dpkg refuses); and every relative link in the
installed documents resolves to a file the package installs. test_package.py uses it for the
build's own package, tools/cross-aarch64.sh for the arm64 one."""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from elfmachine import machine  # noqa: E402

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = "usr/share/doc/attachcheck"
EXPECTED = ["usr/bin/attachcheck", "usr/lib/attachcheck/libattachcheck.so",
            "usr/share/man/man1/attachcheck.1", f"{DOC}/README.md", f"{DOC}/LICENSE",
            f"{DOC}/copyright", f"{DOC}/CHANGELOG.md", f"{DOC}/docs/design.md",
            f"{DOC}/docs/rules/AC201.md"]
MACHINES = {"amd64": "x86_64", "arm64": "aarch64"}  # Debian's names, elfmachine.py's


def version():
    text = open(os.path.join(SOURCE, "CMakeLists.txt")).read()
    return re.search(r"project\(attachcheck VERSION ([0-9.]+)", text).group(1)


def broken_links(root):
    """Relative links of the Markdown files under root that resolve to nothing there."""
    broken = []
    for folder, _, files in os.walk(root):
        for name in (f for f in files if f.endswith(".md")):
            page = os.path.join(folder, name)
            for link in re.findall(r"\]\(([^)\s]+)\)", open(page).read()):
                if re.match(r"[a-z]+:", link) or link.startswith("#"):
                    continue
                target = os.path.join(folder, link.split("#")[0])
                if not os.path.exists(target):
                    broken.append(f"{os.path.relpath(page, root)} -> {link}")
    return broken


def check_deb(deb, arch, check):
    """Runs the checks through check(name, condition, detail)."""
    fields = subprocess.run(["dpkg-deb", "-f", deb, "Package", "Version", "Architecture",
                             "Depends"], capture_output=True, text=True).stdout
    facts = dict(line.split(": ", 1) for line in fields.splitlines() if ": " in line)
    check(f"dpkg-deb --info: attachcheck {version()} for {arch}, with its dependencies",
          facts.get("Package") == "attachcheck" and facts.get("Version") == version() and
          facts.get("Architecture") == arch and
          all(d in facts.get("Depends", "") for d in ["libjansson4", "libunwind8", "libdw1"]),
          facts)
    listing = subprocess.run(["dpkg-deb", "--contents", deb], capture_output=True,
                             text=True).stdout
    paths = {line.split()[-1].lstrip("./") for line in listing.splitlines() if line.strip()}
    check("dpkg-deb --contents: the CLI, the shim, the man page, the documents, all under /usr",
          set(EXPECTED) <= paths and all(p.startswith("usr") for p in paths if p),
          sorted(set(EXPECTED) - paths))
    with tempfile.TemporaryDirectory() as root:
        subprocess.run(["dpkg-deb", "-x", deb, root], check=True)
        made = [machine(os.path.join(root, p)) for p in EXPECTED[:2]]
        check(f"the programs inside are {arch} machine code", made == [MACHINES[arch]] * 2, made)
        broken = broken_links(os.path.join(root, DOC))
        check("every link between the installed documents resolves", not broken, broken)


if __name__ == "__main__":
    failed = []

    def check(name, cond, detail=""):
        print(f"{'ok  ' if cond else 'FAIL'} {name} {'' if cond else detail}")
        if not cond:
            failed.append(name)

    check_deb(sys.argv[1], sys.argv[2], check)
    sys.exit(1 if failed else 0)
