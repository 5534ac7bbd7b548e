"""Export for design reviews: PNG (2x) / SVG / CSV per standard figure and the offline HTML report.

Exports the bundled H200 dataset when present, else the synthetic table, once per module (one Chromium
session); checks image sizes, SVG/CSV round trips, the report in Debian Chromium with the network off,
and the one-line errors (missing/corrupt file, unwritable dir, no Chromium, CLI exit 2).
"""

from __future__ import annotations

import importlib.util
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from PIL import Image

from blockscope.demo import synthetic_results
from blockscope.profiling.cli import main as cli_main
from blockscope.profiling.results import save_results
from blockscope.profiling.views import dashboard_data as dd
from blockscope.profiling.views import export
from blockscope.profiling.views.figures import EXPORT_WIDTH_PX, for_export, standard_figures

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="needs Debian chromium at /usr/bin/chromium (apt-get install chromium)"
)


def _source() -> Path | pd.DataFrame:
    return dd.BUNDLED_PATH if dd.BUNDLED_PATH.exists() else synthetic_results()


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory):
    """(out dir, written paths, FigureSpecs, progress calls) of one full export."""
    if not CHROMIUM.exists():
        pytest.skip("needs Debian chromium at /usr/bin/chromium (apt-get install chromium)")
    source = _source()
    op_rows: list[pd.DataFrame] = []
    table, _ = export.load_inputs(source, op_rows)  # as the export reads it: softmax rows, op rows apart
    out = tmp_path_factory.mktemp("export")
    calls: list[tuple[int, int, str]] = []
    written = export.export_all(source, out, progress=lambda d, t, n: calls.append((d, t, n)))
    methods = dd.options(table)["methods"]
    method = dd.DEFAULT_METHOD if dd.DEFAULT_METHOD in methods else methods[0]
    backends, numerics, warps_grid = export.bundled_companions(table)
    specs = standard_figures(
        table,
        method=method,
        backends=backends,
        numerics=numerics,
        warps_grid=warps_grid,
        fused=export.fused_companion(op_rows),
    )
    return out, written, specs, calls


@pytest.mark.browser
def test_every_figure_is_written_in_every_format(exported) -> None:
    out, written, specs, calls = exported
    expected = {f"{s.name}.{fmt}" for s in specs for fmt in ("png", "svg", "csv")} | {export.REPORT_NAME}
    assert {p.name for p in written} == expected
    assert any(p.name.startswith("fused_masked_softmax_causal_") for p in written), "the Fused ops section's figures"
    assert any(p.name.startswith("fused_ragged_softmax_") for p in written)
    assert all(p.parent == out and p.stat().st_size > 0 for p in written)
    assert [d for d, _, _ in calls] == list(range(1, len(expected) + 1))
    assert {t for _, t, _ in calls} == {len(expected)}


@pytest.mark.browser
def test_png_is_twice_the_layout_size(exported) -> None:
    out, _, specs, _ = exported
    for spec in specs:
        ready = for_export(spec.figure, "data | exported by")  # two footer lines, as every export has
        width, height = export.figure_size(ready)
        assert height >= spec.figure.layout.height and width == EXPORT_WIDTH_PX  # taller by its footer (and legend)
        with Image.open(out / f"{spec.name}.png") as image:
            assert image.format == "PNG"
            assert image.size == (2 * width, 2 * height), spec.name


@pytest.mark.browser
def test_svg_parses_at_layout_size(exported) -> None:
    out, _, specs, _ = exported
    for spec in specs:
        root = ET.parse(out / f"{spec.name}.svg").getroot()
        assert root.tag.endswith("svg")
        width, height = export.figure_size(for_export(spec.figure, "data | exported by"))
        assert (float(root.get("width")), float(root.get("height"))) == (width, height), spec.name


def _assert_same(read: pd.DataFrame, data: pd.DataFrame, name: str) -> None:
    assert list(read.columns) == [str(c) for c in data.columns], name
    assert len(read) == len(data), name
    for column in data.columns:
        want, got = data[column], read[str(column)]
        if pd.api.types.is_numeric_dtype(want) and not pd.api.types.is_bool_dtype(want):
            assert np.allclose(
                want.astype(float).to_numpy(), got.astype(float).to_numpy(), equal_nan=True, rtol=1e-12
            ), f"{name}.{column}"
        else:
            assert want.astype("string").fillna("").tolist() == got.astype("string").fillna("").tolist(), (
                f"{name}.{column}"
            )


@pytest.mark.browser
def test_csv_round_trips(exported) -> None:
    out, _, specs, _ = exported
    for spec in specs:
        _assert_same(pd.read_csv(out / f"{spec.name}.csv"), spec.data, spec.name)


@pytest.mark.browser
def test_html_has_one_plotly_div_per_figure_and_plotly_inline(exported) -> None:
    out, _, specs, _ = exported
    text = (out / export.REPORT_NAME).read_text(encoding="utf-8")
    assert text.count('class="plotly-graph-div"') == len(specs)
    for spec in specs:
        assert f'id="fig-{spec.name}"' in text
    assert "<script src=" not in text.replace(" ", "") and 'src="http' not in text
    assert text.count("Plotly.newPlot") == len(specs)
    for label in ("GPU", "CC", "SMs", "driver", "torch", "Triton", "copy GB/s", "date (UTC)", "Findings"):
        assert f">{label}<" in text


@pytest.mark.browser
def test_html_renders_offline_in_chromium(exported) -> None:
    from playwright.sync_api import sync_playwright

    out, _, specs, _ = exported
    errors: list[str] = []
    blocked: list[str] = []

    def route(r) -> None:
        if r.request.url.startswith(("file:", "data:", "blob:")):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            context.set_offline(True)
            context.route("**/*", route)
            page = context.new_page()
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto((out / export.REPORT_NAME).as_uri(), wait_until="load")
            page.wait_for_function(
                f"document.querySelectorAll('.js-plotly-plot').length >= {len(specs)}", timeout=60_000
            )
            plots = page.eval_on_selector_all(
                ".js-plotly-plot", "els => els.map(e => e.querySelectorAll('.main-svg').length)"
            )
        finally:
            browser.close()
    assert len(plots) == len(specs)
    assert all(n >= 1 for n in plots)
    assert errors == [] and blocked == []


def test_several_files_stack_with_source(tmp_path: Path) -> None:
    first = tmp_path / "h200.parquet"
    second = tmp_path / "other.csv"
    small = {"n_values": (256, 1024, 4096), "dtypes": ("fp16",), "variants": ("torch", "teaching", "multirow")}
    save_results(synthetic_results(**small), first)
    save_results(synthetic_results(seed=1, gpu_name="NVIDIA H100 (synthetic)", run_id="s-1", **small), second)
    written = export.export_all([first, second], tmp_path / "out", formats=("html", "csv"))
    names = {p.name for p in written}
    assert export.REPORT_NAME in names and not any(n.endswith((".png", ".svg")) for n in names)
    latency = pd.read_csv(tmp_path / "out" / f"latency_fp16_{dd.DEFAULT_METHOD}.csv")  # the default method
    assert set(latency["source"]) == {"h200.parquet", "other.csv"}
    html = (tmp_path / "out" / export.REPORT_NAME).read_text(encoding="utf-8")
    assert "NVIDIA H100 (synthetic)" in html and "NVIDIA H200 (synthetic)" in html


def _small() -> pd.DataFrame:
    return synthetic_results(n_values=(256, 1024), dtypes=("fp16",), variants=("torch", "teaching"))


def test_missing_and_corrupt_files_raise_export_error(tmp_path: Path) -> None:
    with pytest.raises(export.ExportError, match="does not exist"):
        export.export_all(tmp_path / "nope.parquet", tmp_path / "out")
    corrupt = tmp_path / "corrupt.parquet"
    corrupt.write_bytes(b"PAR1 this is not parquet PAR1")
    with pytest.raises(export.ExportError, match="corrupt.parquet.*corrupt parquet") as info:
        export.export_all(corrupt, tmp_path / "out")
    assert isinstance(info.value, ValueError) and "\n" not in str(info.value)
    garbage = tmp_path / "notes.csv"
    garbage.write_text("hello,world\n1,2\n")
    with pytest.raises(export.ExportError, match="notes.csv: not a Blockscope results file: CSV header lacks column"):
        export.export_all(garbage, tmp_path / "out")


def test_bad_options_raise_export_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    with pytest.raises(export.ExportError, match="cannot write to output directory"):
        export.export_all(_small(), blocker / "out", formats=("csv",))
    with pytest.raises(export.ExportError, match="unknown export format.*pdf.*allowed: png, svg, html, csv"):
        export.export_all(_small(), tmp_path / "out", formats=("pdf",))
    with pytest.raises(export.ExportError, match="timing method 'nope' is not in the results"):
        export.export_all(_small(), tmp_path / "out", formats=("csv",), method="nope")


def test_without_chromium_html_and_csv_are_still_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BROWSER_PATH", str(tmp_path / "no-chromium"))
    out = tmp_path / "out"
    with pytest.raises(export.ChromiumMissing) as info:
        export.export_all(_small(), out)
    message = str(info.value)
    assert "PNG/SVG skipped" in message and "no Chromium found" in message
    assert "apt-get install chromium" in message and "\n" not in message
    names = {p.name for p in info.value.written}
    assert export.REPORT_NAME in names and any(n.endswith(".csv") for n in names)
    assert not list(out.glob("*.png")) and not list(out.glob("*.svg"))
    with pytest.raises(export.ChromiumMissing, match="apt-get install chromium"):
        export.figure_to_png(go.Figure())


@needs_chromium
@pytest.mark.browser
def test_single_figure_png_and_svg() -> None:
    fig = go.Figure(go.Scatter(x=[1, 2, 3], y=[3, 1, 2]))
    fig.update_layout(width=400, height=300)
    import io

    with export.ImageSession() as session:
        png = export.figure_to_png(fig, session=session)
        svg = export.figure_to_svg(fig, session=session)
    with Image.open(io.BytesIO(png)) as image:
        assert image.size == (800, 600)
    assert ET.fromstring(svg).get("width") == "400"


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch):
    """blockscope.profiling.cli.main.main with only the command modules that exist in this checkout."""
    present = tuple(m for m in cli_main.COMMAND_MODULES if importlib.util.find_spec(m) is not None)
    monkeypatch.setattr(cli_main, "COMMAND_MODULES", present)
    return cli_main.main


def _one_line_error(capsys: pytest.CaptureFixture) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    err = [line for line in err if line.strip()]
    assert len(err) == 1, err
    return err[0]


def test_cli_errors_exit_2_with_one_line(tmp_path: Path, cli, capsys: pytest.CaptureFixture) -> None:
    assert cli(["export", "--results", str(tmp_path / "missing.parquet"), "--out", str(tmp_path / "o")]) == 2
    assert "does not exist" in _one_line_error(capsys)
    results = tmp_path / "r.csv"
    save_results(_small(), results)
    assert cli(["export", "--results", str(results), "--out", str(tmp_path / "o"), "--format", "png,gif"]) == 2
    assert "unknown export format(s) gif" in _one_line_error(capsys)
    with pytest.raises(SystemExit) as info:
        cli(["export", "--results", str(results), "--out", str(tmp_path / "o"), "--method", "bogus"])
    assert info.value.code == 2
    assert "--method" in _one_line_error(capsys)


def test_cli_exports_html_and_csv(tmp_path: Path, cli, capsys: pytest.CaptureFixture) -> None:
    results = tmp_path / "r.parquet"
    save_results(_small(), results)
    out = tmp_path / "o"
    code = cli(
        ["export", "--results", str(results), "--out", str(out), "--format", "html,csv", "--method", "cuda_graph"]
    )
    assert code == 0
    assert "wrote" in capsys.readouterr().out
    assert (out / export.REPORT_NAME).exists()
    assert (out / "latency_fp16_cuda_graph.csv").exists()


def _page_app(formats: list[str]):
    """pages/export.py under AppTest with a loaded small synthetic table in the shared Context."""
    from streamlit.testing.v1 import AppTest

    from blockscope.pages import _common as ui

    df = _small()
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "pages" / "export.py"), default_timeout=120)
    at.session_state[ui.CONTEXT_KEY] = ui.Context(df=df, filtered=df, label="small synthetic")
    at.run()
    assert not at.exception, at.exception
    at.multiselect(key="exp_formats").set_value(formats).run()
    return at


def _download_labels(at) -> list[str]:
    return [element.proto.label for element in at.get("download_button")]


def test_export_page_offers_zip_and_html(monkeypatch: pytest.MonkeyPatch) -> None:
    at = _page_app(["html", "csv"])
    assert _download_labels(at) == []
    at.button(key="exp_run").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert any("Exported" in s.value for s in at.success)
    assert _download_labels(at) == ["Download all (zip)", "Download HTML report"]


def test_export_page_without_chromium_warns_and_still_exports(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("BROWSER_PATH", str(tmp_path / "no-chromium"))
    at = _page_app(["png", "html"])
    assert any("apt-get install chromium" in w.value for w in at.warning)
    at.button(key="exp_run").click().run()
    assert not at.exception, at.exception
    assert any("PNG/SVG skipped" in w.value for w in at.warning)
    assert "Download HTML report" in _download_labels(at)


def _buttons_script() -> None:
    import plotly.graph_objects as go

    from blockscope.demo import synthetic_results
    from blockscope.pages._exports import export_buttons

    export_buttons(go.Figure(go.Bar(x=[1, 2], y=[3, 4])), synthetic_results(n_values=(256,)).head(3), "bars", "b")


def test_export_buttons(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_buttons_script, default_timeout=60)
    if CHROMIUM.exists():
        at.run()
        assert not at.exception, at.exception
        assert _download_labels(at) == ["PNG (2x)", "SVG", "CSV"]
    monkeypatch.setenv("BROWSER_PATH", str(tmp_path / "no-chromium"))
    at = AppTest.from_function(_buttons_script, default_timeout=60).run()
    assert not at.exception, at.exception
    assert _download_labels(at) == ["CSV"]
    assert any("apt-get install chromium" in c.value for c in at.caption)


@needs_chromium
@pytest.mark.browser
def test_export_buttons_image_bytes_are_cached() -> None:
    from blockscope.pages import _exports

    fig = go.Figure(go.Bar(x=[1, 2], y=[3, 4]))
    fig.update_layout(width=300, height=200)
    png = _exports._image(fig.to_json(), "png")
    assert _exports._image(fig.to_json(), "png") is png  # second click: cached, no Chromium
    import io

    with Image.open(io.BytesIO(png)) as image:
        assert image.size == (600, 400)


def _foreign(tmp_path: Path) -> Path:
    """A results CSV whose Triton rows carry names the registry does not know, one of them path-like."""
    table = _small()
    extra = table[table["variant"] == "teaching"]
    table = pd.concat(
        [
            table.assign(variant=table["variant"].replace({"teaching": "teaching_v2"})),
            extra.assign(variant="inductor"),
            extra.assign(variant="x/../../escaped"),
            extra.assign(variant="x_.._.._escaped"),
        ],
        ignore_index=True,
    )
    return save_results(table, tmp_path / "foreign.csv")


def test_cli_exports_foreign_variants_inside_out(tmp_path: Path, cli, capsys: pytest.CaptureFixture) -> None:
    import re

    out = tmp_path / "deep" / "out"
    assert cli(["export", "--results", str(_foreign(tmp_path)), "--out", str(out), "--format", "csv,html"]) == 0
    assert "wrote" in capsys.readouterr().out
    written = sorted(
        p for p in tmp_path.rglob("*") if p.is_file() and p.name != "foreign.csv" and not p.name.startswith(".")
    )
    assert written and all(p.parent == out for p in written), written
    assert all(re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", p.name) for p in written), written
    names = {p.name for p in written}
    method = dd.DEFAULT_METHOD
    assert {
        f"heatmap_teaching_v2_fp16_{method}.csv",
        f"heatmap_x_.._.._escaped_fp16_{method}.csv",
        f"heatmap_x_.._.._escaped_fp16_{method}-2.csv",
    } <= names  # two values, one safe name: no overwrite
    assert f"heatmap_inductor_fp16_{method}.csv" not in names  # a peer backend: not a num_warps axis of ours
    latency = pd.read_csv(out / f"latency_fp16_{method}.csv")
    assert {"teaching_v2", "inductor", "x/../../escaped", "torch"} <= set(latency["variant"])  # shown as they are
    assert "teaching_v2" in (out / export.REPORT_NAME).read_text(encoding="utf-8")


def test_output_path_stays_inside(tmp_path: Path) -> None:
    assert export.output_path(tmp_path, "../../etc/passwd", "csv") == tmp_path / "_.._etc_passwd.csv"
    assert export.output_path(tmp_path, "..", "png").parent == tmp_path
    assert export.output_path(tmp_path, "a b/c\\d:e", "s/vg").name == "a_b_c_d_e.s_vg"


def test_export_page_exports_foreign_variants(tmp_path: Path) -> None:
    from streamlit.testing.v1 import AppTest

    from blockscope.pages import _common as ui

    df = dd.load_table(_foreign(tmp_path))
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "pages" / "export.py"), default_timeout=120)
    at.session_state[ui.CONTEXT_KEY] = ui.Context(df=df, filtered=df, label="foreign")
    at.run()
    at.multiselect(key="exp_formats").set_value(["csv"]).run()
    at.button(key="exp_run").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert any("Exported" in s.value for s in at.success)


def test_cli_says_a_directory_is_a_directory(tmp_path: Path, cli, capsys: pytest.CaptureFixture) -> None:
    assert cli(["export", "--results", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    line = _one_line_error(capsys)
    assert "is a directory" in line and "expected a Blockscope results .parquet or .csv file" in line
    assert "does not exist" not in line


@pytest.mark.browser
def test_every_page_s_figures_are_exported_with_a_provenance_footer(exported) -> None:
    out, written, specs, _ = exported
    names = {s.name for s in specs}
    for prefix in ("overview_speedup", "latency_", "masked_lanes", "occupancy_limits_", "heatmap_"):
        assert any(n.startswith(prefix) for n in names), prefix
    if dd.BUNDLED_PATH.exists():  # the bundled companions: backends capture and numerics
        assert any(n.startswith("backends_latency") for n in names) and any(n.startswith("numerics_") for n in names)
    svg = (out / f"{specs[0].name}.svg").read_text(encoding="utf-8")
    assert "exported by Blockscope" in svg and "data: " in svg
    report = (out / export.REPORT_NAME).read_text(encoding="utf-8")
    assert "exported by Blockscope" in report
    op_runs = set()
    if dd.BUNDLED_PATH.exists():  # the fused figures' rows are another run: the footers name it too
        from blockscope.profiling.results import load_results

        bundled = load_results(dd.BUNDLED_PATH)
        op_runs = set(bundled.loc[bundled["op"] != "softmax", "run_id"])
    for run in op_runs:
        assert run in svg and run in report, run


def test_for_export_makes_room_for_the_whole_legend_and_the_footer() -> None:
    import plotly.graph_objects as go

    fig = go.Figure([go.Scatter(x=[1], y=[1], name=f"series {i}") for i in range(30)])
    fig.update_layout(height=300, margin={"t": 50, "b": 50})
    ready = for_export(fig, "data: x | exported by y")
    assert ready.layout.height >= 30 * 30 + 40  # 30 legend rows fit in the plot area
    assert ready.layout.width == EXPORT_WIDTH_PX
    assert any("exported by y" in a.text for a in ready.layout.annotations)
    assert fig.layout.height == 300 and not fig.layout.annotations  # the page's figure is left as it was


def test_fused_figures_come_from_the_inputs_op_rows_else_the_bundled_benchmark() -> None:
    """The export draws the Backends page's Fused ops figures from what that page shows first: the loaded file's
    `sweep --op` rows, else the bundled fused-op benchmark (bench_fused.csv)."""
    from blockscope.profiling.views import fused
    from blockscope.profiling.views.figures import _fused_specs

    if not dd.BUNDLED_PATH.exists() or not fused.BUNDLED_FUSED_PATH.exists():
        pytest.skip("needs the bundled data")
    op_rows: list[pd.DataFrame] = []
    table, _ = export.load_inputs(dd.BUNDLED_PATH, op_rows)
    assert set(table["op"]) == {"softmax"} and op_rows
    assert set(pd.concat(op_rows)["op"]) == {"masked_softmax", "ragged_softmax"}
    names = {spec.name for spec in _fused_specs(export.fused_companion(op_rows), "cuda_graph")}
    assert {"fused_masked_softmax_causal_fp16_cuda_graph", "fused_ragged_softmax_uniform_fp16_cuda_graph"} <= names
    bundled = export.fused_companion([])
    assert bundled is not None and len(bundled) and len(_fused_specs(bundled, "cuda_graph"))
    assert export.fused_companion([table.iloc[:0]]) is not None  # empty parts: the bundled benchmark


def test_the_dashboard_export_draws_fused_figures_from_its_op_rows(tmp_path: Path) -> None:
    """The Export page hands its softmax rows and its op rows apart (as the sidebar keeps them): the fused-op
    figures are those rows', not the bundled benchmark's."""
    from blockscope.profiling.views import fused

    if not dd.BUNDLED_PATH.exists():
        pytest.skip("needs the bundled data")
    op_rows: list[pd.DataFrame] = []
    table, _ = export.load_inputs(dd.BUNDLED_PATH, op_rows)
    ops = pd.concat(op_rows, ignore_index=True)
    written = export.export_all({"loaded": table}, tmp_path, formats=["csv"], method="cuda_graph", op_rows=ops)
    name = "fused_ragged_softmax_uniform_fp16_cuda_graph.csv"
    assert name in {p.name for p in written}
    data = pd.read_csv(tmp_path / name)
    expected = fused.curve(fused.from_op_rows(ops), "cuda_graph", "ragged_softmax", "uniform", "float16")
    assert data["median_us"].round(3).tolist() == expected["median_us"].astype(float).round(3).tolist()
