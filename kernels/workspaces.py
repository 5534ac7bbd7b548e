"""The split-row kernels' workspace (stats, counters, control), cached per device and stream; no Triton import, so
kernels/launches.py can give a recorded split-row launch the same buffers as kernels/splitrow.py's launcher."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import torch

_WORKSPACES: dict[tuple, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}
_PRIVATE = threading.local()  # .depth > 0: inside private_workspaces()


@contextlib.contextmanager
def private_workspaces() -> Iterator[None]:
    """Launches inside (this thread) get a workspace of their own instead of the cached per-stream one: for
    callers whose allocations may land in a CUDA-graph memory pool (torch.compile's cudagraph trees warm up
    there and reject blocks outliving the call)."""
    _PRIVATE.depth = getattr(_PRIVATE, "depth", 0) + 1
    try:
        yield
    finally:
        _PRIVATE.depth -= 1


def workspace(device: torch.device, n_rows: int, chunks: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(stats, counters, control) for one launch: two tagged int64 words per row x chunk, an int64 counter per
    row, int64 [epoch, programs exited]. One per device and stream (launches on one stream never overlap), grown
    as needed; new buffers are zeros (epoch 0), which no launch's epoch (>= 1) matches.

    Under CUDA-graph capture (or private_workspaces()) the launch gets fresh zeroed buffers, not cached ones:
    the graph replays their zeroing with the kernel (a memset and a 2-element arange node per launch), so each
    graph owns its workspace (graphs replayed at once on several streams never share one, as they would through
    the capture stream's cached entry) and no cached buffer a graph points to is ever freed or regrown under it."""
    if device.type == "cuda" and (getattr(_PRIVATE, "depth", 0) or torch.cuda.is_current_stream_capturing()):
        zeros = torch.zeros(n_rows * chunks * 2 + n_rows, dtype=torch.int64, device=device)  # stats + counters
        control = torch.arange(1, -1, -1, dtype=torch.int64, device=device)
        return zeros[: n_rows * chunks * 2], zeros[n_rows * chunks * 2 :], control
    stream = torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0
    key = (device.type, device.index, stream)
    stats, counters, control = _WORKSPACES.get(key, (None, None, None))
    if control is None:
        control = torch.arange(1, -1, -1, dtype=torch.int64, device=device)  # [1, 0], no host copy (graph capture)
    if stats is None or stats.numel() < n_rows * chunks * 2:
        stats = torch.zeros(
            max(n_rows * chunks * 2, 2 * (0 if stats is None else stats.numel())), dtype=torch.int64, device=device
        )
    if counters is None or counters.numel() < n_rows:
        counters = torch.zeros(
            max(n_rows, 2 * (0 if counters is None else counters.numel())), dtype=torch.int64, device=device
        )
    _WORKSPACES[key] = (stats, counters, control)
    return stats, counters, control
