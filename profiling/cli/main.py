"""The command line: `blockscope <command>` (installed) or `python -m profiling <command>` (in a checkout).

Commands: occupancy, inspect, seed, sweep, drift, export, bench, tune, numerics, native, ncu-import, merge, catalog,
warm, package, coldstart.

Each command lives in a profiling.cli module exposing `register(subparsers)`; a handler returns an exit
status or raises CLIError (printed as one line, exit 2).
"""

from __future__ import annotations

import importlib
import os
import sys

from blockscope.profiling.cli import CLIError, Parser

COMMAND_MODULES = (
    "blockscope.profiling.cli.compile",
    "blockscope.profiling.cli.measure",
    "blockscope.profiling.cli.bench",
    "blockscope.profiling.cli.export",
    "blockscope.profiling.cli.numerics",
    "blockscope.profiling.cli.native",
    "blockscope.profiling.cli.ncu",
    "blockscope.profiling.cli.catalog",
    "blockscope.profiling.cli.warm",
    "blockscope.profiling.cli.package",
    "blockscope.profiling.cli.coldstart",
)
BROKEN_PIPE_STATUS = 141  # 128 + SIGPIPE, what a shell reports for a writer whose reader went away


def main(argv: list[str] | None = None, prog: str = "blockscope") -> int:
    """Run one command; its exit status. Output cut short by the reader (`| head`) ends quietly with 141."""
    try:
        try:
            status = _dispatch(argv, prog)
        except SystemExit:  # --help and argument errors: their output must not fail later, at exit
            sys.stdout.flush()
            raise
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        _silence_stdout()
        return BROKEN_PIPE_STATUS


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot raise BrokenPipeError again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no real stdout (captured in tests): nothing to flush later
        pass


def _dispatch(argv: list[str] | None, prog: str) -> int:
    parser = Parser(prog=prog, description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    if prog == "blockscope":  # handled by blockscope.cli before this parser runs; listed for --help
        subparsers.add_parser(
            "dashboard", help="start the dashboard (Streamlit options follow: blockscope dashboard -h)"
        )
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    args = parser.parse_args(argv)
    args.argv = list(argv) if argv is not None else sys.argv[1:]  # sweep --gpus/--ray hand them to workers
    if not getattr(args, "handler", None):
        parser.error(f"a command is required; allowed: {', '.join(sorted(subparsers.choices))}")
    try:
        return int(args.handler(args) or 0)
    except CLIError as error:
        sys.stderr.write(f"{prog} {args.command}: error: {error}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130
