"""One timing method and one dtype for the whole app; any N on the Occupancy and Masked lanes pages; waves from
each variant's launch grid on the chosen arch's SM count (streamlit.testing.v1.AppTest, synthetic results)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from blockscope.demo import synthetic_results
from blockscope.profiling.inspect import occupancy
from blockscope.profiling.results import save_results
from tests.test_app import _compile_cache  # noqa: F401 - autouse: one compile cache per session

ROOT = Path(__file__).resolve().parents[1]
PAGES = (
    "overview",
    "masked_lanes",
    "occupancy",
    "latency",
    "tradeoffs",
    "backends",
    "kernel_evidence",
    "auto",
    "numerics",
    "run_sweep",
    "export",
)
WIDGETS = ("selectbox", "radio", "segmented_control", "pills", "select_slider", "multiselect")


@pytest.fixture(scope="module")
def results_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("results") / "synthetic.parquet"
    return save_results(synthetic_results(n_values=(256, 1000, 1024, 4096, 16384)), path)


def app_on(path: Path, page: str | None = None) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240)
    at.run()
    at.sidebar.radio(key="data_source").set_value("Path on this machine").run()
    at.sidebar.text_input(key="typed_path").input(str(path)).run()
    if page:
        at.switch_page(f"pages/{page}.py").run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def labelled(at: AppTest, text: str, sidebar: bool) -> list:
    root = at.sidebar if sidebar else at.main
    return [w for kind in WIDGETS for w in root.get(kind) if text.lower() in str(getattr(w, "label", "")).lower()]


def metric(at: AppTest, label: str) -> str:
    found = [m.value for m in at.metric if m.label == label]
    assert found, f"no metric {label!r}: {[m.label for m in at.metric]}"
    return found[0]


def number(text: str) -> int:
    return int(text.replace(",", ""))


def test_one_timing_method_widget_in_the_whole_app(results_file: Path) -> None:
    at = app_on(results_file)
    assert len(labelled(at, "timing method", sidebar=True)) == 1
    assert at.sidebar.selectbox(key="f_method").value == "back_to_back_flushed"  # the default measures the kernel
    for page in PAGES:
        at.switch_page(f"pages/{page}.py").run()
        assert not at.exception, (page, [e.message for e in at.exception])
        main = [w.label for w in labelled(at, "timing method", sidebar=False)]
        if page == "run_sweep":  # which methods a new sweep measures, not which one is shown: (a GPU-only form)
            main = [label for label in main if label != "Timing methods"]
        assert main == [], (page, main)
        assert not labelled(at, "dtype", sidebar=False) or page == "masked_lanes", page  # its worked example's input


def test_latency_and_export_follow_the_sidebar_method(results_file: Path) -> None:
    at = app_on(results_file, "latency")
    at.sidebar.selectbox(key="f_method").set_value("per_call_events").run()
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert titles and all("per_call_events" in t for t in titles if "µs" in t or "Latency" in t)
    assert any("seed's experiment" in c.value for c in at.sidebar.caption)  # the per-call caveat is said
    at.switch_page("pages/export.py").run()
    assert any("per_call_events" in c.value for c in at.caption)


def test_overview_chart_follows_the_sidebar_dtype(results_file: Path) -> None:
    import statistics

    from blockscope.profiling.results import load_results

    at = app_on(results_file, "overview")
    copies = sorted(float(v) for v in load_results(results_file)["copy_gbps"].dropna().unique())
    assert metric(at, "Copy bandwidth") == f"{statistics.median(copies) / 1000:.2f} TB/s"  # fits its column
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert {t["name"] for t in spec["data"] if t.get("name", "")[:2] in ("fp", "bf")} == {"fp16"}  # the sidebar default
    at.sidebar.selectbox(key="f_dtype").set_value("fp32").run()
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert {t["name"] for t in spec["data"] if t.get("name", "")[:2] in ("fp", "bf")} == {"fp32"}
    assert any("dtype fp32" in c.value for c in at.caption)


def test_typed_n_5000_gives_its_block_size_masked_lanes_and_compile_facts(results_file: Path) -> None:
    at = app_on(results_file, "occupancy")
    at.number_input(key="occ_n").set_value(5000).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert number(metric(at, "BLOCK_SIZE")) == 8192
    assert number(metric(at, "Masked lanes per row")) == 8192 - 5000
    assert int(metric(at, "Registers / thread")) > 0  # compiled for N=5000 (offline), not read from the sweep
    assert any("compiled offline" in c.value for c in at.caption)
    assert any("not measured" in c.value and "5,000" in c.value for c in at.caption)
    at.number_input(key="occ_n").set_value(4096).run()
    assert any("measured" in c.value and "not measured" not in c.value for c in at.caption)

    at.switch_page("pages/masked_lanes.py").run()
    at.number_input(key="lanes_any_n").set_value(5000).run()
    assert number(metric(at, "BLOCK_SIZE (teaching)")) == 8192
    assert number(metric(at, "masked lanes per row")) == 3192


def test_splitrow_waves_use_its_launch_grid_and_the_arch_sm_count(results_file: Path) -> None:
    at = app_on(results_file, "occupancy")
    at.selectbox(key="occ_variant").set_value("splitrow")
    at.number_input(key="occ_n").set_value(40_000).run()  # 16-aligned: chunks of 16384, 3 programs per row
    assert not at.exception and not at.error, [e.value for e in at.error]
    blocks = int(metric(at, "Blocks (programs) / SM"))
    sms = at.number_input(key="occ_sms_sm_90").value
    chunks = -(-40_000 // 16_384)
    expected = min(4096, sms * blocks // chunks) * chunks
    assert number(metric(at, "Grid programs")) == expected
    per_wave = sms * blocks
    assert any(f"**{expected / per_wave:.2f} waves**" in m.value for m in at.markdown)

    at.selectbox(key="occ_arch").set_value("sm_120").run()
    assert not at.exception
    assert at.number_input(key="occ_sms_sm_120").value == occupancy.ARCHS["sm_120"].sm_count
    blocks = int(metric(at, "Blocks (programs) / SM"))
    assert (
        number(metric(at, "Grid programs"))
        == min(4096, at.number_input(key="occ_sms_sm_120").value * blocks // chunks) * chunks
    )


def test_small_kernels_get_the_carveout_explained(results_file: Path) -> None:
    at = app_on(results_file, "occupancy")
    at.number_input(key="occ_n").set_value(256).run()
    texts = [m.value for m in at.markdown] + [w.value for w in at.warning]
    assert any("carveout" in t and "driver reserves" in t for t in texts)


def test_measured_configs_headline_the_gpus_own_compile_and_typed_ones_say_estimate(results_file: Path) -> None:
    from blockscope.profiling.results import load_results

    rows = load_results(results_file)
    live = rows[
        (rows["variant"] == "teaching")
        & (rows["dtype"] == "fp16")
        & (rows["n_cols"] == 1000)
        & (rows["num_warps"] == 4)
    ]["n_regs"].dropna()
    at = app_on(results_file, "occupancy")
    at.number_input(key="occ_n").set_value(1000).run()
    assert int(metric(at, "Registers / thread")) == int(live.iloc[0])
    assert any("the sweep's compile on" in c.value and "(measured)" in c.value for c in at.caption)
    at.number_input(key="occ_n").set_value(5000).run()
    assert any("an offline estimate" in c.value for c in at.caption)
