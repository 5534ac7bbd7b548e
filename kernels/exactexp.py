"""exp(x - m) to within one fp32 ULP, for the fp32 paths of every Triton and Gluon softmax kernel.

`tl.exp(x - m)` on NVIDIA GPUs is `mul.f32` by log2(e) and `ex2.approx.f32`: the rounding of x - m (up to half an
ULP of |x - m|) and of the product (half an ULP of |x - m| * 1.44) both become relative errors of the result, so at
|x - m| ~ 200 (logits scaled x30) an output is off by up to ~110 ULP. torch.softmax rounds x - m too (its 64 ULP).

`exp_diff(x, m)` removes both: x - m is split into its rounded value t and exact error e (Knuth's TwoSum, adds
only); Cody-Waite reduction t = n ln2 + r with n = round(t log2 e) and ln2 in two parts (ln2_hi has 16 significant
bits, so n ln2_hi is exact for |n| < 2**8 and t - n ln2_hi is exact); e joins r; exp(r) on |r| <= 0.35 is a degree-6
polynomial (least-squares fit, truncation under 0.03 ULP, 0.67 ULP evaluated in fp32) and 2**n is applied as
a multiply by 2**(n + 64) (built from its exponent bits), then by 2**-64, so subnormal results round once. About 25
operations per element (sm_90 PTX: adds, FMAs, 2 integer ops, a compare and a select; no MUFU), where tl.exp is a
multiply and a MUFU ex2. No FMA is needed for exactness (the CPU interpreter has none; a GPU's
contraction of a multiply-add only removes a rounding), so the interpreter and a GPU compute the same function up to
those contractions. Results below 2**-150 (t < -105) are 0; x = -inf gives 0; NaN stays NaN.

`normalize(numerators, total)` is numerators / total from one correctly rounded reciprocal per row (`div_rn`;
Triton's `1.0 / total` is the approximate `div.full.f32`) and an FMA residual correction per element (3 operations,
where IEEE division per element is a slow-path subroutine). The CPU interpreter's `tl.fma` is an unfused a*b+c, so
there the correction is approximate (its numbers are no worse than the uncorrected product's; a GPU's are those of
a correctly rounded division except in rare Markstein corner cases).

Both exist as @triton.jit and @gluon.jit functions of one source each; 16-bit paths keep their own exp forms.
"""

from __future__ import annotations

import triton
import triton.language as tl
from triton.experimental import gluon

LOG2E = tl.constexpr(1.4426950408889634)
LN2_HI = tl.constexpr(0.693145751953125)  # 0x3F317200: 16 significant bits, n * LN2_HI exact for |n| < 256
LN2_LO = tl.constexpr(1.428606765330187e-06)  # ln 2 - LN2_HI
ROUNDER = tl.constexpr(12582912.0)  # 1.5 * 2**23: v + ROUNDER holds round(v) in its low mantissa bits, |v| < 2**22
ROUNDER_BITS = tl.constexpr(0x4B400000 - 191)  # k's bits minus this: round(v) + 64 + 127, 2**(n + 64)'s exponent
TWO_M64 = tl.constexpr(5.421010862427522e-20)  # 2**-64
ZERO_BELOW = tl.constexpr(-105.0)  # exp(-105) < 2**-151: rounds to 0 in fp32
# exp(r) = 1 + r + r^2 (C2 + C3 r + C4 r^2 + C5 r^3 + C6 r^4) on |r| <= 0.3467 (fp32 coefficients)
C2 = tl.constexpr(0.49999988079071045)
C3 = tl.constexpr(0.16666518151760101)
C4 = tl.constexpr(0.041669540107250214)
C5 = tl.constexpr(0.008368965238332748)
C6 = tl.constexpr(0.0013751240028068423)
# Python mirrors of the constants (tests and the offline checks read these)
POLY = (0.49999988079071045, 0.16666518151760101, 0.041669540107250214, 0.008368965238332748, 0.0013751240028068423)


def _exp_diff(x, m):
    """exp(x - m) for fp32 tensors x and m (m broadcast against x; x <= m, as a row maximum), within ~1 ULP."""
    t = x - m
    z = t - x  # TwoSum: e is the exact error of t = fl(x - m)
    e = (x - (t - z)) + (-m - z)
    k = t * LOG2E + ROUNDER
    n_float = k - ROUNDER
    biased = k.to(tl.int32, bitcast=True) - ROUNDER_BITS  # n + 64 + 127
    r = t - n_float * LN2_HI  # exact
    r = (r - n_float * LN2_LO) + e
    q = C6 * r + C5
    q = q * r + C4
    q = q * r + C3
    q = q * r + C2
    p = 1.0 + r * (1.0 + r * q)
    # p * 2**(n + 64) (a normal number: n >= -152 here), then * 2**-64 rounds once; NaN stays NaN
    y = p * (biased << 23).to(tl.float32, bitcast=True) * TWO_M64
    return tl.where(t < ZERO_BELOW, 0.0, y)


def _normalize(numerators, total):
    """numerators / total (total broadcast, one correctly rounded reciprocal per row): the product by the
    reciprocal, corrected once by its FMA residual (Markstein), so on a GPU each quotient is rounded once."""
    inverse = tl.math.div_rn(1.0, total)
    quotient = numerators * inverse
    residual = tl.fma(-quotient, total, numerators)
    return tl.fma(residual, inverse, quotient)


exp_diff = triton.jit(_exp_diff)
normalize = triton.jit(_normalize)
gluon_exp_diff = gluon.jit(_exp_diff)
gluon_normalize = gluon.jit(_normalize)


FAST_EXP_TUNABLE = (
    "fp32 only: 1 takes tl.exp / gl.exp as before issue 37 (ex2.approx: up to ~110 ULP at |x - max| ~ 200, fewer "
    "instructions), 0 the exp and division within an ULP (kernels/exactexp.py); default 0; 16-bit paths ignore it"
)


def fast_exp_choice(variant: str, tunables: dict) -> int:
    """The `fast_exp` tunable (0 or 1, default 0); ValueError naming the allowed values."""
    value = tunables.get("fast_exp", 0)
    if isinstance(value, bool) or value not in (0, 1):
        raise ValueError(f"{variant}: fast_exp={value!r} is not allowed; allowed: 0, 1")
    return int(value)


def exact_constexpr(dtype, fast_exp: int) -> int:
    """EXACT of the Triton kernels: 1 for fp32 rows without fast_exp (exp_diff and normalize), else 0."""
    import torch

    return int(dtype == torch.float32 and not fast_exp)


def fast_exp_tunables(fast_exp: int) -> dict[str, int]:
    """What a plan records of fast_exp: nothing at the default, {'fast_exp': 1} when set."""
    return {"fast_exp": 1} if fast_exp else {}
