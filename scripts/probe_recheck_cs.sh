#!/usr/bin/env bash
# Recheck of the shapes the 2026-12-03 04:17 bench put under a peer: `auto` (streaming stores in stagedrows) against
# fca2655's kernels (probe_alt/base: `git archive fca2655 kernels`), Inductor and neighbouring warprows/stagedrows
# layouts; the large shapes twice, in opposite config order (docs/kernel-changes.md section 16). Output under $OUT.
set -u
A=bf16:262144:1024,fp16:262144:1024,fp32:65536:2048,fp32:16384:8192,bf16:65536:4096
B=fp16:5000:1536,bf16:5000:1536,fp16:4096:1000,bf16:3000:5000
python3 scripts/probe_kernels.py --alt base=probe_alt/base --shapes $A --configs "auto;base/auto;warprows:threads_per_row=64;warprows:threads_per_row=128;stagedrows:threads_per_row=64;inductor" --out $OUT/probe_large_a.csv > $OUT/probe_large_a.txt 2>&1
python3 scripts/probe_kernels.py --alt base=probe_alt/base --shapes $A --configs "inductor;stagedrows:threads_per_row=64;warprows:threads_per_row=128;warprows:threads_per_row=64;base/auto;auto" --out $OUT/probe_large_b.csv > $OUT/probe_large_b.txt 2>&1
python3 scripts/probe_kernels.py --alt base=probe_alt/base --shapes $B --configs "auto;base/auto;warprows:threads_per_row=16;warprows:threads_per_row=32,num_warps=8;warprows:threads_per_row=64;warprows:threads_per_row=64,num_warps=8;stagedrows:threads_per_row=64;stagedrows:threads_per_row=128;torch" --out $OUT/probe_small.csv > $OUT/probe_small.txt 2>&1
tail -60 $OUT/probe_small.txt
