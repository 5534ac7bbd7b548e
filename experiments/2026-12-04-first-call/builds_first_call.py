"""Which thread builds which Triton C module during `auto`'s first call in a fresh process with empty caches:
triton.runtime.build._build (the compiler run behind compile_module_from_src) wrapped to log its module name,
thread and seconds; then the first call's wall time. With kernels/aot.py's prebuild_launcher working, the kernel's
`__triton_launcher` is built once, on `blockscope-launcher-build`, and not again by the caller.

    python experiments/2026-12-04-first-call/builds_first_call.py --out DIR [--shape 4096x1024]

Runs one child per shape with private caches (profiling/measure/coldstart.py's child_env); writes DIR/builds.json."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, sys, threading, time
import torch
import blockscope.kernels as kernels
torch.zeros(1, device="cuda"); torch.cuda.synchronize()
rows, cols = (int(v) for v in sys.argv[1].split("x"))
x = torch.randn(rows, cols, device="cuda", dtype=torch.float16)
torch.cuda.synchronize()
builds = []
start = time.perf_counter()
import triton.runtime.build as build
original = build._build
def logged(name, *args, **kwargs):
    t = time.perf_counter()
    try:
        return original(name, *args, **kwargs)
    finally:
        builds.append({"module": name, "thread": threading.current_thread().name,
                       "start_s": round(t - start, 3), "seconds": round(time.perf_counter() - t, 3)})
build._build = logged
y = kernels.softmax(x, variant="auto")
torch.cuda.synchronize()
first = time.perf_counter() - start
print("RESULT " + json.dumps({"first_call_s": first, "builds": builds}))
"""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--shape", action="append", default=None)
    args = parser.parse_args()
    from blockscope.profiling.measure.coldstart import child_env, package_root

    args.out.mkdir(parents=True, exist_ok=True)
    results = {}
    for shape in args.shape or ["4096x1024", "4096x32767"]:
        with tempfile.TemporaryDirectory(prefix="blockscope-builds-") as root:
            proc = subprocess.run(
                [sys.executable, "-c", CHILD, shape],
                capture_output=True,
                text=True,
                timeout=300,
                cwd=package_root(),
                env=child_env(Path(root), "cuda"),
            )
        line = next((s for s in proc.stdout.splitlines() if s.startswith("RESULT ")), None)
        results[shape] = json.loads(line[7:]) if line else {"error": proc.stderr[-1500:]}
        print(shape, json.dumps(results[shape]), flush=True)
    (args.out / "builds.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
