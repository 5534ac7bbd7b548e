"""Autograd for every forward variant: the raw launcher forward, the Triton backward (kernels/backward.py) on the
saved output y. Eager only; under torch.compile kernels.softmax goes through the blockscope::softmax op (ops.py)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.autograd.function import once_differentiable

from .backward import softmax_backward


class SoftmaxFunction(torch.autograd.Function):
    """y = launcher(x, **tunables) over the last dim; dx = y * (dy - sum(dy * y)) by the Triton backward.

    Saves y only (R x N in x's dtype). Double backward is not supported (once_differentiable)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, launcher: Callable[..., torch.Tensor], tunables: dict) -> torch.Tensor:
        y = launcher(x, **tunables)  # grad mode is off here: the launcher's requires-grad check passes
        ctx.save_for_backward(y)
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx, dy: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        (y,) = ctx.saved_tensors
        return softmax_backward(y, dy), None, None
