"""Blockscope dashboard: `streamlit run app.py`. Router, data source and shared filters; pages/ render."""

from __future__ import annotations

import os

import torch

if not torch.cuda.is_available():  # before anything imports triton: run kernels on the CPU interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")

import streamlit as st  # noqa: E402

from pages import _common as ui  # noqa: E402

st.set_page_config(page_title="Blockscope", page_icon="🔬", layout="wide")

# One line per page; the Export page will be one more st.Page here. Give each page a url_path unlike its file
# stem: with a pages/ folder Streamlit first tries its v1 multipage mode, which would run a page whose
# url matches a file stem directly, without this router (no sidebar).
PAGES = [
    st.Page("pages/overview.py", title="Overview", url_path="home", icon=":material/dashboard:", default=True),
    st.Page("pages/masked_lanes.py", title="Masked lanes", url_path="masked-lanes", icon=":material/view_week:"),
    st.Page("pages/occupancy.py", title="Occupancy", url_path="occupancy-limits", icon=":material/memory:"),
    st.Page("pages/latency.py", title="Latency", url_path="latency-vs-n", icon=":material/speed:"),
    st.Page("pages/tradeoffs.py", title="Tradeoffs", url_path="warps-tradeoffs", icon=":material/grid_on:"),
    st.Page("pages/backends.py", title="Backends", url_path="kernel-backends", icon=":material/compare_arrows:"),
    st.Page("pages/kernel_evidence.py", title="Kernel evidence", url_path="kernel-evidence",
            icon=":material/fact_check:"),
    st.Page("pages/auto.py", title="auto", url_path="auto-choice", icon=":material/tune:"),
    st.Page("pages/numerics.py", title="Numerics", url_path="numerics-ulp", icon=":material/functions:"),
    st.Page("pages/run_sweep.py", title="Run sweep", url_path="run-sweep", icon=":material/play_circle:"),
    st.Page("pages/export.py", title="Export", url_path="export-figures", icon=":material/download:"),
]

page = st.navigation(PAGES)
st.sidebar.title("Blockscope")
st.sidebar.caption("How Triton row-softmax kernels map a tensor onto GPU work units.")
ui.sidebar()
page.run()
