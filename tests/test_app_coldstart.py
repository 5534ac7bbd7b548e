"""Kernel evidence page: the cold-start section shows `python -m profiling coldstart` rows loaded beside a sweep."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from streamlit.testing.v1 import AppTest

from blockscope.demo import synthetic_results
from blockscope.profiling.measure import coldstart
from blockscope.profiling.results import save_results
from tests.test_coldstart import fake_runner

ROOT = Path(__file__).resolve().parents[1]
PAGES = (
    "pages/overview.py",
    "pages/masked_lanes.py",
    "pages/occupancy.py",
    "pages/latency.py",
    "pages/tradeoffs.py",
    "pages/export.py",
)


def test_kernel_evidence_shows_cold_start_rows(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BLOCKSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    cold = coldstart.measure(["torch", "auto"], [(4096, 1024)], "fp16", reps=1, device="cuda", runner=fake_runner([]))
    path = save_results(
        pd.concat([synthetic_results(n_values=(256, 1024)), cold], ignore_index=True), tmp_path / "mixed.parquet"
    )
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240).run()
    at.sidebar.radio(key="data_source").set_value("Path on this machine").run()
    at.sidebar.text_input(key="typed_path").input(str(path)).run()
    for page in PAGES:  # cold_start rows mixed into a sweep's file break no page
        at.switch_page(page).run()
        assert not at.exception, (page, [e.message for e in at.exception])
    at.switch_page("pages/kernel_evidence.py").run()
    assert "cold_start" not in at.sidebar.selectbox(key="f_method").options
    tables = [d.value for d in at.dataframe if "to_first_result_s" in d.value.columns]
    assert len(tables) == 1 and list(tables[0]["cache_state"]) == ["cold", "warm", "cold", "warm"]


def test_report_has_a_cold_start_section_only_with_cold_start_rows() -> None:
    from blockscope.profiling.views.report import report_html

    sweep = synthetic_results(n_values=(256,))
    cold = coldstart.measure(["torch", "auto"], [(4096, 1024)], "fp16", reps=1, device="cuda", runner=fake_runner([]))
    page = report_html(pd.concat([sweep, cold], ignore_index=True), [], "cuda_graph")
    assert "<h2>Cold start</h2>" in page and "to_first_result_s" in page and "<td>warm</td>" in page
    assert "<h2>Cold start</h2>" not in report_html(sweep, [], "cuda_graph")
