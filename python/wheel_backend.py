"""wheel_backend.py - the PEP 517 backend that makes attachcheck's wheel (pyproject.toml).

The wheel holds the Python package of python/attachcheck/ and, inside it, what a CMake build
made: bin/attachcheck (the CLI) and lib/ with libattachcheck.so and the private copies of
libunwind, liblzma, libdw and libelf the build puts beside it - the same layout as the build
folder, so the CLI finds its shim at ../lib/ as it does there, and the shim its libraries
beside itself. With the config setting build-dir (pip wheel --config-settings build-dir=BUILD)
it takes an existing build; without, it configures and builds the CLI and the shim first
(which needs what tools/deps.sh installs). The metadata are pyproject.toml's [project]; the
version is CMakeLists.txt's project(), the one place it is written. The tag is linux_<machine>
of the programs inside; tools/wheel.sh makes it a manylinux one with auditwheel.
Run as a script - wheel_backend.py BUILD OUT_DIR - it does the same without pip.
"""
import base64
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import zipfile

try:
    import tomllib
except ImportError:  # Python before 3.11
    tomllib = None

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(SOURCE, "python", "attachcheck")
PRIVATE_LIBRARIES = ["libattachcheck.so", "libunwind.so.8", "liblzma.so.5", "libdw.so.1",
                     "libelf.so.1"]
MACHINES = {62: "x86_64", 183: "aarch64"}  # ELF e_machine


def version():
    text = open(os.path.join(SOURCE, "CMakeLists.txt")).read()
    return re.search(r"project\(attachcheck VERSION ([0-9.]+)", text).group(1)


def project():
    if tomllib is None:
        sys.exit("attachcheck's wheel is made with Python 3.11 or later (tomllib)")
    with open(os.path.join(SOURCE, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]


def metadata():
    p = project()
    lines = ["Metadata-Version: 2.1", f"Name: {p['name']}", f"Version: {version()}",
             f"Summary: {p['description']}", f"License: {p['license']['text']}",
             f"Requires-Python: {p['requires-python']}", f"Keywords: {','.join(p['keywords'])}"]
    lines += [f"Classifier: {c}" for c in p["classifiers"]]
    lines += ["Description-Content-Type: text/markdown", ""]
    return "\n".join(lines) + "\n" + open(os.path.join(SOURCE, p["readme"])).read()


def entry_points():
    scripts = project()["scripts"]
    return "[console_scripts]\n" + "".join(f"{k} = {v}\n" for k, v in scripts.items())


def machine(path):
    with open(path, "rb") as f:
        header = f.read(20)
    return MACHINES.get(int.from_bytes(header[18:20], "little"), "unknown")


def contents(build):
    """(name in the wheel, file on disk) of everything the package holds."""
    files = [(f"attachcheck/{n}", os.path.join(PACKAGE, n)) for n in sorted(os.listdir(PACKAGE))
             if n.endswith(".py")]
    files.append(("attachcheck/LICENSE", os.path.join(SOURCE, "LICENSE")))
    files.append(("attachcheck/bin/attachcheck", os.path.join(build, "bin", "attachcheck")))
    files += [(f"attachcheck/lib/{n}", os.path.join(build, "lib", n)) for n in PRIVATE_LIBRARIES]
    missing = [path for _, path in files if not os.path.exists(path)]
    if missing:
        sys.exit(f"attachcheck wheel: the build {build} lacks {', '.join(missing)}")
    return files


def digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def write_wheel(build, out):
    name = f"attachcheck-{version()}"
    tag = f"py3-none-linux_{machine(os.path.join(build, 'bin', 'attachcheck'))}"
    info = f"{name}.dist-info"
    texts = {f"{info}/METADATA": metadata(), f"{info}/entry_points.txt": entry_points(),
             f"{info}/WHEEL": ("Wheel-Version: 1.0\nGenerator: attachcheck wheel_backend\n"
                               f"Root-Is-Purelib: false\nTag: {tag}\n"),
             f"{info}/LICENSE": open(os.path.join(SOURCE, "LICENSE")).read()}
    wheel = f"{name}-{tag}.whl"
    record = []
    with zipfile.ZipFile(os.path.join(out, wheel), "w", zipfile.ZIP_DEFLATED) as z:
        for arcname, path in contents(build):
            data = open(path, "rb").read()
            entry = zipfile.ZipInfo(arcname, (2020, 1, 1, 0, 0, 0))
            executable = os.stat(path).st_mode & 0o111 and not path.endswith(".py")
            entry.external_attr = (0o100755 if executable else 0o100644) << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(entry, data)
            record.append(f"{arcname},{digest(data)},{len(data)}")
        for arcname, text in texts.items():
            data = text.encode()
            z.writestr(zipfile.ZipInfo(arcname, (2020, 1, 1, 0, 0, 0)), data)
            record.append(f"{arcname},{digest(data)},{len(data)}")
        record.append(f"{info}/RECORD,,")
        z.writestr(zipfile.ZipInfo(f"{info}/RECORD", (2020, 1, 1, 0, 0, 0)),
                   "\n".join(record) + "\n")
    return wheel


def build_from_source(folder):
    """The CLI and the shim, built for the wheel when no build is given."""
    subprocess.run(["cmake", "-S", SOURCE, "-B", folder, "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                    "-DATTACHCHECK_EXAMPLES=OFF"], check=True)
    subprocess.run(["cmake", "--build", folder, "--target", "attachcheck", "attachcheck_shim",
                    "-j", str(os.cpu_count() or 1)], check=True)


# ---- PEP 517 ----

def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    build = (config_settings or {}).get("build-dir")
    if build:
        return write_wheel(os.path.abspath(build), wheel_directory)
    with tempfile.TemporaryDirectory() as folder:
        build_from_source(folder)
        return write_wheel(folder, wheel_directory)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: wheel_backend.py BUILD OUT_DIR")
    print(os.path.join(sys.argv[2], build_wheel(sys.argv[2], {"build-dir": sys.argv[1]})))
