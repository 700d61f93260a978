"""The `attachcheck` command of the Python package: it becomes the bundled tool (exec), so the
exit status, signals and output are the tool's own, exactly as when it is run directly."""
import os
import sys

from attachcheck import CLI


def main():
    os.execv(CLI, ["attachcheck"] + sys.argv[1:])


if __name__ == "__main__":
    main()
