"""Tiny rows where eager `auto` trails torch.softmax (fp32 100000 x 16: 8.3 against 6.6 us per call, run 2 of
experiments/2026-12-04-launch-records): the table's pick and its neighbours under `cuda_graph` (replay of many
calls on one input: L2-resident, as in an eager loop) and `back_to_back_flushed` (the tuner's method), and the eager
wall per call of torch and auto (2000 back-to-back calls, synchronized once, 5 rounds, median; after the native
module built itself).

    BLOCKSCOPE_CACHE_DIR=$(mktemp -d) python3 experiments/2026-12-04-first-call/eager_tiny.py --out DIR

from the repository root on a CUDA machine; writes DIR/eager_tiny.csv."""

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

SHAPES = [
    (torch.float32, 100000, 16),
    (torch.float32, 100000, 8),
    (torch.float32, 100000, 32),
    (torch.float16, 100000, 16),
    (torch.float16, 4096, 128),
]
CANDIDATES = (
    [("tinyrows", {"num_warps": w, "rows_per_program": r}) for w in (1, 2, 4, 8) for r in (32, 64, 128, 256, 512)]
    + [("warprows", {"num_warps": w, "threads_per_row": t}) for w in (2, 4, 8) for t in (1, 2, 4)]
    + [("multirow", {"num_warps": w, "rows_per_program": r}) for w in (2, 4, 8) for r in (32, 64, 128, 256)]
)


def eager_wall_us(call, calls: int = 2000, rounds: int = 5) -> float:
    for _ in range(50):
        call()
    torch.cuda.synchronize()
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        torch.cuda.synchronize()
        samples.append((time.perf_counter() - start) / calls * 1e6)
    return sorted(samples)[len(samples) // 2]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    x = torch.randn(64, 1024, device="cuda", dtype=torch.float16)
    kernels.softmax(x, variant="auto")
    kernels.softmax(x, variant="auto")
    tic = time.monotonic()
    while native.load() is None and time.monotonic() - tic < 90:
        time.sleep(1.0)
    print(f"native: {'loaded' if native.loaded() else native.load_error()} after {time.monotonic() - tic:.1f} s")
    rows = []
    for dtype, n_rows, n_cols in SHAPES:
        x = torch.randn(n_rows, n_cols, device="cuda", dtype=dtype)
        reference = torch.softmax(x.double(), -1)
        calls = {"torch": functools.partial(torch.softmax, x, -1)}
        calls["auto"] = functools.partial(kernels.softmax, x, variant="auto")
        for variant, tunables in CANDIDATES:
            try:
                kernels.get_variant(variant).plan(n_rows, n_cols, dtype, **tunables)
            except ValueError:
                continue
            calls[f"{variant} {tunables}"] = functools.partial(kernels.softmax, x, variant=variant, **tunables)
        for label, call in calls.items():
            error = float((call().double() - reference).abs().max())
            row = {"dtype": str(dtype).removeprefix("torch."), "n_rows": n_rows, "n_cols": n_cols, "config": label}
            for method in ("cuda_graph", "back_to_back_flushed"):
                stats = timing.benchmark(call, method, rel_ci=0.01, max_reps=2000)
                row[f"{method}_us"] = round(stats.median_us, 3)
            row["eager_wall_us"] = round(eager_wall_us(call), 3) if label in ("torch", "auto") else ""
            row["max_abs_error"] = error
            rows.append(row)
            print(row, flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "eager_tiny.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
