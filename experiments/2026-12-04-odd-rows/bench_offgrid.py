"""auto's pick from the repository's table against the pick from a retuned table (BLOCKSCOPE_CACHE_DIR=DIR holds it)
and torch.softmax, on odd-N shapes off the tuning grid, all three dtypes (CUDA).

    BLOCKSCOPE_CACHE_DIR=DIR python3 experiments/2026-12-04-odd-rows/bench_offgrid.py --out FILE.csv [--old-table F]

Both picks come from kernels.auto.choose in this process (the environment variable unset, or pointing at a private
folder holding --old-table, then set to DIR) and are timed
here side by side: cuda_graph and back_to_back_flushed medians; % of copy = 2 x R x N x itemsize at the copy
bandwidth measured in the run.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHAPES = [(8192, 2999), (6000, 1999), (3000, 5003), (4096, 6143), (2048, 12007), (1536, 24001), (2048, 32003),
          (1024, 50257), (512, 65521)]  # fmt: skip
if os.environ.get("ODD_ROWS_MORE"):  # run 3: rows just over a power of two (REST tiles) and a narrower one
    SHAPES += [(3000, 4099), (1024, 16411), (8192, 1537)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--old-table", type=Path, help="the table of the old picks (default: the repository's)")
    parser.add_argument("--shapes", default="", help="R:N,... instead of SHAPES")
    parser.add_argument("--dtypes", default="float16,bfloat16,float32")
    args = parser.parse_args()
    import torch

    from blockscope import kernels
    from blockscope.kernels import auto
    from blockscope.profiling.measure import timing

    retuned = os.environ.pop("BLOCKSCOPE_CACHE_DIR")
    old_dir = None
    if args.old_table:
        import shutil
        import tempfile

        old_dir = tempfile.mkdtemp()
        os.makedirs(os.path.join(old_dir, "autotune"))
        shutil.copy(args.old_table, os.path.join(old_dir, "autotune", "nvidia-h200.json"))
    shapes = [tuple(int(v) for v in s.split(":")) for s in args.shapes.split(",") if s] or SHAPES
    copy_gbps = timing.measure_copy_gbps(bytes=1 << 30, reps=20)
    gpu = torch.cuda.get_device_name()
    print(f"{gpu}, copy {copy_gbps:.0f} GB/s", flush=True)
    rows = []
    for dtype in [getattr(torch, name) for name in args.dtypes.split(",")]:
        for n_rows, n_cols in shapes:
            if old_dir:
                os.environ["BLOCKSCOPE_CACHE_DIR"] = old_dir
            else:
                os.environ.pop("BLOCKSCOPE_CACHE_DIR", None)
            old = auto.choose(n_rows, n_cols, dtype, gpu_name=gpu)
            os.environ["BLOCKSCOPE_CACHE_DIR"] = retuned
            new = auto.choose(n_rows, n_cols, dtype, gpu_name=gpu)
            x = (torch.randn(n_rows, n_cols, device="cuda") * 3).to(dtype)
            want = torch.softmax(x.double(), -1)
            configs = {"torch": lambda x=x: torch.softmax(x, -1)}
            for label, (variant, tunables) in (("old_pick", old), ("new_pick", new)):
                if variant == "torch":
                    configs[label] = configs["torch"]
                else:
                    configs[label] = lambda x=x, v=variant, t=tunables: kernels.softmax(x, variant=v, **t)
            ideal_us = 2 * x.numel() * x.element_size() / (copy_gbps * 1e3)
            for label, fn in configs.items():
                err = float((fn().double() - want).abs().max())
                pick = {"old_pick": old, "new_pick": new}.get(label, ("torch", {}))
                for method in ("cuda_graph", "back_to_back_flushed"):
                    stats = timing.benchmark(fn, method, warmup=5, warmup_ms=10.0, rel_ci=0.02, min_reps=10,
                                             max_reps=200, budget_ms=30.0)  # fmt: skip
                    row = {"dtype": str(dtype).removeprefix("torch."), "n_rows": n_rows, "n_cols": n_cols,
                           "config": label, "variant": pick[0], "tunables": str(pick[1]), "method": method,
                           "median_us": round(stats.median_us, 2), "p20_us": round(stats.p20_us, 2),
                           "p80_us": round(stats.p80_us, 2), "reps": stats.reps,
                           "pct_of_copy": round(100 * ideal_us / stats.median_us, 1), "max_abs_err": err}  # fmt: skip
                    rows.append(row)
                    print(row, flush=True)
    with open(args.out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return 0


if __name__ == "__main__":
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
