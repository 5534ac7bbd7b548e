#!/bin/bash
# Device call (H200): the odd-N grid (autotune.ODD_N at R=4096 and ~512 MB) added to the table, every candidate
# (vecrows among them); stopped after 330 s if not done (the log keeps every shape tuned so far).
set -u
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD
timeout 330 python3 -m tools.tune_h200 --out $OUT/odd --dtypes fp32,fp16,bf16 --extend kernels/tuned/nvidia-h200.json \
    --grid odd > $OUT/odd.log 2>&1
echo "tune exit $?"
grep -E "best|wrote" $OUT/odd.log | tail -60
