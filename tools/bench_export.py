"""Time a full design-review export (PNG 2x + SVG + CSV per standard figure, one HTML report).

Usage: .venv/bin/python -m tools.bench_export [--results FILE ...] [--repeat 1]
Default input: the bundled data/h200_sweep.parquet (the synthetic table when it is not there yet).
Prints the wall time of export_all in seconds (the README number); target < 30 s on a 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", action="append", help="results file(s); default: the bundled dataset")
    parser.add_argument("--repeat", type=int, default=1, help="exports to time (the best is reported)")
    args = parser.parse_args()
    from blockscope.profiling.views import dashboard_data as dd
    from blockscope.profiling.views.export import export_all

    if args.results:
        source, label = args.results, ", ".join(args.results)
    elif dd.BUNDLED_PATH.exists():
        source, label = dd.BUNDLED_PATH, str(dd.BUNDLED_PATH.relative_to(ROOT))
    else:
        from blockscope.demo import synthetic_results

        source, label = synthetic_results(), "synthetic table (data/h200_sweep.parquet not bundled yet)"
    times = []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="bench-export-") as out:
            start = time.perf_counter()
            written = export_all(source, out)
            times.append(time.perf_counter() - start)
            size = sum(p.stat().st_size for p in written)
    print(f"input: {label}; {os.cpu_count()} CPU cores")
    print(f"{len(written)} files, {size / 1e6:.1f} MB")
    print(f"full export: {min(times):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
