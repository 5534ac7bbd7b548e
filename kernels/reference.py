"""The one torch reference shared by tests and benchmarks."""

from __future__ import annotations

import torch


def reference_softmax(x: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dim computed in float64 on the upcast input (returns float64)."""
    return torch.softmax(x.to(torch.float64), dim=-1)


def torch_softmax(x: torch.Tensor) -> torch.Tensor:
    """The production baseline: torch.softmax in the input dtype."""
    return torch.softmax(x, dim=-1)
