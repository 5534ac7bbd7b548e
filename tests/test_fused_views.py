"""Fused-op benchmark results (tools/bench_fused.py's CSV): loader, tables, figure, and the Backends page's
"Fused ops" section under AppTest, on a synthetic fixture (tests/fixtures/bench_fused_synthetic.csv)."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

from blockscope import paths
from blockscope.profiling.results import ResultsError
from blockscope.profiling.results.fused import FUSED_COLUMNS, MAX_FUSED_TEXT, load_fused
from blockscope.profiling.views import fused as views
from blockscope.profiling.views.figures import fused as ff
from tests.test_app import charts, new_app
from tests.texts import plain

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "bench_fused_synthetic.csv"
HOSTILE = "![x](http://host/p.png) <img src=x onerror=alert(1)>"


def _bench_fields() -> list[str]:
    spec = importlib.util.spec_from_file_location("bench_fused", ROOT / "tools" / "bench_fused.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.FIELDS


def _write(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    import csv

    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def test_the_loader_reads_exactly_the_tools_columns() -> None:
    assert list(FUSED_COLUMNS) == _bench_fields()
    table = load_fused(FIXTURE)
    assert list(table.columns) == [*FUSED_COLUMNS, "length"]
    assert set(table["op"]) == {"masked_softmax", "ragged_softmax"}
    masked = table[table["op"] == "masked_softmax"]
    assert set(masked["length"].dropna()) == {512, 1000, 1024, 2048}  # Lk of 2x16xLxL (1000: the tuning row)
    assert set(table.loc[table["op"] == "ragged_softmax", "length"]) == {8192, 147456}  # max= of the ragged shape
    assert str(table["median_us"].dtype) == "Float64" and str(table["reps"].dtype) == "Int64"


def test_missing_columns_are_named(tmp_path: Path) -> None:
    fields = [f for f in _bench_fields() if f not in ("median_us", "ideal_us")]
    path = _write(tmp_path / "bad.csv", fields, [["masked_softmax"] * len(fields)])
    with pytest.raises(ResultsError, match="missing column.*median_us, ideal_us"):
        load_fused(path)


@pytest.mark.parametrize(
    "column, value, match",
    [
        ("median_us", "inf", "median_us = 'inf'; allowed: a number from 0"),
        ("median_us", "-3", "allowed: a number from 0"),
        ("median_us", "1e400", "allowed"),
        ("reps", "2.5", "allowed: an integer"),
        ("pct_of_ideal", "=HYPERLINK()", "allowed: a number"),
        ("case", "x" * (MAX_FUSED_TEXT + 1), f"at most {MAX_FUSED_TEXT:,}"),
    ],
)
def test_hostile_values_are_refused_with_what_is_allowed(tmp_path: Path, column: str, value: str, match: str) -> None:
    fields = _bench_fields()
    row = dict.fromkeys(fields, "")
    row.update(op="masked_softmax", case="causal", dtype="float16", shape="2x16x512x512", backend="eager")
    row.update(method="cuda_graph", median_us="10", ideal_us="5", pct_of_ideal="50", reps="10")
    row[column] = value
    path = _write(tmp_path / "bad.csv", fields, [[row[f] for f in fields]])
    with pytest.raises(ResultsError, match=match):
        load_fused(path)


def test_non_regular_binary_truncated_and_huge_files_are_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    with pytest.raises(ResultsError, match="not a regular file"):
        load_fused(fifo)
    with pytest.raises(ResultsError, match="binary data"):
        load_fused(b"op,case\x00\n")
    with pytest.raises(ResultsError, match="empty"):
        load_fused(b"  \n")
    fields = _bench_fields()
    with pytest.raises(ResultsError, match="line 2 has 3 of 16 fields"):
        load_fused((",".join(fields) + "\na,b,c\n").encode())
    with pytest.raises(ResultsError, match="median_us appear twice"):
        load_fused((",".join([*fields, "median_us"]) + "\n").encode())
    with pytest.raises(ResultsError, match="at most 16 MB"):
        load_fused(b"x" * (17 * 2**20))


def test_markdown_in_a_file_is_kept_as_text_and_escaped_in_figures(tmp_path: Path) -> None:
    text = FIXTURE.read_text().replace(",inductor,", f",{HOSTILE},")
    table = load_fused(text.encode(), name="hostile.csv")
    assert HOSTILE in set(table["backend"])
    curve = views.curve(table, "cuda_graph", "masked_softmax", "causal", "float16")
    spec = json.loads(ff.fused_time_figure(curve, "masked_softmax", "causal", "float16", "cuda_graph").to_json())
    names = {t["name"] for t in spec["data"]}
    assert HOSTILE not in names and any("&lt;img" in n for n in names)
    assert "\\]\\(" in views.md(HOSTILE)


def test_tables_give_each_backend_time_pct_and_speedup() -> None:
    table = load_fused(FIXTURE)
    wide = views.fused_table(table[table["op"] == "masked_softmax"], "cuda_graph")
    assert len(wide) == 2 * 2 * 3  # case x dtype x L (the tuning row left out)
    row = wide[(wide["case"] == "causal") & (wide["dtype"] == "float16") & (wide["length"] == 1024)].iloc[0]
    assert row["blockscope µs"] == pytest.approx(32.54) and row["eager % ideal"] == pytest.approx(34.72)
    assert row["eager / blockscope"] == pytest.approx(117.1 / 32.54)
    failed = wide[(wide["case"] == "causal") & (wide["length"] == 2048)]
    assert all("sdpa_math_softmax: OutOfMemoryError" in f for f in failed["failed"])
    summary = views.speedup_summary(table, "cuda_graph").set_index(["op", "backend"])
    assert summary.loc[("masked_softmax", "eager"), "geomean_speedup"] == pytest.approx(3.6, rel=1e-3)
    assert summary.loc[("masked_softmax", "sdpa_math_softmax"), "points"] == 10  # two OOM rows left out
    assert summary.loc[("ragged_softmax", "pad_unpad"), "geomean_speedup"] == pytest.approx(9.5, rel=1e-3)
    assert views.backends(table)[0] == "blockscope" and "all" not in views.backends(table)
    assert views.methods(table) == ["cuda_graph", "back_to_back_flushed"]


def test_time_vs_l_figure_is_log_y_with_one_line_per_backend() -> None:
    table = load_fused(FIXTURE)
    curve = views.curve(table, "cuda_graph", "masked_softmax", "scale_mask_bias", "float32")
    fig = ff.fused_time_figure(curve, "masked_softmax", "scale_mask_bias", "float32", "cuda_graph")
    assert fig.layout.yaxis.type == "log"
    assert [t.name for t in fig.data] == ["blockscope", "eager", "inductor", "sdpa_math_softmax"]
    assert list(fig.data[0].x) == [512, 1024, 2048]


def test_a_missing_bundled_file_is_none(tmp_path: Path) -> None:
    assert views.load_bundled_fused(tmp_path / "absent.csv") is None
    assert paths.BUNDLED_FUSED.name == "h200_fused.csv" and paths.BUNDLED_FUSED.parent == paths.DATA_DIR


def _fused_page(monkeypatch: pytest.MonkeyPatch, bundled: Path):
    monkeypatch.setattr(views, "BUNDLED_FUSED_PATH", bundled)
    at = new_app()
    at.sidebar.radio(key="data_source").set_value("Demo data (synthetic)").run()
    at.switch_page("pages/backends.py").run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def test_the_page_says_how_to_make_the_benchmark_when_none_is_bundled(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    at = _fused_page(monkeypatch, tmp_path / "absent.csv")
    assert any(s.value == "Fused ops" for s in at.subheader)
    assert any("no fused-op benchmark bundled" in i.value and "tools.bench_fused" in i.value for i in at.info)


def test_the_page_renders_the_bundled_benchmark(monkeypatch: pytest.MonkeyPatch) -> None:
    at = _fused_page(monkeypatch, FIXTURE)
    specs = charts(at)
    titles = [s["layout"]["title"]["text"] for s in specs]
    assert any("masked_softmax causal" in t and "time per call" in t for t in titles)
    summary = next(d.value for d in at.dataframe if "geomean_speedup" in d.value.columns)
    assert summary["backend"].tolist()[0] == "eager"
    assert any("eager / blockscope" in d.value.columns for d in at.dataframe)
    at.selectbox(key="fo_op").set_value("ragged_softmax").run()
    assert not at.exception
    assert any("ragged_softmax" in s["layout"]["title"]["text"] for s in charts(at))


def test_a_typed_path_is_confined_and_a_bad_file_is_an_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    outside = _write(tmp_path / "bench_fused.csv", ["op"], [["x"]])
    monkeypatch.delenv(paths.ALLOWED_ROOTS_ENV, raising=False)
    at = _fused_page(monkeypatch, tmp_path / "absent.csv")
    at.radio(key="fo_source").set_value("path").run()
    at.text_input(key="fo_path").input(str(outside)).run()
    assert not at.exception
    assert any("outside the folders" in plain(e.value) for e in at.error)
    monkeypatch.setenv(paths.ALLOWED_ROOTS_ENV, str(tmp_path))
    at.text_input(key="fo_path").input(str(outside) + " ").run()  # a changed value: the page reruns
    assert not at.exception
    assert any("missing column" in plain(e.value) for e in at.error)
    hostile = tmp_path / f"{HOSTILE[:24]}.csv".replace("/", "_")
    hostile.write_text(FIXTURE.read_text().replace(",eager,", f",{HOSTILE},"))
    at.text_input(key="fo_path").input(str(hostile)).run()
    assert not at.exception, [e.message for e in at.exception]
    texts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [e.value for e in at.error]
    assert not any("](http://host" in t for t in texts)
    assert charts(at)
