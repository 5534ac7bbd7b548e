#!/usr/bin/env bash
# Device call 6: the bundled cold-start capture again, with the launcher build on a thread (kernels/aot.py's
# prebuild_launcher): no store / the same caches again / a store made by `warm` alone.
set -u
cd "$(dirname "$0")/../.."
mkdir -p "$OUT/capture"
STORE=$(mktemp -d)
timeout 120 python3 -m profiling warm --arch sm_90 --out "$STORE" > "$OUT/warm.log" 2>&1   # as offline: no --record
grep -v "^not planned" "$OUT/warm.log" | tail -2 | tee -a "$OUT/summary.txt"
timeout 230 python3 -m profiling coldstart --backends torch,auto --shapes 4096x1024,4096x65536,4096x32767 --reps 2 \
    --store "$STORE" --out "$OUT/capture/coldstart.parquet" > "$OUT/capture/coldstart.log" 2>&1
echo "coldstart rc=$?" | tee -a "$OUT/summary.txt"
grep -E "^(torch|auto) .*(cold|warm|store):" "$OUT/capture/coldstart.log" | sed -E 's/torch_import[^;]*; //' \
    | tee -a "$OUT/summary.txt"
rm -rf "$STORE"
