"""The dashboard's router: data source and shared filters in the sidebar, one st.Page per file of pages/.

`blockscope dashboard` (and `make run`) serve blockscope/dashboard/app.py, which calls main(); `streamlit run app.py`
in a checkout does the same through the root app.py.
"""

from __future__ import annotations

import os

import torch

if not torch.cuda.is_available():  # before anything imports triton: run kernels on the CPU interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")

import streamlit as st  # noqa: E402

from blockscope import paths  # noqa: E402
from blockscope.pages import _common as ui  # noqa: E402


def _page(file: str, title: str, url_path: str, icon: str, default: bool = False) -> st.Page:
    return st.Page(str(paths.PAGES_DIR / file), title=title, url_path=url_path, icon=icon, default=default)


def main() -> None:
    """Render one run of the app: page config, navigation, sidebar, then the chosen page."""
    st.set_page_config(page_title="Blockscope", page_icon="🔬", layout="wide")
    # Each page's url_path differs from its file stem: with a pages/ folder beside the entry script Streamlit
    # would otherwise try its v1 multipage mode and run a page whose url matches a file stem without this router.
    pages = [
        _page("overview.py", "Overview", "home", ":material/dashboard:", default=True),
        _page("masked_lanes.py", "Masked lanes", "masked-lanes", ":material/view_week:"),
        _page("occupancy.py", "Occupancy", "occupancy-limits", ":material/memory:"),
        _page("latency.py", "Latency", "latency-vs-n", ":material/speed:"),
        _page("tradeoffs.py", "Tradeoffs", "warps-tradeoffs", ":material/grid_on:"),
        _page("backends.py", "Backends", "kernel-backends", ":material/compare_arrows:"),
        _page("run_vs_run.py", "Run vs run", "compare-runs", ":material/difference:"),
        _page("auto.py", "auto", "auto-picks", ":material/tune:"),
        _page("kernel_evidence.py", "Kernel evidence", "kernel-evidence", ":material/fact_check:"),
        _page("numerics.py", "Numerics", "numerics-ulp", ":material/functions:"),
        _page("run_sweep.py", "Run sweep", "run-sweep", ":material/play_circle:"),
        _page("export.py", "Export", "export-figures", ":material/download:"),
    ]
    page = st.navigation(pages)
    st.sidebar.title("Blockscope")
    st.sidebar.caption("How GPU row-softmax kernels map a tensor onto GPU work units.")
    ui.sidebar()
    page.run()
