"""`torch`: eager `torch.softmax` (ATen picks its CUDA kernel by N: the profiler names it)."""

from __future__ import annotations

from collections.abc import Callable

import torch

import kernels

from .base import Backend, Evidence


class AtenBackend(Backend):
    name = "torch"
    kind = "ATen (eager)"
    summary = "torch.softmax in eager mode: ATen's hand-written CUDA kernels, chosen by N at run time"

    def prepare(self, x: torch.Tensor) -> Callable[[], torch.Tensor]:
        return lambda: kernels.torch_softmax(x)  # read x + write y (looked up per call: tests replace it)

    def evidence(self, x: torch.Tensor) -> Evidence:
        return Evidence(note="ATen's precompiled CUDA kernels carry no Triton metadata; the profiler names the "
                             "one that ran (kernel_names)")
