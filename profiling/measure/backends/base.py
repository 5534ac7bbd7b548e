"""What every softmax backend adapter provides (one small module per backend beside this one)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from blockscope.profiling.results import UNAVAILABLE, UNSUPPORTED  # noqa: F401 - the row prefixes, re-exported for the backends

SUPPORTED_DTYPES: tuple[torch.dtype, ...] = (torch.float16, torch.bfloat16, torch.float32)


@dataclass(frozen=True)
class KernelFacts:
    """One concrete GPU kernel a backend ran, as its compiler reported it (Triton metadata); NA fields are None."""

    name: str
    n_regs: int | None = None
    n_spills: int | None = None
    shared_bytes: int | None = None
    num_warps: int | None = None


@dataclass
class Evidence:
    """What a backend can say about the kernels it launched for one input, beyond the profiler's names.

    `kernels`: compiled-kernel facts (Triton-based backends); `source`: generated code (Inductor's Triton module);
    `note`: why facts are missing (e.g. a CuTe DSL kernel has no Triton metadata)."""

    kernels: list[KernelFacts] = field(default_factory=list)
    source: str | None = None
    note: str = ""


class Backend:
    """A softmax over the last dim that Blockscope can time, check and explain.

    Subclasses set `name`, `kind` (compiler / library family), `summary` and `package` (the pip package of an
    optional peer, None when always present) and override the hooks they need."""

    name: str = ""
    kind: str = ""
    summary: str = ""
    package: str | None = None
    max_n: int = 2**31 - 1
    # directions (forward, backward, forward_backward) whose calls must not be captured in a CUDA graph, and why:
    # the sweep times their cuda_graph method as eager calls instead (timing.benchmark(capture=False)).
    capture_unsafe_directions: frozenset[str] = frozenset()
    capture_unsafe_reason: str = ""

    def available(self) -> str | None:
        """None when this backend can run here; otherwise why not (missing package, no GPU, ...)."""
        return None

    def supports(self, n_rows: int, n_cols: int, dtype: torch.dtype) -> str | None:
        """None when this backend runs an (R, N) input of `dtype`; otherwise why not (its documented limits)."""
        if dtype not in SUPPORTED_DTYPES:
            return f"dtype {dtype} is not one of fp16, bf16, fp32"
        if n_cols > self.max_n:
            return f"N = {n_cols} is over {self.name}'s limit of {self.max_n}"
        return None

    def prepare(self, x: torch.Tensor) -> Callable[[], torch.Tensor]:
        """A zero-argument closure computing softmax(x, dim=-1); setup it needs (compiles) happens on its first
        call, so that call's time holds it (the sweep's first-call seconds)."""
        raise NotImplementedError(f"{type(self).__name__} must define prepare()")

    def evidence(self, x: torch.Tensor) -> Evidence:
        """Compile facts of the kernels this backend ran for `x` (call after the closure ran at least once)."""
        return Evidence(note=f"{self.name} reports no compile facts")

    has_backward: bool = False  # True where backward_call and differentiable are defined

    def supports_backward(self, n_rows: int, n_cols: int, dtype: torch.dtype) -> str | None:
        """None when backward_call and forward_backward_call run an (R, N) input of `dtype`; otherwise why not
        (no backward at all, or its limits). The forward's rules apply too (a training step runs both)."""
        if not self.has_backward:
            return f"{self.name} has no softmax backward"
        return self.supports(n_rows, n_cols, dtype)

    def backward_call(self, x: torch.Tensor, y: torch.Tensor, dy: torch.Tensor) -> Callable[[], torch.Tensor]:
        """A zero-argument closure computing dx = y * (dy - sum(dy * y)) over the last dim from a saved forward
        output `y` and output gradient `dy` (x: the forward's input, same shape); reads y, dy and writes dx.
        Setup (compiles) happens on its first call, as for prepare()."""
        raise NotImplementedError(f"{self.name} has no softmax backward")

    def differentiable(self, x: torch.Tensor) -> Callable[[], torch.Tensor]:
        """A zero-argument closure computing softmax(x, dim=-1) recorded by autograd (x: a leaf requiring grad)."""
        raise NotImplementedError(f"{self.name} has no differentiable softmax")

    def forward_backward_call(self, x: torch.Tensor, dy: torch.Tensor) -> Callable[[], torch.Tensor]:
        """A zero-argument closure running one training step of the op on a leaf copy of `x` (built here, outside
        the closure): the differentiable forward, then torch.autograd.grad(y, x, dy); returns dx."""
        leaf = x.detach().requires_grad_()
        forward = self.differentiable(leaf)

        def step() -> torch.Tensor:
            with torch.enable_grad():
                (dx,) = torch.autograd.grad(forward(), leaf, dy)
            return dx

        return step

    def describe(self) -> dict[str, Any]:
        """Name, kind, summary, package and availability as one plain dict (for tables)."""
        return {
            "backend": self.name,
            "kind": self.kind,
            "summary": self.summary,
            "package": self.package or "",
            "available": self.available() or "yes",
        }


def import_failure(module: str, package: str) -> str | None:
    """None when `module` of an optional peer imports; otherwise why not, naming the pip package."""
    import importlib

    try:
        importlib.import_module(module)
    except Exception as error:  # broken installs raise anything, not only ImportError
        return f"{package} is not installed or fails to import ({type(error).__name__}: {error})"
    return None


def compiled_kernels(jit_functions: list[Any]) -> list[Any]:
    """Every CompiledKernel compiled so far from these Triton JITFunctions (their per-device caches).

    Works on Triton 3.6 and 3.7 (`device_caches`: device -> (cache dict key -> CompiledKernel, ...)); a Triton
    without that attribute gives none."""
    kernels: list[Any] = []
    for fn in jit_functions:
        for entry in (getattr(fn, "device_caches", None) or {}).values():
            cache = entry[0] if isinstance(entry, tuple) else entry
            kernels.extend(getattr(cache, "values", lambda: [])())
    return kernels


def compiled_kernel_facts(compiled: Any, name: str | None = None) -> KernelFacts:
    """KernelFacts of one Triton CompiledKernel (or an object with n_regs / n_spills / shared / num_warps)."""
    metadata = getattr(compiled, "metadata", None)

    def pick(*names: str) -> int | None:
        for source in (compiled, metadata):
            for attr in names:
                value = getattr(source, attr, None)
                if isinstance(value, int) and not isinstance(value, bool):
                    return value
        return None

    if getattr(compiled, "n_regs", None) is None and hasattr(compiled, "_init_handles"):
        try:
            compiled._init_handles()  # loads the cubin: fills n_regs / n_spills (no launch)
        except Exception:
            pass
    return KernelFacts(
        name=name or str(getattr(compiled, "name", None) or getattr(metadata, "name", "?")),
        n_regs=pick("n_regs"),
        n_spills=pick("n_spills"),
        shared_bytes=pick("shared"),
        num_warps=pick("num_warps"),
    )
