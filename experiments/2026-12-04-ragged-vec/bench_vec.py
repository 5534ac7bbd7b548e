"""ragged_softmax with whole-vector loads of 1-D values (issue 35): the forward against the element loads, the
backward's configurations, on bench_fused's lengths (CUDA).

    python3 experiments/2026-12-04-ragged-vec/bench_vec.py --out DIR [--budget-s S]

Forward: experiments/2026-12-04-ragged-redesign/bench_ragged.py's cases and checks (float64 reference, % of ideal
at the copy bandwidth measured in the run) with this experiment's design-1 configurations (`FORWARD`), written to
DIR/forward.csv. Backward: `ragged_softmax_backward(y, dy, offsets, **config)` for each of `BACKWARD` against a
float64 reference, cuda_graph medians, ideal = y and dy read once + dx written once; DIR/backward.csv.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FORWARD = [  # "new" is the default (vec=1); these are timed as cuda_graph rows
    {"vec": 0},
    {"pack": 1},
    {"fused": 1},
    {"big_maxnreg": 48},
    {"big_maxnreg": 80},
    {"big_maxnreg": 0},
    {"maxnreg": 0},
    {"tile": 4096},
    {"max_lanes": 16384, "big_warps": 16, "big_maxnreg": 64},
    {"max_lanes": 4096},
]
BACKWARD = [{}, {"vec": 0}, {"fused": 1}, {"big_maxnreg": 64}, {"big_maxnreg": 80}, {"maxnreg": 80}, {"tile": 4096}]


def load_bench_ragged():
    path = ROOT / "experiments/2026-12-04-ragged-redesign/bench_ragged.py"
    spec = importlib.util.spec_from_file_location("bench_ragged", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def backward(out: Path, budget_s: float) -> None:
    import torch

    from blockscope.kernels import ragged
    from blockscope.profiling.measure import timing
    from tools.bench_fused import _lengths

    copy_gbps = timing.measure_copy_gbps(bytes=1 << 30, reps=20)
    start, rows = time.monotonic(), []
    for kind in ("uniform", "long_tail"):
        lengths = _lengths(kind)
        offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)]).cuda()
        seg = torch.repeat_interleave(torch.arange(lengths.numel()), lengths).cuda()
        for dtype in (torch.float16, torch.float32):
            gen = torch.Generator(device="cuda").manual_seed(36)
            values = torch.randn(int(lengths.sum()), device="cuda", generator=gen).to(dtype)
            y = ragged.ragged_softmax_forward(values, offsets)
            dy = torch.randn(values.shape, device="cuda", generator=gen).to(dtype)
            y64, dy64 = y.double(), dy.double()
            dots = torch.zeros(lengths.numel(), dtype=torch.float64, device="cuda").index_add_(0, seg, y64 * dy64)
            want = y64 * (dy64 - dots[seg])
            ideal_us = 3 * values.numel() * values.element_size() / (copy_gbps * 1e3)
            for config in BACKWARD:
                if time.monotonic() - start > budget_s:
                    break
                fn = lambda c=config, a=y, b=dy, o=offsets: ragged.ragged_softmax_backward(a, b, o, **c)  # noqa: E731
                err = float((fn().double() - want).abs().max())
                stats = timing.benchmark(fn, "cuda_graph", warmup=5, warmup_ms=10.0, rel_ci=0.02, min_reps=10,
                                         max_reps=200, budget_ms=40.0)  # fmt: skip
                row = {"case": kind, "dtype": str(dtype).removeprefix("torch."), "config": str(config or "default"),
                       "median_us": round(stats.median_us, 2), "p20_us": round(stats.p20_us, 2),
                       "p80_us": round(stats.p80_us, 2), "reps": stats.reps, "ideal_us": round(ideal_us, 2),
                       "pct_of_ideal": round(100 * ideal_us / stats.median_us, 1), "max_abs_err": err}  # fmt: skip
                rows.append(row)
                print("backward", row, flush=True)
            del values, y, dy, y64, dy64, want
            torch.cuda.empty_cache()
    with open(out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="folder for forward.csv and backward.csv")
    parser.add_argument("--budget-s", type=float, default=120.0, help="forward: stop starting new cases after this")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    bench = load_bench_ragged()
    bench.TUNE = FORWARD
    code = bench.main(["--out", str(args.out / "forward.csv"), "--tune", "--budget-s", str(args.budget_s)])
    backward(args.out / "backward.csv", 60.0)
    return code


if __name__ == "__main__":
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
