"""Dashboard parts of the sweep work (AppTest): stale-kernel rows flagged, profiler traces offered."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
pytest.importorskip("plotly")

from blockscope.demo import synthetic_results
from blockscope.profiling.results import (
    revision,  # noqa: E402
    save_results,  # noqa: E402
)
from tests.test_app import (  # noqa: E402
    _compile_cache,  # noqa: F401 - autouse: one compile cache per session
    load_path,
    new_app,
)
from tests.texts import plain  # noqa: E402


def test_stale_kernel_rows_are_flagged(tmp_path: Path) -> None:
    df = synthetic_results(n_values=(256, 1024, 4096), variants=("torch", "teaching", "online"), dtypes=("fp16",))
    df["kernel_source_hash"] = df["variant"].map(revision.kernel_source_hash)
    df.loc[df["variant"] == "teaching", "kernel_source_hash"] = "0123456789ab"  # measured with an older source
    df["triton_version"] = revision.current_triton_version()
    path = tmp_path / "stale.parquet"
    save_results(df, path)
    at = load_path(new_app(), path)
    at.switch_page("pages/latency.py").run()
    assert not at.exception, at.exception
    warnings = [plain(w.value) for w in at.warning if "changed since" in w.value]
    assert warnings and "(teaching)" in warnings[0], [plain(w.value) for w in at.warning]
    tables = [d.value for d in at.dataframe if "kernel" in d.value.columns and "variant" in d.value.columns]
    assert tables, "no data table with a kernel column"
    table = tables[0]
    assert set(table.loc[table["variant"] == "teaching", "kernel"]) == {"stale"}
    assert set(table.loc[table["variant"] == "online", "kernel"]) == {"current"}


def test_current_rows_are_not_flagged(tmp_path: Path) -> None:
    df = synthetic_results(n_values=(256, 1024), variants=("torch", "teaching"), dtypes=("fp16",))
    df["kernel_source_hash"] = df["variant"].map(revision.kernel_source_hash)
    df["triton_version"] = "3.0.0-other"  # another Triton alone: a caption, no warning
    path = tmp_path / "current.parquet"
    save_results(df, path)
    at = load_path(new_app(), path)
    at.switch_page("pages/latency.py").run()
    assert not any("changed since" in plain(w.value) for w in at.warning)
    assert any("Triton 3.0.0-other" in plain(c.value) for c in at.caption)


def test_kernel_evidence_offers_a_trace_and_names_its_kernels(tmp_path: Path) -> None:
    import json

    from blockscope.profiling.measure.trace import traces_dir_for, write_trace_index

    path = tmp_path / "run.parquet"
    save_results(synthetic_results(n_values=(256, 1024), variants=("torch", "teaching"), dtypes=("fp16",)), path)
    folder = traces_dir_for(path)
    folder.mkdir()
    trace = {
        "traceEvents": [
            {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "ts": 0, "dur": 3},
            {"ph": "X", "cat": "kernel", "name": "spin_kernel", "ts": 1, "dur": 1},  # the tracer's marker: left out
            {"ph": "X", "cat": "kernel", "name": "row_softmax_kernel", "ts": 10, "dur": 4.5},
            {"ph": "X", "cat": "kernel", "name": "row_softmax_kernel", "ts": 20, "dur": 4.5},
            {"ph": "X", "cat": "kernel", "name": "vectorized_elementwise_kernel", "ts": 30, "dur": 2.0},
        ]
    }
    (folder / "teaching_fp16_R4096_N1024.json").write_text(json.dumps(trace))
    write_trace_index(
        folder,
        [
            {
                "file": "teaching_fp16_R4096_N1024.json",
                "variant": "teaching",
                "dtype": "fp16",
                "n_rows": 4096,
                "n_cols": 1024,
                "tunables": "{}",
                "kernels": ["row_softmax_kernel"],
            }
        ],
    )
    at = load_path(new_app(), path)
    at.switch_page("pages/kernel_evidence.py").run()
    assert not at.exception, at.exception
    box = at.selectbox(key="ev_trace")  # the file's own trace, beside the bundled ones of data/traces/
    labels = [box.format_func(i) for i in range(len(box.options))]
    mine = next(i for i, label in enumerate(labels) if "teaching fp16 N=1024" in label)
    box.set_value(mine).run()
    assert not at.exception, at.exception
    assert "teaching fp16 N=1024" in box.format_func(at.selectbox(key="ev_trace").value)
    buttons = at.get("download_button")
    assert buttons and any("Chrome trace" in b.proto.label for b in buttons)
    kernels = next(d.value for d in at.dataframe if "device_us" in d.value.columns)
    assert list(kernels["kernel"]) == ["row_softmax_kernel", "vectorized_elementwise_kernel"]
    assert list(kernels["calls"]) == [2, 1]
