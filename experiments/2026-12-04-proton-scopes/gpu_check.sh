#!/usr/bin/env bash
# Proton scope breakdowns of splitrow, staged and cluster on the GPU (issue 38 item 1): run from the repo root,
#   bash experiments/2026-12-04-proton-scopes/gpu_check.sh
# Writes under $OUT (default: a temp folder): scopes.log (the CLI's tables), breakdowns.csv (every config's
# breakdown), scopes.tar.gz (the Proton traces, <run id>_scopes/<config>.json), env.txt. About 1-2 minutes.
set -u
OUT="${OUT:-$(mktemp -d)}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
WORK="$(mktemp -d)"
python3 - > "$OUT/env.txt" 2>&1 <<'PY'
import torch, triton
print("torch", torch.__version__, "triton", triton.__version__, "cuda", torch.cuda.is_available())
if torch.cuda.is_available():
    print(torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0))
import triton.profiler.language as pl, triton.profiler as proton
print("proton ok", hasattr(pl, "enter_scope"))
PY
cat "$OUT/env.txt"
# rows: 128 at N=65536 and 32 at N=262144 (16-64 MB of input, traces of a few MB each)
run() {
  timeout 170 python3 -m profiling bench --proton-scopes --variants splitrow,staged,cluster --dtypes fp16,fp32 \
    --n 65536,262144 --rows 128,32 --markdown "$WORK/bench.md" "$@" 2>&1 | tee -a "$OUT/scopes.log"
  return "${PIPESTATUS[0]}"
}
run
status=$?
if ! ls "$WORK"/bench_proton/*_scopes/*.json >/dev/null 2>&1; then
  echo "== no trace with a warm-up session (status $status): again measuring the first launch ==" | tee -a "$OUT/scopes.log"
  timeout 100 python3 -m profiling bench --proton-scopes --variants cluster,splitrow --dtypes fp16 --n 65536 \
    --rows 128 --no-scope-warmup --markdown "$WORK/bench.md" 2>&1 | tee -a "$OUT/scopes.log"
fi
python3 - "$WORK" "$OUT/breakdowns.csv" <<'PY' 2>&1 | tee -a "$OUT/scopes.log"
import sys
from pathlib import Path
from blockscope.profiling.views.scopes import breakdowns
files = sorted(Path(sys.argv[1]).glob("bench_proton/*_scopes/*.json"))
table, errors = breakdowns(files)
table.to_csv(sys.argv[2], index=False)
for name, error in errors.items():
    print("unreadable:", name, error)
for config, part in table.groupby("config", sort=False):
    shares = ", ".join(f"{r.scope} {100 * r.share_of_kernel:.0f}%" for r in part.itertuples() if r.scope != "kernel")
    print(f"{config}: kernel {part[part.scope == 'kernel'].median_cycles.max():,.0f} cycles/warp; {shares}")
PY
(cd "$WORK" && tar czf "$OUT/scopes.tar.gz" bench_proton 2>/dev/null) || true
ls -la "$OUT"
