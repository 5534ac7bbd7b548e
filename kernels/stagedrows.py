"""Rows over groups of threads, staged in shared memory by cp.async (a Gluon kernel): mid N (1000-16384) at as many
rows per SM as shared memory holds.

`warprows` gives a row THREADS_PER_ROW threads but holds it in registers as fp32, so registers bound its rows per
SM (docs/kernel-changes.md has the measured case).
Here each row's threads copy it into shared memory in its own dtype (16-byte cp.async, one commit group per slice
of VEC x THREADS_PER_ROW columns) and read it back a slice at a time (max as slices land, sum of exp, exp times
1/sum stored), as `staged` does for one row per program: registers hold one slice, so shared memory and the
thread limit bound the rows per SM (64 of 1536 fp16 = 192 KB). Each thread reads what it copied: no barrier
between the copies and the reads, and none in the reductions where a row is one warp's.
The Triton CPU interpreter cannot run Gluon: the launcher is GPU-only (CPU tests compile it offline).
"""

from __future__ import annotations

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy

from . import exactexp, staged, warprows
from ._common import cached_plans, check_int_choice, check_power_of_2, check_tunables, next_power_of_2, prepare_launch
from ._common import launch as launch_kernel
from .plan import LaunchPlan

NAME = "stagedrows"
MAX_N = 16384  # wider rows: `staged` (one program per row, or a cluster of them)
MAX_PROGRAM_BYTES = 96 * 1024  # shared memory per program: at least two programs per SM on sm_90
WARPS_ALLOWED = warprows.WARPS_ALLOWED
TUNABLES = {
    "num_warps": f"warps per program, one of {WARPS_ALLOWED}; default 4 (threads_per_row / 32 where that is more)",
    "threads_per_row": (
        "threads holding one row, a power of two from 1 to 32 * num_warps; default Quack's rule by "
        "N (8 up to 64, 16 up to 128, 32 up to 3072, 64 up to 6144, 128 above)"
    ),
    "fast_exp": exactexp.FAST_EXP_TUNABLE,
}


@gluon.jit
def _allocate(
    dtype: gl.constexpr,
    ROWS: gl.constexpr,
    SLICE: gl.constexpr,
    PART0: gl.constexpr,
    PART1: gl.constexpr,
    PART2: gl.constexpr,
):
    """Shared buffers of PART0, PART1, PART2 slices of [ROWS, SLICE] each (an unused one aliases the first)."""
    shared: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [1, 0])
    part0 = gl.allocate_shared_memory(dtype, [PART0 * ROWS, SLICE], shared)
    part1 = part0
    part2 = part0
    if PART1 > 0:
        part1 = gl.allocate_shared_memory(dtype, [PART1 * ROWS, SLICE], shared)
    if PART2 > 0:
        part2 = gl.allocate_shared_memory(dtype, [PART2 * ROWS, SLICE], shared)
    return part0, part1, part2


@gluon.jit
def _slice(part0, part1, part2, i: gl.constexpr, PART0: gl.constexpr, PART1: gl.constexpr, ROWS: gl.constexpr):
    """Slice i of the program's rows, [ROWS, SLICE]: up to three power-of-two buffers of slices, as in `staged`."""
    if i < PART0:
        return part0.slice(i * ROWS, ROWS)
    elif i < PART0 + PART1:
        return part1.slice((i - PART0) * ROWS, ROWS)
    else:
        return part2.slice((i - PART0 - PART1) * ROWS, ROWS)


@gluon.jit
def _reread():
    """An empty asm statement with side effects: the compiler may not keep a pass's shared loads in registers for
    the next pass (it would, holding the rows in registers as `warprows` does: 59 registers at N=1536 fp16)."""
    return gl.inline_asm_elementwise("bar.sync 0;\n\tmov.u32 $0, 0;", "=r", [], dtype=gl.int32, is_pure=False, pack=1)


@gluon.jit
def row_softmax_stagedrows_kernel(
    output_ptr,
    input_ptr,
    input_row_stride,
    output_row_stride,
    n_rows,
    n_cols: gl.constexpr,
    SLICE: gl.constexpr,
    PART0: gl.constexpr,
    PART1: gl.constexpr,
    PART2: gl.constexpr,
    VEC: gl.constexpr,
    ROW_THREADS: gl.constexpr,
    COL_THREADS: gl.constexpr,
    ROW_WARPS: gl.constexpr,
    COL_WARPS: gl.constexpr,
    EXP: gl.constexpr,
):
    # ROWS rows per program: read ROWS*N (global -> shared, once) + write ROWS*N elements; shared read 3 times
    ROWS: gl.constexpr = ROW_THREADS * ROW_WARPS
    SLICES: gl.constexpr = PART0 + PART1 + PART2
    layout: gl.constexpr = gl.BlockedLayout([1, VEC], [ROW_THREADS, COL_THREADS], [ROW_WARPS, COL_WARPS], [1, 0])
    part0, part1, part2 = _allocate(input_ptr.dtype.element_ty, ROWS, SLICE, PART0, PART1, PART2)
    rows = gl.program_id(0) * ROWS + gl.arange(0, ROWS, layout=gl.SliceLayout(1, layout))
    row_mask = gl.expand_dims(rows < n_rows, 1)
    rows = rows.to(gl.int64)
    source = input_ptr + gl.expand_dims(rows * (input_row_stride // VEC * VEC), 1)  # whole VEC-vectors
    target = output_ptr + gl.expand_dims(rows * (output_row_stride // VEC * VEC), 1)
    lanes = gl.expand_dims(gl.arange(0, SLICE, layout=gl.SliceLayout(0, layout)), 0)
    for i in gl.static_range(SLICES):
        cols = i * SLICE + lanes
        if (i + 1) * SLICE <= n_cols:  # a whole slice: rows masked only
            mask = row_mask & (lanes >= 0)
        else:
            mask = row_mask & (cols < n_cols)
        async_copy.async_copy_global_to_shared(
            _slice(part0, part1, part2, i, PART0, PART1, ROWS), source + cols, mask=mask
        )
        async_copy.commit_group()
    # fp16 maxima two at a time (exact; bf16 has no cheaper max than fp32's on sm_90)
    MAX_TYPE: gl.constexpr = gl.float16 if input_ptr.dtype.element_ty == gl.float16 else gl.float32
    running = gl.full([ROWS, SLICE], -float("inf"), MAX_TYPE, layout)
    for i in gl.static_range(SLICES):  # each thread reads back what it copied: its own wait_group suffices
        async_copy.wait_group(SLICES - 1 - i)
        values = _slice(part0, part1, part2, i, PART0, PART1, ROWS).load(layout).to(MAX_TYPE)
        if (i + 1) * SLICE > n_cols:  # the last slice's lanes past N
            values = gl.where(i * SLICE + lanes < n_cols, values, -float("inf"))
        running = gl.maximum(running, values)
    row_max = gl.expand_dims(gl.max(running.to(gl.float32), axis=1), 1)
    _reread()
    total = gl.zeros([ROWS, SLICE], gl.float32, layout)
    for i in gl.static_range(SLICES):
        values = _slice(part0, part1, part2, i, PART0, PART1, ROWS).load(layout).to(gl.float32)
        numerators = warprows.exp_rows(values, row_max, EXP)
        if (i + 1) * SLICE > n_cols:
            numerators = gl.where(i * SLICE + lanes < n_cols, numerators, 0.0)
        total += numerators
    row_sum = gl.sum(total, axis=1)
    inverse = gl.expand_dims(1.0 / row_sum, 1)  # one reciprocal per row (16-bit; fp32 normalizes in scale_rows)
    _reread()
    for i in gl.static_range(SLICES):
        cols = i * SLICE + lanes
        values = _slice(part0, part1, part2, i, PART0, PART1, ROWS).load(layout).to(gl.float32)
        y = warprows.scale_rows(warprows.exp_rows(values, row_max, EXP), row_sum, inverse, EXP)
        y = y.to(output_ptr.dtype.element_ty)
        # streaming stores (st.global.cs, evict-first): the output does not push the input out of L2, which a
        # repeated call reads again (H200, experiments/2026-12-02-store-hint CUDA-graph replay: fp16 3000x5000 18.1
        # -> 16.1 us, fp32 5000x1536 17.5 -> 15.7 us; L2-flushed within 1%)
        if (i + 1) * SLICE <= n_cols:
            gl.store(target + cols, y, mask=row_mask & (lanes >= 0), cache_modifier=".cs")
        else:
            gl.store(target + cols, y, mask=row_mask & (cols < n_cols), cache_modifier=".cs")


def signature(dtype: torch.dtype) -> dict[str, str]:
    """Kernel argument types for offline compilation (Triton type strings)."""
    ptr = "*" + {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}[dtype]
    return {
        "output_ptr": ptr,
        "input_ptr": ptr,
        "input_row_stride": "i32",
        "output_row_stride": "i32",
        "n_rows": "i32",
        "n_cols": "constexpr",
        "SLICE": "constexpr",
        "PART0": "constexpr",
        "PART1": "constexpr",
        "PART2": "constexpr",
        "VEC": "constexpr",
        "ROW_THREADS": "constexpr",
        "COL_THREADS": "constexpr",
        "ROW_WARPS": "constexpr",
        "COL_WARPS": "constexpr",
        "EXP": "constexpr",
    }


def default_threads_per_row(n_cols: int, vec: int) -> int:
    """Quack's rule (quack/softmax.py), at most one copy per thread of next_pow2(N): registers hold one slice, so
    no element-per-thread cap as in `warprows`."""
    quack = next(
        threads for limit, threads in ((64, 8), (128, 16), (3072, 32), (6144, 64), (1 << 62, 128)) if n_cols <= limit
    )
    return min(quack, max(1, next_power_of_2(n_cols) // vec))


def plan(n_rows: int, n_cols: int, dtype: torch.dtype, **tunables: int) -> LaunchPlan:
    """Grid (cdiv(R, ROWS),): ROWS = 32 x num_warps / threads_per_row rows per program; slices of VEC x
    threads_per_row columns; shared memory per program = ROWS rows rounded up to whole slices (at most three
    power-of-two buffers), at most MAX_PROGRAM_BYTES."""
    check_tunables(NAME, tunables, TUNABLES)
    if not 1 <= n_cols <= MAX_N:
        raise ValueError(
            f"{NAME}: N={n_cols} is outside this variant's range; allowed: 1 <= N <= {MAX_N} (wider rows: 'staged')"
        )
    vec = staged.copy_elements(dtype.itemsize, n_cols)
    if vec == 0:
        raise ValueError(
            f"{NAME}: N={n_cols} {dtype} rows are not whole {staged.MIN_COPY_BYTES}-byte words "
            "(cp.async copies 4, 8 or 16 bytes); allowed: N even for 16-bit dtypes; use 'warprows' "
            "or 'teaching'"
        )
    threads = tunables.get("threads_per_row", default_threads_per_row(n_cols, vec))
    threads = check_power_of_2(NAME, "threads_per_row", threads, 1, 32 * WARPS_ALLOWED[-1])
    num_warps = check_int_choice(NAME, "num_warps", tunables.get("num_warps", max(4, threads // 32)), WARPS_ALLOWED)
    if threads > 32 * num_warps:
        raise ValueError(
            f"{NAME}: threads_per_row={threads} is more than the {32 * num_warps} threads of "
            f"num_warps={num_warps}; allowed: threads_per_row <= 32 * num_warps"
        )
    slice_width = vec * threads
    if slice_width > next_power_of_2(n_cols):  # a slice wider than the row's tile would hold copies of elements
        raise ValueError(
            f"{NAME}: threads_per_row={threads} x {vec}-element copies is wider than N={n_cols}; "
            f"allowed: threads_per_row <= {max(1, next_power_of_2(n_cols) // vec)}"
        )
    parts = staged.slice_parts(-(-n_cols // slice_width))
    row_threads, col_threads = max(1, 32 // threads), min(32, threads)
    col_warps = max(1, threads // 32)
    row_warps = num_warps // col_warps
    rows_per_program = row_threads * row_warps
    chunk = sum(parts) * slice_width
    if rows_per_program * chunk * dtype.itemsize > MAX_PROGRAM_BYTES:
        raise ValueError(
            f"{NAME}: {rows_per_program} rows of {chunk} staged columns need "
            f"{rows_per_program * chunk * dtype.itemsize} bytes of shared memory per program; allowed: "
            f"at most {MAX_PROGRAM_BYTES} (fewer warps or more threads_per_row)"
        )
    return LaunchPlan(
        variant=NAME,
        kernel_name="row_softmax_stagedrows_kernel",
        n_rows=n_rows,
        n_cols=n_cols,
        dtype=dtype,
        grid=(triton.cdiv(n_rows, rows_per_program),),
        num_warps=num_warps,
        num_stages=1,
        tile_width=chunk,
        rows_per_program=rows_per_program,
        constexprs={
            "n_cols": n_cols,
            "SLICE": slice_width,
            "PART0": parts[0],
            "PART1": parts[1],
            "PART2": parts[2],
            "VEC": vec,
            "ROW_THREADS": row_threads,
            "COL_THREADS": col_threads,
            "ROW_WARPS": row_warps,
            "COL_WARPS": col_warps,
            "EXP": warprows.exp_form(dtype, exactexp.fast_exp_choice(NAME, tunables)),
        },
        scalar_args={"input_row_stride": n_cols, "output_row_stride": n_cols, "n_rows": n_rows},
        tunables={
            "num_warps": num_warps,
            "threads_per_row": threads,
            **exactexp.fast_exp_tunables(exactexp.fast_exp_choice(NAME, tunables)),
        },
    )


_plans = cached_plans(plan)


def softmax_stagedrows(x: torch.Tensor, **tunables: int) -> torch.Tensor:
    """Softmax over the last dim, rows over threads_per_row threads staged in shared memory (tunables: num_warps,
    threads_per_row). CUDA tensors only."""
    rows, launch, output = prepare_launch(x, NAME, MAX_N, _plans, tunables)
    n_rows, n_cols = rows.shape
    if rows.numel() == 0:
        return output.view(x.shape)
    if not rows.is_cuda:
        raise ValueError(
            f"{NAME}: a Gluon kernel, which the Triton CPU interpreter cannot run; allowed: a CUDA "
            "tensor (on the CPU use 'teaching', 'multirow', 'online', 'persistent' or 'splitrow')"
        )
    source, target = staged.staging_buffers(rows, output, launch.constexprs["VEC"])
    launch_kernel(
        row_softmax_stagedrows_kernel,
        launch.grid,
        (target, source, source.stride(0), target.stride(0), n_rows),
        launch.constexprs,
        launch.num_warps,
    )
    if target is not output:
        output.copy_(target)
    return output.view(x.shape)
