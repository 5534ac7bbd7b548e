"""Tune `auto` on a GPU (run on the H200): writes every measurement and the tuning table under --out.

python3 scripts/tune_h200.py --out $OUT [--dtypes fp16,fp32] [--min-n 128] [--max-n 1048576]
Shapes: N = 128..max-n in powers of two, at R=4096 (N <= 262144) and at ~512 MB of input per shape.
Timing: triton.testing.do_bench median (L2 flushed before each rep, launches back to back).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
import triton.testing  # noqa: E402

from kernels import dtype_from_name  # noqa: E402
from profiling import autotune  # noqa: E402


def flushed_median_us(fn) -> float:
    return 1000 * triton.testing.do_bench(fn, warmup=5, rep=25, return_mode="median")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--dtypes", default="fp16,fp32")
    parser.add_argument("--min-n", type=int, default=128)
    parser.add_argument("--max-n", type=int, default=2**20)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.time()
    all_records = []
    with open(out / "tune_log.jsonl", "w") as log:
        for dtype_name in args.dtypes.split(","):
            dtype = dtype_from_name(dtype_name)
            n_cols = args.min_n
            while n_cols <= args.max_n:
                row_counts = ([4096] if n_cols <= 262144 else []) + [autotune.large_set_rows(n_cols, dtype)]
                for n_rows in row_counts:
                    records, _ = autotune.tune([(n_rows, n_cols)], [dtype_name], flushed_median_us)
                    for record in records:
                        log.write(json.dumps(record) + "\n")
                    log.flush()
                    all_records += records
                    best = autotune.best_entries(records)
                    label = f"{best[0]['variant']} {best[0]['tunables']} {best[0]['median_us']:.1f}us" if best else "-"
                    print(f"{time.time() - start:7.1f}s {dtype_name} R={n_rows} N={n_cols} "
                          f"torch={records[0]['median_us']:.1f}us best={label}", flush=True)
                    torch.cuda.empty_cache()
                n_cols *= 2
    command = "python3 scripts/tune_h200.py " + " ".join(sys.argv[1:])
    table = autotune.make_table(all_records, time.time() - start, command)
    print("wrote", autotune.save_table(table, out), "entries", len(table["entries"]), "s", table["tuning_seconds"])


if __name__ == "__main__":
    main()
