"""The machine record of a run through NVML (nvidia-ml-py's `pynvml`): GPU UUID, clocks, power, ECC, MIG, processes.

`machine_record(uuid=..., index=...)` returns MACHINE_COLUMNS (results schema, optional columns): values are None
where NVML is missing (no driver, no `pynvml`), the call is not supported, or there is no GPU; `nvml_status` says
why in one line. `warnings(record)` lists what makes timings less repeatable (clocks not locked, other processes).

Locked clocks: NVML has setters for `nvidia-smi -lgc` locks but no getter (nvidia-ml-py 13.615.71), so
`clocks_locked` is True only when the applications-clock SM target is below the maximum SM clock (a lock set with
`nvidia-smi -ac` or `-lgc` on drivers that report it there) and False otherwise: 'no lock seen', not 'unlocked'.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from typing import Any

from blockscope.profiling.results import MACHINE_COLUMNS

CLOCK_EVENT_NAMES = {
    0x1: "GPU idle",
    0x2: "applications clocks setting",
    0x4: "software power cap",
    0x8: "hardware slowdown",
    0x10: "sync boost",
    0x20: "software thermal slowdown",
    0x40: "hardware thermal slowdown",
    0x80: "hardware power brake",
    0x100: "display clock setting",
}


def empty_record(status: str) -> dict[str, Any]:
    """MACHINE_COLUMNS with None values, host_name filled, `nvml_status` = status."""
    record: dict[str, Any] = dict.fromkeys(MACHINE_COLUMNS)
    record["host_name"] = socket.gethostname()
    record["nvml_status"] = status
    return record


def machine_record(uuid: str | None = None, index: int | None = None, nvml: Any = None) -> dict[str, Any]:
    """MACHINE_COLUMNS for the GPU with `uuid` ('GPU-...'), else NVML `index` (default 0).

    `nvml` replaces the pynvml module (tests). Never raises for a missing driver or library: `nvml_status` says
    what failed and the GPU fields stay None."""
    if index is not None and (not isinstance(index, int) or isinstance(index, bool) or index < 0):
        raise ValueError(f"index {index!r}; allowed: a non-negative int")
    if uuid is not None and not isinstance(uuid, str):
        raise TypeError(f"uuid is {type(uuid).__name__}; allowed: a str like 'GPU-...'")
    if nvml is None:
        try:
            import pynvml as nvml
        except ImportError:
            return empty_record("pynvml not installed (pip install nvidia-ml-py)")
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as error:
        return empty_record(f"NVML unavailable: {error}")
    try:
        try:
            handle = nvml.nvmlDeviceGetHandleByUUID(uuid) if uuid else nvml.nvmlDeviceGetHandleByIndex(index or 0)
        except nvml.NVMLError as error:
            return empty_record(f"no NVML device {uuid or index or 0}: {error}")
        return _read(nvml, handle)
    finally:
        try:
            nvml.nvmlShutdown()
        except nvml.NVMLError:
            pass


def _read(nvml: Any, handle: Any) -> dict[str, Any]:
    def call(function: Callable, *args: Any) -> Any:
        try:
            return function(*args)
        except nvml.NVMLError:
            return None

    record = empty_record("ok")
    record["gpu_uuid"] = call(nvml.nvmlDeviceGetUUID, handle)
    record["sm_clock_mhz"] = call(nvml.nvmlDeviceGetClockInfo, handle, nvml.NVML_CLOCK_SM)
    record["sm_clock_max_mhz"] = call(nvml.nvmlDeviceGetMaxClockInfo, handle, nvml.NVML_CLOCK_SM)
    record["mem_clock_mhz"] = call(nvml.nvmlDeviceGetClockInfo, handle, nvml.NVML_CLOCK_MEM)
    record["mem_clock_max_mhz"] = call(nvml.nvmlDeviceGetMaxClockInfo, handle, nvml.NVML_CLOCK_MEM)
    record["sm_app_clock_mhz"] = call(
        nvml.nvmlDeviceGetClock, handle, nvml.NVML_CLOCK_SM, nvml.NVML_CLOCK_ID_APP_CLOCK_TARGET
    )
    record["clock_event_reasons"] = call(nvml.nvmlDeviceGetCurrentClocksEventReasons, handle)
    app, top = record["sm_app_clock_mhz"], record["sm_clock_max_mhz"]
    record["clocks_locked"] = None if app is None or top is None else bool(app < top)
    limit = call(nvml.nvmlDeviceGetEnforcedPowerLimit, handle)
    record["power_limit_w"] = None if limit is None else limit / 1000.0  # mW -> W
    ecc = call(nvml.nvmlDeviceGetEccMode, handle)
    record["ecc_enabled"] = None if ecc is None else bool(ecc[0])
    persistence = call(nvml.nvmlDeviceGetPersistenceMode, handle)
    record["persistence_mode"] = None if persistence is None else bool(persistence)
    mig = call(nvml.nvmlDeviceGetMigMode, handle)
    record["mig_enabled"] = None if mig is None else bool(mig[0])
    processes = call(nvml.nvmlDeviceGetComputeRunningProcesses, handle)
    if processes is not None:
        record["other_gpu_processes"] = sum(1 for p in processes if getattr(p, "pid", None) != os.getpid())
    return record


def torch_device_uuid(device: Any = None) -> str | None:
    """'GPU-...' of a torch CUDA device (torch's device properties), None without CUDA or a torch lacking it."""
    import torch

    if not torch.cuda.is_available():
        return None
    props = torch.cuda.get_device_properties(device if device is not None else torch.cuda.current_device())
    value = getattr(props, "uuid", None)
    if value is None:
        return None
    text = str(value)
    return text if text.startswith(("GPU-", "MIG-")) else f"GPU-{text}"


def clock_event_text(mask: int | None) -> str:
    """'software power cap, hardware slowdown' for a reasons bitmask; '' for 0 or None."""
    if not mask:
        return ""
    names = [name for bit, name in CLOCK_EVENT_NAMES.items() if mask & bit]
    unknown = mask & ~sum(CLOCK_EVENT_NAMES)
    return ", ".join(names + ([f"0x{unknown:x}"] if unknown else []))


def warnings(record: dict[str, Any]) -> list[str]:
    """One line per condition that makes timings less repeatable: clocks not locked, clocks held down by power
    or thermal limits, other processes on the GPU."""
    lines = []
    if record.get("nvml_status") not in (None, "ok"):
        return [f"machine record incomplete: {record['nvml_status']}"]
    if record.get("clocks_locked") is False:
        lines.append(
            f"GPU clocks are not locked (applications SM clock {record.get('sm_app_clock_mhz')} MHz = max "
            f"{record.get('sm_clock_max_mhz')} MHz; a `nvidia-smi -lgc` lock cannot be read through NVML): "
            "boost varies with temperature and power; lock with `sudo nvidia-smi -lgc F,F` for repeatable times"
        )
    slowdown = (record.get("clock_event_reasons") or 0) & ~0x3  # idle and applications setting are not limits
    if slowdown:
        lines.append(f"GPU clocks are held down now: {clock_event_text(slowdown)}")
    others = record.get("other_gpu_processes")
    if others:
        lines.append(f"{others} other process(es) are using the GPU: timings will include their interference")
    return lines
