"""`inductor`: `torch.compile` of softmax; Inductor generates (and autotunes) its own Triton kernel per shape.

One compile per (shape, dtype, strides) (`dynamic=False`): the closure's first call holds it, so the sweep's
first-call seconds are the compile cost. The generated module (Triton source included) is captured during
that compile, and its kernels' registers / spills / shared memory come from Inductor's launchers. Backward: a second
compiled function of torch._softmax_backward_data (Inductor fuses its decomposition into one kernel); a training
step: the compiled softmax on a leaf that requires grad (AOT autograd compiles forward and backward graphs).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import torch

from blockscope.profiling.measure.backends.base import Backend, Evidence, KernelFacts, compiled_kernel_facts

_ABSENT = object()  # marks a class attribute that did not exist
RECOMPILE_LIMIT = 4096  # one compiled graph per swept shape; dynamo's default (8) would fall back to eager
_KERNEL_NAME = re.compile(r"async_compile\.triton\(\s*['\"](\w+)['\"]")


def _softmax_last(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


def _softmax_backward_last(y: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    return torch._softmax_backward_data(dy, y, -1, y.dtype)  # Inductor decomposes and fuses it into one kernel


def _shape_key(x: torch.Tensor) -> tuple:
    return (tuple(x.shape), tuple(x.stride()), x.dtype, str(x.device))


class InductorBackend(Backend):
    name = "inductor"
    kind = "Inductor (generated Triton)"
    summary = "torch.compile(torch.softmax): Inductor's generated Triton kernel, compiled once per shape"

    def __init__(self) -> None:
        self._compiled: Callable[[torch.Tensor], torch.Tensor] | None = None
        self._compiled_backward: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None
        self._sources: dict[tuple, str] = {}  # shape key -> generated output module source
        self.compile_seconds: dict[tuple, float] = {}

    def available(self) -> str | None:
        if not hasattr(torch, "compile"):
            return f"torch {torch.__version__} has no torch.compile"
        try:
            import importlib

            dynamo = importlib.import_module("torch._dynamo")
            importlib.import_module("torch._inductor")
        except Exception as error:  # broken installs raise anything
            return f"torch.compile cannot be imported ({type(error).__name__}: {error})"
        if not dynamo.is_dynamo_supported():
            return "torch.compile is not supported on this Python"
        if torch.cuda.is_available():
            from torch.utils._triton import has_triton

            if not has_triton():
                return "Inductor needs Triton for CUDA kernels and none is usable"
        return None

    @staticmethod
    def _raise_recompile_limit() -> None:
        import torch._dynamo.config as dynamo_config

        for knob in ("recompile_limit", "cache_size_limit"):  # the name changed across torch releases
            if hasattr(dynamo_config, knob):
                setattr(dynamo_config, knob, max(getattr(dynamo_config, knob), RECOMPILE_LIMIT))

    def _function(self) -> Callable[[torch.Tensor], torch.Tensor]:
        if self._compiled is None:
            self._raise_recompile_limit()
            self._compiled = torch.compile(_softmax_last, dynamic=False, fullgraph=True)
        return self._compiled

    has_backward = True

    def backward_call(self, x: torch.Tensor, y: torch.Tensor, dy: torch.Tensor) -> Callable[[], torch.Tensor]:
        """torch.compile of torch._softmax_backward_data(dy, y): Inductor's generated kernel for the backward alone
        (compiled on the first call)."""
        if self._compiled_backward is None:
            self._raise_recompile_limit()
            self._compiled_backward = torch.compile(_softmax_backward_last, dynamic=False, fullgraph=True)
        compiled = self._compiled_backward
        return lambda: compiled(y, dy)  # read y, dy + write dx

    def differentiable(self, x: torch.Tensor) -> Callable[[], torch.Tensor]:
        """The compiled softmax on a leaf requiring grad: AOT autograd compiles its forward and backward graphs."""
        compiled = self._function()
        return lambda: compiled(x)

    def prepare(self, x: torch.Tensor) -> Callable[[], torch.Tensor]:
        compiled, key = self._function(), _shape_key(x)
        state = {"first": True}

        def run() -> torch.Tensor:
            if not state["first"]:
                return compiled(x)  # read x + write y (one generated kernel)
            state["first"] = False
            started = time.perf_counter()
            with _capture_output_code() as codes:
                y = compiled(x)
            self.compile_seconds.setdefault(key, time.perf_counter() - started)
            if codes:
                self._sources[key] = codes[-1]
            return y

        return run

    def source(self, x: torch.Tensor) -> str | None:
        """The generated output module (Python wrapper + Triton kernel source) for `x`'s shape, once compiled."""
        return self._sources.get(_shape_key(x))

    def evidence(self, x: torch.Tensor) -> Evidence:
        source = self.source(x)
        if source is None:
            return Evidence(
                note="no generated code captured (the shape was compiled earlier in this process, "
                "or Inductor fell back to ATen)"
            )
        names = _KERNEL_NAME.findall(source)
        facts = _launcher_facts(names)
        note = (
            ""
            if facts
            else (
                "Inductor generated no Triton kernel (it called ATen)"
                if not names
                else "Inductor's launchers were not found; kernel facts unavailable in this torch"
            )
        )
        return Evidence(kernels=facts or [KernelFacts(name=n) for n in names], source=source, note=note)


class _capture_output_code:
    """Context manager collecting the output code Inductor writes while compiling (GraphLowering.save_output_code,
    the hook torch._inductor.utils.run_and_get_code uses), without resetting dynamo's caches."""

    def __enter__(self) -> list[str]:
        self.codes: list[str] = []
        try:
            from torch._inductor.graph import GraphLowering
        except Exception:
            self._owner = None
            return self.codes
        # torch 2.11 declares `save_output_code = None` on the class and tests it before calling; newer torch
        # defines a staticmethod: put back exactly what was there (or remove what was not)
        self._owner, self._original = GraphLowering, GraphLowering.__dict__.get("save_output_code", _ABSENT)
        GraphLowering.save_output_code = staticmethod(self.codes.append)
        return self.codes

    def __exit__(self, *exc: Any) -> None:
        if self._owner is None:
            return
        if self._original is _ABSENT:
            delattr(self._owner, "save_output_code")
        else:
            self._owner.save_output_code = self._original


def _launcher_facts(names: list[str]) -> list[KernelFacts]:
    """Registers / spills / shared memory of Inductor's compiled kernels named `names` (its CachingAutotuner
    launchers, found in the modules PyCodeCache loaded); [] when this torch keeps them elsewhere."""
    try:
        from torch._inductor.codecache import PyCodeCache
    except Exception:
        return []
    modules = list(getattr(PyCodeCache, "modules", []) or [])
    modules += list((getattr(PyCodeCache, "modules_no_attr", {}) or {}).values())
    facts: dict[str, KernelFacts] = {}
    for module in reversed(modules):
        for name in names:
            if name in facts:
                continue
            autotuner = getattr(module, name, None)
            launchers = getattr(autotuner, "launchers", None) or []
            if not launchers:
                continue
            launcher = launchers[0]
            warps = getattr(getattr(launcher, "config", None), "num_warps", None)
            base = compiled_kernel_facts(launcher, name=name)
            facts[name] = KernelFacts(
                name=name,
                n_regs=base.n_regs,
                n_spills=base.n_spills,
                shared_bytes=base.shared_bytes,
                num_warps=warps or base.num_warps,
            )
    return [facts[n] for n in names if n in facts]
