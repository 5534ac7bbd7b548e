"""Backends: eager ATen, Inductor, Liger, Quack and Blockscope side by side (time, GB/s, who wins, who runs what)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from blockscope.pages import _common as ui
from blockscope.profiling.views import backends as views
from blockscope.profiling.views import dashboard_data as dd
from blockscope.profiling.views.figures import backends as bf


@st.cache_data(show_spinner="Loading the bundled backends capture…")
def _bundled(path: str) -> pd.DataFrame | None:  # keyed on the path: a moved or replaced file is read again
    return views.load_bundled(path)


@st.cache_data(show_spinner=False)
def _installed_here() -> pd.DataFrame:
    from blockscope.profiling.measure.backends import status

    return pd.DataFrame(status())


st.title("Backends")
st.caption(
    "The kernels a user could pick instead of Blockscope's: eager `torch.softmax` (ATen's CUDA kernels), "
    "`torch.compile` (Inductor generates a Triton kernel per shape), Liger-Kernel (Triton) and Quack (CuTe "
    "DSL, rows split over a CTA cluster), next to Blockscope's `auto`. Every row was checked against a "
    "float64 softmax before it was timed; a shape a backend does not run keeps the reason."
)
ctx = ui.context()
bundled_name = views.BUNDLED_BACKENDS_PATH.name
loaded_names = set(ctx.df["variant"].dropna().unique())
absent = [n for n in views.PEER_NAMES if n not in loaded_names]
use_loaded = views.has_peers(ctx.df)
if use_loaded and absent and views.BUNDLED_BACKENDS_PATH.exists():
    use_loaded = st.radio(
        "Data",
        [True, False],
        horizontal=True,
        key="be_source",
        format_func=lambda loaded: (
            f"loaded ({dd.md(ctx.label)})" if loaded else f"bundled backends capture ({dd.md(bundled_name)})"
        ),
        help=f"The loaded data has no {', '.join(absent)} rows. The bundled backends capture has every peer; it was "
        "measured in an earlier run, with the kernels and tuning table of that time (its rows' "
        "kernel_revision says which).",
    )
    if use_loaded:
        st.caption(
            f"No {', '.join(absent)} rows in the loaded data: pick the bundled backends capture above to see them."
        )
if use_loaded:
    df, label = ctx.filtered, ctx.label
else:
    bundled = _bundled(str(views.BUNDLED_BACKENDS_PATH))
    if bundled is None:
        ui.empty(
            f"the loaded data has no peer backends and `data/{views.BUNDLED_BACKENDS_PATH.name}` is not there; "
            "run `python -m profiling sweep --variants torch,inductor,liger,quack,auto` on a GPU"
        )
        st.stop()
    df, label = bundled, f"bundled {bundled_name}"
    st.info(
        f"This page shows the bundled H200 backends capture (`data/{bundled_name}`), with the sidebar's dtype "
        "and timing method"
        + ("" if views.has_peers(ctx.df) else f"; the loaded data ({dd.md(ctx.label)}) has no peer backends.")
    )

method, dtype = ctx.method, ctx.dtype
names = views.backend_order(list(df["variant"].dropna().unique()))
headline = [n for n in names if n in (*views.PEER_NAMES, "auto")]
if (
    headline
    and len(headline) < len(names)
    and st.toggle(
        "Peers and auto only",
        True,
        key="be_headline",
        help="Off: also the other Blockscope variants selected in the sidebar's Variants filter.",
    )
):
    hidden = dd.md(", ".join(n for n in names if n not in headline))
    st.caption(f"Not drawn: {hidden} (turn the toggle off to add them).")
    df = df[df["variant"].isin(headline)]
if dtype not in set(df["dtype"].dropna()):
    ui.empty(f"no {dtype} rows in {dd.md(label)}")
    st.stop()

table = views.fastest(df, method, dtype)
if table.empty:
    ui.empty(f"no timed {dtype} rows with {method} in {dd.md(label)}")
    st.stop()
ui.chart(
    bf.latency_figure(table, df, method, dtype),
    table[["variant", "n_rows", "n_cols", "median_us", "p20_us", "p80_us", "vs_best", "kernel_names"]],
    "be_latency",
    "Fastest config of each backend at each N; dotted: powers of two.",
)
ui.chart(
    bf.relative_figure(table, df, method, dtype),
    table[["variant", "n_cols", "median_us", "best_us", "vs_best"]],
    "be_relative",
    "1.0 = the fastest backend at that N; 1.3 = 30% slower than it.",
)
ui.chart(
    bf.bandwidth_figure(table, df, method, dtype),
    table[["variant", "n_cols", "bytes_moved", "median_us", "gbps", "copy_fraction"]],
    "be_gbps",
    "Bytes moved = read x + write y = 2·R·N·element size, over the median time; the dashed line is "
    "the device copy bandwidth measured in the same run.",
)

st.subheader("Who wins")
against = views.versus(df, method)
if len(against):
    dtypes_in = ", ".join(sorted(df["dtype"].dropna().unique()))
    st.markdown(
        f"**auto against each backend** ({dtypes_in}; time of the backend / time of auto at each (dtype, N) "
        "both ran; above 1: auto is faster)"
    )
    st.dataframe(against, hide_index=True, key="be_versus")
winners = views.winners(df[df["dtype"] == dtype], method)
c = st.columns([1, 2])
c[0].dataframe(views.win_counts(winners), hide_index=True, key="be_win_counts")
c[1].dataframe(winners, hide_index=True, key="be_winners", height=260)

st.subheader("Support: which backend runs which shape")
support = views.support(df)
ui.chart(
    bf.support_figure(support, dtype),
    views.support_counts(support[support["dtype"] == dtype]),
    "be_support",
    "Grey: the backend does not run that shape (its support rules, or a missing package); red: it ran but "
    "the result was wrong (not timed). The table counts shapes per status and names each rule once.",
)

st.subheader("First call: compile cost")
firsts = views.first_calls(df)
if firsts.empty:
    st.caption("No timed rows.")
else:
    ui.chart(
        bf.first_call_figure(firsts, dtype),
        firsts[firsts["dtype"] == dtype],
        "be_first",
        "Seconds for the first call of each shape in a fresh process: Inductor compiles per shape (dynamic="
        "False), Quack compiles its CuTe DSL kernel per N, Triton JITs per BLOCK_SIZE.",
    )

st.subheader("Which concrete kernel ran")
ranges = views.kernel_ranges(df[df["dtype"] == dtype])
if ranges.empty:
    st.caption("No profiler kernel names in these rows.")
else:
    st.dataframe(ranges, hide_index=True, key="be_kernels")
    st.caption(
        "From one torch.profiler trace per config: ATen switches kernels with N; Inductor names its "
        "generated kernel after the fusion (`triton_per_…` keeps a row in registers, `triton_red_…` loops)."
    )
sources = views.generated_sources(df[df["dtype"] == dtype])
if len(sources):
    pick = st.selectbox("Inductor's generated code for N =", sources["n_cols"].tolist(), key="be_source_n")
    code = sources[sources["n_cols"] == pick]["kernel_source"].iloc[0]
    with st.expander(f"Generated module for {dtype} N={pick} ({len(code.splitlines())} lines)"):
        st.code(code, language="python")
        st.download_button("Download", code, file_name=f"inductor_{dtype}_{pick}.py", key="be_source_dl")

with st.expander("Backends on this machine"):
    st.dataframe(_installed_here(), hide_index=True, key="be_installed")
    st.caption(
        "Peers are optional: `pip install liger-kernel quack-kernels` on a GPU box adds them to live sweeps; "
        "`tools/peer_wheels.sh` carries them to a GPU machine without network."
    )
