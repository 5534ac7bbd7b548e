#!/usr/bin/env bash
# Streaming stores (st.global.cs) and bf16's one-FMA exp, timed against the current kernels in one run (H200;
# docs/kernel-changes.md section 16). Needs probe_alt/cs (this tree's kernels with cache_modifier=".cs" on the
# output stores of warprows, stagedrows, staged, teaching and multirow) and probe_alt/bf (cs plus bf16's FMA form
# in warprows and stagedrows where every row's |max| < 2**24).
# Usage: bash experiments/2026-12-02-store-hint/probe_store_hint.sh OUT_DIR ulp|peers
set -euo pipefail
out=${1:?usage: probe_store_hint.sh OUT_DIR ulp|peers}
alts=(--alt cs=probe_alt/cs --alt bf=probe_alt/bf)
small=fp16:5000:1536,bf16:5000:1536,fp32:5000:1536,fp16:3000:5000,bf16:3000:5000,fp32:3000:5000,fp16:4096:1000,bf16:4096:1000,bf16:65536:96,fp32:65536:96,bf16:30000:200,fp16:16384:777,fp32:16384:777,fp16:2048:12345,fp32:2048:12345
wide=fp16:4096:32768,bf16:777:100000,fp32:300:300000,bf16:4096:32768
case "${2:-}" in
  ulp)  # bf16 only: the FMA form's error next to the FADD form's
    python3 -m tools.probe_kernels "${alts[@]}" --ulp normal,scale30,dominant --out "$out/probe_store_hint_ulp.csv" \
      --shapes bf16:5000:1536,bf16:3000:5000,bf16:4096:1000,bf16:65536:96,bf16:30000:200 \
      --configs "auto;bf/auto" 2>&1 | tee "$out/probe_store_hint_ulp.txt" ;;
  peers)
    python3 -m tools.probe_kernels "${alts[@]}" --out "$out/probe_store_hint.csv" --shapes "$small,$wide" \
      --configs "auto;cs/auto;bf/auto;quack;liger;torch" 2>&1 | tee "$out/probe_store_hint.txt" ;;
  *) echo "usage: probe_store_hint.sh OUT_DIR ulp|peers" >&2; exit 2 ;;
esac
