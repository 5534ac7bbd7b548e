"""Eager per-call wall time of `auto` against torch.softmax once the native host path has built itself in the
background (issue 36 item 3: nothing built by hand), in a fresh cache.

    BLOCKSCOPE_CACHE_DIR=$(mktemp -d) python3 experiments/2026-12-04-gpu-final/native_percall.py --out DIR/x.csv

from the repository root on a CUDA machine. The first `auto` call starts the background build; the script waits for
the module (up to --wait-s), then times each shape with profiling.measure.timing.benchmark `per_call_events` (CUDA
events around each call, host launch gaps included: the eager user's cost), torch and auto alternated twice, the
lower median of each kept. `native` says whether auto's repeated call went through the native module.
"""

from __future__ import annotations

import argparse
import csv
import functools
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402

from blockscope import kernels  # noqa: E402
from blockscope.kernels import native  # noqa: E402
from blockscope.profiling.measure import timing  # noqa: E402

SHAPES = [(1, 1024), (8, 4096), (64, 32000), (4096, 128), (4096, 1000), (4096, 4096), (4096, 32768), (100000, 16)]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--wait-s", type=float, default=120.0)
    args = parser.parse_args()
    x = torch.randn(64, 1024, device="cuda", dtype=torch.float16)
    tic = time.monotonic()
    kernels.softmax(x, variant="auto")
    kernels.softmax(x, variant="auto")
    while native.load() is None and time.monotonic() - tic < args.wait_s:
        time.sleep(1.0)
    built_s = time.monotonic() - tic
    print(f"native module: {'loaded' if native.loaded() else native.load_error()} after {built_s:.1f} s", flush=True)
    rows = []
    for dtype in (torch.float16, torch.float32):
        for n_rows, n_cols in SHAPES:
            x = torch.randn(n_rows, n_cols, device="cuda", dtype=dtype)
            calls = {
                "torch": functools.partial(torch.softmax, x, -1),
                "auto": functools.partial(kernels.softmax, x, variant="auto"),
            }
            medians: dict[str, list[float]] = {"torch": [], "auto": []}
            for _ in range(2):
                for name, call in calls.items():
                    stats = timing.benchmark(call, "per_call_events", warmup=20, rel_ci=0.02, max_reps=500)
                    medians[name].append(stats.median_us)
            torch_us, auto_us = min(medians["torch"]), min(medians["auto"])
            row = {
                "dtype": str(dtype).removeprefix("torch."),
                "n_rows": n_rows,
                "n_cols": n_cols,
                "torch_us": round(torch_us, 2),
                "auto_us": round(auto_us, 2),
                "auto_over_torch": round(auto_us / torch_us, 3),
                "native": native.loaded() is not None,
            }
            rows.append(row)
            print(row, flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", newline="") as f:
        writer = csv.DictWriter(f, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    worse = [r for r in rows if r["auto_over_torch"] > 1.0]
    print(f"native after {built_s:.1f} s; auto slower than torch at {len(worse)} of {len(rows)} shapes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
