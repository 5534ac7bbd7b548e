"""Looped online softmax for rows of any width: a running max and rescaled sum over TILE-wide steps.

Pass 1 keeps per-lane running max m and sum s (s <- s * exp(m_old - m_new) + exp(x - m_new)), then
reduces them; pass 2 re-reads the row and writes exp(x - m) / s. Row offsets are 64-bit, so
R * N > 2**31 is safe.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from . import exactexp
from ._common import (
    INT32_MAX,
    NUM_WARPS_ALLOWED,
    cached_plans,
    check_int_choice,
    check_int_range,
    check_power_of_2,
    check_tunables,
    next_power_of_2,
    prepare_launch,
)
from ._common import launch as launch_kernel
from .plan import LaunchPlan

NAME = "online"
MAX_N = INT32_MAX - 65536  # n_cols and the loop index are 32-bit
MIN_TILE, MAX_TILE, DEFAULT_MAX_TILE = 16, 65536, 4096
TUNABLES = {
    "num_warps": f"warps per program, one of {NUM_WARPS_ALLOWED}; default 8 if TILE >= 2048 else 4",
    "tile": f"lanes per loop step, a power of two from {MIN_TILE} to {MAX_TILE}; default min(next_pow2(N), 4096)",
    "num_stages": "software-pipelining stages of the loops, 1 to 4; default 1",
}


@triton.jit
def row_softmax_online_kernel(
    output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols, TILE: tl.constexpr, NUM_STAGES: tl.constexpr
):
    # pass 1 reads N, pass 2 reads N + writes N elements
    row = tl.program_id(axis=0).to(tl.int64)
    input_row = input_ptr + row * input_row_stride
    output_row = output_ptr + row * output_row_stride
    cols = tl.arange(0, TILE)
    running_max = tl.full([TILE], -float("inf"), tl.float32)
    running_sum = tl.zeros([TILE], tl.float32)
    for start in tl.range(0, n_cols, TILE, num_stages=NUM_STAGES):
        offsets = start + cols
        values = tl.load(input_row + offsets, mask=offsets < n_cols, other=-float("inf")).to(tl.float32)
        new_max = tl.maximum(running_max, values)
        shift = tl.where(new_max == -float("inf"), 0.0, new_max)  # all -inf so far: keep the sum at 0
        if input_ptr.dtype.element_ty == tl.float32:  # exp to within an ULP (kernels/exactexp.py)
            running_sum = running_sum * exactexp.exp_diff(running_max, shift) + exactexp.exp_diff(values, shift)
        else:
            running_sum = running_sum * tl.exp(running_max - shift) + tl.exp(values - shift)
        running_max = new_max
    row_max = tl.max(running_max, axis=0)
    row_shift = tl.where(row_max == -float("inf"), 0.0, row_max)
    if input_ptr.dtype.element_ty == tl.float32:
        row_sum = tl.sum(running_sum * exactexp.exp_diff(running_max, row_shift), axis=0)
    else:
        inverse_sum = 1.0 / tl.sum(running_sum * tl.exp(running_max - row_shift), axis=0)
    for start in tl.range(0, n_cols, TILE, num_stages=NUM_STAGES):
        offsets = start + cols
        mask = offsets < n_cols
        values = tl.load(input_row + offsets, mask=mask, other=-float("inf")).to(tl.float32)
        if input_ptr.dtype.element_ty == tl.float32:
            tl.store(output_row + offsets, exactexp.normalize(exactexp.exp_diff(values, row_max), row_sum), mask=mask)
        else:
            tl.store(output_row + offsets, tl.exp(values - row_max) * inverse_sum, mask=mask)


def signature(dtype: torch.dtype) -> dict[str, str]:
    """Kernel argument types for offline compilation (Triton type strings)."""
    ptr = "*" + {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}[dtype]
    return {
        "output_ptr": ptr,
        "input_ptr": ptr,
        "input_row_stride": "i32",
        "output_row_stride": "i32",
        "n_cols": "i32",
        "TILE": "constexpr",
        "NUM_STAGES": "constexpr",
    }


def plan(n_rows: int, n_cols: int, dtype: torch.dtype, **tunables: int) -> LaunchPlan:
    """Grid (R,), each program loops over ceil(N / TILE) steps twice."""
    check_tunables(NAME, tunables, TUNABLES)
    if not 1 <= n_cols <= MAX_N:
        raise ValueError(f"{NAME}: N={n_cols} is outside this variant's range; allowed: 1 <= N <= {MAX_N}")
    tile = check_power_of_2(
        NAME,
        "tile",
        tunables.get("tile", max(MIN_TILE, min(next_power_of_2(n_cols), DEFAULT_MAX_TILE))),
        MIN_TILE,
        MAX_TILE,
    )
    num_warps = check_int_choice(
        NAME, "num_warps", tunables.get("num_warps", 8 if tile >= 2048 else 4), NUM_WARPS_ALLOWED
    )
    num_stages = check_int_range(NAME, "num_stages", tunables.get("num_stages", 1), 1, 4)
    return LaunchPlan(
        variant=NAME,
        kernel_name="row_softmax_online_kernel",
        n_rows=n_rows,
        n_cols=n_cols,
        dtype=dtype,
        grid=(n_rows,),
        num_warps=num_warps,
        num_stages=num_stages,
        tile_width=tile,
        rows_per_program=1,
        constexprs={"TILE": tile, "NUM_STAGES": num_stages},
        scalar_args={"input_row_stride": n_cols, "output_row_stride": n_cols, "n_cols": n_cols},
        tunables={"num_warps": num_warps, "tile": tile, "num_stages": num_stages},
    )


_plans = cached_plans(plan)


def softmax_online(x: torch.Tensor, **tunables: int) -> torch.Tensor:
    """Softmax over the last dim for any N (tunables: num_warps, tile, num_stages)."""
    rows, launch, output = prepare_launch(x, NAME, MAX_N, _plans, tunables)
    n_rows, n_cols = rows.shape
    if rows.numel() == 0:
        return output.view(x.shape)
    launch_kernel(
        row_softmax_online_kernel,
        launch.grid,
        (output, rows, rows.stride(0), output.stride(0), n_cols),
        launch.constexprs,
        launch.num_warps,
        launch.num_stages,
    )
    return output.view(x.shape)
