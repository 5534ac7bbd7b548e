"""`export`: every standard figure as PNG (2x) / SVG, its data as CSV, and one offline HTML report."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

from blockscope import paths
from blockscope.profiling.cli import CLIError, str_list
from blockscope.profiling.results import TIMING_METHODS

DEFAULT_FORMATS = "png,svg,html,csv"


def register(subparsers: argparse._SubParsersAction) -> None:
    export = subparsers.add_parser(
        "export",
        help="write the standard figures (PNG/SVG), their data (CSV) and an HTML report",
        description="Draw the dashboard's standard figures from one or more results files (stacked with a "
        "`source` column to compare them) and write <name>.png (2x), <name>.svg, <name>.csv and one "
        "self-contained report.html into --out. PNG/SVG need Debian Chromium "
        "(apt-get install chromium); without it HTML and CSV are still written.",
    )
    export.add_argument(
        "--results",
        action="append",
        metavar="FILE",
        help="results .parquet or .csv; repeat to stack several files (default: the bundled H200 dataset)",
    )
    export.add_argument("--out", required=True, metavar="DIR", help="output directory (created if missing)")
    export.add_argument(
        "--format",
        type=str_list,
        default=str_list(DEFAULT_FORMATS),
        metavar="LIST",
        help=f"comma list of png,svg,html,csv (default {DEFAULT_FORMATS})",
    )
    export.add_argument(
        "--method",
        choices=TIMING_METHODS,
        metavar="METHOD",
        help=f"timing method of the figures: {', '.join(TIMING_METHODS)} (default: the first the results have)",
    )
    export.set_defaults(handler=run_export_command)


def _progress() -> tuple[Callable[[int, int, str], None], Callable[[], None]]:
    """(callback(done, total, name), close): a tqdm bar on stderr (drawn from the first file on, so an early
    error stays one line), or plain `[done/total] name` lines without tqdm."""
    try:
        from tqdm import tqdm
    except ImportError:

        def line(done: int, total: int, name: str) -> None:
            sys.stderr.write(f"[{done}/{total}] {name}\n")

        return line, lambda: None
    bars: list = []

    def update(done: int, total: int, name: str) -> None:
        if not bars:
            bars.append(tqdm(total=total, unit="file", file=sys.stderr, desc="export", dynamic_ncols=True))
        bar = bars[0]
        bar.total = total
        bar.set_postfix_str(name, refresh=False)
        bar.update(done - bar.n)

    return update, lambda: bars[0].close() if bars else None


def run_export_command(args: argparse.Namespace) -> int:
    from blockscope.profiling.views.export import ExportError, export_all

    callback, close = _progress()
    start = time.perf_counter()
    try:
        results = args.results or [str(paths.BUNDLED_SWEEP)]
        written = export_all(results, args.out, formats=args.format, method=args.method, progress=callback)
    except ExportError as error:
        raise CLIError(" ".join(str(error).split())) from None
    finally:
        close()
    print(f"wrote {len(written)} files to {args.out} in {time.perf_counter() - start:.1f} s")
    return 0
