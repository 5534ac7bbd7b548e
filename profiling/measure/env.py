"""Environment fingerprint stamped on every results row of a run (the results schema's ENV_COLUMNS)."""

from __future__ import annotations

import ctypes
import datetime as _dt
import os
import subprocess
import uuid
from typing import Any

NONE = "none"


def new_run_id() -> str:
    """Unique run id: UTC timestamp + 8 random hex digits."""
    return _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + uuid.uuid4().hex[:8]


def utc_now_iso() -> str:
    """ISO-8601 UTC timestamp, seconds resolution ('2026-11-30T21:00:00+00:00')."""
    return _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat()


def driver_version() -> str:
    """NVIDIA driver version from nvidia-smi ('570.86.15'), else the CUDA driver API's ('cuda 13.0'), else 'none'."""
    try:
        out = (
            subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=10,
                check=True,
            )
            .stdout.strip()
            .splitlines()
        )
        if out and out[0].strip():
            return out[0].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        version = ctypes.c_int(0)
        if ctypes.CDLL("libcuda.so.1").cuDriverGetVersion(ctypes.byref(version)) == 0 and version.value:
            return f"cuda {version.value // 1000}.{version.value % 1000 // 10}"
    except OSError:
        pass
    return NONE


def fingerprint(
    device: Any = None, *, copy_gbps: float | None = None, measure_copy: bool = True, run_id: str | None = None
) -> dict[str, Any]:
    """gpu_name, compute_capability ('9.0'), sm_count, driver_version, torch_version, triton_version,
    copy_gbps (GB/s, measured here unless given or `measure_copy` is False), measured_at (ISO UTC), run_id, and
    the machine record (profiling.measure.machine: GPU UUID, host, clocks, power limit, ECC, MIG, other processes).

    Without CUDA the GPU fields are 'none' and the numbers None (NA in the table).
    """
    import torch

    try:
        import triton

        triton_version = triton.__version__
    except Exception:  # triton missing or broken: still fingerprint
        triton_version = NONE
    info: dict[str, Any] = {
        "run_id": run_id or new_run_id(),
        "gpu_name": NONE,
        "compute_capability": NONE,
        "sm_count": None,
        "driver_version": NONE,
        "torch_version": torch.__version__,
        "triton_version": triton_version,
        "copy_gbps": copy_gbps,
        "measured_at": utc_now_iso(),
    }
    from blockscope.profiling.measure.machine import empty_record, machine_record, torch_device_uuid

    if not torch.cuda.is_available():
        return {**info, **empty_record("no CUDA device")}
    device = torch.device(device) if device is not None else torch.device("cuda", torch.cuda.current_device())
    if device.type != "cuda":
        return {**info, **empty_record("not a CUDA device")}
    uuid = torch_device_uuid(device)
    info.update(machine_record(uuid=uuid) if uuid else machine_record(index=_nvml_index(device.index or 0)))
    props = torch.cuda.get_device_properties(device)
    info.update(
        gpu_name=props.name,
        compute_capability=f"{props.major}.{props.minor}",
        sm_count=int(props.multi_processor_count),
        driver_version=driver_version(),
    )
    if copy_gbps is None and measure_copy:
        from blockscope.profiling.measure.timing import measure_copy_gbps

        info["copy_gbps"] = measure_copy_gbps(device)
    return info


def _nvml_index(torch_index: int) -> int:
    """NVML's index of torch's CUDA device `torch_index` when CUDA_VISIBLE_DEVICES lists integers; else the same."""
    visible = [part.strip() for part in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if part.strip()]
    if torch_index < len(visible) and visible[torch_index].isdigit():
        return int(visible[torch_index])
    return torch_index


def arch_of(info: dict[str, Any]) -> str | None:
    """'sm_90' for compute_capability '9.0'; None without a GPU."""
    capability = info.get("compute_capability")
    if not capability or capability == NONE:
        return None
    major, minor = capability.split(".")
    return f"sm_{major}{minor}"
