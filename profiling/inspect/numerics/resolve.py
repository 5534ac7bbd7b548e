"""Softmax callables by name: 'torch', the kernels.VARIANTS, the exp probes, the fused ops (masked_softmax with no
mask, ragged_softmax with each row one segment), and peer backends when installed."""

from __future__ import annotations

from collections.abc import Callable

import torch

TORCH = "torch"

Softmax = Callable[[torch.Tensor], torch.Tensor]


def _masked(x: torch.Tensor) -> torch.Tensor:
    from blockscope import kernels

    return kernels.masked_softmax(x)


def _ragged(x: torch.Tensor) -> torch.Tensor:
    """Each row of x one segment of a flat (R * N,) values tensor."""
    from blockscope import kernels

    n = x.shape[-1]
    flat = x.contiguous().reshape(-1)
    offsets = torch.arange(0, flat.numel() + 1, max(n, 1), device=x.device)
    return kernels.ragged_softmax(flat, offsets).reshape(x.shape)


FUSED: dict[str, Softmax] = {"masked_softmax": _masked, "ragged_softmax": _ragged}


def allowed_names() -> tuple[str, ...]:
    """Every name `softmax_callable` resolves: the backends (torch, peers, every variant) and the exp probes."""
    from blockscope.profiling.inspect.numerics.probe import PROBES
    from blockscope.profiling.measure.backends import backend_names

    return (*backend_names(), *FUSED, *PROBES)


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

    'probe_exp' / 'probe_exp2' are the numerics probe kernel; 'masked_softmax' / 'ragged_softmax' the fused ops
    (no mask; each row one segment); every other name is a profiling.measure.backends backend ('torch',
    'inductor', 'liger', 'quack', a kernels.VARIANTS name): its `.available()` reason raises here, its
    `.supports()` reason per input at call time."""
    from blockscope.profiling.inspect.numerics.probe import PROBES, probe_softmax

    if name in PROBES:
        mode = PROBES[name]
        return lambda x: probe_softmax(x, mode)
    if name in FUSED:
        return FUSED[name]
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
