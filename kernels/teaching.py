"""The seed's teaching kernel, as written: one program per row, BLOCK_SIZE = next_pow2(N).

Lanes >= N load -inf so they change neither the max nor the sum; max and sum reduce in fp32 and the
result is stored in the input dtype. Its limit is the seed's: one row must fit in one program
(BLOCK_SIZE <= 65536), and the row offset `row * stride` is 32-bit, as written.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._common import (
    INT32_MAX,
    NUM_WARPS_ALLOWED,
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
TUNABLES = {"num_warps": f"warps per program, one of {NUM_WARPS_ALLOWED}; default 8 if BLOCK_SIZE >= 2048 else 4"}


@triton.jit
def row_softmax_kernel(
    output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols: tl.constexpr, BLOCK_SIZE: tl.constexpr
):
    # one row per program: read N + write N elements
    row = tl.program_id(axis=0)
    offsets = tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_cols
    values = tl.load(input_ptr + row * input_row_stride + offsets, mask=mask, other=-float("inf")).to(tl.float32)
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
    }


def plan(n_rows: int, n_cols: int, dtype: torch.dtype, **tunables: int) -> LaunchPlan:
    """Grid (R,), BLOCK_SIZE = next_pow2(N), num_warps = 8 if BLOCK_SIZE >= 2048 else 4 unless given."""
    check_tunables(NAME, tunables, TUNABLES)
    if not 1 <= n_cols <= MAX_N:
        raise ValueError(
            f"{NAME}: N={n_cols} is outside this variant's range; allowed: 1 <= N <= {MAX_N} "
            "(one row per program; use 'online' for wider rows)"
        )
    block_size = next_power_of_2(n_cols)
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
        constexprs={"n_cols": n_cols, "BLOCK_SIZE": block_size},
        scalar_args={"input_row_stride": n_cols, "output_row_stride": n_cols},
        tunables={"num_warps": num_warps},
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
    launch_kernel(
        row_softmax_kernel,
        launch.grid,
        (output, rows, rows.stride(0), output.stride(0)),
        launch.constexprs,
        launch.num_warps,
    )
    return output.view(x.shape)
