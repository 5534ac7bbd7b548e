"""Every registered Blockscope variant (kernels.VARIANTS, `auto` included) as a backend."""

from __future__ import annotations

from collections.abc import Callable

import torch

import kernels

from .base import Backend, Evidence, triton_kernel_facts


class BlockscopeBackend(Backend):
    kind = "Triton (Blockscope)"

    def __init__(self, variant: str, **tunables: int) -> None:
        spec = kernels.get_variant(variant)
        self.name, self.summary, self.max_n = spec.name, spec.summary, spec.max_n
        self.variant, self.tunables = spec, dict(tunables)

    def supports(self, n_rows: int, n_cols: int, dtype: torch.dtype) -> str | None:
        if dtype not in self.variant.dtypes:
            return f"dtype {dtype} is not one of {', '.join(map(str, self.variant.dtypes))}"
        return super().supports(n_rows, n_cols, dtype)

    def prepare(self, x: torch.Tensor) -> Callable[[], torch.Tensor]:
        launcher, tunables = self.variant.launcher, self.tunables
        return lambda: launcher(x, **tunables)

    def evidence(self, x: torch.Tensor) -> Evidence:
        if self.variant.kernel is None:
            return Evidence(note="auto runs the variant its plan names; see that variant's compile facts")
        return Evidence(kernels=triton_kernel_facts([self.variant.kernel]))
