#!/usr/bin/env python3
"""Packaging: `cmake --install` lays out the CLI, the shim, the man page and the documents
(their links resolving), and the installed CLI finds the installed shim and checks a program;
CPack makes a .deb for this machine's architecture with the same layout under /usr and the
declared dependencies (check_deb.py), which dpkg installs; the man page is well-formed roff made
from the same source as --help."""
import os
import tempfile

from check_deb import broken_links, check_deb
from harness import BUILD, DEMO, check, finish, run


def demo_under(cli):
    p = run([cli, "--print-stderr", "off", DEMO])
    return p.returncode == 0 and "summary: 5 errors" in p.stderr, p.stderr[-400:]


with tempfile.TemporaryDirectory() as d:
    prefix = os.path.join(d, "prefix")
    p = run(["cmake", "--install", BUILD, "--prefix", prefix], timeout=300)
    installed = {os.path.relpath(os.path.join(r, f), prefix) for r, _, fs in os.walk(prefix)
                 for f in fs}
    check("cmake --install: CLI, shim, man page, docs, licence, changelog",
          p.returncode == 0 and {"bin/attachcheck", "lib/attachcheck/libattachcheck.so",
                                 "share/man/man1/attachcheck.1", "share/doc/attachcheck/README.md",
                                 "share/doc/attachcheck/docs/rules/AC201.md",
                                 "share/doc/attachcheck/LICENSE", "share/doc/attachcheck/copyright",
                                 "share/doc/attachcheck/CHANGELOG.md"} <= installed,
          (p.stderr[-300:], sorted(installed)[:20]))
    broken = broken_links(os.path.join(prefix, "share", "doc", "attachcheck"))
    check("the installed documents keep their layout: every link between them resolves",
          not broken, broken)
    ok, detail = demo_under(os.path.join(prefix, "bin", "attachcheck"))
    check("the installed CLI finds the installed shim and checks the demo", ok, detail)

    help_text = run([os.path.join(prefix, "bin", "attachcheck"), "--help"]).stdout
    man = open(os.path.join(prefix, "share/man/man1/attachcheck.1")).read()
    check("man page and --help from one source: every option in both",
          all(f"--{o}" in help_text and f"\\-\\-{o.replace('-', chr(92) + '-')}" in man
              for o in ["json", "sarif", "suppressions", "print-limit", "target-processes"]))
    groff = run(["groff", "-man", "-ww", "-z", os.path.join(prefix, "share/man/man1/attachcheck.1")])
    check("the man page is clean roff (groff -ww)", groff.returncode == 0 and not groff.stderr,
          groff.stderr[:300])

    out = os.path.join(d, "deb")
    p = run(["cpack", "-G", "DEB", "-B", out, "--config", os.path.join(BUILD, "CPackConfig.cmake")],
            timeout=300)
    debs = [f for f in os.listdir(out) if f.endswith(".deb")] if os.path.isdir(out) else []
    check("cpack makes a .deb", p.returncode == 0 and len(debs) == 1, p.stdout[-400:] + p.stderr)
    if debs:
        deb = os.path.join(out, debs[0])
        arch = run(["dpkg", "--print-architecture"]).stdout.strip()
        check_deb(deb, arch, check)
        # dpkg -i, into a root and a package database of the test's own (dependencies taken as
        # there): dpkg refuses a package of another architecture or a broken one.
        admin, root = os.path.join(d, "admin"), os.path.join(d, "root")
        os.makedirs(os.path.join(admin, "updates"))
        os.makedirs(os.path.join(admin, "info"))
        os.makedirs(root)
        for name in ["status", "available"]:
            open(os.path.join(admin, name), "w").close()
        p = run(["dpkg", f"--admindir={admin}", f"--instdir={root}", "--force-not-root",
                 "--force-depends", "-i", deb], timeout=120)
        check("dpkg -i installs it", p.returncode == 0, p.stdout[-300:] + p.stderr[-300:])
        ok, detail = demo_under(os.path.join(root, "usr", "bin", "attachcheck"))
        check("the packaged CLI (under /usr) finds its shim and checks the demo",
              ok and os.path.exists(os.path.join(root, "usr/lib/attachcheck/libattachcheck.so")),
              detail)

finish("package")
