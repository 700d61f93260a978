"""elfmachine.py - which processor an ELF file is built for, read from the e_machine field of
its header. The tests run x86-64 builds and aarch64 ones (under qemu-user on an x86-64 host),
and some answers differ between the two: what a build can guard with, how its faults read."""

NAMES = {62: "x86_64", 183: "aarch64"}  # EM_X86_64, EM_AARCH64


def machine(path):
    """platform.machine()'s name for the processor path is built for; None when it is not an
    ELF file, cannot be read, or is built for another processor."""
    try:
        with open(path, "rb") as f:
            header = f.read(20)
    except OSError:
        return None
    if len(header) < 20 or header[:4] != b"\x7fELF":
        return None
    return NAMES.get(int.from_bytes(header[18:20], "little"))
