#!/bin/sh
# preload_ls.sh PROGRAM ARGS... - runs ls, then the program: under plain
# LD_PRELOAD every process of a shell pipeline loads the shim and shares one
# ATTACHCHECK_JSON name, and the report must still hold the program's findings.
ls / >/dev/null || exit 99
"$@"
