"""An output path that names a FIFO (or its lock file does) is refused by name, one line, never opened: the CLI must
not block waiting for a reader (docs/trust.md, issue 34). Each command runs in a subprocess under a timeout, so a
regression fails instead of hanging the suite."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from blockscope.demo import synthetic_results
from blockscope.profiling.results import save_results

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 120


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""}
    try:
        return subprocess.run(
            [sys.executable, "-m", "profiling", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"`profiling {' '.join(args)}` hung on a FIFO for {TIMEOUT_S} s")


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fifo") / "run.parquet"
    save_results(synthetic_results(n_values=(256, 1024), dtypes=("fp16",)), path)
    return path


def assert_refused(done: subprocess.CompletedProcess, *expected: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert any(all(e in line for e in expected) for line in lines), done.stderr[-2000:]


@pytest.mark.parametrize(
    "command",
    [
        ["sweep", "--variants", "torch", "--dtypes", "fp16", "--n", "256"],
        ["merge", "{results}"],
        ["drift", "{results}", "{results}"],
        ["numerics", "--dtypes", "fp16"],
        ["ncu-import", str(ROOT / "tests" / "fixtures" / "ncu_raw.csv")],
    ],
    ids=lambda c: c[0],
)
@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_out_naming_a_fifo_is_refused_without_blocking(
    tmp_path: Path, results: Path, command: list[str], suffix: str
) -> None:
    out = fifo(tmp_path / f"out{suffix}")
    args = [part.format(results=results) for part in command]
    done = cli(*args, "--out", str(out))
    assert_refused(done, "--out", "is a FIFO", "allowed: a regular file")
    assert out.is_fifo()


def test_a_symlink_to_a_fifo_is_refused(tmp_path: Path, results: Path) -> None:
    target = fifo(tmp_path / "pipe")
    link = tmp_path / "table.csv"
    link.symlink_to(target)
    assert_refused(cli("drift", str(results), str(results), "--out", str(link)), "is a FIFO")


def test_sweep_whose_lock_file_is_a_fifo_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "sweep.parquet"
    fifo(tmp_path / "sweep.parquet.lock")
    done = cli("sweep", "--variants", "torch", "--dtypes", "fp16", "--n", "256", "--out", str(out))
    assert_refused(done, "lock file", "is a FIFO")
    assert not out.exists()


@pytest.mark.parametrize("flag", ["--markdown", "--csv"])
def test_bench_outputs_naming_a_fifo_are_refused_before_measuring(tmp_path: Path, flag: str) -> None:
    out = fifo(tmp_path / "bench.out")
    assert_refused(cli("bench", flag, str(out)), flag, "is a FIFO")


def test_export_into_a_fifo_is_refused(tmp_path: Path, results: Path) -> None:
    out = fifo(tmp_path / "report")
    done = cli("export", "--results", str(results), "--out", str(out), "--format", "csv")
    assert_refused(done, "not a directory")
    assert out.is_fifo()
