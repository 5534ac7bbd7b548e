"""Variant registry: name -> launcher, kernel, limits and tunables."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from . import auto, multirow, online, persistent, splitrow, teaching
from ._common import SUPPORTED_DTYPES
from .plan import LaunchPlan


@dataclass(frozen=True)
class Variant:
    """One registered Triton softmax variant."""

    name: str
    summary: str
    launcher: Callable[..., torch.Tensor]
    kernel: Any  # triton JITFunction (InterpretedFunction under TRITON_INTERPRET=1); None for 'auto'
    max_n: int
    tunables: Mapping[str, str]
    plan: Callable[..., LaunchPlan]
    signature: Callable[[torch.dtype], dict[str, str]]
    dtypes: tuple[torch.dtype, ...] = SUPPORTED_DTYPES

    @property
    def kernel_function(self) -> Callable:
        """The undecorated Python function of the kernel (to rebuild a JITFunction for offline compiles).

        'auto' has none: compile analysis follows its plan's `variant` to the variant that runs."""
        if self.kernel is None:
            raise ValueError(f"{self.name} has no kernel of its own; use the variant its plan names")
        return self.kernel.fn


VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant("teaching", "the seed kernel: one program per row, BLOCK_SIZE = next_pow2(N)",
                teaching.softmax_teaching, teaching.row_softmax_kernel, teaching.MAX_N, teaching.TUNABLES,
                teaching.plan, teaching.signature),
        Variant("multirow", "several rows per program ([ROWS, BLOCK_SIZE] tile) for small N",
                multirow.softmax_multirow, multirow.row_softmax_multirow_kernel, multirow.MAX_N, multirow.TUNABLES,
                multirow.plan, multirow.signature),
        Variant("online", "looped online softmax (running max, rescaled sum) for any N",
                online.softmax_online, online.row_softmax_online_kernel, online.MAX_N, online.TUNABLES,
                online.plan, online.signature),
        Variant("persistent", "SM count x blocks/SM programs, each looping over rows",
                persistent.softmax_persistent, persistent.row_softmax_persistent_kernel, persistent.MAX_N,
                persistent.TUNABLES, persistent.plan, persistent.signature),
        Variant("splitrow", "CHUNKS cooperating programs per row, each chunk kept in registers (x read once)",
                splitrow.softmax_splitrow, splitrow.row_softmax_splitrow_kernel, splitrow.MAX_N, splitrow.TUNABLES,
                splitrow.plan, splitrow.signature),
        Variant("auto", "picks variant and tunables per GPU, dtype and shape from a tuning table",
                auto.softmax_auto, None, auto.MAX_N, auto.TUNABLES, auto.plan, auto.signature),
    )
}


def get_variant(name: str) -> Variant:
    """Look a variant up by name; ValueError names the registered ones."""
    try:
        return VARIANTS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown variant {name!r}; allowed: {', '.join(VARIANTS)}") from None


def softmax(x: torch.Tensor, variant: str = "teaching", **tunables: int) -> torch.Tensor:
    """Softmax over the last dim of `x` with a registered Triton variant and its tunables."""
    return get_variant(variant).launcher(x, **tunables)
