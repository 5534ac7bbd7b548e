"""`python -m profiling <command>`: occupancy, inspect, seed, sweep, export, bench, numerics.

Each command lives in a cli_* module exposing `register(subparsers)`; a handler returns an exit
status or raises CLIError (printed as one line, exit 2).
"""

from __future__ import annotations

import importlib
import sys

from .cli import CLIError, Parser

COMMAND_MODULES = ("profiling.cli_compile", "profiling.cli_measure", "profiling.cli_bench", "profiling.cli_export",
                   "profiling.cli_numerics")


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="python -m profiling", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.error(f"a command is required; allowed: {', '.join(sorted(subparsers.choices))}")
    try:
        return int(args.handler(args) or 0)
    except CLIError as error:
        sys.stderr.write(f"python -m profiling {args.command}: error: {error}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130


if __name__ == "__main__":
    sys.exit(main())
