"""Rows spread over groups of threads with an explicit layout (a Gluon kernel): small and mid N without
cross-warp reductions or power-of-two padding.

The teaching and multirow kernels let Triton lay a [ROWS, next_pow2(N)] tile out, and it spreads a row over every
warp of the program: both reductions go through shared memory with barriers, and N=1536 or 5000 hold 25-39% masked
lanes. Here a row belongs to THREADS_PER_ROW threads (32: one warp, reductions by shuffles only; 64-256: a few
warps), a program holds 32 * num_warps / THREADS_PER_ROW rows, and the row is up to two power-of-two pieces
(1536 = 1024 + 512, 5000 = 4096 + 1024 of which 904 used), as Quack tiles rows of VEC x threads x k. Gluon
(triton.experimental.gluon) is what exposes the layout; the Triton CPU interpreter cannot run it, so the launcher
is GPU-only (CPU tests compile it offline and check the PTX).
"""

from __future__ import annotations

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from . import exactexp
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

NAME = "warprows"
MAX_N = 16384
MAX_ELEMENTS_PER_THREAD = 128  # fp32 values one thread holds (the default keeps to 64)
WARPS_ALLOWED = tuple(w for w in NUM_WARPS_ALLOWED if w <= 16)
LOG2E = gl.constexpr(1.4426950408889634)
SUBNORMAL_SHIFT = gl.constexpr(64.0)  # bf16 numerators as 2**64 x exp: N x 2**64 <= 2**78 cannot overflow fp32
TUNABLES = {
    "num_warps": f"warps per program, one of {WARPS_ALLOWED}; default 4 (8 where a row takes 256 threads)",
    "threads_per_row": (
        "threads holding one row, a power of two from 1 to 32 * num_warps (32 = one warp: "
        "shuffle-only reductions); default by N as Quack (8 up to 64, 16 up to 128, 32 up to 3072, "
        "64 up to 6144, 128 above), raised to keep 64 elements or fewer per thread"
    ),
    "fast_exp": exactexp.FAST_EXP_TUNABLE,
}


@gluon.jit
def exp_rows(values, row_max, EXP: gl.constexpr):
    """exp(values - row_max), up to a factor common to the row (exp_form), for 16-bit outputs by ex2.approx.ftz
    (the ex2.approx.f32 behind gl.exp spends a compare and two predicated multiplies per element on subnormal
    results, SASS sm_90; mid N under L2-resident replay is instruction-bound, docs/kernel-changes.md section 13).
    fp16 (EXP=2): one FMA, values * log2(e) - row_max * log2(e) (the rounding of row_max * log2(e) scales a row's
    numerators and their sum alike, so it cancels in the normalization; |row_max| <= 65504 keeps it finite); no fp16
    output is below 2**-24, so flushing below 2**-126 changes none. bf16 (EXP=1): 2**64 x exp as (values - row_max)
    * log2(e) + 64 (the difference of two bf16 values is exact in fp32; row_max * log2(e) would overflow fp32 at
    bf16's largest values); bf16 holds subnormals down to 2**-133, flushed only below 2**-190 this way (at 2**-126
    they cost up to 127 ULP, scripts/ftz_exp_emulation.py). fp32 (EXP=0): exp(values - row_max) within an ULP
    (kernels/exactexp.py: TwoSum, Cody-Waite and a polynomial; gl.exp is up to ~110 ULP off at |x - max| ~ 200)."""
    if EXP == 0:
        return exactexp.gluon_exp_diff(values, row_max)
    if EXP == 4:  # fp32 with fast_exp=1: gl.exp as before issue 37 (mul by log2(e), ex2.approx.f32)
        return gl.exp(values - row_max)
    if EXP == 1:  # scaled by 2**64 (cancels in the normalization)
        return gl.inline_asm_elementwise(
            "fma.rn.f32 $0, $1, 0f3FB8AA3B, 0f42800000;\n\tex2.approx.ftz.f32 $0, $0;",
            "=f,f",
            [values - row_max],
            dtype=gl.float32,
            is_pure=True,
            pack=1,
        )
    return gl.inline_asm_elementwise(
        "ex2.approx.ftz.f32 $0, $1;", "=f,f", [values * LOG2E - row_max * LOG2E], dtype=gl.float32, is_pure=True, pack=1
    )


@gluon.jit
def scale_rows(numerators, total, inverse, EXP: gl.constexpr):
    """numerators / total per row (total: [ROWS] row sums, inverse = 1 / total: [ROWS, 1]): fp32 (EXP=0) by
    exactexp's normalize (a correctly rounded reciprocal and an FMA residual step; `inverse` unused); 16-bit
    numerators x inverse."""
    if EXP == 0:
        return exactexp.gluon_normalize(numerators, gl.expand_dims(total, 1))
    return numerators * inverse


@gluon.jit
def row_softmax_warprows_kernel(
    output_ptr,
    input_ptr,
    input_row_stride,
    output_row_stride,
    n_rows,
    n_cols,
    WIDTH0: gl.constexpr,
    WIDTH1: gl.constexpr,
    VEC: gl.constexpr,
    ROW_THREADS: gl.constexpr,
    COL_THREADS: gl.constexpr,
    ROW_WARPS: gl.constexpr,
    COL_WARPS: gl.constexpr,
    EXP: gl.constexpr,
):
    # ROWS rows per program: read ROWS*N + write ROWS*N elements; a row is pieces of WIDTH0 and WIDTH1 (0: none)
    ROWS: gl.constexpr = ROW_THREADS * ROW_WARPS
    layout: gl.constexpr = gl.BlockedLayout([1, VEC], [ROW_THREADS, COL_THREADS], [ROW_WARPS, COL_WARPS], [1, 0])
    input_row_stride = input_row_stride // VEC * VEC  # multiples of VEC (the launcher checks): whole vectors
    output_row_stride = output_row_stride // VEC * VEC
    n_cols = n_cols // VEC * VEC
    rows = gl.program_id(0) * ROWS + gl.arange(0, ROWS, layout=gl.SliceLayout(1, layout))
    row_mask = gl.expand_dims(rows < n_rows, 1)
    rows = rows.to(gl.int64)
    source = input_ptr + gl.expand_dims(rows * input_row_stride, 1)
    target = output_ptr + gl.expand_dims(rows * output_row_stride, 1)
    cols0 = gl.expand_dims(gl.arange(0, WIDTH0, layout=gl.SliceLayout(0, layout)), 0)
    mask0 = row_mask & (cols0 < n_cols)
    values0 = gl.load(source + cols0, mask=mask0, other=-float("inf")).to(gl.float32)
    row_max = gl.max(values0, axis=1)
    if WIDTH1 > 0:
        cols1 = WIDTH0 + gl.expand_dims(gl.arange(0, WIDTH1, layout=gl.SliceLayout(0, layout)), 0)
        mask1 = row_mask & (cols1 < n_cols)
        values1 = gl.load(source + cols1, mask=mask1, other=-float("inf")).to(gl.float32)
        row_max = gl.maximum(row_max, gl.max(values1, axis=1))
    row_max = gl.expand_dims(row_max, 1)
    numerators0 = exp_rows(values0, row_max, EXP)
    total = gl.sum(numerators0, axis=1)
    if WIDTH1 > 0:
        numerators1 = exp_rows(values1, row_max, EXP)
        total += gl.sum(numerators1, axis=1)
    inverse = gl.expand_dims(1.0 / total, 1)  # one reciprocal per row
    gl.store(target + cols0, scale_rows(numerators0, total, inverse, EXP).to(output_ptr.dtype.element_ty), mask=mask0)
    if WIDTH1 > 0:
        gl.store(
            target + cols1, scale_rows(numerators1, total, inverse, EXP).to(output_ptr.dtype.element_ty), mask=mask1
        )


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
        "WIDTH0": "constexpr",
        "WIDTH1": "constexpr",
        "VEC": "constexpr",
        "ROW_THREADS": "constexpr",
        "COL_THREADS": "constexpr",
        "ROW_WARPS": "constexpr",
        "COL_WARPS": "constexpr",
        "EXP": "constexpr",
    }


def exp_form(dtype: torch.dtype, fast_exp: int = 0) -> int:
    """The EXP constexpr of exp_rows: 2 for fp16 (ftz exp2 of an FMA: no fp16 value is below 2**-24), 1 for bf16
    (the same on 2**64 x exp: bf16 subnormal outputs kept), 0 for fp32 (exp within an ULP, kernels/exactexp.py), 4
    for fp32 with fast_exp=1 (gl.exp of x - max, up to ~110 ULP off at |x - max| ~ 200)."""
    if dtype == torch.float32:
        return 4 if fast_exp else 0
    return {torch.float16: 2, torch.bfloat16: 1}[dtype]


def vector_width(itemsize: int, n_cols: int) -> int:
    """Elements per load: the widest power of two up to 16 bytes that divides N."""
    vec = VECTOR_BYTES // itemsize
    while n_cols % vec:
        vec //= 2
    return vec


def default_threads_per_row(n_cols: int, vec: int) -> int:
    """Quack's rule (quack/softmax.py: more threads per row as rows widen), raised to keep 64 elements or fewer per
    thread (N=16384: 256 threads, where Quack's 128 hold 128 each), at most one vector per thread of next_pow2(N)."""
    quack = next(
        threads for limit, threads in ((64, 8), (128, 16), (3072, 32), (6144, 64), (1 << 62, 128)) if n_cols <= limit
    )
    block = next_power_of_2(n_cols)
    return min(max(quack, block // 64), max(1, block // vec))


def row_pieces(n_cols: int, lanes: int) -> tuple[int, int]:
    """(WIDTH0, WIDTH1): the row as the largest power of two <= N plus the next power of two >= the rest, or one
    block of next_pow2(N) where the rest needs as much or is narrower than `lanes` (a piece spans at least one
    layout row: threads x VEC). 1536 -> (1024, 512); 5000 -> (4096, 1024); 1000 -> (1024, 0)."""
    block = next_power_of_2(n_cols)
    first = block if block == n_cols else block // 2
    rest = next_power_of_2(n_cols - first) if n_cols > first else 0
    if rest == 0 or rest >= first or rest < lanes:
        return block, 0
    return first, rest


def plan(n_rows: int, n_cols: int, dtype: torch.dtype, **tunables: int) -> LaunchPlan:
    """Grid (cdiv(R, ROWS),): ROWS = 32 x num_warps / threads_per_row rows per program, each row in up to two
    power-of-two pieces spread over threads_per_row threads."""
    check_tunables(NAME, tunables, TUNABLES)
    if not 1 <= n_cols <= MAX_N:
        raise ValueError(f"{NAME}: N={n_cols} is outside this variant's range; allowed: 1 <= N <= {MAX_N}")
    vec = vector_width(dtype.itemsize, n_cols)
    threads = tunables.get("threads_per_row", default_threads_per_row(n_cols, vec))
    threads = check_power_of_2(NAME, "threads_per_row", threads, 1, 32 * WARPS_ALLOWED[-1])
    num_warps = check_int_choice(NAME, "num_warps", tunables.get("num_warps", max(4, threads // 32)), WARPS_ALLOWED)
    if threads > 32 * num_warps:
        raise ValueError(
            f"{NAME}: threads_per_row={threads} is more than the {32 * num_warps} threads of "
            f"num_warps={num_warps}; allowed: threads_per_row <= 32 * num_warps"
        )
    width0, width1 = row_pieces(n_cols, threads * vec)
    if width0 < threads * vec:  # a layout row wider than the tile would hold copies of elements
        raise ValueError(
            f"{NAME}: threads_per_row={threads} x {vec}-element vectors is wider than the "
            f"{width0}-lane tile of N={n_cols}; allowed: threads_per_row <= {width0 // vec}"
        )
    per_thread = (width0 + width1) // threads
    if per_thread > MAX_ELEMENTS_PER_THREAD:
        raise ValueError(
            f"{NAME}: threads_per_row={threads} leaves {per_thread} elements of N={n_cols} per thread; "
            f"allowed: threads_per_row >= {(width0 + width1) // MAX_ELEMENTS_PER_THREAD}"
        )
    fast_exp = exactexp.fast_exp_choice(NAME, tunables)
    row_threads, col_threads = max(1, 32 // threads), min(32, threads)
    col_warps = max(1, threads // 32)
    row_warps = num_warps // col_warps
    rows_per_program = row_threads * row_warps
    return LaunchPlan(
        variant=NAME,
        kernel_name="row_softmax_warprows_kernel",
        n_rows=n_rows,
        n_cols=n_cols,
        dtype=dtype,
        grid=(triton.cdiv(n_rows, rows_per_program),),
        num_warps=num_warps,
        num_stages=1,
        tile_width=width0 + width1,
        rows_per_program=rows_per_program,
        constexprs={
            "WIDTH0": width0,
            "WIDTH1": width1,
            "VEC": vec,
            "ROW_THREADS": row_threads,
            "COL_THREADS": col_threads,
            "ROW_WARPS": row_warps,
            "COL_WARPS": col_warps,
            "EXP": exp_form(dtype, fast_exp),
        },
        scalar_args={"input_row_stride": n_cols, "output_row_stride": n_cols, "n_rows": n_rows, "n_cols": n_cols},
        tunables={"num_warps": num_warps, "threads_per_row": threads, **exactexp.fast_exp_tunables(fast_exp)},
    )


_plans = cached_plans(plan)


def softmax_warprows(x: torch.Tensor, **tunables: int) -> torch.Tensor:
    """Softmax over the last dim, rows spread over threads_per_row threads (tunables: num_warps, threads_per_row).
    CUDA tensors only."""
    rows, launch, output = prepare_launch(x, NAME, MAX_N, _plans, tunables)
    n_rows, n_cols = rows.shape
    if rows.numel() == 0:
        return output.view(x.shape)
    if not rows.is_cuda:
        raise ValueError(
            f"{NAME}: a Gluon kernel, which the Triton CPU interpreter cannot run; allowed: a CUDA "
            "tensor (on the CPU use 'teaching', 'multirow', 'online', 'persistent' or 'splitrow')"
        )
    vec = launch.constexprs["VEC"]
    if rows.stride(0) % vec or output.stride(0) % vec:  # a view with another row stride: rows it can load whole
        source = rows.contiguous() if rows.stride(0) % vec else rows
        target = torch.empty_like(source) if output.stride(0) % vec else output
    else:
        source, target = rows, output
    launch_kernel(
        row_softmax_warprows_kernel,
        launch.grid,
        (target, source, source.stride(0), target.stride(0), n_rows, n_cols),
        launch.constexprs,
        launch.num_warps,
    )
    if target is not output:
        output.copy_(target)
    return output.view(x.shape)
