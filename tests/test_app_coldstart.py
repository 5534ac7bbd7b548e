"""Kernel evidence page: the cold-start section shows `python -m profiling coldstart` rows loaded beside a sweep."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
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
    bundled = report_html(sweep, [], "cuda_graph")  # no rows of its own: the bundled H200 rows, said so
    assert "<h2>Cold start</h2>" in bundled and "these are the bundled ones (data/h200_coldstart.parquet" in bundled
    assert "<td>store</td>" in bundled


def test_report_has_no_cold_start_section_without_rows_anywhere(monkeypatch, tmp_path) -> None:
    from blockscope import paths
    from blockscope.profiling.views.report import report_html

    monkeypatch.setattr(paths, "BUNDLED_COLDSTART", tmp_path / "absent.parquet")
    assert "<h2>Cold start</h2>" not in report_html(synthetic_results(n_values=(256,)), [], "cuda_graph")


def test_kernel_evidence_shows_the_bundled_cold_start_rows_by_default() -> None:
    """The bundled dataset has no cold-start rows (they were taken on another H200 board): the page shows the
    bundled cold-start file's table instead and says so."""
    from blockscope import paths

    if not paths.BUNDLED_COLDSTART.is_file() or not paths.BUNDLED_SWEEP.is_file():
        pytest.skip("needs the bundled dataset")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240).run()
    at.switch_page("pages/kernel_evidence.py").run()
    assert not at.exception, at.exception
    tables = [d.value for d in at.dataframe if "to_first_result_s" in d.value.columns]
    assert len(tables) == 1 and {"cold", "warm", "store"} <= set(tables[0]["cache_state"])
    assert any("these are the bundled ones" in c.value for c in at.caption)
