#!/usr/bin/env bash
# Call B2 (carry .peers/b): second peer part; eager per-call time of auto vs torch once the native host path built
# itself in the background in a fresh cache (issue 36 item 3).
set -u
mkdir -p "$OUT/logs"
source tools/peer_wheels.sh more > "$OUT/logs/more.log" 2>&1
CACHE=$(mktemp -d)
(time BLOCKSCOPE_CACHE_DIR=$CACHE timeout 170 python3 experiments/2026-12-04-gpu-final/native_percall.py \
    --out "$OUT/native_percall.csv" --wait-s 120) > "$OUT/logs/native_percall.log" 2>&1
cp "$CACHE"/native/*.log "$OUT/logs/" 2>/dev/null
for f in "$OUT"/logs/*.log; do echo "== $f"; tail -n 12 "$f"; done
