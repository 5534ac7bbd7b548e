"""Split-row softmax with each program's chunk staged in shared memory (a Gluon kernel): rows too wide for one
program's shared memory (fp16 over ~110k columns) or wide enough that one row per SM leaves DRAM idle between rows.

CHUNKS programs share a row as in 'splitrow' (its epoch-tagged (max, sum) words in an L2 workspace, its cooperative
launch of SMs x blocks/SM programs looping over rows, its fallback to 'online' where a row's programs cannot all
be resident), but a chunk waits in shared memory in its own dtype (cp.async), not in registers as fp32: 64 KB of
fp16 per program is 3 programs per SM on sm_90, where splitrow's register-held chunks stop at 16 KB each
(docs/kernel-changes.md, "Why fp16/bf16 wide rows stay under 75-85% of copy"). GPU-only, like 'staged'.
"""

from __future__ import annotations

import warnings

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy

from . import exactexp, splitrow
from ._common import (
    cached_plans,
    check_int_choice,
    check_int_range,
    check_tunables,
    compile_or_load,
    cooperative_launch_supported,
    driver_blocks_per_sm,
    prepare_launch,
    specialization_key,
)
from ._common import launch as launch_kernel
from .plan import LaunchPlan
from .staged import (
    MAX_ROW_BYTES,
    MIN_COPY_BYTES,
    WARPS_ALLOWED,
    _allocate,
    _slice,
    copy_elements,
    slice_parts,
    staging_buffers,
)

NAME = "staged_split"
MAX_CHUNKS = 64
MAX_N = 2**20
DEFAULT_CHUNK_BYTES = 64 * 1024  # 3 programs per SM on sm_90 (227 KB)
TUNABLES = {
    "num_warps": f"warps per program, one of {WARPS_ALLOWED}; default 8",
    "chunks": f"programs per row, 1 to {MAX_CHUNKS}; default cdiv(row bytes, {DEFAULT_CHUNK_BYTES // 1024} KB)",
}


@gluon.jit
def _tagged(epoch, value):
    """One 64-bit word: the epoch's low 32 bits in the high half, the fp32 value's bits in the low half."""
    return (epoch << 32) | (value.to(gl.int32, bitcast=True).to(gl.int64) & 0xFFFFFFFF)


@gluon.jit
def _untagged(words):
    return (words & 0xFFFFFFFF).to(gl.int32).to(gl.float32, bitcast=True)


@gluon.jit
def _all_tagged(max_words, sum_words, tag, partial_mask):
    """1 when every chunk's two words of the row carry this launch's tag."""
    arrived = (((max_words >> 32) & 0xFFFFFFFF) == tag) & (((sum_words >> 32) & 0xFFFFFFFF) == tag)
    return gl.min((arrived | ~partial_mask).to(gl.int32), axis=0)


@gluon.jit
def row_softmax_staged_split_kernel(
    output_ptr,
    input_ptr,
    stats_ptr,
    control_ptr,
    input_row_stride,
    output_row_stride,
    n_rows,
    n_cols,
    SLICE: gl.constexpr,
    PART0: gl.constexpr,
    PART1: gl.constexpr,
    PART2: gl.constexpr,
    VEC: gl.constexpr,
    CHUNKS: gl.constexpr,
    CHUNKS_POW2: gl.constexpr,
):
    # read N + write N per row; per chunk 16 bytes of tagged (max, sum) written and CHUNKS x 16 polled (L2)
    SLICES: gl.constexpr = PART0 + PART1 + PART2
    CHUNK: gl.constexpr = SLICES * SLICE
    layout: gl.constexpr = gl.BlockedLayout([VEC], [32], [gl.num_warps()], [0])
    small: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    part0, part1, part2 = _allocate(input_ptr.dtype.element_ty, SLICE, PART0, PART1, PART2)
    input_row_stride = input_row_stride // VEC * VEC  # exact (the launcher checks): Triton sees whole vectors
    output_row_stride = output_row_stride // VEC * VEC
    n_cols = n_cols // VEC * VEC
    pid = gl.program_id(0)
    chunk = pid % CHUNKS
    step = gl.num_programs(0) // CHUNKS
    lanes = gl.arange(0, SLICE, layout=layout)
    partials = gl.arange(0, CHUNKS_POW2, layout=small)
    partial_mask = partials < CHUNKS
    epoch = gl.load(control_ptr)  # this launch's tag (int64); control = [epoch, programs exited]
    tag = epoch & 0xFFFFFFFF
    start = chunk * CHUNK
    for row_index in range(pid // CHUNKS, n_rows, step):
        row = row_index.to(gl.int64)
        source = input_ptr + row * input_row_stride + start
        for i in gl.static_range(SLICES):
            cols = start + i * SLICE + lanes
            async_copy.async_copy_global_to_shared(
                _slice(part0, part1, part2, i, PART0, PART1, SLICE), source + i * SLICE + lanes, mask=cols < n_cols
            )
            async_copy.commit_group()
        running = gl.full([SLICE], -float("inf"), gl.float32, layout)
        for i in gl.static_range(SLICES):  # each thread reads back what it copied: its own wait_group suffices
            async_copy.wait_group(SLICES - 1 - i)
            cols = start + i * SLICE + lanes
            values = _slice(part0, part1, part2, i, PART0, PART1, SLICE).load(layout).to(gl.float32)
            running = gl.maximum(running, gl.where(cols < n_cols, values, -float("inf")))
        local_max = gl.max(running, axis=0)
        local_shift = gl.where(local_max == -float("inf"), 0.0, local_max)
        total = gl.zeros([SLICE], gl.float32, layout)
        for i in gl.static_range(SLICES):
            cols = start + i * SLICE + lanes
            values = _slice(part0, part1, part2, i, PART0, PART1, SLICE).load(layout).to(gl.float32)
            if input_ptr.dtype.element_ty == gl.float32:  # exp within an ULP (kernels/exactexp.py)
                total += gl.where(cols < n_cols, exactexp.gluon_exp_diff(values, local_shift), 0.0)
            else:
                total += gl.where(cols < n_cols, gl.exp(values - local_shift), 0.0)
        local_sum = gl.sum(total, axis=0)
        if CHUNKS == 1:
            if input_ptr.dtype.element_ty == gl.float32:
                scale = gl.div_rn(1.0, local_sum)
            else:
                scale = 1.0 / local_sum
        else:  # publish this chunk's (max, sum) as relaxed tagged 64-bit words (single-copy atomic, no fence), poll
            slot = stats_ptr + (row * CHUNKS + chunk) * 2
            gl.atomic_xchg(slot, _tagged(epoch, local_max), sem="relaxed", scope="gpu")
            gl.atomic_xchg(slot + 1, _tagged(epoch, local_sum), sem="relaxed", scope="gpu")
            slots = stats_ptr + (row * CHUNKS + partials) * 2
            max_words = gl.load(slots, mask=partial_mask, other=0, volatile=True)
            sum_words = gl.load(slots + 1, mask=partial_mask, other=0, volatile=True)
            while _all_tagged(max_words, sum_words, tag, partial_mask) == 0:  # all programs are resident
                max_words = gl.load(slots, mask=partial_mask, other=0, volatile=True)  # (cooperative launch)
                sum_words = gl.load(slots + 1, mask=partial_mask, other=0, volatile=True)
            maxes = gl.where(partial_mask, _untagged(max_words), -float("inf"))
            sums = gl.where(partial_mask, _untagged(sum_words), 0.0)
            row_max = gl.max(maxes, axis=0)
            row_shift = gl.where(row_max == -float("inf"), 0.0, row_max)
            # exp(local_max - row_max): 0 for an all -inf chunk, NaN for an all -inf row (as torch)
            if input_ptr.dtype.element_ty == gl.float32:
                scale = gl.div_rn(
                    exactexp.gluon_exp_diff(local_max, row_max),
                    gl.sum(sums * exactexp.gluon_exp_diff(maxes, row_shift), axis=0),
                )
            else:
                scale = gl.exp(local_max - row_max) / gl.sum(sums * gl.exp(maxes - row_shift), axis=0)
        target = output_ptr + row * output_row_stride + start
        for i in gl.static_range(SLICES):
            cols = start + i * SLICE + lanes
            values = _slice(part0, part1, part2, i, PART0, PART1, SLICE).load(layout).to(gl.float32)
            if input_ptr.dtype.element_ty == gl.float32:
                gl.store(
                    target + i * SLICE + lanes, exactexp.gluon_exp_diff(values, local_shift) * scale, mask=cols < n_cols
                )
            else:
                gl.store(
                    target + i * SLICE + lanes,
                    (gl.exp(values - local_shift) * scale).to(output_ptr.dtype.element_ty),
                    mask=cols < n_cols,
                )
    if CHUNKS > 1:  # the launch's last program out moves the epoch on
        if gl.atomic_add(control_ptr + 1, 1, sem="relaxed", scope="gpu") == gl.num_programs(0) - 1:
            gl.store(control_ptr + 1, 0)
            gl.store(control_ptr, epoch + 1)


def signature(dtype: torch.dtype) -> dict[str, str]:
    """Kernel argument types for offline compilation (Triton type strings)."""
    ptr = "*" + {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}[dtype]
    return {
        "output_ptr": ptr,
        "input_ptr": ptr,
        "stats_ptr": "*i64",
        "control_ptr": "*i64",
        "input_row_stride": "i32",
        "output_row_stride": "i32",
        "n_rows": "i32",
        "n_cols": "i32",
        "SLICE": "constexpr",
        "PART0": "constexpr",
        "PART1": "constexpr",
        "PART2": "constexpr",
        "VEC": "constexpr",
        "CHUNKS": "constexpr",
        "CHUNKS_POW2": "constexpr",
    }


def default_chunks(n_cols: int, dtype: torch.dtype) -> int:
    """Programs per row by default: cdiv(row bytes, 64 KB), at most MAX_CHUNKS."""
    return min(MAX_CHUNKS, max(1, -(-n_cols * dtype.itemsize // DEFAULT_CHUNK_BYTES)))


def plan(n_rows: int, n_cols: int, dtype: torch.dtype, **tunables: int) -> LaunchPlan:
    """CHUNKS programs per row, each staging cdiv(N, CHUNKS) columns rounded up to whole slices (VEC x 32 x
    num_warps); grid resolved at launch (resident programs, whole rows), as splitrow's."""
    check_tunables(NAME, tunables, TUNABLES)
    if not 1 <= n_cols <= MAX_N:
        raise ValueError(f"{NAME}: N={n_cols} is outside this variant's range; allowed: 1 <= N <= {MAX_N}")
    num_warps = check_int_choice(NAME, "num_warps", tunables.get("num_warps", 8), WARPS_ALLOWED)
    chunks = check_int_range(NAME, "chunks", tunables.get("chunks", default_chunks(n_cols, dtype)), 1, MAX_CHUNKS)
    vec = copy_elements(dtype.itemsize, n_cols)
    if vec == 0:
        raise ValueError(
            f"{NAME}: N={n_cols} {dtype} rows are not whole {MIN_COPY_BYTES}-byte words (cp.async "
            "copies 4, 8 or 16 bytes); allowed: N even for 16-bit dtypes; use 'splitrow' or 'online'"
        )
    slice_width = vec * 32 * num_warps
    per_chunk = -(-n_cols // chunks)
    parts = slice_parts(-(-per_chunk // slice_width))
    chunk_width = sum(parts) * slice_width
    if chunk_width * dtype.itemsize > MAX_ROW_BYTES:
        raise ValueError(
            f"{NAME}: N={n_cols} in {chunks} chunks is {chunk_width * dtype.itemsize} bytes of shared "
            f"memory per program; allowed: at most {MAX_ROW_BYTES} (raise chunks)"
        )
    if (chunks - 1) * chunk_width >= n_cols:
        raise ValueError(
            f"{NAME}: N={n_cols} fills fewer than chunks={chunks} chunks of {chunk_width} columns; "
            f"allowed: chunks <= {-(-n_cols // chunk_width)}"
        )
    return LaunchPlan(
        variant=NAME,
        kernel_name="row_softmax_staged_split_kernel",
        n_rows=n_rows,
        n_cols=n_cols,
        dtype=dtype,
        grid=(n_rows * chunks,),
        num_warps=num_warps,
        num_stages=1,
        tile_width=chunk_width,
        rows_per_program=1,
        constexprs={
            "SLICE": slice_width,
            "PART0": parts[0],
            "PART1": parts[1],
            "PART2": parts[2],
            "VEC": vec,
            "CHUNKS": chunks,
            "CHUNKS_POW2": 1 << (chunks - 1).bit_length(),
        },
        scalar_args={"input_row_stride": n_cols, "output_row_stride": n_cols, "n_rows": n_rows, "n_cols": n_cols},
        tunables={"num_warps": num_warps, "chunks": chunks},
        grid_resolved_at_launch=True,
    )


_plans = cached_plans(plan)
_BLOCKS_PER_SM: dict[tuple, int] = {}
_FALLBACKS: dict[tuple, str] = {}


def _key(args: tuple, launch: LaunchPlan) -> tuple:
    return (
        args[1].device.index,
        launch.dtype,
        launch.num_warps,
        tuple(launch.constexprs.items()),
        specialization_key(args),
    )


def resident_programs(args: tuple, launch: LaunchPlan) -> int:
    """SM count x blocks per SM (driver occupancy API; shared memory decides) of the compiled kernel: the most
    programs resident at once, the largest grid a cooperative launch takes."""
    key = _key(args, launch)
    if key not in _BLOCKS_PER_SM:
        options = {"launch_cooperative_grid": True} if launch.constexprs["CHUNKS"] > 1 else {}
        compiled = compile_or_load(
            row_softmax_staged_split_kernel, args, launch.constexprs, launch.num_warps, 1, options
        )
        compiled._init_handles()
        _BLOCKS_PER_SM[key] = driver_blocks_per_sm(compiled.function, launch.num_warps, compiled.metadata.shared)
    return torch.cuda.get_device_properties(args[1].device).multi_processor_count * _BLOCKS_PER_SM[key]


def launched_programs(rows: torch.Tensor, launch: LaunchPlan) -> int:
    """Programs a GPU launch on these contiguous rows uses: resident row groups (at most R) x CHUNKS."""
    stats, _, control = splitrow.workspace(rows.device, rows.shape[0], launch.constexprs["CHUNKS"])
    args = (rows, rows, stats, control, rows.stride(0), rows.stride(0), rows.shape[0], rows.shape[1])
    chunks = launch.constexprs["CHUNKS"]
    return min(rows.shape[0], resident_programs(args, launch) // chunks) * chunks


def _run_online(x: torch.Tensor, key: tuple, reason: str, remember: bool = True) -> torch.Tensor:
    if key not in _FALLBACKS:
        warnings.warn(
            f"{NAME}: {reason}; ran 'online' instead (it never waits on other programs)", RuntimeWarning, stacklevel=3
        )
    if remember:
        _FALLBACKS[key] = reason
    from .online import softmax_online

    return softmax_online(x)


def softmax_staged_split(x: torch.Tensor, **tunables: int) -> torch.Tensor:
    """Softmax over the last dim, CHUNKS cooperating programs per row, each chunk staged in shared memory
    (tunables: num_warps, chunks). CUDA tensors only."""
    rows, launch, output = prepare_launch(x, NAME, MAX_N, _plans, tunables)
    n_rows, n_cols = rows.shape
    if rows.numel() == 0:
        return output.view(x.shape)
    if not rows.is_cuda:
        raise ValueError(
            f"{NAME}: a Gluon kernel, which the Triton CPU interpreter cannot run; allowed: a CUDA "
            "tensor (on the CPU use 'splitrow' or 'online')"
        )
    source, target = staging_buffers(rows, output, launch.constexprs["VEC"])
    chunks = launch.constexprs["CHUNKS"]
    stats, _, control = splitrow.workspace(rows.device, n_rows, chunks)
    args = (target, source, stats, control, source.stride(0), target.stride(0), n_rows, n_cols)
    key = _key(args, launch)
    reason = _FALLBACKS.get(key)
    if reason is None and chunks > 1 and not cooperative_launch_supported():
        reason = "this Triton has no cooperative launch (launch_cooperative_grid), which waiting programs need"
    resident = resident_programs(args, launch) if reason is None else 0
    if reason is None and resident < chunks:
        reason = f"a row needs {chunks} programs but only {resident} fit on the GPU at once"
    if reason is not None:
        return _run_online(x, key, reason)
    groups = min(n_rows, resident // chunks)
    try:
        launch_kernel(
            row_softmax_staged_split_kernel,
            (groups * chunks,),
            args,
            launch.constexprs,
            launch.num_warps,
            cooperative=chunks > 1,
        )
    except RuntimeError as error:
        if not splitrow._is_cooperative_failure(error):
            raise
        capturing = torch.cuda.is_current_stream_capturing()
        return _run_online(
            x,
            key,
            f"the cooperative launch failed ({str(error).strip().splitlines()[0][:200]})",
            remember=not capturing,
        )
    if target is not output:
        output.copy_(target)
    return output.view(x.shape)
