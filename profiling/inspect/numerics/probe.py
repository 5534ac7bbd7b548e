"""A numerics-only probe kernel: the teaching kernel's math with `tl.exp`, `tl.exp2(x * log2(e))`, or all of it
in float64 (`probe_fp64`: exp, sum and division in double precision, rounded once at the store).

Not a registered variant (kernels/ and its registry are untouched) and not for timing: it exists so the
numerics page and `python -m profiling numerics --variants probe_exp,probe_exp2` can show what the exp
implementation alone changes. Both probes are the teaching kernel as the seed wrote it (fp32: teaching with
fast_exp=1; its default fp32 path is kernels/exactexp.py's exp and division within an ULP) (one program per row,
BLOCK_SIZE = next_pow2(N), -inf masked lanes, fp32 max/sum, store in the input dtype); only the
exponential differs; `probe_fp64` is the exact end of the scale (libdevice's double exp, IEEE division) and,
timed beside `probe_exp` (`experiments/2026-12-01-exact-softmax-cost/exact_softmax_cost.py`), what exactness costs.

Where they run matters. On the CPU interpreter `tl.exp` is numpy's float32 exp (close to correctly
rounded) and `tl.exp2(x * log2e)` adds the rounding of the product. On NVIDIA GPUs Triton already lowers an
fp32 `tl.exp` to `mul.f32` by log2(e) + `ex2.approx.f32`, and `tl.exp2` to the same multiply +
`ex2.approx.ftz.f32` (subnormal results flushed to zero); the division is `div.full.f32` (approximate),
and a bf16 store rounds to nearest (`cvt.rn.bf16.f32`) where the interpreter truncates (see
`INTERPRETER_BF16_NOTE`). `exp_instructions()` compiles the probes offline and lists those instructions, so
this is checked, not assumed (Triton 3.7.1, sm_90). The page says which platform its numbers come from.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import torch
import triton
import triton.language as tl

from blockscope import paths

INTERPRETER_BF16_NOTE = (
    "the Triton CPU interpreter converts float32 to bf16 by truncation (round toward zero) and mangles "
    "subnormal results, where a GPU rounds to nearest (cvt.rn.bf16.f32): Triton kernels' bf16 ULP errors on "
    "the interpreter overstate the GPU's"
)
EXP, EXP2, FP64 = 0, 1, 2  # the probe's MODE: tl.exp, tl.exp2 with a log2(e) prescale, everything in float64
PROBES: dict[str, int] = {"probe_exp": EXP, "probe_exp2": EXP2, "probe_fp64": FP64}
MAX_N = 65536
LOG2E = 1.4426950408889634  # the prescale inside the kernel (a literal there: a jit function reads no globals)


@triton.jit
def _probe_softmax_kernel(
    output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols, BLOCK_SIZE: tl.constexpr, MODE: tl.constexpr
):
    row = tl.program_id(axis=0).to(tl.int64)
    offsets = tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_cols
    values = tl.load(input_ptr + row * input_row_stride + offsets, mask=mask, other=-float("inf"))  # read x
    values = values.to(tl.float64) if MODE == 2 else values.to(tl.float32)
    values = values - tl.max(values, axis=0)
    if MODE == 1:
        numerators = tl.exp2(values * 1.4426950408889634)
    else:
        numerators = tl.exp(values)  # float64 in MODE 2: libdevice's double exp
    probabilities = numerators / tl.sum(numerators, axis=0)
    tl.store(output_ptr + row * output_row_stride + offsets, probabilities, mask=mask)  # write y


def probe_softmax(x: torch.Tensor, mode: int) -> torch.Tensor:
    """Softmax over the last dim of a 2-D fp16/bf16/fp32 tensor with the probe kernel (N <= 65536); `mode` one
    of EXP, EXP2, FP64 (a bool reads as EXP / EXP2)."""
    mode = int(mode)
    if mode not in (EXP, EXP2, FP64):
        raise ValueError(f"probe: mode {mode!r}; allowed: {EXP} (tl.exp), {EXP2} (tl.exp2), {FP64} (float64)")
    if x.dim() != 2 or x.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(f"probe: got a {x.dim()}-d {x.dtype} tensor; allowed: 2-d fp16, bf16 or fp32")
    n_rows, n_cols = x.shape
    if not 1 <= n_cols <= MAX_N:
        raise ValueError(f"probe: N={n_cols} is outside its range; allowed: 1 <= N <= {MAX_N}")
    x = x.contiguous()
    output = torch.empty_like(x)
    if n_rows == 0:
        return output
    block_size = triton.next_power_of_2(n_cols)
    _probe_softmax_kernel[(n_rows,)](
        output,
        x,
        x.stride(0),
        output.stride(0),
        n_cols,
        BLOCK_SIZE=block_size,
        MODE=mode,
        num_warps=8 if block_size >= 2048 else 4,
    )
    return output


_INSTRUCTION = re.compile(
    r"\b(ex2\.[a-z0-9.]+|div\.[a-z0-9.]+|rcp\.[a-z0-9.]+|mul\.[a-z0-9.]*f32|"
    r"cvt\.[a-z0-9.]*\.(?:bf16|f16)\.f32)"
)


def _ptx_instructions(mode: int, capability: int, pointer: str = "fp32") -> list[str]:
    """Distinct exp / multiply / divide / convert PTX instructions of the probe with `pointer` element type
    (compiled here, no GPU needed)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    signature = {
        "output_ptr": f"*{pointer}",
        "input_ptr": f"*{pointer}",
        "input_row_stride": "i32",
        "output_row_stride": "i32",
        "n_cols": "i32",
        "BLOCK_SIZE": "constexpr",
        "MODE": "constexpr",
    }
    source = ASTSource(_probe_softmax_kernel, signature, constexprs={"BLOCK_SIZE": 1024, "MODE": int(mode)})
    compiled = triton.compile(source, target=GPUTarget("cuda", capability, 32), options={"num_warps": 4})
    return sorted(set(_INSTRUCTION.findall(compiled.asm["ptx"])))


def exp_instructions(arch: str = "sm_90", timeout_s: float = 120.0) -> dict[str, list[str]]:
    """{probe name: its exp / mul / div PTX instructions (fp32 probe), 'bf16 store': the probe_exp kernel's
    fp32 -> bf16 conversion} for `arch` ('sm_90'), compiled offline.

    Runs in a worker process without TRITON_INTERPRET (Triton cannot compile under the interpreter);
    RuntimeError with the worker's last line when the compile fails."""
    match = re.fullmatch(r"sm_(\d+)", arch)
    if not match:
        raise ValueError(f"arch {arch!r} is malformed; allowed: sm_XY, e.g. sm_90")
    root = paths.IMPORT_ROOT
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH", "")) if p)
    done = subprocess.run(
        [sys.executable, "-m", "blockscope.profiling.inspect.numerics.probe", match.group(1)],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=timeout_s,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"offline compile of the exp probes for {arch} failed: {last[:300]}")
    return json.loads(lines[-1])


if __name__ == "__main__":  # worker: python -m blockscope.profiling.inspect.numerics.probe 90
    found = {name: _ptx_instructions(use, int(sys.argv[1])) for name, use in PROBES.items()}
    found["bf16 store"] = [i for i in _ptx_instructions(EXP, int(sys.argv[1]), "bf16") if i.startswith("cvt")]
    print(json.dumps(found))
