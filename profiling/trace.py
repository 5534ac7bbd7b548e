"""Kernel-name evidence: run a callable once under torch.profiler (CPU + CUDA) and list the device kernels.

Profiling is only for naming what ran; it is never mixed into timing (trace after timing: CUPTI may stay
attached once started). `export_path` writes a Chrome trace (JSON) that opens in Perfetto
(ui.perfetto.dev) or chrome://tracing.

Each profiler session re-registers CUPTI's timestamp callback, and CUPTI then mangles the first k kernel
records of the k-th session in a process (pytorch/pytorch#192021), so every session here first launches
k + 1 tiny marker kernels (torch.cuda._sleep, 'spin_kernel'), which are left out of the result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MARKER = "spin_kernel"
MAX_MARKERS = 4096
_sessions = 0  # profiler sessions with CUDA activity so far in this process


@dataclass(frozen=True)
class KernelRecord:
    """One device kernel (or memcpy/memset) seen in the trace: total device time in us over `calls`."""

    name: str
    device_us: float
    calls: int


def _is_device_event(event: Any) -> bool:
    return str(getattr(event, "device_type", "")) == "DeviceType.CUDA"


def _duration_us(event: Any) -> float:
    time_range = getattr(event, "time_range", None)
    if time_range is not None:
        return float(time_range.elapsed_us())
    return float(getattr(event, "device_time", 0.0) or getattr(event, "cuda_time", 0.0) or 0.0)


def trace_kernels(fn: Callable[[], Any], *, export_path: str | Path | None = None,
                  include_memory_ops: bool = False, markers: bool = True) -> list[KernelRecord]:
    """Run `fn` once under torch.profiler; device kernels by first appearance with summed device time (us).

    Memcpy/Memset device events are left out unless `include_memory_ops`. Without CUDA the list is empty.
    """
    import torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    cuda = torch.cuda.is_available()
    if cuda:
        activities.append(ProfilerActivity.CUDA)
    global _sessions
    pad = min(_sessions + 1, MAX_MARKERS) if cuda and markers and hasattr(torch.cuda, "_sleep") else 0
    with profile(activities=activities) as prof:
        for _ in range(pad):
            torch.cuda._sleep(1)
        fn()
        if cuda:
            torch.cuda.synchronize()
    _sessions += 1
    if export_path is not None:
        Path(export_path).parent.mkdir(parents=True, exist_ok=True)
        prof.export_chrome_trace(str(export_path))
    totals: dict[str, list[float]] = {}
    for event in prof.events():
        if not _is_device_event(event):
            continue
        name = event.name
        if pad and MARKER in name:
            continue
        if not include_memory_ops and name.split(" ")[0].lower() in ("memcpy", "memset"):
            continue
        entry = totals.setdefault(name, [0.0, 0])
        entry[0] += _duration_us(event)
        entry[1] += 1
    return [KernelRecord(name, total, int(calls)) for name, (total, calls) in totals.items()]


def kernel_names(fn: Callable[[], Any]) -> list[str]:
    """Sorted unique CUDA kernel names of one traced call of `fn` (the seed's evidence list)."""
    return sorted({record.name for record in trace_kernels(fn)})
