#!/usr/bin/env bash
# Sixth device call: a package with launch records, used by a fresh process; GPU tests of the auto paths.
set -u
cd "$(dirname "$0")/../.."
mkdir -p "$OUT"
PKG=$(mktemp -d)/pkg
timeout 250 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_launches.py tests/test_native.py \
    tests/test_aot.py tests/test_integration_gpu.py > "$OUT/gpu_tests.log" 2>&1
echo "tests rc=$? $(tail -1 "$OUT/gpu_tests.log")" | tee -a "$OUT/summary.txt"
/usr/bin/time -f "package+record wall %e s" timeout 200 python3 -m profiling package --arch sm_90 --out "$PKG" \
    --record > "$OUT/package_record.log" 2>&1
grep -v "^not recorded" "$OUT/package_record.log" | tail -4 | tee -a "$OUT/summary.txt"
for i in 1 2 3; do
  T=$(mktemp -d)
  TRITON_CACHE_DIR=$T/t TRITON_HOME=$T/h BLOCKSCOPE_CACHE_DIR=$T/b BLOCKSCOPE_NATIVE=0 timeout 120 python3 -c "
import sys, time, torch
torch.zeros(1, device='cuda'); torch.cuda.synchronize()
t = time.perf_counter()
from blockscope.kernels import aot, softmax_auto
aot.use_package('$PKG')
setup = time.perf_counter() - t
x = torch.randn(4096, 1024, device='cuda', dtype=torch.float16); torch.cuda.synchronize()
t = time.perf_counter(); y = softmax_auto(x); torch.cuda.synchronize(); first = time.perf_counter() - t
t = time.perf_counter(); y = softmax_auto(x); torch.cuda.synchronize(); second = time.perf_counter() - t
err = float((y.double() - torch.softmax(x.double(), -1)).abs().max())
print(f'use_package {setup * 1e3:.1f} ms, first call {first * 1e3:.2f} ms, second {second * 1e3:.3f} ms, error {err:.1e}')
" 2>&1 | tail -1 | tee -a "$OUT/summary.txt"
  rm -rf "$T"
done
rm -rf "$(dirname "$PKG")"
