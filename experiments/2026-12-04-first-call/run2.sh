#!/usr/bin/env bash
# Device call 2: GPU tests of launch records and the store; cold start with Triton's start-up on a thread against
# the same with it off (BLOCKSCOPE_TRITON_STARTUP=0), no store and a store compiled ahead without launch records.
set -u
cd "$(dirname "$0")/../.."
mkdir -p "$OUT"
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_launches.py tests/test_aot.py \
    > "$OUT/gpu_tests.log" 2>&1
echo "tests rc=$? $(tail -1 "$OUT/gpu_tests.log")" | tee -a "$OUT/summary.txt"
STORE=$(mktemp -d)
timeout 120 python3 -m profiling warm --arch sm_90 --out "$STORE" > "$OUT/warm.log" 2>&1   # no records: as offline
tail -1 "$OUT/warm.log" | tee -a "$OUT/summary.txt"
for startup in 1 0; do
    BLOCKSCOPE_TRITON_STARTUP=$startup timeout 120 python3 -m profiling coldstart --backends auto \
        --shapes 4096x1024,4096x32767 --reps 2 --store "$STORE" --out "$OUT/coldstart_startup$startup.csv" \
        > "$OUT/coldstart_startup$startup.log" 2>&1
    grep -E "^auto .*(cold|warm|store):" "$OUT/coldstart_startup$startup.log" | sed -E "s/^/startup=$startup /" \
        | tee -a "$OUT/summary.txt"
done
rm -rf "$STORE"
