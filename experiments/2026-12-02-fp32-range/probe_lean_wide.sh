#!/usr/bin/env bash
# `staged` with the cheaper exp, timed against the kernels it replaces in one run (H200; docs/kernel-changes.md 15).
# Needs the replaced kernels in probe_alt/base (git archive 719886b kernels | tar -x -C probe_alt/base); mode `lean`
# also a copy of the tree of that moment with warprows.exp_form(fp32) = 1 in probe_alt/f32x (fp32's ftz form, with
# 2**64 scaling: measured, not kept).
# Usage: bash experiments/2026-12-02-fp32-range/probe_lean_wide.sh OUT_DIR lean|fp32range|peers
set -euo pipefail
out=${1:?usage: probe_lean_wide.sh OUT_DIR lean|fp32range|peers}
ulp=(--ulp normal,scale30,dominant)
case "${2:-}" in
  lean)
    alts=(--alt base=probe_alt/base --alt f32x=probe_alt/f32x)
    python3 -m tools.probe_kernels "${alts[@]}" "${ulp[@]}" --out "$out/probe_lean_wide16.csv" \
      --shapes fp16:777:100000,bf16:777:100000,fp16:2048:50000,bf16:2048:50000,fp16:4096:32768,bf16:4096:65536,fp16:1024:262144,bf16:300:300000 \
      --configs "auto;base/auto;staged;base/staged;staged:cluster=7;base/staged:cluster=7" 2>&1 | tee "$out/probe_lean_wide16.txt"
    python3 -m tools.probe_kernels "${alts[@]}" "${ulp[@]}" --out "$out/probe_lean_wide32.csv" \
      --shapes fp32:300:300000,fp32:256:524288,fp32:1024:131072,fp32:5000:1536,fp32:3000:5000 \
      --configs "auto;base/auto;f32x/auto;staged:cluster=16;f32x/staged:cluster=16" 2>&1 | tee "$out/probe_lean_wide32.txt" ;;
  fp32range)
    python3 -m tools.probe_kernels --alt base=probe_alt/base "${ulp[@]}" --out "$out/probe_fp32_range.csv" \
      --shapes fp32:300:300000,fp32:256:524288,fp32:1024:131072,fp32:2048:50000,fp32:777:100000,fp32:4096:32768 \
      --configs "auto;base/auto;staged;base/staged;staged:cluster=16;base/staged:cluster=16" 2>&1 | tee "$out/probe_fp32_range.txt" ;;
  peers)  # auto (this tree, its table) against Quack on the bench's shapes where auto picks `staged`
    wide16=fp16:4096:32768,fp16:2048:50000,fp16:777:100000,fp16:300:300000,fp16:16384:16384,fp16:8192:32768,fp16:4096:65536,fp16:2048:131072,fp16:1024:262144,fp16:512:524288
    wide32=fp32:4096:32768,fp32:2048:50000,fp32:777:100000,fp32:300:300000,fp32:8192:16384,fp32:2048:65536,fp32:1024:131072,fp32:512:262144,fp32:256:524288
    python3 -m tools.probe_kernels --out "$out/probe_lean_peers.csv" --configs "auto;quack;torch" \
      --shapes "$wide16,${wide16//fp16/bf16},$wide32" 2>&1 | tee "$out/probe_lean_peers.txt" ;;
  *) echo "usage: probe_lean_wide.sh OUT_DIR lean|fp32range|peers" >&2; exit 2 ;;
esac
