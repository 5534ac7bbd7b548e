"""ULP distance between floats of one dtype (fp16, bf16, fp32) and correct rounding of a float64 reference.

A float's bit pattern is sign-magnitude; mapping it to `-magnitude` when the sign bit is set (and
`magnitude` otherwise) gives integers ordered like the floats, with adjacent representable values 1
apart. So +0 and -0 are 0 apart, the smallest subnormals of opposite sign are 2 apart (-d, 0, +d),
subnormals count like any other step, and the largest finite value is 1 from infinity.

NaN handling (`ulp_distance`): NaN vs NaN is 0 (both say "undefined"); NaN vs a number (or infinity) is
`NAN_MISMATCH` (+inf), so it never hides inside a finite maximum and is counted separately by
`blockscope.profiling.inspect.numerics.measure`. Infinity vs infinity of the same sign is 0.
"""

from __future__ import annotations

import math

import torch

NAN_MISMATCH = math.inf  # ulp_distance where exactly one side is NaN
_BITS: dict[torch.dtype, tuple[torch.dtype, int]] = {
    torch.float16: (torch.int16, 0x7FFF),
    torch.bfloat16: (torch.int16, 0x7FFF),
    torch.float32: (torch.int32, 0x7FFFFFFF),
}
DTYPES: tuple[torch.dtype, ...] = tuple(_BITS)


def _bits_of(dtype: torch.dtype) -> tuple[torch.dtype, int]:
    try:
        return _BITS[dtype]
    except KeyError:
        raise TypeError(f"ULPs of {dtype} are not supported; allowed: float16, bfloat16, float32") from None


def ordered_int(x: torch.Tensor) -> torch.Tensor:
    """int64 tensor ordered like the floats of `x` (fp16/bf16/fp32): +-0 -> 0, next float up -> +1.

    NaNs map to integers past +-inf; callers mask them (see `ulp_distance`)."""
    int_dtype, magnitude_mask = _bits_of(x.dtype)
    bits = x.contiguous().view(int_dtype).to(torch.int64)
    magnitude = bits & magnitude_mask
    return torch.where(bits < 0, -magnitude, magnitude)


def from_ordered(ordered: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Inverse of `ordered_int`: the floats of `dtype` whose ordered integers are `ordered` (0 -> +0)."""
    int_dtype, magnitude_mask = _bits_of(dtype)
    sign_bit = magnitude_mask + 1
    bits = torch.where(ordered < 0, (-ordered) | sign_bit, ordered)
    bits = torch.where(bits >= sign_bit, bits - 2 * sign_bit, bits)  # unsigned pattern -> signed storage
    return bits.to(int_dtype).view(dtype)


def ulp_distance(actual: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
    """|ordered(actual) - ordered(expected)| per element as float64 (exact below 2**53), same dtype both sides.

    NaN vs NaN -> 0; NaN vs anything else -> NAN_MISMATCH (+inf); inf vs inf of the same sign -> 0."""
    if actual.dtype != expected.dtype:
        raise TypeError(f"ULP distance needs one dtype; got {actual.dtype} and {expected.dtype}")
    if actual.shape != expected.shape:
        raise ValueError(f"ULP distance needs one shape; got {tuple(actual.shape)} and {tuple(expected.shape)}")
    distance = (ordered_int(actual) - ordered_int(expected)).abs().to(torch.float64)
    nan_a, nan_e = torch.isnan(actual), torch.isnan(expected)
    distance = torch.where(nan_a & nan_e, torch.zeros_like(distance), distance)
    return torch.where(nan_a ^ nan_e, torch.full_like(distance, NAN_MISMATCH), distance)


def round_to_dtype(reference: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """float64 `reference` rounded once, to nearest-even, into `dtype` (fp16/bf16/fp32).

    torch converts float64 -> fp16/bf16 through float32, which rounds twice (1 + 2**-11 + 2**-30 becomes
    1.0 in fp16; correctly rounded it is 1 + 2**-10). The candidate is compared with its two neighbours in
    float64 (the differences are exact: same binade) and the nearest one kept, ties to the even pattern."""
    _bits_of(dtype)
    reference = reference.to(torch.float64)
    candidate = reference.to(dtype)
    if dtype == torch.float32:
        return candidate  # float64 -> float32 is one rounding
    ordered = ordered_int(candidate)
    best, best_err, best_ord = candidate, (candidate.to(torch.float64) - reference).abs(), ordered
    for step in (-1, 1):
        neighbour_ord = ordered + step
        neighbour = from_ordered(neighbour_ord, dtype)
        err = (neighbour.to(torch.float64) - reference).abs()
        closer = (err < best_err) | ((err == best_err) & (neighbour_ord % 2 == 0) & (best_ord % 2 != 0))
        closer &= torch.isfinite(neighbour) & torch.isfinite(candidate)
        best = torch.where(closer, neighbour, best)
        best_err = torch.where(closer, err, best_err)
        best_ord = torch.where(closer, neighbour_ord, best_ord)
    return best


def row_sum_error(output: torch.Tensor, reference: torch.Tensor | None = None) -> torch.Tensor:
    """Per row: sum of the outputs (in float64) minus 1; NaN for rows whose `reference` has a NaN (skipped)."""
    rows = output.reshape(-1, output.shape[-1]) if output.dim() else output.reshape(1, 1)
    error = rows.to(torch.float64).sum(dim=-1) - 1.0
    if reference is not None:
        undefined = torch.isnan(reference.reshape(rows.shape)).any(dim=-1)
        error = torch.where(undefined, torch.full_like(error, math.nan), error)
    return error
