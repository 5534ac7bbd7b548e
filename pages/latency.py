"""Latency: torch vs each Triton variant vs N, spread band, GB/s vs copy bandwidth, speedup, regimes; forward,
backward or forward + backward rows."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from blockscope.pages import _common as ui
from blockscope.profiling.views import dashboard_data as dd
from blockscope.profiling.views import figures

st.title("Latency")
ctx = ui.context()
direction = st.selectbox(
    "Direction",
    list(dd.DIRECTION_LABELS),
    format_func=dd.direction_label,
    key="lat_direction",
    help="forward: y = softmax(x); backward: dx from a saved y and dy; forward + backward: one "
    "training step through autograd",
)
absent = dd.absent_directions_note(ctx.df)
if absent:
    st.caption(absent)
missing = dd.missing_direction_note(ctx.df, direction)
if missing:
    st.info(missing, icon=":material/info:")
    st.stop()
filtered = dd.apply_filters(ctx.df, replace(ctx.filters, direction=direction), method=False)
c = st.columns([2, 1, 1])
c[0].caption(f"Timing method **{ctx.method}**, dtype **{ctx.dtype}** (sidebar).")
band = c[1].toggle("p20..p80 band", True, key="lat_band")
shade = c[2].toggle("Shade regimes", True, key="lat_regimes")
method, dtype = ctx.method, ctx.dtype
part = filtered[(filtered["method"] == method) & (filtered["dtype"] == dtype)]
if dd.ran(part).empty:
    ui.empty(f"no timed rows for {dtype} with {method}")
    st.stop()


@st.cache_resource(show_spinner=False, max_entries=16)  # pure functions of the rows: a rerun redraws nothing
def _computed(key: str, _filtered, _part, method: str, dtype: str, band: bool, shade: bool) -> dict:
    regime_table = dd.regimes(_part)
    spans = dd.regime_spans(regime_table) if shade else []
    best = dd.best_per_n(_part)
    shown = dd.default_series(best)
    speedups = dd.speedup_vs_torch(_part)
    drawn = {"shown": shown or None, "edge_markers": False}
    return {
        "regimes": regime_table,
        "best": best,
        "shown": shown,
        "edges": dd.pow2_edges(best),
        "speedups": speedups,
        "latency": figures.latency_figure(_filtered, method, dtype, spans, band, **drawn),
        "speedup": figures.speedup_figure(speedups, _filtered, method, dtype, **drawn) if len(speedups) else None,
        "bandwidth": figures.bandwidth_figure(_filtered, method, dtype, **drawn),
    }


computed = _computed(ui.data_key(ctx, direction), filtered, part, method, dtype, band, shade)
regime_table, best, shown = computed["regimes"], computed["best"], computed["shown"]
if shade and dd.setups(part):
    st.caption(
        "Regime shading is off: the rows hold several GPUs / runs / files, whose regimes differ (see the table below)."
    )
ui.chart(
    computed["latency"],
    best,
    "lat_time",
    f"Drawn at first: {dd.md(', '.join(shown)) or 'every variant'} (auto, torch, the fastest peer backend, the seed's "
    "teaching kernel); every other variant is in the legend, one click away. Fastest config of each variant at "
    "each N (hover for its tunables); band: p20..p80 of the samples; dotted: powers of two, where BLOCK_SIZE "
    "doubles (the N = 2^k ± 1 points are in the table below)." + dd.rows_note(best),
)
edges = computed["edges"]
if len(edges):
    with st.expander(f"Around powers of two: N = 2^k − 1, 2^k, 2^k + 1 ({len(edges)} rows)"):
        st.caption(
            "At N = 2^k + 1 next_pow2(N) doubles: kernels that size BLOCK_SIZE by it pay for twice the lanes. "
            "p+1 / p > 1 is that cost."
        )
        st.dataframe(edges, hide_index=True, key="lat_edges")
st.caption(
    f"Regimes are derived from the data for the fastest Triton variant at each N: **spill-bound** when its "
    f"compiled kernel spills, **bandwidth-bound** when it reaches ≥ {dd.BANDWIDTH_BOUND_FRACTION:.0%} of "
    f"the measured copy bandwidth, **launch-bound** when its time is within {dd.LAUNCH_BOUND_FACTOR}x of "
    "the smallest time that variant measured for this dtype (the flat part of its curve)."
)
with st.expander("Regime per variant and N"):
    st.dataframe(regime_table, hide_index=True, key="lat_regime_table")

speedups = computed["speedups"]
if speedups.empty:
    ui.empty("no torch baseline in the filtered rows")
else:
    ui.chart(
        computed["speedup"],
        speedups[
            [*dd.setup_keys(speedups), "variant", "n_cols", "num_warps", "tunables", "median_us", "torch_us", "speedup"]
        ],
        "lat_speedup",
        "Above 1: faster than torch.softmax at that N. The same series are drawn at first as above.",
    )
ui.chart(
    computed["bandwidth"],
    best[[*dd.setup_keys(best), "variant", "n_cols", "num_warps", "bytes_moved", "median_us", "gbps", "copy_fraction"]],
    "lat_gbps",
    f"Bytes moved = {dd.DIRECTION_BYTES[direction]}, over the median time.",
)
