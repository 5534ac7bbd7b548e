#!/usr/bin/env bash
# One GPU call: fp32 retune after the exact exp (warprows/stagedrows challenge the table's fp32 picks), the tiny-row
# grid (N 8-64) added to the table, and the first call with an ahead-of-time kernel store (issue 36).
# Run on the GPU machine from the repository root: bash experiments/2026-12-04-retune-coldstore/run.sh  (writes $OUT)
set -u
mkdir -p "$OUT/tune" "$OUT/cold"
STORE=$(mktemp -d)
(time python3 -m profiling warm --arch sm_90 --out "$STORE" --workers 8) > "$OUT/cold/warm1.log" 2>&1 &
WARM=$!
T=kernels/tuned/nvidia-h200.json
(time timeout 180 python3 -m tools.tune_h200 --out "$OUT/tune/lo" --dtypes fp32 --challenge "$T" \
  --variants warprows,stagedrows --max-n 4096) > "$OUT/tune/lo.log" 2>&1
[ -f "$OUT/tune/lo/nvidia-h200.json" ] && T="$OUT/tune/lo/nvidia-h200.json"
(time timeout 100 python3 -m tools.tune_h200 --out "$OUT/tune/hi" --dtypes fp32 --challenge "$T" \
  --variants warprows,stagedrows --min-n 4097) > "$OUT/tune/hi.log" 2>&1
[ -f "$OUT/tune/hi/nvidia-h200.json" ] && T="$OUT/tune/hi/nvidia-h200.json"
(time timeout 150 python3 -m tools.tune_h200 --out "$OUT/tune/tiny" --dtypes fp16,bf16,fp32 --extend "$T" \
  --grid tiny) > "$OUT/tune/tiny.log" 2>&1
wait "$WARM"
(time python3 -m profiling warm --arch sm_90 --out "$STORE") > "$OUT/cold/warm2.log" 2>&1
du -sh "$STORE" > "$OUT/cold/store_size.txt"
(time timeout 160 python3 -m profiling coldstart --backends torch,auto --store "$STORE" --reps 3 \
  --out "$OUT/cold/coldstart_store.parquet") > "$OUT/cold/coldstart.log" 2>&1
rm -rf "$STORE"
ls -la "$OUT"/tune/* "$OUT"/cold
tail -3 "$OUT"/tune/*.log "$OUT"/cold/*.log
