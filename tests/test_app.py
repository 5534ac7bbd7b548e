"""The Streamlit app under streamlit.testing.v1.AppTest on a small synthetic results file (and the bundled data)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from blockscope.demo import synthetic_results
from blockscope.profiling.results import save_results
from blockscope.profiling.views import typed_config
from blockscope.profiling.views.dashboard_data import BUNDLED_PATH
from tests.texts import plain

ROOT = Path(__file__).resolve().parents[1]
PAGES = (
    "pages/overview.py",
    "pages/masked_lanes.py",
    "pages/occupancy.py",
    "pages/latency.py",
    "pages/tradeoffs.py",
    "pages/kernel_evidence.py",
    "pages/run_sweep.py",
    "pages/export.py",
)
TIMEOUT_S = 240  # the Occupancy page may compile a kernel offline on first use


@pytest.fixture(autouse=True)
def _compile_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BLOCKSCOPE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "compile-cache"))


@pytest.fixture(scope="module")
def results_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small synthetic results parquet (fp16 + fp32, 9 N, 3 timing methods)."""
    path = tmp_path_factory.mktemp("results") / "synthetic.parquet"
    save_results(synthetic_results(n_values=(128, 256, 257, 1000, 1024, 1025, 4096, 16384, 65536)), path)
    return path


def new_app() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT_S)
    at.run()
    assert not at.exception, at.exception
    return at


def load_path(at: AppTest, path: Path | str) -> AppTest:
    at.sidebar.radio(key="data_source").set_value("Path on this machine").run()
    at.sidebar.text_input(key="typed_path").input(str(path)).run()
    return at


def charts(at: AppTest) -> list[dict]:
    """The plotly figure specs (JSON) on the current page."""
    return [json.loads(element.proto.spec) for element in at.get("plotly_chart")]


def trace_names(spec: dict) -> set[str]:
    return {trace.get("name") for trace in spec["data"] if trace.get("name")}


def pow2_lines(spec: dict) -> list[float]:
    return [shape["x0"] for shape in spec["layout"].get("shapes", []) if str(shape.get("name", "")).startswith("pow2")]


def assert_page_ok(at: AppTest, page: str) -> None:
    assert not at.exception, f"{page}: {[e.message for e in at.exception]}"
    assert at.title, f"{page}: no title"


def test_every_page_runs_on_a_synthetic_results_file(results_file: Path) -> None:
    at = load_path(new_app(), results_file)
    assert not at.sidebar.error, [plain(e.value) for e in at.sidebar.error]
    for page in PAGES:
        at.switch_page(page).run()
        assert_page_ok(at, page)
        if page not in ("pages/overview.py", "pages/run_sweep.py", "pages/export.py"):
            assert charts(at), f"{page}: no chart"
    at.switch_page("pages/overview.py").run()
    assert any("Where Triton beats torch" in plain(m.value) for m in at.markdown)


@pytest.mark.skipif(not BUNDLED_PATH.exists(), reason=f"{BUNDLED_PATH.name} is not bundled yet")
def test_every_page_runs_on_the_bundled_dataset() -> None:
    at = new_app()
    assert at.sidebar.radio(key="data_source").value == "Bundled H200 dataset"
    for page in PAGES:
        at.switch_page(page).run()
        assert_page_ok(at, page)


def test_default_source_without_bundled_data_explains_and_offers_demo() -> None:
    at = new_app()
    if BUNDLED_PATH.exists():
        pytest.skip("bundled dataset present")
    assert any("Demo data (synthetic)" in plain(w.value) for w in at.sidebar.warning)
    at.sidebar.radio(key="data_source").set_value("Demo data (synthetic)").run()
    assert not at.exception
    assert any("synthetic" in plain(c.value) for c in at.caption)


def test_latency_marks_powers_of_two_and_filters_variants(results_file: Path) -> None:
    at = load_path(new_app(), results_file)
    at.switch_page("pages/latency.py").run()
    latency = charts(at)[0]
    assert {"torch", "teaching", "online"} <= trace_names(latency)
    assert {256, 1024, 4096, 16384} <= set(pow2_lines(latency))
    assert "(µs)" in latency["layout"]["yaxis"]["title"]["text"]
    assert "back_to_back_flushed" in latency["layout"]["title"]["text"]  # the default method measures the kernel

    at.sidebar.multiselect(key="f_variants").unselect("online").run()
    names = set().union(*(trace_names(spec) for spec in charts(at)))
    assert "online" not in names and "teaching" in names

    at.sidebar.selectbox(key="f_method").set_value("cuda_graph").run()
    assert "cuda_graph" in charts(at)[0]["layout"]["title"]["text"]


def test_n_range_filter_drops_boundaries_outside(results_file: Path) -> None:
    at = load_path(new_app(), results_file)
    at.switch_page("pages/latency.py").run()
    at.sidebar.select_slider(key="f_n_range").set_value((1000, 16384)).run()
    lines = set(pow2_lines(charts(at)[0]))
    assert lines == {1024, 2048, 4096, 8192, 16384}


def test_masked_lanes_worked_example_matches_the_seed() -> None:
    at = new_app()
    at.switch_page("pages/masked_lanes.py").run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "softmax" in d.value.index)
    assert list(table.loc["softmax"])[:5] == [".0117", ".0317", ".0861", ".2341", ".6364"]
    assert list(table.loc["valid"]) == ["✓"] * 5 + ["✗"] * 3
    worked = {m.label: m.value for m in at.metric}
    assert (worked["N"], worked["BLOCK_SIZE"]) == ("5", "8")
    assert pow2_lines(charts(at)[0])

    at.text_input(key="lanes_row").input("1, 2, x").run()
    assert any("not a number" in plain(e.value) for e in at.error)
    at.text_input(key="lanes_row").input("1 2 3 4 5 6 7 8 9").run()
    worked = {m.label: m.value for m in at.metric}
    assert (worked["N"], worked["BLOCK_SIZE"]) == ("9", "16")


def test_bad_typed_file_shows_an_error_and_the_app_keeps_working(tmp_path: Path, results_file: Path) -> None:
    bad = tmp_path / "broken.parquet"
    bad.write_bytes(b"PAR1 this is not parquet")
    at = load_path(new_app(), bad)
    assert not at.exception
    assert any("broken.parquet" in plain(e.value) for e in at.sidebar.error)
    at.sidebar.text_input(key="typed_path").input(str(tmp_path / "missing.csv")).run()
    assert any("no such file" in plain(e.value) for e in at.sidebar.error)
    at.sidebar.text_input(key="typed_path").input(str(results_file)).run()
    assert not at.sidebar.error and not at.exception
    at.switch_page("pages/latency.py").run()
    assert charts(at)


def test_uploads_compare_files_and_skip_bad_ones(results_file: Path) -> None:
    at = new_app()
    at.sidebar.radio(key="data_source").set_value("Upload results files").run()
    other = (
        synthetic_results(seed=1, n_values=(256, 1024, 4096), gpu_name="NVIDIA A100 (synthetic)", run_id="synthetic-1")
        .to_csv(index=False)
        .encode()
    )
    at.sidebar.file_uploader(key="uploads").set_value(
        [
            ("h200.parquet", results_file.read_bytes(), "application/octet-stream"),
            ("a100.csv", other, "text/csv"),
            ("notes.csv", b"hello,world\n1,2\n", "text/csv"),
        ]
    ).run()
    assert not at.exception
    errors = [plain(e.value) for e in at.sidebar.error]
    assert any("notes.csv" in e and "not a Blockscope results file" in e for e in errors)
    assert at.sidebar.multiselect(key="f_sources").value == ["a100.csv", "h200.parquet"]
    at.switch_page("pages/latency.py").run()
    latency = charts(at)[0]
    assert "NVIDIA A100 (synthetic) vs NVIDIA H200 (synthetic)" in latency["layout"]["title"]["text"]
    assert {"torch · a100.csv", "torch · h200.parquet"} <= trace_names(latency)
    assert any("compared side by side, never mixed" in plain(i.value) for i in at.info)


def test_one_file_with_two_gpus_is_compared_per_gpu(tmp_path: Path) -> None:
    import pandas as pd

    small = {"n_values": (256, 1024, 4096), "dtypes": ("fp16",), "variants": ("torch", "teaching", "online")}
    table = pd.concat(
        [
            synthetic_results(**small),
            synthetic_results(seed=1, gpu_name="NVIDIA A100 (synthetic)", run_id="synthetic-1", **small),
        ],
        ignore_index=True,
    )
    at = load_path(new_app(), save_results(table, tmp_path / "two_gpus.parquet"))
    notices = [plain(i.value) for i in at.info]
    assert any("2 GPUs / runs / files loaded" in n and "NVIDIA A100 (synthetic)" in n for n in notices), notices
    at.switch_page("pages/latency.py").run()
    assert_page_ok(at, "latency")
    assert {"teaching · NVIDIA A100 (synthetic)", "teaching · NVIDIA H200 (synthetic)"} <= trace_names(charts(at)[0])
    assert any("Regime shading is off" in plain(c.value) for c in at.caption)
    at.switch_page("pages/tradeoffs.py").run()
    assert_page_ok(at, "tradeoffs")
    setups = [plain(option) for option in at.segmented_control(key="trade_setup").options]
    assert setups == ["NVIDIA A100 (synthetic)", "NVIDIA H200 (synthetic)"]
    at.switch_page("pages/overview.py").run()
    assert_page_ok(at, "overview")
    assert any("compared with its own torch.softmax" in plain(m.value) for m in at.markdown)


def test_tradeoffs_heatmaps_follow_the_variant(results_file: Path) -> None:
    at = load_path(new_app(), results_file)
    at.switch_page("pages/tradeoffs.py").run()
    assert not at.exception
    specs = charts(at)
    assert specs and all(spec["data"][0]["type"] == "heatmap" for spec in specs)
    at.segmented_control(key="trade_variant").set_value("online").run()
    assert all(spec["layout"]["title"]["text"].startswith("online") for spec in charts(at))


def test_run_sweep_page_explains_without_a_gpu() -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("has a GPU")
    at = new_app()
    at.switch_page("pages/run_sweep.py").run()
    assert any("disabled" in plain(w.value) for w in at.warning)
    assert "Live sweep results" not in at.sidebar.radio(key="data_source").options


def test_occupancy_page_compiles_and_highlights_the_binding_limit(results_file: Path) -> None:
    at = load_path(new_app(), results_file)
    at.switch_page("pages/occupancy.py").run()
    assert not at.exception, [e.message for e in at.exception]
    assert at.selectbox(key="occ_arch").value == "sm_90"
    launcher = typed_config.launcher_num_warps(
        at.selectbox(key="occ_variant").value, at.number_input(key="occ_n").value, "fp16"
    )
    assert at.selectbox(key="occ_warps").value == "launcher's choice"  # num_warps defaults to what the launcher runs
    assert launcher is None or any(f"{launcher} warps" in spec["layout"]["title"]["text"] for spec in charts(at))
    titles = [spec["layout"]["title"]["text"] for spec in charts(at)]
    assert any("registers, spills and occupancy" in t or "compiled resources" in t for t in titles)
    limits = [spec for spec in charts(at) if "blocks per SM each resource allows" in spec["layout"]["title"]["text"]]
    if limits:  # profiling.inspect.compiled + occupancy present: one bar per limit, the binding one in its own colour
        bar = limits[0]["data"][0]
        assert len(bar["y"]) == 4 and len(set(bar["marker"]["color"])) == 2
        at.selectbox(key="occ_warps").set_value(8).run()
        assert not at.exception
        assert any("8 warps" in spec["layout"]["title"]["text"] for spec in charts(at))
    assert any("waves" in plain(m.value) for m in at.markdown)


def test_pages_survive_partial_data(tmp_path: Path) -> None:
    """'auto' rows, compile-only rows (method 'none'), missing kernel names / compile columns, one dtype only,
    variant names the registry does not know (a peer backend, a renamed variant)."""
    import pandas as pd

    table = synthetic_results(n_values=(256, 1000, 4096), dtypes=("bf16",))
    auto = table[table["variant"] == "teaching"].assign(variant="auto", tunables="{}")
    foreign = pd.concat(
        [
            table[table["variant"] == "online"].assign(variant="inductor"),
            table[table["variant"] == "teaching"].assign(variant="teaching_v2"),
        ],
        ignore_index=True,
    )
    compile_only = (
        table[table["method"] == "cuda_graph"]
        .head(3)
        .assign(method="none", median_us=pd.NA, p20_us=pd.NA, p80_us=pd.NA)
    )
    table = pd.concat([table, auto, foreign, compile_only], ignore_index=True)
    table.loc[table.index % 3 == 0, ["kernel_names", "n_regs", "occupancy", "first_call_s"]] = pd.NA
    path = tmp_path / "partial.csv"
    save_results(table, path)
    at = load_path(new_app(), path)
    assert not at.sidebar.error, [plain(e.value) for e in at.sidebar.error]
    for page in PAGES:
        at.switch_page(page).run()
        assert_page_ok(at, page)
    at.switch_page("pages/latency.py").run()
    assert {"inductor", "teaching_v2"} <= trace_names(charts(at)[0])


def test_pages_survive_filters_that_leave_nothing(results_file: Path) -> None:
    at = load_path(new_app(), results_file)
    at.sidebar.multiselect(key="f_variants").set_value([]).run()
    for page in PAGES:
        at.switch_page(page).run()
        assert_page_ok(at, page)
        if page in ("pages/latency.py", "pages/tradeoffs.py"):
            assert any("Nothing to show" in plain(w.value) for w in at.warning), page
            assert not charts(at)


def test_kernel_evidence_shows_names_first_calls_and_ptx(results_file: Path) -> None:
    at = load_path(new_app(), results_file)
    at.switch_page("pages/kernel_evidence.py").run()
    assert not at.exception
    tables = [d.value for d in at.dataframe if "kernels" in d.value.columns]
    assert any(t["kernels"].str.contains("softmax_warp_forward").any() for t in tables)
    assert charts(at) and "First call" in charts(at)[0]["layout"]["title"]["text"]
    at.number_input(key="ev_n").set_value(256)
    at.toggle(key="ev_show").set_value(True).run()
    assert not at.exception, [e.message for e in at.exception]
    if not any("not available" in plain(i.value) for i in at.info):
        assert any(".entry" in c.value or ".version" in c.value for c in at.code), "no PTX shown"


def test_kernel_evidence_says_how_many_configs_have_names(tmp_path: Path) -> None:
    """A file whose trace pass stopped part way (fp16 above N = 1024 unnamed): the page counts the named configs of
    the sidebar's dtype and says how to name the rest."""
    df = synthetic_results()
    df.loc[(df["dtype"] == "fp16") & (df["n_cols"] > 1024), "kernel_names"] = None
    path = tmp_path / "part_named.parquet"
    save_results(df, path)
    at = load_path(new_app(), path)
    at.switch_page("pages/kernel_evidence.py").run()
    assert not at.exception
    notes = [plain(c.value) for c in at.caption if "Kernel names for" in c.value]
    assert len(notes) == 1 and "fp16 " in notes[0] and " of " in notes[0], notes
    assert "python -m profiling sweep --out FILE" in notes[0], notes


def test_filters_follow_the_data_source() -> None:
    """Bundled -> Demo -> Bundled keeps every bundled variant and num_warps selected; a hidden value is named."""
    if not BUNDLED_PATH.exists():
        pytest.skip(f"{BUNDLED_PATH.name} is not bundled")
    at = new_app()
    variants = at.sidebar.multiselect(key="f_variants")
    bundled_variants, bundled_warps = list(variants.options), list(at.sidebar.multiselect(key="f_warps").options)
    assert {"auto", "splitrow"} <= set(bundled_variants) and len(bundled_warps) > 2
    assert variants.value == bundled_variants
    at.sidebar.radio(key="data_source").set_value("Demo data (synthetic)").run()
    assert not at.exception
    assert at.sidebar.multiselect(key="f_variants").value == at.sidebar.multiselect(key="f_variants").options
    at.sidebar.radio(key="data_source").set_value("Bundled H200 dataset").run()
    assert not at.exception
    assert at.sidebar.multiselect(key="f_variants").value == bundled_variants
    assert [str(w) for w in at.sidebar.multiselect(key="f_warps").value] == bundled_warps  # options are shown as text
    assert not [plain(i.value) for i in at.sidebar.info if "Filters hide" in i.value]


def test_deselected_values_stay_hidden_new_ones_are_selected_and_the_sidebar_says_so(tmp_path: Path) -> None:
    first = save_results(
        synthetic_results(n_values=(256, 1024), variants=("torch", "teaching", "online")), tmp_path / "first.parquet"
    )
    second = save_results(
        synthetic_results(n_values=(256, 1024), variants=("torch", "teaching", "online", "multirow")),
        tmp_path / "second.parquet",
    )
    at = load_path(new_app(), first)
    at.sidebar.multiselect(key="f_variants").unselect("online").run()
    hidden = [plain(i.value) for i in at.sidebar.info if "Filters hide" in i.value]
    assert hidden and "1 of 3 variants (online)" in hidden[0] and "rows" in hidden[0], hidden
    at.sidebar.text_input(key="typed_path").input(str(second)).run()
    assert not at.exception
    assert at.sidebar.multiselect(key="f_variants").value == ["torch", "multirow", "teaching"]  # new: selected
    assert any("1 of 4 variants (online)" in plain(i.value) for i in at.sidebar.info)
    at.sidebar.multiselect(key="f_warps").set_value([4]).run()
    assert any("1 of 2 num_warps (8)" in plain(i.value) for i in at.sidebar.info)
    third = save_results(synthetic_results(n_values=(128, 512, 2048), dtypes=("bf16",)), tmp_path / "third.parquet")
    at.sidebar.select_slider(key="f_n_range").set_value((256, 256)).run()
    at.sidebar.text_input(key="typed_path").input(str(third)).run()
    assert not at.exception, [e.message for e in at.exception]
    assert at.sidebar.selectbox(key="f_dtype").value == "bf16"
    assert at.sidebar.select_slider(key="f_n_range").value == (128, 2048)
    at.switch_page("pages/latency.py").run()
    assert_page_ok(at, "latency")
    assert charts(at)


def test_upload_over_the_row_cap_is_an_error_not_a_crash(results_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from blockscope.profiling import results

    monkeypatch.setattr(results, "MAX_ROWS", 10)
    at = new_app()
    at.sidebar.radio(key="data_source").set_value("Upload results files").run()
    at.sidebar.file_uploader(key="uploads").set_value(
        [("big.parquet", results_file.read_bytes(), "application/octet-stream")]
    ).run()
    assert not at.exception, [e.message for e in at.exception]
    assert any("big.parquet" in plain(e.value) and "over the 10-row limit" in plain(e.value) for e in at.sidebar.error)
