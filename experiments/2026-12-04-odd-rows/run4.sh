#!/bin/bash
# Device call (H200): run 3's off-grid bench again with the old picks from the table before the retune
# (before-nvidia-h200.json, git show 0040f13:kernels/tuned/nvidia-h200.json) and the new from the committed table.
set -u
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD
CACHE=$(mktemp -d)
mkdir -p $CACHE/autotune && cp kernels/tuned/nvidia-h200.json $CACHE/autotune/nvidia-h200.json
ODD_ROWS_MORE=1 BLOCKSCOPE_CACHE_DIR=$CACHE python3 experiments/2026-12-04-odd-rows/bench_offgrid.py \
    --out $OUT/offgrid4.csv --old-table experiments/2026-12-04-odd-rows/before-nvidia-h200.json > $OUT/offgrid4.log 2>&1
python3 - <<'PY'
import csv, os
rows = list(csv.DictReader(open(os.environ["OUT"] + "/offgrid4.csv")))
by = {}
for r in rows:
    by.setdefault((r["dtype"], r["n_rows"], r["n_cols"], r["method"]), {})[r["config"]] = r
for key, c in by.items():
    print(*key, "old", c["old_pick"]["variant"], c["old_pick"]["tunables"], c["old_pick"]["median_us"], "new",
          c["new_pick"]["variant"], c["new_pick"]["tunables"], c["new_pick"]["median_us"],
          "x%.2f" % (float(c["old_pick"]["median_us"]) / float(c["new_pick"]["median_us"])),
          "copy%", c["old_pick"]["pct_of_copy"], "->", c["new_pick"]["pct_of_copy"], "torch", c["torch"]["median_us"])
PY
