#!/usr/bin/env bash
# Device call 4: tiny-row configs L2-resident vs flushed, eager wall of torch and auto (eager_tiny.py); Triton
# 3.6's launcher source (what a launcher build on a thread would need).
set -u
cd "$(dirname "$0")/../.."
mkdir -p "$OUT"
python3 - > "$OUT/triton_launcher_source.txt" 2>&1 <<'PY'
import inspect, triton
from triton.backends.nvidia import driver
print(triton.__version__)
print(inspect.getsource(driver.CudaLauncher))
print(inspect.getsource(driver.make_launcher)[:3000])
import triton.compiler.compiler as c
print(inspect.getsource(c.CompiledKernel._init_handles))
PY
BLOCKSCOPE_CACHE_DIR=$(mktemp -d) timeout 400 python3 experiments/2026-12-04-first-call/eager_tiny.py --out "$OUT" \
    > "$OUT/eager_tiny.log" 2>&1
echo "eager_tiny rc=$?"; grep -E "native|'(torch|auto)'" "$OUT/eager_tiny.log" | cut -c1-300
