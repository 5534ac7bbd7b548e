"""Eager wall per call of torch.softmax and `auto` at tiny shapes, alternated: run 4 had `auto` 15 % slower at fp32
100000 x 8 (one sample) and faster at the other tiny shapes. Here each shape is timed torch, auto, torch, auto,
torch, auto (each: 2000 back-to-back calls synchronized once, median of 5 rounds), after the native module built
itself in the background, with whether that shape's repeated calls run natively.

    BLOCKSCOPE_CACHE_DIR=$(mktemp -d) python3 experiments/2026-12-04-first-call/eager_recheck.py --out DIR

from the repository root on a CUDA machine; writes DIR/eager_recheck.csv."""

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
from blockscope.kernels import auto, native  # noqa: E402

SHAPES = [
    (torch.float32, 100000, 8),
    (torch.float32, 100000, 16),
    (torch.float16, 100000, 8),
    (torch.float16, 4096, 128),
    (torch.float32, 4096, 1000),
    (torch.float16, 1, 1024),
]


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
        calls = {
            "torch": functools.partial(torch.softmax, x, -1),
            "auto": functools.partial(kernels.softmax, x, variant="auto"),
        }
        samples: dict[str, list[float]] = {"torch": [], "auto": []}
        for _ in range(3):
            for name, call in calls.items():
                samples[name].append(eager_wall_us(call))
        seen = auto._FAST.get((x.shape, x.dtype, x.device))
        row = {
            "dtype": str(dtype).removeprefix("torch."),
            "n_rows": n_rows,
            "n_cols": n_cols,
            "torch_us": " ".join(f"{v:.2f}" for v in samples["torch"]),
            "auto_us": " ".join(f"{v:.2f}" for v in samples["auto"]),
            "auto_over_torch_median": round(sorted(samples["auto"])[1] / sorted(samples["torch"])[1], 3),
            "variant": getattr(seen, "variant", ""),
            "native": bool(getattr(seen, "native", False)),
            "routed_to_torch_check": getattr(seen, "eager_key", None) is not None,
        }
        rows.append(row)
        print(row, flush=True)
    print("native failures:", auto.NATIVE_FAILURES)
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "eager_recheck.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
