#!/bin/bash
# Device call (H200): the table's odd-N shapes retuned against vecrows (challenge), then the old and new picks on
# odd-N shapes off the grid.
set -u
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD
CACHE=$(mktemp -d)
python3 -m tools.tune_h200 --out $OUT/tune --dtypes fp16,bf16,fp32 --challenge kernels/tuned/nvidia-h200.json \
    --variants vecrows --min-n 129 --max-n 65536 > $OUT/tune.log 2>&1
tail -5 $OUT/tune.log
mkdir -p $CACHE/autotune && cp $OUT/tune/*.json $CACHE/autotune/
BLOCKSCOPE_CACHE_DIR=$CACHE python3 experiments/2026-12-04-odd-rows/bench_offgrid.py --out $OUT/offgrid.csv \
    > $OUT/offgrid.log 2>&1
python3 - <<'PY'
import csv, os
for r in csv.DictReader(open(os.environ["OUT"] + "/offgrid.csv")):
    print(r["dtype"], r["n_rows"], r["n_cols"], r["config"], r["variant"], r["tunables"], r["method"], r["median_us"], r["pct_of_copy"])
PY
