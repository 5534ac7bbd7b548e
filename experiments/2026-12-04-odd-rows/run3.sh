#!/bin/bash
# Device call (H200): run 2's off-grid bench again after tiles() took REST lanes only up to BLOCK / 16 over (run 2's
# table, retuned-nvidia-h200.json, in a private cache), three more shapes; vecrows' and ragged's GPU tests.
set -u
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD
CACHE=$(mktemp -d)
mkdir -p $CACHE/autotune && cp experiments/2026-12-04-odd-rows/retuned-nvidia-h200.json $CACHE/autotune/nvidia-h200.json
ODD_ROWS_MORE=1 BLOCKSCOPE_CACHE_DIR=$CACHE python3 experiments/2026-12-04-odd-rows/bench_offgrid.py \
    --out $OUT/offgrid3.csv > $OUT/offgrid3.log 2>&1
python3 - <<'PY'
import csv, os
rows = list(csv.DictReader(open(os.environ["OUT"] + "/offgrid3.csv")))
by = {}
for r in rows:
    by.setdefault((r["dtype"], r["n_rows"], r["n_cols"], r["method"]), {})[r["config"]] = r
for key, c in by.items():
    print(*key, "old", c["old_pick"]["variant"], c["old_pick"]["median_us"], "new", c["new_pick"]["variant"],
          c["new_pick"]["tunables"], c["new_pick"]["median_us"], "x%.2f" % (float(c["old_pick"]["median_us"]) / float(c["new_pick"]["median_us"])),
          "copy%", c["new_pick"]["pct_of_copy"], "torch", c["torch"]["median_us"])
PY
python3 -m pytest -q -p no:cacheprovider tests/test_vecrows.py 2>&1 | tail -2
python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_ragged.py tests/test_kernels_gpu.py 2>&1 | tail -2
# ragged_softmax with this session's defaults (vectors, bucket 128) against design 0 and nested tensors (issue 35)
python3 experiments/2026-12-04-ragged-redesign/bench_ragged.py --out $OUT/ragged_final.csv --cases uniform,long_tail \
    > $OUT/ragged_final.log 2>&1
grep -E "^\| (uniform|long_tail)" $OUT/ragged_final.log | grep -E "new|nested|old" | cut -c1-160
