"""Results schema: round trips (parquet, csv) and rejection of corrupt, truncated and foreign files."""

from __future__ import annotations

import io
import pickle

import pandas as pd
import pytest
import torch

from profiling import results
from profiling.results import (
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

TORCH_KERNEL = ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::Half, float, c10::Half, "
                "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(c10::Half*, c10::Half const*, int)")


def sample() -> pd.DataFrame:
    common = dict(run_id="r1", gpu_name="NVIDIA H200", compute_capability="9.0", sm_count=132,
                  driver_version="570.86.15", torch_version="2.11.0+cu130", triton_version="3.6.0",
                  copy_gbps=4000.0, measured_at="2026-11-30T21:00:00+00:00", dtype="fp16", n_rows=4096)
    return normalize(pd.DataFrame([
        dict(common, variant="teaching", n_cols=1000, num_warps=4, num_stages=3, tile_width=1024, rows_per_program=1,
             programs=4096, tunables='{"num_warps": 4}', method="per_call_events", median_us=12.5, p20_us=12.0,
             p80_us=13.25, min_us=11.0, max_us=20.0, reps=100, first_call_s=0.75,
             bytes_moved=bytes_moved(4096, 1000, "fp16"), gbps=1310.72, copy_fraction=0.32768, n_regs=32,
             spill_store_bytes=0, spill_load_bytes=0, shared_bytes=64, blocks_per_sm=16, occupancy=1.0,
             limiter="warps", compile_source="live", masked_lane_fraction=0.0234375,
             kernel_names="row_softmax_kernel", error=""),
        dict(common, variant="torch", n_cols=1000, tunables="{}", method="cuda_graph", median_us=9.0, p20_us=8.5,
             p80_us=9.5, min_us=8.0, max_us=11.0, reps=120, first_call_s=0.01, bytes_moved=16384000,
             kernel_names=TORCH_KERNEL, error=""),
        dict(common, variant="teaching", n_cols=65536, num_warps=1, tunables='{"num_warps": 1}',
             method="back_to_back_flushed", error="skipped: predicted pathological compile time, \"quoted\", x"),
    ]))


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
    frame = normalize(pd.DataFrame({"variant": ["online"], "dtype": ["fp32"], "n_rows": [2.0], "n_cols": ["7"],
                                    "method": ["per_call_events"], "median_us": ["1.5"], "extra": [1]}))
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


@pytest.mark.parametrize("case", ["empty", "blank", "truncated_parquet", "corrupt_parquet", "foreign_parquet",
                                  "random_csv", "truncated_csv", "pickle", "binary", "bad_number"])
def test_rejects_bad_files(tmp_path, case):
    good_parquet = _good_bytes(tmp_path, ".parquet")
    good_csv = _good_bytes(tmp_path, ".csv")
    data, expect = {
        "empty": (b"", "empty"),
        "blank": (b"\n \n", "empty"),
        "truncated_parquet": (good_parquet[: len(good_parquet) // 2], "truncated parquet"),
        "corrupt_parquet": (good_parquet[:8] + b"\xff" * (len(good_parquet) - 16) + good_parquet[-8:],
                            "corrupt parquet"),
        "foreign_parquet": (_parquet_bytes(pd.DataFrame({"x": [1, 2], "y": ["a", "b"]})),
                            "missing column.*variant"),
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
