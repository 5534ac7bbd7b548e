"""Occupancy: compiled resources of one config, blocks per SM and its four limits, waves, curves vs N, ncu."""

from __future__ import annotations

from dataclasses import asdict, is_dataclass

import pandas as pd
import streamlit as st

from blockscope.pages import _common as ui
from blockscope.pages import _ncu as ncu_section
from blockscope.pages._compile import background_compile, rerun_while_compiling
from blockscope.profiling.views import dashboard_data as dd
from blockscope.profiling.views import figures, typed_config

COMPILE_VARIANTS = (
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
MAX_TYPED_N = 1 << 24  # splitrow's widest N; each variant's plan names its own range
MAX_ROWS = 1 << 22  # R of the waves
MAX_SMS = 1024


@st.cache_data(show_spinner=False)
def occupancy_of(arch: str, n_regs: int, num_warps: int, shared_bytes: int) -> dict:
    from blockscope.profiling.inspect import occupancy

    result = occupancy.occupancy(arch, n_regs, num_warps, shared_bytes)
    return asdict(result) if is_dataclass(result) else dict(vars(result))


def sweep_row(df: pd.DataFrame, variant: str, dtype: str, n_cols: int, num_warps: int) -> pd.Series | None:
    rows = df[
        (df["variant"] == variant)
        & (df["dtype"] == dtype)
        & (df["n_cols"] == n_cols)
        & (df["num_warps"] == num_warps)
        & df["n_regs"].notna()
    ]
    return rows.iloc[0] if len(rows) else None


@st.cache_data(show_spinner=False, max_entries=256)
def lanes_at(variant: str, n_cols: int, num_warps: int, dtype: str) -> pd.DataFrame:
    return typed_config.lane_facts([variant], n_cols, num_warps=num_warps, dtype=dtype)


st.title("Occupancy")
st.markdown(
    "What the compiler allocated for one config, how many programs fit on an SM (registers, shared "
    "memory, warps and the block limit each cap it; the smallest binds) and how many waves a grid takes. "
    "Type any N: the facts are computed for it (an offline compile in the background), and the sweep's "
    "measurements are shown when that N was swept."
)
ctx = ui.context()
df = ctx.filtered
dtype = ctx.dtype
in_data = set(ctx.df["variant"])
variant_choices = sorted(COMPILE_VARIANTS, key=lambda v: v not in in_data)  # the loaded data's variants first
n_values = sorted(int(n) for n in df["n_cols"].unique()) or [1024]

arch_names = dd.arch_names()
data_arch = dd.data_arch(ctx.df)
if data_arch not in arch_names:
    st.info(
        f"The loaded data's GPU is {dd.md(data_arch)}, an arch the occupancy calculator has no limits for (allowed: "
        f"{', '.join(arch_names)}): its measured rows are shown, the limits and waves below are for the arch you pick.",
        icon=":material/help:",
    )
c = st.columns(4)
arch = c[0].selectbox(
    "GPU arch",
    arch_names,
    index=arch_names.index(data_arch) if data_arch in arch_names else 0,
    key="occ_arch",
    help="Registers, shared memory and limits of this architecture; the sweep data's own GPU is preselected.",
)
variant = c[1].selectbox(
    "Variant",
    variant_choices,
    key="occ_variant",
    help="Every Triton variant: its facts are computed here, measured rows shown if loaded.",
)
n_cols = int(
    c[2].number_input(
        "N (any)",
        1,
        MAX_TYPED_N,
        min(n_values, key=lambda n: abs(n - 1000)),
        key="occ_n",
        help=f"Columns per row; any N, not only the swept ones. {ui.allowed(1, MAX_TYPED_N)}",
    )
)
launcher_warps = typed_config.launcher_num_warps(variant, n_cols, dtype)
LAUNCHER = "launcher's choice"
warps_choice = c[3].selectbox(
    "num_warps",
    (LAUNCHER, 1, 2, 4, 8, 16, 32),
    key="occ_warps",
    format_func=lambda w: f"{LAUNCHER} ({launcher_warps})" if w == LAUNCHER and launcher_warps else str(w),
    help="Default: what the variant's launcher runs at this N and dtype; pick another to see its effect.",
)
num_warps = (launcher_warps or 4) if warps_choice == LAUNCHER else int(warps_choice)
swept = typed_config.measured_at(ctx.filtered, variant, dtype, n_cols)
if len(swept):
    st.caption(
        f":green[measured] — {variant} {dtype} N={n_cols:,} is in the loaded data ({len(swept)} row(s), dtype "
        "from the sidebar); the curves below include it."
    )
else:
    near = [n for n in n_values if n != n_cols]
    below = max((n for n in near if n < n_cols), default=None)
    above = min((n for n in near if n > n_cols), default=None)
    nearest = " and ".join(f"{n:,}" for n in (below, above) if n is not None)
    st.caption(
        f":orange[not measured] — {variant} {dtype} N={n_cols:,} is not in the loaded data"
        + (f" (nearest swept N: {nearest})" if nearest else "")
        + "; the lanes, compile facts, occupancy and waves below are computed for it."
    )

try:
    lanes = lanes_at(variant, n_cols, int(num_warps), dtype)
except ValueError as error:
    lanes = None
    st.error(str(error))
if lanes is not None and len(lanes):
    lane = lanes.iloc[0]
    if lane["error"]:
        st.error(lane["error"])
    else:
        m = st.columns(3)
        label = "BLOCK_SIZE" if lane["tiles_per_row"] == 1 else "Tile width (lanes)"
        m[0].metric(
            label,
            f"{int(lane['tile_width']):,}",
            help=f"{int(lane['tiles_per_row'])} tile(s) of {int(lane['tile_width']):,} lanes per row",
        )
        m[1].metric(
            "Masked lanes per row",
            f"{int(lane['masked_lanes_per_row']):,}",
            help=f"{int(lane['lanes_per_row']):,} lanes spanned for N={n_cols:,}",
        )
        m[2].metric("Wasted lanes", f"{float(lane['wasted_fraction']):.1%}")

facts: dict | None = None
occ: dict | None = None
compiling = None  # the background compile this page waits for (rerun shortly)
source = ""
try:
    info, compiling = background_compile(
        variant, n_cols, dtype, arch, int(num_warps), "occ_force", " Meanwhile: the sweep's compile columns, if any."
    )
    if info is not None:
        facts = asdict(info) if is_dataclass(info) else dict(vars(info))
        source = f"compiled {facts.get('source', 'offline')} for {arch} in {facts.get('compile_seconds', 0):.1f} s" + (
            f" with Triton {facts['triton_version']}" if facts.get("triton_version") else ""
        )
except ImportError:
    source = "blockscope.profiling.inspect.compiled is not available yet: facts from the sweep's compile columns"
except Exception as error:  # an invalid config, a compile failure or timeout: say which
    st.error(f"Compile failed for {variant} N={n_cols} num_warps={num_warps} {dtype} on {arch}: {error}")
row = sweep_row(ctx.df, variant, dtype, n_cols, int(num_warps))
if row is not None and (arch == data_arch or facts is None):
    # the measured GPU's own compile (its Triton) is the headline; the offline compile is an estimate beside it
    offline = facts
    facts = {
        k: (None if pd.isna(row[k]) else int(row[k]))
        for k in ("n_regs", "spill_store_bytes", "spill_load_bytes", "shared_bytes")
    }
    gpu = ", ".join(sorted(str(v) for v in ctx.df["gpu_name"].dropna().unique())) or "its GPU"
    live = ", ".join(sorted(str(v) for v in ctx.df["triton_version"].dropna().unique())) or "?"
    estimate = ""
    if offline is not None and offline.get("n_regs") is not None and facts["n_regs"] is not None:
        gap = int(offline["n_regs"]) - int(facts["n_regs"])
        estimate = f"; {source}: {int(offline['n_regs'])} registers/thread" + (
            f" ({gap:+d}: Triton versions differ, the GPU's own numbers are shown)" if gap else " (the same)"
        )
    estimate = estimate or (f"; {source}" if source else "")
    source = f"the sweep's compile on {dd.md(gpu)} with Triton {dd.md(live)} (measured){estimate}"
elif facts is not None:
    source += " — an offline estimate: the GPU's own Triton may allocate differently (not measured for this config)"
if facts is not None:
    try:
        occ = occupancy_of(arch, int(facts["n_regs"]), int(num_warps), int(facts["shared_bytes"] or 0))
    except ImportError:
        if row is not None and not pd.isna(row["blocks_per_sm"]):
            occ = {
                "blocks_per_sm": int(row["blocks_per_sm"]),
                "occupancy": float(row["occupancy"]),
                "limiter": row["limiter"],
                "limits": {},
            }
    except Exception as error:
        st.error(f"Occupancy calculator failed: {error}")

if facts is None:
    st.warning("No compile facts for this config (no compile module and no matching sweep row).")
else:
    m = st.columns(5)
    m[0].metric("Registers / thread", facts.get("n_regs"))
    m[1].metric("Spill stores / thread", f"{facts.get('spill_store_bytes') or 0} B")
    m[2].metric("Shared memory / program", f"{facts.get('shared_bytes') or 0:,} B")
    if occ:
        m[3].metric("Blocks (programs) / SM", occ["blocks_per_sm"])
        m[4].metric("Occupancy", f"{occ['occupancy']:.0%}", help=f"limited by {dd.md(occ['limiter'])}")
    st.caption(source)
    if occ and occ.get("limits"):
        ui.chart(
            figures.limits_figure(
                occ["limits"],
                occ["limiter"],
                f"{variant} N={n_cols} {dtype} {num_warps} warps on {arch}: "
                f"blocks per SM each resource allows (binding: {occ['limiter']})",
            ),
            pd.DataFrame([{"limit": k, "blocks_per_sm": v} for k, v in occ["limits"].items()]),
            "occ_limits",
        )
        if "carveout_bytes" in occ:
            note = typed_config.shared_memory_note(occ, arch)
            if occ["limiter"] == "shared_memory":
                st.warning(f"**Shared memory binds.** {note}", icon=":material/memory:")
            else:
                with st.expander(f"Why shared memory allows {occ['limits']['shared_memory']} blocks (the carveout)"):
                    st.markdown(note)

st.subheader("Waves")
data_sms = int(ctx.df["sm_count"].dropna().iloc[0]) if ctx.df["sm_count"].notna().any() else None
w = st.columns(3)
n_rows = int(w[0].number_input("R (rows)", 1, MAX_ROWS, 4096, key="occ_rows", help=ui.allowed(1, MAX_ROWS)))
sm_count = int(
    w[1].number_input(
        f"SMs ({arch})",
        1,
        MAX_SMS,
        typed_config.default_sm_count(arch, data_arch, data_sms),
        key=f"occ_sms_{arch}",
        help="Editable. Default: the loaded data's SM count when its GPU is this arch, else "
        f"the arch's reference GPU (blockscope.profiling.inspect.occupancy.ARCHS). {ui.allowed(1, MAX_SMS)}",
    )
)
grid = None
if occ:
    try:
        grid = typed_config.launch_grid(
            variant, n_rows, n_cols, dtype, int(num_warps), sm_count, int(occ["blocks_per_sm"])
        )
    except ValueError as error:
        st.error(str(error))
if grid is not None:
    w[2].metric("Grid programs", f"{grid.programs:,}", help=grid.how)
    st.caption(f"{grid.variant}'s launcher: {grid.how}.")
    if grid.fallback:
        st.warning(f"On a GPU of {sm_count} SMs this config runs 'online' instead: {grid.fallback}.")
    elif grid.programs and occ["blocks_per_sm"]:
        count, tail = dd.waves(grid.programs, sm_count, int(occ["blocks_per_sm"]))
        st.markdown(
            f"**{count:.2f} waves** of {sm_count * occ['blocks_per_sm']:,} programs "
            f"({sm_count} SMs x {occ['blocks_per_sm']} per SM); the last wave is **{tail:.0%} full**."
        )
        st.progress(min(1.0, tail), text="tail-wave fill")
elif occ is None:
    st.caption("Waves need the compile facts above (blocks per SM).")

st.subheader(f"{variant}: registers, spills and occupancy vs N")
curves = df[(df["variant"] == variant) & (df["dtype"] == dtype)]
if curves["n_regs"].notna().any():
    ui.chart(
        figures.compile_curves_figure(df, variant, dtype),
        curves.dropna(subset=["n_regs"]).drop_duplicates(["n_cols", "num_warps", "tunables"])[
            [
                "n_cols",
                "num_warps",
                "n_regs",
                "spill_store_bytes",
                "shared_bytes",
                "blocks_per_sm",
                "occupancy",
                "limiter",
            ]
        ],
        "occ_curves",
        "One line per num_warps, from the results' compile columns (dotted: powers of two).",
    )
else:
    ui.empty(f"no compile columns for {variant} {dtype} in the loaded data")

if variant == "persistent":
    st.subheader("persistent: programs vs SM count")
    ui.chart(
        figures.persistent_programs_figure(df, dtype),
        df[(df["variant"] == "persistent") & (df["dtype"] == dtype)][
            ["n_cols", "num_warps", "programs", "blocks_per_sm", "sm_count"]
        ].drop_duplicates(),
        "occ_persistent",
        "The persistent kernel launches SMs x blocks/SM programs that loop over rows.",
    )

driver = dd.load_driver_occupancy()
if driver is not None and "agrees" in driver.columns:
    st.subheader("Calculator vs the CUDA driver")
    ok = driver[driver["error"] == ""] if "error" in driver.columns else driver
    st.metric(
        "Configs where blocks/SM agree",
        f"{int(ok['agrees'].sum())} of {len(ok)}",
        help="cuOccupancyMaxActiveBlocksPerMultiprocessor on the compiled kernel vs profiling.inspect.occupancy",
    )
    columns = [
        c
        for c in (
            "variant",
            "dtype",
            "n_cols",
            "num_warps",
            "n_regs",
            "shared_bytes",
            "calculator_limiter",
            "calculator_blocks_per_sm",
            "driver_blocks_per_sm",
            "agrees",
        )
        if c in ok.columns
    ]
    with st.expander("Data: every validated config (data/occupancy_h200.csv)"):
        st.dataframe(ok[columns], hide_index=True, key="occ_driver")

ncu_section.occupancy_section(ctx.df)

offline_vs_live = dd.load_offline_vs_live()
if offline_vs_live is not None:
    st.subheader("Offline compile vs the live H200 compile")
    compared = offline_vs_live[offline_vs_live["offline_error"] == ""]
    same_regs = int((compared["regs_difference"] == 0).sum())
    live_triton = ", ".join(sorted(compared["live_triton"].astype(str).unique()))
    offline_triton = ", ".join(sorted(compared["offline_triton"].astype(str).unique()))
    left, middle, right = st.columns(3)
    left.metric("Same registers/thread", f"{same_regs} of {len(compared)}")
    same_shared = int((compared["offline_shared_bytes"] == compared["live_shared_bytes"]).sum())
    middle.metric("Same shared bytes", f"{same_shared} of {len(compared)}")
    right.metric("Largest register gap", f"{int(compared['regs_difference'].abs().max())} regs")
    st.caption(
        f"Live: Triton {live_triton} on the H200; offline: Triton {offline_triton} compiling for sm_90 here. "
        "Differences come from the Triton versions, not the arch: the offline numbers are estimates of what "
        "the GPU's own Triton will allocate."
    )
    columns = [
        "variant",
        "dtype",
        "n_cols",
        "tunables",
        "live_n_regs",
        "offline_n_regs",
        "regs_difference",
        "live_shared_bytes",
        "offline_shared_bytes",
        "live_spill_store_bytes",
        "offline_spill_store_bytes",
    ]
    with st.expander("Data: offline vs live (data/offline_vs_live.csv)"):
        st.dataframe(compared[columns], hide_index=True, key="occ_offline_live")

rerun_while_compiling(compiling)
