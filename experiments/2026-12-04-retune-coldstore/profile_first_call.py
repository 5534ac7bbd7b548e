"""Where the first `auto` call of a fresh process spends its time (issue 36): cProfile of that one call, with the
ahead-of-time store and empty Triton caches ('store'), then again in a second fresh process on the same Triton cache
('store + warm Triton cache'). GPU only. Usage (a store made by `python -m profiling warm --arch sm_90 --out DIR`):
    python3 experiments/2026-12-04-retune-coldstore/profile_first_call.py DIR"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

CHILD = r"""
import cProfile, pstats, time, io
import torch
x = torch.randn(4096, 1024, device="cuda", dtype=torch.float16); torch.cuda.synchronize()
t0 = time.perf_counter()
import blockscope.kernels as kernels
t1 = time.perf_counter()
profile = cProfile.Profile(); profile.enable()
y = kernels.softmax(x, variant="auto"); torch.cuda.synchronize()
profile.disable(); t2 = time.perf_counter()
print(f"import {1e3 * (t1 - t0):.1f} ms, first call {1e3 * (t2 - t1):.1f} ms")
text = io.StringIO()
pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(35)
print(text.getvalue())
"""


def main() -> None:
    store = sys.argv[1]
    cache = tempfile.mkdtemp()
    env = {
        **os.environ,
        "BLOCKSCOPE_KERNEL_CACHE": store,
        "TRITON_CACHE_DIR": cache,
        "BLOCKSCOPE_NATIVE_AUTOBUILD": "0",
    }
    for label in ("store, empty Triton cache", "store, the same Triton cache again"):
        print(f"===== {label}", flush=True)
        subprocess.run([sys.executable, "-c", CHILD], env=env, check=False, timeout=120)


if __name__ == "__main__":
    main()
