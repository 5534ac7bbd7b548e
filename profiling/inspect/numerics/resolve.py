"""Softmax callables by name: 'torch', the kernels.VARIANTS, the exp probes, and peer backends when installed."""

from __future__ import annotations

from collections.abc import Callable

import torch

TORCH = "torch"

Softmax = Callable[[torch.Tensor], torch.Tensor]


def allowed_names() -> tuple[str, ...]:
    """Every name `softmax_callable` resolves: the backends (torch, peers, every variant) and the exp probes."""
    from blockscope.profiling.inspect.numerics.probe import PROBES
    from blockscope.profiling.measure.backends import backend_names

    return (*backend_names(), *PROBES)


def _backend_callable(name: str, backend: object) -> Softmax:
    reason = backend.available()
    if reason:
        raise ValueError(f"backend {name!r} is unavailable here: {reason}")

    def run(x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, x.shape[-1])
        why = backend.supports(rows.shape[0], rows.shape[1], x.dtype)
        if why:
            raise ValueError(f"{name} does not support [{rows.shape[0]}, {rows.shape[1]}] {x.dtype}: {why}")
        return backend.prepare(x)()

    return run


def softmax_callable(name: str) -> Softmax:
    """x -> softmax(x) over the last dim for `name`; ValueError for unknown or unavailable names.

    'probe_exp' / 'probe_exp2' are the numerics probe kernel; every other name is a profiling.measure.backends backend
    ('torch', 'inductor', 'liger', 'quack', a kernels.VARIANTS name): its `.available()` reason raises here,
    its `.supports()` reason per input at call time."""
    from blockscope.profiling.inspect.numerics.probe import PROBES, probe_softmax

    if name in PROBES:
        mode = PROBES[name]
        return lambda x: probe_softmax(x, mode)
    from blockscope.profiling.measure.backends import get_backend

    try:
        backend = get_backend(name)
    except ValueError:
        raise ValueError(f"unknown softmax {name!r}; allowed: {', '.join(allowed_names())}") from None
    return _backend_callable(name, backend)


def max_n(name: str) -> int:
    """Widest row `name` takes: a variant's or the probe's limit; torch and peer backends: no limit known here."""
    from blockscope import kernels
    from blockscope.profiling.inspect.numerics.probe import MAX_N as PROBE_MAX_N
    from blockscope.profiling.inspect.numerics.probe import PROBES

    if name in kernels.VARIANTS:
        return kernels.get_variant(name).max_n
    if name in PROBES:
        return PROBE_MAX_N
    return 2**31 - 1
