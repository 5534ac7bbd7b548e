"""`python -m profiling <command>` in a source checkout: the same commands as the installed `blockscope <command>`."""

import sys

from blockscope.profiling.cli.main import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m profiling"))
