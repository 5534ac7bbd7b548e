"""`liger`: Liger-Kernel's Triton softmax (single-block kernel for N <= 65536, whole row in registers).

Uses `liger_kernel.ops.softmax.LigerSoftmaxFunction`, Liger's default Triton implementation (the package-level
`liger_kernel.ops` may swap in another implementation per device). Liger sizes BLOCK_SIZE = next_pow2(N) and
refuses BLOCK_SIZE over 65536 (`calculate_settings`), so N > 65536 is unsupported.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

import torch

from .base import Backend, Evidence, triton_kernel_facts

MAX_FUSED_SIZE = 65536  # liger_kernel.ops.utils.calculate_settings


class LigerBackend(Backend):
    name = "liger"
    kind = "Triton (Liger-Kernel)"
    summary = "Liger-Kernel's Triton softmax: one program per row, BLOCK_SIZE = next_pow2(N), num_warps by size"
    package = "liger-kernel"

    def _module(self):
        return importlib.import_module("liger_kernel.ops.softmax")

    def available(self) -> str | None:
        try:
            self._module()
        except Exception as error:
            return f"liger-kernel is not installed or fails to import ({type(error).__name__}: {error})"
        if not torch.cuda.is_available():
            return "liger runs on CUDA GPUs only (no GPU here)"
        return None

    def supports(self, n_rows: int, n_cols: int, dtype: torch.dtype) -> str | None:
        general = super().supports(n_rows, n_cols, dtype)
        if general or n_cols <= MAX_FUSED_SIZE:
            return general
        return (f"N = {n_cols}: Liger's BLOCK_SIZE = next_pow2(N) would be over its limit of {MAX_FUSED_SIZE} "
                "(calculate_settings raises)")

    def prepare(self, x: torch.Tensor) -> Callable[[], torch.Tensor]:
        apply = self._module().LigerSoftmaxFunction.apply
        return lambda: apply(x)  # read x + write y

    def evidence(self, x: torch.Tensor) -> Evidence:
        module = self._module()
        jits = [getattr(module, n) for n in dir(module) if n.endswith("_forward_kernel")]
        return Evidence(kernels=triton_kernel_facts(jits))
