"""Tiny rows (N <= 64: MoE routers over 8-64 experts, many rows): each program owns ROWS consecutive rows and moves
them as one flat span of ROWS x N contiguous elements, so loads and stores are whole 16-byte vectors at any N.

A contiguous [R, N] input puts rows back to back: the program's span starts at pid x ROWS x N elements, which is
16-byte aligned whenever the input is (ROWS is a multiple of 16), and is loaded as one flat vector [ROWS x BLOCK]
(BLOCK = next_pow2(N); the flat vector's length, next_pow2(ROWS x N), equals ROWS x BLOCK). Where N is a power of two
the flat vector is the [ROWS, BLOCK] tile itself (a reshape): each thread's vector lies in one row, so up to 16 bytes
of row a thread reduces in registers and wider rows over a few neighbouring lanes. Other N rearrange the span into
the tile and back with two in-register gathers (tl.gather, position r x N + c <-> r x BLOCK + c), keeping the global
loads and stores flat and vectorized. The last vector of the input is loaded whole (never past its 16-byte segment:
lanes past the end are masked out of the softmax); stores are whole vectors up to the last multiple of 16 bytes and,
in the last program only, one predicated step for the rest.

Rows that are not back to back (a row stride other than N) take kernels/multirow.py's [ROWS, BLOCK] tile with the
same tunables. fp32: exp and division within an ULP (kernels/exactexp.py). 64-bit offsets.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from . import exactexp, multirow
from ._common import (
    NUM_WARPS_ALLOWED,
    VECTOR_BYTES,
    cached_plans,
    check_int_choice,
    check_power_of_2,
    check_tunables,
    next_power_of_2,
    prepare_launch,
)
from ._common import launch as launch_kernel
from .plan import LaunchPlan

NAME = "tinyrows"
MAX_N = 64
MIN_ROWS, MAX_ROWS = 16, 1024
TARGET_SPAN = 4096  # default: ROWS x BLOCK = 4096 elements per program (16 KB of fp32, 8 KB of 16-bit)
MAX_SPAN = 16384
TUNABLES = {
    "rows_per_program": f"rows in one program's span, a power of two from {MIN_ROWS} to {MAX_ROWS} with ROWS x "
    f"next_pow2(N) <= {MAX_SPAN}; default {TARGET_SPAN} // next_pow2(N)",
    "num_warps": f"warps per program, one of {NUM_WARPS_ALLOWED}; default 4",
    "fast_exp": exactexp.FAST_EXP_TUNABLE,
}


@triton.jit
def row_softmax_tinyrows_kernel(
    output_ptr,
    input_ptr,
    n_rows,
    N: tl.constexpr,
    BLOCK: tl.constexpr,
    ROWS: tl.constexpr,
    VEC: tl.constexpr,
    EXACT: tl.constexpr,
):
    # ROWS rows per program, back to back: read ROWS*N + write ROWS*N elements as flat 16-byte vectors
    SPAN: tl.constexpr = ROWS * BLOCK  # = next_pow2(ROWS * N)
    total = n_rows * N  # under 2**31 - 16 (the plan checks)
    loadable = (total + VEC - 1) // VEC * VEC  # the last vector whole: never past its 16-byte segment
    whole = total // VEC * VEC  # stores of whole vectors; the rest in the last program's predicated step
    base = tl.program_id(0).to(tl.int64) * (ROWS * N)
    flat = tl.arange(0, SPAN)
    mine = flat < ROWS * N
    values = tl.load(input_ptr + base + flat, mask=mine & (base + flat < loadable), other=-float("inf"))
    rows_in = tl.arange(0, ROWS)[:, None]
    cols = tl.arange(0, BLOCK)[None, :]
    if BLOCK == N:  # the span is the tile
        tile = tl.reshape(values, [ROWS, BLOCK]).to(tl.float32)
    else:  # position r * N + c of the span -> lane (r, c) of the tile; lanes c >= N: -inf
        gathered = tl.gather(values, tl.reshape(rows_in * N + tl.minimum(cols, N - 1), [SPAN]), 0)
        tile = tl.where(cols < N, tl.reshape(gathered, [ROWS, BLOCK]).to(tl.float32), -float("inf"))
    # lanes past the input (rows >= R) hold -inf: their softmax is NaN and never stored
    if EXACT:  # fp32: exp and division within an ULP (kernels/exactexp.py)
        numerators = exactexp.exp_diff(tile, tl.max(tile, axis=1)[:, None])
        probabilities = exactexp.normalize(numerators, tl.sum(numerators, axis=1)[:, None])
    else:
        numerators = tl.exp(tile - tl.max(tile, axis=1)[:, None])
        probabilities = numerators * (1.0 / tl.sum(numerators, axis=1))[:, None]  # one reciprocal per row
    result = tl.reshape(probabilities.to(output_ptr.dtype.element_ty), [SPAN])
    if BLOCK != N:  # lane (r, c) of the tile -> position r * N + c of the span
        result = tl.gather(result, tl.where(mine, flat // N * BLOCK + flat % N, 0), 0)
    tl.store(output_ptr + base + flat, result, mask=mine & (base + flat < whole))
    if base + ROWS * N > whole:  # the last program, where the input ends inside a vector: one predicated step
        tl.store(output_ptr + base + flat, result, mask=mine & (base + flat >= whole) & (base + flat < total))


def signature(dtype: torch.dtype) -> dict[str, str]:
    """Kernel argument types for offline compilation (Triton type strings)."""
    ptr = "*" + {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}[dtype]
    return {
        "output_ptr": ptr,
        "input_ptr": ptr,
        "n_rows": "i32",
        "N": "constexpr",
        "BLOCK": "constexpr",
        "ROWS": "constexpr",
        "VEC": "constexpr",
        "EXACT": "constexpr",
    }


def default_rows(n_cols: int) -> int:
    """TARGET_SPAN // next_pow2(N) rows per program (64 at N=64, 512 at N=8)."""
    return max(MIN_ROWS, min(MAX_ROWS, TARGET_SPAN // next_power_of_2(n_cols)))


def plan(n_rows: int, n_cols: int, dtype: torch.dtype, **tunables: int) -> LaunchPlan:
    """Grid (cdiv(R, ROWS),), each program a flat span of ROWS x N elements (rows back to back)."""
    check_tunables(NAME, tunables, TUNABLES)
    if not 1 <= n_cols <= MAX_N:
        raise ValueError(
            f"{NAME}: N={n_cols} is outside this variant's range; allowed: 1 <= N <= {MAX_N} (wider rows: "
            "'multirow' or 'warprows')"
        )
    block = next_power_of_2(n_cols)
    rows = check_power_of_2(NAME, "rows_per_program", tunables.get("rows_per_program", default_rows(n_cols)), 16, 1024)
    if rows * block > MAX_SPAN:
        raise ValueError(
            f"{NAME}: rows_per_program={rows} x BLOCK={block} is over {MAX_SPAN} elements; allowed: "
            f"rows_per_program <= {MAX_SPAN // block}"
        )
    num_warps = check_int_choice(NAME, "num_warps", tunables.get("num_warps", 4), NUM_WARPS_ALLOWED)
    fast_exp = exactexp.fast_exp_choice(NAME, tunables)
    if n_rows * n_cols > 2**31 - 16:
        raise ValueError(
            f"{NAME}: R x N = {n_rows * n_cols} elements; allowed: at most 2**31 - 16 (32-bit span offsets)"
        )
    return LaunchPlan(
        variant=NAME,
        kernel_name="row_softmax_tinyrows_kernel",
        n_rows=n_rows,
        n_cols=n_cols,
        dtype=dtype,
        grid=(triton.cdiv(n_rows, rows),),
        num_warps=num_warps,
        num_stages=1,
        tile_width=block,
        rows_per_program=rows,
        constexprs={
            "N": n_cols,
            "BLOCK": block,
            "ROWS": rows,
            "VEC": VECTOR_BYTES // dtype.itemsize,
            "EXACT": exactexp.exact_constexpr(dtype, fast_exp),
        },
        scalar_args={"n_rows": n_rows},
        tunables={"num_warps": num_warps, "rows_per_program": rows, **exactexp.fast_exp_tunables(fast_exp)},
    )


_plans = cached_plans(plan)


def softmax_tinyrows(x: torch.Tensor, **tunables: int) -> torch.Tensor:
    """Softmax over the last dim, ROWS back-to-back rows per program as one flat span (tunables: rows_per_program,
    num_warps, fast_exp); rows with a stride other than N go to multirow with the same tunables."""
    out = tunables.get("out")
    rows, launch, output = prepare_launch(x, NAME, MAX_N, _plans, tunables)
    n_rows, n_cols = rows.shape
    if rows.numel() == 0:
        return output.view(x.shape)
    if rows.stride(0) != n_cols or output.stride(0) != n_cols:  # not back to back: the [ROWS, BLOCK] tile
        chosen = dict(launch.tunables)
        chosen["rows_per_program"] = min(256, chosen["rows_per_program"])
        return multirow.softmax_multirow(x, **chosen, **({"out": out} if out is not None else {}))
    launch_kernel(row_softmax_tinyrows_kernel, launch.grid, (output, rows, n_rows), launch.constexprs, launch.num_warps)
    return output.view(x.shape)
