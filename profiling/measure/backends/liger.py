"""`liger`: Liger-Kernel's Triton softmax (single-block kernel for N <= 65536, whole row in registers).

Uses `liger_kernel.ops.softmax.LigerSoftmaxFunction`, Liger's default Triton implementation (the package-level
`liger_kernel.ops` may swap in another implementation per device). Liger sizes BLOCK_SIZE = next_pow2(N) and
refuses BLOCK_SIZE over 65536 (`calculate_settings`), so N > 65536 is unsupported. Backward: its `_softmax_backward`
launcher (what `LigerSoftmaxFunction.backward` calls) with the settings its forward saves; a training step:
`LigerSoftmaxFunction.apply` under autograd.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

import torch

from blockscope.profiling.measure.backends.base import (
    Backend,
    Evidence,
    KernelFacts,
    compiled_kernel_facts,
    compiled_kernels,
    import_failure,
)
from blockscope.profiling.results import PEER_PACKAGES

MAX_FUSED_SIZE = 65536  # liger_kernel.ops.utils.calculate_settings


class LigerBackend(Backend):
    name = "liger"
    kind = "Triton (Liger-Kernel)"
    summary = "Liger-Kernel's Triton softmax: one program per row, BLOCK_SIZE = next_pow2(N), num_warps by size"
    package = PEER_PACKAGES["liger"]

    def _module(self):
        return importlib.import_module("liger_kernel.ops.softmax")

    def available(self) -> str | None:
        missing = import_failure("liger_kernel.ops.softmax", self.package)
        if missing:
            return missing
        if not torch.cuda.is_available():
            return "liger runs on CUDA GPUs only (no GPU here)"
        return None

    def supports(self, n_rows: int, n_cols: int, dtype: torch.dtype) -> str | None:
        general = super().supports(n_rows, n_cols, dtype)
        if general or n_cols <= MAX_FUSED_SIZE:
            return general
        return (
            f"N = {n_cols}: Liger's BLOCK_SIZE = next_pow2(N) would be over its limit of {MAX_FUSED_SIZE} "
            "(calculate_settings raises)"
        )

    def __init__(self) -> None:
        self._facts: dict[tuple, list[KernelFacts]] = {}  # (dtype, BLOCK_SIZE, num_warps, N % 16 == 0) -> kernels

    def _key(self, x: torch.Tensor) -> tuple:
        """What picks Liger's compiled kernel: dtype, its BLOCK_SIZE and num_warps for N, and N's 16-alignment
        (Triton specializes the row stride on it)."""
        n_cols = x.shape[-1]
        settings = importlib.import_module("liger_kernel.ops.utils").calculate_settings
        return (x.dtype, *settings(n_cols), n_cols % 16 == 0)

    def _jits(self) -> list:
        module = self._module()
        return [getattr(module, n) for n in dir(module) if n.endswith("_forward_kernel")]

    def prepare(self, x: torch.Tensor) -> Callable[[], torch.Tensor]:
        apply, key = self._module().LigerSoftmaxFunction.apply, self._key(x)
        state = {"first": True}

        def run() -> torch.Tensor:
            if not state["first"]:
                return apply(x)  # read x + write y
            state["first"] = False
            before = {id(k) for k in compiled_kernels(self._jits())}
            y = apply(x)
            new = [k for k in compiled_kernels(self._jits()) if id(k) not in before]
            if new:  # the kernels this shape compiled; a shape sharing them finds them under its key
                self._facts[key] = [compiled_kernel_facts(k) for k in new]
            return y

        return run

    has_backward = True

    def supports_backward(self, n_rows: int, n_cols: int, dtype: torch.dtype) -> str | None:
        reason = super().supports_backward(n_rows, n_cols, dtype)
        if reason is None and _backward_arity(self._module()) is None:
            reason = "liger_kernel.ops.softmax._softmax_backward is missing or has an unknown signature in this version"
        return reason

    def backward_call(self, x: torch.Tensor, y: torch.Tensor, dy: torch.Tensor) -> Callable[[], torch.Tensor]:
        """Liger's backward launcher (`_softmax_backward`, what LigerSoftmaxFunction.backward calls) with the block
        settings its forward would save for this N."""
        module = self._module()
        settings = importlib.import_module("liger_kernel.ops.utils").calculate_settings
        n_cols = y.shape[-1]
        block, warps = settings(min(n_cols, MAX_FUSED_SIZE))
        args = (block, warps, n_cols > MAX_FUSED_SIZE)[: _backward_arity(module) - 2]
        backward = module._softmax_backward
        return lambda: backward(dy, y, *args)  # read y, dy + write dx

    def differentiable(self, x: torch.Tensor) -> Callable[[], torch.Tensor]:
        apply = self._module().LigerSoftmaxFunction.apply
        return lambda: apply(x)

    def evidence(self, x: torch.Tensor) -> Evidence:
        facts = self._facts.get(self._key(x))
        if facts is None:
            return Evidence(note="Liger compiled this shape's kernel before Blockscope watched it (no facts)")
        return Evidence(kernels=facts)


def _backward_arity(module) -> int | None:
    """Positional parameters of Liger's `_softmax_backward`: 4 (dy, y, BLOCK_SIZE, num_warps) or 5 (+ the
    multi-block flag of releases with a looped kernel); None when it is missing or takes something else."""
    import inspect

    function = getattr(module, "_softmax_backward", None)
    try:
        count = len(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return None
    return count if count in (4, 5) else None
