"""Softmax backends side by side: eager ATen (`torch`), Inductor, Liger, Quack and every Blockscope variant.

Each backend is one small adapter (a module here): `available()` and `supports(R, N, dtype)` return None or the
reason why not, `prepare(x)` returns a zero-argument closure for timing (setup happens on its first call), and
`evidence(x)` returns the compile facts of the kernels it ran. Backward (`has_backward`): `supports_backward(R, N,
dtype)`, `backward_call(x, y, dy)` (dx from a saved y and dy) and `forward_backward_call(x, dy)` (one training
step through `differentiable(x)`); a backend without one gives 'unsupported: <name>: ... has no softmax backward'.
Optional peers (liger-kernel, quack-kernels) are imported only when used: a missing package makes that backend
unavailable, with the reason, and nothing else.
"""

from __future__ import annotations

import torch

from blockscope import kernels
from blockscope.profiling.measure.backends.aten import AtenBackend
from blockscope.profiling.measure.backends.base import (
    UNAVAILABLE,
    UNSUPPORTED,
    Backend,
    Evidence,
    KernelFacts,
    compiled_kernel_facts,
    compiled_kernels,
)
from blockscope.profiling.measure.backends.blockscope import BlockscopeBackend
from blockscope.profiling.measure.backends.inductor import InductorBackend
from blockscope.profiling.measure.backends.liger import LigerBackend
from blockscope.profiling.measure.backends.quack import QuackBackend
from blockscope.profiling.results import PEER_BACKENDS

PEERS: tuple[str, ...] = PEER_BACKENDS
DIRECTIONS: tuple[str, ...] = ("forward", "backward", "forward_backward")  # results.DIRECTION_VALUES
_PEER_TYPES: dict[str, type[Backend]] = {
    "torch": AtenBackend,
    "inductor": InductorBackend,
    "liger": LigerBackend,
    "quack": QuackBackend,
}
_instances: dict[str, Backend] = {}

__all__ = [
    "DIRECTIONS",
    "PEERS",
    "UNAVAILABLE",
    "UNSUPPORTED",
    "Backend",
    "Evidence",
    "KernelFacts",
    "backend_names",
    "compiled_kernel_facts",
    "compiled_kernels",
    "get_backend",
    "is_peer",
    "status",
    "unsupported_reason",
]


def backend_names() -> tuple[str, ...]:
    """Peers first, then every registered Blockscope variant."""
    return (*PEERS, *kernels.VARIANTS)


def is_peer(name: str) -> bool:
    """True for a backend that is not one of Blockscope's own kernels."""
    return name in PEERS


def get_backend(name: str) -> Backend:
    """The backend called `name` (one shared instance each); ValueError names the allowed ones."""
    if name not in _instances:
        if name in _PEER_TYPES:
            _instances[name] = _PEER_TYPES[name]()
        elif isinstance(name, str) and name in kernels.VARIANTS:
            _instances[name] = BlockscopeBackend(name)
        else:
            raise ValueError(f"unknown backend {name!r}; allowed: {', '.join(backend_names())}")
    return _instances[name]


def unsupported_reason(
    name: str, n_rows: int, n_cols: int, dtype: torch.dtype, direction: str = "forward"
) -> str | None:
    """None when `name` runs this input here; else the row error text: 'unavailable: <name>: ...' when the backend
    cannot run here at all (a sweep resumed where it is installed retries it), 'unsupported: <name>: ...' for a
    shape outside its support rules, or a backward direction it has no backward for (kept). `direction`:
    'forward', 'backward' or 'forward_backward'."""
    if direction not in DIRECTIONS:
        raise ValueError(f"unknown direction {direction!r}; allowed: {', '.join(DIRECTIONS)}")
    backend = get_backend(name)
    missing = backend.available()
    if missing:
        return f"{UNAVAILABLE}{name}: {missing}"
    if direction == "forward":
        reason = backend.supports(n_rows, n_cols, dtype)
    else:
        reason = backend.supports_backward(n_rows, n_cols, dtype)
    return f"{UNSUPPORTED}{name}: {reason}" if reason else None


def status() -> list[dict[str, str]]:
    """One dict per backend: name, kind, summary, package and availability here ('yes' or the reason)."""
    return [get_backend(name).describe() for name in backend_names()]
