#!/usr/bin/env bash
# Proton scope breakdowns of splitrow, staged and cluster on the GPU (issue 38 item 1): run from the repo root,
#   bash experiments/2026-12-04-proton-scopes/gpu_check.sh
# Writes under $OUT (default: a temp folder): scopes.log (the CLI's tables), breakdowns.csv (every config's
# breakdown), scopes_splitrow.tar.gz and scopes_staged_cluster.tar.gz (the Proton traces,
# bench_proton/<run id>_scopes/<config>.json), env.txt. At most about 3 minutes.
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
# rows: splitrow 256 at N=65536 and 64 at N=262144 (about 4 rows per program of its persistent grid); staged and
# cluster 128 and 32 (one row per cluster, 16-32 MB of input): traces of a few MB each
run() {  # timeout, variants, rows, extra flags
  local limit=$1 variants=$2 rows=$3
  shift 3
  timeout "$limit" python3 -m profiling bench --proton-scopes --variants "$variants" --dtypes fp16,fp32 \
    --n 65536,262144 --rows "$rows" --markdown "$WORK/bench.md" "$@" 2>&1 | tee -a "$OUT/scopes.log"
  echo "== exit status ${PIPESTATUS[0]} ==" | tee -a "$OUT/scopes.log"
}
run 75 splitrow 256,64
run 80 staged,cluster 128,32
if ! ls "$WORK"/bench_proton/*_scopes/*.json >/dev/null 2>&1; then
  echo "== no trace with a warm-up session: again, measuring the first launch ==" | tee -a "$OUT/scopes.log"
  timeout 15 python3 -m profiling bench --proton-scopes --variants cluster --dtypes fp16 --n 65536 --rows 128 \
    --no-scope-warmup --markdown "$WORK/bench.md" 2>&1 | tee -a "$OUT/scopes.log"
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
# the traces, splitrow's apart (each file back must stay under 16 MiB)
(cd "$WORK" && tar czf "$OUT/scopes_splitrow.tar.gz" bench_proton/*_scopes/splitrow-* 2>/dev/null) || true
(cd "$WORK" && tar czf "$OUT/scopes_staged_cluster.tar.gz" --exclude 'splitrow-*' bench_proton 2>/dev/null) || true
ls -la "$OUT"
