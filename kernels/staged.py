"""One row per program, staged in shared memory by cp.async (a Gluon kernel): wide 16-bit rows without the register
limit of the teaching kernel.

The teaching kernel holds its row in registers as fp32, so a program of a 32768-wide fp16 row fills the register file
of an SM and one row is in flight per SM (78-80% of copy on the H200, docs/kernel-changes.md). Here the row is copied
into shared memory in its own dtype (cp.async, 16 bytes per thread per copy, one commit group per slice), then read
three times from shared memory (max per lane as slices land, sum of exp, exp times 1/sum stored): registers hold one
slice, shared memory bounds the programs per SM (3 of 64 KB at N=32768 fp16 on sm_90), and DRAM sees x once.
Gluon (triton.experimental.gluon) is what exposes shared memory and cp.async; the Triton CPU interpreter cannot run
it, so the launcher is GPU-only (CPU tests compile it offline and check the PTX).
"""

from __future__ import annotations

import functools

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy

from ._common import (
    NUM_WARPS_ALLOWED,
    VECTOR_BYTES,
    cached_plans,
    check_int_choice,
    check_tunables,
    prepare_launch,
)
from ._common import launch as launch_kernel
from .plan import LaunchPlan

NAME = "staged"
MAX_ROW_BYTES = 224 * 1024  # sm_90's 227 KB of shared memory per block, less the reductions' scratch
MAX_N = MAX_ROW_BYTES // 2  # 16-bit rows; fp32 rows up to MAX_ROW_BYTES // 4 (plan checks per dtype)
MIN_COPY_BYTES = 4  # cp.async moves 4, 8 or 16 bytes
WARPS_ALLOWED = tuple(w for w in NUM_WARPS_ALLOWED if w >= 4)
TUNABLES = {"num_warps": f"warps per program, one of {WARPS_ALLOWED}; default 8"}


@gluon.jit
def _allocate(dtype: gl.constexpr, SLICE: gl.constexpr, PART0: gl.constexpr, PART1: gl.constexpr,
              PART2: gl.constexpr):
    """Shared buffers of PART0, PART1, PART2 slices (an unused one aliases the first)."""
    shared: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [0])
    part0 = gl.allocate_shared_memory(dtype, [PART0 * SLICE], shared)
    part1 = part0
    part2 = part0
    if PART1 > 0:
        part1 = gl.allocate_shared_memory(dtype, [PART1 * SLICE], shared)
    if PART2 > 0:
        part2 = gl.allocate_shared_memory(dtype, [PART2 * SLICE], shared)
    return part0, part1, part2


@gluon.jit
def _slice(part0, part1, part2, i: gl.constexpr, PART0: gl.constexpr, PART1: gl.constexpr, SLICE: gl.constexpr):
    """Slice i of the row: shared buffers have power-of-two shapes, so a row is up to three buffers of slices."""
    if i < PART0:
        return part0.slice(i * SLICE, SLICE)
    elif i < PART0 + PART1:
        return part1.slice((i - PART0) * SLICE, SLICE)
    else:
        return part2.slice((i - PART0 - PART1) * SLICE, SLICE)


@gluon.jit
def row_softmax_staged_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols: gl.constexpr,
                              SLICE: gl.constexpr, PART0: gl.constexpr, PART1: gl.constexpr, PART2: gl.constexpr,
                              VEC: gl.constexpr):
    # one row per program: read N (global -> shared, once) + write N elements; shared memory is read 3 times
    SLICES: gl.constexpr = PART0 + PART1 + PART2
    layout: gl.constexpr = gl.BlockedLayout([VEC], [32], [gl.num_warps()], [0])
    part0, part1, part2 = _allocate(input_ptr.dtype.element_ty, SLICE, PART0, PART1, PART2)
    row = gl.program_id(0).to(gl.int64)
    lanes = gl.arange(0, SLICE, layout=layout)
    source = input_ptr + row * (input_row_stride // VEC * VEC)  # rounding shows Triton whole VEC-vectors
    target = output_ptr + row * (output_row_stride // VEC * VEC)
    for i in gl.static_range(SLICES):
        cols = i * SLICE + lanes
        async_copy.async_copy_global_to_shared(_slice(part0, part1, part2, i, PART0, PART1, SLICE), source + cols,
                                               mask=cols < n_cols)
        async_copy.commit_group()
    running = gl.full([SLICE], -float("inf"), gl.float32, layout)
    for i in gl.static_range(SLICES):  # each thread reads back what it copied: its own wait_group suffices
        async_copy.wait_group(SLICES - 1 - i)
        cols = i * SLICE + lanes
        values = _slice(part0, part1, part2, i, PART0, PART1, SLICE).load(layout).to(gl.float32)
        running = gl.maximum(running, gl.where(cols < n_cols, values, -float("inf")))
    row_max = gl.max(running, axis=0)
    total = gl.zeros([SLICE], gl.float32, layout)
    for i in gl.static_range(SLICES):
        cols = i * SLICE + lanes
        values = _slice(part0, part1, part2, i, PART0, PART1, SLICE).load(layout).to(gl.float32)
        total += gl.where(cols < n_cols, gl.exp(values - row_max), 0.0)
    inverse = 1.0 / gl.sum(total, axis=0)  # one reciprocal per row
    for i in gl.static_range(SLICES):
        cols = i * SLICE + lanes
        values = _slice(part0, part1, part2, i, PART0, PART1, SLICE).load(layout).to(gl.float32)
        gl.store(target + cols, (gl.exp(values - row_max) * inverse).to(output_ptr.dtype.element_ty),
                 mask=cols < n_cols)


def signature(dtype: torch.dtype) -> dict[str, str]:
    """Kernel argument types for offline compilation (Triton type strings)."""
    ptr = "*" + {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}[dtype]
    return {"output_ptr": ptr, "input_ptr": ptr, "input_row_stride": "i32", "output_row_stride": "i32",
            "n_cols": "constexpr", "SLICE": "constexpr", "PART0": "constexpr", "PART1": "constexpr",
            "PART2": "constexpr", "VEC": "constexpr"}


def whole_copies(rows: torch.Tensor, vec: int) -> bool:
    """Whether cp.async can copy these rows in VEC-element pieces: a 16-byte aligned start (Triton specializes
    pointers on 16-byte alignment only; below it cp.async would need 2-byte copies, which do not exist) and a row
    stride that is a multiple of VEC."""
    return rows.data_ptr() % 16 == 0 and rows.stride(0) % vec == 0


def staging_buffers(rows: torch.Tensor, output: torch.Tensor, vec: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(source, target) rows the kernel can copy whole: the given ones, or fresh contiguous copies of those that
    are not (the caller copies the target back into `output`)."""
    source = rows if whole_copies(rows, vec) else rows.clone(memory_format=torch.contiguous_format)
    target = output if whole_copies(output, vec) else torch.empty_like(source, memory_format=torch.contiguous_format)
    return source, target


def max_cols(dtype: torch.dtype) -> int:
    """The widest N in `dtype`: MAX_ROW_BYTES of elements, whole slices at every num_warps (multiples of 8192)."""
    return MAX_ROW_BYTES // dtype.itemsize // 8192 * 8192


def copy_elements(itemsize: int, *extents: int) -> int:
    """Elements per cp.async: the widest of 16, 8 or 4 bytes that divides every extent (N, row strides); 0 if none."""
    vec = VECTOR_BYTES // itemsize
    while vec * itemsize >= MIN_COPY_BYTES:
        if all(extent % vec == 0 for extent in extents):
            return vec
        vec //= 2
    return 0


def slice_parts(slices: int) -> tuple[int, int, int]:
    """Slices per shared buffer: `slices` rounded up to at most three powers of two (shared buffers must have
    power-of-two shapes), largest first, 0 for an unused buffer. 25 -> (16, 8, 1); 23 -> (16, 8, 0)."""
    while bin(slices).count("1") > 3:
        slices += slices & -slices
    parts = [1 << bit for bit in range(slices.bit_length() - 1, -1, -1) if slices >> bit & 1]
    return tuple(parts + [0] * (3 - len(parts)))  # type: ignore[return-value]


def plan(n_rows: int, n_cols: int, dtype: torch.dtype, **tunables: int) -> LaunchPlan:
    """Grid (R,); slices of VEC x 32 x num_warps
    elements; shared memory = the row rounded up to whole slices, in at most three power-of-two buffers."""
    check_tunables(NAME, tunables, TUNABLES)
    num_warps = check_int_choice(NAME, "num_warps", tunables.get("num_warps", 8), WARPS_ALLOWED)
    itemsize = dtype.itemsize
    vec = copy_elements(itemsize, n_cols)
    if vec == 0:
        raise ValueError(f"{NAME}: N={n_cols} {dtype} rows are not whole {MIN_COPY_BYTES}-byte words (cp.async "
                         f"copies 4, 8 or 16 bytes); allowed: N even for 16-bit dtypes; use 'teaching' or 'online'")
    slice_width = vec * 32 * num_warps
    parts = slice_parts(-(-n_cols // slice_width))
    slices = sum(parts)
    if n_cols < 1 or slices * slice_width * itemsize > MAX_ROW_BYTES:
        widest = MAX_ROW_BYTES // itemsize // slice_width * slice_width
        raise ValueError(f"{NAME}: N={n_cols} is outside this variant's range for {dtype} at num_warps={num_warps}; "
                         f"allowed: 1 <= N and the row, rounded up to slices of {slice_width}, at most "
                         f"{MAX_ROW_BYTES} bytes of shared memory (N <= {widest})")
    return LaunchPlan(
        variant=NAME, kernel_name="row_softmax_staged_kernel", n_rows=n_rows, n_cols=n_cols, dtype=dtype,
        grid=(n_rows,), num_warps=num_warps, num_stages=1, tile_width=slices * slice_width, rows_per_program=1,
        constexprs={"n_cols": n_cols, "SLICE": slice_width, "PART0": parts[0], "PART1": parts[1], "PART2": parts[2],
                    "VEC": vec},
        scalar_args={"input_row_stride": n_cols, "output_row_stride": n_cols},
        tunables={"num_warps": num_warps},
    )


_plans = cached_plans(plan)


@functools.cache
def shared_memory_limit(device_index: int) -> int:
    """Bytes of shared memory one block may opt in to on this device (227 KB on sm_90)."""
    return int(torch.cuda.get_device_properties(device_index).shared_memory_per_block_optin)


def softmax_staged(x: torch.Tensor, **tunables: int) -> torch.Tensor:
    """Softmax over the last dim, each row staged in shared memory (tunable: num_warps). CUDA tensors only."""
    rows, launch, output = prepare_launch(x, NAME, MAX_N, _plans, tunables)
    n_rows, n_cols = rows.shape
    if rows.numel() == 0:
        return output.view(x.shape)
    if not rows.is_cuda:
        raise ValueError(f"{NAME}: a Gluon kernel, which the Triton CPU interpreter cannot run; allowed: a CUDA "
                         "tensor (on the CPU use 'teaching', 'multirow', 'online', 'persistent' or 'splitrow')")
    needed = launch.tile_width * rows.element_size()
    available = shared_memory_limit(rows.device.index if rows.device.index is not None else 0)
    if needed > available - 1024:
        raise ValueError(f"{NAME}: a row of N={n_cols} needs {needed} bytes of shared memory and this GPU allows "
                         f"{available} per block; allowed: N <= {(available - 1024) // rows.element_size()} "
                         "(use 'splitrow' or 'online' for wider rows)")
    source, target = staging_buffers(rows, output, launch.constexprs["VEC"])
    launch_kernel(row_softmax_staged_kernel, launch.grid, (target, source, source.stride(0), target.stride(0)),
                  launch.constexprs, launch.num_warps)
    if target is not output:
        output.copy_(target)
    return output.view(x.shape)
