"""One program per row for rows that do not start 16-byte aligned (N x itemsize % 16 != 0: vocabulary widths,
2^k +- 1; issue 37). A row is read from the 16-byte boundary at or below its start: the vectors it fills are
loaded and stored whole (ld/st.global.v4), its partial vectors at both ends element by element, in one predicated
step whose lanes interleave the two ends (so Triton gives each thread one element, not a replicated vector). The
tile is BLOCK lanes, BLOCK = next_pow2(N), or BLOCK = next_pow2(N) / 2 plus REST lanes where N is just above a power
of two (REST = next_pow2(N + VEC - 1 - BLOCK) <= BLOCK / 4): 4104 lanes at N = 4097 instead of 8192.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from . import exactexp
from ._common import (
    NUM_WARPS_ALLOWED,
    VECTOR_BYTES,
    cached_plans,
    check_int_choice,
    check_tunables,
    next_power_of_2,
    prepare_launch,
    vector_elements,
)
from ._common import launch as launch_kernel
from .plan import LaunchPlan
from .vectors import partial_ends, whole_vectors

NAME = "vecrows"
MAX_N = 65536
TUNABLES = {
    "num_warps": f"warps per program, one of {NUM_WARPS_ALLOWED}; default 4 up to 2048 lanes, 8 up to 8192, else 16",
    "fast_exp": exactexp.FAST_EXP_TUNABLE,
}


@triton.jit
def _exp_sum(values, row_max, EXACT: tl.constexpr):
    """exp(values - row_max) and its sum (fp32 EXACT: kernels/exactexp.py's exp)."""
    if EXACT:
        e = exactexp.exp_diff(values, row_max)
    else:
        e = tl.exp(values - row_max)
    return e, tl.sum(e)


@triton.jit
def _scaled(e, total, EXACT: tl.constexpr):
    """e / total (fp32 EXACT: kernels/exactexp.py's division)."""
    if EXACT:
        y = exactexp.normalize(e, total)
    else:
        y = e * (1.0 / total)
    return y


@triton.jit
def row_softmax_vecrows_kernel(
    output_ptr,
    input_ptr,
    input_row_stride,
    output_row_stride,
    n_cols,
    BLOCK: tl.constexpr,
    REST: tl.constexpr,
    VEC: tl.constexpr,
    EXACT: tl.constexpr,
):
    # one row per program: read N + write N elements; VEC > 1: both rows share a stride (the launcher checks), so
    # one shift from the 16-byte boundary serves the load and the store
    row = tl.program_id(axis=0).to(tl.int64)
    start = row * input_row_stride
    base = start // VEC * VEC
    out_base = row * output_row_stride // VEC * VEC
    head = (start - base).to(tl.int32)
    n = head + n_cols
    lanes = tl.arange(0, BLOCK)
    body = whole_vectors(lanes, head, n, VEC)  # the row's whole vectors
    ends, ends_ok = partial_ends(head, n, VEC)  # its partial vectors at both ends, one element per thread
    x = tl.load(input_ptr + base + lanes, mask=body, other=-float("inf")).to(tl.float32)
    x_ends = tl.load(input_ptr + base + ends, mask=ends_ok, other=-float("inf")).to(tl.float32)
    row_max = tl.maximum(tl.max(x), tl.max(x_ends))
    if REST > 0:  # lanes [BLOCK, BLOCK + REST): the rest of a row just over a power of two
        rest = BLOCK + tl.arange(0, REST)
        rest_body = whole_vectors(rest, head, n, VEC)
        x_rest = tl.load(input_ptr + base + rest, mask=rest_body, other=-float("inf")).to(tl.float32)
        row_max = tl.maximum(row_max, tl.max(x_rest))
    e, total = _exp_sum(x, row_max, EXACT)
    e_ends, total_ends = _exp_sum(x_ends, row_max, EXACT)
    total += total_ends
    if REST > 0:
        e_rest, total_rest = _exp_sum(x_rest, row_max, EXACT)
        total += total_rest
        tl.store(output_ptr + out_base + rest, _scaled(e_rest, total, EXACT), mask=rest_body)
    tl.store(output_ptr + out_base + lanes, _scaled(e, total, EXACT), mask=body)
    tl.store(output_ptr + out_base + ends, _scaled(e_ends, total, EXACT), mask=ends_ok)


def signature(dtype: torch.dtype) -> dict[str, str]:
    """Kernel argument types for offline compilation (Triton type strings)."""
    ptr = "*" + {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}[dtype]
    return {
        "output_ptr": ptr,
        "input_ptr": ptr,
        "input_row_stride": "i32",
        "output_row_stride": "i32",
        "n_cols": "i32",
        "BLOCK": "constexpr",
        "REST": "constexpr",
        "VEC": "constexpr",
        "EXACT": "constexpr",
    }


def misaligned(n_cols: int, dtype: torch.dtype) -> bool:
    """Whether rows of N in `dtype` do not start 16-byte aligned (elsewhere vecrows is teaching's tile with the
    same whole-vector loads: the default sweep leaves those N out)."""
    return vector_elements(dtype, n_cols) == 1


def tiles(n_cols: int, vec: int) -> tuple[int, int]:
    """(BLOCK, REST) lanes for N: the lanes from the 16-byte boundary below a row to its end are at most
    N + VEC - 1; BLOCK = next_pow2(N) holds them but the row's last partial vector (the ends take it), unless
    N is just over a power of two: then half of that plus REST = next_pow2(N + VEC - 1 - BLOCK) <= BLOCK / 4
    (H200, 16-bit 3000 x 5003, experiments/2026-12-04-odd-rows: 4096 + 1024 lanes 1.03x teaching in run 2,
    8192 lanes 0.92-0.96x in run 4)."""
    block = next_power_of_2(n_cols)
    half = block // 2
    over = n_cols + vec - 1 - half
    if half >= 4 * vec and 0 < over <= half // 4:
        return half, max(vec, next_power_of_2(over))
    return block, 0


def plan(n_rows: int, n_cols: int, dtype: torch.dtype, **tunables: int) -> LaunchPlan:
    """Grid (R,), [BLOCK] (+ [REST]) lanes per row (tiles()), VEC = 16 bytes of elements."""
    check_tunables(NAME, tunables, TUNABLES)
    if not 1 <= n_cols <= MAX_N:
        raise ValueError(
            f"{NAME}: N={n_cols} is outside this variant's range; allowed: 1 <= N <= {MAX_N} (one row per program)"
        )
    vec = VECTOR_BYTES // dtype.itemsize
    block, rest = tiles(n_cols, vec)
    lanes = block + rest
    fast_exp = exactexp.fast_exp_choice(NAME, tunables)
    default_warps = 4 if lanes <= 2048 else 8 if lanes <= 8192 else 16
    num_warps = check_int_choice(NAME, "num_warps", tunables.get("num_warps", default_warps), NUM_WARPS_ALLOWED)
    return LaunchPlan(
        variant=NAME,
        kernel_name="row_softmax_vecrows_kernel",
        n_rows=n_rows,
        n_cols=n_cols,
        dtype=dtype,
        grid=(n_rows,),
        num_warps=num_warps,
        num_stages=1,
        tile_width=lanes,
        rows_per_program=1,
        constexprs={"BLOCK": block, "REST": rest, "VEC": vec, "EXACT": exactexp.exact_constexpr(dtype, fast_exp)},
        scalar_args={"input_row_stride": n_cols, "output_row_stride": n_cols, "n_cols": n_cols},
        tunables={"num_warps": num_warps, **exactexp.fast_exp_tunables(fast_exp)},
    )


_plans = cached_plans(plan)


def softmax_vecrows(x: torch.Tensor, **tunables: int) -> torch.Tensor:
    """Softmax over the last dim, one row per program in 16-byte vectors from the boundary below each row
    (tunables: num_warps, fast_exp). Rows whose input and output strides differ take element loads (VEC = 1)."""
    rows, launch, output = prepare_launch(x, NAME, MAX_N, _plans, tunables)
    n_rows, n_cols = rows.shape
    if rows.numel() == 0:
        return output.view(x.shape)
    constexprs = launch.constexprs
    if rows.stride(0) != output.stride(0):  # one shift must serve both rows
        constexprs = {**constexprs, "VEC": 1}
    launch_kernel(
        row_softmax_vecrows_kernel,
        launch.grid,
        (output, rows, rows.stride(0), output.stride(0), n_cols),
        constexprs,
        launch.num_warps,
    )
    return output.view(x.shape)
