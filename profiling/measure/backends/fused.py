"""The fused ops' cases, inputs, float64 references and backends: one registered builder per (op, backend).

Shared by `python -m profiling sweep --op ...` (profiling.measure.op_sweep) and tools/bench_fused.py. No streamlit,
no plotly. A builder takes the op's inputs (MaskedInputs / RaggedInputs) and returns a zero-argument closure (the
timed call); its `supports(inputs)` returns None or why it cannot run that case here (an 'unsupported: ...' row).

masked_softmax over x of shape (B, H, L, L) (default B=2, H=16, as tools/bench_fused.py), two cases:
  causal           scale 0.125, causal=True
  scale_mask_bias  scale 0.125, mask (B, 1, L, L) bool (90 % kept, column 0 always), bias (1, H, 1, L) in x's dtype
backends: blockscope (kernels.masked_softmax), eager (torch.softmax(torch.where(keep, x * scale + bias, -inf), -1),
keep precomputed), inductor (torch.compile of that expression), sdpa_math_softmax (aten._safe_softmax(x * scale +
attn_mask): the softmax step of SDPA's math backend, mask and bias folded into one float attn_mask beforehand).
ragged_softmax over 1-D values split by offsets, two length distributions (seeded, generator seed 35):
  uniform    16384 segments, lengths uniform in 1..8192
  long_tail  16383 segments, lengths lognormal (median 400, clipped to 1..100000), plus one of 147456 (144k)
backends: blockscope (ragged.ragged_softmax_forward with check=False: offsets validated once before timing), nested
(torch.softmax over the ragged dim of a jagged nested tensor), pad_unpad (scatter into a -inf padded (B, max_len)
tensor, softmax, gather back), segment_reduce (torch.segment_reduce max and sum, exp, repeat_interleave).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

MASKED = "masked_softmax"
RAGGED = "ragged_softmax"
OPS: tuple[str, ...] = (MASKED, RAGGED)
CASES: dict[str, tuple[str, ...]] = {MASKED: ("causal", "scale_mask_bias"), RAGGED: ("uniform", "long_tail")}
MASKED_LENGTHS: tuple[int, ...] = (512, 1000, 1024, 2048, 4096)
BATCH, HEADS = 2, 16
SCALE = 0.125
KEEP_FRACTION = 0.9  # scale_mask_bias: share of mask lanes kept
RAGGED_SEGMENTS = 16384
RAGGED_SEED = 35
UNIFORM_MAX = 8192  # uniform: lengths 1..8192
TAIL_MEDIAN, TAIL_CLIP, TAIL_LONGEST = 400.0, 100_000, 147_456  # long_tail: lognormal median, clip, the one long row
TAIL_AT = 8000  # long_tail: index of the long segment (of 16384)
INT32_MAX = 2**31 - 1
# max |y - float64 reference| a backend may be off by (the values of tools/bench_fused.py)
TOLERANCES: dict[torch.dtype, float] = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}

Call = Callable[[], torch.Tensor]


@dataclass
class MaskedInputs:
    """One masked_softmax case at (B, H, L, L): x, the keep mask the torch expressions use, the kernel's arguments
    (bias, mask, causal) and SDPA's float attn_mask (0 kept, -inf dropped)."""

    case: str
    x: torch.Tensor
    keep: torch.Tensor
    bias: torch.Tensor | None
    mask: torch.Tensor | None
    causal: bool
    attn: torch.Tensor
    scale: float = SCALE

    @property
    def shape(self) -> tuple[int, int, int, int]:
        return tuple(self.x.shape)  # type: ignore[return-value]


@dataclass
class RaggedInputs:
    """One ragged_softmax case: values (T,), offsets (B + 1,) int64, each value's segment and position in it."""

    case: str
    lengths: torch.Tensor  # (B,) int64, on the CPU
    values: torch.Tensor
    offsets: torch.Tensor
    seg: torch.Tensor
    pos: torch.Tensor
    cache: dict[str, Any] = field(default_factory=dict)

    @property
    def n_segments(self) -> int:
        return int(self.lengths.numel())

    @property
    def total(self) -> int:
        return int(self.values.numel())

    @property
    def max_len(self) -> int:
        return int(self.lengths.max()) if self.lengths.numel() else 0


@dataclass(frozen=True)
class FusedBackend:
    """A registered way to compute one op: `build(inputs)` -> the timed closure; `supports(inputs)` -> None or why
    not (the row's 'unsupported: <name>: ...' text)."""

    op: str
    name: str
    build: Callable[[Any], Call]
    supports: Callable[[Any], str | None]
    description: str = ""


_REGISTRY: dict[str, dict[str, FusedBackend]] = {op: {} for op in OPS}


def register(op: str, name: str, supports: Callable[[Any], str | None] | None = None) -> Callable:
    """Decorator: register `build(inputs)` as backend `name` of `op` (its docstring's first line describes it)."""

    def wrap(build: Callable[[Any], Call]) -> Callable[[Any], Call]:
        doc = (build.__doc__ or "").strip().splitlines()
        _REGISTRY[op][name] = FusedBackend(op, name, build, supports or (lambda inputs: None), doc[0] if doc else "")
        return build

    return wrap


def backend_names(op: str) -> tuple[str, ...]:
    """The registered backends of `op`, blockscope first; ValueError for an unknown op."""
    if op not in _REGISTRY:
        raise ValueError(f"unknown op {op!r}; allowed: {', '.join(OPS)}")
    return tuple(_REGISTRY[op])


def get_backend(op: str, name: str) -> FusedBackend:
    """The registered backend `name` of `op`; ValueError naming the allowed ones."""
    names = backend_names(op)
    if name not in names:
        raise ValueError(f"unknown {op} backend {name!r}; allowed: {', '.join(names)}")
    return _REGISTRY[op][name]


def unsupported_reason(op: str, name: str, inputs: Any) -> str | None:
    """'unsupported: <name>: why' when backend `name` of `op` cannot run `inputs` here, else None."""
    why = get_backend(op, name).supports(inputs)
    return None if why is None else f"unsupported: {name}: {why}"


def _triton_here(inputs: Any) -> str | None:
    device = (inputs.x if isinstance(inputs, MaskedInputs) else inputs.values).device
    if device.type != "cuda" and os.environ.get("TRITON_INTERPRET") != "1":
        return f"Triton kernels need a CUDA device (on {device.type} only with TRITON_INTERPRET=1)"
    return None


# ---- masked_softmax ----


def masked_inputs(
    case: str,
    length: int,
    dtype: torch.dtype,
    device: str | torch.device,
    *,
    batch: int = BATCH,
    heads: int = HEADS,
    seed: int | None = None,
) -> MaskedInputs:
    """The inputs of masked_softmax case `case` at (batch, heads, length, length), drawn with a generator seeded
    `seed` (default: `length`, as tools/bench_fused.py)."""
    if case not in CASES[MASKED]:
        raise ValueError(f"unknown {MASKED} case {case!r}; allowed: {', '.join(CASES[MASKED])}")
    device = torch.device(device)
    gen = torch.Generator(device=device).manual_seed(length if seed is None else seed)
    x = torch.randn(batch, heads, length, length, device=device, generator=gen).to(dtype)
    if case == "causal":
        keep = torch.ones(length, length, dtype=torch.bool, device=device).tril()
        attn = torch.zeros(length, length, dtype=dtype, device=device).masked_fill(~keep, -math.inf)
        return MaskedInputs(case, x, keep, None, None, True, attn)
    mask = torch.rand(batch, 1, length, length, device=device, generator=gen) < KEEP_FRACTION
    mask[..., 0] = True
    bias = torch.randn(1, heads, 1, length, device=device, generator=gen).to(dtype)
    attn = torch.where(mask, bias, torch.tensor(-math.inf, dtype=dtype, device=device))
    return MaskedInputs(case, x, mask, bias, mask, False, attn)


def masked_expression(x: torch.Tensor, keep: torch.Tensor, bias: torch.Tensor | None, scale: float) -> torch.Tensor:
    """The unfused torch expression: softmax(where(keep, x * scale + bias, -inf), -1)."""
    z = x * scale if bias is None else x * scale + bias
    return torch.softmax(torch.where(keep, z, -math.inf), -1)


def masked_reference(inputs: MaskedInputs) -> torch.Tensor:
    """The float64 result of masked_expression on the upcast inputs."""
    bias = None if inputs.bias is None else inputs.bias.double()
    return masked_expression(inputs.x.double(), inputs.keep, bias, inputs.scale)


@register(MASKED, "blockscope", supports=_triton_here)
def masked_blockscope(inputs: MaskedInputs) -> Call:
    """kernels.masked_softmax: scale, bias, mask and causal in one Triton kernel."""
    from blockscope import kernels

    x, bias, mask, causal, scale = inputs.x, inputs.bias, inputs.mask, inputs.causal, inputs.scale
    return lambda: kernels.masked_softmax(x, scale=scale, bias=bias, mask=mask, causal=causal)


@register(MASKED, "eager")
def masked_eager(inputs: MaskedInputs) -> Call:
    """torch.softmax(torch.where(keep, x * scale + bias, -inf), -1), eager ATen kernels."""
    x, keep, bias, scale = inputs.x, inputs.keep, inputs.bias, inputs.scale
    return lambda: masked_expression(x, keep, bias, scale)


@register(MASKED, "inductor")
def masked_inductor(inputs: MaskedInputs) -> Call:
    """torch.compile(dynamic=False) of the eager expression (Inductor's fused Triton kernel)."""
    x, keep, bias, scale = inputs.x, inputs.keep, inputs.bias, inputs.scale
    compiled = torch.compile(masked_expression, dynamic=False)
    return lambda: compiled(x, keep, bias, scale)


def _has_safe_softmax(inputs: Any) -> str | None:
    return None if hasattr(torch.ops.aten, "_safe_softmax") else f"torch {torch.__version__} has no aten._safe_softmax"


@register(MASKED, "sdpa_math_softmax", supports=_has_safe_softmax)
def masked_sdpa_math_softmax(inputs: MaskedInputs) -> Call:
    """aten._safe_softmax(x * scale + attn_mask, -1): the softmax step of SDPA's math backend."""
    x, attn, scale = inputs.x, inputs.attn, inputs.scale
    return lambda: torch.ops.aten._safe_softmax(x * scale + attn, -1)


# ---- ragged_softmax ----


def ragged_lengths(case: str, segments: int = RAGGED_SEGMENTS, scale: float = 1.0) -> torch.Tensor:
    """Segment lengths (int64, CPU) of ragged case `case`; the defaults are tools/bench_fused.py's. `scale` shrinks
    every length (tests: a few hundred values in all), `segments` the count (long_tail: one of them the long row)."""
    if case not in CASES[RAGGED]:
        raise ValueError(f"unknown {RAGGED} case {case!r}; allowed: {', '.join(CASES[RAGGED])}")
    gen = torch.Generator().manual_seed(RAGGED_SEED)
    if case == "uniform":
        return torch.randint(1, max(1, round(UNIFORM_MAX * scale)) + 1, (segments,), generator=gen)
    clip = max(1, round(TAIL_CLIP * scale))
    body = torch.randn(segments - 1, generator=gen) * 1.5 + math.log(max(TAIL_MEDIAN * scale, 1.0))
    body = torch.exp(body).round().clamp(1, clip).long()
    at = segments * TAIL_AT // RAGGED_SEGMENTS
    return torch.cat([body[:at], torch.tensor([max(1, round(TAIL_LONGEST * scale))]), body[at:]])


def ragged_inputs(
    case: str,
    dtype: torch.dtype,
    device: str | torch.device,
    *,
    segments: int = RAGGED_SEGMENTS,
    scale: float = 1.0,
    seed: int = 0,
) -> RaggedInputs:
    """Values (standard normal, seeded) and offsets of ragged case `case` (ragged_lengths)."""
    device = torch.device(device)
    lengths = ragged_lengths(case, segments, scale)
    total = int(lengths.sum())
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)]).to(device)
    gen = torch.Generator(device=device).manual_seed(seed)
    values = torch.randn(total, device=device, generator=gen).to(dtype)
    seg = torch.repeat_interleave(torch.arange(lengths.numel(), device=device), lengths.to(device), output_size=total)
    pos = torch.arange(total, device=device) - offsets[:-1][seg]
    return RaggedInputs(case, lengths, values, offsets, seg, pos)


def ragged_reference(inputs: RaggedInputs) -> torch.Tensor:
    """Float64 softmax within each segment (segment max and sum by scatter_reduce; memory O(T))."""
    v = inputs.values.double()
    n = inputs.n_segments
    m = torch.full((n,), -math.inf, dtype=torch.float64, device=v.device).scatter_reduce(
        0, inputs.seg, v, "amax", include_self=True
    )
    e = torch.exp(v - m[inputs.seg])
    s = torch.zeros(n, dtype=torch.float64, device=v.device).index_add(0, inputs.seg, e)
    return e / s[inputs.seg]


@register(RAGGED, "blockscope", supports=_triton_here)
def ragged_blockscope(inputs: RaggedInputs) -> Call:
    """kernels.ragged.ragged_softmax_forward(check=False): offsets validated once before timing."""
    from blockscope.kernels import ragged

    values, offsets = inputs.values, inputs.offsets
    ragged.check_offsets(offsets, inputs.total)
    return lambda: ragged.ragged_softmax_forward(values, offsets, check=False)


def _nested_fits(inputs: RaggedInputs) -> str | None:
    padded = inputs.n_segments * inputs.max_len
    if padded > INT32_MAX:
        return (
            f"B x max_len = {inputs.n_segments} x {inputs.max_len} = {padded:,} padded elements, over int32 max "
            "(torch's jagged softmax pads: 'numel needs to be smaller than int32_t max' on the H200)"
        )
    return None


@register(RAGGED, "nested", supports=_nested_fits)
def ragged_nested(inputs: RaggedInputs) -> Call:
    """torch.softmax over the ragged dim of a jagged nested tensor (torch.nested, layout=torch.jagged)."""
    nested = torch.nested.nested_tensor_from_jagged(
        inputs.values, inputs.offsets, max_seqlen=inputs.max_len, min_seqlen=int(inputs.lengths.min())
    )
    return lambda: torch.softmax(nested, dim=1).values()


@register(RAGGED, "pad_unpad")
def ragged_pad_unpad(inputs: RaggedInputs) -> Call:
    """Scatter into a -inf padded (B, max_len) tensor, torch.softmax over dim 1, gather back."""
    values, seg, pos, n_seg, max_len = inputs.values, inputs.seg, inputs.pos, inputs.n_segments, inputs.max_len

    def pad_unpad() -> torch.Tensor:
        padded = values.new_full((n_seg, max_len), -math.inf)
        padded[seg, pos] = values
        return torch.softmax(padded, 1)[seg, pos]

    return pad_unpad


@register(RAGGED, "segment_reduce")
def ragged_segment_reduce(inputs: RaggedInputs) -> Call:
    """torch.segment_reduce max and sum, exp, repeat_interleave (torch_geometric's CSR recipe)."""
    values, offsets, total = inputs.values, inputs.offsets, inputs.total
    lengths = inputs.lengths.to(values.device)

    def segment_reduce() -> torch.Tensor:
        m = torch.segment_reduce(values, "max", offsets=offsets, axis=0, unsafe=True)
        e = torch.exp(values - torch.repeat_interleave(m, lengths, output_size=total))
        s = torch.segment_reduce(e, "sum", offsets=offsets, axis=0, unsafe=True)
        return e / torch.repeat_interleave(s, lengths, output_size=total)

    return segment_reduce


def build_backends(op: str, inputs: Any, names: tuple[str, ...] | None = None) -> dict[str, Call]:
    """{name: closure} for the backends of `op` (all registered by default) that support `inputs`."""
    out = {}
    for name in names or backend_names(op):
        if unsupported_reason(op, name, inputs) is None:
            out[name] = get_backend(op, name).build(inputs)
    return out


def compare(reference: torch.Tensor, tolerance: float) -> Callable[[str, torch.Tensor], str]:
    """check(name, out) -> 'ok' or 'MISMATCH max_abs=... nan_mismatch=...': max |out - reference| over the
    reference's non-NaN lanes, NaN positions equal."""

    def check(name: str, out: torch.Tensor) -> str:
        err, nan_mismatch, shape_error = max_abs_error(out, reference)
        if shape_error:
            return shape_error
        if nan_mismatch or err > tolerance:
            return f"MISMATCH max_abs={err:.3g} nan_mismatch={nan_mismatch}"
        return "ok"

    return check


def max_abs_error(out: torch.Tensor, reference: torch.Tensor) -> tuple[float, int, str]:
    """(max |out - reference| over the reference's non-NaN lanes, NaN positions that differ, shape error text)."""
    if tuple(out.shape) != tuple(reference.shape):
        return math.inf, 0, f"shape {tuple(out.shape)} != {tuple(reference.shape)}"
    got = out.to(reference.dtype)
    nan_mismatch = int((got.isnan() != reference.isnan()).sum())
    finite = ~reference.isnan()
    err = float((got[finite] - reference[finite]).abs().max()) if bool(finite.any()) else 0.0
    return err, nan_mismatch, ""
