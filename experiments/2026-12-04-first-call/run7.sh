#!/usr/bin/env bash
# Device call 7: eager wall of torch and auto at tiny shapes, alternated three times (eager_recheck.py).
set -u
cd "$(dirname "$0")/../.."
mkdir -p "$OUT"
BLOCKSCOPE_CACHE_DIR=$(mktemp -d) timeout 300 python3 experiments/2026-12-04-first-call/eager_recheck.py --out "$OUT" \
    > "$OUT/eager_recheck.log" 2>&1
echo "rc=$?"; grep -v Warning "$OUT/eager_recheck.log" | grep -v "^  " | cut -c1-400
