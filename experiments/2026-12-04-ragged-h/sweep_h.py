"""ragged_softmax design 1 on 2-D values (T, H): the default tunables against the alternatives, per H.

    python3 experiments/2026-12-04-ragged-h/sweep_h.py --out DIR/sweep_h.csv

from the repository root on a CUDA machine. Cases: tools/bench_fused.py's `uniform` lengths (16384 segments,
1..8192 rows) divided by H over (T, H) values, so T x H stays about 67M values, for H in 2, 4, 8, 16, 64 (fp16), and
H = 8 in fp32 and for the `long_tail` lengths // 8. Configurations: the defaults and the design-1 tunables
(fused, big_maxnreg, big_warps, tile) that issue 35's earlier run found faster at H = 8. Timing: cuda_graph
(profiling.measure.timing.benchmark), % of ideal against the copy bandwidth measured in this run; every output
checked against the float64 reference of bench_ragged.py.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "2026-12-04-ragged-redesign"))
sys.path.insert(0, str(HERE.parents[1]))

import bench_ragged  # noqa: E402

CASES = [("uniform", h, "fp16") for h in (2, 4, 8, 16, 64)] + [("uniform", 8, "fp32"), ("long_tail", 8, "fp16")]
CONFIGS = [
    {},
    {"fused": 1},
    {"fused": 1, "big_maxnreg": 80},
    {"fused": 1, "big_maxnreg": 64},
    {"big_maxnreg": 80},
    {"big_maxnreg": 64},
    {"fused": 1, "big_maxnreg": 80, "tile": 4096},
]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    import torch

    from blockscope.kernels import ragged
    from blockscope.profiling.measure import timing

    start = time.monotonic()
    copy_gbps = timing.measure_copy_gbps(bytes=1 << 30, reps=20)
    print(f"{torch.cuda.get_device_name()}, copy {copy_gbps:.0f} GB/s", flush=True)
    rows = []
    dtypes = {"fp16": torch.float16, "fp32": torch.float32}
    for kind, width, dtype_name in CASES:
        lengths_cpu = bench_ragged.lengths_of(kind, width)
        total = int(lengths_cpu.sum())
        lengths = lengths_cpu.to("cuda")
        offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths_cpu.cumsum(0)]).to("cuda")
        gen = torch.Generator(device="cuda").manual_seed(35)
        values = torch.randn((total, width), device="cuda", generator=gen).to(dtypes[dtype_name])
        want = bench_ragged.reference(values, offsets, lengths)
        ideal_us = 2 * values.numel() * values.element_size() / (copy_gbps * 1e3)
        for config in CONFIGS:
            fn = lambda v=values, o=offsets, t=config: ragged.ragged_softmax_forward(v, o, check=False, **t)  # noqa: E731
            label = ",".join(f"{k}={v}" for k, v in config.items()) or "default"
            row = {"case": kind, "H": width, "dtype": dtype_name, "T": total, "config": label, "ideal_us": ideal_us}
            try:
                row["check"] = bench_ragged.compare(fn(), want, bench_ragged.TOLERANCE[dtype_name])
                stats = timing.benchmark(
                    fn, "cuda_graph", warmup=5, warmup_ms=10.0, rel_ci=0.02, min_reps=10, max_reps=200, budget_ms=40.0
                )
                row.update(median_us=stats.median_us, p20_us=stats.p20_us, p80_us=stats.p80_us)
                row["pct_of_ideal"] = 100 * ideal_us / stats.median_us
            except Exception as error:  # noqa: BLE001 - a failing config is a row
                row["error"] = bench_ragged.short(error)
            rows.append(row)
            print(
                f"{kind} H={width} {dtype_name} {label}: {row.get('median_us', float('nan')):.1f} us "
                f"({row.get('pct_of_ideal', float('nan')):.0f}% of ideal) {row.get('check', row.get('error'))}",
                flush=True,
            )
        del values, want
        torch.cuda.empty_cache()
    import csv

    args.out.parent.mkdir(parents=True, exist_ok=True)
    fields = [
        "case",
        "H",
        "dtype",
        "T",
        "config",
        "median_us",
        "p20_us",
        "p80_us",
        "ideal_us",
        "pct_of_ideal",
        "check",
        "error",
    ]
    with open(args.out, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in row.items()})
    print(f"sweep_h: {len(rows)} rows in {time.monotonic() - start:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
