"""Several rows per program for small N: a [ROWS, BLOCK_SIZE] tile, so N=128 is not launch bound."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from . import exactexp
from ._common import (
    NUM_WARPS_ALLOWED,
    cached_plans,
    check_int_choice,
    check_power_of_2,
    check_tunables,
    launch_constexprs,
    next_power_of_2,
    prepare_launch,
    vector_elements,
)
from ._common import launch as launch_kernel
from .plan import LaunchPlan

NAME = "multirow"
MAX_N = 16384
MAX_TILE_ELEMENTS = 65536  # ROWS * BLOCK_SIZE lanes held by one program
TARGET_TILE_ELEMENTS = 2048  # default: ROWS = 2048 // BLOCK_SIZE (at least 1)
TUNABLES = {
    "num_warps": f"warps per program, one of {NUM_WARPS_ALLOWED}; default 4, 8 for tiles over 8192 lanes",
    "rows_per_program": (
        "rows in one program's tile, a power of two from 1 to 256; default 2048 // BLOCK_SIZE, capped to 1..256"
    ),
    "fast_exp": exactexp.FAST_EXP_TUNABLE,
}


@triton.jit
def row_softmax_multirow_kernel(
    output_ptr,
    input_ptr,
    input_row_stride,
    output_row_stride,
    n_rows,
    n_cols,
    BLOCK_SIZE: tl.constexpr,
    ROWS: tl.constexpr,
    VEC: tl.constexpr,
    EXACT: tl.constexpr,
):
    # ROWS rows per program: read ROWS*N + write ROWS*N elements
    if VEC > 1:  # strides and N are multiples of VEC (16 bytes): rounding shows Triton the loads are whole vectors
        input_row_stride = input_row_stride // VEC * VEC
        output_row_stride = output_row_stride // VEC * VEC
        n_cols = n_cols // VEC * VEC
    rows = tl.program_id(axis=0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = (rows < n_rows)[:, None] & (cols < n_cols)[None, :]
    rows = rows.to(tl.int64)
    values = tl.load(input_ptr + rows[:, None] * input_row_stride + cols[None, :], mask=mask, other=-float("inf")).to(
        tl.float32
    )
    if EXACT:  # fp32: exp and division to within an ULP (kernels/exactexp.py)
        numerators = exactexp.exp_diff(values, tl.max(values, axis=1)[:, None])
        probabilities = exactexp.normalize(numerators, tl.sum(numerators, axis=1)[:, None])
    else:
        numerators = tl.exp(values - tl.max(values, axis=1)[:, None])
        probabilities = numerators * (1.0 / tl.sum(numerators, axis=1))[:, None]  # one reciprocal per row
    tl.store(output_ptr + rows[:, None] * output_row_stride + cols[None, :], probabilities, mask=mask)


def signature(dtype: torch.dtype) -> dict[str, str]:
    """Kernel argument types for offline compilation (Triton type strings)."""
    ptr = "*" + {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}[dtype]
    return {
        "output_ptr": ptr,
        "input_ptr": ptr,
        "input_row_stride": "i32",
        "output_row_stride": "i32",
        "n_rows": "i32",
        "n_cols": "i32",
        "BLOCK_SIZE": "constexpr",
        "ROWS": "constexpr",
        "VEC": "constexpr",
        "EXACT": "constexpr",
    }


def plan(n_rows: int, n_cols: int, dtype: torch.dtype, **tunables: int) -> LaunchPlan:
    """Grid (cdiv(R, ROWS),) over [ROWS, next_pow2(N)] tiles."""
    check_tunables(NAME, tunables, TUNABLES)
    if not 1 <= n_cols <= MAX_N:
        raise ValueError(f"{NAME}: N={n_cols} is outside this variant's range; allowed: 1 <= N <= {MAX_N}")
    block_size = next_power_of_2(n_cols)
    default_rows = min(256, max(1, TARGET_TILE_ELEMENTS // block_size))
    rows_per_program = check_power_of_2(
        NAME, "rows_per_program", tunables.get("rows_per_program", default_rows), 1, 256
    )
    if rows_per_program * block_size > MAX_TILE_ELEMENTS:
        raise ValueError(
            f"{NAME}: rows_per_program={rows_per_program} x BLOCK_SIZE={block_size} is over "
            f"{MAX_TILE_ELEMENTS} lanes; allowed: rows_per_program <= {MAX_TILE_ELEMENTS // block_size}"
        )
    tile = rows_per_program * block_size
    fast_exp = exactexp.fast_exp_choice(NAME, tunables)
    num_warps = check_int_choice(
        NAME, "num_warps", tunables.get("num_warps", 8 if tile > 8192 else 4), NUM_WARPS_ALLOWED
    )
    return LaunchPlan(
        variant=NAME,
        kernel_name="row_softmax_multirow_kernel",
        n_rows=n_rows,
        n_cols=n_cols,
        dtype=dtype,
        grid=(triton.cdiv(n_rows, rows_per_program),),
        num_warps=num_warps,
        num_stages=3,
        tile_width=block_size,
        rows_per_program=rows_per_program,
        constexprs={
            "BLOCK_SIZE": block_size,
            "ROWS": rows_per_program,
            "VEC": vector_elements(dtype, n_cols),
            "EXACT": exactexp.exact_constexpr(dtype, fast_exp),
        },
        scalar_args={"input_row_stride": n_cols, "output_row_stride": n_cols, "n_rows": n_rows, "n_cols": n_cols},
        tunables={
            "num_warps": num_warps,
            "rows_per_program": rows_per_program,
            **exactexp.fast_exp_tunables(fast_exp),
        },
    )


_plans = cached_plans(plan)


def softmax_multirow(x: torch.Tensor, **tunables: int) -> torch.Tensor:
    """Softmax over the last dim, ROWS rows per program (tunables: num_warps, rows_per_program)."""
    rows, launch, output = prepare_launch(x, NAME, MAX_N, _plans, tunables)
    n_rows, n_cols = rows.shape
    if rows.numel() == 0:
        return output.view(x.shape)
    launch_kernel(
        row_softmax_multirow_kernel,
        launch.grid,
        (output, rows, rows.stride(0), output.stride(0), n_rows, n_cols),
        launch_constexprs(launch.constexprs, rows, output),
        launch.num_warps,
    )
    return output.view(x.shape)
