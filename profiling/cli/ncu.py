"""`ncu-import`: read Nsight Compute output (CSV or .ncu-rep) into a table matched to Blockscope configs."""

from __future__ import annotations

import argparse
import sys

from blockscope.profiling.cli import CLIError, check_writable_file


def register(subparsers: argparse._SubParsersAction) -> None:
    command = subparsers.add_parser(
        "ncu-import",
        help="import Nsight Compute CSV (details or --page raw) or .ncu-rep; match kernels to configs",
        description="Read `ncu --csv` output (the details page or --page raw; ==PROF== lines are skipped) or a "
        ".ncu-rep report (needs ncu on PATH) into one row per profiled launch: achieved and theoretical "
        "occupancy (%), DRAM throughput (% of peak), registers, shared memory (bytes), block limits, waves, "
        "duration (ns). Kernels are matched to variants by name and, with --configs, to configs by grid and block.",
    )
    command.add_argument("file", metavar="FILE", help="ncu --csv output or a .ncu-rep report")
    command.add_argument("--out", metavar="RESULTS", required=True, help="write the table to a .parquet or .csv")
    command.add_argument(
        "--configs", metavar="RESULTS", help="a Blockscope results file whose configs the launches are matched to"
    )
    command.set_defaults(handler=run_ncu_import)


def run_ncu_import(args: argparse.Namespace) -> int:
    from blockscope.profiling.inspect.ncu import import_ncu
    from blockscope.profiling.results import ResultsError, load_results
    from blockscope.profiling.results.ncu import NcuError, save_ncu

    if not args.out.lower().endswith((".parquet", ".csv")):
        raise CLIError(f"--out {args.out}: allowed: a .parquet or .csv path")
    check_writable_file(args.out)
    try:
        configs = load_results(args.configs) if args.configs else None
        table = import_ncu(args.file, configs)
        save_ncu(table, args.out)
    except (NcuError, ResultsError, OSError) as error:
        raise CLIError(str(error).splitlines()[0]) from None
    ours = int((table["variant"] != "").sum())
    line = f"wrote {args.out}: {len(table)} launches, {ours} of Blockscope's kernels"
    if configs is not None:
        line += f", {int((table['match'] == 'matched').sum())} matched to one config"
    sys.stdout.write(line + "\n")
    return 0
