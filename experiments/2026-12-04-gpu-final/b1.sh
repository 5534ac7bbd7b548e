#!/usr/bin/env bash
# Call B1 (carry .peers/a): stage the peer wheels; the exact exp's cost on auto's fp32 picks (issue 37 item 3); the
# fused-op sweep (issue 35 / 39: masked_softmax and ragged_softmax rows tagged with op).
set -u
mkdir -p "$OUT/logs"
source tools/peer_wheels.sh stage > "$OUT/logs/stage.log" 2>&1
(time timeout 70 python3 experiments/2026-12-04-gpu-final/exp_cost.py --out "$OUT/exp_cost.csv" --budget-s 55) \
    > "$OUT/logs/exp_cost.log" 2>&1
(time timeout 220 python3 -m profiling sweep --op masked_softmax,ragged_softmax --max-minutes 3.2 \
    --out "$OUT/h200_ops.parquet") > "$OUT/logs/op_sweep.log" 2>&1
for f in "$OUT"/logs/*.log; do echo "== $f"; tail -n 6 "$f"; done
