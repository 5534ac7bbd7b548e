"""Machine record (NVML through a fake pynvml), its warnings, the schema columns and the GPU UUID check."""

from __future__ import annotations

import os
import types

import pandas as pd
import pytest

from blockscope.demo import synthetic_results
from blockscope.profiling.cli.main import main
from blockscope.profiling.measure import machine
from blockscope.profiling.results import MACHINE_COLUMNS, load_results, save_results
from blockscope.profiling.results.drift import DifferentGPUError, check_same_gpu, repeat_drift

UUID_A = "GPU-9a89c1d2-0000-0000-0000-000000000001"
UUID_B = "GPU-9a89c1d2-0000-0000-0000-000000000002"


class NVMLError(Exception):
    pass


class NotSupported(NVMLError):
    pass


def fake_nvml(*, app_clock: int = 1980, reasons: int = 0, pids: tuple[int, ...] = (), init_error: bool = False,
              unsupported: tuple[str, ...] = ()) -> types.SimpleNamespace:  # fmt: skip
    """A pynvml stand-in with the H200's values from the anchors (1980/3201 MHz, 700 W, ECC on, MIG off)."""
    calls = []

    def api(name, value):
        def call(*args):
            calls.append(name)
            if name in unsupported:
                raise NotSupported(name)
            return value(*args) if callable(value) else value

        return call

    def init():
        if init_error:
            raise NVMLError("NVML Shared Library Not Found")

    clocks = {1: 1980, 2: 3201}
    return types.SimpleNamespace(
        NVMLError=NVMLError,
        NVML_CLOCK_SM=1,
        NVML_CLOCK_MEM=2,
        NVML_CLOCK_ID_APP_CLOCK_TARGET=1,
        nvmlInit=init,
        nvmlShutdown=lambda: calls.append("shutdown"),
        nvmlDeviceGetHandleByUUID=api("by_uuid", lambda u: ("h", u)),
        nvmlDeviceGetHandleByIndex=api("by_index", lambda i: ("h", i)),
        nvmlDeviceGetUUID=api("uuid", UUID_A),
        nvmlDeviceGetClockInfo=api("clock", lambda h, t: clocks[t]),
        nvmlDeviceGetMaxClockInfo=api("max_clock", lambda h, t: clocks[t]),
        nvmlDeviceGetClock=api("app_clock", app_clock),
        nvmlDeviceGetCurrentClocksEventReasons=api("reasons", reasons),
        nvmlDeviceGetEnforcedPowerLimit=api("power", 700000),
        nvmlDeviceGetEccMode=api("ecc", [1, 1]),
        nvmlDeviceGetPersistenceMode=api("persistence", 1),
        nvmlDeviceGetMigMode=api("mig", [0, 0]),
        nvmlDeviceGetComputeRunningProcesses=api(
            "processes", [types.SimpleNamespace(pid=p, usedGpuMemory=None) for p in pids]
        ),
        calls=calls,
    )


def test_record_reads_every_field_in_its_unit() -> None:
    nvml = fake_nvml(pids=(os.getpid(), 4242))
    record = machine.machine_record(uuid=UUID_A, nvml=nvml)
    assert set(record) == set(MACHINE_COLUMNS)
    assert record["gpu_uuid"] == UUID_A and record["nvml_status"] == "ok"
    assert (record["sm_clock_mhz"], record["sm_clock_max_mhz"]) == (1980, 1980)
    assert (record["mem_clock_mhz"], record["mem_clock_max_mhz"]) == (3201, 3201)
    assert record["power_limit_w"] == 700.0  # NVML reports mW
    assert record["ecc_enabled"] is True and record["persistence_mode"] is True and record["mig_enabled"] is False
    assert record["other_gpu_processes"] == 1  # this process is not counted
    assert record["clocks_locked"] is False  # applications clock at the max: no lock seen
    assert "by_uuid" in nvml.calls and nvml.calls[-1] == "shutdown"


def test_locked_application_clock_and_unsupported_calls() -> None:
    record = machine.machine_record(index=1, nvml=fake_nvml(app_clock=1500, unsupported=("ecc", "mig")))
    assert record["clocks_locked"] is True
    assert record["ecc_enabled"] is None and record["mig_enabled"] is None  # not supported: NA, record still made
    assert machine.warnings(record) == []


def test_without_nvml_the_record_says_why() -> None:
    record = machine.machine_record(nvml=fake_nvml(init_error=True))
    assert record["gpu_uuid"] is None and record["host_name"]
    assert record["nvml_status"].startswith("NVML unavailable: NVML Shared Library Not Found")
    assert machine.warnings(record) == [f"machine record incomplete: {record['nvml_status']}"]


def test_real_pynvml_without_a_gpu_fails_cleanly() -> None:
    pytest.importorskip("pynvml")
    record = machine.machine_record()
    assert set(record) == set(MACHINE_COLUMNS)
    assert record["nvml_status"] == "ok" or record["nvml_status"].startswith(("NVML unavailable", "no NVML device"))


@pytest.mark.parametrize(("kwargs", "error"), [({"index": -1}, ValueError), ({"index": True}, ValueError),
                                                ({"uuid": 5}, TypeError)])  # fmt: skip
def test_bad_arguments(kwargs: dict, error: type) -> None:
    with pytest.raises(error, match="allowed"):
        machine.machine_record(nvml=fake_nvml(), **kwargs)


def test_warnings_name_clocks_slowdowns_and_other_processes() -> None:
    record = machine.machine_record(nvml=fake_nvml(reasons=0x4 | 0x40 | 0x1, pids=(4242, 4343)))
    lines = machine.warnings(record)
    assert len(lines) == 3, lines
    assert "not locked" in lines[0] and "1980 MHz" in lines[0]
    assert lines[1] == "GPU clocks are held down now: software power cap, hardware thermal slowdown"
    assert lines[2].startswith("2 other process(es)")


def test_fingerprint_without_cuda_has_the_machine_columns() -> None:
    from blockscope.profiling.measure.env import fingerprint

    info = fingerprint(measure_copy=False)
    assert set(MACHINE_COLUMNS) <= set(info)
    assert info["host_name"] and (info["gpu_uuid"] is not None or info["nvml_status"] != "ok")


def _run(uuid: str | None, seed: int = 0) -> pd.DataFrame:
    table = synthetic_results(n_values=(1024, 4096), dtypes=("fp16",), variants=("torch", "teaching"), seed=seed)
    table["gpu_uuid"] = uuid
    return table


def test_machine_columns_round_trip_and_old_files_load(tmp_path) -> None:
    table = _run(UUID_A)
    table["clocks_locked"] = True
    table["other_gpu_processes"] = 0
    path = save_results(table, tmp_path / "r.csv")
    loaded = load_results(path)
    assert loaded["gpu_uuid"].unique().tolist() == [UUID_A]
    assert str(loaded["clocks_locked"].dtype) == "boolean" and loaded["clocks_locked"].all()
    old = _run(None).drop(columns=list(MACHINE_COLUMNS), errors="ignore")
    old.to_csv(tmp_path / "old.csv", index=False)
    assert load_results(tmp_path / "old.csv")["gpu_uuid"].isna().all()


def test_uuid_check_refuses_different_gpus_unless_forced() -> None:
    assert check_same_gpu(_run(UUID_A), _run(UUID_A, seed=1)) is None
    assert check_same_gpu(_run(UUID_A), _run(None)) is None  # an old file: nothing to compare
    with pytest.raises(DifferentGPUError, match=f"{UUID_A} vs {UUID_B}"):
        repeat_drift(_run(UUID_A), _run(UUID_B, seed=1), min_us=0)
    assert len(repeat_drift(_run(UUID_A), _run(UUID_B, seed=1), min_us=0, force=True))
    assert "different GPUs" in check_same_gpu(_run(UUID_A), _run(UUID_B), force=True)


def test_drift_cli_refuses_then_forces(tmp_path, capsys: pytest.CaptureFixture) -> None:
    first, second = tmp_path / "a.parquet", tmp_path / "b.parquet"
    save_results(_run(UUID_A), first)
    save_results(_run(UUID_B, seed=1), second)
    assert main(["drift", str(first), str(second)], prog="profiling") == 2
    err = capsys.readouterr().err
    assert "different GPUs" in err and "--force" in err and err.count("\n") == 1
    assert main(["drift", str(first), str(second), "--force", "--min-us", "0.001"], prog="profiling") == 0
    assert "warning: the runs were measured on different GPUs" in capsys.readouterr().err
