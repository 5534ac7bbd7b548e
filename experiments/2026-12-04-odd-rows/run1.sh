#!/bin/bash
# Device call (H200): the vector-rows probe at odd N against auto / teaching / torch.
set -u
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD
python3 experiments/2026-12-04-odd-rows/probe_vec_rows.py --out $OUT/probe_vec_rows.csv > $OUT/probe_vec_rows.log 2>&1
python3 - <<'PY'
import csv, os
rows = list(csv.DictReader(open(os.environ["OUT"] + "/probe_vec_rows.csv")))
for r in rows:
    if r["method"] == "cuda_graph":
        print(r["dtype"], r["n_rows"], r["n_cols"], r["config"], r["median_us"], r["pct_of_copy"], "%.1e" % float(r["max_abs_err"]))
PY
tail -3 $OUT/probe_vec_rows.log
