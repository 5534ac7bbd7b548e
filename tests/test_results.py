"""Results schema: round trips (parquet, csv) and rejection of corrupt, truncated and foreign files."""

from __future__ import annotations

import io
import pickle

import pandas as pd
import pytest
import torch

from blockscope.profiling import results
from blockscope.profiling.results import (
    COLUMNS,
    ResultsError,
    bytes_moved,
    concat_results,
    empty_results,
    load_results,
    normalize,
    save_results,
    validate,
)

TORCH_KERNEL = (
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::Half, float, c10::Half, "
    "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(c10::Half*, c10::Half const*, int)"
)


def sample() -> pd.DataFrame:
    common = dict(
        run_id="r1",
        gpu_name="NVIDIA H200",
        compute_capability="9.0",
        sm_count=132,
        driver_version="570.86.15",
        torch_version="2.11.0+cu130",
        triton_version="3.6.0",
        copy_gbps=4000.0,
        measured_at="2026-11-30T21:00:00+00:00",
        dtype="fp16",
        n_rows=4096,
    )
    return normalize(
        pd.DataFrame(
            [
                dict(
                    common,
                    variant="teaching",
                    n_cols=1000,
                    num_warps=4,
                    num_stages=3,
                    tile_width=1024,
                    rows_per_program=1,
                    programs=4096,
                    tunables='{"num_warps": 4}',
                    method="per_call_events",
                    median_us=12.5,
                    p20_us=12.0,
                    p80_us=13.25,
                    min_us=11.0,
                    max_us=20.0,
                    reps=100,
                    first_call_s=0.75,
                    bytes_moved=bytes_moved(4096, 1000, "fp16"),
                    gbps=1310.72,
                    copy_fraction=0.32768,
                    n_regs=32,
                    spill_store_bytes=0,
                    spill_load_bytes=0,
                    shared_bytes=64,
                    blocks_per_sm=16,
                    occupancy=1.0,
                    limiter="warps",
                    compile_source="live",
                    masked_lane_fraction=0.0234375,
                    kernel_names="row_softmax_kernel",
                    error="",
                ),
                dict(
                    common,
                    variant="torch",
                    n_cols=1000,
                    tunables="{}",
                    method="cuda_graph",
                    median_us=9.0,
                    p20_us=8.5,
                    p80_us=9.5,
                    min_us=8.0,
                    max_us=11.0,
                    reps=120,
                    first_call_s=0.01,
                    bytes_moved=16384000,
                    kernel_names=TORCH_KERNEL,
                    error="",
                ),
                dict(
                    common,
                    variant="teaching",
                    n_cols=65536,
                    num_warps=1,
                    tunables='{"num_warps": 1}',
                    method="back_to_back_flushed",
                    error='skipped: predicted pathological compile time, "quoted", x',
                ),
            ]
        )
    )


def test_empty_results_has_every_column_and_dtype():
    empty = empty_results()
    assert len(empty) == 0
    assert {c: str(t) for c, t in empty.dtypes.items()} == COLUMNS


def test_bytes_moved_counts_read_and_write():
    assert bytes_moved(4096, 1000, "fp16") == 2 * 4096 * 1000 * 2 == 16_384_000
    assert bytes_moved(3, 5, torch.float32) == 120
    assert bytes_moved(3, 5, "bfloat16") == 60
    with pytest.raises(ValueError, match="allowed: fp16, bf16, fp32"):
        bytes_moved(1, 1, "fp8")
    assert results.gbps(16_384_000, 10.0) == pytest.approx(1638.4)


def test_normalize_adds_missing_columns_and_casts():
    frame = normalize(
        pd.DataFrame(
            {
                "variant": ["online"],
                "dtype": ["fp32"],
                "n_rows": [2.0],
                "n_cols": ["7"],
                "method": ["per_call_events"],
                "median_us": ["1.5"],
                "extra": [1],
            }
        )
    )
    assert list(frame.columns) == [*COLUMNS, "extra"]
    assert frame.loc[0, "n_cols"] == 7 and str(frame["n_cols"].dtype) == "Int64"
    assert frame.loc[0, "median_us"] == 1.5 and str(frame["median_us"].dtype) == "Float64"
    assert frame.loc[0, "error"] == "" and pd.isna(frame.loc[0, "n_regs"])
    with pytest.raises(ResultsError, match="column 'n_rows' cannot be read as Int64.*2.5"):
        normalize(pd.DataFrame({"n_rows": [2.5]}))


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_round_trip(tmp_path, suffix):
    frame = sample()
    path = save_results(frame, tmp_path / f"run{suffix}")
    loaded = load_results(path)
    pd.testing.assert_frame_equal(loaded, frame)
    assert loaded.loc[1, "kernel_names"] == TORCH_KERNEL
    assert loaded.loc[2, "error"].endswith('"quoted", x') and pd.isna(loaded.loc[2, "median_us"])
    assert loaded.loc[0, "gbps"] == pytest.approx(1310.72)
    again = load_results(io.BytesIO(path.read_bytes()), name=f"upload{suffix}")
    pd.testing.assert_frame_equal(again, frame)
    pd.testing.assert_frame_equal(load_results(path.read_bytes()), frame)


def test_parquet_carries_schema_version(tmp_path):
    import pyarrow.parquet as pq

    path = save_results(sample(), tmp_path / "run.parquet")
    metadata = pq.read_schema(path).metadata
    assert metadata[b"blockscope_schema_version"] == str(results.SCHEMA_VERSION).encode()


def test_save_rejects_unknown_suffix_and_invalid_rows(tmp_path):
    with pytest.raises(ResultsError, match=r"allowed: \.parquet, \.csv"):
        save_results(sample(), tmp_path / "run.xlsx")
    bad = sample()
    bad.loc[0, "median_us"] = -1.0
    with pytest.raises(ResultsError, match="negative median_us"):
        save_results(bad, tmp_path / "run.parquet")
    assert not (tmp_path / "run.parquet").exists()


def test_validate_catches_bad_values():
    frame = sample()
    frame.loc[0, "method"] = "wallclock"
    frame.loc[1, "dtype"] = "fp8"
    with pytest.raises(ResultsError) as error:
        validate(frame)
    assert "method outside per_call_events" in str(error.value) and "dtype outside fp16" in str(error.value)
    frame = sample()
    frame.loc[0, "median_us"] = pd.NA
    with pytest.raises(ResultsError, match="neither a median_us nor an error"):
        validate(frame)
    with pytest.raises(ResultsError, match="missing column"):
        validate(pd.DataFrame({"a": [1]}))
    with pytest.raises(ResultsError, match="expected Int64"):
        validate(sample().astype({"n_rows": "float64"}))


def _parquet_bytes(frame: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


def _good_bytes(tmp_path, suffix: str) -> bytes:
    return save_results(sample(), tmp_path / f"good{suffix}").read_bytes()


@pytest.mark.parametrize(
    "case",
    [
        "empty",
        "blank",
        "truncated_parquet",
        "corrupt_parquet",
        "foreign_parquet",
        "random_csv",
        "truncated_csv",
        "pickle",
        "binary",
        "bad_number",
    ],
)
def test_rejects_bad_files(tmp_path, case):
    good_parquet = _good_bytes(tmp_path, ".parquet")
    good_csv = _good_bytes(tmp_path, ".csv")
    data, expect = {
        "empty": (b"", "empty"),
        "blank": (b"\n \n", "empty"),
        "truncated_parquet": (good_parquet[: len(good_parquet) // 2], "truncated parquet"),
        "corrupt_parquet": (
            good_parquet[:8] + b"\xff" * (len(good_parquet) - 16) + good_parquet[-8:],
            "corrupt parquet",
        ),
        "foreign_parquet": (_parquet_bytes(pd.DataFrame({"x": [1, 2], "y": ["a", "b"]})), "missing column.*variant"),
        "random_csv": (b"name,score\nalice,3\nbob,4\n", "header lacks column.*variant"),
        "truncated_csv": (good_csv[: good_csv.index(b"\n", good_csv.index(b"\n") + 1) + 30], "truncated"),
        "pickle": (pickle.dumps(sample()), "pickle"),
        "binary": (bytes(range(256)) * 4, "binary data"),
        "bad_number": (good_csv.replace(b",12.5,", b",twelve,", 1), "'median_us' cannot be read as Float64"),
    }[case]
    path = tmp_path / f"upload_{case}.bin"
    path.write_bytes(data)
    with pytest.raises(ResultsError, match=expect) as error:
        load_results(path)
    message = str(error.value)
    assert message.startswith(f"upload_{case}.bin: ")
    assert "\n" not in message
    if case not in ("bad_number",):
        assert "expected a Blockscope results .parquet or .csv" in message
    assert isinstance(error.value, ValueError)


def test_rejects_newer_schema_and_missing_file(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(sample(), preserve_index=False)
    table = table.replace_schema_metadata({**table.schema.metadata, b"blockscope_schema_version": b"99"})
    pq.write_table(table, tmp_path / "future.parquet")
    with pytest.raises(ResultsError, match="schema v99, newer"):
        load_results(tmp_path / "future.parquet")
    with pytest.raises(ResultsError, match="cannot read"):
        load_results(tmp_path / "absent.parquet")
    with pytest.raises(ResultsError, match="expected a path, bytes or a file object"):
        load_results(42)


def test_concat_results_labels_sources():
    a, b = sample(), sample().iloc[:1]
    both = concat_results({"h200.parquet": a, "a100.csv": b})
    assert len(both) == 4
    assert list(both["source"]) == ["h200.parquet"] * 3 + ["a100.csv"]
    assert both["median_us"].sum() == pytest.approx(12.5 + 9.0 + 12.5)
    plain = concat_results([a, b])
    assert "source" not in plain.columns and len(plain) == 4
    assert len(concat_results([])) == 0
    with pytest.raises(ValueError, match="one label per frame"):
        concat_results([a, b], sources=["x"])


def _csv_with(frame: pd.DataFrame, row: int, column: str, text: str) -> bytes:
    """`frame` as CSV bytes with one cell replaced by `text` (as a CSV writer would never write it)."""
    table = frame.astype({column: "string"})
    table.loc[row, column] = text
    return table.to_csv(index=False).encode()


@pytest.mark.parametrize("column", ["median_us", "p20_us", "p80_us", "min_us", "max_us"])
@pytest.mark.parametrize("value", ["inf", "0"])
def test_rejects_zero_and_infinite_times_naming_row_and_column(column, value):
    with pytest.raises(
        ResultsError,
        match=rf"timed row\(s\) with {column} 0 or infinite \(row 0: .*expected a "
        r"finite time in µs > 0",
    ):
        load_results(_csv_with(sample(), 0, column, value), name="bad.csv")
    bad = sample()
    bad.loc[0, column] = float(value)
    with pytest.raises(ResultsError, match=rf"{column} 0 or infinite \(row 0"):
        validate(bad)


def test_zero_or_missing_times_of_rows_that_did_not_run_are_fine():
    frame = sample()
    frame.loc[2, "median_us"] = 0.0  # row 2 is an error row
    assert len(validate(frame)) == 3
    frame = sample()
    frame.loc[0, "p20_us"] = pd.NA  # a timed row without percentiles: old files
    assert len(validate(frame)) == 3


def test_nan_time_gets_its_own_message_in_csv_parquet_and_frames(tmp_path):
    with pytest.raises(
        ResultsError,
        match=r"nan.csv: 1 timed row\(s\) with median_us NaN, not a number "
        r"\(first rows \[0\]\)",
    ) as error:
        load_results(_csv_with(sample(), 0, "median_us", "NaN"), name="nan.csv")
    assert "truncated" not in str(error.value) and "cannot be read" not in str(error.value)

    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(sample(), preserve_index=False)
    median = table.column("median_us").to_pylist()
    median[1] = float("nan")
    table = table.set_column(table.column_names.index("median_us"), "median_us", pa.array(median, type=pa.float64()))
    pq.write_table(table, tmp_path / "nan.parquet")
    with pytest.raises(ResultsError, match=r"median_us NaN, not a number \(first rows \[1\]\)"):
        load_results(tmp_path / "nan.parquet")

    import numpy as np

    frame = sample()
    frame["max_us"] = pd.arrays.FloatingArray(np.array([np.nan, 11.0, 0.0]), np.array([False, False, True]))
    with pytest.raises(ResultsError, match="max_us NaN"):
        validate(frame)


def test_nan_outside_timed_times_loads_as_missing():
    frame = _csv_with(sample(), 2, "median_us", "nan")  # row 2 did not run
    loaded = load_results(frame, name="ok.csv")
    assert pd.isna(loaded.loc[2, "median_us"]) and loaded["median_us"].isna().tolist() == [False, False, True]


def test_bom_and_quoted_headers_load(tmp_path):
    frame = sample()
    plain = frame.to_csv(index=False)
    bom = b"\xef\xbb\xbf" + plain.encode()
    pd.testing.assert_frame_equal(load_results(bom, name="excel.csv"), frame)
    import csv

    quoted = frame.to_csv(index=False, quoting=csv.QUOTE_ALL)
    assert quoted.startswith('"variant","dtype"')
    pd.testing.assert_frame_equal(load_results(quoted.encode(), name="quoted.csv"), frame)
    (tmp_path / "both.csv").write_bytes(b"\xef\xbb\xbf" + quoted.encode())
    pd.testing.assert_frame_equal(load_results(tmp_path / "both.csv"), frame)


def test_row_cap_is_checked_before_parsing(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    big = pd.concat([sample()] * 4, ignore_index=True)  # 12 rows
    parquet = save_results(big, tmp_path / "big.parquet")
    csv_path = save_results(big, tmp_path / "big.csv")
    monkeypatch.setattr(results, "MAX_ROWS", 10)

    def no_parsing(*args, **kwargs):
        raise AssertionError("parsed a file over the cap")

    monkeypatch.setattr(pq, "read_table", no_parsing)
    monkeypatch.setattr(pd, "read_csv", no_parsing)
    with pytest.raises(ResultsError, match=r"big.parquet: 12 rows is over the 10-row limit"):
        load_results(parquet)
    with pytest.raises(ResultsError, match=r"big.csv: 12 lines is over the 10-row limit"):
        load_results(csv_path)
    monkeypatch.setattr(results, "MAX_ROWS", 12)
    monkeypatch.undo()
    assert len(load_results(parquet)) == 12


def test_size_cap_and_memory_error(tmp_path, monkeypatch):
    path = save_results(sample(), tmp_path / "run.parquet")
    monkeypatch.setattr(results, "MAX_FILE_MB", 0)
    with pytest.raises(ResultsError, match=r"run.parquet: .* MB is over the 0 MB limit"):
        load_results(path)
    with pytest.raises(ResultsError, match=r"upload.csv: .* MB is over the 0 MB limit"):
        load_results(b"variant,dtype\n", name="upload.csv")
    monkeypatch.undo()

    import pyarrow.parquet as pq

    def out_of_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(pq, "read_table", out_of_memory)
    with pytest.raises(ResultsError, match="run.parquet: out of memory while loading") as error:
        load_results(path)
    assert isinstance(error.value, ValueError)


def test_upload_cap_matches_streamlit_config():
    import tomllib
    from pathlib import Path

    config = tomllib.loads((Path(__file__).resolve().parents[1] / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] == results.MAX_FILE_MB


def test_directory_is_named_as_such(tmp_path):
    with pytest.raises(ResultsError, match="is a directory; expected a results .parquet or .csv file"):
        load_results(tmp_path)
