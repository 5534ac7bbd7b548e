#!/usr/bin/env bash
# Last device call: cold-start rows for the bundled dataset, at this commit (kernels final).
set -u
cd "$(dirname "$0")/../.."
mkdir -p "$OUT"
STORE=$(mktemp -d)
timeout 60 python3 -m profiling warm --arch sm_90 --out "$STORE" --record > "$OUT/warm_record.log" 2>&1
grep -v "^not recorded" "$OUT/warm_record.log" | tail -2
timeout 170 python3 -m profiling coldstart --backends torch,auto --shapes 4096x1024,4096x65536,4096x32767 --reps 2 \
    --store "$STORE" --out "$OUT/coldstart.parquet" > "$OUT/coldstart.log" 2>&1
grep -E "^(torch|auto) .*(cold|warm|store):" "$OUT/coldstart.log" | sed -E 's/torch_import[^;]*; //'
rm -rf "$STORE"
