"""The Latency page's forward / backward / forward + backward switch (AppTest) and its plotly-free helpers."""

from __future__ import annotations

import base64
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from blockscope.demo import synthetic_results
from blockscope.profiling.results import save_results
from blockscope.profiling.views import dashboard_data as dd

streamlit_testing = pytest.importorskip("streamlit.testing.v1")
pytest.importorskip("plotly")

from tests.test_app import charts, load_path, new_app, trace_names  # noqa: E402

N_VALUES = (256, 1000, 1024, 4096)
ALL = ("forward", "backward", "forward_backward")


@pytest.fixture(scope="module")
def both_directions_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("directions") / "directions.parquet"
    save_results(synthetic_results(n_values=N_VALUES, variants=("torch", "teaching", "online"), directions=ALL), path)
    return path


@pytest.fixture(scope="module")
def forward_only_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("forward") / "forward.parquet"
    save_results(synthetic_results(n_values=N_VALUES, variants=("torch", "teaching")), path)
    return path


def values(data: object) -> list[float]:
    """A plotly JSON array: a list, or {'dtype': 'f8', 'bdata': base64} (plotly 6's typed arrays)."""
    if isinstance(data, dict) and "bdata" in data:
        return [float(v) for v in np.frombuffer(base64.b64decode(data["bdata"]), dtype=np.dtype(data["dtype"]))]
    return [float(v) for v in data or () if isinstance(v, (int, float))]


def plotted_medians(at) -> set[float]:
    """Every y value of the latency chart's traces, rounded (median µs and the p20..p80 band)."""
    return {round(y, 6) for trace in charts(at)[0]["data"] for y in values(trace.get("y"))}


def test_switch_filters_the_latency_page_on_direction(both_directions_file: Path) -> None:
    at = load_path(new_app(), both_directions_file)
    at.switch_page("pages/latency.py").run()
    assert not at.exception, [e.message for e in at.exception]
    switch = at.selectbox(key="lat_direction")
    assert switch.value == "forward" and list(switch.options) == ["forward", "backward", "forward + backward"]
    table = synthetic_results(n_values=N_VALUES, variants=("torch", "teaching", "online"), directions=ALL)
    forward = plotted_medians(at)
    assert not at.info or all("No " not in i.value for i in at.info)
    switch.set_value("backward").run()
    assert not at.exception
    backward = plotted_medians(at)
    assert {"torch", "teaching", "online"} <= trace_names(charts(at)[0])
    assert backward and backward.isdisjoint(forward)
    fp16 = table[(table["dtype"] == "fp16") & (table["method"] == "back_to_back_flushed")]  # the default method
    best_backward = dd.best_per_n(fp16[fp16["direction"] == "backward"])
    assert {round(float(v), 6) for v in best_backward["median_us"]} <= backward
    assert any("3·R·N·element size" in c.value for c in at.caption)
    at.selectbox(key="lat_direction").set_value("forward_backward").run()
    assert not at.exception and any("5·R·N·element size" in c.value for c in at.caption)
    assert not any("Not in this data" in c.value for c in at.caption)


def test_forward_only_file_says_how_to_get_backward_rows(forward_only_file: Path) -> None:
    at = load_path(new_app(), forward_only_file)
    at.switch_page("pages/latency.py").run()
    assert charts(at) and any("Not in this data: backward and forward + backward rows" in c.value for c in at.caption)
    at.selectbox(key="lat_direction").set_value("backward").run()
    assert not at.exception and not charts(at)
    note = " ".join(i.value for i in at.info)
    assert "No backward rows in this data: it holds forward timings only" in note
    assert "python -m profiling sweep --directions forward,backward,forward_backward" in note


def test_direction_helpers_without_streamlit() -> None:
    table = synthetic_results(n_values=(256,), variants=("torch",), methods=("cuda_graph",), directions=ALL)
    assert dd.directions_in(table) == list(ALL)
    assert len(dd.apply_filters(table, dd.Filters())) == len(table) // 3  # forward by default
    assert set(dd.apply_filters(table, dd.Filters(direction="backward"))["direction"]) == {"backward"}
    assert len(dd.apply_filters(table, dd.Filters(direction=None))) == len(table)
    old = table[table["direction"] == "forward"].drop(columns="direction")
    assert dd.directions_in(old) == ["forward"] and len(dd.apply_filters(old, dd.Filters())) == len(old)
    assert dd.missing_direction_note(table, "backward") is None and dd.absent_directions_note(table) is None
    assert "holds forward timings only" in dd.missing_direction_note(old, "forward_backward")
    assert dd.direction_label("forward_backward") == "forward + backward"
    # two runs of one GPU, one forward and one backward: parts of one capture, not reruns to keep apart
    parts = pd.concat(
        [table[table["direction"] == "forward"], table[table["direction"] == "backward"].assign(run_id="second")],
        ignore_index=True,
    )
    assert dd.setups(parts) == []
    rerun = pd.concat([parts, table[table["direction"] == "backward"].assign(run_id="third")], ignore_index=True)
    assert dd.setups(rerun) != []
    assert dd.hidden_by_filters(table, replace(dd.Filters(), variants=("torch",))) is None
