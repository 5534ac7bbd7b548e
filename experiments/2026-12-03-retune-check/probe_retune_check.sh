#!/usr/bin/env bash
# The 2026-12-03 retune's changed picks, re-measured: `auto` with the new table against `auto` with the table it
# replaced (probe_alt/oldtable: this tree's kernels with the table of cdf84b6), side by side in one run, at
# the 11 (dtype, N) of the default sweep whose pick changed (R=4096) and the two large-set shapes it fixed.
# Usage: bash experiments/2026-12-03-retune-check/probe_retune_check.sh OUT_DIR   (docs/kernel-changes.md section 16). probe_kernels.py turns the
# native replay off with --alt (the run that produced logs/probe_retune_check_shared_native_h200.txt had it on).
set -euo pipefail
out=${1:?usage: probe_retune_check.sh OUT_DIR}
shapes=bf16:4096:256,bf16:4096:511,bf16:4096:512,bf16:4096:1000,bf16:4096:1024,bf16:4096:4096,bf16:4096:8191
shapes=$shapes,bf16:4096:12000,fp16:4096:4096,fp32:4096:4096,fp32:4096:8192,bf16:262144:1024,bf16:65536:4096
python3 -m tools.probe_kernels --alt old=probe_alt/oldtable --shapes "$shapes" --configs "auto;old/auto" \
  --out "$out/probe_retune_check.csv" 2>&1 | grep -v "RuntimeWarning\|_eager_prefers_torch\|_softmax_auto_checked" \
  | tee "$out/probe_retune_check.txt"
