"""`package`: a folder with the tuned table and its compiled kernels, loadable without compiling (docs/deploy.md)."""

from __future__ import annotations

import argparse

from blockscope.profiling.cli import CLIError, positive_int


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "package",
        help="tuned table + compiled kernels + launch records for a GPU arch in one folder (no GPU needed)",
        description="Build a deployable folder for --arch: tuned/<gpu>.json (the shipped table, or --table), "
        "kernels/ (every kernel it launches, compiled offline as `warm` does, with the launch records planned "
        "from that table) and package.json (Triton version, "
        "arch, checksums, each kernel's launch metadata), then load every kernel back to check it. --check DIR "
        "only checks an existing package. In the deployed process: kernels.aot.use_package(DIR).",
    )
    parser.add_argument("--arch", default=None, help="GPU arch to compile for, such as sm_90")
    parser.add_argument("--out", default=None, help="the package folder to write")
    parser.add_argument("--check", default=None, metavar="DIR", help="check an existing package instead")
    parser.add_argument("--table", default=None, help="tuning table to package (default: the shipped one)")
    parser.add_argument("--workers", type=positive_int, default=None, help="compile processes (default: CPU cores)")
    parser.add_argument("--no-backward", action="store_true", help="forward kernels only")
    parser.add_argument(
        "--record",
        action="store_true",
        help="on a GPU of --arch: then call auto once at every shape of the package's table, writing launch "
        "records into the package: a deployed process's first call at those shapes imports no Triton",
    )
    parser.set_defaults(handler=run_package_command)


def run_package_command(args: argparse.Namespace) -> int:
    from blockscope.kernels import aot
    from blockscope.profiling.measure import warm

    if args.check:
        if args.out or args.arch:
            raise CLIError("--check takes only the package folder; allowed: package --check DIR")
        problems = aot.check_package(args.check, load=True)
        for problem in problems:
            print(f"problem: {problem}")
        print(f"{args.check}: {'usable' if not problems else f'{len(problems)} problems'}")
        return 1 if problems else 0
    if not args.arch or not args.out:
        raise CLIError("--arch and --out are required; allowed: package --arch sm_90 --out DIR, or --check DIR")
    if args.record:
        from blockscope.profiling.cli.warm import check_record_gpu

        check_record_gpu(args.arch)
    try:
        report = warm.build_package(
            args.arch, args.out, table_path=args.table, backward=not args.no_backward, workers=args.workers
        )
    except ValueError as error:
        raise CLIError(str(error)) from None
    for label, why in sorted(report.warm.failed.items()):
        print(f"failed {label}: {why}")
    for problem in report.problems:
        print(f"problem: {problem}")
    print(report.warm.summary())
    if report.records is not None:
        from blockscope.profiling.cli.warm import print_records

        print_records(report.records)
    state = "usable" if not report.problems and not report.warm.failed else "incomplete"
    print(f"package {report.folder}: {state}")
    if state == "usable" and args.record:
        from blockscope.profiling.cli.warm import record_and_report

        aot.use_package(report.folder)  # its table and store: the records are made with both
        record_and_report(None)
    return 0 if state == "usable" else 1
