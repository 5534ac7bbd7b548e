#!/bin/bash
# Device call 1 (H200): the forward and backward benches, a per-kernel profile, ragged's GPU tests.
set -u
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD
python3 experiments/2026-12-04-ragged-vec/bench_vec.py --out $OUT/run1 --budget-s 150 2>&1 | tee $OUT/run1_bench.log | tail -60
python3 experiments/2026-12-04-ragged-redesign/profile_ragged.py fp16,fp32 2>&1 | tee $OUT/run1_profile.log | tail -30
python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_ragged.py 2>&1 | tee $OUT/run1_gpu_tests.log | tail -8
