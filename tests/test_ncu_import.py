"""Nsight Compute import: both CSV pages, units, config matching, hostile input, the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from blockscope.profiling.cli.main import main
from blockscope.profiling.inspect import ncu as inspect_ncu
from blockscope.profiling.results import ncu

FIXTURES = Path(__file__).parent / "fixtures"
DETAILS = FIXTURES / "ncu_details.csv"
RAW = FIXTURES / "ncu_raw.csv"

# (fixture, ncu ID) -> expected values in base units; from the fixture lines (Duration 7.10 usecond = 7100 ns)
EXPECTED = {
    (DETAILS, 0): {"achieved_occupancy_pct": 81.03, "theoretical_occupancy_pct": 100.0, "dram_throughput_pct": 24.10,
                   "registers_per_thread": 24, "shared_dynamic_bytes": 16, "shared_driver_bytes": 1020,
                   "block_limit_registers": 21, "block_limit_shared_mem": 28, "block_limit_warps": 16,
                   "block_limit_sm": 32, "waves_per_sm": 0.97, "duration_ns": 7100.0, "grid_programs": 4096,
                   "block_threads": 128},
    (DETAILS, 1): {"achieved_occupancy_pct": 12.41, "grid_programs": 256, "duration_ns": 5920.0},
    (DETAILS, 2): {"shared_dynamic_bytes": 1020, "registers_per_thread": 30},
    (RAW, 0): {"achieved_occupancy_pct": 37.91, "theoretical_occupancy_pct": 50.0, "duration_ns": 5344.0,
               "block_threads": 32, "grid_programs": 4096, "block_limit_registers": 128},
    (RAW, 2): {"shared_dynamic_bytes": 32800, "duration_ns": 712800.0, "waves_per_sm": 10.34,
               "block_limit_shared_mem": 3},
}  # fmt: skip


@pytest.mark.parametrize(("path", "ncu_id"), sorted(EXPECTED, key=str), ids=lambda v: getattr(v, "name", str(v)))
def test_values_in_base_units(path: Path, ncu_id: int) -> None:
    table = ncu.read_ncu_csv(path).set_index("ncu_id")
    for column, expected in EXPECTED[(path, ncu_id)].items():
        got = table.loc[ncu_id, column]
        assert not pd.isna(got) and math.isclose(float(got), expected, rel_tol=1e-9), (
            f"{path.name} ID {ncu_id} {column}: got {got}, expected {expected}"
        )


@pytest.mark.parametrize("path", [DETAILS, RAW], ids=lambda p: p.name)
def test_one_row_per_launch_with_every_column(path: Path) -> None:
    table = ncu.read_ncu_csv(path)
    assert list(table.columns) == list(ncu.NCU_COLUMNS)
    assert table["ncu_id"].tolist() == [0, 1, 2]  # preamble, units row and rule rows add no launches
    for column, (dtype, _, _) in ncu.NCU_COLUMNS.items():
        assert str(table[column].dtype) == dtype, f"{column}: {table[column].dtype} != {dtype}"
    pct = table[["achieved_occupancy_pct", "theoretical_occupancy_pct"]].astype(float)
    assert ((pct >= 0) & (pct <= 100)).all().all()
    assert (table["achieved_occupancy_pct"] <= table["theoretical_occupancy_pct"]).all()


def test_details_rule_rows_and_raw_metric_rows() -> None:
    """Rule rows (empty Metric Name) are skipped; `--metrics` rows carry raw names and still map."""
    lines = DETAILS.read_text().splitlines()
    header = next(line for line in lines if line.startswith('"ID"'))
    base = '"0","1","python3.12","h","row_softmax_kernel","1","7","(64, 1, 1)","(10, 1, 1)","0","9.0"'
    text = "\n".join(
        [
            header,
            base
            + ',"Command line profiler metrics","sm__warps_active.avg.pct_of_peak_sustained_active","%","40.5",,,,,',
            base + ',"Command line profiler metrics","gpu__time_duration.sum","msecond","1.5",,,,,',
            base + ',"Occupancy","","","","AchievedOccupancy","OPT","text, with a comma","local","3.1"',
        ]
    )
    table = ncu.read_ncu_csv(text.encode())
    assert len(table) == 1
    assert table.loc[0, "achieved_occupancy_pct"] == 40.5
    assert table.loc[0, "duration_ns"] == 1.5e6
    assert table.loc[0, "grid_programs"] == 10 and table.loc[0, "block_threads"] == 64


def _configs() -> pd.DataFrame:
    rows = [
        ("teaching", "fp16", 4096, 1000, {"num_warps": 4}, 24),
        ("teaching", "fp32", 4096, 1000, {"num_warps": 4}, 26),  # same grid and block: told apart by registers
        ("multirow", "fp16", 4096, 128, {"rows_per_program": 16, "num_warps": 4}, 32),
        ("online", "fp32", 4096, 65536, {"tile": 16384, "num_warps": 8, "num_stages": 4}, 40),
    ]
    return pd.DataFrame(
        [
            {"variant": v, "dtype": d, "n_rows": r, "n_cols": n, "tunables": json.dumps(t, sort_keys=True), "n_regs": g}
            for v, d, r, n, t, g in rows
        ]
    )


def test_match_configs_by_name_grid_block_and_registers() -> None:
    table = inspect_ncu.import_ncu(DETAILS, _configs()).set_index("ncu_id")
    assert table.loc[0, "variant"] == "teaching" and table.loc[0, "match"] == "matched"
    assert (table.loc[0, "dtype"], table.loc[0, "n_cols"]) == ("fp16", 1000)
    assert table.loc[1, "variant"] == "multirow" and table.loc[1, "match"] == "matched"
    assert json.loads(table.loc[1, "tunables"]) == {"num_warps": 4, "rows_per_program": 16}
    assert table.loc[2, "variant"] == "" and table.loc[2, "match"] == "not ours"


def test_match_reports_ambiguity_and_missing_configs() -> None:
    configs = _configs().drop(columns="n_regs")
    table = inspect_ncu.import_ncu(DETAILS, configs).set_index("ncu_id")
    assert table.loc[0, "match"] == "ambiguous: 2 configs"
    assert {c["dtype"] for c in json.loads(table.loc[0, "candidates"])} == {"fp16", "fp32"}
    raw = inspect_ncu.import_ncu(RAW, configs).set_index("ncu_id")
    assert raw.loc[0, "match"] == "no config"  # 32 threads: no config launches one warp


def test_match_configs_refuses_a_table_without_config_columns() -> None:
    with pytest.raises(ncu.NcuError, match="configs lack"):
        inspect_ncu.match_configs(ncu.read_ncu_csv(RAW), pd.DataFrame({"variant": ["teaching"]}))


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_save_and_load_round_trip(tmp_path: Path, suffix: str) -> None:
    table = inspect_ncu.import_ncu(DETAILS, _configs())
    path = ncu.save_ncu(table, tmp_path / f"imported{suffix}")
    loaded = ncu.load_ncu_table(path)
    assert list(loaded.columns[: len(ncu.NCU_COLUMNS)]) == list(ncu.NCU_COLUMNS)
    pd.testing.assert_series_equal(loaded["achieved_occupancy_pct"], table["achieved_occupancy_pct"])
    assert loaded["match"].tolist() == table["match"].tolist()
    assert ncu.load_ncu_table(RAW)["duration_ns"].tolist() == [5344.0, 7104.0, 712800.0]  # raw ncu CSV loads too


def _truncated() -> bytes:
    data = DETAILS.read_bytes()
    return data[: data.rindex(b'"Achieved Occupancy"') + 10]


def _newer_schema(tmp_path: Path) -> bytes:
    table = ncu.read_ncu_csv(RAW)
    table["ncu_schema"] = ncu.NCU_SCHEMA_VERSION + 1
    table.to_csv(tmp_path / "new.csv", index=False)
    return (tmp_path / "new.csv").read_bytes()


BAD_INPUTS = {
    "results CSV from another tool": (lambda _: Path("data/ncu_validation.csv").read_bytes(), "no header line"),
    "nsys stats CSV": (
        lambda _: b'"Time (%)","Total Time (ns)","Instances","Name"\n"50.0","1,000","2","k"\n',
        "no header",
    ),
    "truncated inside a quote": (lambda _: _truncated(), "truncated or malformed CSV"),
    "truncated at a field": (lambda _: _truncated()[: _truncated().rindex(b",")], "truncated or malformed: CSV line"),
    "empty": (lambda _: b"\n\n", "empty file"),
    "binary": (lambda _: b"\x00\xff\xfe" * 20, "no header line|not text"),
    "ID header without ncu columns": (lambda _: b'"ID","Name"\n"0","x"\n', "header lacks Kernel Name"),
    "bad unit": (lambda _: DETAILS.read_bytes().replace(b'"usecond"', b'"fortnight"'), "unit 'fortnight'"),
    "bad number": (lambda _: DETAILS.read_bytes().replace(b'"81.03"', b'"lots"'), "'lots' is not a number"),
    "newer import schema": (_newer_schema, "ncu_schema"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_one_line_error(case: str, tmp_path: Path) -> None:
    make, message = BAD_INPUTS[case]
    with pytest.raises(ncu.NcuError, match=message) as caught:
        ncu.load_ncu_table(make(tmp_path), name="upload")
    assert "\n" not in str(caught.value) and str(caught.value).startswith("upload: ")


def test_wrong_source_type_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="allowed: a path"):
        ncu.read_ncu_csv(42)  # type: ignore[arg-type]


def test_ncu_rep_without_ncu_says_ncu_is_needed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report = tmp_path / "r.ncu-rep"
    report.write_bytes(b"NVR\x00")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ncu.NcuError, match="needs Nsight Compute's `ncu` on PATH"):
        inspect_ncu.read_any(report)


def test_cli_writes_table_and_reports(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    configs = tmp_path / "configs.csv"
    _configs().to_csv(configs, index=False)
    out = tmp_path / "ncu.parquet"
    assert main(["ncu-import", str(DETAILS), "--out", str(out)], prog="profiling") == 0
    assert "3 launches, 2 of Blockscope's kernels" in capsys.readouterr().out
    assert len(ncu.load_ncu_table(out)) == 3


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--out", "x.txt"], "allowed: a .parquet or .csv path"),
        (["--out", "x.csv", "--configs", "missing.parquet"], "missing.parquet"),
    ],
)
def test_cli_errors_are_one_line(argv: list[str], message: str, capsys: pytest.CaptureFixture) -> None:
    assert main(["ncu-import", str(DETAILS), *argv], prog="profiling") == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_cli_foreign_csv_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["ncu-import", "data/ncu_validation.csv", "--out", str(tmp_path / "o.csv")], prog="profiling") == 2
    err = capsys.readouterr().err
    assert "not an Nsight Compute CSV" in err and err.count("\n") == 1


def test_views_put_ncu_beside_estimates(tmp_path: Path) -> None:
    """An import matched to a config gets that config's estimates; ncu's own numbers are kept as they were."""
    from blockscope.profiling.views import dashboard_data as dd

    configs = _configs()
    configs["occupancy"] = [1.0, 1.0, 0.5, 0.1875]
    configs["blocks_per_sm"] = [16, 16, 8, 3]
    path = ncu.save_ncu(inspect_ncu.import_ncu(DETAILS, configs), tmp_path / "n.parquet")
    frame = dd.load_ncu_import(path)
    assert frame["ncu_blocks_per_sm"].tolist() == [16, 16, 16]  # min of the four block limits per launch
    assert frame["variant"].tolist() == ["teaching", "multirow", "(not ours)"]
    beside = dd.ncu_beside_estimates(frame, configs).set_index("ncu_id")
    assert beside.loc[0, "estimated_occupancy_pct"] == 100.0 and beside.loc[0, "n_regs"] == 24
    assert beside.loc[1, "estimated_occupancy_pct"] == 50.0 and beside.loc[1, "blocks_per_sm"] == 8
    assert pd.isna(beside.loc[2, "estimated_occupancy_pct"])
    assert beside["achieved_occupancy_pct"].tolist() == frame["achieved_occupancy_pct"].tolist()
    no_results = dd.ncu_beside_estimates(frame, None)
    assert no_results["estimated_occupancy_pct"].isna().all() and len(no_results) == 3


def test_views_read_raw_ncu_csv_labelled_by_kernel() -> None:
    from blockscope.profiling.views import dashboard_data as dd

    frame = dd.load_ncu_import(RAW.read_bytes(), "raw.csv")
    assert frame["variant"].tolist() == ["row_softmax_kernel", "row_softmax_kernel", "row_softmax_online_kernel"]
    assert frame["num_warps"].tolist() == [1, 4, 8]
    assert frame["ncu_blocks_per_sm"].tolist() == [32, 16, 3]


def test_bundled_validation_gets_blocks_and_registers() -> None:
    from blockscope.profiling.views import dashboard_data as dd

    table = dd.load_ncu()
    if table is None:
        pytest.skip("data/ncu_validation.csv is not bundled")
    ok = table[table["error"] == ""]
    limits = ok[[f"launch__occupancy_limit_{k}" for k in ("registers", "shared_mem", "warps", "blocks")]]
    assert ok["ncu_blocks_per_sm"].tolist() == limits.min(axis=1).tolist()
    assert (ok["ncu_registers"] == ok["launch__registers_per_thread"]).all()


@pytest.mark.parametrize("name", ["ncu_details_h200.csv", "ncu_raw_h200.csv"])
def test_real_ncu_output_from_the_h200_imports(name: str) -> None:
    """ncu's own output on the H200 (tools/ecosystem_gpu_check.py, 2026-12-04: teaching fp16 N=1000 and 8192, two
    launches): the details page leaves its rule columns off rows no rule fired for, and still imports."""
    from blockscope.profiling.results.ncu import read_ncu_csv

    table = read_ncu_csv(Path(__file__).parent / "fixtures" / name)
    assert len(table) == 2
    assert set(table["kernel_name"]) == {"row_softmax_kernel"}
