#!/usr/bin/env bash
# One device call: GPU tests of launch records, warm --record, first calls at every table shape, cold start.
set -u
cd "$(dirname "$0")/../.."
mkdir -p "$OUT"
STORE=$(mktemp -d)
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_launches.py > "$OUT/gpu_tests.log" 2>&1
echo "tests rc=$?" | tee -a "$OUT/summary.txt"
/usr/bin/time -f "warm+record wall %e s" timeout 300 python3 -m profiling warm --arch sm_90 --out "$STORE" --record \
    > "$OUT/warm_record.log" 2>&1
tail -3 "$OUT/warm_record.log" | tee -a "$OUT/summary.txt"
du -sh "$STORE" "$STORE/launches" | tee -a "$OUT/summary.txt"
timeout 240 python3 experiments/2026-12-04-launch-records/first_calls.py "$STORE" "$OUT" 2>&1 | tee -a "$OUT/summary.txt"
timeout 200 python3 -m profiling coldstart --backends torch,auto --shapes 4096x1024,4096x65536 --reps 2 \
    --store "$STORE" --out "$OUT/coldstart.csv" > "$OUT/coldstart.log" 2>&1
tail -20 "$OUT/coldstart.log" >> "$OUT/summary.txt"
rm -rf "$STORE"
