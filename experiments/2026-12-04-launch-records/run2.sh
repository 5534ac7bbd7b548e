#!/usr/bin/env bash
# Second device call: launch records with cluster launches, eager calls with the native module, ragged H sweep.
set -u
cd "$(dirname "$0")/../.."
mkdir -p "$OUT"
STORE=$(mktemp -d); NATIVE=$(mktemp -d)
(BLOCKSCOPE_CACHE_DIR=$NATIVE python3 -m profiling native --build > "$OUT/native_build.log" 2>&1 &)
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_launches.py > "$OUT/gpu_tests.log" 2>&1
echo "tests rc=$?" | tee -a "$OUT/summary.txt"
/usr/bin/time -f "warm+record wall %e s" timeout 300 python3 -m profiling warm --arch sm_90 --out "$STORE" --record \
    > "$OUT/warm_record.log" 2>&1
grep -v "^not recorded" "$OUT/warm_record.log" | tail -3 | tee -a "$OUT/summary.txt"
grep "^not recorded" "$OUT/warm_record.log" | awk '{print $5}' | sort | uniq -c | tee -a "$OUT/summary.txt"
timeout 240 python3 experiments/2026-12-04-launch-records/first_calls.py "$STORE" "$OUT" "$NATIVE" 2>&1 | tee -a "$OUT/summary.txt"
timeout 150 python3 experiments/2026-12-04-ragged-h/sweep_h.py --out "$OUT/sweep_h.csv" > "$OUT/sweep_h.log" 2>&1
tail -60 "$OUT/sweep_h.log"
rm -rf "$STORE" "$NATIVE"
