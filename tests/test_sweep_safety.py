"""Sweep rows survive SIGTERM/SIGHUP, concurrent writers and crashes: per-writer fsynced temporary files in
save_results, an exclusive lock on the output file, and the CLI saving on signals like Ctrl-C.

The CLI sweep runs in a subprocess on the CPU with an injected fake clock (as tests/test_sweep.py does in process).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from blockscope.profiling import results
from blockscope.profiling.cli import measure as cli_measure
from blockscope.profiling.measure import sweep
from blockscope.profiling.measure.sweep import ResultsLockError, make_config, run_sweep
from blockscope.profiling.measure.timing import FakeClock
from blockscope.profiling.results import load_results, save_results

ROOT = Path(__file__).resolve().parents[1]
ENV = {
    "run_id": "safety",
    "gpu_name": "none",
    "compute_capability": "none",
    "sm_count": None,
    "driver_version": "none",
    "torch_version": torch.__version__,
    "triton_version": "3.x",
    "copy_gbps": 100.0,
    "measured_at": "2026-12-01T00:00:00+00:00",
}
N_VALUES = [8, 16, 24, 32, 40, 48, 56, 64, 72, 80]


def run_cpu(configs, **kw):
    options = dict(
        device="cpu",
        env=ENV,
        warmup=0,
        reps=2,
        graph_calls=2,
        trace=False,
        clock=FakeClock(tick_us=5.0, wall_tick_s=0.25),
        compile_facts=lambda config, plan, arch: {},
        methods=["per_call_events"],
    )
    return run_sweep(configs, **{**options, **kw})


def table_of(n_values) -> object:
    return run_cpu([make_config("torch", "fp32", 4, n) for n in n_values])


def test_save_results_uses_a_fresh_fsynced_temporary_per_writer(tmp_path, monkeypatch):
    """Two writers of one file used to share '.name.tmp': the second rename found nothing and a writer's rows were
    lost. Here writer B saves while writer A is between writing its temporary file and renaming it."""
    out = tmp_path / "run.parquet"
    first, second = table_of([8]), table_of([8, 16])
    real_replace, real_fsync = os.replace, os.fsync
    renamed, synced = [], []

    def replace(src, dst):
        renamed.append(Path(src).name)
        if len(renamed) == 1:
            save_results(second, out)  # writer B, in between
        real_replace(src, dst)

    def fsync(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(results.os, "replace", replace)
    monkeypatch.setattr(results.os, "fsync", fsync)
    save_results(first, out)
    assert len(renamed) == 2 and renamed[0] != renamed[1]
    assert all(name.startswith(f".run.parquet.{os.getpid()}.") and name.endswith(".tmp") for name in renamed)
    assert len(load_results(out)) == 1  # A renamed last
    # each temporary file is fsynced before its rename, the directory after it
    assert [Path(p).name for p in synced] == [renamed[0], renamed[1], tmp_path.name, tmp_path.name]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.parquet"]


def test_a_failed_save_leaves_no_temporary_file_and_the_old_file(tmp_path, monkeypatch):
    out = tmp_path / "run.csv"
    save_results(table_of([8]), out)
    before = out.read_bytes()

    def broken(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(results.os, "replace", broken)
    with pytest.raises(OSError, match="No space left"):
        save_results(table_of([8, 16]), out)
    assert out.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["run.csv"]


def test_a_second_writer_gets_the_lock_error(tmp_path):
    out = tmp_path / "locked.parquet"
    with sweep.results_lock(out) as lock:
        assert lock == tmp_path / "locked.parquet.lock" and lock.exists()
        with pytest.raises(
            ResultsLockError,
            match=rf"locked.parquet is being written by another sweep \(pid "
            rf"{os.getpid()} on .*, started 20.*allowed: one sweep per output",
        ):
            run_cpu([make_config("torch", "fp32", 4, 8)], out=out)
        assert not out.exists()
    assert not lock.exists()  # released and removed
    assert len(run_cpu([make_config("torch", "fp32", 4, 8)], out=out)) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["locked.parquet"]


CLI_ON_CPU = r"""
import sys
import time
from collections.abc import Callable
import time

from blockscope.profiling.cli import main as entry
from blockscope.profiling.measure import sweep
from blockscope.profiling.cli import measure as cli_measure
from blockscope.profiling.measure.timing import FakeClock

ENV = ENV_REPR
cli_measure.require_cuda = lambda command: None
real_run_sweep = sweep.run_sweep


def on_cpu(configs, *, progress, **kwargs):
    def slow(done, total, config):
        progress(done, total, config)
        print(f"done {done}", flush=True)
        time.sleep(1.0)

    kwargs.update(device="cpu", clock=FakeClock(tick_us=5.0, wall_tick_s=0.25), env=ENV, reps=2, warmup=0,
                  trace=False, compile_facts=lambda config, plan, arch: {})
    return real_run_sweep(configs, progress=slow, **kwargs)


sweep.run_sweep = on_cpu
sys.exit(entry.main(sys.argv[1:]))
""".replace("ENV_REPR", repr(ENV))


def cli_args(out: Path) -> list[str]:
    return [
        "sweep",
        "--out",
        str(out),
        "--variants",
        "torch",
        "--dtypes",
        "fp32",
        "--rows",
        "4",
        "--n",
        ",".join(map(str, N_VALUES)),
        "--methods",
        "per_call_events",
        "--no-trace",
    ]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_signal_mid_sweep_saves_the_rows_done_and_a_second_writer_is_refused(tmp_path, signum, monkeypatch, capsys):
    """SIGTERM/SIGHUP after a few configs used to leave no file at all (only Ctrl-C and the 20 s timer saved)."""
    out = tmp_path / "sweep.parquet"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    child = subprocess.Popen(
        [sys.executable, "-c", CLI_ON_CPU, *cli_args(out)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for line in child.stdout:
            if line.startswith("done 3"):
                break
        assert child.poll() is None, child.stderr.read()[-2000:]
        # a second writer while the child holds the lock: refused, naming the holder
        with pytest.raises(ResultsLockError, match=f"pid {child.pid} on "):
            run_cpu([make_config("torch", "fp32", 4, 8)], out=out)
        from blockscope.profiling.cli import main as entry

        monkeypatch.setattr(entry, "COMMAND_MODULES", ("blockscope.profiling.cli.measure",))
        monkeypatch.setattr(cli_measure, "require_cuda", lambda command: None)
        monkeypatch.setattr(
            sweep,
            "run_sweep",
            lambda configs, **kw: run_cpu(
                configs, **{k: v for k, v in kw.items() if k in ("out", "progress", "cancel", "retry_errors")}
            ),
        )
        assert entry.main(cli_args(out)) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1].startswith("blockscope sweep: error: ") and f"(pid {child.pid} on " in err[-1]
        child.send_signal(signum)
        _, stderr = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 128 + signum, stderr[-2000:]
    assert f"stopped by {signal.Signals(signum).name}: the rows measured so far are saved in {out}" in stderr
    saved = load_results(out)
    assert 3 <= len(saved) < len(N_VALUES) and (saved["error"] == "").all()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.parquet"]  # no temporary or lock file left
    resumed = run_cpu([make_config("torch", "fp32", 4, n) for n in N_VALUES], out=out)
    assert resumed.attrs["sweep"]["skipped_existing"] == len(saved) and len(resumed) == len(N_VALUES)


def test_save_on_signals_restores_the_handlers():
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    with pytest.raises(cli_measure.Stopped) as stopped:
        with cli_measure.save_on_signals():
            assert signal.getsignal(signal.SIGTERM) is not before[signal.SIGTERM]
            os.kill(os.getpid(), signal.SIGTERM)  # the handler runs in this thread before kill returns to Python
    assert stopped.value.signum == signal.SIGTERM and isinstance(stopped.value, KeyboardInterrupt)
    assert {s: signal.getsignal(s) for s in before} == before


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_signal_whose_stop_is_dropped_is_still_reported():
    """Python runs the handler wherever the main thread is; raised inside __del__ (or a weakref callback, as on the
    H200 under torch._dynamo) the Stopped is printed and dropped, so the sweep polls what the block yields."""

    class SignalsInDel:
        def __del__(self) -> None:
            os.kill(os.getpid(), signal.SIGTERM)  # the handler runs here: its Stopped cannot leave __del__

    with cli_measure.save_on_signals() as signalled:
        assert signalled() is None
        holder = SignalsInDel()
        del holder  # no exception reaches this frame
        assert signalled() == signal.SIGTERM


def test_sweep_cancel_stops_on_a_dropped_signal_or_past_the_deadline():
    """Both sweep commands poll one cancel: a signal whose Stopped was dropped, or --max-minutes passed."""
    never: Callable[[], int | None] = lambda: None  # noqa: E731
    assert not cli_measure.sweep_cancel(never, None)()
    assert not cli_measure.sweep_cancel(never, time.monotonic() + 3600)()
    assert cli_measure.sweep_cancel(never, time.monotonic() - 1)()
    assert cli_measure.sweep_cancel(lambda: signal.SIGTERM, None)()
    fired: list[int] = []
    cancel = cli_measure.sweep_cancel(lambda: fired[0] if fired else None, time.monotonic() + 3600)
    assert not cancel()
    fired.append(signal.SIGHUP)
    assert cancel(), "a signal after the cancel was made still stops the sweep"


def test_sweep_max_minutes_cancels_through_the_shared_poll(tmp_path, monkeypatch, capsys):
    """sweep --max-minutes hands run_sweep the sweep_cancel poll: past the deadline it stops cleanly."""
    from blockscope.profiling.cli import main as entry

    made: list[float | None] = []
    real = cli_measure.sweep_cancel

    def spy(signalled: Callable[[], int | None], deadline: float | None) -> Callable[[], bool]:
        made.append(deadline)
        return real(signalled, None if deadline is None else deadline - 3600)  # the deadline is already past

    monkeypatch.setattr(entry, "COMMAND_MODULES", ("blockscope.profiling.cli.measure",))
    monkeypatch.setattr(cli_measure, "require_cuda", lambda command: None)
    monkeypatch.setattr(cli_measure, "sweep_cancel", spy)
    monkeypatch.setattr(
        sweep,
        "run_sweep",
        lambda configs, **kw: run_cpu(
            configs, **{k: v for k, v in kw.items() if k in ("out", "progress", "cancel", "retry_errors")}
        ),
    )
    out = tmp_path / "sweep.parquet"
    assert entry.main([*cli_args(out), "--max-minutes", "60"]) == 0
    assert len(made) == 1 and made[0] is not None
    assert capsys.readouterr().out.startswith("stopped at --max-minutes"), "cancelled before the first config"
