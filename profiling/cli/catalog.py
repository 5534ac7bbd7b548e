"""`catalog DIR [--query SQL]`: the results files under a folder (DuckDB over the Parquet files)."""

from __future__ import annotations

import argparse
import sys

from blockscope.profiling.cli import CLIError


def register(subparsers: argparse._SubParsersAction) -> None:
    command = subparsers.add_parser(
        "catalog",
        help="list the results files under a folder (run, GPU, versions, dates, rows, methods) with DuckDB",
        description="Read every .parquet under DIR with DuckDB (no copy): results files get their run ids, GPUs, "
        "torch/Triton versions, kernel revisions, first/last measured_at, rows and methods; other Parquet files "
        "are listed as 'not a results file: why'. --query runs SQL over the view `results` (all rows, + filename).",
    )
    command.add_argument("folder", metavar="DIR", help="folder to catalog (recursively)")
    command.add_argument("--query", metavar="SQL", help="SQL over the view `results`, e.g. 'SELECT ... FROM results'")
    command.add_argument("--csv", action="store_true", help="print CSV instead of a table")
    command.set_defaults(handler=run_catalog)


def run_catalog(args: argparse.Namespace) -> int:
    from blockscope.profiling.results.catalog import CatalogError, catalog, query

    try:
        table = query(args.folder, args.query) if args.query is not None else catalog(args.folder)
    except CatalogError as error:
        raise CLIError(str(error)) from None
    if args.csv:
        table.to_csv(sys.stdout, index=False)
    elif table.empty:
        print(f"no Parquet files under {args.folder}" if args.query is None else "(no rows)")
    else:
        print(table.to_string(index=False, na_rep=""))
    return 0
