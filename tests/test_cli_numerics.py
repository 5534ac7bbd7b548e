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

from profiling.__main__ import main
from profiling.cli_numerics import json_record, table_lines
from profiling.numerics import CPU_MAX_N, NUMERICS_COLUMNS, run_numerics
from profiling.results import load_results

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["--dtypes", "fp16,fp32", "--n", "16,33", "--rows", "4"]  # R=4: a special row with a defined reference


def run_cli(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = main(["numerics", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_table_and_results_file(capsys, tmp_path):
    out_file = tmp_path / "numerics.parquet"
    code, out, _ = run_cli(capsys, "--variants", "torch,teaching", *SMALL, "--inputs", "normal,special",
                           "--out", str(out_file))
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
    code, out, err = run_cli(capsys, "--variants", "torch", "--dtypes", "bf16", "--n", "8", "--rows", "2",
                             "--inputs", "dominant", "--json", "--out", str(tmp_path / "n.csv"))
    assert code == 0 and err == ""
    records = [json.loads(line) for line in out.splitlines()]
    assert len(records) == 1
    record = records[0]
    assert (record["variant"], record["dtype"], record["n_cols"], record["numerics_input"]) == ("torch", "bf16", 8,
                                                                                               "dominant")
    assert {"ulp_max", "ulp_mean", "frac_0", "rowsum_err_max", "worst_row", "worst_col", "nan_mismatches",
            "device"} <= set(record)
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
    assert "error: ValueError: teaching: N=70000" in lines[2], lines


@pytest.mark.parametrize("argv, message", [
    (["--variants", "torch,nope"], "unknown variant(s) nope; allowed: torch, teaching"),
    (["--dtypes", "fp8"], "unknown dtype(s) fp8; allowed: fp16, bf16, fp32"),
    (["--inputs", "normal,gaussian"], "unknown input distribution(s) gaussian; allowed: normal, scale10"),
    (["--variants", ""], "--variants is empty; allowed: a comma-separated list"),
    (["--out", "x.json"], "unsupported suffix '.json'; allowed: .parquet or .csv"),
])
def test_bad_arguments_are_one_line_errors(capsys, argv, message):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_parser_rejects_bad_numbers(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["numerics", "--n", "128,zero"])
    assert stop.value.code == 2
    assert "'zero' is not an integer; allowed: a positive integer" in capsys.readouterr().err


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU cap applies without a GPU")
def test_n_over_the_cpu_cap_is_refused(capsys):
    code, _, err = run_cli(capsys, "--variants", "torch", "--n", f"128,{CPU_MAX_N + 1}")
    assert code == 2
    assert f"N={CPU_MAX_N + 1} is over the CPU interpreter's cap and there is no GPU; allowed without a GPU: " \
           f"N <= {CPU_MAX_N}" in err


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU interpreter switch")
def test_module_entry_sets_the_interpreter_itself(tmp_path):
    """A plain shell without TRITON_INTERPRET still runs the Triton kernels (on the interpreter)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-m", "profiling", "numerics", "--variants", "teaching", "--dtypes", "fp32",
                           "--n", "16", "--rows", "2", "--inputs", "near_uniform"], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-800:]
    row = done.stdout.splitlines()[2].split()
    assert row[:4] == ["teaching", "fp32", "16", "near_uniform"], done.stdout
