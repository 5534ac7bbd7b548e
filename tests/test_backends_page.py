"""The Backends page's tables (pure pandas) and the page itself under AppTest, on synthetic peer rows."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from blockscope.demo import synthetic_backends
from blockscope.profiling.results import save_results
from blockscope.profiling.views import backends as views
from tests.test_app import charts, load_path, new_app, trace_names


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return synthetic_backends()


def test_row_status_classes():
    assert [
        views.row_status(e)
        for e in ("", None, "unsupported: quack: x", "wrong result: 3 of 9", "skipped: predicted", "RuntimeError: boom")
    ] == ["ran", "ran", "unsupported", "wrong", "skipped", "failed"]


def test_fastest_marks_the_winner_per_n(table):
    best = views.fastest(table, "cuda_graph", "fp16")
    assert set(best["variant"]) == {"torch", "inductor", "liger", "quack", "auto"}
    per_n = best.groupby("n_cols")["vs_best"].min()
    assert (per_n == 1.0).all()  # exactly one backend at 1.0 at each N
    assert best.loc[(best["variant"] == "liger"), "n_cols"].max() == 65536  # unsupported shapes have no time
    assert not ((best["variant"] == "quack") & (best["n_cols"] == 131072)).any()  # wrong result: never timed


def test_winners_and_counts(table):
    winners = views.winners(table, "cuda_graph")
    assert len(winners) == 2 * 6  # fp16 and fp32 x 6 N
    assert set(winners["winner"]) <= {"quack", "auto"}  # the fastest by the synthetic model (0.78-0.80 x torch)
    assert (winners["runner_up_slower_x"] >= 1.0).all()
    counts = views.win_counts(winners)
    assert counts["wins"].sum() == len(winners)


def test_support_counts_name_each_rule_once(table):
    support = views.support(table)
    assert len(support) == 5 * 2 * 6
    counts = views.support_counts(support).set_index("backend")
    assert counts.loc["liger", "unsupported"] == 2 and counts.loc["quack", "wrong"] == 1
    assert counts.loc["quack", "unsupported"] == 2  # N = 1001 in fp16 and fp32
    assert counts.loc["liger", "why not"].count("over its limit of 65536") == 1
    assert list(counts.index[:4]) == ["torch", "inductor", "liger", "quack"]


def test_kernel_ranges_join_consecutive_n(table):
    ranges = views.kernel_ranges(table[table["dtype"] == "fp16"])
    liger = ranges[ranges["backend"] == "liger"]
    assert len(liger) == 1 and (liger["n_from"].iloc[0], liger["n_to"].iloc[0]) == (128, 65536)
    torch_ranges = ranges[ranges["backend"] == "torch"]
    assert torch_ranges["n_from"].tolist() == sorted(torch_ranges["n_from"]) and len(torch_ranges) >= 2
    assert len(views.generated_sources(table)) == 12


def test_the_page_renders_peers_from_a_loaded_file(tmp_path: Path, table):
    from blockscope.demo import synthetic_results
    from blockscope.profiling.results import concat_results

    teaching = synthetic_results(n_values=(128, 1000, 1001, 4096, 65536))
    path = tmp_path / "backends.parquet"
    save_results(concat_results([table, teaching[teaching["variant"] == "teaching"]]), path)
    at = load_path(new_app(), path)
    at.switch_page("pages/backends.py").run()
    assert not at.exception, [e.message for e in at.exception]
    specs = charts(at)
    assert len(specs) >= 5
    assert {"torch", "inductor", "liger", "quack", "auto"} <= trace_names(specs[0])
    assert any("Which backend runs which shape" in s["layout"]["title"]["text"] for s in specs)
    assert at.toggle(key="be_headline").value is True and "teaching" not in trace_names(specs[0])
    at.toggle(key="be_headline").set_value(False).run()
    assert "teaching" in trace_names(charts(at)[0])


def test_loaded_data_lacking_some_peers_can_switch_to_the_bundled_capture(monkeypatch, tmp_path: Path, table):
    bundled = tmp_path / "bundled_backends.parquet"
    save_results(table, bundled)
    monkeypatch.setattr(views, "BUNDLED_BACKENDS_PATH", bundled)
    loaded = tmp_path / "no_liger_quack.parquet"
    save_results(table[~table["variant"].isin(["liger", "quack"])], loaded)
    at = load_path(new_app(), loaded)
    at.switch_page("pages/backends.py").run()
    assert not at.exception, [e.message for e in at.exception]
    assert at.radio(key="be_source").value is True  # the loaded data first, saying what it lacks
    assert any("No liger, quack rows in the loaded data" in c.value for c in at.caption)
    assert not {"liger", "quack"} & trace_names(charts(at)[0])
    at.radio(key="be_source").set_value(False).run()
    assert {"liger", "quack"} <= trace_names(charts(at)[0])


def test_the_page_says_where_peers_come_from(monkeypatch, tmp_path: Path):
    monkeypatch.setattr(views, "BUNDLED_BACKENDS_PATH", tmp_path / "missing.parquet")
    at = new_app()
    at.sidebar.radio(key="data_source").set_value("Demo data (synthetic)").run()
    at.switch_page("pages/backends.py").run()
    assert not at.exception, [e.message for e in at.exception]
    assert any("no peer backends" in w.value for w in at.warning)


def test_versus_auto_is_the_geomean_of_time_ratios(table):
    against = views.versus(table, "cuda_graph").set_index("backend")
    assert list(against.index) == ["torch", "inductor", "liger", "quack"]
    assert against.loc["liger", "points"] == 2 * 5  # N = 131072 unsupported, in both dtypes
    assert against.loc["quack", "points"] == 2 * 6 - 2 - 1  # N = 1001 unsupported (x2), fp16 131072 wrong
    # the synthetic model: torch 1 / auto 0.78, quack 0.80 / 0.78 (+-3% noise each)
    assert against.loc["torch", "geomean backend / auto"] == pytest.approx(1 / 0.78, rel=0.05)
    assert against.loc["quack", "geomean backend / auto"] == pytest.approx(0.80 / 0.78, rel=0.05)
    assert views.versus(table[table["variant"] != "auto"], "cuda_graph").empty


def test_versus_gives_each_ratios_range_and_where_the_reference_is_slower():
    """backend / auto = 2.0 at fp16 N=256 and 0.5 at N=512: geomean 1, range 0.5-2, auto slower at N=512."""
    rows = [
        ("auto", 256, 1.0),
        ("auto", 512, 2.0),
        ("torch", 256, 2.0),
        ("torch", 512, 1.0),
        ("liger", 1024, 1.0),  # no auto time at N=1024: no point, no row
    ]
    df = pd.DataFrame(
        {"variant": v, "dtype": "fp16", "n_cols": n, "median_us": t, "method": "cuda_graph", "error": ""}
        for v, n, t in rows
    )
    against = views.versus(df, "cuda_graph").set_index("backend")
    assert list(against.index) == ["torch"]
    torch_row = against.loc["torch"]
    assert torch_row["points"] == 2 and torch_row["geomean backend / auto"] == pytest.approx(1.0)
    assert (torch_row["worst"], torch_row["best"], torch_row["under 0.95"]) == (0.5, 2.0, 1)
    assert torch_row["worst at"] == "fp16 N=512" and torch_row["auto slower at"] == "fp16 N=512 0.50x"
    alone = views.versus(df[df["variant"] == "auto"], "cuda_graph")
    assert alone.empty and "auto slower at" in alone.columns  # auto timed, no peer: columns, no rows
    assert views.versus(df[df["variant"] != "auto"], "cuda_graph").columns.empty


def test_backends_headline_reads_the_versus_table(tmp_path: Path, table):
    """README's headline: per method and dtype group, each peer's range, geomean and points from versus."""
    report = _backends_report()
    results = tmp_path / "b.parquet"
    save_results(table, results)
    lines = report.headline(results)
    assert [line.split(":")[0] for line in lines] == [
        "cuda_graph 16-bit",
        "cuda_graph fp32",
        "back_to_back_flushed 16-bit",
        "back_to_back_flushed fp32",
    ]
    torch_row = views.versus(table[table["dtype"] == "fp32"], "cuda_graph").set_index("backend").loc["torch"]
    expected = (
        f"torch {torch_row['worst']:.2f}-{torch_row['best']:.2f}x (geomean "
        f"{torch_row['geomean backend / auto']:.2f}x, {torch_row['points']} N)"
    )
    assert lines[1].startswith(f"cuda_graph fp32: {expected}"), lines[1]


def test_backends_report_section_is_rewritten_in_place(tmp_path: Path, table):
    report = _backends_report()
    results = tmp_path / "b.parquet"
    save_results(table, results)
    text = report.section(results)
    assert "| liger | 10 |" in text and "Fastest backend at each (dtype, N):" in text
    assert "- (unsupported)" in text and "- (wrong)" in text  # liger over 65536, quack's NaN row
    doc = tmp_path / "doc.md"
    doc.write_text("# head\n\nkeep me\n")
    for _ in range(2):  # a rerun replaces the section, never appends a second one
        import sys

        argv, sys.argv = sys.argv, ["backends_report.py", "--results", str(results), "--doc", str(doc)]
        try:
            assert report.main() == 0
        finally:
            sys.argv = argv
    written = doc.read_text()
    assert written.startswith("# head\n\nkeep me\n") and written.count(report.BEGIN) == 1


def test_backends_report_leaves_the_fused_op_rows_out(tmp_path: Path, table):
    """A results file with `sweep --op` rows (their backends include inductor, their L coincides with N): the
    section and the headline are the row-softmax rows' alone."""
    report = _backends_report()
    plain, mixed = tmp_path / "plain.parquet", tmp_path / "mixed.parquet"
    save_results(table, plain)
    ops = table[table["variant"].isin(["inductor", "torch"])].copy()
    ops["op"], ops["case"] = "masked_softmax", "causal"
    ops["variant"] = ops["variant"].replace({"torch": "eager"})
    ops["median_us"] = ops["median_us"] * 7.0
    save_results(pd.concat([table, ops], ignore_index=True), mixed)
    assert report.headline(mixed) == report.headline(plain)
    assert "eager" not in report.section(mixed).split("\n")[2]


def _backends_report():
    """tools/backends_report.py as a module (tools/ is no package on the test path)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "backends_report", Path(__file__).parents[1] / "tools" / "backends_report.py"
    )
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    return report
