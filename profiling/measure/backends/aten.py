"""`torch`: eager `torch.softmax` (ATen picks its CUDA kernel by N: the profiler names it); backward:
`torch._softmax_backward_data`, the op eager autograd runs for softmax."""

from __future__ import annotations

from collections.abc import Callable

import torch

from blockscope import kernels
from blockscope.profiling.measure.backends.base import Backend, Evidence


class AtenBackend(Backend):
    name = "torch"
    kind = "ATen (eager)"
    summary = "torch.softmax in eager mode: ATen's hand-written CUDA kernels, chosen by N at run time"

    def prepare(self, x: torch.Tensor) -> Callable[[], torch.Tensor]:
        return lambda: kernels.torch_softmax(x)  # read x + write y (looked up per call: tests replace it)

    has_backward = True

    def backward_call(self, x: torch.Tensor, y: torch.Tensor, dy: torch.Tensor) -> Callable[[], torch.Tensor]:
        return lambda: torch._softmax_backward_data(dy, y, -1, y.dtype)  # the kernel eager autograd runs

    def differentiable(self, x: torch.Tensor) -> Callable[[], torch.Tensor]:
        return lambda: torch.softmax(x, dim=-1)

    def evidence(self, x: torch.Tensor) -> Evidence:
        return Evidence(
            note="ATen's precompiled CUDA kernels carry no Triton metadata; the profiler names the "
            "one that ran (kernel_names)"
        )
