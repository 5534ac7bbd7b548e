"""Backends: eager ATen, Inductor, Liger, Quack and Blockscope side by side (time, GB/s, who wins, who runs what),
and the fused ops (masked / ragged softmax) against torch's ways to do them."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from blockscope import paths
from blockscope.pages import _common as ui
from blockscope.profiling.results import ResultsError
from blockscope.profiling.views import backends as views
from blockscope.profiling.views import dashboard_data as dd
from blockscope.profiling.views import fused
from blockscope.profiling.views.figures import backends as bf
from blockscope.profiling.views.figures import fused as ff


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


def _row_softmax(ctx: ui.Context) -> None:
    """The row-softmax backends of the loaded (or bundled) sweep; returns early when there is nothing to draw."""
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
            help=f"The loaded data has no {', '.join(absent)} rows. The bundled backends capture has every peer; "
            "it was measured in an earlier run, with the kernels and tuning table of that time (its rows' "
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
            return
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
        return

    table = views.fastest(df, method, dtype)
    if table.empty:
        ui.empty(f"no timed {dtype} rows with {method} in {dd.md(label)}")
        return
    ui.chart(
        bf.latency_figure(table, df, method, dtype),
        table[["variant", "n_rows", "n_cols", "median_us", "p20_us", "p80_us", "vs_best", "kernel_names"]],
        "be_latency",
        "Fastest config of each backend at each N; dotted: powers of two." + dd.rows_note(table),
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


@st.cache_data(show_spinner="Loading the fused-op benchmark…", max_entries=8)
def _fused(path: str, mtime: float) -> pd.DataFrame | None:  # keyed on path + modification time
    return fused.load_bundled_fused(path)


FUSED_SOURCES = {
    "bundled": f"bundled ({fused.BUNDLED_FUSED_PATH.name})",
    "path": "a bench_fused.csv or results file",
    "loaded": "op rows of the loaded results",
}


def _fused_path(loaded: bool) -> Path | str | None:
    """The fused-op results to show: the bundled bench_fused.csv, a typed path inside the allowed folders (a
    bench_fused.csv or a results file with op rows), or "loaded" (the sidebar data's op rows, offered when there are
    some, and picked first); None (and says why) when there is none."""
    options = ["loaded", "bundled", "path"] if loaded else ["bundled", "path"]
    source = st.radio(
        "Fused-op results",
        options,
        horizontal=True,
        key="fo_source" if not loaded else "fo_source_loaded",
        format_func=FUSED_SOURCES.get,
    )
    if source == "loaded":
        return "loaded"
    if source == "bundled":
        if not fused.BUNDLED_FUSED_PATH.is_file():
            st.info(fused.MISSING_FUSED)
            return None
        return fused.BUNDLED_FUSED_PATH
    typed = st.text_input(
        "Path of a bench_fused.csv or results file",
        key="fo_path",
        placeholder="/path/to/out/bench_fused.csv",
        help="The CSV `python3 -m tools.bench_fused --out-dir DIR` writes (DIR/bench_fused.csv), or a results file "
        "with op rows from `python -m profiling sweep --op masked_softmax,ragged_softmax --out FILE`.",
    ).strip()
    if not typed:
        st.info(
            "Type the path of a bench_fused.csv written by `python3 -m tools.bench_fused --out-dir DIR`, or of a "
            "results file written by `python -m profiling sweep --op masked_softmax,ragged_softmax --out FILE`."
        )
        return None
    inside = paths.confined(typed)
    if inside is None:
        roots = ", ".join(str(r) for r in paths.allowed_roots())
        st.error(
            dd.md(
                f"{typed}: outside the folders this dashboard reads; allowed: a file under {roots} "
                f"(${paths.ALLOWED_ROOTS_ENV} adds folders)"
            )
        )
        return None
    if not inside.is_file():
        st.error(dd.md(f"{typed}: no such file; allowed: a bench_fused.csv or results file (a regular file)"))
        return None
    return inside


def _fused_ops(ctx: ui.Context) -> None:
    """Fused masked / ragged softmax against torch's ways to do them (tools/bench_fused.py's CSV or `sweep --op`
    rows)."""
    st.subheader("Fused ops")
    st.caption(
        "`kernels.masked_softmax` (scale + bias + mask + causal in one kernel) against eager torch, Inductor and "
        "the softmax step of SDPA's math backend; `kernels.ragged_softmax` (packed rows) against nested tensors, "
        "pad-to-longest and `segment_reduce`. Ideal: x read once + y written once at the run's copy bandwidth "
        "(mask and bias bytes not counted; a causal row reads only its kept part, so it can pass 100%)."
    )
    path = _fused_path(ctx.op_rows is not None)
    if path is None:
        return
    try:
        df = fused.from_op_rows(ctx.op_rows) if path == "loaded" else _fused(str(path), path.stat().st_mtime)
    except (ResultsError, OSError) as error:
        st.error(dd.md(str(error)))
        return
    if df is None or df.empty:
        st.info(fused.MISSING_FUSED)
        return
    if path == fused.BUNDLED_FUSED_PATH:
        st.caption(fused.BUNDLED_NOTE)
    present = fused.methods(df)
    method = ctx.method if ctx.method in present else present[0]
    if method != ctx.method:
        st.caption(dd.md(f"The fused-op benchmark has no {ctx.method} rows: showing {method}."))
    st.markdown(f"**Blockscope's speedup over each backend** ({dd.md(method)}; backend time / blockscope time)")
    st.dataframe(fused.speedup_summary(df, method), hide_index=True, key="fo_summary")
    ops = sorted(set(df["op"].dropna()))
    for op in ops:
        table = fused.fused_table(df[df["op"] == op], method)
        if table.empty:
            continue
        st.markdown(f"**{dd.md(op)}**: median µs, % of ideal, and time / blockscope per backend")
        st.dataframe(table.dropna(axis=1, how="all"), hide_index=True, key=f"fo_table_{ops.index(op)}")
    c = st.columns(2)
    op = c[0].selectbox("Fused op", ops, key="fo_op")
    cases = sorted(set(df.loc[df["op"] == op, "case"].dropna()))
    case = c[1].selectbox("Case", cases, key="fo_case")
    dtypes = sorted(set(df.loc[(df["op"] == op) & (df["case"] == case), "dtype"].dropna()))
    wanted = fused.DTYPE_NAMES.get(ctx.dtype, ctx.dtype)
    dtype = wanted if wanted in dtypes else (dtypes[0] if dtypes else wanted)
    curve = fused.curve(df, method, op, case, dtype)
    if curve.empty:
        ui.empty(f"no timed {dd.md(op)} {dd.md(case)} rows with {dd.md(method)}")
        return
    ui.chart(
        ff.fused_time_figure(curve, op, case, dtype, method),
        curve,
        "fo_curve",
        f"Time per call vs L for each backend ({dd.md(dtype)}"
        + ("" if dtype == wanted else f"; the benchmark has no {dd.md(wanted)} rows for this case")
        + "); bars: p20-p80.",
    )


ctx = ui.context()
_row_softmax(ctx)
with st.expander("Backends on this machine"):
    st.dataframe(_installed_here(), hide_index=True, key="be_installed")
    st.caption(
        "Peers are optional: `pip install liger-kernel quack-kernels` on a GPU box adds them to live sweeps; "
        "`tools/peer_wheels.sh` carries them to a GPU machine without network."
    )

_fused_ops(ctx)
