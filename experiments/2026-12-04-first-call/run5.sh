#!/usr/bin/env bash
# Device call 5: the launcher build on a thread (kernels/aot.py's prebuild_launcher): which thread builds which C
# module in a cold first call; cold start with the start-up threads on and off in one call; GPU tests.
set -u
cd "$(dirname "$0")/../.."
mkdir -p "$OUT"
export PYTHONPATH=$PWD
python3 experiments/2026-12-04-first-call/builds_first_call.py --out "$OUT" > "$OUT/builds.log" 2>&1
cat "$OUT/builds.log" | cut -c1-700
for startup in 1 0; do
    BLOCKSCOPE_TRITON_STARTUP=$startup timeout 150 python3 -m profiling coldstart --backends auto \
        --shapes 4096x1024,4096x65536,4096x32767 --reps 2 --out "$OUT/coldstart_startup$startup.csv" \
        > "$OUT/coldstart_startup$startup.log" 2>&1
    grep -E "^auto .*cold:" "$OUT/coldstart_startup$startup.log" | sed -E "s/torch_import[^;]*; //;s/^/startup=$startup /" \
        | tee -a "$OUT/summary.txt"
done
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_aot.py tests/test_triton_startup.py \
    > "$OUT/gpu_tests.log" 2>&1
echo "tests rc=$? $(tail -1 "$OUT/gpu_tests.log")" | tee -a "$OUT/summary.txt"
