"""tools/stuck.sh on a process under the shim: it names the function a
spinning thread is in, and lists every lock of base/locks.inc with its state
(docs/debugging.md). Skips (77) where this user may not trace the process."""
import os
import re
import subprocess
import sys
import tempfile
import time

build = sys.argv[1]
here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
source = r"""
#include <pthread.h>
#include <unistd.h>
__attribute__((noinline)) static void spin_here(void) { for (;;) __asm__ volatile(""); }
static void *worker(void *a) { (void)a; spin_here(); return 0; }
int main(void) { pthread_t t; pthread_create(&t, 0, worker, 0); sleep(60); return 0; }
"""
with tempfile.TemporaryDirectory() as tmp:
    prog = os.path.join(tmp, "spinner")
    with open(prog + ".c", "w") as f:
        f.write(source)
    subprocess.run(["cc", "-g", "-O0", "-pthread", "-o", prog, prog + ".c"], check=True)
    # Through the CLI, which preloads the shim as this build needs (ASan's
    # runtime first in a sanitizer build); the program is its child.
    cli = os.path.join(build, "bin", "attachcheck")
    target = subprocess.Popen([cli, "--require-cuda-init", "no", "--", prog],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        child = ""
        for _ in range(100):
            time.sleep(0.1)
            child = subprocess.run(["pgrep", "-P", str(target.pid)], capture_output=True,
                                   text=True).stdout.split()
            if child and "libattachcheck" in open(f"/proc/{child[0]}/maps").read():
                break
        out = subprocess.run([os.path.join(root, "tools", "stuck.sh"), child[0]],
                             capture_output=True, text=True, timeout=120)
    finally:
        target.kill()
        subprocess.run(["pkill", "-KILL", "-f", prog])
        target.wait()
    text = out.stdout + out.stderr
    if "cannot trace" in text:
        print(text)
        print("skip: this user may not trace the process")
        sys.exit(77)
    locks = re.findall(r"^AC_LOCK\((\w+),", open(os.path.join(root, "base", "locks.inc")).read(),
                       re.M)
    checks = [
        ("exit status 0", out.returncode == 0),
        ("the spinning thread is named in spin_here", re.search(r"at:\n    spinner\+0x[0-9a-f]+ spin_here", text)),
        ("the sleeping thread's system call is named", re.search(r"system call (35|230)\b", text)),
        ("every lock listed, free", all(f"lock {n}: free" in text for n in locks) and len(locks) >= 8),
    ]
    failed = [name for name, ok in checks if not ok]
    if failed:
        print(text)
        print("FAIL:", "; ".join(failed))
        sys.exit(1)
    print(f"stuck: {len(checks)} checks passed")
