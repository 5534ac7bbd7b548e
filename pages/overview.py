"""Overview: what is loaded and the headline findings computed from it."""

from __future__ import annotations

import statistics

import streamlit as st

from blockscope.pages import _common as ui
from blockscope.profiling.views import dashboard_data as dd
from blockscope.profiling.views import figures


def compact(n: int) -> str:
    """65536 -> '64K', 1000 -> '1,000'."""
    return f"{n // 1024}K" if n >= 1024 and n % 1024 == 0 else f"{n:,}"


def bandwidth(gbps: float) -> str:
    """4251.3 -> '4.25 TB/s', 812.0 -> '812 GB/s': short enough for a metric in a sixth of the page."""
    return f"{gbps / 1000:.2f} TB/s" if gbps >= 1000 else f"{gbps:,.0f} GB/s"


st.title("Blockscope")
st.markdown(
    "How Triton row-softmax kernels map an **R x N** tensor onto GPU work units — the seed's teaching "
    "kernel (one program per row, `BLOCK_SIZE = next_pow2(N)`, masked lanes load `-inf`) against "
    "`torch.softmax` and the production variants (multirow, online, persistent, ...)."
)
ctx = ui.context()
df = ctx.df
info = dd.summary(df)

st.subheader(f"Loaded: {dd.md(ctx.label)}")
st.markdown(
    f"**GPU:** {dd.md(', '.join(info['gpus']) or 'unknown')} · **SMs:** "
    f"{dd.md(', '.join(map(str, info['sm_counts'])) or '?')} · **driver:** {dd.md(', '.join(info['drivers']) or '?')}"
    f" · **torch:** {dd.md(', '.join(info['torch_versions']))}"
    f" · **Triton:** {dd.md(', '.join(info['triton_versions']))}"
)
cols = st.columns(6)
copies = info["copy_gbps"]
copy_median = statistics.median(copies) if copies else None
cols[0].metric(
    "Copy bandwidth",
    bandwidth(copy_median) if copies else "n/a",
    help=f"device-to-device copy measured in the same run: {copy_median or 0:,.0f} GB/s"
    + (f"; median of {len(copies)} runs: " + ", ".join(f"{v:,.0f}" for v in copies) if len(copies) > 1 else ""),
)
cols[1].metric("Configs", f"{info['configs']:,}", help=f"{info['rows']:,} rows (one per config x timing method)")
cols[2].metric(
    "Failed rows",
    f"{info['errors']:,}",
    help=f"kept with their error text (Kernel evidence page); not counted: {info['not_run']:,} rows a "
    "backend does not run by its own rules ('unsupported: ...', e.g. Quack at N not a multiple of 8, "
    "the staged variants at odd 16-bit N) or that are not installed ('unavailable: ...')",
)
cols[3].metric(
    "N range",
    f"{compact(info['n_min'])}–{compact(info['n_max'])}",
    help=f"{info['n_min']:,} to {info['n_max']:,}: {info['n_count']} distinct N",
)
rows_r = info["rows_r"]
cols[4].metric(
    "R (rows)",
    compact(rows_r[0]) + (f" +{len(rows_r) - 1}" if len(rows_r) > 1 else ""),  # fits a sixth of the page
    help=f"{len(rows_r)} values: " + ", ".join(f"{r:,}" for r in rows_r),
)
cols[5].metric("Timing methods", len(info["methods"]), help=", ".join(info["methods"]))
st.caption(
    f"Variants: {dd.md(', '.join(info['variants']))} · dtypes: {', '.join(info['dtypes'])} · num_warps: "
    f"{', '.join(map(str, info['num_warps']))} · measured {dd.md(', '.join(info['measured_at'])[:80])}"
)

with st.expander("Sweep extent: configs per variant and dtype"):
    extent = (
        df.drop_duplicates(list(dd.CONFIG_COLUMNS))
        .groupby(["variant", "dtype"])
        .agg(
            configs=("n_cols", "size"),
            n_min=("n_cols", "min"),
            n_max=("n_cols", "max"),
            n_count=("n_cols", "nunique"),
            failed=("error", lambda e: int((e.fillna("") != "").sum())),
        )
        .reset_index()
    )
    st.dataframe(extent, hide_index=True, key="ov_extent")

st.subheader(f"Findings ({ctx.dtype}, {ctx.method})")
st.caption(
    f"Computed from the rows that pass the sidebar filters: dtype {ctx.dtype}, timing method {ctx.method}. "
    "Change either in the sidebar to see how the picture moves."
)
scope = ctx.filtered
speedups = dd.speedup_vs_torch(scope[scope["method"] == ctx.method], ours_only=True)
if len(speedups):
    ui.chart(
        figures.best_speedup_figure(speedups, df, ctx.method),
        speedups[
            [*dd.setup_keys(speedups), "dtype", "n_cols", "variant", "num_warps", "median_us", "torch_us", "speedup"]
        ],
        "ov_speedup",
        "At each N, the fastest of Blockscope's own kernels (its variants and auto, any tunables; not Inductor, "
        "Liger or Quack: the Backends page compares those) against torch.softmax; above 1 Blockscope wins.",
    )
for finding in dd.findings(scope, ctx.method):
    with st.container(border=True):
        st.markdown(f"**{dd.md(finding.title)}** — {dd.md(finding.text)}")
        if len(finding.data):
            with st.expander("Rows behind this finding"):
                st.dataframe(finding.data, hide_index=True)
