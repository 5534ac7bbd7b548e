"""Repeat drift between two runs: pairing, the 20 us floor, the summary and the CLI."""

from __future__ import annotations

import pandas as pd
import pytest

from blockscope.profiling.cli.main import main
from blockscope.profiling.results import drift, normalize, save_results


def table(medians: dict[tuple[str, int, str], float], errors: tuple = ()) -> pd.DataFrame:
    rows = [
        {
            "variant": v,
            "dtype": "fp16",
            "n_rows": 4096,
            "n_cols": n,
            "tunables": "{}",
            "method": m,
            "median_us": us,
            "min_us": us,
            "max_us": us,
            "p20_us": us,
            "p80_us": us,
            "error": "boom" if (v, n, m) in errors else "",
        }
        for (v, n, m), us in medians.items()
    ]
    return normalize(pd.DataFrame(rows))


FIRST = {
    ("teaching", 1000, "cuda_graph"): 100.0,
    ("teaching", 65536, "cuda_graph"): 400.0,
    ("torch", 1000, "cuda_graph"): 10.0,
    ("online", 4096, "cuda_graph"): 50.0,
}
SECOND = {
    ("teaching", 1000, "cuda_graph"): 102.0,
    ("teaching", 65536, "cuda_graph"): 360.0,
    ("torch", 1000, "cuda_graph"): 30.0,
    ("online", 4096, "cuda_graph"): 50.0,
}


def test_drift_pairs_configs_over_the_floor():
    result = drift.repeat_drift(table(FIRST), table(SECOND, errors=(("online", 4096, "cuda_graph"),)))
    assert list(result["n_cols"]) == [65536, 1000]  # torch under 20 us and the errored online row are left out
    assert list(result["drift"]) == [pytest.approx(-0.10), pytest.approx(0.02)]
    summary = drift.drift_summary(result)
    assert (summary["configs"], summary["within"], summary["share_within"]) == (2, 1, 0.5)
    assert summary["max_abs"] == pytest.approx(0.10)
    lines = drift.drift_lines(result)
    assert lines[0].startswith("repeat drift (configs >= 20 us): 1/2 within 3%")
    assert lines[1] == "  cuda_graph: 1/2 within 3%, median |drift| 6.00%"
    assert lines[2] == "  teaching fp16 R=4096 N=65536 {} cuda_graph: 400.00 -> 360.00 us (-10.00%)"
    assert drift.drift_lines(drift.repeat_drift(table(FIRST), table({})))[0].startswith("repeat drift: no config")
    with pytest.raises(ValueError, match="allowed: a number >= 0"):
        drift.repeat_drift(table(FIRST), table(SECOND), min_us=-1)


def test_drift_command_prints_the_summary(tmp_path, capsys):
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    save_results(table(FIRST), a)
    save_results(table(SECOND), b)
    assert main(["drift", str(a), str(b), "--out", str(tmp_path / "drift.csv")]) == 0
    out = capsys.readouterr().out
    assert "2/3 within 3%" in out and (tmp_path / "drift.csv").exists()  # the online row ran in both files here
    assert main(["drift", str(a), str(tmp_path / "missing.parquet")]) == 2
    assert "missing.parquet" in capsys.readouterr().err


def test_capture_script_runs_two_sweeps_and_compares_the_second(tmp_path, monkeypatch):
    import importlib.util
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("capture_default_sweep", root / "tools/capture_default_sweep.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    commands = []

    def fake_run(command, **kwargs):
        commands.append((command, kwargs["env"]))
        return subprocess.CompletedProcess(command, 0, stdout="done: 3 configs run\n")

    monkeypatch.setattr(script.subprocess, "run", fake_run)
    assert script.main(["--out", str(tmp_path), "--", "--dtypes", "fp16"]) == 0
    (first, env), (second, _) = commands
    assert first[:4] == [sys.executable, "-m", "profiling", "sweep"] and "--dtypes" in first
    assert second[-2:] == ["--compare-with", str(tmp_path / "default_run1.parquet")]
    assert env["TRITON_CACHE_DIR"] == str(tmp_path / "caches" / "triton")
    log = (tmp_path / "capture_default_sweep.log").read_text()
    assert "run 1:" in log and "run 2:" in log and "done: 3 configs run" in log
