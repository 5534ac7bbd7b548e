"""Traffic models of the fused ops: bytes an unfused eager chain moves vs kernels.masked_softmax, and lanes a
pad-to-longest softmax spans vs kernels.ragged_softmax's packed rows.

Pure arithmetic (no torch, no launch). Every count is DRAM-level traffic under the stated assumptions: each
eager op reads its inputs once and writes its output once (no L2 reuse between ops), a broadcast mask or bias is
read once per distinct element (its broadcast copies come from L2), masks are bool (1 byte), bias has x's dtype.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

ELEMENT_BYTES: dict[str, int] = {"fp16": 2, "bf16": 2, "fp32": 4}
MASK_BYTES = 1  # torch.bool
ONEPASS_MAX_N = 16384  # kernels.masked.ONEPASS_MAX_N: wider rows take the looped path, which reads x twice
DIM_NAMES = ("B", "H", "Lq", "Lk")
MAX_DIM = 1 << 20  # largest B, H, Lq or Lk the traffic model takes
MAX_ELEMENTS = 1 << 40  # largest B*H*Lq*Lk (4 TiB of fp32 scores): past any GPU, still exact in Python ints
MAX_SHAPE_CHARS = 100  # longest broadcast-shape text

MAX_SEGMENTS = 100_000  # ragged rows a length distribution may hold
MAX_LENGTH = 1 << 24  # longest ragged row, elements
MAX_TYPED_LENGTHS = 10_000  # lengths a user may type
MAX_LENGTHS_CHARS = 100_000  # longest typed-lengths text
DISTRIBUTIONS = ("uniform", "long_tail", "typed")


def _check_int(name: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not low <= int(value) <= high:
        raise ValueError(f"{name}={value!r}; allowed: an integer from {low:,} to {high:,}")
    return int(value)


def check_shape(shape: Sequence[int]) -> tuple[int, int, int, int]:
    """(B, H, Lq, Lk) validated: four integers in 1..MAX_DIM whose product is at most MAX_ELEMENTS."""
    if len(shape) != 4:
        raise ValueError(f"shape {tuple(shape)!r}; allowed: four integers (B, H, Lq, Lk)")
    dims = tuple(_check_int(n, v, 1, MAX_DIM) for n, v in zip(DIM_NAMES, shape, strict=True))
    if math.prod(dims) > MAX_ELEMENTS:
        raise ValueError(f"B*H*Lq*Lk = {math.prod(dims):,} elements; allowed: at most {MAX_ELEMENTS:,}")
    return dims  # type: ignore[return-value]


def parse_broadcast(text: str, shape: Sequence[int], what: str = "shape") -> tuple[int, int, int, int] | None:
    """A mask/bias shape typed as comma-separated dims ('B,1,Lq,Lk', '1,16,1,1024', 'Lq,Lk'), right-aligned to x's
    (B, H, Lq, Lk) like torch broadcasting; each dim 1 or x's dim (a name stands for x's dim). '' / 'none' -> None."""
    shape = check_shape(shape)
    cleaned = text.strip()
    if cleaned.lower() in ("", "none", "-"):
        return None
    if len(cleaned) > MAX_SHAPE_CHARS:
        raise ValueError(f"{what}: {len(cleaned):,} characters; allowed: at most {MAX_SHAPE_CHARS}")
    parts = [p.strip() for p in cleaned.strip("()[]").split(",") if p.strip()]
    if not 1 <= len(parts) <= 4:
        raise ValueError(f"{what} {cleaned!r}: {len(parts)} dims; allowed: 1 to 4 comma-separated dims or 'none'")
    dims = [1] * (4 - len(parts))
    names = {n.lower(): v for n, v in zip(DIM_NAMES, shape, strict=True)}
    for offset, part in enumerate(parts, start=4 - len(parts)):
        if part.lower() in names:
            value = names[part.lower()]
        elif re.fullmatch(r"\d{1,8}", part):
            value = int(part)
        else:
            raise ValueError(f"{what}: {part[:20]!r} is not a dim; allowed: 1, {', '.join(DIM_NAMES)} or their sizes")
        if value not in (1, shape[offset]):
            raise ValueError(
                f"{what}: dim {offset} is {value:,}; allowed: 1 or {DIM_NAMES[offset]} = {shape[offset]:,} (broadcast)"
            )
        dims.append(value)
    return tuple(dims)  # type: ignore[return-value]


def causal_kept(lq: int, lk: int) -> int:
    """Elements of one (Lq, Lk) score matrix a top-left-aligned causal mask keeps: sum over rows i of min(i+1, Lk)."""
    full = min(lq, lk)  # rows 0..full-1 keep i+1 columns, the rest keep all Lk
    return full * (full + 1) // 2 + (lq - full) * lk


def _read_elements(shape: tuple[int, int, int, int], of: tuple[int, int, int, int], causal: bool) -> int:
    """Distinct elements of a tensor of `shape` broadcast to `of` that the fused kernel loads: all of them, or with
    `causal` only those some kept (i, j <= i) position maps to."""
    outer = shape[0] * shape[1]
    mq, mk = shape[2], shape[3]
    if not causal:
        return outer * mq * mk
    lq, lk = of[2], of[3]
    if mq == lq and mk == lk:
        per = causal_kept(lq, lk)
    elif mq == 1 and mk == lk:
        per = min(lq, lk)  # one row shared by all rows: the columns up to the longest kept row
    else:
        per = mq  # (Lq, 1) or (1, 1): column 0 is kept in every row
    return outer * per


@dataclass(frozen=True)
class Step:
    """One kernel of a chain: bytes it reads and writes (DRAM)."""

    kernel: str
    read_bytes: int
    write_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.read_bytes + self.write_bytes


@dataclass(frozen=True)
class FusionTraffic:
    """Bytes moved by the eager chain and by the fused kernel for one attention-score shape (bytes; ratio: x)."""

    shape: tuple[int, int, int, int]
    dtype: str
    mask_shape: tuple[int, int, int, int] | None
    bias_shape: tuple[int, int, int, int] | None
    causal: bool
    eager: tuple[Step, ...]
    fused: tuple[Step, ...]

    @property
    def eager_bytes(self) -> int:
        return sum(s.total_bytes for s in self.eager)

    @property
    def fused_bytes(self) -> int:
        return sum(s.total_bytes for s in self.fused)

    @property
    def ratio(self) -> float:
        """eager bytes / fused bytes (x): how much traffic fusion saves."""
        return self.eager_bytes / self.fused_bytes

    def table(self) -> list[dict]:
        """One dict per kernel of both chains: chain, kernel, read_bytes, write_bytes, total_bytes."""
        return [
            {"chain": chain, "kernel": s.kernel, "read_bytes": s.read_bytes, "write_bytes": s.write_bytes,
             "total_bytes": s.total_bytes}
            for chain, steps in (("eager", self.eager), ("fused", self.fused))
            for s in steps
        ]  # fmt: skip


def fusion_traffic(
    shape: Sequence[int],
    dtype: str,
    mask_shape: Sequence[int] | None = None,
    bias_shape: Sequence[int] | None = None,
    causal: bool = False,
) -> FusionTraffic:
    """Bytes of softmax(where(keep, x * scale + bias, -inf)) over (B, H, Lq, Lk) scores, eager vs fused.

    Eager (torch ops, one kernel each, counted): `x * scale` (read x, write t), `+ bias` (read t and bias once,
    write t; only with a bias), `torch.where(keep, t, -inf)` (read keep and t, write t; only with a mask or causal:
    keep = mask & tril precomputed, bool of the broadcast of mask and (Lq, Lk)), `softmax` (read t once, write y).
    Fused (kernels.masked_softmax, one kernel): read x once (causal: only each row's kept columns j <= i), read
    mask and bias once per distinct element (causal: only the elements a kept position uses), write y once (all
    of it: zeros past the diagonal); for Lk > ONEPASS_MAX_N the looped path reads x, mask and bias twice (max and
    sum, then the pass that writes y). Eager softmax counts one read: a lower bound (ATen's kernel for long rows
    reads a row more than once). Building keep and allocation are not counted. ValueError for bad inputs."""
    dims = check_shape(shape)
    if dtype not in ELEMENT_BYTES:
        raise ValueError(f"dtype {dtype!r}; allowed: {', '.join(ELEMENT_BYTES)}")
    e = ELEMENT_BYTES[dtype]
    mask = None if mask_shape is None else parse_broadcast(",".join(map(str, mask_shape)), dims, "mask shape")
    bias = None if bias_shape is None else parse_broadcast(",".join(map(str, bias_shape)), dims, "bias shape")
    n = math.prod(dims)
    eager = [Step("x * scale", n * e, n * e)]
    if bias is not None:
        eager.append(Step("+ bias", n * e + math.prod(bias) * e, n * e))
    if mask is not None or causal:
        keep = mask or (1, 1, 1, 1)
        if causal:
            keep = (keep[0], keep[1], dims[2], dims[3])
        eager.append(Step("where(keep, t, -inf)", n * e + math.prod(keep) * MASK_BYTES, n * e))
    eager.append(Step("softmax", n * e, n * e))
    reads = _read_elements(dims, dims, causal) * e
    if mask is not None:
        reads += _read_elements(mask, dims, causal) * MASK_BYTES
    if bias is not None:
        reads += _read_elements(bias, dims, causal) * e
    looped = dims[3] > ONEPASS_MAX_N
    name = "masked_softmax (fused, looped: 2 reads)" if looped else "masked_softmax (fused)"
    fused = (Step(name, reads * (2 if looped else 1), n * e),)
    return FusionTraffic(dims, dtype, mask, bias, causal, tuple(eager), fused)


# ---- ragged rows: pad-to-longest vs packed ----


def parse_lengths(text: str) -> list[int]:
    """Comma- (or space-) separated row lengths: at most MAX_TYPED_LENGTHS integers, each 1..MAX_LENGTH."""
    if len(text) > MAX_LENGTHS_CHARS:
        raise ValueError(f"lengths: {len(text):,} characters; allowed: at most {MAX_LENGTHS_CHARS:,}")
    parts = [p for p in re.split(r"[,\s]+", text.strip()) if p]
    if not parts:
        raise ValueError(f"no lengths; allowed: 1 to {MAX_TYPED_LENGTHS:,} integers from 1 to {MAX_LENGTH:,}")
    if len(parts) > MAX_TYPED_LENGTHS:
        raise ValueError(f"{len(parts):,} lengths; allowed: at most {MAX_TYPED_LENGTHS:,}")
    out = []
    for part in parts:
        if not re.fullmatch(r"[+-]?\d+", part):
            raise ValueError(f"length {part[:20]!r} is not an integer; allowed: integers from 1 to {MAX_LENGTH:,}")
        if len(part) > 12 or not 1 <= int(part) <= MAX_LENGTH:
            raise ValueError(f"length {part[:20]}; allowed: integers from 1 to {MAX_LENGTH:,}")
        out.append(int(part))
    return out


def uniform_lengths(segments: int, max_len: int, seed: int = 0) -> np.ndarray:
    """`segments` lengths uniform in 1..max_len (seeded), int64."""
    segments = _check_int("segments", segments, 1, MAX_SEGMENTS)
    max_len = _check_int("max length", max_len, 1, MAX_LENGTH)
    return np.random.default_rng(seed).integers(1, max_len, size=segments, endpoint=True, dtype=np.int64)


def long_tail_lengths(segments: int, median: int, clip: int, sigma: float = 1.0, seed: int = 0) -> np.ndarray:
    """`segments` lengths lognormal with `median` (exp(mu)) and `sigma`, rounded, clipped to 1..clip (seeded)."""
    segments = _check_int("segments", segments, 1, MAX_SEGMENTS)
    clip = _check_int("clip", clip, 1, MAX_LENGTH)
    median = _check_int("median", median, 1, clip)
    if not isinstance(sigma, (int, float)) or not 0 <= sigma <= 4:
        raise ValueError(f"sigma={sigma!r}; allowed: a number from 0 to 4")
    raw = np.random.default_rng(seed).lognormal(math.log(median), sigma, size=segments)
    return np.clip(np.rint(raw), 1, clip).astype(np.int64)


@dataclass(frozen=True)
class PaddingModel:
    """Lanes and bytes of a softmax over ragged rows, padded to the longest row vs packed (lanes = elements)."""

    segments: int
    packed_lanes: int  # sum of lengths: what ragged_softmax reads and writes
    max_len: int
    padded_lanes: int  # segments * max_len: the (B, max_len) tensor a pad-to-longest softmax runs on
    element_bytes: int

    @property
    def waste_factor(self) -> float:
        """padded / packed lanes (x): max_len * segments / sum(lengths); 1.0 when every row is the longest."""
        return self.padded_lanes / self.packed_lanes

    @property
    def wasted_fraction(self) -> float:
        """padding lanes / padded lanes, 0..1."""
        return 1 - self.packed_lanes / self.padded_lanes

    @property
    def packed_bytes(self) -> int:
        """Read x + write y over the packed values, bytes."""
        return 2 * self.packed_lanes * self.element_bytes

    @property
    def padded_bytes(self) -> int:
        """Read + write of the padded tensor by the softmax alone, bytes (the scatter into it and the gather back
        add 2 * padded + 2 * packed element moves more; not counted here)."""
        return 2 * self.padded_lanes * self.element_bytes


def padding_model(lengths: Sequence[int] | np.ndarray, dtype: str = "fp32") -> PaddingModel:
    """PaddingModel of these row lengths (each 1..MAX_LENGTH, at most MAX_SEGMENTS of them) in `dtype`."""
    if dtype not in ELEMENT_BYTES:
        raise ValueError(f"dtype {dtype!r}; allowed: {', '.join(ELEMENT_BYTES)}")
    values = np.asarray(lengths)
    if values.ndim != 1 or not 1 <= len(values) <= MAX_SEGMENTS:
        raise ValueError(f"{values.size:,} lengths; allowed: 1 to {MAX_SEGMENTS:,} row lengths")
    if not np.issubdtype(values.dtype, np.integer) or values.min() < 1 or values.max() > MAX_LENGTH:
        raise ValueError(f"row lengths must be integers from 1 to {MAX_LENGTH:,}")
    values = values.astype(np.int64)
    max_len = int(values.max())
    return PaddingModel(
        segments=len(values),
        packed_lanes=int(values.sum()),
        max_len=max_len,
        padded_lanes=len(values) * max_len,
        element_bytes=ELEMENT_BYTES[dtype],
    )
