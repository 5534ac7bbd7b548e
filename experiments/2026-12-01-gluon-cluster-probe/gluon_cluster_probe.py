"""Can Gluon exchange a row's partials across a 2-CTA cluster? Offline sm_90 compiles (no GPU needed).

PYTHONPATH=. python3 experiments/2026-12-01-gluon-cluster-probe/gluon_cluster_probe.py
(prints, per attempt, the Triton version and the compile's outcome)

Two attempts at the cluster softmax of issue 13 (num_ctas=2, a layout with a CGA basis splitting the row):
  reduce  - gl.max / gl.sum over the axis the CTAs split: ReduceOpToLLVM asserts `isReduceWithinCTA`;
  convert - reduce inside each CTA to a [2] partial, then gl.convert_layout to a layout replicated in both
            CTAs (the distributed-shared-memory exchange): its lowering emits nvvm.mapa with an addrspace(3)
            result, which the NVVM dialect rejects (LLVM moved mapa.shared.cluster to addrspace(7)).
Each attempt compiles in a child process (the first aborts the interpreter). Results are in
docs/kernel-changes.md section 9.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

REDUCE = """
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

@gluon.jit
def kernel(out_ptr, in_ptr, BLOCK: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([8], [32], [8], [0], [[1]])
    offs = gl.arange(0, BLOCK, layout=layout)
    x = gl.load(in_ptr + offs).to(gl.float32)
    e = gl.exp(x - gl.max(x, axis=0))
    gl.store(out_ptr + offs, (e / gl.sum(e, axis=0)).to(gl.float16))
"""

CONVERT = """
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

@gluon.jit
def kernel(out_ptr, in_ptr, BLOCK: gl.constexpr):
    HALF: gl.constexpr = BLOCK // 2
    layout: gl.constexpr = gl.BlockedLayout([1, 8], [1, 32], [1, 8], [1, 0], [[1, 0]])
    everywhere: gl.constexpr = gl.BlockedLayout([2], [32], [8], [0], [[0]])
    halves = gl.arange(0, 2, layout=gl.SliceLayout(1, layout))
    cols = gl.arange(0, HALF, layout=gl.SliceLayout(0, layout))
    offs = halves[:, None] * HALF + cols[None, :]
    x = gl.load(in_ptr + offs).to(gl.float32)
    m = gl.max(gl.convert_layout(gl.max(x, axis=1), everywhere), axis=0)
    e = gl.exp(x - m)
    s = gl.sum(gl.convert_layout(gl.sum(e, axis=1), everywhere), axis=0)
    gl.store(out_ptr + offs, (e / s).to(gl.float16))
"""

COMPILE = """
import re, triton
from triton.backends.compiler import GPUTarget
from triton.experimental.gluon._runtime import GluonASTSource
aligned = {(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]]}
src = GluonASTSource(kernel, {"out_ptr": "*fp16", "in_ptr": "*fp16", "BLOCK": "constexpr"},
                     constexprs={"BLOCK": 32768}, attrs=aligned)
k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 8, "num_ctas": 2})
print("compiled; mapa:", len(re.findall("mapa", k.asm["ptx"])))
"""


def main() -> int:
    import triton

    for name, body in (("reduce", REDUCE), ("convert", CONVERT)):
        with tempfile.TemporaryDirectory() as folder:  # @gluon.jit needs its source in a file
            script = Path(folder) / f"cluster_{name}.py"
            script.write_text(body + COMPILE)
            done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600)
        text = (done.stdout + done.stderr).splitlines()
        found = [line.strip() for line in text if "compiled;" in line or "Assertion" in line or "error: 'nvvm" in line]
        outcome = found[0][:300] if found else "failed: " + (text[-1] if text else "")
        print(f"Triton {triton.__version__} {name}: {outcome}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
