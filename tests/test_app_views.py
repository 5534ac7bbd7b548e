"""AppTest of the Tradeoffs heatmaps, the Run vs run page and the auto page (streamlit.testing.v1)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from blockscope.demo import synthetic_results
from blockscope.profiling.results import save_results
from blockscope.profiling.views import dashboard_data as dd
from blockscope.profiling.views.dashboard_data import BUNDLED_PATH
from tests.test_app import (
    _compile_cache,  # noqa: F401 - autouse: one compile cache per session
    charts,
    load_path,
    new_app,
)
from tests.texts import plain

SMALL = {"n_values": (256, 1024, 1025, 4096), "dtypes": ("fp16",), "variants": ("torch", "teaching", "online")}


@pytest.fixture(scope="module")
def results_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("views") / "synthetic.parquet"
    save_results(synthetic_results(**SMALL), path)
    return path


def ratio_table(at) -> pd.DataFrame:
    """The page's 'Ratio per config' table (the chart's data table, one row per variant and N, comes first)."""
    return [d.value for d in at.dataframe if "ratio_high" in d.value.columns][-1]


def test_tradeoffs_latency_heatmap_is_one_at_the_best_num_warps(results_file: Path) -> None:
    at = load_path(new_app(), results_file)
    at.switch_page("pages/tradeoffs.py").run()
    assert not at.exception, at.exception
    method = at.sidebar.selectbox(key="f_method").value
    heatmap = next(spec for spec in charts(at) if "relative to the fastest" in spec["layout"]["title"]["text"])
    measured = heatmap["data"][0]
    table = synthetic_results(**SMALL)
    variant = at.segmented_control(key="trade_variant").value
    rows = table[(table["variant"] == variant) & (table["method"] == method) & (table["error"] == "")]
    times = rows.groupby(["n_cols", "num_warps"])["median_us"].min().unstack()
    for i, n in enumerate(measured["y"]):
        best = str(int(times.loc[int(n)].astype(float).idxmin()))
        row = measured["z"][i]
        assert row[measured["x"].index(best)] == 1.0
        assert min(v for v in row if v is not None) == 1.0


def test_tradeoffs_falls_back_to_the_bundled_num_warps_grid(tmp_path: Path) -> None:
    """A file with one num_warps per variant and N (the default sweep) has no heatmap to draw: the page says so and
    shows the bundled grid, with only Triton variants (no torch, auto or peers) to pick."""
    from blockscope.profiling.views import tradeoffs

    one = synthetic_results(
        n_values=(256, 1024), variants=("torch", "teaching", "online"), dtypes=("fp16",), num_warps=(4,)
    )
    assert tradeoffs.warps_axis_variants(one) == []
    path = tmp_path / "one_warps.parquet"
    save_results(one, path)
    at = load_path(new_app(), path)
    at.switch_page("pages/tradeoffs.py").run()
    assert not at.exception, at.exception
    assert any("h200_warps_grid.parquet" in i.value for i in at.info)
    assert charts(at), "no heatmap drawn from the bundled grid"
    grid = pd.read_parquet(tradeoffs.BUNDLED_WARPS_GRID_PATH)
    assert set(tradeoffs.warps_axis_variants(grid)) == {
        "teaching",
        "multirow",
        "online",
        "persistent",
        "splitrow",
        "warprows",
        "stagedrows",
        "cluster",
        "staged",
    }


def test_run_vs_run_computes_ratios_from_two_uploaded_files(results_file: Path) -> None:
    other = synthetic_results(seed=5, run_id="synthetic-5", **SMALL)
    at = new_app()
    at.sidebar.radio(key="data_source").set_value("Upload results files").run()
    at.sidebar.file_uploader(key="uploads").set_value(
        [
            ("before.parquet", results_file.read_bytes(), "application/octet-stream"),
            ("after.csv", other.to_csv(index=False).encode(), "text/csv"),
        ]
    ).run()
    at.switch_page("pages/run_vs_run.py").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="rvr_a").value == "after.csv" and at.selectbox(key="rvr_b").value == "before.parquet"
    at.segmented_control(key="rvr_mode").set_value("same config").run()
    method = at.sidebar.selectbox(key="f_method").value
    table = ratio_table(at)
    a = other[(other["method"] == method) & (other["error"] == "")]
    b = synthetic_results(**SMALL)
    b = b[(b["method"] == method) & (b["error"] == "")]
    expected = b.merge(a, on=["variant", "n_cols", "tunables"], suffixes=("_b", "_a"))
    expected = (expected["median_us_b"] / expected["median_us_a"]).sort_values().to_numpy()
    assert len(table) == len(expected)
    assert sorted(table["ratio"]) == pytest.approx(expected)
    assert charts(at) and any("Run B / run A" in spec["layout"]["title"]["text"] for spec in charts(at))


def test_run_vs_run_with_one_run_says_how_to_load_two(results_file: Path) -> None:
    at = load_path(new_app(), results_file)
    at.switch_page("pages/run_vs_run.py").run()
    assert not at.exception
    assert any("Upload results files" in i.value for i in at.info)
    at.toggle(key="rvr_demo").set_value(True).run()
    assert not at.exception
    assert len(ratio_table(at)) and "B / A" in " ".join(m.label for m in at.metric)


@pytest.mark.skipif(not BUNDLED_PATH.exists(), reason="needs the bundled H200 dataset")
def test_run_vs_run_opens_on_the_bundled_pair() -> None:
    at = new_app()  # the bundled dataset: one run, and its bundled repeat beside it
    at.switch_page("pages/run_vs_run.py").run()
    assert not at.exception, at.exception
    assert not any("Upload results files" in i.value for i in at.info)
    options = at.selectbox(key="rvr_a").options
    assert len(options) == 2 and any("repeat" in o for o in options), options
    assert len(ratio_table(at))


def test_auto_page_shows_the_pick_for_a_typed_shape() -> None:
    import torch

    from blockscope.kernels import auto

    at = new_app()
    at.switch_page("pages/auto.py").run()
    assert not at.exception, at.exception
    at.sidebar.selectbox(key="f_dtype").set_value("fp16").run()  # the page follows the sidebar's dtype
    at.number_input(key="auto_rows").set_value(4096).run()
    at.number_input(key="auto_n").set_value(2049).run()  # a Triton (not Gluon) entry: the interpreter runs it
    assert not at.exception, at.exception
    variant, tunables = auto.choose(4096, 2049, torch.float16, "NVIDIA H200")
    pick = next(m for m in at.metric if "auto picks for fp16 R=4,096 N=2,049" in m.label)
    assert pick.value == variant
    assert any(f"`{json.dumps(tunables, sort_keys=True)}`" in m.value and "N=2,049" in m.value for m in at.markdown)
    candidates = [
        spec for spec in charts(at) if "Tuner's candidates at fp16 R=4,096 N=2,049" in spec["layout"]["title"]["text"]
    ]
    assert candidates and "#d62728" in candidates[0]["data"][0]["marker"]["color"]  # the pick is marked
    backends = next(d.value for d in at.dataframe if "vs_auto" in d.value.columns)
    assert backends.loc[backends["variant"] == "auto", "vs_auto"].item() == 1.0
    at.number_input(key="auto_n").set_value(5000).run()
    assert any("was not measured" in i.value and "4,097" in i.value for i in at.info)


@pytest.mark.parametrize("page", ["pages/occupancy.py", "pages/kernel_evidence.py"])
def test_ncu_section_shows_bundled_validation_beside_estimates(page: str) -> None:
    """The bundled ncu validation, joined to the bundled sweep's estimates: ncu's values unchanged, estimates where
    the sweep has the config."""
    from blockscope.profiling.views import dashboard_data as dd

    ncu = dd.load_ncu()
    if ncu is None or not BUNDLED_PATH.exists():
        pytest.skip("bundled data absent")
    at = new_app()
    at.switch_page(page).run(timeout=120)
    assert not at.exception, at.exception
    tables = [d.value for d in at.dataframe if {"ncu_registers", "n_regs"} <= set(d.value.columns)]
    assert tables, f"{page}: no table of ncu beside estimates"
    table = tables[-1]
    assert len(table) == len(ncu)
    assert table["ncu_registers"].tolist() == ncu["ncu_registers"].tolist()
    if page == "pages/occupancy.py":
        assert table["estimated_occupancy_pct"].notna().any()


def test_sidebar_catalog_folder_picks_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A catalog folder under the working directory lists its results files; picking two stacks them; a folder
    outside the working directory is refused."""
    pytest.importorskip("duckdb")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results").mkdir()
    save_results(synthetic_results(**SMALL), tmp_path / "results" / "a.parquet")
    save_results(synthetic_results(**SMALL, seed=1, run_id="run-b"), tmp_path / "results" / "b.parquet")
    pd.DataFrame({"x": [1]}).to_parquet(tmp_path / "results" / "other.parquet")
    at = new_app()
    at.sidebar.radio(key="data_source").set_value("Catalog folder").run()
    assert not at.exception, at.exception
    runs = at.sidebar.multiselect(key="catalog_runs")
    assert [o.split(" ")[0] for o in runs.options] == ["a.parquet", "b.parquet"]
    assert any("1 other Parquet file" in c.value for c in at.sidebar.caption)
    runs.set_value(list(runs.options)).run()
    assert not at.exception, at.exception
    assert not any("Could not load" in e.value for e in at.sidebar.error)
    at.sidebar.text_input(key="catalog_dir").input("../").run()
    assert any("outside the working directory" in e.value for e in at.sidebar.error)


def test_kernel_evidence_shows_the_proton_tree_beside_a_typed_path(results_file: Path, tmp_path: Path) -> None:
    from blockscope.profiling.results.sidecars import proton_dir_for
    from blockscope.profiling.views.hatchet import hatchet_table

    copy = tmp_path / results_file.name
    copy.write_bytes(results_file.read_bytes())
    folder = proton_dir_for(copy)
    folder.mkdir()
    fixture = Path(__file__).parent / "fixtures" / "sweep.hatchet"
    (folder / "run-1.hatchet").write_bytes(fixture.read_bytes())
    at = load_path(new_app(), copy)
    at.switch_page("pages/kernel_evidence.py").run()
    assert not at.exception, at.exception
    tree = next(d.value for d in at.dataframe if "inclusive_time_ns" in d.value.columns)
    expected = hatchet_table(fixture)
    assert tree["inclusive_time_ns"].tolist() == expected["inclusive_time_ns"].tolist()
    assert tree["name"].iloc[2] == "    row_softmax_kernel"  # indented by depth


def test_run_vs_run_refuses_different_gpu_uuids_until_forced() -> None:
    a = synthetic_results(**SMALL)
    b = synthetic_results(seed=5, run_id="synthetic-5", **SMALL)
    a["gpu_uuid"], b["gpu_uuid"] = "GPU-aaaa", "GPU-bbbb"
    at = new_app()
    at.sidebar.radio(key="data_source").set_value("Upload results files").run()
    at.sidebar.file_uploader(key="uploads").set_value(
        [
            ("a.csv", a.to_csv(index=False).encode(), "text/csv"),
            ("b.csv", b.to_csv(index=False).encode(), "text/csv"),
        ]
    ).run()
    at.switch_page("pages/run_vs_run.py").run()
    assert not at.exception, at.exception
    assert any("Not compared" in plain(w.value) and "GPU-aaaa" in plain(w.value) for w in at.warning)
    assert not [d for d in at.dataframe if "ratio_high" in d.value.columns]
    at.checkbox(key="rvr_force").check().run()
    assert not at.exception, at.exception
    assert any("Compared although" in plain(w.value) for w in at.warning)
    assert len(ratio_table(at))


def test_occupancy_page_reads_an_uploaded_ncu_csv() -> None:
    raw = Path(__file__).parent / "fixtures" / "ncu_raw.csv"
    at = new_app()
    at.switch_page("pages/occupancy.py").run()
    at.radio(key="occ_ncu_source").set_value("Upload an ncu-import table or ncu --csv output").run()
    at.file_uploader(key="occ_ncu_upload").set_value([("ncu_raw.csv", raw.read_bytes(), "text/csv")]).run()
    assert not at.exception, at.exception
    beside = [d.value for d in at.dataframe if "ncu_blocks_per_sm" in d.value.columns][-1]
    assert beside["ncu_blocks_per_sm"].tolist() == [32, 16, 3]
    at.file_uploader(key="occ_ncu_upload").set_value([("bad.csv", b"a,b\n1,2\n", "text/csv")]).run()
    assert any("not an Nsight Compute CSV" in e.value for e in at.error)


def test_one_r_per_n_keeps_rows_only_when_no_n_has_two_r():
    """The R filter offers "each N's own" only where no (dtype, N) was measured at two R (curves never mix R)."""
    one = pd.DataFrame({"dtype": ["fp16", "fp16", "fp32"], "n_cols": [8, 1024, 8], "n_rows": [1048576, 4096, 524288]})
    assert dd.one_r_per_n(one)
    two = pd.concat([one, pd.DataFrame({"dtype": ["fp16"], "n_cols": [1024], "n_rows": [8192]})])
    assert not dd.one_r_per_n(two), "fp16 N=1024 at R=4096 and 8192 must not be offered as one curve"
    assert not dd.one_r_per_n(one.iloc[0:0])


def test_row_choices_offer_each_n_own_r_first_and_keep_each_pages_default():
    """The R pickers (sidebar: default the most common R; numerics: the largest) share one list and help text."""
    one = pd.DataFrame({"dtype": "fp16", "n_cols": [8, 64, 1024, 4096], "n_rows": [1048576, 4096, 4096, 4096]})
    for default in dd.ROW_DEFAULTS:
        choices, index, help_text = dd.row_choices(one, [4096, 1048576], default=default)
        assert choices == [dd.EACH_N_OWN_R, 4096, 1048576] and index == 0, default
        assert help_text.startswith(f"'{dd.EACH_N_OWN_R}': every N at the one R it was measured at"), help_text
        assert dd.picked_rows(choices[index]) is None
    two = pd.concat([one, one.iloc[1:2].assign(n_rows=8192)])  # N=64 at two R: pick one R
    r_values = sorted(int(r) for r in two["n_rows"].unique())
    choices, index, _ = dd.row_choices(two, r_values, default="mode")
    assert choices == [4096, 8192, 1048576] and choices[index] == 4096, "the most common R"
    choices, index, _ = dd.row_choices(two, r_values, default="largest")
    assert choices[index] == 1048576, "the largest R"
    assert dd.picked_rows(choices[index]) == 1048576
    with pytest.raises(ValueError, match="unknown R default"):
        dd.row_choices(two, r_values, default="first")


def test_sidebar_r_picker_offers_each_n_own_r_or_defaults_to_the_common_r(tmp_path: Path) -> None:
    """The sidebar's R filter (dd.row_choices): "each N's own" first where each N ran at one R, else the common R."""
    base = synthetic_results(**SMALL)
    r = int(base["n_rows"].iloc[0])
    tiny_more = base.assign(n_rows=base["n_rows"].where(base["n_cols"] != 256, 16 * r))  # N=256 at 16 R only
    two = pd.concat([base, base[base["n_cols"] == 256].assign(n_rows=2 * r)])  # N=256 at R and 2 R
    for name, df, options, value in (
        ("one_r.parquet", tiny_more, [dd.EACH_N_OWN_R, r, 16 * r], dd.EACH_N_OWN_R),
        ("two_r.parquet", two, [r, 2 * r], r),
    ):
        save_results(df, tmp_path / name)
        at = load_path(new_app(), tmp_path / name)
        assert not at.exception, at.exception
        picker = at.sidebar.selectbox(key="f_rows")
        assert picker.options == [str(o) for o in options] and picker.value == value, (name, picker.options)
        assert picker.help.startswith(f"'{dd.EACH_N_OWN_R}': every N at the one R"), picker.help


def test_rows_note_says_which_n_ran_at_more_rows():
    df = pd.DataFrame({"dtype": "fp16", "n_cols": [8, 64, 128, 1024], "n_rows": [1048576, 131072, 4096, 4096]})
    note = dd.rows_note(df)
    assert "N 8-64 ran at more rows (R 131,072-1,048,576) than the others (R 4,096)" in note, note
    assert dd.rows_note(df.assign(n_rows=4096)) == ""
    two_r = pd.concat([df, df.assign(n_rows=8192)])  # an N at two R: the R filter picks one, no note
    assert dd.rows_note(two_r) == ""


def test_kernel_evidence_shows_scope_breakdowns_beside_a_typed_path(results_file: Path, tmp_path: Path) -> None:
    from blockscope.profiling.results.sidecars import proton_dir_for
    from blockscope.profiling.views.scopes import scopes_dir
    from tests.test_proton_scopes import synthetic_trace

    copy = tmp_path / results_file.name
    copy.write_bytes(results_file.read_bytes())
    folder = scopes_dir(proton_dir_for(copy), "run-1")
    folder.mkdir(parents=True)
    (folder / "cluster-fp16-N65536-R256.json").write_text(json.dumps(synthetic_trace()))
    (folder / "splitrow-fp16-N65536-R256.json").write_text(json.dumps(synthetic_trace(rows=2)))
    (folder / "staged-fp16-N65536-R256.json").write_bytes(b"{garbled")
    at = load_path(new_app(), copy)
    at.switch_page("pages/kernel_evidence.py").run()
    assert not at.exception, at.exception
    assert any("staged-fp16-N65536-R256.json" in plain(e.value) and "not JSON" in plain(e.value) for e in at.error)
    titles = [spec["layout"]["title"]["text"] for spec in charts(at)]
    assert "Share of the kernel's cycles by scope" in titles
    assert any(t.startswith("Cycles per warp by scope") and "cluster-fp16-N65536-R256" in t for t in titles)
    pick = at.selectbox(key="ev_scope_config")
    assert pick.options == ["cluster-fp16-N65536-R256", "splitrow-fp16-N65536-R256"]
    pick.set_value("splitrow-fp16-N65536-R256").run()
    assert not at.exception, at.exception
    cycles = next(s for s in charts(at) if s["layout"]["title"]["text"].startswith("Cycles per warp by scope"))
    assert "splitrow-fp16-N65536-R256" in cycles["layout"]["title"]["text"]
    load = next(t for t in cycles["data"] if t["name"] == "load")
    assert load["y"] == [11000.0]  # two rows of 5500 cycles per warp (median)


def test_kernel_evidence_says_how_to_make_scope_breakdowns(results_file: Path) -> None:
    at = load_path(new_app(), results_file)
    at.switch_page("pages/kernel_evidence.py").run()
    assert not at.exception, at.exception
    assert any("No scope breakdowns found" in c.value and "--proton-scopes" in c.value for c in at.caption)
    assert not [s for s in charts(at) if "by scope" in s["layout"]["title"]["text"]]
