"""Numerics: ULP error of each softmax against the correctly rounded float64 answer, special values vs torch,
and what the exp implementation changes (tl.exp vs tl.exp2 probe)."""

from __future__ import annotations

import dataclasses

import pandas as pd
import streamlit as st

from blockscope.pages import _common as ui
from blockscope.profiling.inspect import numerics as nm
from blockscope.profiling.views import dashboard_data as dd
from blockscope.profiling.views.figures import numerics as fn

LIVE_VARIANTS = ("torch", "teaching", "online")
LIVE_N = (128, 1000, 1024)
LIVE_ROWS = 8
HIST_MAX_N = 1024
SPECIAL_COLS = 8
PROBE_N = 1000
PROBE_INPUTS = ("normal", "scale10", "scale30", "dominant", "near_uniform")
CHOICES = ("teaching", "multirow", "online", "persistent", "splitrow", "auto", "probe_exp", "probe_exp2", "probe_fp64")
PROBE_NAMES = ("probe_exp", "probe_exp2", "probe_fp64")


def _device() -> str:
    return "cuda" if ui.cuda_available() else "cpu"


def _platform_of_device() -> str:
    if _device() == "cpu":
        return "CPU interpreter"
    import torch

    return f"{torch.cuda.get_device_name()} (live)"


def platform_label(rows: pd.DataFrame) -> str:
    """GPU name(s) of stored numerics rows; 'CPU interpreter' for rows measured without a GPU."""
    names = sorted({str(v) for v in rows["gpu_name"].dropna().unique()}) if "gpu_name" in rows.columns else []
    labels = ["CPU interpreter" if n == "none" else n for n in names]
    return " + ".join(dict.fromkeys(labels)) or "unknown platform"


@st.cache_data(show_spinner="Loading the bundled H200 numerics…")
def bundled_numerics(path: str) -> pd.DataFrame:
    from pathlib import Path

    from blockscope.profiling.results import load_results

    return fn.numerics_rows(load_results(path)) if Path(path).exists() else pd.DataFrame()


@st.cache_data(show_spinner="Measuring ULP error live…", max_entries=16)
def live_table(
    names: tuple[str, ...],
    dtypes: tuple[str, ...],
    n_values: tuple[int, ...],
    n_rows: int,
    inputs: tuple[str, ...],
    device: str,
) -> pd.DataFrame:
    from blockscope.profiling.measure.env import fingerprint

    results = nm.run_numerics(
        names, dtypes, n_values, n_rows, inputs, device=device, env=fingerprint(measure_copy=False)
    )
    return nm.results_frame(results)


@st.cache_data(show_spinner="Counting ULP distances…", max_entries=16)
def live_histogram(names: tuple[str, ...], dtype: str, n_cols: int, input_name: str, device: str) -> pd.DataFrame:
    records = []
    for name in names:
        x = nm.make_input(input_name, LIVE_ROWS, n_cols, nm.DTYPES[dtype], device=device)
        counts = nm.ulp_counts(nm.softmax_callable(name)(x), nm.reference_softmax(x))
        records += [{"variant": name, "ulp": ulp, "count": count} for ulp, count in counts.items()]
    return pd.DataFrame(records, columns=["variant", "ulp", "count"])


@st.cache_data(show_spinner="Running the special-values matrix…", max_entries=32)
def special_table(name: str, dtype: str, device: str) -> pd.DataFrame:
    return pd.DataFrame(nm.special_values_table(nm.softmax_callable(name), name, dtype, SPECIAL_COLS, device=device))


@st.cache_data(show_spinner="Compiling both probes offline…", max_entries=4)
def probe_instructions(arch: str) -> dict[str, list[str]]:
    from blockscope.profiling.inspect.numerics.probe import exp_instructions

    return exp_instructions(arch)


st.title("Numerics (ULP)")
st.markdown(
    "Each output element is compared with the **float64 softmax of the same input, rounded once to the "
    "output dtype**; the error is counted in **ULPs of that dtype** (adjacent representable values are "
    "1 apart, +0 and −0 the same, subnormals count; NaN against a number is a *NaN mismatch*, shown as "
    "max = ∞). Low-order differences come from `tl.exp`'s approximation, the reduction order and the "
    "final store in the output dtype."
)
ctx = ui.context(require_data=False)
# the sidebar's filters apply, except R and dtype: numerics runs use few rows (64) and this page picks the dtype
stored = fn.numerics_rows(
    None
    if ctx.df is None
    else dd.apply_filters(ctx.df, dataclasses.replace(ctx.filters, n_rows=None, dtype=None), method=False)
)
device = _device()
source_label = ctx.label
if not len(stored):
    stored = bundled_numerics(str(nm.BUNDLED_PATH))
    if len(stored):
        source_label = f"bundled data/{nm.BUNDLED_PATH.name}"
        st.info(
            f"The loaded data ({dd.md(ctx.label)}) has no numerics columns: this page shows the bundled H200 numerics "
            f"capture (`data/{nm.BUNDLED_PATH.name}`: every backend x 3 dtypes x 9 N x 6 input distributions, "
            "R=64)."
        )
if len(stored):
    r_values = sorted(int(r) for r in stored["n_rows"].unique())
    if len(r_values) > 1:
        choices, index, rows_help = dd.row_choices(stored, r_values, default="largest")
        r_pick = st.selectbox("R (rows) of the numerics runs", choices, index=index, key="num_rows", help=rows_help)
        if dd.picked_rows(r_pick) is not None:
            stored = stored[stored["n_rows"] == r_pick]
    table, platform = stored, platform_label(stored)
    st.caption(
        f"Numerics columns of {dd.md(source_label)}: {len(stored)} measurements on **{dd.md(platform)}** "
        "(sidebar filters apply, except R and dtype; several configs at one N: the least exact is drawn)."
    )
else:
    platform = _platform_of_device()
    what = f"The loaded data ({dd.md(ctx.label)})" if ctx.df is not None else "No results are loaded, and so the page"
    st.info(
        f"{what} has no numerics columns (`ulp_max`, … filled by `python -m profiling numerics` or a sweep "
        f"made after they existed). Showing numbers computed live on the **{dd.md(platform)}**: "
        f"{', '.join(LIVE_VARIANTS)} at N ∈ {{{', '.join(map(str, LIVE_N))}}}, {LIVE_ROWS} rows."
    )
    table = None

st.info(
    "**Which platform.** This page shows **" + dd.md(platform) + "**. The CPU interpreter's numbers differ from a "
    "GPU's: on the interpreter `tl.exp` is numpy's float32 exp and `/` a correctly rounded division, while on "
    "NVIDIA GPUs Triton compiles `tl.exp` to a multiply by log2(e) + `ex2.approx.f32` and the division to "
    "`div.full.f32` (both approximate), and torch.softmax runs its CUDA kernel instead of its CPU one. In "
    "**bf16**, the interpreter's store truncates float32 to bf16 (round toward zero) and mangles subnormal "
    "results, where the GPU rounds to nearest (`cvt.rn.bf16.f32`): the Triton kernels' bf16 errors on the "
    "CPU interpreter overstate the GPU's. Load a "
    "file from `python -m profiling numerics --out …` (or `tools/capture_numerics.py`) run on the GPU to see "
    "the GPU's numbers."
)

dtypes = sorted(stored["dtype"].unique(), key=list(nm.DTYPES).index) if len(stored) else list(nm.DTYPES)
inputs = [i for i in nm.INPUTS if len(stored) == 0 or i in set(stored["numerics_input"])]
c1, c2 = st.columns(2)
if ctx.df is not None:  # the sidebar's dtype, as on every page
    dtype = ctx.dtype
    c1.caption(
        f"dtype **{dtype}** (sidebar)"
        + ("" if dtype in dtypes else f"; the numerics rows shown hold only {', '.join(dtypes)}")
    )
else:  # nothing loaded, so no sidebar filters: the page's own choice
    dtype = c1.selectbox("dtype", dtypes, key="num_dtype")
input_name = c2.selectbox(
    "Input distribution",
    inputs,
    key="num_input",
    help="normal: the sweep's input; scale10/scale30: 10x/30x normal logits; dominant: one "
    "value per row 30 above the rest; near_uniform: 1e-3 x normal; special: all -inf, "
    "+inf, NaN, -inf, equal, subnormal and ±max rows.",
)
if table is None:
    table = live_table(LIVE_VARIANTS, (dtype,), LIVE_N, LIVE_ROWS, (input_name,), device)
failed = table[table["error"].fillna("") != ""]
if len(failed):
    st.warning(
        f"{len(failed)} measurement(s) failed: "
        + dd.md("; ".join(f"{r.variant} {r.dtype} N={r.n_cols}: {r.error}" for r in failed.head(3).itertuples()))
    )
shown = fn.numerics_rows(table)
shown = shown[(shown["dtype"] == dtype) & (shown["numerics_input"] == input_name)] if len(shown) else shown
columns = [
    "variant",
    "dtype",
    "n_rows",
    "n_cols",
    "numerics_input",
    "ulp_max",
    "ulp_mean",
    "ulp_frac_0",
    "ulp_frac_1",
    "ulp_frac_gt1",
    "rowsum_err_max",
]
if shown.empty:
    ui.empty(f"no numerics rows for {dtype} with input {input_name}")
else:
    ui.chart(
        fn.ulp_vs_n_figure(table, dtype, input_name, platform),
        shown[columns].sort_values(["variant", "n_cols"]),
        "num_vs_n",
        "Per variant/backend: the largest and the mean distance over all R x N elements. Dotted: "
        "powers of two, where BLOCK_SIZE = next_pow2(N) doubles.",
    )
    n_options = sorted(int(n) for n in shown["n_cols"].unique())
    worst_n = (
        int(shown.loc[shown["ulp_max"].astype(float).idxmax(), "n_cols"]) if shown["ulp_max"].notna().any() else None
    )
    n_start = worst_n if worst_n in n_options else n_options[0]
    n_pick = (
        st.select_slider(
            "N for the distribution",
            n_options,
            value=n_start,
            key="num_n",
            help="Starts at the N where the least exact backend's largest error is (the worst case shown above).",
        )
        if len(n_options) > 1
        else n_options[0]
    )
    st.caption(
        f"Distribution at N={n_pick:,}"
        + (" — the N of the largest error above." if n_pick == worst_n else " — picked on the slider.")
    )
    at_n = shown[shown["n_cols"] == n_pick]
    ui.chart(
        fn.ulp_fractions_figure(table, dtype, n_pick, input_name, platform),
        at_n[columns],
        "num_fractions",
        "Share of elements exactly right (0 ULP), one step off (1 ULP) and further, from the stored "
        "ulp_frac_* columns.",
    )

st.subheader("ULP histogram (live)")
h1, h2 = st.columns(2)
hist_variant = h1.selectbox("Compare torch with", CHOICES, key="num_hist_variant")
hist_n = h2.selectbox("N", [n for n in LIVE_N if n <= HIST_MAX_N], index=1, key="num_hist_n")
counts = live_histogram(("torch", hist_variant), dtype, hist_n, input_name, device)
ui.chart(
    fn.ulp_histogram_figure(
        counts,
        f"Elements per ULP distance — {_platform_of_device()}, {dtype}, N={hist_n}, R={LIVE_ROWS}, input {input_name}",
    ),
    counts,
    "num_hist",
    f"Computed live (cached) on {LIVE_ROWS} rows, N ≤ {HIST_MAX_N} only: the full "
    "distribution, which the stored columns summarise as 0 / 1 / > 1.",
)

st.subheader("Special values vs torch.softmax (live)")
s1, _ = st.columns(2)
special_variant = s1.selectbox("Softmax", CHOICES, key="num_special_variant")
special = special_table(special_variant, dtype, device)
st.dataframe(special, hide_index=True, key="num_special_table")
differs = special[special["difference"] != "same as torch"]
st.caption(
    f"Rows of {SPECIAL_COLS} {dtype} values on the {_platform_of_device()}; `difference` compares the bits "
    "with torch.softmax on the same input and device. "
    + (
        "Every case matches torch."
        if differs.empty
        else f"{len(differs)} case(s) differ from torch: "
        + "; ".join(f"{r.case}: {r.difference}" for r in differs.itertuples())
    )
)
with st.expander("What the cases are"):
    st.dataframe(
        pd.DataFrame({"case": list(nm.SPECIAL_DESCRIPTIONS), "input": list(nm.SPECIAL_DESCRIPTIONS.values())}),
        hide_index=True,
        key="num_special_cases",
    )

st.subheader("What the exp implementation changes")
st.markdown(
    "`probe_exp`, `probe_exp2` and `probe_fp64` are a numerics-only probe kernel (`profiling/inspect/numerics/"
    "probe.py`, not a registered variant): the teaching kernel's math with `tl.exp(x - max)`, `tl.exp2((x - "
    "max) · log2 e)`, or max, exp, sum and division all in float64 (rounded once at the store: the exact "
    "end of the scale; its speed cost is in `docs/kernel-changes.md`)."
)
probes = stored[stored["variant"].isin(PROBE_NAMES)] if len(stored) else stored
probe_platform = platform
if probes.empty or dtype not in set(probes["dtype"]):
    probes = live_table(PROBE_NAMES, (dtype,), (PROBE_N,), LIVE_ROWS, PROBE_INPUTS, device)
    probe_platform = _platform_of_device()
ui.chart(
    fn.exp_probe_figure(probes, dtype, probe_platform),
    fn.numerics_rows(probes)[[c for c in columns if c != "n_rows"]] if len(fn.numerics_rows(probes)) else probes,
    "num_probe",
    f"Measured on the {probe_platform}. On the CPU interpreter exp2 adds the rounding of the log2(e) "
    "product; on NVIDIA GPUs tl.exp already is that product + ex2.approx, so the probes differ "
    "there only where exp2's flush-to-zero variant drops subnormal results.",
)
if st.checkbox("Show the probes' PTX instructions (offline compile for sm_90, ~15 s)", key="num_ptx"):
    try:
        st.dataframe(
            pd.DataFrame([{"probe": k, "instructions": ", ".join(v)} for k, v in probe_instructions("sm_90").items()]),
            hide_index=True,
            key="num_ptx_table",
        )
    except (RuntimeError, OSError, ValueError) as error:
        st.error(str(error))
