"""Every registered Blockscope variant (kernels.VARIANTS, `auto` included) as a backend; backward: the Triton backward
(kernels/backward.py) that kernels.softmax's autograd runs for every variant."""

from __future__ import annotations

from collections.abc import Callable

import torch

from blockscope import kernels
from blockscope.profiling.measure.backends.base import Backend, Evidence, KernelFacts


class BlockscopeBackend(Backend):
    kind = "Triton (Blockscope)"

    def __init__(self, variant: str, **tunables: int) -> None:
        spec = kernels.get_variant(variant)
        self.name, self.summary, self.max_n = spec.name, spec.summary, spec.max_n
        self.variant, self.tunables = spec, dict(tunables)

    def supports(self, n_rows: int, n_cols: int, dtype: torch.dtype) -> str | None:
        """The variant's own rules, as a peer's: its dtypes, its per-dtype limit and its shape rule (the staged
        variants: whole 4-byte words), then the base checks."""
        spec = self.variant
        if dtype not in spec.dtypes:
            return f"dtype {dtype} is not one of {', '.join(map(str, spec.dtypes))}"
        if n_cols > spec.limit(dtype):
            return f"N = {n_cols} is over {spec.name}'s limit of {spec.limit(dtype)} in {dtype}"
        if spec.shape_rule is not None and (reason := spec.shape_rule(n_cols, dtype)):
            return reason
        return super().supports(n_rows, n_cols, dtype)

    def prepare(self, x: torch.Tensor) -> Callable[[], torch.Tensor]:
        launcher, tunables = self.variant.launcher, self.tunables
        return lambda: launcher(x, **tunables)

    has_backward = True

    def supports_backward(self, n_rows: int, n_cols: int, dtype: torch.dtype) -> str | None:
        from blockscope.kernels import backward

        reason = super().supports_backward(n_rows, n_cols, dtype)
        if reason is None and n_cols > backward.MAX_N:
            reason = f"N = {n_cols} is over the Triton backward's limit of {backward.MAX_N}"
        return reason

    def backward_call(self, x: torch.Tensor, y: torch.Tensor, dy: torch.Tensor) -> Callable[[], torch.Tensor]:
        """blockscope.kernels.softmax_backward(y, dy): every variant's autograd runs this one Triton backward (the path
        kernels.choose_backward picks); looked up per call, as tests replace it."""
        return lambda: kernels.softmax_backward(y, dy)

    def differentiable(self, x: torch.Tensor) -> Callable[[], torch.Tensor]:
        name, tunables = self.name, self.tunables
        return lambda: kernels.softmax(x, variant=name, **tunables)  # SoftmaxFunction: launcher + Triton backward

    def evidence(self, x: torch.Tensor) -> Evidence:
        """The compile facts of this shape's kernel through profiling.inspect.compiled (live on a GPU, else an offline
        sm_90 compile): the same source as the sweep's compile columns. 'auto' reports the variant it picks."""
        from blockscope.profiling.inspect.compiled import inspect

        rows = x.reshape(-1, x.shape[-1])
        try:
            info = inspect(self.name, rows.shape[1], x.dtype, n_rows=rows.shape[0], **self.tunables)
        except ValueError as error:  # auto routes this shape to torch.softmax; tunables outside the variant's range
            return Evidence(note=str(error))
        return Evidence(
            kernels=[
                KernelFacts(
                    name=info.kernel_name or info.variant,
                    n_regs=info.n_regs,
                    n_spills=info.spill_store_bytes,
                    shared_bytes=info.shared_bytes,
                    num_warps=info.num_warps,
                )
            ]
        )
