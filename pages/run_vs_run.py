"""Run vs run: pick two loaded runs (GPU / run / file) and see B / A time ratios per config with their spread, and
where the fastest variant changes. Logic in profiling/views/compare.py."""

from __future__ import annotations

import streamlit as st

from blockscope import paths
from blockscope.pages import _common as ui
from blockscope.profiling.views import compare, figures
from blockscope.profiling.views import dashboard_data as dd

st.title("Run vs run")
st.markdown(
    "Two runs — two GPUs, two software versions, or a kernel before and after a change — timed on the same "
    "configs. Each ratio is **B / A** of median time per call (> 1: B is slower); its spread interval "
    "[B p20 / A p80, B p80 / A p20] says whether the change is beyond the two runs' noise."
)
ctx = ui.context()
dtype, method = ctx.dtype, ctx.method
loaded = compare.runs(ctx.filtered)


@st.cache_data(show_spinner=False)
def _demo_runs() -> list[compare.Run]:
    from blockscope.demo import synthetic_results

    return [
        compare.Run("demo run A (synthetic, seed 0)", synthetic_results(seed=0)),
        compare.Run("demo run B (synthetic, seed 1)", synthetic_results(seed=1, run_id="synthetic-1")),
    ]


repeat_path = paths.BUNDLED_SWEEP_REPEAT
if len(loaded) < 2 and ctx.label.startswith("bundled") and repeat_path.exists():  # the bundled pair by default
    pair = dd.load_many(
        {dd.BUNDLED_PATH.name: ctx.df, repeat_path.name: ui.load_path(repeat_path)}
    )  # stacked with a `source` column: two runs, each its own file
    loaded = compare.runs(dd.apply_filters(pair, ctx.filters, method=False))
    st.caption(
        f"The bundled dataset and its bundled repeat run (`{repeat_path.name}`), side by side: the same "
        "configs timed again (their runs, kernel revisions and dates are in the table below). Load two "
        "files of your own with **Upload results files** in the sidebar."
    )
if len(loaded) < 2:
    st.info(
        f"One run is loaded ({dd.md(ctx.label) or 'one GPU / run / file'}). To compare two: pick **Upload results "
        "files** in the sidebar and add two results files (e.g. two GPUs, or a sweep before and after a "
        "change), or load one file holding two runs of the same configs; the sidebar's **Files** filter must "
        "keep both. Or try the view on two synthetic demo runs:",
        icon=":material/compare:",
    )
    if not st.toggle("Compare two synthetic demo runs", key="rvr_demo"):
        st.stop()
    st.caption(":orange-background[demo data (synthetic) — not a measurement]")
    loaded = [compare.Run(run.label, run.rows[run.rows["dtype"] == dtype]) for run in _demo_runs()]

labels = [run.label for run in loaded]
left, right = st.columns(2)
label_a = left.selectbox("Run A (baseline)", labels, index=0, key="rvr_a")
label_b = right.selectbox("Run B", labels, index=1, key="rvr_b")
if label_a == label_b:
    st.warning("Run A and run B are the same run: pick two different runs.")
    st.stop()
run_a = next(run for run in loaded if run.label == label_a)
run_b = next(run for run in loaded if run.label == label_b)
st.dataframe(compare.run_info([run_a, run_b]).dropna(axis=1, how="all"), hide_index=True, key="rvr_info")
if compare.gpu_uuids(run_a.rows) and compare.gpu_uuids(run_b.rows):
    force = False
    if compare.gpu_uuids(run_a.rows) != compare.gpu_uuids(run_b.rows):
        force = st.checkbox(
            "Compare runs of different GPUs anyway",
            key="rvr_force",
            help="The two runs name different GPU UUIDs: differences include the boards, not only the code.",
        )
    try:
        different = compare.check_same_gpu(run_a.rows, run_b.rows, force=force)
    except compare.DifferentGPUError as error:
        st.warning(dd.md(f"Not compared: {error}."))
        st.stop()
    if different:
        st.warning(dd.md(f"Compared although {different}."))

mode = (
    st.segmented_control(
        "Compare",
        compare.MODES,
        default=compare.MODES[1],
        key="rvr_mode",
        help="same config: identical tunables in both runs; fastest config per variant: "
        "each run's best tunables per (variant, N), which may differ.",
    )
    or compare.MODES[1]
)
table = compare.ratio_table(run_a.rows, run_b.rows, method=method, dtype=dtype, mode=mode)
if table.empty:
    ui.empty(f"no config timed by both runs with {method}, {dtype}")
    st.stop()
summary = compare.ratio_summary(table)
cols = st.columns(4)
cols[0].metric("configs in both runs", f"{summary['points']:,}")
cols[1].metric("geometric mean B / A", f"{summary['geomean']:.3f}x")
cols[2].metric("B faster beyond spread", f"{summary['b_faster']:,}")
cols[3].metric("B slower beyond spread", f"{summary['b_slower']:,}")
st.caption(
    f"{dtype}, timing: {method}; ratios from {summary['min']:.3f}x to {summary['max']:.3f}x; "
    f"{summary['within_spread']:,} within the spread of the two runs."
)

per_variant = (
    table
    if mode == compare.MODES[1]
    else compare.ratio_table(run_a.rows, run_b.rows, method=method, dtype=dtype, mode=compare.MODES[1])
)
ui.chart(
    figures.ratio_figure(per_variant, label_a, label_b, dtype, method),
    per_variant,
    "rvr_ratio",
    "Each point: the variant's fastest config in B over its fastest in A at that N; bars: the spread interval. "
    "Open diamonds: N = 2^k ± 1.",
)
st.subheader("Ratio per config")
st.dataframe(
    table,
    hide_index=True,
    key="rvr_table",
    column_config={c: st.column_config.NumberColumn(format="%.3f") for c in ("ratio", "ratio_low", "ratio_high")}
    | {c: st.column_config.NumberColumn(format="%.2f µs") for c in ("a_us", "b_us")},
)

st.subheader("Where the ranking changes")
changes, compared = compare.ranking_changes(run_a.rows, run_b.rows, method=method, dtype=dtype)
if changes.empty:
    st.markdown(
        f"The fastest variant is the same in both runs at all {compared:,} (dtype, R, N) points both timed "
        f"({dtype}, {method}; among the variants both runs timed there)."
    )
else:
    st.markdown(
        f"The fastest variant differs at **{len(changes):,} of {compared:,}** (dtype, R, N) points "
        f"({dtype}, {method}; among the variants both runs timed there)."
    )
    st.dataframe(
        changes,
        hide_index=True,
        key="rvr_changes",
        column_config={
            c: st.column_config.NumberColumn(format="%.2f µs") for c in changes.columns if c.endswith("_us")
        },
    )
