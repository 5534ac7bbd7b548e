"""What exactness costs: the teaching-kernel probe with tl.exp (fast) vs all math in float64 (exact end), timed
side by side on a GPU with the ULP error of each, beside torch.softmax.

PYTHONPATH=. python3 experiments/2026-12-01-exact-softmax-cost/exact_softmax_cost.py --out FILE.csv

Per dtype and N (R=4096): GPU time by CUDA-graph replay (profiling.timing, median us) of probe_exp, probe_fp64
and torch.softmax, and the max / mean ULP of each on the 'normal' and 'scale30' inputs (R=64,
profiling.numerics). Prints a markdown table.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
import torch

from blockscope.profiling.inspect import numerics as nm
from blockscope.profiling.measure import timing

N_VALUES = (1024, 4096, 16384, 65536)
NAMES = ("probe_exp", "probe_fp64", "torch")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--rows", type=int, default=4096)
    args = parser.parse_args()
    rows = []
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    print(
        "| dtype | N | name | us (cuda_graph) | vs probe_exp | max ULP normal | mean ULP normal | max ULP scale30 | "
        "mean ULP scale30 |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for dtype in ("fp32", "fp16"):
        for n_cols in N_VALUES:
            x = torch.randn(args.rows, n_cols, device="cuda", dtype=nm.DTYPES[dtype])
            base_us = None
            for name in NAMES:
                fn = nm.softmax_callable(name)
                us = timing.benchmark(lambda fn=fn, x=x: fn(x), "cuda_graph").median_us
                base_us = base_us or us
                record = {
                    "dtype": dtype,
                    "n_cols": n_cols,
                    "n_rows": args.rows,
                    "name": name,
                    "us": us,
                    "vs_probe_exp": us / base_us,
                }
                for input_name in ("normal", "scale30"):
                    summary, _ = nm.measure(fn, dtype, 64, n_cols, input_name, device="cuda")
                    record[f"ulp_max_{input_name}"] = summary.ulp_max
                    record[f"ulp_mean_{input_name}"] = summary.ulp_mean
                rows.append(record)
                print(
                    f"| {dtype} | {n_cols} | {name} | {us:.1f} | {record['vs_probe_exp']:.2f} | "
                    f"{record['ulp_max_normal']:g} | {record['ulp_mean_normal']:.3f} | "
                    f"{record['ulp_max_scale30']:g} | {record['ulp_mean_scale30']:.3f} |",
                    flush=True,
                )
    pd.DataFrame(rows).to_csv(args.out, index=False)
    print(f"wrote {len(rows)} rows to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
