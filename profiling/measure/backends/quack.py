"""`quack`: Quack's CuTe-DSL softmax (`quack.softmax.softmax_fwd`): rows split over a CTA cluster for wide N,
partial max/sum exchanged in distributed shared memory; several rows per CTA for small N.

Support rules (measured on the H200, Quack 0.6.5): rows must be 16-byte aligned (N % 8 == 0 for fp16/bf16,
N % 4 == 0 for fp32); a row must fit in the shared memory of one cluster (at most 16 CTAs of 227 KB on
sm_90: fp32 N = 1048576 fails). Its kernels carry no Triton metadata: the profiler names them. Backward:
`quack.softmax.softmax_bwd(dy, y)` (y and dy staged in shared memory: half the forward's widest row, an estimate
from its source, not measured); a training step: `quack.softmax.softmax`, its autograd function.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

import torch

from blockscope.profiling.measure.backends.base import Backend, Evidence, import_failure
from blockscope.profiling.results import PEER_PACKAGES

MAX_CLUSTER_CTAS = 16  # sm_90 non-portable cluster size
SHARED_BYTES_PER_CTA = 227 * 1024  # sm_90 opt-in shared memory per block


class QuackBackend(Backend):
    name = "quack"
    kind = "CuTe DSL (Quack)"
    summary = "Quack's CuTe-DSL softmax: cluster-split rows, partials in distributed shared memory"
    package = PEER_PACKAGES["quack"]
    capture_unsafe_directions = frozenset({"backward", "forward_backward"})
    capture_unsafe_reason = (
        "quack's softmax_bwd under CUDA-graph capture raises cudaErrorStreamCaptureImplicit and leaves the process's "
        "CUDA context unusable (Quack 0.6.5, H200)"
    )

    def _module(self):
        return importlib.import_module("quack.softmax")

    def available(self) -> str | None:
        if not torch.cuda.is_available():
            return "quack runs on CUDA GPUs only (no GPU here)"
        missing = import_failure("quack.softmax", self.package)
        if missing:
            return missing
        major, _ = torch.cuda.get_device_capability()
        if major < 8:
            return f"quack needs sm_80 or newer; this GPU is sm_{major}x"
        return None

    def supports(self, n_rows: int, n_cols: int, dtype: torch.dtype) -> str | None:
        general = super().supports(n_rows, n_cols, dtype)
        if general:
            return general
        size = torch.empty((), dtype=dtype).element_size()
        per_vector = 16 // size
        if n_cols % per_vector:
            return f"N = {n_cols} is not a multiple of {per_vector} (Quack needs 16-byte aligned rows)"
        if n_cols * size > MAX_CLUSTER_CTAS * SHARED_BYTES_PER_CTA:
            return (
                f"a row of N = {n_cols} ({n_cols * size // 1024} KB) exceeds the shared memory of one cluster "
                f"({MAX_CLUSTER_CTAS} CTAs x {SHARED_BYTES_PER_CTA // 1024} KB)"
            )
        return None

    def prepare(self, x: torch.Tensor) -> Callable[[], torch.Tensor]:
        forward = self._module().softmax_fwd
        rows = x.reshape(-1, x.shape[-1])  # Quack takes 2-D inputs
        return lambda: forward(rows)  # read x + write y

    has_backward = True

    def supports_backward(self, n_rows: int, n_cols: int, dtype: torch.dtype) -> str | None:
        reason = super().supports_backward(n_rows, n_cols, dtype)
        if reason:
            return reason
        module = self._module()
        missing = [name for name in ("softmax_bwd", "softmax") if not callable(getattr(module, name, None))]
        if missing:
            return f"quack.softmax has no {' / '.join(missing)} in this version (no backward to time)"
        size = torch.empty((), dtype=dtype).element_size()
        if 2 * n_cols * size > MAX_CLUSTER_CTAS * SHARED_BYTES_PER_CTA:  # the backward stages y and dy
            return (
                f"a row of N = {n_cols} needs {2 * n_cols * size // 1024} KB of y and dy in shared memory, over "
                f"one cluster's {MAX_CLUSTER_CTAS} CTAs x {SHARED_BYTES_PER_CTA // 1024} KB (backward)"
            )
        return None

    def backward_call(self, x: torch.Tensor, y: torch.Tensor, dy: torch.Tensor) -> Callable[[], torch.Tensor]:
        backward = self._module().softmax_bwd
        y_rows, dy_rows = y.reshape(-1, y.shape[-1]), dy.reshape(-1, dy.shape[-1])  # Quack takes 2-D inputs
        return lambda: backward(dy_rows, y_rows)  # read y, dy + write dx

    def differentiable(self, x: torch.Tensor) -> Callable[[], torch.Tensor]:
        softmax, rows = self._module().softmax, x.reshape(-1, x.shape[-1])  # autograd: softmax_fwd, softmax_bwd
        return lambda: softmax(rows)

    def evidence(self, x: torch.Tensor) -> Evidence:
        return Evidence(
            note="CuTe DSL kernels carry no Triton metadata; the profiler names them and Nsight Compute "
            "reports their registers and cluster shape"
        )
