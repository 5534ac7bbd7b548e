"""Tradeoffs: N x num_warps heatmaps of latency, occupancy and spills; best num_warps per N."""

from __future__ import annotations

import streamlit as st

from blockscope.pages import _common as ui
from blockscope.profiling.views import dashboard_data as dd
from blockscope.profiling.views import figures, tradeoffs

st.title("Tradeoffs")
st.markdown(
    "More warps per program mean fewer lanes (and registers) per thread but fewer programs per SM. "
    "Each cell is one (N, num_warps) config; other tunables take their fastest value."
)
ctx = ui.context()
dtype, method = ctx.dtype, ctx.method
source = ctx.filtered
triton = tradeoffs.warps_axis_variants(source[source["dtype"] == dtype])
from_grid = None
if not triton and len(source) and tradeoffs.BUNDLED_WARPS_GRID_PATH.exists():  # rows, but no num_warps axis
    grid_file = tradeoffs.BUNDLED_WARPS_GRID_PATH
    source = ui.load_path(grid_file)
    source = source[source["variant"].isin(ctx.filters.variants or source["variant"].unique())]
    triton = tradeoffs.warps_axis_variants(source[source["dtype"] == dtype])
    from_grid = grid_file
if not triton and not len(ctx.filtered):
    ui.empty("no rows pass the sidebar filters")
    st.stop()
if not triton:
    st.info(
        f"No {dtype} rows time a variant at two or more num_warps at one N, in the loaded data or the bundled grid "
        "(a default sweep times each variant at the num_warps its launcher picks). To draw this page for "
        f"{dtype}, time a grid on a GPU: `blockscope sweep --dtypes {dtype} --num-warps 1,2,4,8,16,32 "
        "--variants teaching,multirow,online,persistent --out grid.parquet`, then load it.",
        icon=":material/info:",
    )
    st.stop()
if from_grid is not None:
    st.info(
        f"The loaded data ({dd.md(ctx.label)}) times each variant at one num_warps only: these heatmaps show the "
        f"bundled num_warps grid `data/{from_grid.name}` (H200, measured {str(source['measured_at'].min())[:10]}: "
        f"{', '.join(sorted(set(source['dtype'])))} at N {', '.join(f'{n:,}' for n in sorted(set(source['n_cols'])))}"
        "), with the sidebar's dtype and timing method. Sweep with `--num-warps 1,2,4,8,16,32` for your own.",
        icon=":material/info:",
    )
variant = (
    st.segmented_control("Variant", triton, default=triton[0], format_func=dd.md, key="trade_variant") or triton[0]
)
part = source[(source["variant"] == variant) & (source["dtype"] == dtype)]
split = dd.split_setups(part)
if len(split) > 1:  # a heatmap holds one GPU / run / file: pick which (never the min over several)
    labels = [label for label, _ in split]
    chosen = (
        st.segmented_control("GPU / run / file", labels, default=labels[0], format_func=dd.md, key="trade_setup")
        or labels[0]
    )
    part = dict(split).get(chosen, split[0][1])
timed = part[part["method"] == method]

dense = st.toggle(
    "Only N measured at two or more num_warps",
    True,
    key="trade_dense",
    help="The sweep may time every num_warps only at some N; the other N have one default column.",
)
tabs = st.tabs(["Latency", "Occupancy", "Spills", "Best num_warps per N"])
panels = (
    ("median_us", "time relative to the fastest num_warps per N", "µs", ".3g", True, False, timed),
    ("occupancy", "theoretical occupancy", "occupancy", ".0%", False, False, part),
    ("spill_store_bytes", "spill stores per thread (bytes)", "bytes", ".0f", False, True, part),
)
for tab, (value, what, unit, fmt, relative, reverse, rows) in zip(tabs[:3], panels, strict=True):
    with tab:
        grid = tradeoffs.warps_grid(rows, value)
        if dense:
            grid = tradeoffs.keep_dense(grid)
        if grid.empty:
            ui.empty(f"no {what} for {dd.md(variant)} {dtype}")
            continue
        what_by = what if relative else f"{what} by N x num_warps"
        title = figures.title_for(f"{variant}: {what_by}", source, dtype, method if value == "median_us" else None)
        caption = (
            (
                "Each row is one N: 1.00x ★ (outlined) is the fastest num_warps there, the others are how many "
                "times slower; the hover has the time (µs). Grey cells were not measured or did not run, "
                "labelled from the data."
            )
            if relative
            else "Grey cells were not measured or did not run, labelled from the data."
        )
        ui.chart(
            figures.tradeoff_heatmap_figure(grid, title, unit, fmt, relative=relative, reverse=reverse),
            tradeoffs.grid_table(grid, unit, relative=relative),
            f"trade_{value}",
            caption,
        )
with tabs[3]:
    table = dd.best_warps_table(timed)
    if table.empty:
        ui.empty("no timed Triton rows")
    else:
        st.dataframe(
            table,
            hide_index=True,
            key="trade_best",
            column_config={
                "runner_up_slower_pct": st.column_config.NumberColumn(format="%.1f %%"),
                "median_us": st.column_config.NumberColumn(format="%.2f µs"),
            },
        )
        st.caption(
            f"{dd.md(variant)} {dtype}, {method}: the fastest num_warps at each N and how much slower the runner-up is."
        )
