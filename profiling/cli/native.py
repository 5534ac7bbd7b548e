"""`native`: build or inspect the native replay module that cuts `auto`'s host path (kernels/native.py)."""

from __future__ import annotations

import argparse

from blockscope.profiling.cli import CLIError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "native",
        help="build / show the native replay module (auto's host path in one C++ call)",
        description="Show whether the native replay module is built for this source, torch and Python (and where), "
        "or build it (--build): one C++ file compiled against torch's headers, about 15 s; no CUDA toolkit needed. "
        "`auto` uses it once built; BLOCKSCOPE_NATIVE=0 turns it off.",
    )
    parser.add_argument("--build", action="store_true", help="compile it unless this build exists")
    parser.add_argument("--force", action="store_true", help="with --build: compile even if the build exists")
    parser.set_defaults(handler=run_native_command)


def run_native_command(args: argparse.Namespace) -> int:
    from blockscope.kernels import native

    if args.force and not args.build:
        raise CLIError("--force needs --build; allowed: python -m profiling native --build --force")
    print(f"source: {native.SOURCE}")
    print(f"build:  {native.module_path()} (tag {native.build_tag()})")
    if args.build:
        try:
            result = native.build(force=args.force)
        except RuntimeError as error:
            raise CLIError(str(error)) from None
        print("compiled: already built" if result.cached else f"compiled in {result.seconds:.1f} s")
    module = native.load()
    if module is None:
        print(f"status: not in use ({native.load_error()})")
        return 0 if not args.build else 1
    print("status: built and loaded; `auto` replays repeated inputs through it")
    return 0
