"""Fused scale + bias + mask (+ causal) softmax over the last dim: softmax(where(keep, x * scale + bias, -inf)).

All arithmetic is fp32; the output has x's dtype. `bias` (float) and `mask` (bool, True = keep) broadcast to x and
reach the kernel as their own strides (0 along broadcast dims), so a (Lq, Lk) mask shared by every head is read
from L2 and never materialised. `causal` keeps column j <= row i of the last two dims (torch SDPA's is_causal,
top-left aligned), computed in the kernel; columns past the diagonal are not loaded, only written as zeros.

Two forward paths (plan picks by N = Lk):
  onepass  a [ROWS, BLOCK] tile, BLOCK = next_pow2(N) <= 16384: x, mask and bias read once
  looped   one program per row looping over TILE-wide steps: online max/sum up to the diagonal, then a second
           read to write y, then zeros past the diagonal (any N)
The backward (dz = y * (dy - sum(dy * y)) on kept lanes, 0 elsewhere; dx = scale * dz; dbias = dz summed over
bias's broadcast dims) has the same two paths. Row offsets are 64-bit.
"""

from __future__ import annotations

import numbers

import torch
import triton
import triton.language as tl

from ._common import (
    NUM_WARPS_ALLOWED,
    SUPPORTED_DTYPES,
    VECTOR_BYTES,
    cached_plans,
    check_int_choice,
    check_power_of_2,
    check_tunables,
    interpreting,
    next_power_of_2,
    triton_interprets,
)
from ._common import launch as launch_kernel
from .plan import LaunchPlan

NAME = "masked"
ONEPASS_MAX_N = 16384  # widest row kept whole in one program's registers
MIN_TILE, MAX_TILE, DEFAULT_TILE = 16, 16384, 4096
MAX_ROWS = 64
CAUSAL_ONE_WARP_N = (513, 4096)  # causal forward rows of these widths default to 1 warp (measured: BLOCK 1024-4096)
TUNABLES = {
    "num_warps": f"warps per program, one of {NUM_WARPS_ALLOWED}; default (ROWS x BLOCK) / 1024 clamped to 2..8, and "
    "1 for a causal forward with 513 <= N <= 4096 (both from the H200 tuning rows at L = 1000-4096 in "
    "data/h200_fused.csv: causal at 1 warp was 11-25 % faster at L = 1000 and 4096 in 16-bit and within 1 % at 2048; "
    "fp32: 13 % faster at 1000, within 0.6 % at 2048-4096)",
    "rows_per_program": "onepass: rows per tile, a power of two from 1 to 64; default 2048 // BLOCK (at least 1)",
    "tile": f"looped: lanes per step, a power of two from {MIN_TILE} to {MAX_TILE}; default {DEFAULT_TILE}; "
    f"given, it forces the looped path",
}


@triton.jit
def _row_parts(rows, S1, S2, S3):
    """Program-order row index -> (b0, b1, b2, b3) over sizes (S0, S1, S2, S3), b3 fastest. The launcher orders
    these dims (leading dims and Lq) so that dims a mask or bias broadcasts over are innermost: programs that read
    the same mask/bias row run together and find it in L2."""
    b3 = rows % S3
    t = rows // S3
    b2 = t % S2
    t = t // S2
    return t // S1, t % S1, b2, b3


@triton.jit
def _scores(
    x_ptr, x_off, mask_ptr, m_off, m_col, bias_ptr, b_off, b_col, cols, load, inside, scale, HAS_MASK, HAS_BIAS
):
    """z = where(keep, x * scale + bias, -inf) in fp32: lanes outside `load` are not read (`load` ends on a whole
    16-byte vector past the diagonal, so loads stay vectorized); `inside` (the exact diagonal) and the mask keep."""
    z = tl.load(x_ptr + x_off + cols, mask=load, other=0.0).to(tl.float32) * scale
    if HAS_BIAS:
        z += tl.load(bias_ptr + b_off + cols * b_col, mask=load, other=0.0).to(tl.float32)
    keep = inside
    if HAS_MASK:
        keep = keep & (tl.load(mask_ptr + m_off + cols * m_col, mask=load, other=0) != 0)
    return tl.where(keep, z, -float("inf"))


@triton.jit
def _masked_softmax_onepass_kernel(
    out_ptr,
    x_ptr,
    mask_ptr,
    bias_ptr,
    n_rows,
    S1,
    S2,
    S3,
    n_cols,
    xs0,
    xs1,
    xs2,
    xs3,
    ms0,
    ms1,
    ms2,
    ms3,
    ms_col,
    bs0,
    bs1,
    bs2,
    bs3,
    bs_col,
    os0,
    os1,
    os2,
    os3,
    c0,
    c1,
    c2,
    c3,
    scale,
    BLOCK: tl.constexpr,
    ROWS: tl.constexpr,
    HAS_MASK: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    CAUSAL: tl.constexpr,
    VEC: tl.constexpr,
):
    # reads x (and mask/bias, L2-resident when broadcast) once up to the diagonal, writes y: ROWS x N
    if VEC > 1:  # x strides and N are multiples of VEC (16 bytes): rounding shows Triton whole-vector accesses
        xs0 = xs0 // VEC * VEC
        xs1 = xs1 // VEC * VEC
        xs2 = xs2 // VEC * VEC
        xs3 = xs3 // VEC * VEC
        os0 = os0 // VEC * VEC
        os1 = os1 // VEC * VEC
        os2 = os2 // VEC * VEC
        os3 = os3 // VEC * VEC
        n_cols = n_cols // VEC * VEC
    rows = tl.program_id(axis=0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    b0, b1, b2, b3 = _row_parts(rows, S1, S2, S3)
    i = b0 * c0 + b1 * c1 + b2 * c2 + b3 * c3  # the Lq index (causal)
    cols = tl.arange(0, BLOCK)[None, :]
    end = tl.zeros([ROWS], tl.int64) + n_cols
    end_load = end
    if CAUSAL:
        end = tl.minimum(end, i + 1)
        end_load = tl.minimum(end_load, (i + VEC) // VEC * VEC)
    in_rows = (rows < n_rows)[:, None]
    load = in_rows & (cols < end_load[:, None])
    inside = in_rows & (cols < end[:, None])
    x_off = (b0 * xs0 + b1 * xs1 + b2 * xs2 + b3 * xs3)[:, None]
    m_off = (b0 * ms0 + b1 * ms1 + b2 * ms2 + b3 * ms3)[:, None]
    b_off = (b0 * bs0 + b1 * bs1 + b2 * bs2 + b3 * bs3)[:, None]
    z = _scores(
        x_ptr, x_off, mask_ptr, m_off, ms_col, bias_ptr, b_off, bs_col, cols, load, inside, scale, HAS_MASK, HAS_BIAS
    )
    row_max = tl.max(z, axis=1)
    e = tl.exp(z - row_max[:, None])  # a fully masked row: exp(-inf + inf) = NaN, as the unfused expression
    y = e * (1.0 / tl.sum(e, axis=1))[:, None]
    o_off = (b0 * os0 + b1 * os1 + b2 * os2 + b3 * os3)[:, None]
    tl.store(out_ptr + o_off + cols, y, mask=in_rows & (cols < n_cols))


@triton.jit
def _masked_softmax_looped_kernel(
    out_ptr,
    x_ptr,
    mask_ptr,
    bias_ptr,
    n_rows,
    S1,
    S2,
    S3,
    n_cols,
    xs0,
    xs1,
    xs2,
    xs3,
    ms0,
    ms1,
    ms2,
    ms3,
    ms_col,
    bs0,
    bs1,
    bs2,
    bs3,
    bs_col,
    os0,
    os1,
    os2,
    os3,
    c0,
    c1,
    c2,
    c3,
    scale,
    TILE: tl.constexpr,
    HAS_MASK: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    CAUSAL: tl.constexpr,
    VEC: tl.constexpr,
):
    # pass 1 reads x up to the diagonal (E), pass 2 re-reads it (E) and writes y (E), pass 3 writes zeros (N - E)
    if VEC > 1:
        xs0 = xs0 // VEC * VEC
        xs1 = xs1 // VEC * VEC
        xs2 = xs2 // VEC * VEC
        xs3 = xs3 // VEC * VEC
        os0 = os0 // VEC * VEC
        os1 = os1 // VEC * VEC
        os2 = os2 // VEC * VEC
        os3 = os3 // VEC * VEC
        n_cols = n_cols // VEC * VEC
    row = tl.program_id(axis=0).to(tl.int64)
    b0, b1, b2, b3 = _row_parts(row, S1, S2, S3)
    i = b0 * c0 + b1 * c1 + b2 * c2 + b3 * c3  # the Lq index (causal)
    end = n_cols
    end_load = n_cols
    if CAUSAL:
        end = tl.minimum(end, i + 1)
        end_load = tl.minimum(end_load, (i + VEC) // VEC * VEC)
    x_off = b0 * xs0 + b1 * xs1 + b2 * xs2 + b3 * xs3
    m_off = b0 * ms0 + b1 * ms1 + b2 * ms2 + b3 * ms3
    b_off = b0 * bs0 + b1 * bs1 + b2 * bs2 + b3 * bs3
    out_row = out_ptr + b0 * os0 + b1 * os1 + b2 * os2 + b3 * os3
    lanes = tl.arange(0, TILE)
    running_max = tl.full([TILE], -float("inf"), tl.float32)
    running_sum = tl.zeros([TILE], tl.float32)
    for start in tl.range(0, end, TILE):
        cols = start + lanes
        load, inside = cols < end_load, cols < end
        z = _scores(
            x_ptr,
            x_off,
            mask_ptr,
            m_off,
            ms_col,
            bias_ptr,
            b_off,
            bs_col,
            cols,
            load,
            inside,
            scale,
            HAS_MASK,
            HAS_BIAS,
        )
        new_max = tl.maximum(running_max, z)
        shift = tl.where(new_max == -float("inf"), 0.0, new_max)  # all -inf so far: keep the sum at 0
        running_sum = running_sum * tl.exp(running_max - shift) + tl.exp(z - shift)
        running_max = new_max
    row_max = tl.max(running_max, axis=0)
    row_shift = tl.where(row_max == -float("inf"), 0.0, row_max)
    inverse_sum = 1.0 / tl.sum(running_sum * tl.exp(running_max - row_shift), axis=0)  # inf for a masked row
    for start in tl.range(0, end, TILE):
        cols = start + lanes
        load, inside = cols < end_load, cols < end
        z = _scores(
            x_ptr,
            x_off,
            mask_ptr,
            m_off,
            ms_col,
            bias_ptr,
            b_off,
            bs_col,
            cols,
            load,
            inside,
            scale,
            HAS_MASK,
            HAS_BIAS,
        )
        tl.store(out_row + cols, tl.exp(z - row_max) * inverse_sum, mask=cols < n_cols)
    zeros = tl.zeros([TILE], tl.float32) * inverse_sum  # NaN for a fully masked or NaN row, as eager torch
    for start in tl.range(tl.cdiv(end, TILE) * TILE, n_cols, TILE):
        cols = start + lanes
        tl.store(out_row + cols, zeros, mask=cols < n_cols)


@triton.jit
def _masked_softmax_backward_onepass_kernel(
    dx_ptr,
    g_ptr,
    y_ptr,
    dy_ptr,
    mask_ptr,
    n_rows,
    S1,
    S2,
    S3,
    n_cols,
    ms0,
    ms1,
    ms2,
    ms3,
    ms_col,
    os0,
    os1,
    os2,
    os3,
    c0,
    c1,
    c2,
    c3,
    scale,
    BLOCK: tl.constexpr,
    ROWS: tl.constexpr,
    HAS_MASK: tl.constexpr,
    CAUSAL: tl.constexpr,
    WRITE_G: tl.constexpr,
    VEC: tl.constexpr,
):
    # reads y, dy up to the diagonal, writes dx (and dz = dx / scale in fp32 for the bias grad)
    if VEC > 1:  # N is a multiple of VEC (16 bytes): y, dy, dx rows start on whole vectors
        os0 = os0 // VEC * VEC
        os1 = os1 // VEC * VEC
        os2 = os2 // VEC * VEC
        os3 = os3 // VEC * VEC
        n_cols = n_cols // VEC * VEC
    rows = tl.program_id(axis=0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    b0, b1, b2, b3 = _row_parts(rows, S1, S2, S3)
    i = b0 * c0 + b1 * c1 + b2 * c2 + b3 * c3  # the Lq index (causal)
    cols = tl.arange(0, BLOCK)[None, :]
    end = tl.zeros([ROWS], tl.int64) + n_cols
    end_load = end
    if CAUSAL:
        end = tl.minimum(end, i + 1)
        end_load = tl.minimum(end_load, (i + VEC) // VEC * VEC)
    in_rows = (rows < n_rows)[:, None]
    load = in_rows & (cols < end_load[:, None])
    inside = in_rows & (cols < end[:, None])
    offsets = (b0 * os0 + b1 * os1 + b2 * os2 + b3 * os3)[:, None] + cols
    y = tl.load(y_ptr + offsets, mask=load, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + offsets, mask=load, other=0.0).to(tl.float32)
    keep = inside
    if HAS_MASK:
        m_off = (b0 * ms0 + b1 * ms1 + b2 * ms2 + b3 * ms3)[:, None]
        keep = keep & (tl.load(mask_ptr + m_off + cols * ms_col, mask=load, other=0) != 0)
    dot = tl.sum(y * dy, axis=1)
    dz = tl.where(keep, y * (dy - dot[:, None]), 0.0)
    store = in_rows & (cols < n_cols)
    tl.store(dx_ptr + offsets, dz * scale, mask=store)
    if WRITE_G:
        tl.store(g_ptr + offsets, dz, mask=store)


@triton.jit
def _masked_softmax_backward_looped_kernel(
    dx_ptr,
    g_ptr,
    y_ptr,
    dy_ptr,
    mask_ptr,
    n_rows,
    S1,
    S2,
    S3,
    n_cols,
    ms0,
    ms1,
    ms2,
    ms3,
    ms_col,
    os0,
    os1,
    os2,
    os3,
    c0,
    c1,
    c2,
    c3,
    scale,
    TILE: tl.constexpr,
    HAS_MASK: tl.constexpr,
    CAUSAL: tl.constexpr,
    WRITE_G: tl.constexpr,
    VEC: tl.constexpr,
):
    # pass 1 reads y, dy up to the diagonal; pass 2 re-reads them and writes dx; pass 3 writes zeros past it
    if VEC > 1:
        os0 = os0 // VEC * VEC
        os1 = os1 // VEC * VEC
        os2 = os2 // VEC * VEC
        os3 = os3 // VEC * VEC
        n_cols = n_cols // VEC * VEC
    row = tl.program_id(axis=0).to(tl.int64)
    b0, b1, b2, b3 = _row_parts(row, S1, S2, S3)
    i = b0 * c0 + b1 * c1 + b2 * c2 + b3 * c3  # the Lq index (causal)
    end = n_cols
    end_load = n_cols
    if CAUSAL:
        end = tl.minimum(end, i + 1)
        end_load = tl.minimum(end_load, (i + VEC) // VEC * VEC)
    m_off = b0 * ms0 + b1 * ms1 + b2 * ms2 + b3 * ms3
    base = b0 * os0 + b1 * os1 + b2 * os2 + b3 * os3
    lanes = tl.arange(0, TILE)
    partial = tl.zeros([TILE], tl.float32)
    for start in tl.range(0, end, TILE):
        cols = start + lanes
        load = cols < end_load
        y = tl.load(y_ptr + base + cols, mask=load, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + base + cols, mask=load, other=0.0).to(tl.float32)
        partial += y * dy
    dot = tl.sum(partial, axis=0)
    for start in tl.range(0, end, TILE):
        cols = start + lanes
        load = cols < end_load
        y = tl.load(y_ptr + base + cols, mask=load, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + base + cols, mask=load, other=0.0).to(tl.float32)
        keep = cols < end
        if HAS_MASK:
            keep = keep & (tl.load(mask_ptr + m_off + cols * ms_col, mask=load, other=0) != 0)
        dz = tl.where(keep, y * (dy - dot), 0.0)
        tl.store(dx_ptr + base + cols, dz * scale, mask=cols < n_cols)
        if WRITE_G:
            tl.store(g_ptr + base + cols, dz, mask=cols < n_cols)
    zeros = tl.zeros([TILE], tl.float32)
    for start in tl.range(tl.cdiv(end, TILE) * TILE, n_cols, TILE):
        cols = start + lanes
        tl.store(dx_ptr + base + cols, zeros, mask=cols < n_cols)
        if WRITE_G:
            tl.store(g_ptr + base + cols, zeros, mask=cols < n_cols)


def plan(n_rows: int, n_cols: int, dtype: torch.dtype, **tunables: int) -> LaunchPlan:
    """onepass (N <= 16384 and no `tile`): grid cdiv(R, ROWS) over [ROWS, next_pow2(N)] tiles; else looped: grid
    (R,), each program stepping TILE lanes at a time."""
    check_tunables(NAME, tunables, TUNABLES)
    if n_cols < 1:
        raise ValueError(f"{NAME}: N={n_cols}; allowed: N >= 1")
    looped = "tile" in tunables or n_cols > ONEPASS_MAX_N
    if looped:
        if "rows_per_program" in tunables:
            raise ValueError(
                f"{NAME}: rows_per_program applies to the onepass path; allowed with tile or N > "
                f"{ONEPASS_MAX_N}: num_warps, tile"
            )
        tile = check_power_of_2(NAME, "tile", tunables.get("tile", DEFAULT_TILE), MIN_TILE, MAX_TILE)
        rows, width, grid = 1, tile, (n_rows,)
        constexprs = {"TILE": tile}
    else:
        width = max(16, next_power_of_2(n_cols))
        rows = check_power_of_2(
            NAME,
            "rows_per_program",
            tunables.get("rows_per_program", min(MAX_ROWS, max(1, 2048 // width))),
            1,
            MAX_ROWS,
        )
        grid = (triton.cdiv(n_rows, rows),)
        constexprs = {"BLOCK": width, "ROWS": rows}
    num_warps = check_int_choice(
        NAME, "num_warps", tunables.get("num_warps", max(2, min(8, rows * width // 1024))), NUM_WARPS_ALLOWED
    )
    return LaunchPlan(
        variant=NAME,
        kernel_name="_masked_softmax_looped_kernel" if looped else "_masked_softmax_onepass_kernel",
        n_rows=n_rows,
        n_cols=n_cols,
        dtype=dtype,
        grid=grid,
        num_warps=num_warps,
        num_stages=1,
        tile_width=width,
        rows_per_program=rows,
        constexprs=constexprs,
        scalar_args={"n_rows": n_rows, "n_cols": n_cols},
        tunables={"num_warps": num_warps, **({"tile": width} if looped else {"rows_per_program": rows})},
    )


_plans = cached_plans(plan)


def forward_plan(n_rows: int, n_cols: int, dtype: torch.dtype, causal: bool = False, **tunables: int) -> LaunchPlan:
    """The forward launch: `plan`, with 1 warp by default for a causal row of N in CAUSAL_ONE_WARP_N (its kept part
    is short on average; measured faster on the H200, see TUNABLES)."""
    low, high = CAUSAL_ONE_WARP_N
    if causal and "num_warps" not in tunables and low <= n_cols <= high:
        tunables = {**tunables, "num_warps": 1}
    return _plans(n_rows, n_cols, dtype, dict(tunables))


# ---- input checks and broadcast layout -------------------------------------------------------------------------


def _check_device(t: torch.Tensor, what: str) -> None:
    """A cuda tensor, or a cpu tensor when Triton interprets (TRITON_INTERPRET=1 before importing triton)."""
    if t.is_cuda:
        return
    if t.device.type == "cpu" and interpreting() and triton_interprets():
        return
    raise ValueError(
        f"masked_softmax: {what} is on {t.device}; allowed: a cuda tensor (or a cpu tensor with TRITON_INTERPRET=1 "
        "set before importing triton)"
    )


def check_inputs(x: object, scale: object, bias: object, mask: object, causal: object) -> None:
    """Raise TypeError/ValueError naming what is allowed for any bad argument of masked_softmax."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"masked_softmax: x must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"masked_softmax: x is {x.dtype}; allowed: torch.float16, torch.bfloat16, torch.float32")
    if x.dim() == 0:
        raise ValueError("masked_softmax: x is 0-d; allowed: rank >= 1 (softmax over the last dim)")
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
        raise TypeError(f"masked_softmax: scale is {type(scale).__name__}; allowed: a Python float")
    if not isinstance(causal, bool):
        raise TypeError(f"masked_softmax: causal is {type(causal).__name__}; allowed: True or False")
    if causal and x.dim() < 2:
        raise ValueError(f"masked_softmax: causal needs the last two dims (Lq, Lk); x has rank {x.dim()}")
    if not x.is_meta and not torch.compiler.is_compiling():  # traced: the op checks the device when it runs
        _check_device(x, "x")
    for name, t, dtypes, allowed in (
        ("bias", bias, SUPPORTED_DTYPES, "a float16/bfloat16/float32 tensor (additive)"),
        ("mask", mask, (torch.bool,), "a torch.bool tensor (True = keep)"),
    ):
        if t is None:
            continue
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"masked_softmax: {name} is {type(t).__name__}; allowed: None or {allowed}")
        if t.dtype not in dtypes:
            raise TypeError(f"masked_softmax: {name} is {t.dtype}; allowed: {allowed}")
        if t.device != x.device:
            raise ValueError(f"masked_softmax: {name} is on {t.device} and x on {x.device}; allowed: x's device")
        if t.dim() > x.dim() or any(
            s not in (1, n) for s, n in zip(reversed(t.shape), reversed(x.shape), strict=False)
        ):
            raise ValueError(
                f"masked_softmax: {name} of shape {tuple(t.shape)} does not broadcast to x's {tuple(x.shape)}; "
                "allowed: each of its trailing dims 1 or equal to x's (e.g. (B, 1, Lq, Lk), (1, H, 1, Lk), (Lq, Lk))"
            )


L2_RESIDENT_BYTES = 4 << 20  # a mask/bias this small stays in L2 in any program order


def _layout(
    shape: tuple[int, ...], tensors: list[torch.Tensor | None]
) -> tuple[tuple[int, ...], list[tuple[int, ...]], tuple[int, ...]]:
    """The row dims of x (leading dims and Lq) as at most four program-order dims (S0, S1, S2, S3), S3 fastest.

    Size-1 dims are dropped and neighbours every tensor steps through as one dim are merged (never Lq). Dims that
    a large (> 4 MiB) mask or bias broadcasts over go innermost, so programs reading the same mask/bias row run
    together and find it in L2. Returns the sizes, per tensor its strides (d0, d1, d2, d3, column) (zeros for
    None), and the causal coefficients (1 for the Lq dim, else 0). ValueError for more than four dims after
    merging (the caller then materialises the broadcasts)."""
    views = [t.expand(shape) if t is not None else None for t in tensors]
    strides = [list(v.stride()) if v is not None else [0] * len(shape) for v in views]
    lq_dim = len(shape) - 2  # -1 for a 1-d x: no Lq dim
    dims = []  # [size, strides per tensor, is_lq]
    for d in range(len(shape) - 1):
        if shape[d] == 1:
            continue
        column = [s[d] for s in strides]
        if dims and d != lq_dim and not dims[-1][2]:
            size, outer, _ = dims[-1]
            if all(o == c * shape[d] for o, c in zip(outer, column, strict=True)):
                dims[-1] = [size * shape[d], column, False]
                continue
        dims.append([shape[d], column, d == lq_dim])
    if len(dims) > 4:
        raise ValueError("more than 4 row dims that do not merge")
    weights = []
    for _, column, _ in dims:
        weight = 0
        for t, stride in zip(tensors[2:], column[2:], strict=True):  # mask, bias
            if t is not None and stride == 0 and t.numel() * t.element_size() > L2_RESIDENT_BYTES:
                weight += t.numel() * t.element_size()
        weights.append(weight)
    order = sorted(range(len(dims)), key=lambda k: weights[k])  # stable: C order among equal weights
    dims = [[1, [0] * len(tensors), False]] * (4 - len(dims)) + [dims[k] for k in order]
    sizes = tuple(size for size, _, _ in dims)
    per_tensor = [tuple(dims[k][1][t] for k in range(4)) + (strides[t][-1],) for t in range(len(tensors))]
    coefficients = tuple(int(is_lq) for _, _, is_lq in dims)
    return sizes, per_tensor, coefficients


def _prepared(x: torch.Tensor, out: torch.Tensor, bias: torch.Tensor | None, mask: torch.Tensor | None):
    """x with unit column stride, mask as uint8, and _layout of (x, out, mask, bias); copies only what cannot merge."""
    if x.stride(-1) != 1:
        x = x.contiguous()
    if mask is not None:
        mask = mask.view(torch.uint8)
    try:
        layout = _layout(tuple(x.shape), [x, out, mask, bias])
    except ValueError:  # > 4 unmergeable row dims: materialise the broadcasts
        x = x.contiguous()
        mask = None if mask is None else mask.expand(x.shape).contiguous()
        bias = None if bias is None else bias.expand(x.shape).contiguous()
        layout = _layout(tuple(x.shape), [x, out, mask, bias])
    return x, bias, mask, layout


def _vec(dtype: torch.dtype, n_cols: int, *row_strides: tuple[int, ...]) -> int:
    """Elements per 16-byte vector when N and every row stride of these tensors are multiples of it, else 1."""
    vec = VECTOR_BYTES // dtype.itemsize
    return vec if n_cols % vec == 0 and all(s % vec == 0 for strides in row_strides for s in strides[:4]) else 1


# ---- launchers --------------------------------------------------------------------------------------------------


def masked_softmax_forward(
    x: torch.Tensor,
    scale: float = 1.0,
    bias: torch.Tensor | None = None,
    mask: torch.Tensor | None = None,
    causal: bool = False,
    **tunables: int,
) -> torch.Tensor:
    """The forward launcher (no autograd, no argument checks beyond the plan's): a new contiguous tensor of x's
    shape and dtype. Callers check with check_inputs first."""
    output = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    if x.numel() == 0:
        return output
    x, bias, mask, (sizes, (xs, os_, ms, bs), coefficients) = _prepared(x, output, bias, mask)
    n_cols = x.shape[-1]
    n_rows = x.numel() // n_cols
    launch = forward_plan(n_rows, n_cols, x.dtype, causal, **tunables)
    kernel = _masked_softmax_looped_kernel if "TILE" in launch.constexprs else _masked_softmax_onepass_kernel
    constexprs = {
        **launch.constexprs,
        "HAS_MASK": mask is not None,
        "HAS_BIAS": bias is not None,
        "CAUSAL": bool(causal),
        "VEC": _vec(x.dtype, n_cols, xs, os_),
    }
    args = (
        output,
        x,
        x if mask is None else mask,
        x if bias is None else bias,
        n_rows,
        *sizes[1:],
        n_cols,
        *xs[:4],
        *ms,
        *bs,
        *os_[:4],
        *coefficients,
        float(scale),
    )
    launch_kernel(kernel, launch.grid, args, constexprs, launch.num_warps, launch.num_stages)
    return output


def masked_softmax_backward(
    y: torch.Tensor,
    dy: torch.Tensor,
    scale: float = 1.0,
    mask: torch.Tensor | None = None,
    causal: bool = False,
    write_g: bool = False,
    **tunables: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(dx, dz): dz = where(keep, y * (dy - sum(dy * y)), 0) per row (fp32, x's shape, only when write_g; else an
    empty fp32 tensor), dx = scale * dz in y's dtype. y is the forward's output; tunables as the forward's."""
    y = y.contiguous()
    dy = dy.contiguous()
    dx = torch.empty(y.shape, dtype=y.dtype, device=y.device)
    g = torch.empty(y.shape if write_g else (0,), dtype=torch.float32, device=y.device)
    if y.numel() == 0:
        return dx, g
    y, _, mask, (sizes, (_, os_, ms, _), coefficients) = _prepared(y, dx, None, mask)
    n_cols = y.shape[-1]
    n_rows = y.numel() // n_cols
    launch = _plans(n_rows, n_cols, y.dtype, dict(tunables))
    looped = "TILE" in launch.constexprs
    kernel = _masked_softmax_backward_looped_kernel if looped else _masked_softmax_backward_onepass_kernel
    constexprs = {
        **launch.constexprs,
        "HAS_MASK": mask is not None,
        "CAUSAL": bool(causal),
        "WRITE_G": write_g,
        "VEC": _vec(y.dtype, n_cols, os_),
    }
    args = (
        dx,
        g if write_g else dx,
        y,
        dy,
        y if mask is None else mask,
        n_rows,
        *sizes[1:],
        n_cols,
        *ms,
        *os_[:4],
        *coefficients,
        float(scale),
    )
    launch_kernel(kernel, launch.grid, args, constexprs, launch.num_warps, launch.num_stages)
    return dx, g


# ---- custom ops (torch.compile) and autograd --------------------------------------------------------------------


@torch.library.custom_op("blockscope::masked_softmax", mutates_args=())
def masked_softmax_op(
    x: torch.Tensor, scale: float, bias: torch.Tensor | None, mask: torch.Tensor | None, causal: bool
) -> torch.Tensor:
    _check_device(x, "x")
    with torch.no_grad():
        return masked_softmax_forward(x, scale, bias, mask, causal)


@masked_softmax_op.register_fake
def _(x, scale, bias, mask, causal):
    check_inputs(x, scale, bias, mask, causal)
    return torch.empty(x.shape, dtype=x.dtype, device=x.device)


@torch.library.custom_op("blockscope::masked_softmax_backward", mutates_args=())
def masked_softmax_backward_op(
    y: torch.Tensor, dy: torch.Tensor, scale: float, mask: torch.Tensor | None, causal: bool, write_g: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    with torch.no_grad():
        return masked_softmax_backward(y, dy, scale, mask, causal, write_g)


@masked_softmax_backward_op.register_fake
def _(y, dy, scale, mask, causal, write_g):
    if dy.shape != y.shape:
        raise ValueError(f"blockscope::masked_softmax_backward: dy {tuple(dy.shape)} != y {tuple(y.shape)}")
    g = torch.empty(y.shape if write_g else (0,), dtype=torch.float32, device=y.device)
    return torch.empty(y.shape, dtype=y.dtype, device=y.device), g


def _setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
    x, scale, bias, mask, causal = inputs
    ctx.save_for_backward(output, mask)
    ctx.scale, ctx.causal = scale, causal
    ctx.bias_shape = None if bias is None else bias.shape
    ctx.bias_dtype = None if bias is None else bias.dtype


def _backward(ctx, dy: torch.Tensor):
    y, mask = ctx.saved_tensors
    want_bias = ctx.bias_shape is not None and ctx.needs_input_grad[2]
    dx, g = masked_softmax_backward_op(y, dy, ctx.scale, mask, ctx.causal, want_bias)
    dbias = g.sum_to_size(ctx.bias_shape).to(ctx.bias_dtype) if want_bias else None
    return (dx if ctx.needs_input_grad[0] else None), None, dbias, None, None


masked_softmax_op.register_autograd(_backward, setup_context=_setup_context)


def masked_softmax(
    x: torch.Tensor,
    *,
    scale: float = 1.0,
    bias: torch.Tensor | None = None,
    mask: torch.Tensor | None = None,
    causal: bool = False,
) -> torch.Tensor:
    """softmax(where(keep, x * scale + bias, -inf), dim=-1), fused in one Triton kernel, fp32 math, x's dtype out.

    bias: additive float tensor broadcastable to x (fp16/bf16/fp32). mask: torch.bool tensor broadcastable to x,
    True = keep. Broadcast dims are read with stride 0 (never materialised). causal: keep column j <= row i of the
    last two dims (Lq, Lk), torch SDPA's is_causal (top-left aligned): for Lq > Lk rows i >= Lk - 1 keep every
    column; for Lq < Lk row i keeps its first i + 1 columns, so the last Lk - Lq columns are 0 in every row. Lanes
    not kept are exactly 0. A row with no kept lane is NaN, as the unfused torch expression
    torch.softmax(torch.where(keep, x * scale + bias, -inf), -1) (SDPA's math path and FlashAttention give zeros).
    Differentiable in x and bias (the bias grad is summed over its broadcast dims); compilable
    (torch.compile(fullgraph=True) traces the blockscope::masked_softmax custom op). Returns a new contiguous tensor.
    """
    check_inputs(x, scale, bias, mask, causal)
    needs_grad = torch.is_grad_enabled() and (x.requires_grad or (bias is not None and bias.requires_grad))
    if needs_grad or torch.compiler.is_compiling():
        return torch.ops.blockscope.masked_softmax(x, float(scale), bias, mask, causal)
    return masked_softmax_forward(x, float(scale), bias, mask, causal)
