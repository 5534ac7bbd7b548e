"""The Numerics page under AppTest (live CPU-interpreter numbers and stored columns) and its figures."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
pytest.importorskip("plotly")

from streamlit.testing.v1 import AppTest  # noqa: E402

from blockscope.demo import synthetic_results  # noqa: E402
from blockscope.profiling.inspect import numerics as nm  # noqa: E402
from blockscope.profiling.results import concat_results, save_results  # noqa: E402
from blockscope.profiling.views import dashboard_data as dd  # noqa: E402
from blockscope.profiling.views.figures import numerics as fn  # noqa: E402
from tests.test_app import _compile_cache  # noqa: F401 - autouse: one compile cache per session

ROOT = Path(__file__).resolve().parents[1]
PAGE = "pages/numerics.py"
H200 = {"gpu_name": "NVIDIA H200", "compute_capability": "9.0", "run_id": "numerics-test"}


@pytest.fixture(scope="module")
def numerics_table():
    """Numerics rows as if measured on an H200 (torch only: no Triton needed), one with a NaN mismatch."""
    results = nm.run_numerics(
        ["torch"], ["fp16", "fp32"], [128, 256, 1000, 1024, 4096], 4, ["normal", "scale10"], env=H200
    )
    frame = nm.results_frame(results)
    mismatch = frame.iloc[[0]].assign(variant="teaching", ulp_max=math.inf)
    return concat_results([frame, mismatch])


def open_page(source_path: Path | None = None) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240)
    at.run()
    if source_path is None:
        at.sidebar.radio(key="data_source").set_value("Demo data (synthetic)").run()
    else:
        at.sidebar.radio(key="data_source").set_value("Path on this machine").run()
        at.sidebar.text_input(key="typed_path").input(str(source_path)).run()
    at.switch_page(PAGE).run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def specs(at: AppTest) -> dict[str, dict]:
    return {
        spec["layout"]["title"]["text"]: spec
        for spec in (json.loads(element.proto.spec) for element in at.get("plotly_chart"))
    }


def test_page_without_numerics_columns_computes_live_on_the_interpreter(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(nm, "BUNDLED_PATH", tmp_path / "missing.parquet")
    at = open_page()
    assert at.title[0].value == "Numerics (ULP)"
    infos = [i.value for i in at.info]
    assert any("has no numerics columns" in i and "computed live on the **CPU interpreter**" in i for i in infos)
    assert any("This page shows **CPU interpreter**" in i and "ex2.approx.f32" in i for i in infos), infos
    charts = specs(at)
    vs_n = next(s for t, s in charts.items() if t.startswith("ULP error vs N — CPU interpreter, fp16"))
    assert {t["name"] for t in vs_n["data"] if t.get("showlegend", True)} == {"torch", "teaching", "online"}
    lines = [s["x0"] for s in vs_n["layout"]["shapes"] if s["name"].startswith("pow2")]
    assert sorted(lines) == [128, 128, 256, 256, 512, 512, 1024, 1024], "powers of two in both panels"
    assert any(t.startswith("ULP error distribution at N=1000") for t in charts)
    assert any(t.startswith("Elements per ULP distance") for t in charts)
    assert any(t.startswith("tl.exp vs tl.exp2") for t in charts)
    special = next(df.value for df in at.dataframe if "difference" in df.value.columns)
    assert list(special["case"]) == list(nm.SPECIAL_ROWS)
    assert {"input", "torch.softmax", "teaching"} <= set(special.columns)


def test_page_controls_rerun_the_live_parts(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(nm, "BUNDLED_PATH", tmp_path / "missing.parquet")
    at = open_page()
    at.sidebar.selectbox(key="f_dtype").set_value("fp32").run()  # the sidebar's dtype (demo data is loaded)
    at.selectbox(key="num_special_variant").set_value("online").run()
    at.selectbox(key="num_hist_variant").set_value("probe_exp2").run()
    assert not at.exception, [e.message for e in at.exception]
    charts = specs(at)
    assert any(t.startswith("ULP error vs N — CPU interpreter, fp32") for t in charts)
    histogram = next(s for t, s in charts.items() if t.startswith("Elements per ULP distance"))
    assert {t["name"] for t in histogram["data"]} == {"torch", "probe_exp2"}
    special = next(df.value for df in at.dataframe if "difference" in df.value.columns)
    assert "online" in special.columns


def test_page_uses_stored_numerics_columns(tmp_path: Path, numerics_table) -> None:
    path = tmp_path / "with_numerics.parquet"
    save_results(concat_results([synthetic_results(n_values=(128, 1024)), numerics_table]), path)
    at = open_page(path)
    assert any("measurements on **NVIDIA H200**" in c.value for c in at.caption), [c.value for c in at.caption]
    assert not any("has no numerics columns" in i.value for i in at.info)
    vs_n = next(s for t, s in specs(at).items() if t.startswith("ULP error vs N — NVIDIA H200, fp16, input normal"))
    names = {t["name"] for t in vs_n["data"]}
    assert {"torch", "teaching: NaN mismatch"} <= names
    assert {256, 1024, 4096} <= {s["x0"] for s in vs_n["layout"]["shapes"] if s["name"].startswith("pow2")}
    at.selectbox(key="num_input").set_value("scale10").run()
    assert not at.exception
    assert any(t.endswith("input scale10") for t in specs(at))


def test_numerics_r_picker_defaults_to_each_n_own_r_else_the_largest(tmp_path: Path, numerics_table) -> None:
    """The page's R picker (dd.row_choices): "each N's own" where each N ran at one R, else the largest R."""
    r = int(numerics_table["n_rows"].iloc[0])
    own = numerics_table.assign(n_rows=numerics_table["n_rows"].where(numerics_table["n_cols"] != 128, 2 * r))
    both = concat_results([numerics_table, numerics_table.assign(n_rows=2 * r)])
    for name, table, options, value in (
        ("own.parquet", own, [dd.EACH_N_OWN_R, r, 2 * r], dd.EACH_N_OWN_R),
        ("both.parquet", both, [r, 2 * r], 2 * r),
    ):
        path = tmp_path / name
        save_results(concat_results([synthetic_results(n_values=(128, 1024)), table]), path)
        picker = open_page(path).selectbox(key="num_rows")
        assert picker.options == [str(o) for o in options] and picker.value == value, (name, picker.options)


def test_figures_from_a_table(numerics_table) -> None:
    rows = fn.numerics_rows(numerics_table)
    assert len(rows) == len(numerics_table)
    fig = fn.ulp_vs_n_figure(rows, "fp32", "normal", "NVIDIA H200")
    assert fig.layout.title.text == "ULP error vs N — NVIDIA H200, fp32, input normal"
    torch_max = next(t for t in fig.data if t.name == "torch" and t.yaxis == "y")
    assert list(torch_max.x) == [128, 256, 1000, 1024, 4096]
    fractions = fn.ulp_fractions_figure(rows, "fp32", 1000, "normal", "NVIDIA H200")
    totals = sum(float(trace.x[0]) for trace in fractions.data)
    assert totals == pytest.approx(100)
    counts = fn.ulp_histogram_figure(
        __import__("pandas").DataFrame({"variant": ["torch", "torch"], "ulp": [0.0, math.inf], "count": [3, 1]}), "h"
    )
    assert list(counts.data[0].x) == ["0", "NaN mismatch"] and list(counts.data[0].y) == [75, 25]
    assert fn.numerics_rows(synthetic_results()).empty, "a table without numerics measured has no numerics rows"


def test_page_falls_back_to_the_bundled_h200_numerics() -> None:
    if not nm.BUNDLED_PATH.exists():
        pytest.skip(f"{nm.BUNDLED_PATH.name} is not bundled")
    at = open_page()
    assert any(f"bundled H200 numerics capture (`data/{nm.BUNDLED_PATH.name}`" in i.value for i in at.info)
    assert any("This page shows **NVIDIA H200**" in i.value for i in at.info)
    vs_n = next(s for t, s in specs(at).items() if t.startswith("ULP error vs N — NVIDIA H200, fp16"))
    names = {t["name"] for t in vs_n["data"] if t.get("showlegend", True)}
    assert {"torch", "auto", "inductor", "liger", "quack", "teaching"} <= names, names
