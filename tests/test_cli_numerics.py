"""`python -m profiling numerics` on small shapes (CPU interpreter here): table, JSON, results file, bad input."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from blockscope.profiling.cli.main import main
from blockscope.profiling.cli.numerics import json_record, table_lines
from blockscope.profiling.inspect.numerics import CPU_MAX_N, NUMERICS_COLUMNS, run_numerics
from blockscope.profiling.results import load_results

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["--dtypes", "fp16,fp32", "--n", "16,33", "--rows", "4"]  # R=4: a special row with a defined reference


def run_cli(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = main(["numerics", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_table_and_results_file(capsys, tmp_path):
    out_file = tmp_path / "numerics.parquet"
    code, out, _ = run_cli(
        capsys, "--variants", "torch,teaching", *SMALL, "--inputs", "normal,special", "--out", str(out_file)
    )
    assert code == 0
    lines = out.splitlines()
    where = "CPU Triton interpreter" if not torch.cuda.is_available() else torch.cuda.get_device_name()
    assert lines[0].endswith(f"on {where}") and "R=4" in lines[0]
    assert lines[1].split()[:6] == ["variant", "dtype", "N", "input", "max", "ULP"]
    body = [line for line in lines[2:] if not line.startswith("wrote")]
    assert len(body) == 2 * 2 * 2 * 2, body
    assert all("error" not in line for line in body), body
    assert any(line.split()[:4] == ["teaching", "fp32", "33", "special"] for line in body)
    assert all("torch" in line for line in body if " special " in line), "special rows compare with torch"
    assert lines[-1] == f"wrote 16 rows to {out_file}"

    table = load_results(out_file)
    assert len(table) == 16 and set(table["method"]) == {"none"} and set(table["error"]) == {""}
    assert table[list(NUMERICS_COLUMNS)].notna().all().all(), "every numerics column is filled"
    assert set(table["numerics_input"]) == {"normal", "special"} and set(table["n_rows"]) == {4}
    assert table["run_id"].nunique() == 1 and table["torch_version"].iloc[0] == torch.__version__
    if not torch.cuda.is_available():
        assert set(table["gpu_name"]) == {"none"}
    fractions = table["ulp_frac_0"] + table["ulp_frac_1"] + table["ulp_frac_gt1"]
    assert (fractions - 1).abs().max() < 1e-12
    assert (table["ulp_max"] >= table["ulp_mean"]).all()


def test_json_lines_and_csv(capsys, tmp_path):
    code, out, err = run_cli(
        capsys,
        "--variants",
        "torch",
        "--dtypes",
        "bf16",
        "--n",
        "8",
        "--rows",
        "2",
        "--inputs",
        "dominant",
        "--json",
        "--out",
        str(tmp_path / "n.csv"),
    )
    assert code == 0 and err == ""
    records = [json.loads(line) for line in out.splitlines()]  # torch only: no interpreter bf16 note either
    assert len(records) == 1
    record = records[0]
    assert (record["variant"], record["dtype"], record["n_cols"], record["numerics_input"]) == (
        "torch",
        "bf16",
        8,
        "dominant",
    )
    assert {
        "ulp_max",
        "ulp_mean",
        "frac_0",
        "rowsum_err_max",
        "worst_row",
        "worst_col",
        "nan_mismatches",
        "device",
    } <= set(record)
    assert load_results(tmp_path / "n.csv")["numerics_input"].tolist() == ["dominant"]


def test_json_record_encodes_inf_and_nan():
    result = run_numerics(["torch"], ["fp32"], [4], 2, ["normal"])[0]
    result.summary.ulp_max, result.summary.rowsum_err_max = math.inf, math.nan
    record = json_record(result)
    assert record["ulp_max"] == "inf" and record["rowsum_err_max"] is None
    json.dumps(record, allow_nan=False)


def test_failures_are_rows_not_crashes():
    results = run_numerics(["torch", "teaching"], ["fp32"], [70000], 1, ["normal"], device="cpu")
    lines = table_lines(results)
    assert "error" not in lines[1]
    assert "error: ValueError: teaching does not support [1, 70000]" in lines[2], lines
    assert "over teaching's limit of 65536" in lines[2]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--variants", "torch,nope"], "unknown variant(s) nope; allowed: torch, inductor, liger, quack, teaching"),
        (["--dtypes", "fp8"], "unknown dtype(s) fp8; allowed: fp16, bf16, fp32"),
        (["--inputs", "normal,gaussian"], "unknown input distribution(s) gaussian; allowed: normal, scale10"),
        (["--variants", ""], "--variants is empty; allowed: a comma-separated list"),
        (["--out", "x.json"], "unsupported suffix '.json'; allowed: .parquet or .csv"),
    ],
)
def test_bad_arguments_are_one_line_errors(capsys, argv, message):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_parser_rejects_bad_numbers(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["numerics", "--n", "128,zero"])
    assert stop.value.code == 2
    assert "'zero' is not an integer; allowed: integers from 1 to 2,147,483,647" in capsys.readouterr().err


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU cap applies without a GPU")
def test_n_over_the_cpu_cap_is_refused(capsys):
    code, _, err = run_cli(capsys, "--variants", "torch", "--n", f"128,{CPU_MAX_N + 1}")
    assert code == 2
    assert (
        f"N={CPU_MAX_N + 1} is over the CPU interpreter's cap and there is no GPU; allowed without a GPU: "
        f"N <= {CPU_MAX_N}" in err
    )


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU interpreter switch")
def test_module_entry_sets_the_interpreter_itself(tmp_path):
    """A plain shell without TRITON_INTERPRET still runs the Triton kernels (on the interpreter)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "profiling",
            "numerics",
            "--variants",
            "teaching",
            "--dtypes",
            "fp32",
            "--n",
            "16",
            "--rows",
            "2",
            "--inputs",
            "near_uniform",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-800:]
    row = done.stdout.splitlines()[2].split()
    assert row[:4] == ["teaching", "fp32", "16", "near_uniform"], done.stdout


@pytest.mark.skipif(torch.cuda.is_available(), reason="the note is about the CPU interpreter")
def test_bf16_on_the_interpreter_prints_the_truncation_note(capsys):
    code, out, _ = run_cli(
        capsys, "--variants", "teaching", "--dtypes", "bf16", "--n", "8", "--rows", "2", "--inputs", "normal"
    )
    assert code == 0
    assert out.splitlines()[1].startswith("note: the Triton CPU interpreter converts float32 to bf16 by truncation")


# --- who beats torch, and the GPU capture script ----------------------------------------------------------------


def _rows(variant: str, values: list[tuple[int, str, float, float]], error: str = "") -> list[dict]:
    return [
        {
            "variant": variant,
            "dtype": "fp16",
            "n_rows": 64,
            "n_cols": n,
            "numerics_input": inp,
            "method": "none",
            "error": error,
            "ulp_max": mx,
            "ulp_mean": mean,
            "gpu_name": "NVIDIA H200",
        }
        for n, inp, mx, mean in values
    ]


def test_versus_torch_counts_config_by_config():
    import pandas as pd

    from blockscope.profiling.inspect.numerics import summary_lines, versus_torch

    table = pd.DataFrame(
        _rows("torch", [(128, "normal", 1, 0.1), (256, "normal", 2, 0.2), (512, "special", math.inf, 0.0)])
        + _rows("teaching", [(128, "normal", 1, 0.05), (256, "normal", 3, 0.2), (512, "special", math.inf, 0.0)])
        + _rows("online", [(128, "normal", 0, 0.0), (256, "normal", 2, 0.1)])
        + _rows("online", [(512, "special", 0, 0.0)], error="RuntimeError: boom")
    )
    verdicts = versus_torch(table).set_index("variant")
    teaching, online = verdicts.loc["teaching"], verdicts.loc["online"]
    assert (teaching.configs, teaching.ulp_max_beats, teaching.ulp_max_ties, teaching.ulp_max_loses) == (3, 0, 2, 1)
    assert (teaching.ulp_mean_beats, teaching.ulp_mean_ties, teaching.ulp_mean_loses) == (1, 2, 0)
    assert teaching.worst_loss == "N=256 normal: 3 vs torch 2 ULP" and not teaching.at_least_as_exact
    assert online.configs == 2 and online.at_least_as_exact and online.worst_loss == "", "error rows are left out"
    lines = summary_lines(table)
    assert lines[0].startswith("online      fp16  at least as exact as torch: max ULP beats/ties/loses 1/1/0")
    assert "LESS exact than torch somewhere" in lines[1] and lines[1].endswith("worst: N=256 normal: 3 vs torch 2 ULP")


def test_capture_script_dry_run_cpu_run_resume_and_summary(tmp_path):
    script = [sys.executable, "-m", "tools.capture_numerics"]
    out = tmp_path / "capture.parquet"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}

    def run(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*script, "--out", str(out), *argv], capture_output=True, text=True, cwd=ROOT, env=env, timeout=600
        )

    dry = run("--dry-run", "--device", "cpu")
    assert dry.returncode == 0, dry.stderr[-500:]
    assert "x 3 dtypes x 43 N x 6 inputs at R=64" in dry.stdout and not out.exists()
    first = run("--device", "cpu", "--n", "16", "--rows", "2", "--no-probes")
    assert first.returncode == 0, first.stderr[-800:]
    assert "complete: 162 measured" in first.stdout, first.stdout[-800:]
    assert "vs torch.softmax (same GPU, dtype, R, N, input):" in first.stdout
    table = load_results(out)
    assert len(table) == 9 * 3 * 6 and set(table["error"]) == {""}
    again = run("--device", "cpu", "--n", "16", "--rows", "2", "--no-probes")
    assert "complete: 0 measured" in again.stdout and len(load_results(out)) == len(table), "a rerun resumes"
    summary = run("--summary-only")
    assert summary.returncode == 0 and any(line.startswith("teaching    fp16") for line in summary.stdout.splitlines())
    if not torch.cuda.is_available():
        refused = run("--n", "16")
        assert refused.returncode == 2 and "no CUDA GPU here" in refused.stderr


@pytest.mark.gpu
def test_gpu_runs_any_n(capsys):
    code, out, _ = run_cli(
        capsys, "--variants", "torch,online", "--dtypes", "fp16", "--n", "262144", "--rows", "4", "--inputs", "normal"
    )
    rows = [line for line in out.splitlines() if " 262144 " in line]
    assert code == 0 and len(rows) == 2 and not any("error:" in line for line in rows), out
