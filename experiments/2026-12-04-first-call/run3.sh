#!/usr/bin/env bash
# Device call 3: GPU tests of launch records (planned = launched at every table shape) and the store; the bundled
# cold-start capture (no store / same caches again / a store warmed as offline: compiled kernels + planned records);
# cold start with Triton's start-up on a thread turned off, for the same-run comparison.
set -u
cd "$(dirname "$0")/../.."
mkdir -p "$OUT/capture"
timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_launches.py tests/test_aot.py \
    > "$OUT/gpu_tests.log" 2>&1
echo "tests rc=$? $(tail -1 "$OUT/gpu_tests.log")" | tee -a "$OUT/summary.txt"
STORE=$(mktemp -d)
timeout 120 python3 -m profiling warm --arch sm_90 --out "$STORE" > "$OUT/warm.log" 2>&1   # as offline: no --record
grep -v "^not planned" "$OUT/warm.log" | tail -2 | tee -a "$OUT/summary.txt"
grep "^not planned" "$OUT/warm.log" | tee -a "$OUT/summary.txt"
timeout 200 python3 -m profiling coldstart --backends torch,auto --shapes 4096x1024,4096x65536,4096x32767 --reps 2 \
    --store "$STORE" --out "$OUT/capture/coldstart.parquet" > "$OUT/capture/coldstart.log" 2>&1
grep -E "^(torch|auto) .*(cold|warm|store):" "$OUT/capture/coldstart.log" | sed -E 's/torch_import[^;]*; //' \
    | tee -a "$OUT/summary.txt"
BLOCKSCOPE_TRITON_STARTUP=0 timeout 100 python3 -m profiling coldstart --backends auto \
    --shapes 4096x1024,4096x32767 --reps 2 --out "$OUT/coldstart_startup0.csv" \
    > "$OUT/coldstart_startup0.log" 2>&1 || echo "startup0 rc=$?" | tee -a "$OUT/summary.txt"
grep -E "^auto .*cold:" "$OUT/coldstart_startup0.log" | sed -E 's/torch_import[^;]*; //;s/^/startup=0 /' \
    | tee -a "$OUT/summary.txt"
rm -rf "$STORE"
