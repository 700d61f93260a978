"""attachcheck - a checker for CUDA Unified Memory stream attachment, as a Python package.

The package carries the attachcheck command line tool (bin/attachcheck) and the library it
preloads into the program (lib/libattachcheck.so, with the private copies of libunwind and
libdw it loads). The `attachcheck` command this package installs runs that tool; `python -m
attachcheck` does the same.
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
CLI = os.path.join(HERE, "bin", "attachcheck")
SHIM = os.path.join(HERE, "lib", "libattachcheck.so")
