"""Render time of every dashboard page under streamlit's AppTest, as a markdown table.

python -m tools.bench_pages [--data PATH] [--repeat 3]

Data: --data, else the bundled data/h200_sweep.parquet, else the synthetic demo table. 'first' is the
first render of the page in this process (cold st.cache_data, offline compiles from the disk cache);
'warm' is the median of --repeat reruns, what a user sees when changing a widget.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PAGES = (
    ("Overview", "pages/overview.py"),
    ("Masked lanes", "pages/masked_lanes.py"),
    ("Occupancy", "pages/occupancy.py"),
    ("Latency", "pages/latency.py"),
    ("Tradeoffs", "pages/tradeoffs.py"),
    ("Backends", "pages/backends.py"),
    ("Run vs run", "pages/run_vs_run.py"),
    ("Kernel evidence", "pages/kernel_evidence.py"),
    ("Numerics", "pages/numerics.py"),
    ("Run sweep", "pages/run_sweep.py"),
    ("Export", "pages/export.py"),
    ("auto", "pages/auto.py"),
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", help="results file (.parquet/.csv); default: bundled dataset or demo data")
    parser.add_argument("--repeat", type=int, default=3, help="warm reruns per page (median reported)")
    args = parser.parse_args()

    import torch

    if not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")
    from streamlit.testing.v1 import AppTest

    from blockscope.profiling.views.dashboard_data import BUNDLED_PATH

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    started = time.perf_counter()
    at.run()
    startup = time.perf_counter() - started
    if args.data:
        at.sidebar.radio(key="data_source").set_value("Path on this machine").run()
        at.sidebar.text_input(key="typed_path").input(args.data).run()
        label = args.data
    elif BUNDLED_PATH.exists():
        label = f"bundled {BUNDLED_PATH.name}"
    else:
        at.sidebar.radio(key="data_source").set_value("Demo data (synthetic)").run()
        label = "demo data (synthetic)"
    if at.exception or at.sidebar.error:
        print(f"could not load {label}: {[e.value for e in at.sidebar.error] or at.exception}", file=sys.stderr)
        return 1
    rows = []
    for title, path in PAGES:
        if not (ROOT / path).exists():
            continue
        at.switch_page(path)
        started = time.perf_counter()
        at.run()
        first = time.perf_counter() - started
        warm = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            at.run()
            warm.append(time.perf_counter() - started)
        status = "exception" if at.exception else "ok"
        rows.append((title, first, statistics.median(warm), len(at.get("plotly_chart")), status))
    print(f"Page render times (AppTest, {os.cpu_count()} CPUs, data: {label}; app start-up {startup:.2f} s)\n")
    print("| page | first render (s) | warm rerun (s) | charts | status |")
    print("|---|---:|---:|---:|---|")
    for title, first, warm, charts, status in rows:
        print(f"| {title} | {first:.2f} | {warm:.2f} | {charts} | {status} |")
    return 0 if all(r[-1] == "ok" for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
