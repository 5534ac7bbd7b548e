#!/usr/bin/env bash
# Fourth device call: split-row launches recorded (auto now records them); first calls at every table shape; cold
# start at a splitrow shape; the GPU tests of launch records.
set -u
cd "$(dirname "$0")/../.."
mkdir -p "$OUT"
STORE=$(mktemp -d)
timeout 120 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_launches.py > "$OUT/gpu_tests.log" 2>&1
echo "tests rc=$? $(tail -1 "$OUT/gpu_tests.log")" | tee -a "$OUT/summary.txt"
/usr/bin/time -f "warm+record wall %e s" timeout 300 python3 -m profiling warm --arch sm_90 --out "$STORE" --record \
    > "$OUT/warm_record.log" 2>&1
grep -v "^not recorded" "$OUT/warm_record.log" | tail -3 | tee -a "$OUT/summary.txt"
grep "^not recorded" "$OUT/warm_record.log" | tee -a "$OUT/summary.txt"
NO_EAGER=1 timeout 200 python3 experiments/2026-12-04-launch-records/first_calls.py "$STORE" "$OUT" 2>&1 \
    | tee -a "$OUT/summary.txt"
timeout 120 python3 -m profiling coldstart --backends auto --shapes 4096x32767 --reps 2 \
    --store "$STORE" --out "$OUT/coldstart.csv" > "$OUT/coldstart.log" 2>&1
grep -E "^auto .*(cold|warm|store):" "$OUT/coldstart.log" | sed -E 's/torch_import[^;]*; //' >> "$OUT/summary.txt"
rm -rf "$STORE"
