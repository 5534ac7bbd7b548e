"""The seed's teaching kernel: one program per row, BLOCK_SIZE = next_pow2(N).

Lanes >= N load -inf so they change neither the max nor the sum; max and sum reduce in fp32 and the
result is stored in the input dtype. Its limit is the seed's: one row must fit in one program
(BLOCK_SIZE <= 65536), and the row offset `row * stride` is 32-bit, as written. Two changes since the seed
(issue 37): fp32 rows take kernels/exactexp.py's exp and division (within an ULP; fast_exp=1 keeps tl.exp), and
rows that do not start 16-byte aligned (N x itemsize % 16 != 0) can be read through a window from the 16-byte
boundary at or below the row start (`window=1`), so the body is whole-vector loads and stores and only the row's
first and last vector take one predicated scalar step; off by default, as it measured slower on the H200.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from . import exactexp
from ._common import (
    INT32_MAX,
    NUM_WARPS_ALLOWED,
    VECTOR_BYTES,
    cached_plans,
    check_int_choice,
    check_tunables,
    next_power_of_2,
    prepare_launch,
)
from ._common import launch as launch_kernel
from .plan import LaunchPlan

NAME = "teaching"
MAX_N = 65536
TUNABLES = {
    "num_warps": f"warps per program, one of {NUM_WARPS_ALLOWED}; default 8 if BLOCK_SIZE >= 2048 else 4",
    "fast_exp": exactexp.FAST_EXP_TUNABLE,
    "window": "1: read a row through a window starting at the 16-byte boundary at or below it (vector loads and "
    "stores of the row's body, its first and last vector in one predicated step; BLOCK_SIZE = next_pow2(N + 16 "
    "bytes of elements - 1)), 0: from the row start; default 0 (on the H200 the window was slower at every "
    "misaligned shape measured, N = 257 to 4097 in all dtypes: experiments/2026-12-04-frontier-gpu); rows that are "
    "16-byte aligned ignore it; the window must fit 65536 lanes",
}


@triton.jit
def _probabilities(values, row_max, total, EXACT: tl.constexpr):
    """exp(values - row_max) / total as the kernel computes it (fp32 EXACT: kernels/exactexp.py)."""
    if EXACT:
        return exactexp.normalize(exactexp.exp_diff(values, row_max), total)
    return tl.exp(values - row_max) / total


@triton.jit
def row_softmax_kernel(
    output_ptr,
    input_ptr,
    input_row_stride,
    output_row_stride,
    n_cols: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    EXACT: tl.constexpr,
    ALIGN: tl.constexpr,
):
    # one row per program: read N + write N elements
    row = tl.program_id(axis=0)
    offsets = tl.arange(0, BLOCK_SIZE)
    if ALIGN > 1:  # rows not 16-byte aligned: an aligned window (output rows share the input's stride)
        start = row * input_row_stride
        base = start // ALIGN * ALIGN  # the 16-byte boundary at or below the row start
        shift = start - base
        limit = (shift + n_cols + ALIGN - 1) // ALIGN * ALIGN  # whole vectors, never past the last one's segment
        raw = tl.load(input_ptr + base + offsets, mask=offsets < limit, other=-float("inf"))
        values = tl.where((offsets >= shift) & (offsets < shift + n_cols), raw.to(tl.float32), -float("inf"))
        row_max = tl.max(values, axis=0)
        if EXACT:
            total = tl.sum(exactexp.exp_diff(values, row_max), axis=0)
        else:
            total = tl.sum(tl.exp(values - row_max), axis=0)
        tail = (shift + n_cols) // ALIGN * ALIGN
        probabilities = _probabilities(values, row_max, total, EXACT)
        tl.store(output_ptr + base + offsets, probabilities, mask=(offsets >= ALIGN) & (offsets < tail))  # body
        edge = tl.arange(0, 2 * ALIGN)  # the row's first and last vector, exact, in one predicated step
        edge = tl.where(edge < ALIGN, edge, tail + edge - ALIGN)
        edge_mask = (edge >= shift) & (edge < shift + n_cols)
        edge_values = tl.load(input_ptr + base + edge, mask=edge_mask, other=-float("inf")).to(tl.float32)
        tl.store(output_ptr + base + edge, _probabilities(edge_values, row_max, total, EXACT), mask=edge_mask)
    else:
        mask = offsets < n_cols
        values = tl.load(input_ptr + row * input_row_stride + offsets, mask=mask, other=-float("inf")).to(tl.float32)
        if EXACT:  # fp32: exp and division to within an ULP (kernels/exactexp.py)
            numerators = exactexp.exp_diff(values, tl.max(values, axis=0))
            probabilities = exactexp.normalize(numerators, tl.sum(numerators, axis=0))
        else:
            values = values - tl.max(values, axis=0)
            numerators = tl.exp(values)
            probabilities = numerators / tl.sum(numerators, axis=0)
        tl.store(output_ptr + row * output_row_stride + offsets, probabilities, mask=mask)


def signature(dtype: torch.dtype) -> dict[str, str]:
    """Kernel argument types for offline compilation (Triton type strings)."""
    ptr = "*" + {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}[dtype]
    return {
        "output_ptr": ptr,
        "input_ptr": ptr,
        "input_row_stride": "i32",
        "output_row_stride": "i32",
        "n_cols": "constexpr",
        "BLOCK_SIZE": "constexpr",
        "EXACT": "constexpr",
        "ALIGN": "constexpr",
    }


def plan(n_rows: int, n_cols: int, dtype: torch.dtype, **tunables: int) -> LaunchPlan:
    """Grid (R,), BLOCK_SIZE = next_pow2(N) (with a window: next_pow2(N + ALIGN - 1), ALIGN = 16 bytes of
    elements), num_warps = 8 if BLOCK_SIZE >= 2048 else 4 unless given."""
    check_tunables(NAME, tunables, TUNABLES)
    if not 1 <= n_cols <= MAX_N:
        raise ValueError(
            f"{NAME}: N={n_cols} is outside this variant's range; allowed: 1 <= N <= {MAX_N} "
            "(one row per program; use 'online' for wider rows)"
        )
    align = VECTOR_BYTES // dtype.itemsize
    fits = next_power_of_2(n_cols + align - 1) <= MAX_N
    window = check_int_choice(NAME, "window", tunables.get("window", 0), (0, 1)) and n_cols % align != 0
    if window and not fits:
        raise ValueError(
            f"{NAME}: window=1 at N={n_cols} needs {n_cols + align - 1} lanes; allowed: window=0 (or N <= "
            f"{MAX_N - align + 1})"
        )
    block_size = next_power_of_2(n_cols + align - 1 if window else n_cols)
    fast_exp = exactexp.fast_exp_choice(NAME, tunables)
    num_warps = check_int_choice(
        NAME, "num_warps", tunables.get("num_warps", 8 if block_size >= 2048 else 4), NUM_WARPS_ALLOWED
    )
    return LaunchPlan(
        variant=NAME,
        kernel_name="row_softmax_kernel",
        n_rows=n_rows,
        n_cols=n_cols,
        dtype=dtype,
        grid=(n_rows,),
        num_warps=num_warps,
        num_stages=3,
        tile_width=block_size,
        rows_per_program=1,
        constexprs={
            "n_cols": n_cols,
            "BLOCK_SIZE": block_size,
            "EXACT": exactexp.exact_constexpr(dtype, fast_exp),
            "ALIGN": align if window else 1,
        },
        scalar_args={"input_row_stride": n_cols, "output_row_stride": n_cols},
        tunables={"num_warps": num_warps, **exactexp.fast_exp_tunables(fast_exp), **({"window": 1} if window else {})},
    )


_plans = cached_plans(plan)


def softmax_teaching(x: torch.Tensor, **tunables: int) -> torch.Tensor:
    """Softmax over the last dim with the teaching kernel (tunable: num_warps)."""
    rows, launch, output = prepare_launch(x, NAME, MAX_N, _plans, tunables)
    n_rows, n_cols = rows.shape
    if rows.numel() == 0:
        return output.view(x.shape)
    if (n_rows - 1) * max(rows.stride(0), n_cols) + n_cols > INT32_MAX:
        raise ValueError(
            f"{NAME}: R={n_rows} rows of stride {rows.stride(0)} overflow the kernel's 32-bit row "
            "offset (as written in the seed); allowed: (R-1)*stride + N < 2**31; "
            "use 'online', 'multirow' or 'persistent' (64-bit offsets)"
        )
    constexprs = launch.constexprs
    if constexprs["ALIGN"] > 1 and rows.stride(0) != output.stride(0):  # the window needs one shift for both
        constexprs = {**constexprs, "ALIGN": 1}
    launch_kernel(
        row_softmax_kernel, launch.grid, (output, rows, rows.stride(0), output.stride(0)), constexprs, launch.num_warps
    )
    return output.view(x.shape)
