#!/usr/bin/env bash
# `staged` fp32 keeping exp in shared memory (one exp per element; experiments/2026-12-03-staged-keep/staged_fp32_keep_exp.patch, not
# kept), timed against the shipped `staged` and Quack in one run (H200; docs/kernel-changes.md section 17).
# Builds the patched kernels in probe_alt/keep from this tree's kernels/ and the patch (no git needed on the GPU
# machine); Quack from tools/peer_wheels.sh finish.
# Usage: bash experiments/2026-12-03-staged-keep/probe_staged_keep.sh OUT_DIR
set -euo pipefail
out=${1:?usage: probe_staged_keep.sh OUT_DIR}
rm -rf probe_alt/keep && mkdir -p probe_alt/keep
cp -r kernels probe_alt/keep/
patch -s -d probe_alt/keep -p1 < experiments/2026-12-03-staged-keep/staged_fp32_keep_exp.patch
python3 -m tools.probe_kernels --alt keep=probe_alt/keep --ulp normal,scale30,dominant \
  --out "$out/probe_staged_keep.csv" \
  --shapes fp32:256:524288,fp32:300:300000,fp32:512:262144,fp32:1024:131072,fp32:777:100000,fp32:2048:50000,fp32:4096:32769,fp32:4096:24000,fp32:4096:65535 \
  --configs "auto;keep/auto;quack;staged;keep/staged;staged:cluster=16;keep/staged:cluster=16" 2>&1 \
  | tee "$out/probe_staged_keep.txt"
