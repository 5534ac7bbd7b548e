"""Softmax callables by name: 'torch', the kernels.VARIANTS, the exp probes, and peer backends when installed."""

from __future__ import annotations

from collections.abc import Callable

import torch

TORCH = "torch"
PEER_BACKENDS: tuple[str, ...] = ("inductor", "liger", "quack")  # served by profiling.backends once it lands

Softmax = Callable[[torch.Tensor], torch.Tensor]


def _get_backend() -> Callable[[str], object] | None:
    try:
        from profiling.backends import get_backend
    except ImportError:
        return None
    return get_backend


def backend_names() -> tuple[str, ...]:
    """Peer backend names profiling.backends serves (empty before that module exists)."""
    if _get_backend() is None:
        return ()
    import profiling.backends as backends

    for attribute in ("BACKENDS", "PEERS", "BACKEND_NAMES"):
        names = getattr(backends, attribute, None)
        if names:
            return tuple(names)
    return PEER_BACKENDS


def allowed_names() -> tuple[str, ...]:
    """Every name `softmax_callable` resolves: torch, the registered variants, the probes, peer backends."""
    import kernels

    from .probe import PROBES

    return (TORCH, *kernels.VARIANTS, *PROBES, *backend_names())


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

    'torch' is torch.softmax in the input dtype; a kernels.VARIANTS name its launcher; 'probe_exp' /
    'probe_exp2' the numerics probe kernel; any other name goes to profiling.backends.get_backend when that
    module exists (its `.available()` reason raises here, `.supports()` per input at call time)."""
    if name == TORCH:
        return lambda x: torch.softmax(x, dim=-1)
    import kernels

    if name in kernels.VARIANTS:
        return kernels.get_variant(name).launcher
    from .probe import PROBES, probe_softmax

    if name in PROBES:
        use_exp2 = PROBES[name]
        return lambda x: probe_softmax(x, use_exp2)
    get_backend = _get_backend()
    if get_backend is not None:
        try:
            backend = get_backend(name)
        except (KeyError, ValueError):
            backend = None
        if backend is not None:
            return _backend_callable(name, backend)
    raise ValueError(f"unknown softmax {name!r}; allowed: {', '.join(allowed_names())}")


def max_n(name: str) -> int:
    """Widest row `name` takes: a variant's or the probe's limit; torch and peer backends: no limit known here."""
    import kernels

    from .probe import MAX_N as PROBE_MAX_N
    from .probe import PROBES

    if name in kernels.VARIANTS:
        return kernels.get_variant(name).max_n
    if name in PROBES:
        return PROBE_MAX_N
    return 2**31 - 1
