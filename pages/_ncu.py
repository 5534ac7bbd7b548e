"""The Nsight Compute section of the Occupancy and Kernel evidence pages: pick a source, show it beside estimates."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from blockscope.pages import _common as ui
from blockscope.profiling.views import dashboard_data as dd

BUNDLED_NCU = "Bundled H200 validation (data/ncu_validation.csv)"
UPLOADED_NCU = "Upload an ncu-import table or ncu --csv output"
LAUNCH_COLUMNS = (
    "kernel_name",
    "variant",
    "dtype",
    "n_cols",
    "tunables",
    "grid_programs",
    "block_threads",
    "ncu_registers",
    "n_regs",
    "shared_dynamic_bytes",
    "shared_static_bytes",
    "gpu_time_ns",
    "match",
)


@st.cache_data(show_spinner=False, max_entries=8)
def _imported(data: bytes, name: str) -> pd.DataFrame:
    return dd.load_ncu_import(data, name)


def ncu_source(key: str) -> tuple[pd.DataFrame | None, str]:
    """The chosen ncu table (load_ncu or load_ncu_import columns) and its label; None when there is none."""
    choice = st.radio("Nsight Compute data", (BUNDLED_NCU, UPLOADED_NCU), horizontal=True, key=f"{key}_source")
    if choice == BUNDLED_NCU:
        table = dd.load_ncu()
        if table is None:
            st.info("data/ncu_validation.csv is not there; upload a table from `python -m profiling ncu-import`.")
        return table, "data/ncu_validation.csv"
    upload = st.file_uploader(
        "ncu-import output (.parquet, .csv) or raw `ncu --csv` output", type=["parquet", "csv"], key=f"{key}_upload"
    )
    if upload is None:
        st.caption("Make one with `python -m profiling ncu-import REPORT.csv --out ncu.parquet --configs RESULTS`.")
        return None, ""
    try:
        return _imported(upload.getvalue(), upload.name), upload.name
    except ValueError as error:  # NcuError: one line naming the problem
        st.error(dd.md(f"Could not read {upload.name}: {error}"))
        return None, ""


def occupancy_section(df: pd.DataFrame | None) -> None:
    """Theoretical vs achieved occupancy and DRAM throughput from ncu, and a table beside Blockscope's estimates."""
    from blockscope.profiling.views import figures

    st.subheader("Nsight Compute validation")
    ncu, label = ncu_source("occ_ncu")
    if ncu is None or not {"theoretical_occupancy_pct", "achieved_occupancy_pct"} <= set(ncu.columns):
        return
    plotted = ncu.dropna(subset=["theoretical_occupancy_pct", "achieved_occupancy_pct"])
    if plotted.empty:
        st.info(f"{dd.md(label)} has no occupancy metrics (profile with --section Occupancy or the raw page).")
    else:
        ui.chart(
            figures.ncu_figure(plotted),
            plotted,
            "occ_ncu",
            f"Theoretical vs achieved occupancy and DRAM throughput measured by ncu ({dd.md(label)}).",
        )
    beside = dd.ncu_beside_estimates(ncu, df)
    columns = [c for c in dd.NCU_ESTIMATE_COLUMNS if c in beside.columns]
    with st.expander("Beside Blockscope's estimates (occupancy calculator, compiled registers) for the same config"):
        st.caption(
            "estimated_occupancy_pct and blocks_per_sm: the occupancy calculator on the loaded results' compiled "
            "kernel; ncu_blocks_per_sm: the smallest of ncu's four block limits. Empty estimates: the loaded "
            "results have no row of that config."
        )
        st.dataframe(beside[columns], hide_index=True, key="occ_ncu_beside")


def launches_section(df: pd.DataFrame | None) -> None:
    """Kernel evidence: the launches ncu profiled (kernel, grid, block, registers, shared memory, duration)."""
    st.subheader("Nsight Compute launches")
    ncu, label = ncu_source("ev_ncu")
    if ncu is None:
        return
    beside = dd.ncu_beside_estimates(ncu, df)
    columns = [c for c in LAUNCH_COLUMNS if c in beside.columns]
    st.caption(
        f"{len(beside)} profiled launches from {dd.md(label)}: registers/thread as ncu saw them (ncu_registers) and as "
        "Blockscope's compile recorded them (n_regs, from the loaded results); shared memory in bytes per program; "
        "gpu_time_ns = gpu__time_duration.sum under ncu (clock control as the run chose)."
    )
    st.dataframe(beside[columns], hide_index=True, key="ev_ncu_launches")
