"""Security and reliability 2 (issue 34): in-place on overlapping views, drift across environments, atomic and
exclusive exports, full disks, stale temporary folders, peer wheels' private folder, capture-unsafe backends and
the ptxas that reads Triton's PTX."""

from __future__ import annotations

import importlib
from pathlib import Path

import pandas as pd
import pytest
import torch

from blockscope.demo import synthetic_results
from blockscope.kernels import softmax
from blockscope.profiling.cli.main import main
from blockscope.profiling.results import drift, save_results
from tests.texts import plain

# ---------------------------------------------------------------- 10: inplace / out= on self-overlapping views

OVERLAP_VARIANTS = ["teaching", "online", "splitrow"]


def _overlapping_views(dtype: torch.dtype) -> dict[str, torch.Tensor]:
    base = torch.randn(8, dtype=dtype)
    rows = torch.randn(40, dtype=dtype)
    return {
        "expand": base.expand(4, 8),
        "as_strided_rows": rows.as_strided((4, 8), (4, 1)),  # row i starts half way through row i - 1
        "as_strided_cols": rows.as_strided((3, 6), (6, 0)),  # zero column stride
        "transposed_expand": base.expand(3, 8).t(),
    }


@pytest.mark.parametrize("variant", OVERLAP_VARIANTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("kind", ["expand", "as_strided_rows", "as_strided_cols", "transposed_expand"])
def test_inplace_on_self_overlapping_view_is_refused(variant: str, dtype: torch.dtype, kind: str) -> None:
    x = _overlapping_views(dtype)[kind]
    before = x.clone()
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor refers to a single memory"):
        softmax(x, -1, variant, inplace=True)
    assert torch.equal(x, before), f"{variant} {kind}: x changed although the call was refused"


@pytest.mark.parametrize("variant", OVERLAP_VARIANTS)
@pytest.mark.parametrize("kind", ["as_strided_rows", "as_strided_cols"])
def test_out_on_self_overlapping_view_is_refused(variant: str, kind: str) -> None:
    out = _overlapping_views(torch.float32)[kind]
    x = torch.randn(out.shape)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        softmax(x, -1, variant, out=out)


@pytest.mark.parametrize("variant", OVERLAP_VARIANTS)
@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.randn(4, 8),
        lambda: torch.randn(8, 4).t(),  # column-major: distinct elements
        lambda: torch.randn(40).as_strided((4, 8), (10, 1)),  # gaps between rows
        lambda: torch.randn(4, 1, 8).expand(4, 1, 8).squeeze(1),
        lambda: torch.randn(2, 3, 8)[:, ::2],
        lambda: torch.randn(64).as_strided((2, 4), (1, 2)),  # interleaved rows, no shared element
    ],
)
def test_inplace_on_distinct_element_views_still_works(variant: str, make) -> None:
    x = make()
    expected = torch.softmax(x.double(), -1).float()
    assert softmax(x, -1, variant, inplace=True) is x
    torch.testing.assert_close(x, expected, atol=1e-6, rtol=1e-5)


def test_has_self_overlap_exact_on_small_and_cheap_on_dense() -> None:
    from blockscope.kernels.registry import _self_overlap

    assert not _self_overlap(torch.empty(0, 8).expand(0, 8))
    assert not _self_overlap(torch.empty(5, 1).expand(5, 1))
    assert _self_overlap(torch.empty(1, 8).expand(5, 8))
    assert not _self_overlap(torch.empty(64).as_strided((2, 4), (1, 2)))
    assert _self_overlap(torch.empty(64).as_strided((2, 4), (1, 1)))
    assert not _self_overlap(torch.empty(64).as_strided((2, 2, 2), (1, 4, 2)))
    assert not _self_overlap(torch.empty(1 << 20))


# ---------------------------------------------------------------- 14: drift across GPUs / versions


def _drift_pair(**second_env: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    small = {"n_values": (4096, 16384), "dtypes": ("fp16",), "variants": ("torch", "teaching")}
    first = synthetic_results(**small)
    second = synthetic_results(seed=1, run_id="synthetic-1", **small)
    for column, value in second_env.items():
        second[column] = value
    return first, second


@pytest.mark.parametrize(
    ("column", "value"),
    [("gpu_name", "NVIDIA H100 80GB HBM3"), ("torch_version", "2.99.0"), ("triton_version", "9.9.9")],
)
def test_drift_refuses_runs_from_different_environments(column: str, value: str) -> None:
    first, second = _drift_pair(**{column: value})
    with pytest.raises(drift.DriftMismatch, match=f"{column}.*{value}.*--force") as info:
        drift.repeat_drift(first, second)
    assert isinstance(info.value, ValueError) and "\n" not in str(info.value)
    forced = drift.repeat_drift(first, second, force=True)
    assert len(forced) and forced.attrs["mismatch"] and value in forced.attrs["mismatch"]
    assert set(forced["compared_across"]) == {forced.attrs["mismatch"]}
    lines = drift.drift_lines(forced)
    assert lines[0].startswith("FORCED") and value in lines[0]


def test_drift_same_environment_needs_no_force() -> None:
    first, second = _drift_pair()
    result = drift.repeat_drift(first, second)
    assert len(result) and not result.attrs.get("mismatch")
    assert "compared_across" not in result.columns
    assert not drift.drift_lines(result)[0].startswith("FORCED")


def test_drift_cli_refuses_then_forces(tmp_path, capsys) -> None:
    first, second = _drift_pair(gpu_name="NVIDIA H100 80GB HBM3")
    save_results(first, tmp_path / "a.parquet")
    save_results(second, tmp_path / "b.parquet")
    assert main(["drift", str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "gpu_name" in err and "H100" in err and "--force" in err
    out = tmp_path / "d.csv"
    assert main(["drift", str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet"), "--force", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("FORCED") and "H100" in printed
    assert "H100" in pd.read_csv(out)["compared_across"].iloc[0]


# ---------------------------------------------------------------- 3: atomic, exclusive exports


def _export_source(seed: int = 0) -> pd.DataFrame:
    return synthetic_results(seed=seed, n_values=(256, 1024), dtypes=("fp16",), variants=("torch", "teaching"))


def _snapshot(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_export_killed_midway_leaves_the_previous_report_whole(tmp_path, monkeypatch) -> None:
    from blockscope.profiling.views import export

    out = tmp_path / "report"
    export.export_all(_export_source(0), out, formats=("csv", "html"))
    before = _snapshot(out)
    real_write, calls = export._write, []

    def crashing_write(path, data):
        calls.append(path)
        if len(calls) == 3:
            raise KeyboardInterrupt  # a kill half way through the files
        return real_write(path, data)

    monkeypatch.setattr(export, "_write", crashing_write)
    with pytest.raises(KeyboardInterrupt):
        export.export_all(_export_source(1), out, formats=("csv", "html"))
    assert _snapshot(out) == before, "the previous report changed although the export did not finish"
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")) == ["report"]
    monkeypatch.setattr(export, "_write", real_write)
    written = export.export_all(_export_source(1), out, formats=("csv", "html"))
    after = _snapshot(out)
    assert after != before and {p.name for p in written} <= set(after)
    assert all(p.parent == out and p.exists() for p in written)


def test_export_swap_interrupted_is_recovered_by_the_next_export(tmp_path, monkeypatch) -> None:
    from blockscope.profiling.views import export

    out = tmp_path / "report"
    export.export_all(_export_source(0), out, formats=("csv",))
    before = _snapshot(out)
    real_rename, renames = export.os.rename, []

    def die_after_first_rename(src, dst):  # the old report moved away, then the kill
        renames.append((src, dst))
        if len(renames) == 2:
            raise KeyboardInterrupt
        return real_rename(src, dst)

    monkeypatch.setattr(export.os, "rename", die_after_first_rename)
    with pytest.raises(KeyboardInterrupt):
        export.export_all(_export_source(1), out, formats=("csv",))
    monkeypatch.setattr(export.os, "rename", real_rename)
    assert not out.exists()  # between the two renames: the old report is whole under its side name
    export._recover(out)
    assert _snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")) == ["report"]


def test_second_concurrent_export_is_refused(tmp_path, monkeypatch) -> None:
    import threading

    from blockscope.profiling.views import export

    out = tmp_path / "report"
    started, release = threading.Event(), threading.Event()
    real_write = export._write

    def slow_write(path, data):
        started.set()
        release.wait(30)
        return real_write(path, data)

    monkeypatch.setattr(export, "_write", slow_write)
    errors: list[BaseException] = []

    def first() -> None:
        try:
            export.export_all(_export_source(0), out, formats=("csv",))
        except BaseException as error:  # noqa: BLE001 - reported by the assertion below
            errors.append(error)

    thread = threading.Thread(target=first)
    thread.start()
    try:
        assert started.wait(30)
        with pytest.raises(export.ExportError, match="another export is writing") as info:
            export.export_all(_export_source(1), out, formats=("csv",))
        assert "\n" not in str(info.value)
    finally:
        release.set()
        thread.join(60)
    assert not errors and out.is_dir() and any(out.glob("*.csv"))


def test_export_refuses_a_folder_of_other_files(tmp_path) -> None:
    from blockscope.profiling.views import export

    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(export.ExportError, match="holds files that are not an export.*notes.txt"):
        export.export_all(_export_source(0), tmp_path, formats=("csv",))
    assert (tmp_path / "notes.txt").read_text() == "mine"


# ---------------------------------------------------------------- 13: temporary files of killed runs


def _dead_pid() -> int:
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_stale_results_temp_of_a_dead_writer_is_reclaimed(tmp_path) -> None:
    import os

    out = tmp_path / "sweep.parquet"
    stale = tmp_path / f".sweep.parquet.{_dead_pid()}.0badf00d.tmp"
    stale.write_bytes(b"x" * 1024)
    live = tmp_path / f".sweep.parquet.{os.getppid()}.0badf00d.tmp"  # a live writer's file stays
    live.write_bytes(b"y")
    other = tmp_path / ".notes.123.tmp"
    other.write_bytes(b"z")
    save_results(_export_source(0), out)
    assert out.exists() and not stale.exists() and live.exists() and other.exists()


def test_scratch_reclaims_dead_folders_only(tmp_path) -> None:
    import os

    from blockscope import scratch

    dead = tmp_path / f"blockscope-x-{_dead_pid()}-abc"
    (dead / "sub").mkdir(parents=True)
    (dead / "sub" / "big.bin").write_bytes(b"0" * 4096)
    alive = tmp_path / f"blockscope-x-{os.getppid()}-abc"
    alive.mkdir()
    mine = scratch.make_dir(tmp_path, "blockscope-x-")
    assert not dead.exists() and alive.exists() and mine.is_dir()
    assert mine.name.startswith(f"blockscope-x-{os.getpid()}-") and (mine.stat().st_mode & 0o777) == 0o700
    target = tmp_path / "keep"
    target.mkdir()
    (tmp_path / f"blockscope-x-{_dead_pid()}-link").symlink_to(target)
    scratch.reclaim_stale(tmp_path, "blockscope-x-")
    assert target.is_dir(), "a stale symlink is removed without following it"


# ---------------------------------------------------------------- 18: the ptxas that can read Triton's PTX

PTX_90 = ".version {version}\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{{\n ret;\n}}\n"
STALE_PTXAS = """#!/bin/sh
case "$1" in --version) echo "Cuda compilation tools, release 12.8, V12.8.93"; exit 0;; esac
echo "ptxas fatal   : Unsupported .version 9.0; current version is '8.7'" >&2
exit 255
"""


def _stale_ptxas(folder) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "ptxas"
    script.write_text(STALE_PTXAS)
    script.chmod(0o755)
    return str(script)


@pytest.mark.parametrize("version", ["8.0", "8.7", "9.0"])
def test_ptxas_usage_picks_a_ptxas_that_reads_the_ptx_version(tmp_path, monkeypatch, version: str) -> None:
    import os

    from blockscope.profiling.inspect import compiled

    stale = _stale_ptxas(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("TRITON_PTXAS_PATH", stale)  # e.g. a system CUDA 12.8 named by the environment
    usage = compiled.ptxas_usage(PTX_90.format(version=version), 90)
    assert usage["spill_store_bytes"] == 0 and usage["n_regs"] >= 0
    chosen = compiled.ptxas_for_ptx(PTX_90.format(version=version), 90)
    assert chosen != stale and "backends" in chosen, chosen


def test_ptx_isa_to_cuda_release() -> None:
    from blockscope.profiling.inspect.compiled import ptx_needs_cuda

    assert ptx_needs_cuda(".version 8.7\n") == (12, 8)
    assert ptx_needs_cuda("// c\n.version 9.0\n") == (13, 0)
    assert ptx_needs_cuda(".version 8.4\n") == (12, 4)
    assert ptx_needs_cuda(".version 7.8\n") == (11, 8)
    assert ptx_needs_cuda("no version") is None


def test_ptxas_usage_names_every_ptxas_tried_when_none_reads_it(tmp_path, monkeypatch) -> None:
    from blockscope.profiling.inspect import compiled

    stale = _stale_ptxas(tmp_path / "bin")
    monkeypatch.setattr(compiled, "_ptxas_candidates", lambda capability: [stale])
    with pytest.raises(RuntimeError, match="Unsupported .version 9.0.*tried.*bin/ptxas"):
        compiled.ptxas_usage(PTX_90.format(version="9.0"), 90)


# ---------------------------------------------------------------- 15: peer wheels' private folder


def _peer_path(tmp_path, *extra_env: str) -> dict[str, str]:
    import subprocess

    script = 'source tools/peer_wheels.sh path >/dev/null && printf \'%s\\n%s\\n\' "$PYTHONPATH" "$PEERS_DIR"'
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path / "tmp")}
    env.update(item.split("=", 1) for item in extra_env)
    (tmp_path / "tmp").mkdir(exist_ok=True)
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    pythonpath, folder = done.stdout.splitlines()[:2]
    return {"PYTHONPATH": pythonpath, "PEERS_DIR": folder}


def test_peer_wheels_uses_a_private_folder_that_later_calls_find(tmp_path) -> None:
    import os
    import stat

    first = _peer_path(tmp_path)
    folder = first["PEERS_DIR"]
    assert not first["PYTHONPATH"].startswith("/tmp/blockscope-peers/")  # the old fixed path
    assert folder.startswith(str(tmp_path / "tmp")) and first["PYTHONPATH"].startswith(f"{folder}/site:")
    info = os.lstat(folder)
    assert stat.S_ISDIR(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == os.getuid()
    assert _peer_path(tmp_path)["PEERS_DIR"] == folder  # stage, more and finish are separate calls


def test_peer_wheels_refuses_a_remembered_folder_it_does_not_control(tmp_path) -> None:
    import os

    pointer = tmp_path / "home" / ".cache" / "blockscope" / "peers-dir"
    pointer.parent.mkdir(parents=True)
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o777)
    pointer.write_text(f"{shared}\n")
    chosen = _peer_path(tmp_path)["PEERS_DIR"]
    assert chosen != str(shared) and (os.stat(chosen).st_mode & 0o777) == 0o700
    link = tmp_path / "link"
    link.symlink_to(chosen)
    pointer.write_text(f"{link}\n")
    assert _peer_path(tmp_path)["PEERS_DIR"] != str(link)


# ---------------------------------------------------------------- 4: a sweep on a full disk; the page's inputs


def test_sweep_on_a_full_disk_keeps_its_rows_elsewhere_and_says_where(tmp_path, monkeypatch, capsys) -> None:
    import errno

    from blockscope.profiling.measure import sweep
    from blockscope.profiling.results import load_results
    from tests.test_sweep_safety import run_cpu

    full = tmp_path / "full"
    full.mkdir()
    rescue = tmp_path / "rescue"
    monkeypatch.setattr(sweep, "RESCUE_DIRS", lambda: [full, rescue])
    real_save = sweep.save_results

    def save(df, path):
        if Path(path).parent == full:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real_save(df, path)

    monkeypatch.setattr(sweep, "save_results", save)
    out = full / "sweep.parquet"
    table = run_cpu([sweep.make_config("torch", "fp32", 4, n) for n in (8, 16, 24)], out=out)
    saved_to = Path(table.attrs["sweep"]["saved_to"])
    assert saved_to.parent == rescue and saved_to.name.startswith("sweep.rescued-") and saved_to.suffix == ".parquet"
    assert len(load_results(saved_to)) == len(table) == 3 and not out.exists()
    lines = [line for line in capsys.readouterr().err.splitlines() if "No space left" in line]
    assert len(lines) == 1 and str(saved_to) in lines[0] and str(out) in lines[0]


def test_sweep_save_names_every_place_tried_when_no_disk_has_room(tmp_path, monkeypatch) -> None:
    import errno

    from blockscope.profiling.measure import sweep

    monkeypatch.setattr(sweep, "RESCUE_DIRS", lambda: [tmp_path / "other"])

    def full(df, path):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(sweep, "save_results", full)
    with pytest.raises(sweep.SweepSaveError, match=r"no room.*sweep.parquet \(No space left.*other.*No space left"):
        sweep.save_or_rescue(synthetic_results(n_values=(256,), dtypes=("fp16",)), tmp_path / "sweep.parquet")


def test_other_save_errors_are_not_rescued(tmp_path, monkeypatch) -> None:
    import errno

    from blockscope.profiling.measure import sweep

    def denied(df, path):
        raise OSError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(sweep, "save_results", denied)
    with pytest.raises(PermissionError):
        sweep.save_or_rescue(synthetic_results(n_values=(256,), dtypes=("fp16",)), tmp_path / "sweep.parquet")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_values": [0, 256]}, r"n_values.*0.*allowed: integers >= 1"),
        ({"n_values": [-5]}, r"n_values.*-5"),
        ({"n_rows": 0}, r"n_rows.*0.*allowed: integers >= 1"),
        ({"num_warps": [3]}, r"num_warps.*3.*allowed: 1, 2, 4, 8, 16, 32"),
    ],
)
def test_build_configs_refuses_sizes_a_save_would_drop(kwargs, match) -> None:
    from blockscope.profiling.measure import sweep

    with pytest.raises(ValueError, match=match):
        sweep.build_configs(variants=["torch"], dtypes=["fp16"], **{"n_values": [256], **kwargs})


@pytest.mark.parametrize(
    ("text", "match"),
    [("0, 256", "0 is out of range; allowed: integers from 1 to"), ("256, x", "'x' is not an integer")],
)
def test_run_sweep_page_validates_n_as_the_cli_does(text: str, match: str, monkeypatch) -> None:
    pytest.importorskip("streamlit")
    from blockscope.pages import _common as ui
    from tests.test_app import new_app

    monkeypatch.setattr(ui, "cuda_available", lambda: True)  # the page's inputs, as on a GPU machine
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "NVIDIA H200 (fake)")

    at = new_app()
    at.switch_page("pages/run_sweep.py").run()
    at.text_input(key="sw_n").set_value(text).run()
    assert not at.exception, at.exception
    errors = [plain(e.value) for e in at.error]
    assert errors and match in errors[0] and "allowed" in errors[0], errors
    assert not [m.value for m in at.markdown if "configs**" in m.value]


# ---------------------------------------------------------------- 17: capture-unsafe backends are not captured


@pytest.mark.parametrize("reps", [None, 64])
def test_cuda_graph_without_capture_times_eager_batches(reps) -> None:
    from blockscope.profiling.measure import timing

    clock = timing.FakeClock(tick_us=0.0, wall_tick_s=0.001)
    captured: list[int] = []
    clock.capture_graph = lambda fn, calls: captured.append(calls) or (lambda: None)  # must not be called
    calls: list[int] = []

    def fn() -> None:
        calls.append(1)
        clock.advance(3.0)

    stats = timing.benchmark(fn, "cuda_graph", reps=reps, warmup=0, clock=clock, graph_calls=8, capture=False)
    assert not captured, "a capture-unsafe callable was captured"
    assert stats.method == "cuda_graph" and stats.median_us == pytest.approx(3.0)
    assert stats.reps % 8 == 0 and len(calls) >= stats.reps


def test_capture_decision_per_backend_and_direction() -> None:
    from blockscope.profiling.measure import sweep
    from blockscope.profiling.measure.backends import get_backend

    assert "backward" in get_backend("quack").capture_unsafe_directions
    unsafe = sweep.capture_unsafe_reason(sweep.make_config("quack", "fp16", 4, 256, direction="backward"))
    assert unsafe and "quack" in unsafe and "cudaErrorStreamCaptureImplicit" in unsafe
    assert sweep.capture_unsafe_reason(sweep.make_config("quack", "fp16", 4, 256)) is None
    assert sweep.capture_unsafe_reason(sweep.make_config("teaching", "fp16", 4, 256, direction="backward")) is None
    assert sweep.capture_unsafe_reason(sweep.make_config("torch", "fp16", 4, 256)) is None


def test_sweep_times_a_capture_unsafe_config_without_a_graph_and_says_so(monkeypatch) -> None:
    from blockscope.profiling.measure import sweep, timing
    from tests.test_sweep_safety import run_cpu

    monkeypatch.setattr(sweep, "capture_unsafe_reason", lambda config: "fake: capture poisons the process")
    real = timing.benchmark
    seen: list[tuple[str, bool]] = []

    def spy(fn, method, **kw):
        seen.append((method, kw.get("capture", True)))
        return real(fn, method, **kw)

    monkeypatch.setattr(timing, "benchmark", spy)
    table = run_cpu([sweep.make_config("torch", "fp32", 4, 8)], methods=["per_call_events", "cuda_graph"])
    assert ("cuda_graph", False) in seen and ("per_call_events", True) in seen
    graph = table[table["method"] == "cuda_graph"].iloc[0]
    assert graph["error"] in ("", None) or pd.isna(graph["error"])
    assert "not captured" in graph["timing_note"] and "fake: capture poisons" in graph["timing_note"]
    assert pd.isna(table[table["method"] == "per_call_events"].iloc[0]["timing_note"])


@pytest.mark.gpu
def test_quack_backward_sweep_leaves_the_process_usable() -> None:
    pytest.importorskip("quack.softmax")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from blockscope.profiling.measure import sweep

    configs = [sweep.make_config("quack", "fp16", 256, 1024, direction="backward")]
    table = sweep.run_sweep(configs, methods=["cuda_graph"], trace=False, compile_workers=0)
    row = table.iloc[0]
    assert not row["error"], row["error"]
    assert "not captured" in row["timing_note"]
    graph = torch.cuda.CUDAGraph()  # the process can still capture
    x = torch.randn(4, 8, device="cuda")
    with torch.cuda.graph(graph):
        x.mul_(2)
    graph.replay()
    torch.cuda.synchronize()


@pytest.mark.gpu
def test_live_inspection_knows_spill_bytes_in_process_and_in_a_worker(recwarn) -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    importlib.import_module("torch._inductor.codecache")  # Inductor may point TRITON_PTXAS_PATH at torch's ptxas

    from blockscope.profiling.inspect.compiled import inspect

    here = inspect("teaching", 1000, "fp16", num_warps=4)
    worker = inspect("teaching", 1000, "fp16", num_warps=4, timeout_s=120)
    assert here.spill_store_bytes is not None and worker.spill_store_bytes is not None
    assert not [w for w in recwarn if "spill bytes unknown" in str(w.message)]


def test_chrome_trace_is_written_whole_and_a_dead_writers_partial_is_reclaimed(tmp_path, monkeypatch) -> None:
    import json

    from blockscope.profiling.measure import trace

    path = tmp_path / "traces" / "torch_fp32_R4_N8.json"
    path.parent.mkdir()
    stale = path.parent / f".{path.name}.{_dead_pid()}.00ff00ff.tmp"
    stale.write_bytes(b"{" * 4096)  # a killed run's half-written trace
    trace.trace_kernels(lambda: torch.softmax(torch.randn(4, 8), -1), export_path=path)
    assert "traceEvents" in json.loads(path.read_text())
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_backward_bench_does_not_capture_a_capture_unsafe_peer(monkeypatch) -> None:
    from blockscope.profiling.measure import backends, bench, timing

    monkeypatch.setattr(backends, "unsupported_reason", lambda *a, **k: None)
    monkeypatch.setattr(
        bench,
        "direction_callable",
        lambda direction, backend, tunables, x, inputs: lambda: torch.softmax(x.float(), -1).to(x.dtype),
    )
    monkeypatch.setattr(bench, "check_direction", lambda *a: (None, 0.0))
    seen: dict[str, bool] = {}
    order = iter(["quack", "torch", "auto"])

    def fake_benchmark(fn, method, capture=True):
        seen[next(order)] = capture
        return timing.summarize(method, [5.0, 5.0, 5.0], 0.0, 3)

    row = bench.bench_backward_shape(
        "offgrid", 4, 8, torch.float32, 100.0, "cuda_graph", "backward", fake_benchmark, "cpu", ("quack",)
    )
    assert seen == {"quack": False, "torch": True, "auto": True}
    assert "quack not captured" in row["timing_note"] and row["quack_us"] == 5.0 and not row["quack_error"]
