"""Masked lanes: wasted lane fraction vs N per variant, and the seed's worked lane table run on the kernel."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from blockscope import paths
from blockscope.pages import _common as ui
from blockscope.profiling.views import dashboard_data as dd
from blockscope.profiling.views import figures, typed_config

DEFAULT_ROW = "0, 1, 2, 3, 4"
LANE_VARIANTS = (
    "teaching",
    "multirow",
    "online",
    "persistent",
    "splitrow",
    "staged",
    "staged_split",
    "warprows",
    "stagedrows",
)


@st.cache_data(show_spinner=False)
def lane_curve(variants: tuple[str, ...], n_min: int, n_max: int) -> pd.DataFrame:
    return dd.lane_curve(list(variants), figures.lane_n_values(n_min, n_max))


@st.cache_data(show_spinner=False, max_entries=64)
def lanes_at(variants: tuple[str, ...], n_cols: int) -> pd.DataFrame:
    return typed_config.lane_facts(list(variants), n_cols)


@st.cache_data(show_spinner="Running the teaching kernel…")
def worked_example(values: tuple[float, ...], dtype: str) -> tuple[pd.DataFrame, int]:
    return dd.lane_table(list(values), dtype)


st.title("Masked lanes")
st.markdown(
    "A program spans `BLOCK_SIZE = next_pow2(N)` lanes; lanes at offsets ≥ N load `-inf` and are "
    "not stored. Just past a power of two almost half the lanes are wasted."
)
ctx = ui.context(require_data=False)

selected = [v for v in (ctx.filters.variants or LANE_VARIANTS) if v in LANE_VARIANTS] or ["teaching"]
low, high = ctx.filters.n_range or (128, 65536)
left, right = st.columns([3, 1])
with right:
    variants = st.multiselect("Variants", LANE_VARIANTS, default=selected, key="lanes_variants")
    n_min, n_max = st.select_slider(
        "N range",
        [2**k for k in range(0, 21)],
        value=(
            dd.power_of_two_boundaries(1, low)[-1] if low > 1 else 1,
            min(2**20, dd.power_of_two_boundaries(1, high * 2 - 1)[-1]),
        ),
        key="lanes_range",
    )
with left:
    if not variants:
        ui.empty("no variant selected")
    else:
        curve = lane_curve(tuple(variants), n_min, max(n_max, n_min * 2))
        ui.chart(
            figures.masked_lanes_figure(curve),
            curve,
            "lanes_chart",
            "Masked lanes / lanes spanned per program for each variant's default tile (dotted: powers of "
            "two). 'online' loops over a fixed tile, so only its last tile is partly masked.",
        )

st.subheader("Any N: BLOCK_SIZE and masked lanes")
a1, a2 = st.columns([1, 3])
typed_n = int(
    a1.number_input(
        "N",
        1,
        1 << 24,
        5000,
        key="lanes_any_n",
        help=f"Any number of columns; each variant's default tile for it. {ui.allowed(1, 1 << 24)}",
    )
)
try:
    facts = lanes_at(tuple(variants or LANE_VARIANTS), typed_n)
except ValueError as error:
    st.error(str(error))
else:
    ok = facts[facts["error"] == ""]
    seed = ok[ok["variant"] == "teaching"]
    if len(seed):
        first = seed.iloc[0]
        m = a2.columns(3)
        m[0].metric("BLOCK_SIZE (teaching)", f"{int(first['tile_width']):,}", help="next_pow2(N)")
        m[1].metric("masked lanes per row", f"{int(first['masked_lanes_per_row']):,}")
        m[2].metric("wasted", f"{float(first['wasted_fraction']):.1%}")
    st.dataframe(
        facts,
        hide_index=True,
        key="lanes_any_table",
        column_config={"wasted_fraction": st.column_config.NumberColumn("wasted", format="percent")},
    )
    st.caption(
        f"Per variant at N = {typed_n:,}: its tile (BLOCK_SIZE, online's TILE or splitrow's CHUNK), tiles per "
        "row, lanes spanned and masked per row; `runs`: the variant that runs (auto's choice), `error`: why a "
        "variant does not take this N. Registers, occupancy and waves for this N: the Occupancy page (type "
        "the same N there)."
    )
    st.page_link(str(paths.PAGES_DIR / "occupancy.py"), label="Occupancy for a typed N", icon=":material/memory:")

st.subheader("Worked example: one row through the teaching kernel")
st.caption(
    "Type a row; it is run by `kernels.softmax_teaching` (on the CPU Triton interpreter when there is no "
    "GPU). The seed's example: `[0, 1, 2, 3, 4]`, N = 5, BLOCK_SIZE = 8."
)
c1, c2 = st.columns([3, 1])
text = c1.text_input(
    "Row values",
    DEFAULT_ROW,
    key="lanes_row",
    max_chars=dd.ROW_MAX_CHARS,
    help=f"Up to {dd.ROW_MAX_VALUES:,} finite numbers, separated by commas or spaces.",
)
dtype = c2.selectbox("dtype", ("fp32", "fp16", "bf16"), key="lanes_dtype")
try:
    values = dd.parse_row(text, dtype)
    table, block = worked_example(tuple(values), dtype)
except ValueError as error:
    st.error(str(error))
else:
    n = len(values)
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("N", n)
    m2.metric("BLOCK_SIZE", block)
    m3.metric("masked lanes", block - n)
    m4.metric("wasted", f"{(block - n) / block:.1%}")
    shown = table.set_index("offset").T
    shown = shown.astype(object)
    for column in shown.columns:
        valid = bool(table.loc[column, "valid"])
        shown.loc["loaded", column] = f"{table.loc[column, 'loaded']:g}" if valid else "-∞"
        shown.loc["valid", column] = "✓" if valid else "✗"
        shown.loc["softmax", column] = f"{table.loc[column, 'softmax']:.4f}".lstrip("0") if valid else "0"
        shown.loc["stored", column] = "✓" if valid else "✗"
    shown.index.name = "offset"
    st.dataframe(shown, key="lanes_table")
    st.caption(
        f"Row max m = {max(values):g} is subtracted before exp; the {block - n} masked lane(s) add "
        "nothing to the max or the sum and are never written."
    )
