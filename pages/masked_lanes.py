"""Masked lanes: wasted lane fraction vs N per variant, the seed's worked lane table run on the kernel, the traffic
fusion saves on a masked attention softmax, and padded vs packed lanes for ragged rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from blockscope import paths
from blockscope.pages import _common as ui
from blockscope.profiling.inspect import fusion
from blockscope.profiling.views import dashboard_data as dd
from blockscope.profiling.views import figures, typed_config
from blockscope.profiling.views import fused as fused_views
from blockscope.profiling.views.figures import fused as fused_figures

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
def lane_curve(variants: tuple[str, ...], n_min: int, n_max: int, dtype: str) -> pd.DataFrame:
    return dd.lane_curve(list(variants), figures.lane_n_values(n_min, n_max), dtype=dtype)


@st.cache_data(show_spinner=False, max_entries=64)
def lanes_at(variants: tuple[str, ...], n_cols: int, dtype: str) -> pd.DataFrame:
    return typed_config.lane_facts(list(variants), n_cols, dtype=dtype)


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
lane_dtype = ctx.dtype  # the sidebar's dtype (fp16 without one): vector widths set warprows' and stagedrows' layouts
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
        curve = lane_curve(tuple(variants), n_min, max(n_max, n_min * 2), lane_dtype)
        ui.chart(
            figures.masked_lanes_figure(curve, lane_dtype),
            curve,
            "lanes_chart",
            f"Masked lanes / lanes spanned per program for each variant's default tile in {lane_dtype} (the "
            "sidebar's dtype; dotted: powers of two). 'online' loops over a fixed tile, so only its last tile is "
            "partly masked.",
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
    facts = lanes_at(tuple(variants or LANE_VARIANTS), typed_n, lane_dtype)
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
        f"Per variant at N = {typed_n:,} in {lane_dtype}: its tile (BLOCK_SIZE, online's TILE or splitrow's "
        "CHUNK), tiles per row, lanes spanned and masked per row; `runs`: the variant that runs (auto's "
        "choice), `error`: why a variant does not take this N. Registers, occupancy and waves for this N: the "
        "Occupancy page (type the same N there)."
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

st.subheader("Traffic saved by fusion")
st.caption(
    "Attention scores x of shape (B, H, Lq, Lk) through softmax(where(keep, x · scale + bias, -inf)). Eager torch "
    "runs one kernel per op, each reading its inputs and writing a full tensor: `x * scale`, `+ bias` (with a "
    "bias), `torch.where(keep, t, -inf)` (with a mask or causal; keep = mask & tril, precomputed, bool) and "
    "`softmax` (one read, one write: a lower bound, ATen's kernel for long rows reads a row more than once). "
    "`kernels.masked_softmax` is one kernel: x read once (causal: only the kept columns j ≤ i of each row), mask "
    "and bias read once per distinct element (their broadcast copies come from L2), y written once; past Lk = "
    f"{fusion.ONEPASS_MAX_N:,} its looped path reads x, mask and bias twice. Building keep, allocation and "
    "launch costs are not counted."
)
f1, f2, f3, f4, f5 = st.columns(5)
dims = [
    int(
        col.number_input(
            name, 1, fusion.MAX_DIM, default, key=f"fuse_{name.lower()}", help=ui.allowed(1, fusion.MAX_DIM)
        )
    )
    for col, name, default in zip((f1, f2, f3, f4), fusion.DIM_NAMES, (2, 16, 1024, 1024), strict=True)
]
score_dtype = f5.selectbox("Scores dtype", tuple(fusion.ELEMENT_BYTES), key="fuse_dtype")
g1, g2, g3 = st.columns([2, 2, 1])
mask_text = g1.text_input(
    "Mask shape",
    "B,1,Lq,Lk",
    key="fuse_mask",
    help="Comma-separated dims, right-aligned to (B, H, Lq, Lk) like torch broadcasting; each 1 or x's dim "
    "(B, H, Lq, Lk or its size); 'none' for no mask.",
)
bias_text = g2.text_input("Bias shape", "1,H,1,Lk", key="fuse_bias", help="As the mask shape; 'none' for no bias.")
causal = g3.toggle("Causal", False, key="fuse_causal", help="Keep column j ≤ row i (top-left aligned, as SDPA).")
try:
    traffic = fusion.fusion_traffic(
        dims,
        score_dtype,
        fusion.parse_broadcast(mask_text, dims, "mask shape"),
        fusion.parse_broadcast(bias_text, dims, "bias shape"),
        causal,
    )
except ValueError as error:
    st.error(dd.md(str(error)))
else:
    m = st.columns(3)
    m[0].metric("eager chain", f"{traffic.eager_bytes / 1e6:,.1f} MB", help="Bytes read + written, 1e6 bytes")
    m[1].metric("fused kernel", f"{traffic.fused_bytes / 1e6:,.1f} MB")
    m[2].metric("traffic ratio", f"{traffic.ratio:.2f}x", help="eager bytes / fused bytes")
    ui.chart(
        fused_figures.fusion_traffic_figure(traffic),
        fused_views.fusion_steps(traffic),
        "fuse_chart",
        "Each bar segment is one kernel's read + write bytes (hover for the split). At the same bandwidth, time "
        "scales with these bytes: the ratio bounds what fusion can save on a memory-bound chain.",
    )


@st.cache_data(show_spinner=False, max_entries=16)
def ragged_lengths(
    kind: str, segments: int, max_len: int, median: int, clip: int, sigma: float, text: str
) -> np.ndarray | list[int]:
    """Row lengths (elements) of the chosen distribution; ValueError naming the allowed ranges."""
    if kind == "uniform":
        return fusion.uniform_lengths(segments, max_len)
    if kind == "long_tail":
        return fusion.long_tail_lengths(segments, median, clip, sigma)
    return fusion.parse_lengths(text)


st.subheader("Padded vs packed lanes for ragged rows")
st.caption(
    "A softmax over rows of different lengths either pads every row to the longest (a (rows, max_len) tensor "
    "filled with -inf: torch's pad-and-unpad, or a nested tensor converted to padded) or runs on the packed "
    "values (`kernels.ragged_softmax`: values plus row offsets). Bytes: the softmax's read + write of the tensor "
    "it runs on; the padded path also pays the scatter into the padding and the gather back (not counted)."
)
kind = st.radio(
    "Row lengths",
    fusion.DISTRIBUTIONS,
    horizontal=True,
    key="rag_kind",
    format_func={
        "uniform": "uniform 1..max",
        "long_tail": "long tail (lognormal)",
        "typed": "typed lengths",
    }.get,
)
r = st.columns(5)
segments = max_len = median = clip = 1
sigma, text = 1.0, ""
if kind in ("uniform", "long_tail"):
    segments = int(
        r[0].number_input(
            "Rows", 1, fusion.MAX_SEGMENTS, 16384, key="rag_segments", help=ui.allowed(1, fusion.MAX_SEGMENTS)
        )
    )
if kind == "uniform":
    max_len = int(
        r[1].number_input(
            "Longest row", 1, fusion.MAX_LENGTH, 8192, key="rag_max", help=ui.allowed(1, fusion.MAX_LENGTH)
        )
    )
elif kind == "long_tail":
    median = int(
        r[1].number_input(
            "Median length", 1, fusion.MAX_LENGTH, 400, key="rag_median", help=ui.allowed(1, fusion.MAX_LENGTH)
        )
    )
    clip = int(
        r[2].number_input(
            "Clip (longest allowed)",
            1,
            fusion.MAX_LENGTH,
            100_000,
            key="rag_clip",
            help=ui.allowed(1, fusion.MAX_LENGTH),
        )
    )
    sigma = float(r[3].number_input("Sigma (log-space)", 0.0, 4.0, 1.0, 0.1, key="rag_sigma", help="Allowed: 0 to 4."))
else:
    text = st.text_area(
        "Lengths",
        "3, 17, 200, 5, 1024, 64",
        key="rag_lengths",
        help=f"Comma-separated integers from 1 to {fusion.MAX_LENGTH:,}; at most {fusion.MAX_TYPED_LENGTHS:,}.",
    )
values_dtype = r[4].selectbox("Values dtype", tuple(fusion.ELEMENT_BYTES), index=2, key="rag_dtype")
try:
    lengths = ragged_lengths(kind, segments, max_len, median, clip, sigma, text)
    padding = fusion.padding_model(lengths, values_dtype)
except ValueError as error:
    st.error(dd.md(str(error)))
else:
    m = st.columns(4)
    m[0].metric("padded lanes", f"{padding.padded_lanes:,}", help="rows x longest row")
    m[1].metric("packed lanes", f"{padding.packed_lanes:,}", help="sum of the row lengths")
    m[2].metric("waste factor", f"{padding.waste_factor:.2f}x", help="padded / packed = max_len x rows / sum")
    m[3].metric("padding share", f"{padding.wasted_fraction:.1%}", help="padding lanes / padded lanes")
    st.dataframe(fused_views.padding_table(padding), hide_index=True, key="rag_table")
    ui.chart(
        fused_figures.length_histogram(lengths, padding),
        fused_views.length_summary(lengths),
        "rag_hist",
        "Row lengths (seeded draws for the two distributions); dashed: the longest row, what padding pads every "
        "row to. One long row in many short ones makes the waste factor large.",
    )
