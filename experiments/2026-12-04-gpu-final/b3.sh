#!/usr/bin/env bash
# Call B3 (carry .peers/c): last peer part; resume the bundled capture (data/h200_sweep.parquet, run 1 of
# 2026-12-04) with every backend: the configs it lacks (fp32 N >= 65535) and the auto rows of the table's changed
# picks, then the trace pass (kernel names for every row) and the default Chrome traces (issue 39).
set -u
mkdir -p "$OUT/logs"
source tools/peer_wheels.sh finish > "$OUT/logs/finish.log" 2>&1
cp data/h200_sweep.parquet "$OUT/h200_sweep.parquet"
(time timeout 470 python3 -m profiling sweep --out "$OUT/h200_sweep.parquet" --max-minutes 7.2) \
    > "$OUT/logs/sweep_resume.log" 2>&1
tar czf "$OUT/h200_sweep_traces.tgz" -C "$OUT" h200_sweep_traces 2>/dev/null && rm -rf "$OUT/h200_sweep_traces"
rm -f "$OUT"/*.lock
ls -la "$OUT"; tail -n 15 "$OUT/logs/sweep_resume.log"
