"""Kernel-name evidence: run a callable once under torch.profiler (CPU + CUDA) and list the device kernels.

Profiling is only for naming what ran; it is never mixed into timing (trace after timing: CUPTI may stay
attached once started). `export_path` writes a Chrome trace (JSON) that opens in Perfetto
(ui.perfetto.dev) or chrome://tracing.

Each profiler session re-registers CUPTI's timestamp callback, and CUPTI then mangles the first k kernel
records of the k-th session in a process (pytorch/pytorch#192021), so every session here first launches
k + 1 tiny marker kernels (torch.cuda._sleep, 'spin_kernel'), which are left out of the result.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from blockscope import scratch

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


def trace_kernels(
    fn: Callable[[], Any],
    *,
    export_path: str | Path | None = None,
    include_memory_ops: bool = False,
    markers: bool = True,
) -> list[KernelRecord]:
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
        partial = scratch.temp_path(export_path)  # a kill mid-write leaves no half trace; the next writer reclaims
        try:
            prof.export_chrome_trace(str(partial))
            os.replace(partial, export_path)
        finally:
            partial.unlink(missing_ok=True)
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


def split_at_markers(events: Sequence[tuple[str, float]], calls: int, pad: int) -> list[list[str]] | None:
    """Kernel names per call from one session's device events (name, start time in us) of `pad` marker kernels,
    then per call: its kernels, one marker. Sorted by start time, the last `calls` markers close the calls' segments
    (the pad markers come first). None when the trace does not have that shape: other than pad + calls markers, a
    kernel before the first call, or a call without a kernel (every traced config launches one), so the caller
    can trace those calls one session each instead."""
    ordered = sorted(events, key=lambda event: event[1])
    markers = [i for i, (name, _) in enumerate(ordered) if MARKER in name]
    if calls < 1 or len(markers) != pad + calls:
        return None
    delimiters = markers[pad:]
    start = markers[pad - 1] + 1 if pad else 0
    if any(MARKER not in name for name, _ in ordered[:start]):
        return None  # a kernel among the pad markers: the order is not the one launched
    segments: list[list[str]] = []
    for end in delimiters:
        names = [name for name, _ in ordered[start:end]]
        if not names:
            return None
        segments.append(names)
        start = end + 1
    return segments


def kernel_names_batch(fns: Sequence[Callable[[], Any]], include_memory_ops: bool = False) -> list[list[str]] | None:
    """Sorted unique CUDA kernel names of one call of each of `fns`, all in one torch.profiler session (one
    session per config cost ~70 ms each on the H200: 124 s of a 1602-config sweep); a marker kernel after each
    call, with a synchronize either side, separates the calls (split_at_markers). None when it cannot say
    (no CUDA, a call raised, or the trace is not separable): trace those calls with kernel_names one by one."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    if not fns or not torch.cuda.is_available() or not hasattr(torch.cuda, "_sleep"):
        return None
    global _sessions
    pad = min(_sessions + 1, MAX_MARKERS)
    try:
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(pad):
                torch.cuda._sleep(1)
            torch.cuda.synchronize()
            for fn in fns:
                fn()
                torch.cuda.synchronize()
                torch.cuda._sleep(1)
                torch.cuda.synchronize()
    except Exception:
        return None
    finally:
        _sessions += 1
    events = []
    for event in prof.events():
        if not _is_device_event(event):
            continue
        name = event.name
        if not include_memory_ops and name.split(" ")[0].lower() in ("memcpy", "memset"):
            continue
        time_range = getattr(event, "time_range", None)
        if time_range is None:
            return None
        events.append((name, float(time_range.start)))
    segments = split_at_markers(events, len(fns), pad)
    return None if segments is None else [sorted(set(names)) for names in segments]


# ---------------------------------------------------------------- Chrome trace files kept by the sweep

TRACE_INDEX = "index.json"  # sidecar of a traces directory: which config each trace file belongs to
KERNEL_CATEGORIES = ("kernel",)  # Chrome trace 'cat' of device kernels (torch.profiler / Kineto)


def traces_dir_for(results_path: str | Path) -> Path:
    """The traces directory beside a results file: 'run.parquet' -> 'run_traces/'."""
    results_path = Path(results_path)
    return results_path.with_name(f"{results_path.stem}_traces")


def trace_file_name(variant: str, dtype: str, n_rows: int, n_cols: int, tunables: str = "{}") -> str:
    """A file name for one config's trace: 'teaching_fp16_R4096_N1000[_num_warps4].json'."""
    import json

    extra = "".join(f"_{k}{v}" for k, v in sorted(json.loads(tunables or "{}").items()))
    return f"{variant}_{dtype}_R{int(n_rows)}_N{int(n_cols)}{extra}.json"


def chrome_trace_kernels(source: str | Path | bytes) -> list[KernelRecord]:
    """Device kernels of a Chrome trace JSON ('traceEvents' with complete events of category 'kernel'), by first
    appearance with summed duration (us) and calls; ValueError for a file that is not a Chrome trace."""
    import json

    try:
        data = json.loads(source if isinstance(source, bytes) else Path(source).read_bytes())
    except (OSError, ValueError) as error:
        raise ValueError(f"not a readable Chrome trace ({error}); expected a JSON object with 'traceEvents'") from None
    events = data.get("traceEvents") if isinstance(data, dict) else data if isinstance(data, list) else None
    if not isinstance(events, list):
        raise ValueError("not a Chrome trace: no 'traceEvents' list; expected torch.profiler's export_chrome_trace")
    totals: dict[str, list[float]] = {}
    for event in events:
        if not isinstance(event, dict) or str(event.get("cat", "")).lower() not in KERNEL_CATEGORIES:
            continue
        name = str(event.get("name", ""))
        if not name or MARKER in name:
            continue
        entry = totals.setdefault(name, [0.0, 0])
        entry[0] += float(event.get("dur", 0.0) or 0.0)
        entry[1] += 1
    return [KernelRecord(name, total, int(calls)) for name, (total, calls) in totals.items()]


def read_trace_index(directory: str | Path) -> list[dict[str, Any]]:
    """Entries of a traces directory: its index.json (config columns, 'file', 'kernels', 'run_id') plus any other
    *.json trace there (config unknown); 'path' is the file's full path. [] for a missing directory."""
    import json

    directory = Path(directory)
    if not directory.is_dir():
        return []
    entries: list[dict[str, Any]] = []
    index = directory / TRACE_INDEX
    if index.is_file():
        try:
            listed = json.loads(index.read_text(encoding="utf-8"))
        except ValueError:
            listed = []
        for entry in listed if isinstance(listed, list) else []:
            inside = _inside(directory, str(entry.get("file", ""))) if isinstance(entry, dict) else None
            if inside is not None:
                entries.append({**entry, "file": inside.name, "path": str(inside)})
    named = {entry["file"] for entry in entries}
    for path in sorted(directory.glob("*.json")):
        if path.name != TRACE_INDEX and path.name not in named and _inside(directory, path.name) is not None:
            entries.append({"file": path.name, "path": str(path)})
    return entries


MAX_TRACE_MB = 256  # a Chrome trace the dashboard offers or parses


def _inside(directory: Path, name: str) -> Path | None:
    """`directory`/`name` when it is a regular file of at most MAX_TRACE_MB whose resolved path stays inside the
    resolved directory (no '..', no absolute path, no symlink out); None otherwise (an index entry is untrusted)."""
    if not name or "/" in name or "\\" in name or name in (".", ".."):
        return None
    path = directory / name
    try:
        resolved, root = path.resolve(strict=True), directory.resolve(strict=True)
        info = resolved.stat()
    except OSError:
        return None
    if resolved.parent != root or not stat.S_ISREG(info.st_mode) or info.st_size > MAX_TRACE_MB * 2**20:
        return None
    return resolved


def write_trace_index(directory: str | Path, entries: list[dict[str, Any]]) -> Path:
    """Merge `entries` into directory/index.json (one entry per file, the new one wins); atomic rewrite."""
    import json
    import os

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    current = {
        entry["file"]: {k: v for k, v in entry.items() if k != "path"}
        for entry in read_trace_index(directory)
        if "variant" in entry
    }
    for entry in entries:
        current[entry["file"]] = entry
    path = directory / TRACE_INDEX
    tmp = scratch.temp_path(path)
    tmp.write_text(json.dumps(sorted(current.values(), key=lambda e: e["file"]), indent=1), encoding="utf-8")
    os.replace(tmp, path)
    return path
