"""Gradient checks for the softmax backward: fp64 reference gradients and a dtype -> tolerance table."""

from __future__ import annotations

import torch

from tests.softmax_checks import assert_within

# |dx - want| <= atol * (1 + max|dy|) + rtol * (|want| + y * max|dy|), max over the row: y's relative error
# (rounding into the dtype, or the forward kernel's, see softmax_checks.TOLERANCES) moves sum(dy * y) by up to
# rtol * max|dy| (sum y = 1), which dx_i sees times y_i; rounding dx adds rtol * |dx_i|; atol is the absolute
# error of tiny y and dx (fp16 subnormals: 3e-8), which dx_i sees times |dy_i - sum(dy * y)| <= 2 max|dy|.
GRAD_TOLERANCES: dict[torch.dtype, tuple[float, float]] = {  # dtype -> (rtol, atol)
    torch.float32: (2e-5, 1e-8),
    torch.float16: (2e-3, 1e-7),
    torch.bfloat16: (1.6e-2, 1e-7),
}


def backward_reference(y: torch.Tensor, dy: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """dx = y * (dy - sum(dy * y)) in float64 from the given y and dy (returns float64)."""
    y64, dy64 = y.to(torch.float64), dy.to(torch.float64)
    return y64 * (dy64 - (y64 * dy64).sum(dim, keepdim=True))


def torch_grad(x: torch.Tensor, dy: torch.Tensor, dim: int = -1) -> tuple[torch.Tensor, torch.Tensor]:
    """(y, dx) of torch.softmax over `dim` in float64 on the upcast x, backpropagating dy (both float64)."""
    x64 = x.detach().to(torch.float64).requires_grad_()
    y64 = torch.softmax(x64, dim)
    (dx64,) = torch.autograd.grad(y64, x64, dy.to(torch.float64))
    return y64.detach(), dx64


def assert_grad_close(
    actual: torch.Tensor,
    expected: torch.Tensor,
    y: torch.Tensor,
    dy: torch.Tensor,
    dtype: torch.dtype,
    label: str = "",
    dim: int = -1,
) -> None:
    """Compare a gradient in `dtype` with its float64 `expected`; NaN must match NaN position for position."""
    assert actual.shape == expected.shape, f"{label}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    assert actual.dtype == dtype, f"{label}: dtype {actual.dtype} != {dtype}"
    rtol, atol = GRAD_TOLERANCES[dtype]
    got, want = actual.to(torch.float64), expected.to(torch.float64)
    dy_max = dy.to(torch.float64).abs().amax(dim, keepdim=True)
    bound = atol * (1 + dy_max) + rtol * (want.abs() + y.to(torch.float64).abs() * dy_max)
    assert_within(
        got,
        want,
        bound,
        f"{label}: ",
        "gradient elements",
        rtol,
        atol,
        lambda index: f"y {y[index].item():.8g}, dy {dy[index].item():.8g}",
    )
