"""Ragged (variable-length) softmax: softmax over dim 0 within each segment values[offsets[i]:offsets[i+1]],
independently per trailing column, for values (T,) or (T, H) and int32/int64 offsets of length B + 1.

Work is cut into items of at most CHUNK rows: a segment of n rows is cdiv(n, CHUNK) items, so one program never
owns more than CHUNK x H values and a 144k-row segment among thousands of short ones spreads over many programs.
The item -> (segment, chunk) map is built on the GPU (cumsum + searchsorted over an upper bound of B + T / CHUNK
items), so a launch needs no host sync and CUDA graphs can capture it.
  pass 1  one program per item, its [CHUNK, H] tile in registers: a one-item segment (n <= CHUNK, the common case)
          is finished here (values read once, y written once); a multi-item segment's item stores its per-column
          (max, sum of exp) partial to a workspace
  pass 2  one program per item of a multi-item segment combines the segment's partials and re-reads its chunk to
          write y (exits at once for one-item segments)
Short segments are not packed several per program: a program per segment (with masked lanes) even at n = 1.
The backward (dx = y * (dy - sum over the segment of dy * y)) has the same two passes. Offsets are 64-bit inside.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._common import (
    NUM_WARPS_ALLOWED,
    SUPPORTED_DTYPES,
    check_int_choice,
    check_power_of_2,
    check_tunables,
    interpreting,
    next_power_of_2,
    triton_interprets,
)
from ._common import launch as launch_kernel
from .plan import LaunchPlan

NAME = "ragged"
TILE_ELEMENTS = 512  # default CHUNK x next_pow2(H) lanes per program (H200: 512-1024 lanes beat 8192 by 2.6-5x)
MAX_COLUMN_BLOCK = 256  # H wider than this spreads over a second grid axis
TUNABLES = {
    "packed_max": "longest segment packed several per program, 0 or one of 64, 256, 1024, 4096; default 0 (every "
    "segment in items; capped where packed_max x next_pow2(H) > 512)",
    "chunk": "rows per item, a power of two from 1 to 65536; default max(1, 512 // next_pow2(H))",
    "num_warps": f"warps per program, one of {NUM_WARPS_ALLOWED}; default CHUNK x HB / 256 clamped to 1..16",
}


@triton.jit
def _item_bounds(item_seg_ptr, cum_items_ptr, offsets_ptr, n_segments, total, item, packed_max, CHUNK: tl.constexpr):
    """(segment, first item of the segment, items in the segment, chunk start row, chunk stop row) of an item;
    segment == n_segments for the surplus items of the upper-bound grid. Rows are clamped into [0, total]."""
    seg = tl.load(item_seg_ptr + item).to(tl.int64)
    valid = seg < n_segments
    seg_c = tl.where(valid, seg, 0)
    last = tl.load(cum_items_ptr + seg_c).to(tl.int64)  # items up to and including this segment
    start = tl.minimum(tl.maximum(tl.load(offsets_ptr + seg_c).to(tl.int64), 0), total)
    stop = tl.minimum(tl.maximum(tl.load(offsets_ptr + seg_c + 1).to(tl.int64), start), total)
    n_items = tl.where(stop - start > packed_max, tl.cdiv(stop - start, CHUNK), 0)  # short ones: the packed kernel
    first = last - n_items
    n_items = tl.where(valid, n_items, 0)
    chunk_start = start + (item - first) * CHUNK
    chunk_stop = tl.minimum(chunk_start + CHUNK, stop)
    chunk_stop = tl.where(valid, chunk_stop, chunk_start)  # surplus items: nothing to do
    return first, n_items, chunk_start, chunk_stop


@triton.jit
def _ragged_softmax_pass1_kernel(
    out_ptr,
    values_ptr,
    offsets_ptr,
    item_seg_ptr,
    cum_items_ptr,
    part_max_ptr,
    part_sum_ptr,
    n_segments,
    total,
    n_cols,
    packed_max,
    CHUNK: tl.constexpr,
    HB: tl.constexpr,
):
    # one read of the item's rows; writes y (one-item segment) or a (max, sum) partial per column
    item = tl.program_id(axis=0).to(tl.int64)
    cols = tl.program_id(axis=1) * HB + tl.arange(0, HB)
    first, n_items, chunk_start, chunk_stop = _item_bounds(
        item_seg_ptr, cum_items_ptr, offsets_ptr, n_segments, total, item, packed_max, CHUNK
    )
    rows = chunk_start + tl.arange(0, CHUNK)
    mask = (rows < chunk_stop)[:, None] & (cols < n_cols)[None, :]
    offsets = rows[:, None] * n_cols + cols[None, :]
    x = tl.load(values_ptr + offsets, mask=mask, other=-float("inf")).to(tl.float32)
    col_max = tl.max(x, axis=0)
    shift = tl.where(col_max == -float("inf"), 0.0, col_max)  # an all -inf column: sum 0 (y = 0/0 = NaN as torch)
    e = tl.where(mask, tl.exp(x - shift[None, :]), 0.0)
    col_sum = tl.sum(e, axis=0)
    if n_items == 1:
        tl.store(out_ptr + offsets, e * (1.0 / col_sum)[None, :], mask=mask)
    elif n_items > 1:
        col_ok = cols < n_cols
        tl.store(part_max_ptr + item * n_cols + cols, col_max, mask=col_ok)
        tl.store(part_sum_ptr + item * n_cols + cols, col_sum, mask=col_ok)


@triton.jit
def _ragged_softmax_pass2_kernel(
    out_ptr,
    values_ptr,
    offsets_ptr,
    item_seg_ptr,
    cum_items_ptr,
    part_max_ptr,
    part_sum_ptr,
    n_segments,
    total,
    n_cols,
    packed_max,
    CHUNK: tl.constexpr,
    HB: tl.constexpr,
):
    # multi-item segments: combine the segment's partials, re-read the item's rows, write y
    item = tl.program_id(axis=0).to(tl.int64)
    cols = tl.program_id(axis=1) * HB + tl.arange(0, HB)
    first, n_items, chunk_start, chunk_stop = _item_bounds(
        item_seg_ptr, cum_items_ptr, offsets_ptr, n_segments, total, item, packed_max, CHUNK
    )
    if n_items > 1:
        col_ok = cols < n_cols
        seg_max = tl.full([HB], -float("inf"), tl.float32)
        for k in range(first, first + n_items):
            seg_max = tl.maximum(seg_max, tl.load(part_max_ptr + k * n_cols + cols, mask=col_ok, other=0.0))
        shift = tl.where(seg_max == -float("inf"), 0.0, seg_max)
        seg_sum = tl.zeros([HB], tl.float32)
        for k in range(first, first + n_items):
            m = tl.load(part_max_ptr + k * n_cols + cols, mask=col_ok, other=0.0)
            s = tl.load(part_sum_ptr + k * n_cols + cols, mask=col_ok, other=0.0)
            seg_sum += s * tl.exp(m - shift)
        rows = chunk_start + tl.arange(0, CHUNK)
        mask = (rows < chunk_stop)[:, None] & col_ok[None, :]
        offsets = rows[:, None] * n_cols + cols[None, :]
        x = tl.load(values_ptr + offsets, mask=mask, other=-float("inf")).to(tl.float32)
        tl.store(out_ptr + offsets, tl.exp(x - seg_max[None, :]) * (1.0 / seg_sum)[None, :], mask=mask)


@triton.jit
def _ragged_backward_pass1_kernel(
    dx_ptr,
    y_ptr,
    dy_ptr,
    offsets_ptr,
    item_seg_ptr,
    cum_items_ptr,
    part_dot_ptr,
    n_segments,
    total,
    n_cols,
    packed_max,
    CHUNK: tl.constexpr,
    HB: tl.constexpr,
):
    item = tl.program_id(axis=0).to(tl.int64)
    cols = tl.program_id(axis=1) * HB + tl.arange(0, HB)
    first, n_items, chunk_start, chunk_stop = _item_bounds(
        item_seg_ptr, cum_items_ptr, offsets_ptr, n_segments, total, item, packed_max, CHUNK
    )
    rows = chunk_start + tl.arange(0, CHUNK)
    mask = (rows < chunk_stop)[:, None] & (cols < n_cols)[None, :]
    offsets = rows[:, None] * n_cols + cols[None, :]
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    dot = tl.sum(y * dy, axis=0)
    if n_items == 1:
        tl.store(dx_ptr + offsets, y * (dy - dot[None, :]), mask=mask)
    elif n_items > 1:
        tl.store(part_dot_ptr + item * n_cols + cols, dot, mask=cols < n_cols)


@triton.jit
def _ragged_backward_pass2_kernel(
    dx_ptr,
    y_ptr,
    dy_ptr,
    offsets_ptr,
    item_seg_ptr,
    cum_items_ptr,
    part_dot_ptr,
    n_segments,
    total,
    n_cols,
    packed_max,
    CHUNK: tl.constexpr,
    HB: tl.constexpr,
):
    item = tl.program_id(axis=0).to(tl.int64)
    cols = tl.program_id(axis=1) * HB + tl.arange(0, HB)
    first, n_items, chunk_start, chunk_stop = _item_bounds(
        item_seg_ptr, cum_items_ptr, offsets_ptr, n_segments, total, item, packed_max, CHUNK
    )
    if n_items > 1:
        col_ok = cols < n_cols
        dot = tl.zeros([HB], tl.float32)
        for k in range(first, first + n_items):
            dot += tl.load(part_dot_ptr + k * n_cols + cols, mask=col_ok, other=0.0)
        rows = chunk_start + tl.arange(0, CHUNK)
        mask = (rows < chunk_stop)[:, None] & col_ok[None, :]
        offsets = rows[:, None] * n_cols + cols[None, :]
        y = tl.load(y_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        tl.store(dx_ptr + offsets, y * (dy - dot[None, :]), mask=mask)


@triton.jit
def _packed_bounds(offsets_ptr, n_segments, total, low, high, SEGS: tl.constexpr, BLOCK: tl.constexpr):
    """SEGS consecutive segments of this program: start rows, and which rows of the [SEGS, BLOCK] tile are theirs
    (segments of length in (low, high] only; the others belong to another launch)."""
    seg = tl.program_id(axis=0).to(tl.int64) * SEGS + tl.arange(0, SEGS)
    seg_ok = seg < n_segments
    start = tl.load(offsets_ptr + seg, mask=seg_ok, other=0).to(tl.int64)
    stop = tl.load(offsets_ptr + seg + 1, mask=seg_ok, other=0).to(tl.int64)
    start = tl.minimum(tl.maximum(start, 0), total)
    stop = tl.minimum(tl.maximum(stop, start), total)
    n = stop - start
    take = seg_ok & (n > low) & (n <= high)
    lanes = tl.arange(0, BLOCK)
    return start[:, None, None] + lanes[None, :, None], take[:, None, None] & (lanes[None, :, None] < n[:, None, None])


@triton.jit
def _ragged_softmax_packed_kernel(
    out_ptr,
    values_ptr,
    offsets_ptr,
    n_segments,
    total,
    n_cols,
    low,
    high,
    SEGS: tl.constexpr,
    BLOCK: tl.constexpr,
    HB: tl.constexpr,
):
    # SEGS short segments per program, each a row of a [SEGS, BLOCK, HB] tile: read once, written once
    rows, in_segment = _packed_bounds(offsets_ptr, n_segments, total, low, high, SEGS, BLOCK)
    cols = (tl.program_id(axis=1) * HB + tl.arange(0, HB))[None, None, :]
    mask = in_segment & (cols < n_cols)
    offsets = rows * n_cols + cols
    x = tl.load(values_ptr + offsets, mask=mask, other=-float("inf")).to(tl.float32)
    col_max = tl.max(x, axis=1)
    shift = tl.where(col_max == -float("inf"), 0.0, col_max)  # an all -inf column: 0/0 = NaN, as torch
    e = tl.where(mask, tl.exp(x - shift[:, None, :]), 0.0)
    tl.store(out_ptr + offsets, e * (1.0 / tl.sum(e, axis=1))[:, None, :], mask=mask)


@triton.jit
def _ragged_backward_packed_kernel(
    dx_ptr,
    y_ptr,
    dy_ptr,
    offsets_ptr,
    n_segments,
    total,
    n_cols,
    low,
    high,
    SEGS: tl.constexpr,
    BLOCK: tl.constexpr,
    HB: tl.constexpr,
):
    rows, in_segment = _packed_bounds(offsets_ptr, n_segments, total, low, high, SEGS, BLOCK)
    cols = (tl.program_id(axis=1) * HB + tl.arange(0, HB))[None, None, :]
    mask = in_segment & (cols < n_cols)
    offsets = rows * n_cols + cols
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    dot = tl.sum(y * dy, axis=1)
    tl.store(dx_ptr + offsets, y * (dy - dot[:, None, :]), mask=mask)


PACKED_BLOCKS = (64, 256, 1024, 4096)  # packed classes: segment lengths in (previous block, block]


def packed_classes(n_cols: int, packed_max: int) -> list[tuple[int, int, int, int]]:
    """(low, high, SEGS, BLOCK) of each packed launch: SEGS x BLOCK x next_pow2(H) <= TILE_ELEMENTS lanes."""
    hb = min(next_power_of_2(n_cols), MAX_COLUMN_BLOCK)
    classes, low = [], 0
    for block in PACKED_BLOCKS:
        if block > packed_max or block * hb > TILE_ELEMENTS:
            break
        classes.append((low, block, TILE_ELEMENTS // (block * hb), block))
        low = block
    return classes


def plan(n_rows: int, n_cols: int, dtype: torch.dtype, **tunables: int) -> LaunchPlan:
    """n_rows = T (total rows), n_cols = H. The item kernels' plan: grid (upper bound on items, cdiv(H, HB)); the
    item count itself is known only on the GPU (surplus programs exit), so `grid[0]` here is that bound for one
    segment: T / CHUNK + 1. Segments up to `packed_max` rows go to the packed launches instead (packed_classes)."""
    check_tunables(NAME, tunables, TUNABLES)
    if n_cols < 1:
        raise ValueError(f"{NAME}: H={n_cols}; allowed: H >= 1")
    hb = min(next_power_of_2(n_cols), MAX_COLUMN_BLOCK)
    chunk = check_power_of_2(NAME, "chunk", tunables.get("chunk", max(1, TILE_ELEMENTS // hb)), 1, 65536)
    num_warps = check_int_choice(
        NAME, "num_warps", tunables.get("num_warps", min(16, max(1, chunk * hb // 256))), NUM_WARPS_ALLOWED
    )
    packed_max = check_int_choice(NAME, "packed_max", tunables.get("packed_max", 0), (0, *PACKED_BLOCKS))
    classes = packed_classes(n_cols, packed_max)
    packed_max = classes[-1][1] if classes else 0
    return LaunchPlan(
        variant=NAME,
        kernel_name="_ragged_softmax_pass1_kernel",
        n_rows=n_rows,
        n_cols=n_cols,
        dtype=dtype,
        grid=(triton.cdiv(n_rows, chunk) + 1, triton.cdiv(n_cols, hb)),
        num_warps=num_warps,
        num_stages=1,
        tile_width=chunk * hb,
        rows_per_program=chunk,
        constexprs={"CHUNK": chunk, "HB": hb},
        scalar_args={"total": n_rows, "n_cols": n_cols, "packed_max": packed_max},
        tunables={"chunk": chunk, "num_warps": num_warps, "packed_max": packed_max},
    )


# ---- input checks ---------------------------------------------------------------------------------------------


def check_inputs(values: object, offsets: object) -> None:
    """Shape, dtype and device checks (no data reads): TypeError/ValueError naming what is allowed."""
    if not isinstance(values, torch.Tensor):
        raise TypeError(f"ragged_softmax: values must be a torch.Tensor, got {type(values).__name__}")
    if not isinstance(offsets, torch.Tensor):
        raise TypeError(f"ragged_softmax: offsets must be a torch.Tensor, got {type(offsets).__name__}")
    if values.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"ragged_softmax: values are {values.dtype}; allowed: float16, bfloat16, float32")
    if values.dim() not in (1, 2):
        raise ValueError(f"ragged_softmax: values have shape {tuple(values.shape)}; allowed: (T,) or (T, H)")
    if values.dim() == 2 and values.shape[1] == 0:
        raise ValueError("ragged_softmax: values have H = 0 columns; allowed: H >= 1")
    if offsets.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"ragged_softmax: offsets are {offsets.dtype}; allowed: torch.int32 or torch.int64")
    if offsets.dim() != 1 or offsets.numel() < 1:
        raise ValueError(f"ragged_softmax: offsets have shape {tuple(offsets.shape)}; allowed: (B + 1,), B >= 0")
    if offsets.device != values.device:
        raise ValueError(
            f"ragged_softmax: offsets are on {offsets.device} and values on {values.device}; allowed: the same device"
        )
    width = values.shape[1] if values.dim() == 2 else 1
    if values.numel() and (values.stride(0) != width or (values.dim() == 2 and values.stride(1) != 1)):
        raise ValueError(
            f"ragged_softmax: values have strides {values.stride()}; allowed: contiguous rows ((H, 1) for (T, H), "
            "(1,) for (T,)): call .contiguous()"
        )


def check_offsets(offsets: torch.Tensor, total: int) -> None:
    """offsets[0] == 0, offsets[-1] == T and non-decreasing: one host sync. ValueError names the first violation."""
    if offsets.numel() == 1:
        bad = offsets[0] != 0
    else:
        bad = (offsets[0] != 0) | (offsets[-1] != total) | (offsets[1:] < offsets[:-1]).any()
    if not bool(bad):
        return
    first, last = int(offsets[0]), int(offsets[-1])
    if first != 0 or (offsets.numel() > 1 and last != total):
        raise ValueError(
            f"ragged_softmax: offsets run from {first} to {last} over T = {total} rows; allowed: offsets[0] == 0 "
            "and offsets[-1] == T"
        )
    where = int((offsets[1:] < offsets[:-1]).nonzero()[0])
    raise ValueError(
        f"ragged_softmax: offsets decrease at index {where} ({int(offsets[where])} > {int(offsets[where + 1])}); "
        "allowed: non-decreasing offsets"
    )


def _check_device(t: torch.Tensor) -> None:
    if t.is_cuda or (t.device.type == "cpu" and interpreting() and triton_interprets()):
        return
    raise ValueError(
        f"ragged_softmax: values are on {t.device}; allowed: a cuda tensor (or a cpu tensor with TRITON_INTERPRET=1 "
        "set before importing triton)"
    )


# ---- launchers ------------------------------------------------------------------------------------------------


def _schedule(offsets: torch.Tensor, total: int, chunk: int, packed_max: int) -> tuple[torch.Tensor, torch.Tensor, int]:
    """(segment of each item, cumulative items per segment, item bound) built on the GPU without a sync. Segments
    of at most `packed_max` rows have no items (the packed launches take them)."""
    lengths = (offsets[1:] - offsets[:-1]).to(torch.int64).clamp_(min=0)
    items = torch.where(lengths > packed_max, (lengths + chunk - 1) // chunk, 0)
    cum_items = torch.cumsum(items, 0)
    bound = total // chunk + offsets.numel()  # >= sum(cdiv(n_i, chunk)) = sum(n_i // chunk) + (segments with rest)
    item_seg = torch.searchsorted(cum_items, torch.arange(bound, device=offsets.device), right=True)
    return item_seg, cum_items, bound


def _launch(kernels, packed_kernel, out_args, tensors, offsets, total, n_cols, dtype, tunables, n_partials):
    """The packed launches (short segments), then the two item passes (the rest)."""
    launch = plan(total, n_cols, dtype, **tunables)
    chunk, hb = launch.constexprs["CHUNK"], launch.constexprs["HB"]
    packed_max = launch.scalar_args["packed_max"]
    n_segments = offsets.numel() - 1
    column_blocks = triton.cdiv(n_cols, hb)
    for low, high, segs, block in packed_classes(n_cols, packed_max):
        launch_kernel(
            packed_kernel,
            (triton.cdiv(n_segments, segs), column_blocks),
            (*out_args, *tensors, offsets, n_segments, total, n_cols, low, high),
            {"SEGS": segs, "BLOCK": block, "HB": hb},
            min(16, max(1, segs * block * hb // 512)),
            1,
        )
    item_seg, cum_items, bound = _schedule(offsets, total, chunk, packed_max)
    device = offsets.device
    partials = [torch.empty((bound, n_cols), dtype=torch.float32, device=device) for _ in range(n_partials)]
    grid = (bound, column_blocks)
    args = (*out_args, *tensors, offsets, item_seg, cum_items, *partials, n_segments, total, n_cols, packed_max)
    for kernel in kernels:
        launch_kernel(kernel, grid, args, launch.constexprs, launch.num_warps, 1)


def ragged_softmax_forward(
    values: torch.Tensor, offsets: torch.Tensor, check: bool = True, **tunables: int
) -> torch.Tensor:
    """The forward launcher (no autograd): y of values' shape and dtype. `check` validates offsets' contents (one
    host sync; skipped while a CUDA graph is being captured, where rows are clamped into [0, T] instead)."""
    check_inputs(values, offsets)
    _check_device(values)
    total = values.shape[0]
    if check and not (values.is_cuda and torch.cuda.is_current_stream_capturing()):
        check_offsets(offsets, total)
    output = torch.empty_like(values, memory_format=torch.contiguous_format)
    if values.numel() == 0 or offsets.numel() < 2:
        return output
    n_cols = values.shape[1] if values.dim() == 2 else 1
    kernels = (_ragged_softmax_pass1_kernel, _ragged_softmax_pass2_kernel)
    packed = _ragged_softmax_packed_kernel
    _launch(kernels, packed, (output,), (values,), offsets, total, n_cols, values.dtype, tunables, 2)
    return output


def ragged_softmax_backward(y: torch.Tensor, dy: torch.Tensor, offsets: torch.Tensor, **tunables: int) -> torch.Tensor:
    """dx = y * (dy - sum over the segment of dy * y), per column, in y's dtype."""
    y = y.contiguous()
    dy = dy.contiguous()
    dx = torch.empty_like(y)
    if y.numel() == 0 or offsets.numel() < 2:
        return dx
    n_cols = y.shape[1] if y.dim() == 2 else 1
    kernels = (_ragged_backward_pass1_kernel, _ragged_backward_pass2_kernel)
    _launch(kernels, _ragged_backward_packed_kernel, (dx,), (y, dy), offsets, y.shape[0], n_cols, y.dtype, tunables, 1)
    return dx


# ---- custom ops and autograd ----------------------------------------------------------------------------------


@torch.library.custom_op("blockscope::ragged_softmax", mutates_args=())
def ragged_softmax_op(values: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return ragged_softmax_forward(values, offsets)


@ragged_softmax_op.register_fake
def _(values, offsets):
    check_inputs(values, offsets)
    return torch.empty(values.shape, dtype=values.dtype, device=values.device)


@torch.library.custom_op("blockscope::ragged_softmax_backward", mutates_args=())
def ragged_softmax_backward_op(y: torch.Tensor, dy: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return ragged_softmax_backward(y, dy, offsets)


@ragged_softmax_backward_op.register_fake
def _(y, dy, offsets):
    return torch.empty(y.shape, dtype=y.dtype, device=y.device)


def _setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
    ctx.save_for_backward(output, inputs[1])


def _backward(ctx, dy: torch.Tensor):
    y, offsets = ctx.saved_tensors
    return ragged_softmax_backward_op(y, dy, offsets), None


ragged_softmax_op.register_autograd(_backward, setup_context=_setup_context)


def ragged_softmax(values: torch.Tensor, offsets: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax over dim 0 within each segment values[offsets[i]:offsets[i+1]], per trailing column.

    values: (T,) or (T, H) fp16/bf16/fp32 with contiguous rows; offsets: (B + 1,) int32/int64 on values' device,
    offsets[0] == 0, non-decreasing, offsets[-1] == T (checked: one host sync per call, skipped during CUDA-graph
    capture). Empty segments produce nothing; a length-1 segment gives 1. Or pass a jagged nested tensor
    (torch.nested, layout=torch.jagged, shape (B, j) or (B, j, H), no holes) and no offsets: softmax over its ragged
    dim, returned as a nested tensor on the same offsets. Differentiable; compilable (blockscope::ragged_softmax).
    """
    if isinstance(values, torch.Tensor) and values.is_nested:
        if offsets is not None:
            raise ValueError("ragged_softmax: a nested tensor carries its offsets; allowed: offsets=None")
        if values.layout != torch.jagged:
            raise ValueError(f"ragged_softmax: nested layout {values.layout}; allowed: torch.jagged")
        if values.dim() not in (2, 3) or getattr(values, "_ragged_idx", 1) != 1 or values.lengths() is not None:
            raise ValueError(
                "ragged_softmax: allowed nested tensors are (B, j) or (B, j, H) with the ragged dim 1 and no holes "
                "(lengths() is None)"
            )
        flat, nested_offsets = values.values(), values.offsets()
        y = ragged_softmax(flat, nested_offsets)
        return torch.nested.nested_tensor_from_jagged(y, nested_offsets)
    if offsets is None:
        raise TypeError("ragged_softmax: offsets are missing; allowed: a (B + 1,) int tensor, or a nested tensor")
    check_inputs(values, offsets)
    if torch.compiler.is_compiling() or (values.requires_grad and torch.is_grad_enabled()):
        return torch.ops.blockscope.ragged_softmax(values, offsets)
    return ragged_softmax_forward(values, offsets)
