"""Tune `auto` on a GPU (run on the H200): writes every measurement and the tuning table under --out.

python3 scripts/tune_h200.py --out $OUT [--dtypes fp16,fp32] [--min-n 128] [--max-n 1048576]
Shapes: N = 128..max-n in powers of two, at R=4096 (N <= 262144) and at ~512 MB of input per shape.
Timing: triton.testing.do_bench median (L2 flushed before each rep, launches back to back).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import triton.testing  # noqa: E402

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
    n_values = []
    n_cols = args.min_n
    while n_cols <= args.max_n:
        n_values.append(n_cols)
        n_cols *= 2
    with open(out / "tune_log.jsonl", "w") as log:
        def on_shape(records: list[dict]) -> None:
            log.writelines(json.dumps(record) + "\n" for record in records)
            log.flush()
            print(autotune.describe(records), flush=True)

        records, seconds = autotune.tune(args.dtypes.split(","), n_values, flushed_median_us, on_shape=on_shape)
    command = "python3 scripts/tune_h200.py " + " ".join(sys.argv[1:])
    table = autotune.make_table(records, seconds, command)
    print("wrote", autotune.save_table(table, out), "entries", len(table["entries"]), "s", table["tuning_seconds"])


if __name__ == "__main__":
    main()
