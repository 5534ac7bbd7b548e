"""Softmax backward: dx = y * (dy - sum(dy * y)) over the last dim, from the forward's output y.

Three paths (all fp32 accumulation, any row stride for y, dy and dx, fp16/bf16/fp32, dx in y's dtype):
  row       one program per row, the whole row in registers (BLOCK = next_pow2(N), N <= 65536)
  multirow  a [ROWS, BLOCK] tile of several rows per program, for small N (N <= 16384)
  looped    one program per row looping over TILE-wide steps twice: sum(dy * y), then dx (any N)
`choose_backward` picks one per shape (a heuristic until a GPU-tuned table exists).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._common import (
    INT32_MAX,
    NUM_WARPS_ALLOWED,
    cached_plans,
    check_input,
    check_int_choice,
    check_power_of_2,
    check_tunables,
    launch_constexprs,
    next_power_of_2,
    vector_elements,
)
from ._common import launch as launch_kernel
from .plan import LaunchPlan

NAME = "backward"
PATHS: tuple[str, ...] = ("row", "multirow", "looped")
MAX_N = INT32_MAX - 65536  # looped: n_cols and the loop index are 32-bit
ROW_MAX_N = 65536  # row: the whole row in one program's registers
MULTIROW_MAX_N = 16384
MAX_TILE_ELEMENTS = 65536  # multirow: ROWS * BLOCK lanes per program
MIN_TILE, MAX_TILE = 16, 65536
TUNABLES: dict[str, dict[str, str]] = {
    "row": {"num_warps": f"warps per program, one of {NUM_WARPS_ALLOWED}; default BLOCK // 512 clamped to 4..16"},
    "multirow": {
        "num_warps": f"warps per program, one of {NUM_WARPS_ALLOWED}; default 4, 8 for tiles over 8192",
        "rows_per_program": "rows per tile, a power of two from 1 to 256; default 2048 // BLOCK",
    },
    "looped": {
        "num_warps": f"warps per program, one of {NUM_WARPS_ALLOWED}; default 8 if TILE >= 2048 else 4",
        "tile": f"lanes per loop step, a power of two from {MIN_TILE} to {MAX_TILE}; default min(next_pow2(N), 4096)",
    },
}


@triton.jit
def softmax_backward_row_kernel(
    dx_ptr, y_ptr, dy_ptr, y_row_stride, dy_row_stride, dx_row_stride, n_cols, BLOCK: tl.constexpr, VEC: tl.constexpr
):
    # one row per program: read y, dy + write dx (3N elements)
    if VEC > 1:  # strides and N are multiples of VEC (16 bytes): rounding shows Triton the loads are whole vectors
        y_row_stride = y_row_stride // VEC * VEC
        dy_row_stride = dy_row_stride // VEC * VEC
        dx_row_stride = dx_row_stride // VEC * VEC
        n_cols = n_cols // VEC * VEC
    row = tl.program_id(axis=0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    y = tl.load(y_ptr + row * y_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * dy_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    dot = tl.sum(y * dy, axis=0)
    tl.store(dx_ptr + row * dx_row_stride + cols, y * (dy - dot), mask=mask)


@triton.jit
def softmax_backward_multirow_kernel(
    dx_ptr,
    y_ptr,
    dy_ptr,
    y_row_stride,
    dy_row_stride,
    dx_row_stride,
    n_rows,
    n_cols,
    BLOCK: tl.constexpr,
    ROWS: tl.constexpr,
    VEC: tl.constexpr,
):
    # ROWS rows per program: read y, dy + write dx (3 x ROWS x N elements)
    if VEC > 1:  # strides and N are multiples of VEC (16 bytes): rounding shows Triton the loads are whole vectors
        y_row_stride = y_row_stride // VEC * VEC
        dy_row_stride = dy_row_stride // VEC * VEC
        dx_row_stride = dx_row_stride // VEC * VEC
        n_cols = n_cols // VEC * VEC
    rows = tl.program_id(axis=0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    mask = (rows < n_rows)[:, None] & (cols < n_cols)[None, :]
    rows = rows.to(tl.int64)[:, None]
    y = tl.load(y_ptr + rows * y_row_stride + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + rows * dy_row_stride + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    dot = tl.sum(y * dy, axis=1)
    tl.store(dx_ptr + rows * dx_row_stride + cols[None, :], y * (dy - dot[:, None]), mask=mask)


@triton.jit
def softmax_backward_looped_kernel(
    dx_ptr, y_ptr, dy_ptr, y_row_stride, dy_row_stride, dx_row_stride, n_cols, TILE: tl.constexpr, VEC: tl.constexpr
):
    # pass 1 reads y, dy (2N); pass 2 reads y, dy again (2N, from L2 when the row fits) + writes dx (N)
    if VEC > 1:  # strides and N are multiples of VEC (16 bytes): rounding shows Triton the loads are whole vectors
        y_row_stride = y_row_stride // VEC * VEC
        dy_row_stride = dy_row_stride // VEC * VEC
        dx_row_stride = dx_row_stride // VEC * VEC
        n_cols = n_cols // VEC * VEC
    row = tl.program_id(axis=0).to(tl.int64)
    y_row = y_ptr + row * y_row_stride
    dy_row = dy_ptr + row * dy_row_stride
    dx_row = dx_ptr + row * dx_row_stride
    cols = tl.arange(0, TILE)
    partial = tl.zeros([TILE], tl.float32)
    for start in tl.range(0, n_cols, TILE):
        offsets = start + cols
        mask = offsets < n_cols
        y = tl.load(y_row + offsets, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_row + offsets, mask=mask, other=0.0).to(tl.float32)
        partial += y * dy
    dot = tl.sum(partial, axis=0)
    for start in tl.range(0, n_cols, TILE):
        offsets = start + cols
        mask = offsets < n_cols
        y = tl.load(y_row + offsets, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_row + offsets, mask=mask, other=0.0).to(tl.float32)
        tl.store(dx_row + offsets, y * (dy - dot), mask=mask)


def choose_backward(n_rows: int, n_cols: int, dtype: torch.dtype) -> tuple[str, dict[str, int]]:
    """(path, tunables) for the backward of R x N rows: a heuristic until a GPU-tuned table exists.

    BLOCK = next_pow2(N) <= 1024: 'multirow' (2048-lane tiles, 4 warps: small rows are launch and latency bound);
    <= 8192: 'row' (whole row in registers, num_warps = BLOCK // 512 clamped to 4..16, i.e. 16 fp32 values of
    y and of dy per thread at most); wider: 'looped' (4096-lane steps, 8 warps, two passes: a row in registers
    would spill). R and dtype do not change the choice yet (registers hold fp32 whatever the dtype)."""
    block = next_power_of_2(n_cols)
    if block <= 1024:
        return "multirow", {}
    if block <= 8192:
        return "row", {"num_warps": min(16, max(4, block // 512))}
    return "looped", {"tile": 4096, "num_warps": 8}


def plan(n_rows: int, n_cols: int, dtype: torch.dtype, path: str | None = None, **tunables: int) -> LaunchPlan:
    """The backward launch for R x N rows: `path` (default: choose_backward's) and its tunables, validated."""
    if path is None:
        path, chosen = choose_backward(n_rows, n_cols, dtype)
        tunables = {**chosen, **tunables}
    if path not in PATHS:
        raise ValueError(f"{NAME}: unknown path {path!r}; allowed: {', '.join(PATHS)}")
    label = f"{NAME} {path}"
    check_tunables(label, tunables, TUNABLES[path])
    limit = {"row": ROW_MAX_N, "multirow": MULTIROW_MAX_N, "looped": MAX_N}[path]
    if not 1 <= n_cols <= limit:
        raise ValueError(f"{label}: N={n_cols} is outside this path's range; allowed: 1 <= N <= {limit}")
    block = next_power_of_2(n_cols)
    vec = vector_elements(dtype, n_cols)
    common = {
        "variant": f"{NAME}_{path}",
        "kernel_name": f"softmax_backward_{path}_kernel",
        "n_rows": n_rows,
        "n_cols": n_cols,
        "dtype": dtype,
        "num_stages": 1,
    }
    strides = {"y_row_stride": n_cols, "dy_row_stride": n_cols, "dx_row_stride": n_cols}
    if path == "row":
        num_warps = check_int_choice(
            label, "num_warps", tunables.get("num_warps", min(16, max(4, block // 512))), NUM_WARPS_ALLOWED
        )
        return LaunchPlan(
            **common,
            grid=(n_rows,),
            num_warps=num_warps,
            tile_width=block,
            rows_per_program=1,
            constexprs={"BLOCK": block, "VEC": vec},
            scalar_args={**strides, "n_cols": n_cols},
            tunables={"num_warps": num_warps},
        )
    if path == "multirow":
        rows = check_power_of_2(
            label, "rows_per_program", tunables.get("rows_per_program", min(256, max(1, 2048 // block))), 1, 256
        )
        if rows * block > MAX_TILE_ELEMENTS:
            raise ValueError(
                f"{label}: rows_per_program={rows} x BLOCK={block} is over {MAX_TILE_ELEMENTS} lanes; "
                f"allowed: rows_per_program <= {MAX_TILE_ELEMENTS // block}"
            )
        num_warps = check_int_choice(
            label, "num_warps", tunables.get("num_warps", 8 if rows * block > 8192 else 4), NUM_WARPS_ALLOWED
        )
        return LaunchPlan(
            **common,
            grid=(triton.cdiv(n_rows, rows),),
            num_warps=num_warps,
            tile_width=block,
            rows_per_program=rows,
            constexprs={"BLOCK": block, "ROWS": rows, "VEC": vec},
            scalar_args={**strides, "n_rows": n_rows, "n_cols": n_cols},
            tunables={"num_warps": num_warps, "rows_per_program": rows},
        )
    tile = check_power_of_2(label, "tile", tunables.get("tile", max(MIN_TILE, min(block, 4096))), MIN_TILE, MAX_TILE)
    num_warps = check_int_choice(
        label, "num_warps", tunables.get("num_warps", 8 if tile >= 2048 else 4), NUM_WARPS_ALLOWED
    )
    return LaunchPlan(
        **common,
        grid=(n_rows,),
        num_warps=num_warps,
        tile_width=tile,
        rows_per_program=1,
        constexprs={"TILE": tile, "VEC": vec},
        scalar_args={**strides, "n_cols": n_cols},
        tunables={"num_warps": num_warps, "tile": tile},
    )


_plans = cached_plans(plan)
KERNELS = {
    "row": softmax_backward_row_kernel,
    "multirow": softmax_backward_multirow_kernel,
    "looped": softmax_backward_looped_kernel,
}


def softmax_backward(y: torch.Tensor, dy: torch.Tensor, path: str | None = None, **tunables: int) -> torch.Tensor:
    """dx of softmax over the last dim from its output `y` and output gradient `dy` (same shape; dy is cast to
    y's dtype if it differs). Returns contiguous dx in y's dtype and shape. `path`: 'row', 'multirow' or
    'looped' (default: choose_backward's pick); tunables as in TUNABLES[path]."""
    if not isinstance(dy, torch.Tensor) or not isinstance(y, torch.Tensor):
        raise TypeError(f"{NAME}: expected tensors y and dy, got {type(y).__name__} and {type(dy).__name__}")
    if dy.shape != y.shape or dy.device != y.device:
        raise ValueError(
            f"{NAME}: dy {tuple(dy.shape)} on {dy.device} does not match y {tuple(y.shape)} on "
            f"{y.device}; allowed: the same shape and device"
        )
    y_rows = check_input(y, NAME, MAX_N)
    dy_rows = check_input(dy if dy.dtype == y.dtype else dy.to(y.dtype), NAME, MAX_N)
    n_rows, n_cols = y_rows.shape
    dx = torch.empty(y_rows.shape, dtype=y.dtype, device=y.device)
    if dx.numel() == 0:
        return dx.view(y.shape)
    if path is not None:
        tunables = {"path": path, **tunables}
    launch = _plans(n_rows, n_cols, y.dtype, tunables)
    path = launch.variant.removeprefix(f"{NAME}_")
    args = (dx, y_rows, dy_rows, y_rows.stride(0), dy_rows.stride(0), dx.stride(0))
    args += (n_rows, n_cols) if path == "multirow" else (n_cols,)
    launch_kernel(
        KERNELS[path], launch.grid, args, launch_constexprs(launch.constexprs, y_rows, dy_rows, dx), launch.num_warps
    )
    return dx.view(y.shape)
