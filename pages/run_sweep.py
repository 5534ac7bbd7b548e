"""Run sweep: configure and run a sweep on this machine's GPU; results feed the other pages and download."""

from __future__ import annotations

import argparse
import io
import tempfile
from pathlib import Path

import streamlit as st

from blockscope.pages import _common as ui
from blockscope.profiling.views import dashboard_data as dd

st.title("Run sweep")

if not ui.cuda_available():
    st.warning(
        "Live sweeps are disabled: this machine has no CUDA GPU (torch.cuda.is_available() is False). "
        "Timing needs CUDA events on a GPU."
    )
    st.markdown(
        "What still works here: every other page on the bundled H200 dataset, uploaded or typed results "
        "files and the synthetic demo; the masked-lane worked example (the teaching kernel runs on the "
        "CPU Triton interpreter); offline compiles for registers, spills, occupancy and PTX/SASS. "
        "To measure, run `python -m profiling sweep ...` (or this page) on a GPU machine and load the "
        "results file here."
    )
    st.stop()

import torch  # noqa: E402

from blockscope.profiling.cli import MAX_LIST_VALUES, MAX_SWEEP_N, n_list  # noqa: E402 - the CLI's validator of N lists
from blockscope.profiling.measure.backends import backend_names  # noqa: E402

MAX_ROWS = 2**20
VARIANTS = backend_names()  # the peers, then every registered variant; peers not installed get "unavailable" rows
st.caption(
    f"GPU: {torch.cuda.get_device_name()} — results are stored in this session; pick "
    f"**{ui.LIVE}** as data source to see them on every page."
)
c = st.columns(3)
variants = c[0].multiselect("Variants", VARIANTS, default=["torch", "teaching", "online"], key="sw_variants")
dtypes = c[1].multiselect("dtypes", ("fp16", "bf16", "fp32"), default=["fp16"], key="sw_dtypes")
methods = c[2].multiselect(
    "Timing methods",
    ("per_call_events", "back_to_back_flushed", "cuda_graph"),
    default=["per_call_events"],
    key="sw_methods",
)
c = st.columns(3)
n_text = c[0].text_input(
    "N values",
    "256, 1000, 1024, 1025, 4096, 16384",
    key="sw_n",
    max_chars=2000,
    help=f"Up to {MAX_LIST_VALUES} values, each from 1 to {MAX_SWEEP_N:,}, separated by commas or spaces.",
)
n_rows = c[1].number_input("R (rows)", 1, MAX_ROWS, 4096, key="sw_rows", help=ui.allowed(1, MAX_ROWS))
warps = c[2].multiselect("num_warps", (1, 2, 4, 8, 16, 32), default=[4, 8], key="sw_warps")
prune = st.checkbox(
    "Prune clearly slower configs",
    value=True,
    key="sw_prune",
    help="Stop sampling a config once its median's 95 % CI lies over 10 % above the best config's of the same shape, "
    "dtype, method and backend group; its rows keep the samples taken and say pruned=True (as `sweep --no-prune` "
    "turns off).",
)

try:  # the CLI's own parser: integers in range, one message naming what is allowed
    n_values = n_list(n_text.replace(" ", ","))
except argparse.ArgumentTypeError as error:
    st.error(dd.md(f"N values: {error}"))
    st.stop()

from blockscope.profiling.measure import sweep  # noqa: E402

try:
    configs = sweep.build_configs(
        variants=variants, dtypes=dtypes, n_values=n_values, n_rows=int(n_rows), num_warps=warps or None
    )
except ValueError as error:
    st.error(f"Not a valid sweep: {error}")
    st.stop()
st.markdown(f"**{len(configs)} configs** x {len(methods)} method(s).")
start, stop = st.columns(2)
# Cancel: the click reruns this script, which interrupts the running sweep at its next progress update;
# run_sweep saves what it measured to its output file on the way out, and that file is loaded below.
if stop.button("Cancel", key="sw_cancel"):
    st.session_state["sw_cancelled"] = True
if start.button("Run sweep", type="primary", key="sw_run", disabled=not configs or not methods):
    st.session_state["sw_cancelled"] = False
    out = Path(st.session_state.get("sw_out") or Path(tempfile.mkdtemp(prefix="blockscope-sweep-")) / "live.parquet")
    st.session_state["sw_out"] = str(out)  # a rerun of the same configs resumes from this file
    bar = st.progress(0.0, text="preparing the sweep…")

    def status(update: sweep.SweepStatus) -> None:
        """Phase, done/total and time left (measured per phase: compile, then timing) on the progress bar."""
        label = f" — {update.label}" if update.label else ""
        bar.progress(update.fraction(), text=f"{update.text()}{label}")

    from blockscope.profiling.measure.precompile import default_workers

    try:
        table = sweep.run_sweep(
            configs,
            methods=methods,
            out=out,
            status=status,
            prune=prune,
            cancel=lambda: bool(st.session_state.get("sw_cancelled")),
            compile_workers=default_workers(),
            on_warning=lambda line: st.warning(f"Machine: {line}"),
        )
        bar.progress(1.0, text=f"done: {len(table)} rows")
        saved_to = table.attrs.get("sweep", {}).get("saved_to")
        if saved_to:  # the output's disk was full: the rows went elsewhere
            st.session_state["sw_out"] = saved_to
            st.warning(dd.md(f"No space left for {out}: the {len(table)} rows are saved in {saved_to}"))
    except sweep.ResultsLockError as error:  # another sweep (another tab, the CLI) writes this file
        bar.progress(0.0, text="not started")
        st.error(dd.md(f"Not started: {error}"))

out_path = st.session_state.get("sw_out")
if out_path and Path(out_path).exists():
    from blockscope.profiling.results import ResultsError, load_results

    try:
        st.session_state[ui.LIVE_KEY] = load_results(out_path)
    except ResultsError as error:
        st.error(dd.md(f"Could not read the live results: {error}"))

live = st.session_state.get(ui.LIVE_KEY)
if live is not None and len(live):
    from blockscope.profiling.results.revision import with_revision_columns

    st.dataframe(with_revision_columns(live), hide_index=True, key="sw_table")
    buffer = io.BytesIO()
    live.to_parquet(buffer, index=False)
    st.download_button(
        "Download results (.parquet)",
        buffer.getvalue(),
        "blockscope_live_sweep.parquet",
        mime="application/octet-stream",
        key="sw_download",
    )
