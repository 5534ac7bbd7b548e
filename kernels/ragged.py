"""Ragged (variable-length) softmax: softmax over dim 0 within each segment values[offsets[i]:offsets[i+1]],
independently per trailing column, for values (T,) or (T, H) and int32/int64 offsets of length B + 1.

Design 1 (default; issue 35): length classes. Three launches after one memset of 8 counters, no host sync (CUDA
graphs capture it):
  bucket  one program per 128 segments reads their offsets once and appends each non-empty segment's (start, stop)
          to its class's list (rows up to TILE_ROWS / 64, / 16, / 4, TILE_ROWS: four small classes; up to BIG_ROWS:
          the big class; longer: CHUNK = BIG_ROWS-row chunk entries), one relaxed atomic per class per program
  big     persistent, a work queue: the long segments' chunks first (read once, write a per-column (max, sum)
          partial), then one big-class segment per item, whole in registers (x read once, y written once)
  small   persistent, a work queue: the long segments' chunks (combine the segment's partials, re-read the chunk,
          write y), then the small classes, SEGS = TILE_ROWS / BLOCK segments per item as the rows of one
          [SEGS, BLOCK, HB] tile (every small class has the same TILE lanes, hence one launch for all four)
So values are read once and written once, except long segments' (read twice); a program reads its segment's
bounds straight from its class list (no item -> segment map). 1-D values move as 16-byte vectors (`vec`, the
default): a segment's tile starts at the vector boundary below it, the vectors it fills are loaded and stored whole
and its partial vectors at both ends element by element (nothing outside the segment is read). The backward
(dx = y * (dy - sum over the segment of dy * y)) runs the same launches (dot partials).

Design 0 (`design=0`, or its tunables `chunk` / `packed_max`): the earlier items of at most CHUNK rows: a segment
of n rows is cdiv(n, CHUNK) items, the item -> (segment, chunk) map built by torch (cumsum + searchsorted), pass 1
per item (a one-item segment finished there; else a (max, sum) partial), pass 2 for multi-item segments; short
segments optionally packed several per program (`packed_max`). Offsets are 64-bit inside both designs.
"""

from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl

from ._common import (
    NUM_WARPS_ALLOWED,
    SUPPORTED_DTYPES,
    VECTOR_BYTES,
    check_int_choice,
    check_power_of_2,
    check_tunables,
    interpreting,
    next_power_of_2,
    triton_interprets,
)
from ._common import launch as launch_kernel
from .plan import LaunchPlan
from .vectors import partial_ends, whole_vectors

NAME = "ragged"
TILE_ELEMENTS = 512  # default CHUNK x next_pow2(H) lanes per program (H200: 512-1024 lanes beat 8192 by 2.6-5x)
MAX_COLUMN_BLOCK = 256  # H wider than this spreads over a second grid axis
DESIGNS = (0, 1)  # 0: items of CHUNK rows (two passes, item -> segment map); 1: length classes (default)
TUNABLES = {
    "design": "1 (default): segments bucketed into length classes on the GPU, a class's segment read once from "
    "registers, long ones split into chunks; 0: the earlier design, every segment in items of CHUNK rows",
    "tile": "design 1: lanes (SEGS x BLOCK x next_pow2(H)) of a small-class program, a power of two from 256 to "
    "8192; default 2048",
    "max_lanes": "design 1: lanes of a big-class program and of a long segment's chunk, a power of two from 512 "
    "to 32768; default 8192 (at least 2 x tile is used)",
    "big_warps": f"design 1: warps of the big-class program, one of {NUM_WARPS_ALLOWED}; default max_lanes / 1024 "
    "clamped to 1..16",
    "vec": "design 1: 1 (default) loads and stores 1-D values as whole 16-byte vectors (8 16-bit or 4 fp32 "
    "elements) from the vector boundary below each segment, its ends masked in registers and stored element by "
    "element (used where the tensors are 16-byte aligned; else as 0); 0: element by element",
    "fused": "design 1: 1 runs the big and small launches as one (one queue; chunk pass 2 last, after pass 1 is "
    "done), at big_warps / big_maxnreg; 0: two launches; default 1 for the forward of 2 to 8 columns (H200, uniform "
    "lengths, with big_maxnreg 80: 1.42x at H = 2-8 fp16, 1.18x fp32, 1.11x long tail), else 0",
    "maxnreg": "design 1: register cap per thread of the small-class program (Triton's maxnreg: more programs per "
    "SM, or spills), 0 (none) or 32 to 255; default 80 for 1-D values at 4 warps and tile <= 2048 (H200, long "
    "tail fp16: 82 -> 79 us forward), else 0",
    "big_maxnreg": "design 1: register cap per thread of the big-class program, 0 (none) or 32 to 255; default at 8 "
    "warps and max_lanes <= 8192: forward 64 for 1-D values (H200: 198 -> 138 us on uniform fp16) and over 8 "
    "columns (1.32x at H = 16, 1.2x at 64), 80 for 2 to 8 columns; backward 80 for 1-D values (with maxnreg 80: "
    "1.18x on uniform fp16), 0 for 2-D ones; else 0",
    "packed_max": "design 0: longest segment packed several per program, 0 or one of 64, 256, 1024, 4096; default 0 "
    "(every segment in items; capped where packed_max x next_pow2(H) > 512)",
    "chunk": "design 0: rows per item, a power of two from 1 to 65536; default max(1, 512 // next_pow2(H))",
    "num_warps": f"warps per program (design 1: of the small-class program), one of {NUM_WARPS_ALLOWED}; default "
    "design 1: tile / 512 clamped to 1..16; design 0: CHUNK x HB / 256 clamped to 1..16",
}
OLD_ONLY, NEW_ONLY = (
    ("packed_max", "chunk"),
    ("tile", "max_lanes", "big_warps", "maxnreg", "big_maxnreg", "vec", "fused"),
)
BUCKET_SEGMENTS = 128  # segments per program of the bucket kernel (H200: 1.06x at 128 vs 512 on the long tail)


def design_tunables(tunables: dict) -> dict:
    """Design 1's tunables with defaults filled in (ValueError names what is allowed)."""
    check_tunables(NAME, tunables, TUNABLES)
    tile = check_power_of_2(NAME, "tile", tunables.get("tile", 2048), 256, 8192)
    max_lanes = check_power_of_2(NAME, "max_lanes", tunables.get("max_lanes", 8192), 512, 32768)
    warps = tunables.get("num_warps", min(16, max(1, tile // 512)))
    big_warps = tunables.get("big_warps", min(16, max(1, max(max_lanes, 2 * tile) // 1024)))
    vec = check_int_choice(NAME, "vec", tunables.get("vec", DEFAULT_VEC), (0, 1))
    return {
        "tile": tile,
        "max_lanes": max_lanes,
        "num_warps": check_int_choice(NAME, "num_warps", warps, NUM_WARPS_ALLOWED),
        "big_warps": check_int_choice(NAME, "big_warps", big_warps, NUM_WARPS_ALLOWED),
        **{k: _check_maxnreg(k, tunables.get(k, DEFAULT_MAXNREG[k])) for k in ("maxnreg", "big_maxnreg")},
        "vec": vec,
        "fused": None if tunables.get("fused") is None else check_int_choice(NAME, "fused", tunables["fused"], (0, 1)),
    }


DEFAULT_MAXNREG = {"maxnreg": None, "big_maxnreg": None}  # None: the launcher's default (_launch_classes)
DEFAULT_VEC = 1


def _check_maxnreg(name: str, value: object) -> int:
    if value is None:
        return value  # the launcher's default
    if isinstance(value, bool) or not isinstance(value, int) or not (value == 0 or 32 <= value <= 255):
        raise ValueError(f"{NAME}: {name}={value!r} is not allowed; allowed: 0 (none) or an integer from 32 to 255")
    return value


def design_of(tunables: dict) -> int:
    """The design a call's tunables select: `design` if given, else 0 when a design-0-only tunable is given."""
    if "design" in tunables:
        design = check_int_choice(NAME, "design", tunables["design"], DESIGNS)
        wrong = [k for k in (NEW_ONLY if design == 0 else OLD_ONLY) if k in tunables]
        if wrong:
            raise ValueError(
                f"{NAME}: {', '.join(wrong)} do not apply to design={design}; allowed: {TUNABLES['design']}"
            )
        return design
    return 0 if any(k in tunables for k in OLD_ONLY) else 1


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
    design = design_of(tunables)
    tunables = {k: v for k, v in tunables.items() if k != "design"}
    hb = min(next_power_of_2(n_cols), MAX_COLUMN_BLOCK)
    if design == 1:
        tun = design_tunables(tunables)
        layout = class_layout(n_rows, n_rows, n_cols, tun["tile"], tun["max_lanes"])
        return LaunchPlan(
            variant=NAME,
            kernel_name="_ragged_small_kernel",
            n_rows=n_rows,
            n_cols=n_cols,
            dtype=dtype,
            grid=(2, triton.cdiv(n_cols, hb)),
            num_warps=tun["num_warps"],
            num_stages=1,
            tile_width=tun["tile"],
            rows_per_program=layout["TILE_ROWS"],
            constexprs={"TILE_ROWS": layout["TILE_ROWS"], "BIG_ROWS": layout["BIG_ROWS"], "HB": hb},
            scalar_args={"total": n_rows, "n_cols": n_cols},
            tunables={"design": 1, **tun},
            grid_resolved_at_launch=True,
        )
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
        tunables={"design": 0, "chunk": chunk, "num_warps": num_warps, "packed_max": packed_max},
    )


# ---- the class design (default, design=1) ---------------------------------------------------------------------
# A bucket kernel sorts the segments into length classes on the GPU (one atomic per class per program of 128
# segments, no host sync); then two persistent launches take every class list with no item -> segment indirection:
#   big    one segment of (TILE, MAX] lanes per work item, in registers (read once, written once); before them,
#          every CHUNK (= MAX lanes) piece of a long segment (> MAX lanes), writing its per-column partial
#   small  chunk pass 2 of the long segments (combine the partials, re-read the chunk, write), then the four small
#          classes, SEGS segments of up to BLOCK rows per program as the rows of a [SEGS, BLOCK, HB] tile
#          (SEGS x BLOCK x HB = TILE lanes: every class has the same registers, so one launch serves them all)
# Work items run in the order above, round-robin over the programs (largest first, so the tails are short).

SMALL_CLASSES = 4  # rows up to TILE_ROWS / 64, / 16, / 4, / 1 (a class is empty where two bounds coincide)
COUNTERS = SMALL_CLASSES + 4  # per small class, the big class, long chunks, the two launches' work queues (fused:
# its queue, and chunk pass-1 items done)
BIG_COUNTER = tl.constexpr(SMALL_CLASSES)  # counters[4]: big-class segments
CHUNK_COUNTER = tl.constexpr(SMALL_CLASSES + 1)  # counters[5]: chunks of long segments
BIG_QUEUE = tl.constexpr(SMALL_CLASSES + 2)  # counters[6]: work items claimed in the big launch
SMALL_QUEUE = tl.constexpr(SMALL_CLASSES + 3)  # counters[7]: work items claimed in the small launch


@triton.jit
def _bucket_place(bounds_ptr, start, stop, flag, slot):
    """Write the flagged segments' (start, stop) pairs from list position `slot` on, in segment order."""
    pos = (slot + tl.cumsum(flag, axis=0) - 1).to(tl.int64)
    tl.store(bounds_ptr + 2 * pos, start, mask=flag > 0)
    tl.store(bounds_ptr + 2 * pos + 1, stop, mask=flag > 0)


@triton.jit
def _ragged_bucket_kernel(
    offsets_ptr,
    counters_ptr,
    bounds_ptr,
    entries_ptr,
    n_segments,
    total,
    base1,
    base2,
    base3,
    base4,
    BB: tl.constexpr,
    H0: tl.constexpr,
    H1: tl.constexpr,
    H2: tl.constexpr,
    H3: tl.constexpr,
    BIG_ROWS: tl.constexpr,
    ALIGN: tl.constexpr,
):
    # read offsets once (B + 1 ints) + write 2 ints per non-empty segment (its start, stop in its class's list) and
    # 4 per chunk of a long segment (> BIG_ROWS rows); one atomic per class per program reserves the slots
    i = tl.program_id(axis=0).to(tl.int64) * BB + tl.arange(0, BB)
    ok = i < n_segments
    start = tl.load(offsets_ptr + i, mask=ok, other=0).to(tl.int64)
    stop = tl.load(offsets_ptr + i + 1, mask=ok, other=0).to(tl.int64)
    start = tl.minimum(tl.maximum(start, 0), total)
    stop = tl.minimum(tl.maximum(stop, start), total)
    n = tl.where(ok, stop - start, 0)
    # a class holds the span from the ALIGN-row boundary at or below start (tiles of whole vectors load from
    # there); a long segment's chunks are BIG_ROWS-row pieces from that boundary (every span <= BIG_ROWS)
    aligned = start - start % ALIGN
    span = tl.where(n > 0, stop - aligned, 0)
    f0 = ((span > 0) & (span <= H0)).to(tl.int32)
    f1 = ((span > H0) & (span <= H1)).to(tl.int32)
    f2 = ((span > H1) & (span <= H2)).to(tl.int32)
    f3 = ((span > H2) & (span <= H3)).to(tl.int32)
    f4 = ((span > H3) & (span <= BIG_ROWS)).to(tl.int32)
    chunks = tl.where(span > BIG_ROWS, tl.cdiv(span, BIG_ROWS), 0)
    # the six reservations are independent (relaxed): all in flight at once, waited for at their first use
    s0 = tl.atomic_add(counters_ptr, tl.sum(f0, axis=0), sem="relaxed")
    s1 = tl.atomic_add(counters_ptr + 1, tl.sum(f1, axis=0), sem="relaxed")
    s2 = tl.atomic_add(counters_ptr + 2, tl.sum(f2, axis=0), sem="relaxed")
    s3 = tl.atomic_add(counters_ptr + 3, tl.sum(f3, axis=0), sem="relaxed")
    s4 = tl.atomic_add(counters_ptr + BIG_COUNTER, tl.sum(f4, axis=0), sem="relaxed")
    slot = tl.atomic_add(counters_ptr + CHUNK_COUNTER, tl.sum(chunks, axis=0).to(tl.int32), sem="relaxed")
    _bucket_place(bounds_ptr, start, stop, f0, s0)
    _bucket_place(bounds_ptr, start, stop, f1, base1 + s1)
    _bucket_place(bounds_ptr, start, stop, f2, base2 + s2)
    _bucket_place(bounds_ptr, start, stop, f3, base3 + s3)
    _bucket_place(bounds_ptr, start, stop, f4, base4 + s4)
    first = slot + tl.cumsum(chunks, axis=0) - chunks  # each long segment's chunks are consecutive entries
    for k in range(0, tl.max(chunks, axis=0)):
        take = k < chunks
        entry = (first + k) * 4
        chunk_base = aligned + k * BIG_ROWS
        tl.store(entries_ptr + entry, tl.maximum(chunk_base, start), mask=take)
        tl.store(entries_ptr + entry + 1, tl.minimum(chunk_base + BIG_ROWS, stop), mask=take)
        tl.store(entries_ptr + entry + 2, first, mask=take)
        tl.store(entries_ptr + entry + 3, chunks, mask=take)


@triton.jit
def _tile_finish(out_ptr, a_ptr, b_ptr, base, offsets, mask, BACKWARD: tl.constexpr):
    """Softmax (or its backward, dx = y * (dy - sum(dy * y))) of each [BLOCK, HB] slice of a [SEGS, BLOCK, HB] tile
    along axis 1, the whole segment in registers: read x (or y, dy) once + write y (or dx) once. Elements at
    base (int64, [SEGS, 1, 1], a segment's first element) + offsets (int32 within the segment)."""
    a_ptr += base
    b_ptr += base
    out_ptr += base
    if BACKWARD:
        y = tl.load(a_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(b_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        dot = tl.sum(y * dy, axis=1)
        tl.store(out_ptr + offsets, y * (dy - dot[:, None, :]), mask=mask)
    else:
        x = tl.load(a_ptr + offsets, mask=mask, other=-float("inf")).to(tl.float32)
        col_max = tl.max(x, axis=1)
        shift = tl.where(col_max == -float("inf"), 0.0, col_max)  # an all -inf column: 0/0 = NaN, as torch
        e = tl.exp(x - shift[:, None, :])  # masked lanes hold -inf: e = 0 there (no mask kept live to here)
        tl.store(out_ptr + offsets, e * (1.0 / tl.sum(e, axis=1))[:, None, :], mask=mask)


@triton.jit
def _vec_load(a_ptr, b_ptr, lanes, body, rows, ok, BACKWARD: tl.constexpr):
    """The segment's whole vectors and its two ends (rows outside it masked): forward (x, x, x_ends, x_ends, max
    over both), backward (y, dy, y_ends, dy_ends, sum of y * dy over both); the statistic per row as [S, 1], a
    scalar when S = 1 (whole-tile reductions: the ends keep their own one-element-per-thread layout)."""
    if BACKWARD:
        u = tl.load(a_ptr + lanes, mask=body, other=0.0).to(tl.float32)
        v = tl.load(b_ptr + lanes, mask=body, other=0.0).to(tl.float32)
        u_ends = tl.load(a_ptr + rows, mask=ok, other=0.0).to(tl.float32)
        v_ends = tl.load(b_ptr + rows, mask=ok, other=0.0).to(tl.float32)
        stat = _row_sum(u * v) + _row_sum(u_ends * v_ends)
    else:
        u = tl.load(a_ptr + lanes, mask=body, other=-float("inf")).to(tl.float32)
        u_ends = tl.load(a_ptr + rows, mask=ok, other=-float("inf")).to(tl.float32)
        v = u
        v_ends = u_ends
        stat = tl.maximum(_row_max(u), _row_max(u_ends))
    return u, v, u_ends, v_ends, stat


@triton.jit
def _row_sum(t):
    """Sum over axis 1 as [S, 1], or over the whole tile as a scalar when S = 1 (as _vec_load's statistics)."""
    if t.shape[0] == 1:
        r = tl.sum(t)
    else:
        r = tl.sum(t, axis=1)[:, None]
    return r


@triton.jit
def _row_max(t):
    """Max over axis 1 as [S, 1], or over the whole tile as a scalar when S = 1."""
    if t.shape[0] == 1:
        r = tl.max(t)
    else:
        r = tl.max(t, axis=1)[:, None]
    return r


@triton.jit
def _tile_finish_vec(out_ptr, a_ptr, b_ptr, start, stop, BLOCK: tl.constexpr, VEC: tl.constexpr,
                     BACKWARD: tl.constexpr):  # fmt: skip
    """_tile_finish for 1-D values in 16-byte vectors (VEC elements): segment rows [start, stop) ([S] int64) lie in
    the BLOCK lanes from the VEC-aligned row at or below start (the bucket kernel classes segments by that span).
    The vectors the segment fills are loaded and stored whole, its partial vectors at both ends element by element;
    nothing outside the segment is read. Read x + write y once (backward: read y, dy + write dx)."""
    base = (start // VEC * VEC)[:, None]
    head = (start[:, None] - base).to(tl.int32)
    n = (stop[:, None] - base).to(tl.int32)
    lanes = tl.arange(0, BLOCK)[None, :]
    body = whole_vectors(lanes, head, n, VEC)
    rows, ok = partial_ends(head, n, VEC)
    a_ptr += base
    b_ptr += base
    out_ptr += base
    u, v, u_ends, v_ends, stat = _vec_load(a_ptr, b_ptr, lanes, body, rows, ok, BACKWARD)
    if BACKWARD:  # u, v = y, dy; stat = sum(y * dy)
        tl.store(out_ptr + lanes, u * (v - stat), mask=body)
        tl.store(out_ptr + rows, u_ends * (v_ends - stat), mask=ok)
    else:  # u = x; stat = max(x)
        shift = tl.where(stat == -float("inf"), 0.0, stat)  # an all -inf segment: 0/0 = NaN, as torch
        e = tl.exp(u - shift)
        e_ends = tl.exp(u_ends - shift)
        scale = 1.0 / (_row_sum(e) + _row_sum(e_ends))
        tl.store(out_ptr + lanes, e * scale, mask=body)
        tl.store(out_ptr + rows, e_ends * scale, mask=ok)


@triton.jit
def _chunk_partial(a_ptr, b_ptr, entries_ptr, part1_ptr, part2_ptr, entry, cols, n_cols, lanes, BACKWARD: tl.constexpr,
                   VEC: tl.constexpr):  # fmt: skip
    """Chunk pass 1 of a long segment: read its chunk (x, or y and dy) once + write a per-column partial: (max, sum of
    exp) or the dot of y and dy. VEC > 1 (1-D values): the chunk's whole vectors and its two ends
    (kernels/vectors.py)."""
    col_ok = cols < n_cols
    chunk_start = tl.load(entries_ptr + 4 * entry)
    if VEC > 1:
        chunk_stop = tl.load(entries_ptr + 4 * entry + 1)
        base = chunk_start // VEC * VEC
        head = (chunk_start - base).to(tl.int32)
        n = (chunk_stop - base).to(tl.int32)
        vec_lanes = tl.arange(0, lanes.shape[1])[None, :]
        rows, ok = partial_ends(head, n, VEC)
        u, _, u_ends, _, stat = _vec_load(a_ptr + base, b_ptr + base, vec_lanes, whole_vectors(vec_lanes, head, n, VEC),
                                          rows, ok, BACKWARD)  # fmt: skip
        column = tl.zeros(cols.shape, tl.float32)  # one column: the scalar statistics stored as cols' shape
        tl.store(part1_ptr + entry * n_cols + cols, column + stat, mask=col_ok)  # the sum of y * dy, or the max
        if not BACKWARD:
            shift = tl.where(stat == -float("inf"), 0.0, stat)
            chunk_sum = tl.sum(tl.exp(u - shift)) + tl.sum(tl.exp(u_ends - shift))
            tl.store(part2_ptr + entry * n_cols + cols, column + chunk_sum, mask=col_ok)
    else:
        n = (tl.load(entries_ptr + 4 * entry + 1) - chunk_start).to(tl.int32)
        mask = (lanes < n) & col_ok[None, None, :]
        offsets = lanes * n_cols + cols[None, None, :]
        base = chunk_start * n_cols
        if BACKWARD:
            y = tl.load(a_ptr + base + offsets, mask=mask, other=0.0).to(tl.float32)
            dy = tl.load(b_ptr + base + offsets, mask=mask, other=0.0).to(tl.float32)
            tl.store(part1_ptr + entry * n_cols + cols, tl.sum(tl.sum(y * dy, axis=1), axis=0), mask=col_ok)
        else:
            x = tl.load(a_ptr + base + offsets, mask=mask, other=-float("inf")).to(tl.float32)
            col_max = tl.max(tl.max(x, axis=1), axis=0)
            shift = tl.where(col_max == -float("inf"), 0.0, col_max)
            e = tl.exp(x - shift[None, None, :])  # masked lanes: exp(-inf) = 0
            tl.store(part1_ptr + entry * n_cols + cols, col_max, mask=col_ok)
            tl.store(part2_ptr + entry * n_cols + cols, tl.sum(tl.sum(e, axis=1), axis=0), mask=col_ok)


@triton.jit
def _finish_at(out_ptr, a_ptr, b_ptr, at, mask, stat1, stat2, BACKWARD: tl.constexpr):
    """Chunk pass 2 at element offsets `at` (under `mask`): read x + write y = exp(x - stat1) * stat2, or read y, dy
    + write dx = y * (dy - stat1)."""
    if BACKWARD:
        y = tl.load(a_ptr + at, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(b_ptr + at, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_ptr + at, y * (dy - stat1), mask=mask)
    else:
        x = tl.load(a_ptr + at, mask=mask, other=-float("inf")).to(tl.float32)
        tl.store(out_ptr + at, tl.exp(x - stat1) * stat2, mask=mask)


@triton.jit
def _chunk_finish(
    out_ptr, a_ptr, b_ptr, entries_ptr, part1_ptr, part2_ptr, entry, cols, n_cols, lanes, BACKWARD: tl.constexpr,
    VEC: tl.constexpr,
):  # fmt: skip
    """Chunk pass 2 of a long segment: read the segment's partials + re-read its chunk once + write y (or dx) once,
    in [TILE_ROWS, HB] steps (VEC > 1, 1-D values: the chunk's whole vectors in steps, then its two ends)."""
    col_ok = cols < n_cols
    chunk_start = tl.load(entries_ptr + 4 * entry)
    chunk_stop = tl.load(entries_ptr + 4 * entry + 1)
    first = tl.load(entries_ptr + 4 * entry + 2)
    last = first + tl.load(entries_ptr + 4 * entry + 3)
    if BACKWARD:
        dot = tl.zeros(cols.shape, tl.float32)
        for k in range(first, last):
            dot += tl.load(part1_ptr + k * n_cols + cols, mask=col_ok, other=0.0)
    else:
        seg_max = tl.full(cols.shape, -float("inf"), tl.float32)
        for k in range(first, last):
            seg_max = tl.maximum(seg_max, tl.load(part1_ptr + k * n_cols + cols, mask=col_ok, other=0.0))
        shift = tl.where(seg_max == -float("inf"), 0.0, seg_max)
        seg_sum = tl.zeros(cols.shape, tl.float32)
        for k in range(first, last):
            m = tl.load(part1_ptr + k * n_cols + cols, mask=col_ok, other=0.0)
            seg_sum += tl.load(part2_ptr + k * n_cols + cols, mask=col_ok, other=0.0) * tl.exp(m - shift)
        scale = 1.0 / seg_sum
    if VEC > 1:
        base = chunk_start // VEC * VEC
        head = (chunk_start - base).to(tl.int32)
        n = (chunk_stop - base).to(tl.int32)
        step_rows: tl.constexpr = lanes.shape[1]
        vec_lanes = tl.arange(0, step_rows)[None, :]
        if BACKWARD:  # one column: the statistics as scalars
            stat1 = tl.sum(dot)
            stat2 = stat1
        else:
            stat1, stat2 = tl.sum(shift), tl.sum(scale)
        for i in range(0, tl.cdiv(n, step_rows)):
            r = i * step_rows
            body = whole_vectors(vec_lanes, tl.maximum(head - r, 0), n - r, VEC)
            _finish_at(out_ptr, a_ptr, b_ptr, base + r + vec_lanes, body, stat1, stat2, BACKWARD)
        rows, ok = partial_ends(head, n, VEC)
        _finish_at(out_ptr, a_ptr, b_ptr, base + rows, ok, stat1, stat2, BACKWARD)
    else:
        offsets = lanes * n_cols + cols[None, None, :]
        step = lanes.shape[1]
        for r in range(chunk_start, chunk_stop, step):
            mask = (lanes < (chunk_stop - r).to(tl.int32)) & col_ok[None, None, :]
            base = r * n_cols
            if BACKWARD:
                y = tl.load(a_ptr + base + offsets, mask=mask, other=0.0).to(tl.float32)
                dy = tl.load(b_ptr + base + offsets, mask=mask, other=0.0).to(tl.float32)
                tl.store(out_ptr + base + offsets, y * (dy - dot[None, None, :]), mask=mask)
            else:
                x = tl.load(a_ptr + base + offsets, mask=mask, other=-float("inf")).to(tl.float32)
                tl.store(out_ptr + base + offsets, tl.exp(x - shift[None, None, :]) * scale[None, None, :], mask=mask)


@triton.jit
def _class_item(
    out_ptr, a_ptr, b_ptr, bounds_ptr, base, count, item, cols, n_cols, BLOCK: tl.constexpr, SEGS: tl.constexpr,
    BACKWARD: tl.constexpr, VEC: tl.constexpr,
):  # fmt: skip
    """Segments item * SEGS .. + SEGS of a class list (of up to BLOCK rows each), in registers: read x once + write y
    once (backward: read y, dy + write dx)."""
    j = item * SEGS + tl.arange(0, SEGS)
    ok = j < count
    start = tl.load(bounds_ptr + 2 * (base + j), mask=ok, other=0).to(tl.int64)
    if VEC > 1:
        stop = tl.load(bounds_ptr + 2 * (base + j) + 1, mask=ok, other=0).to(tl.int64)
        _tile_finish_vec(out_ptr, a_ptr, b_ptr, start, stop, BLOCK, VEC, BACKWARD)
    else:
        n = (tl.load(bounds_ptr + 2 * (base + j) + 1, mask=ok, other=0) - start).to(tl.int32)
        lanes = tl.arange(0, BLOCK)[None, :, None]
        mask = (lanes < n[:, None, None]) & (cols < n_cols)[None, None, :]
        offsets = lanes * n_cols + cols[None, None, :]
        _tile_finish(out_ptr, a_ptr, b_ptr, (start * n_cols)[:, None, None], offsets, mask, BACKWARD)


@triton.jit
def _small_counts(counters_ptr):
    """Segments in small classes 3, 2, 1, 0 (counters[3..0], from the bucket kernel), as int64."""
    count3 = tl.load(counters_ptr + 3).to(tl.int64)
    count2 = tl.load(counters_ptr + 2).to(tl.int64)
    count1 = tl.load(counters_ptr + 1).to(tl.int64)
    count0 = tl.load(counters_ptr).to(tl.int64)
    return count3, count2, count1, count0


@triton.jit
def _small_ends(first, count3, count2, count1, count0, n_col_blocks, H0: tl.constexpr, H1: tl.constexpr,
                H2: tl.constexpr, H3: tl.constexpr, TILE_ROWS: tl.constexpr):  # fmt: skip
    """Small classes 3, 2, 1, 0 as consecutive work-item ranges from item `first` on: each range's end (end3, end2,
    end1, end0); a class's items are its tiles of TILE_ROWS // H segments times the column blocks."""
    end3 = first + tl.cdiv(count3, TILE_ROWS // H3) * n_col_blocks
    end2 = end3 + tl.cdiv(count2, TILE_ROWS // H2) * n_col_blocks
    end1 = end2 + tl.cdiv(count1, TILE_ROWS // H1) * n_col_blocks
    end0 = end1 + tl.cdiv(count0, TILE_ROWS // H0) * n_col_blocks
    return end3, end2, end1, end0


@triton.jit
def _small_item(
    out_ptr, a_ptr, b_ptr, bounds_ptr, w, first, end3, end2, end1, count3, count2, count1, count0, base1, base2,
    base3, n_cols, n_col_blocks, H0: tl.constexpr, H1: tl.constexpr, H2: tl.constexpr, H3: tl.constexpr,
    TILE_ROWS: tl.constexpr, HB: tl.constexpr, BACKWARD: tl.constexpr, VEC: tl.constexpr,
):  # fmt: skip
    """Work item w (first <= w < end0, the ranges of _small_ends) of small classes 3..0: its class's _class_item
    (the small launch and the fused one share this)."""
    if w < end3:
        item = (w - first) // n_col_blocks
        cols = (w - first - item * n_col_blocks) * HB + tl.arange(0, HB)
        _class_item(out_ptr, a_ptr, b_ptr, bounds_ptr, base3, count3, item, cols, n_cols, H3, TILE_ROWS // H3,
                    BACKWARD, VEC)  # fmt: skip
    elif w < end2:
        item = (w - end3) // n_col_blocks
        cols = (w - end3 - item * n_col_blocks) * HB + tl.arange(0, HB)
        _class_item(out_ptr, a_ptr, b_ptr, bounds_ptr, base2, count2, item, cols, n_cols, H2, TILE_ROWS // H2,
                    BACKWARD, VEC)  # fmt: skip
    elif w < end1:
        item = (w - end2) // n_col_blocks
        cols = (w - end2 - item * n_col_blocks) * HB + tl.arange(0, HB)
        _class_item(out_ptr, a_ptr, b_ptr, bounds_ptr, base1, count1, item, cols, n_cols, H1, TILE_ROWS // H1,
                    BACKWARD, VEC)  # fmt: skip
    else:
        item = (w - end1) // n_col_blocks
        cols = (w - end1 - item * n_col_blocks) * HB + tl.arange(0, HB)
        _class_item(out_ptr, a_ptr, b_ptr, bounds_ptr, 0, count0, item, cols, n_cols, H0, TILE_ROWS // H0,
                    BACKWARD, VEC)  # fmt: skip


@triton.jit
def _ragged_big_kernel(
    out_ptr,
    a_ptr,
    b_ptr,
    bounds_ptr,
    counters_ptr,
    entries_ptr,
    part1_ptr,
    part2_ptr,
    n_cols,
    n_col_blocks,
    big_base,
    BIG_ROWS: tl.constexpr,
    HB: tl.constexpr,
    BACKWARD: tl.constexpr,
    VEC: tl.constexpr,
):
    # chunks of long segments (first): read x once + write a (max, sum) partial per column (backward: read y, dy +
    # write a dot partial); big-class segments: read x + write y once (backward: read y, dy + write dx).
    # Work items from a queue (counters[6]): each program claims its next item before doing the current one.
    n_programs = tl.num_programs(axis=0)
    lanes = tl.arange(0, BIG_ROWS)[None, :, None]
    n_chunks = tl.load(counters_ptr + CHUNK_COUNTER).to(tl.int64) * n_col_blocks
    n_big = tl.load(counters_ptr + BIG_COUNTER).to(tl.int64)
    n_work = n_chunks + n_big * n_col_blocks
    w = tl.program_id(axis=0).to(tl.int64)
    while w < n_work:
        claimed = tl.atomic_add(counters_ptr + BIG_QUEUE, 1, sem="relaxed").to(tl.int64) + n_programs
        if w < n_chunks:
            entry = w // n_col_blocks
            cols = (w - entry * n_col_blocks) * HB + tl.arange(0, HB)
            _chunk_partial(a_ptr, b_ptr, entries_ptr, part1_ptr, part2_ptr, entry, cols, n_cols, lanes, BACKWARD, VEC)
        else:
            item = (w - n_chunks) // n_col_blocks
            cols = (w - n_chunks - item * n_col_blocks) * HB + tl.arange(0, HB)
            _class_item(out_ptr, a_ptr, b_ptr, bounds_ptr, big_base, n_big, item, cols, n_cols, BIG_ROWS, 1, BACKWARD,
                        VEC)  # fmt: skip
        w = claimed


@triton.jit
def _ragged_small_kernel(
    out_ptr,
    a_ptr,
    b_ptr,
    bounds_ptr,
    counters_ptr,
    entries_ptr,
    part1_ptr,
    part2_ptr,
    n_cols,
    n_col_blocks,
    base1,
    base2,
    base3,
    H0: tl.constexpr,
    H1: tl.constexpr,
    H2: tl.constexpr,
    H3: tl.constexpr,
    TILE_ROWS: tl.constexpr,
    HB: tl.constexpr,
    BACKWARD: tl.constexpr,
    VEC: tl.constexpr,
):
    # chunks of long segments (first): read the segment's partials + re-read x (or y, dy) once + write y (or dx)
    # once; then small classes 3, 2, 1, 0: read x + write y once (backward: read y, dy + write dx).
    # Work items from a queue (counters[7]): each program claims its next item before doing the current one.
    n_programs = tl.num_programs(axis=0)
    lanes = tl.arange(0, TILE_ROWS)[None, :, None]
    count3, count2, count1, count0 = _small_counts(counters_ptr)
    end_chunks = tl.load(counters_ptr + CHUNK_COUNTER).to(tl.int64) * n_col_blocks
    end3, end2, end1, n_work = _small_ends(end_chunks, count3, count2, count1, count0, n_col_blocks, H0, H1, H2, H3,
                                           TILE_ROWS)  # fmt: skip
    w = tl.program_id(axis=0).to(tl.int64)
    while w < n_work:
        claimed = tl.atomic_add(counters_ptr + SMALL_QUEUE, 1, sem="relaxed").to(tl.int64) + n_programs
        if w < end_chunks:
            entry = w // n_col_blocks
            cols = (w - entry * n_col_blocks) * HB + tl.arange(0, HB)
            _chunk_finish(
                out_ptr, a_ptr, b_ptr, entries_ptr, part1_ptr, part2_ptr, entry, cols, n_cols, lanes, BACKWARD, VEC
            )
        else:
            _small_item(out_ptr, a_ptr, b_ptr, bounds_ptr, w, end_chunks, end3, end2, end1, count3, count2, count1,
                        count0, base1, base2, base3, n_cols, n_col_blocks, H0, H1, H2, H3, TILE_ROWS, HB, BACKWARD,
                        VEC)  # fmt: skip
        w = claimed


@triton.jit
def _ragged_fused_kernel(
    out_ptr,
    a_ptr,
    b_ptr,
    bounds_ptr,
    counters_ptr,
    entries_ptr,
    part1_ptr,
    part2_ptr,
    n_cols,
    n_col_blocks,
    base1,
    base2,
    base3,
    big_base,
    H0: tl.constexpr,
    H1: tl.constexpr,
    H2: tl.constexpr,
    H3: tl.constexpr,
    TILE_ROWS: tl.constexpr,
    BIG_ROWS: tl.constexpr,
    HB: tl.constexpr,
    BACKWARD: tl.constexpr,
    VEC: tl.constexpr,
):
    # `fused=1`: the big and small launches as one, one queue (counters[6]) in this order: chunk pass 1 (read x +
    # write a partial), big class, small classes 3..0 (read x + write y once), chunk pass 2 (read partials + re-read
    # x + write y). Every item is claimed from the queue (none fixed per program), so a program that claims a pass-2
    # item knows every pass-1 item was claimed before by a running program: it waits for counters[7] (pass-1 items
    # done) to reach their number, which cannot deadlock.
    big_lanes = tl.arange(0, BIG_ROWS)[None, :, None]
    tile_lanes = tl.arange(0, TILE_ROWS)[None, :, None]
    n_big = tl.load(counters_ptr + BIG_COUNTER).to(tl.int64)
    count3, count2, count1, count0 = _small_counts(counters_ptr)
    n_chunks = tl.load(counters_ptr + CHUNK_COUNTER).to(tl.int64) * n_col_blocks
    end_big = n_chunks + n_big * n_col_blocks
    end3, end2, end1, end0 = _small_ends(end_big, count3, count2, count1, count0, n_col_blocks, H0, H1, H2, H3,
                                         TILE_ROWS)  # fmt: skip
    n_work = end0 + n_chunks
    w = tl.atomic_add(counters_ptr + BIG_QUEUE, 1, sem="relaxed").to(tl.int64)
    while w < n_work:
        claimed = tl.atomic_add(counters_ptr + BIG_QUEUE, 1, sem="relaxed").to(tl.int64)
        if w < n_chunks:
            entry = w // n_col_blocks
            cols = (w - entry * n_col_blocks) * HB + tl.arange(0, HB)
            _chunk_partial(
                a_ptr, b_ptr, entries_ptr, part1_ptr, part2_ptr, entry, cols, n_cols, big_lanes, BACKWARD, VEC
            )
            tl.debug_barrier()  # every thread's partial stored before the release below
            tl.atomic_add(counters_ptr + SMALL_QUEUE, 1, sem="release")
        elif w < end_big:
            item = (w - n_chunks) // n_col_blocks
            cols = (w - n_chunks - item * n_col_blocks) * HB + tl.arange(0, HB)
            _class_item(out_ptr, a_ptr, b_ptr, bounds_ptr, big_base, n_big, item, cols, n_cols, BIG_ROWS, 1, BACKWARD,
                        VEC)  # fmt: skip
        elif w < end0:
            _small_item(out_ptr, a_ptr, b_ptr, bounds_ptr, w, end_big, end3, end2, end1, count3, count2, count1,
                        count0, base1, base2, base3, n_cols, n_col_blocks, H0, H1, H2, H3, TILE_ROWS, HB, BACKWARD,
                        VEC)  # fmt: skip
        else:
            done = tl.atomic_add(counters_ptr + SMALL_QUEUE, 0, sem="acquire").to(tl.int64)
            while done < n_chunks:  # pass-1 items still running on other programs (rare: they were first)
                done = tl.atomic_add(counters_ptr + SMALL_QUEUE, 0, sem="acquire").to(tl.int64)
            tl.debug_barrier()
            entry = (w - end0) // n_col_blocks
            cols = (w - end0 - entry * n_col_blocks) * HB + tl.arange(0, HB)
            _chunk_finish(
                out_ptr, a_ptr, b_ptr, entries_ptr, part1_ptr, part2_ptr, entry, cols, n_cols, tile_lanes, BACKWARD, VEC
            )
        w = claimed


def class_layout(n_rows: int, n_segments: int, n_cols: int, tile: int, max_lanes: int, align: int = 1) -> dict:
    """The class design's sizes for T = n_rows, B = n_segments, H = n_cols: HB, TILE_ROWS (rows of a small tile),
    BIG_ROWS (rows of the big class and of a long segment's chunk), the small classes' (low, high, SEGS, BLOCK),
    each list's capacity and start in the bounds array, and the chunk entries' bound. Segments are classed by their
    span from the `align`-row boundary at or below their start (1: their length; 4 or 8: 16-byte vectors), up to
    align - 1 rows more than the segment: a class of spans in (low, high] holds at most
    min(B, T // (low + 2 - align)) segments."""
    hb = min(next_power_of_2(n_cols), MAX_COLUMN_BLOCK)
    tile_rows = max(1, tile // hb)
    big_rows = max(2 * tile_rows, max_lanes // hb)
    small, low = [], 0
    for c in range(SMALL_CLASSES):
        high = max(1, tile_rows >> (2 * (SMALL_CLASSES - 1 - c)))
        small.append((low, max(low, high), tile_rows // high, high))
        low = max(low, high)
    least = 2 - align  # a span over a class's low bound: at least low + least rows of the segment
    caps = [min(n_segments, n_rows // max(1, lo + least)) if hi > lo else 0 for lo, hi, _, _ in small]
    caps.append(min(n_segments, n_rows // max(1, low + least)))  # the big class, (tile_rows, big_rows]
    bases = [0]
    for cap in caps:
        bases.append(bases[-1] + cap)
    n_long = min(n_segments, n_rows // max(1, big_rows + least))
    # a long segment's chunks: cdiv(span, BIG_ROWS) <= (n + align - 1) // BIG_ROWS + 1
    n_entries = (n_rows + n_long * (align - 1)) // big_rows + n_long
    return {
        "HB": hb,
        "TILE_ROWS": tile_rows,
        "BIG_ROWS": big_rows,
        "small": small,
        "caps": caps,
        "bases": bases[:-1],
        "list_size": bases[-1],
        "n_long": n_long,
        "entries": n_entries if n_long else 0,
    }


@functools.cache
def _sm_count(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def _programs(device: torch.device, num_warps: int, maxnreg: int, work: int) -> int:
    """Persistent grid: as many programs as fit on every SM at once (64 warps per SM; 64k registers per SM when
    maxnreg caps them), at most one per work item. Programs beyond those resident only find the queue empty."""
    if device.type == "cuda":
        sms = _sm_count(device.index if device.index is not None else torch.cuda.current_device())
    else:
        sms = 2  # the interpreter: a few programs, so the queue is exercised
    per_sm = 64 // num_warps if not maxnreg else min(64 // num_warps, 65536 // (maxnreg * 32 * num_warps))
    return max(1, min(work, sms * max(1, per_sm)))


def vector_rows(tensors: tuple[torch.Tensor, ...]) -> int:
    """Rows per 16-byte vector (8 for 16-bit, 4 for fp32) where every tensor starts 16-byte aligned, else 1."""
    if any(t.data_ptr() % VECTOR_BYTES for t in tensors):
        return 1
    return VECTOR_BYTES // tensors[0].element_size()


def _launch_classes(a_args, out, offsets, total, n_cols, tunables, backward):
    """Design 1: the bucket kernel, the big launch (chunk pass 1 + big class), the small launch (chunk pass 2 + the
    small classes). `a_args` = (values,) or (y, dy); `backward` picks the kernels' backward form."""
    tile, max_lanes, small_warps, big_warps = (tunables[k] for k in ("tile", "max_lanes", "num_warps", "big_warps"))
    small_regs, big_regs = tunables["maxnreg"], tunables["big_maxnreg"]
    fused = tunables["fused"]
    if fused is None:  # default: one launch for the forward of 2..8 columns (experiments/2026-12-04-ragged-h)
        fused = int(1 < n_cols <= 8 and not backward)
    if big_regs is None:  # default: 64 for the 1-D forward (no spills at 8192 lanes x 8 warps; 4 programs per SM);
        # 2-D forward: 80 up to 8 columns (fused), 64 above (H200: 1.32x at H = 16, 1.2x at 64); 1-D backward: 80
        # (with the small launch's 80: 1.18x uniform fp16, 1.13x long tail; experiments/2026-12-04-ragged-vec)
        if big_warps != 8 or max_lanes > 8192:
            big_regs = 0
        elif backward:
            big_regs = 80 if n_cols == 1 else 0
        else:
            big_regs = 64 if n_cols == 1 or n_cols > 8 else 80
    if small_regs is None:  # default: 80 for 1-D values at 4 warps (6 programs per SM; no spill with vector loads)
        small_regs = 80 if n_cols == 1 and small_warps == 4 and tile <= 2048 else 0
    n_segments = offsets.numel() - 1
    a, b = a_args if len(a_args) == 2 else (a_args[0], a_args[0])
    vec = vector_rows((*a_args, out)) if tunables["vec"] and n_cols == 1 else 1
    layout = class_layout(total, n_segments, n_cols, tile, max_lanes, vec)
    hb, tile_rows, big_rows = layout["HB"], layout["TILE_ROWS"], layout["BIG_ROWS"]
    device = offsets.device
    bounds = torch.empty(2 * max(1, layout["list_size"]), dtype=torch.int32 if total < 2**31 else torch.int64,
                         device=device)  # fmt: skip
    counters = torch.zeros(COUNTERS, dtype=torch.int32, device=device)
    n_entries = layout["entries"]
    entries = torch.empty(4 * max(1, n_entries), dtype=torch.int64, device=device)
    parts = [torch.empty(max(1, n_entries) * n_cols, dtype=torch.float32, device=device) for _ in range(2)]
    b1, b2, b3, b4 = layout["bases"][1:]
    highs = {f"H{c}": high for c, (_, high, _, _) in enumerate(layout["small"])}
    launch_kernel(
        _ragged_bucket_kernel,
        (triton.cdiv(n_segments, BUCKET_SEGMENTS),),
        (offsets, counters, bounds, entries, n_segments, total, b1, b2, b3, b4),
        {"BB": BUCKET_SEGMENTS, **highs, "BIG_ROWS": big_rows, "ALIGN": vec},
        4,
        1,
    )
    column_blocks = triton.cdiv(n_cols, hb)
    big_work = (n_entries + layout["caps"][-1]) * column_blocks
    small_work = n_entries + sum(
        triton.cdiv(cap, segs) for cap, (_, _, segs, _) in zip(layout["caps"][:-1], layout["small"], strict=True)
    )
    common = (out, a, b, bounds, counters, entries, *parts, n_cols, column_blocks)
    if fused:
        launch_kernel(
            _ragged_fused_kernel,
            (_programs(device, big_warps, big_regs, big_work + small_work * column_blocks),),
            (*common, b1, b2, b3, b4),
            {
                **highs,
                "TILE_ROWS": tile_rows,
                "BIG_ROWS": big_rows,
                "HB": hb,
                "BACKWARD": backward,
                "VEC": vec,
            },
            big_warps,
            1,
            options={"maxnreg": big_regs} if big_regs else None,
        )
        return
    if big_work:
        launch_kernel(
            _ragged_big_kernel,
            (_programs(device, big_warps, big_regs, big_work),),
            (*common, b4),
            {"BIG_ROWS": big_rows, "HB": hb, "BACKWARD": backward, "VEC": vec},
            big_warps,
            1,
            options={"maxnreg": big_regs} if big_regs else None,
        )
    launch_kernel(
        _ragged_small_kernel,
        (_programs(device, small_warps, small_regs, small_work * column_blocks),),
        (*common, b1, b2, b3),
        {**highs, "TILE_ROWS": tile_rows, "HB": hb, "BACKWARD": backward, "VEC": vec},
        small_warps,
        1,
        options={"maxnreg": small_regs} if small_regs else None,
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
    launch = plan(total, n_cols, dtype, design=0, **tunables)
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
    if design_of(tunables) == 1:
        tunables = design_tunables({k: v for k, v in tunables.items() if k != "design"})
        _launch_classes((values,), output, offsets, values.shape[0], n_cols, tunables, False)
        return output
    tunables = {k: v for k, v in tunables.items() if k != "design"}
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
    if design_of(tunables) == 1:
        tunables = design_tunables({k: v for k, v in tunables.items() if k != "design"})
        _launch_classes((y, dy), dx, offsets, y.shape[0], n_cols, tunables, True)
        return dx
    tunables = {k: v for k, v in tunables.items() if k != "design"}
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
