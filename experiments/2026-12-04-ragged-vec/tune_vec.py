"""Design-1 configurations of ragged_softmax (forward and backward) on bench_fused's uniform and long-tail lengths,
cuda_graph medians against a float64 reference (CUDA).

    python3 experiments/2026-12-04-ragged-vec/tune_vec.py --out FILE.csv

A configuration is a dict of ragged tunables; `bucket` (not a tunable) sets ragged.BUCKET_SEGMENTS, the segments
per program of the bucket kernel, for that configuration only. % of ideal: values read once + written once
(forward) or y, dy read once + dx written once (backward) at the copy bandwidth measured in the run.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FORWARD = [
    {},
    {"big_maxnreg": 48},
    {"tile": 1024},
    {"tile": 1024, "num_warps": 4},
    {"tile": 512},
    {"tile": 1024, "big_maxnreg": 48},
    {"big_warps": 4, "big_maxnreg": 128},
    {"bucket": 128},
    {"bucket": 256},
]
BACKWARD = [
    {},
    {"big_maxnreg": 80},
    {"big_maxnreg": 80, "maxnreg": 80},
    {"big_maxnreg": 96, "maxnreg": 80},
    {"big_maxnreg": 80, "maxnreg": 64},
    {"maxnreg": 96},
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    import torch

    from blockscope.kernels import ragged
    from blockscope.profiling.measure import timing
    from tools.bench_fused import _lengths

    copy_gbps = timing.measure_copy_gbps(bytes=1 << 30, reps=20)
    print(f"{torch.cuda.get_device_name()}, copy {copy_gbps:.0f} GB/s", flush=True)
    default_bucket, rows = ragged.BUCKET_SEGMENTS, []
    for kind in ("uniform", "long_tail"):
        lengths = _lengths(kind)
        offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)]).cuda()
        seg = torch.repeat_interleave(torch.arange(lengths.numel()), lengths).cuda()
        for dtype in (torch.float16, torch.float32):
            gen = torch.Generator(device="cuda").manual_seed(37)
            x = torch.randn(int(lengths.sum()), device="cuda", generator=gen).to(dtype)
            dy = torch.randn(x.shape, device="cuda", generator=gen).to(dtype)
            x64 = x.double()
            m = torch.full((lengths.numel(),), -torch.inf, dtype=torch.float64, device="cuda")
            m = m.scatter_reduce(0, seg, x64, "amax")
            e = (x64 - m[seg]).exp()
            y_want = e / torch.zeros_like(m).index_add_(0, seg, e)[seg]
            y = ragged.ragged_softmax_forward(x, offsets)
            y64, dy64 = y.double(), dy.double()
            dx_want = y64 * (dy64 - torch.zeros_like(m).index_add_(0, seg, y64 * dy64)[seg])
            nbytes = x.numel() * x.element_size()
            for direction, configs in (("forward", FORWARD), ("backward", BACKWARD)):
                for config in configs:
                    tunables = {k: v for k, v in config.items() if k != "bucket"}
                    ragged.BUCKET_SEGMENTS = config.get("bucket", default_bucket)
                    if direction == "forward":
                        fn = lambda t=tunables, a=x, o=offsets: ragged.ragged_softmax_forward(a, o, check=False, **t)  # noqa: E731
                        want, ideal_us = y_want, 2 * nbytes / (copy_gbps * 1e3)
                    else:
                        fn = lambda t=tunables, a=y, b=dy, o=offsets: ragged.ragged_softmax_backward(a, b, o, **t)  # noqa: E731
                        want, ideal_us = dx_want, 3 * nbytes / (copy_gbps * 1e3)
                    err = float((fn().double() - want).abs().max())
                    stats = timing.benchmark(fn, "cuda_graph", warmup=5, warmup_ms=10.0, rel_ci=0.02, min_reps=10,
                                             max_reps=200, budget_ms=40.0)  # fmt: skip
                    row = {"case": kind, "dtype": str(dtype).removeprefix("torch."), "direction": direction,
                           "config": str(config or "default"), "median_us": round(stats.median_us, 2),
                           "p20_us": round(stats.p20_us, 2), "p80_us": round(stats.p80_us, 2), "reps": stats.reps,
                           "ideal_us": round(ideal_us, 2), "pct_of_ideal": round(100 * ideal_us / stats.median_us, 1),
                           "max_abs_err": err}  # fmt: skip
                    rows.append(row)
                    print(row, flush=True)
            ragged.BUCKET_SEGMENTS = default_bucket
            del x, dy, x64, e, y_want, y, y64, dy64, dx_want
            torch.cuda.empty_cache()
    with open(args.out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return 0


if __name__ == "__main__":
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
