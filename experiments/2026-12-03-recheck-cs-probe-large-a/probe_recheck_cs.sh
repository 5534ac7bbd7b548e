#!/usr/bin/env bash
# Recheck of the shapes the 2026-12-03 04:17 bench put under a peer: `auto` (streaming stores in stagedrows) against
# fca2655's kernels (probe_alt/base: `git archive fca2655 kernels`), Inductor and neighbouring warprows/stagedrows
# layouts; the large shapes twice, in opposite config order (docs/kernel-changes.md section 16).
# Usage: bash experiments/2026-12-03-recheck-cs-probe-large-a/probe_recheck_cs.sh OUT_DIR
set -euo pipefail
out=${1:?usage: probe_recheck_cs.sh OUT_DIR}
large=bf16:262144:1024,fp16:262144:1024,fp32:65536:2048,fp32:16384:8192,bf16:65536:4096
small=fp16:5000:1536,bf16:5000:1536,fp16:4096:1000,bf16:3000:5000
probe() {  # NAME SHAPES CONFIGS -> OUT_DIR/NAME.csv and NAME.txt
  python3 -m tools.probe_kernels --alt base=probe_alt/base --shapes "$2" --configs "$3" --out "$out/$1.csv" \
    > "$out/$1.txt" 2>&1
}
probe probe_large_a "$large" "auto;base/auto;warprows:threads_per_row=64;warprows:threads_per_row=128;stagedrows:threads_per_row=64;inductor"
probe probe_large_b "$large" "inductor;stagedrows:threads_per_row=64;warprows:threads_per_row=128;warprows:threads_per_row=64;base/auto;auto"
probe probe_small "$small" "auto;base/auto;warprows:threads_per_row=16;warprows:threads_per_row=32,num_warps=8;warprows:threads_per_row=64;warprows:threads_per_row=64,num_warps=8;stagedrows:threads_per_row=64;stagedrows:threads_per_row=128;torch"
tail -60 "$out/probe_small.txt"
