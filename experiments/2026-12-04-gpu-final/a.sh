#!/usr/bin/env bash
# Call A (no peers needed): fp32 N > 16384 retune against every variant that runs there (issue 37 item 4), the exact
# exp's cost on auto's fp32 picks (item 3), the num_warps grid for Tradeoffs (issue 39 item 5), ragged_softmax's
# final defaults (issue 35). Run from the repo root on the GPU machine: bash experiments/2026-12-04-gpu-final/a.sh
set -u
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/logs/gpu.txt" 2>&1
(time timeout 200 python3 -m tools.tune_h200 --out "$OUT/tune" --dtypes fp32 --challenge kernels/tuned/nvidia-h200.json \
    --variants teaching,online,persistent,multirow,splitrow,staged,staged_split,cluster --min-n 16385) \
    > "$OUT/logs/tune_fp32_hi.log" 2>&1
(time timeout 70 python3 experiments/2026-12-04-gpu-final/exp_cost.py --out "$OUT/exp_cost.csv" --budget-s 55) \
    > "$OUT/logs/exp_cost.log" 2>&1
(time timeout 160 python3 -m profiling sweep --variants teaching,multirow,online,persistent,warprows,stagedrows,splitrow,cluster,staged,tinyrows \
    --dtypes fp16,fp32 --n 256,1024,4096,16384,65536 --num-warps 1,2,4,8,16,32 --methods cuda_graph,back_to_back_flushed \
    --no-trace --max-minutes 2.3 --out "$OUT/h200_warps_grid.parquet") > "$OUT/logs/warps_grid.log" 2>&1
(time timeout 75 python3 experiments/2026-12-04-ragged-redesign/bench_ragged.py --out "$OUT/bench_ragged.csv" --tune \
    --budget-s 60) > "$OUT/logs/bench_ragged.log" 2>&1
tar czf "$OUT/tune.tgz" --exclude=cache -C "$OUT" tune 2>/dev/null && rm -rf "$OUT/tune"
tail -5 "$OUT"/logs/*.log
