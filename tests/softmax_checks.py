"""Numerical checks for kernel tests: a dtype -> tolerance table and a mismatch message naming the first bad index."""

from __future__ import annotations

from collections.abc import Callable

import torch

from blockscope.kernels import reference_softmax

# rtol covers rounding the fp32 result into the output dtype (half an ulp: fp16 2**-11, bf16 2**-8)
# plus fp32 reduction error; atol covers tiny probabilities.
TOLERANCES: dict[torch.dtype, tuple[float, float]] = {  # dtype -> (rtol, atol)
    torch.float32: (2e-5, 1e-7),
    torch.float16: (1.5e-3, 1e-5),
    torch.bfloat16: (1e-2, 1e-5),
}


def assert_softmax_close(actual: torch.Tensor, x: torch.Tensor, label: str = "") -> None:
    """Compare `actual` with the float64 reference of `x`; NaN must match NaN position for position."""
    expected = reference_softmax(x)
    assert actual.shape == x.shape, f"{label}: shape {tuple(actual.shape)} != {tuple(x.shape)}"
    assert actual.dtype == x.dtype, f"{label}: dtype {actual.dtype} != {x.dtype}"
    rtol, atol = TOLERANCES[x.dtype]
    got = actual.to(torch.float64)  # compared where it lives: no copy of GPU-sized tensors to the host
    assert_within(
        got,
        expected,
        atol + rtol * expected.abs(),
        f"{label}: ",
        "elements",
        rtol,
        atol,
        lambda index: f"input {x[index].item():.8g}",
    )


def assert_within(
    got: torch.Tensor,
    want: torch.Tensor,
    bound: torch.Tensor,
    prefix: str,
    what: str,
    rtol: float,
    atol: float,
    context: Callable[[tuple[int, ...]], str],
) -> None:
    """Every |got - want| <= bound and NaN where `want` has NaN; else AssertionError naming how many `what` differ
    and the first bad index (`context(index)` adds the inputs there)."""
    nan_mismatch = torch.isnan(got) != torch.isnan(want)
    bad = nan_mismatch | (~torch.isnan(want) & ((got - want).abs() > bound))
    if bad.any():
        index = tuple(int(i) for i in bad.nonzero()[0].cpu())
        raise AssertionError(
            f"{prefix}{int(bad.sum())} of {bad.numel()} {what} differ (rtol={rtol}, atol={atol}); "
            f"first at index {index}: got {got[index].item():.8g}, expected {want[index].item():.8g}, "
            f"{context(index)}"
        )


def runnable_variants() -> list[str]:
    """Registered variants that can launch in this process (GPU-only Gluon variants need CUDA, no interpreter)."""
    from blockscope.kernels import VARIANTS

    return [name for name, spec in VARIANTS.items() if spec.runs_here()]


def variant_takes(variant: str, n_rows: int, n_cols: int, dtype: torch.dtype) -> bool:
    """Whether the variant's plan accepts this shape and dtype (staged: N within shared memory, even for 16 bits)."""
    from blockscope.kernels import VARIANTS

    try:
        VARIANTS[variant].plan(n_rows, n_cols, dtype)
    except ValueError:
        return False
    return True
