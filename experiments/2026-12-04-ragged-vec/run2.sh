#!/bin/bash
# Device call 2 (H200): forward and backward configurations of design 1 with vector loads.
set -u
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD
python3 experiments/2026-12-04-ragged-vec/tune_vec.py --out $OUT/run2_tune.csv 2>&1 | tee $OUT/run2_tune.log | tail -3
