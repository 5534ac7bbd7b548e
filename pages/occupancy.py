"""Occupancy: compiled resources of one config, blocks per SM and its four limits, waves, curves vs N, ncu."""

from __future__ import annotations

from dataclasses import asdict, is_dataclass

import pandas as pd
import streamlit as st

from pages import _common as ui
from pages._compile import background_compile, rerun_while_compiling
from profiling import dashboard_data as dd
from profiling import figures

COMPILE_VARIANTS = ("teaching", "multirow", "online", "persistent", "splitrow")


@st.cache_data(show_spinner=False)
def occupancy_of(arch: str, n_regs: int, num_warps: int, shared_bytes: int) -> dict:
    from profiling import occupancy

    result = occupancy.occupancy(arch, n_regs, num_warps, shared_bytes)
    return asdict(result) if is_dataclass(result) else dict(vars(result))


def sweep_row(df: pd.DataFrame, variant: str, dtype: str, n_cols: int, num_warps: int) -> pd.Series | None:
    rows = df[(df["variant"] == variant) & (df["dtype"] == dtype) & (df["n_cols"] == n_cols)
              & (df["num_warps"] == num_warps) & df["n_regs"].notna()]
    return rows.iloc[0] if len(rows) else None


def grid_programs(variant: str, n_rows: int, n_cols: int, dtype: str, num_warps: int) -> int:
    import kernels

    plan = kernels.get_variant(variant).plan(n_rows, n_cols, kernels.dtype_from_name(dtype), num_warps=num_warps)
    return plan.programs


st.title("Occupancy")
st.markdown("What the compiler allocated for one config, how many programs fit on an SM (registers, shared "
            "memory, warps and the block limit each cap it; the smallest binds) and how many waves a grid takes.")
ctx = ui.context()
df = ctx.filtered
variants_in_data = [v for v in COMPILE_VARIANTS if v in set(ctx.df["variant"])] or list(COMPILE_VARIANTS)
n_values = sorted(int(n) for n in df["n_cols"].unique()) or [1024]

arch_names = dd.arch_names()
data_arch = dd.data_arch(ctx.df)
c = st.columns(5)
arch = c[0].selectbox("GPU arch", arch_names, index=arch_names.index(data_arch) if data_arch in arch_names else 0,
                      key="occ_arch", help="Registers, shared memory and limits of this architecture; the sweep "
                                           "data's own GPU is preselected.")
variant = c[1].selectbox("Variant", variants_in_data, key="occ_variant")
n_cols = c[2].selectbox("N", n_values, index=min(range(len(n_values)), key=lambda i: abs(n_values[i] - 1000)),
                        key="occ_n")
num_warps = c[3].selectbox("num_warps", (1, 2, 4, 8, 16, 32), index=2, key="occ_warps")
dtype = c[4].selectbox("dtype", ("fp16", "bf16", "fp32"), index=("fp16", "bf16", "fp32").index(ctx.dtype),
                       key="occ_dtype")

facts: dict | None = None
occ: dict | None = None
compiling = None  # the background compile this page waits for (rerun shortly)
source = ""
try:
    info, compiling = background_compile(variant, int(n_cols), dtype, arch, int(num_warps), "occ_force",
                                         " Meanwhile: the sweep's compile columns, if any.")
    if info is not None:
        facts = asdict(info) if is_dataclass(info) else dict(vars(info))
        source = f"compiled {facts.get('source', 'offline')} for {arch} in {facts.get('compile_seconds', 0):.1f} s"
except ImportError:
    source = "profiling.compiled is not available yet: facts from the sweep's compile columns"
except Exception as error:  # an invalid config, a compile failure or timeout: say which
    st.error(f"Compile failed for {variant} N={n_cols} num_warps={num_warps} {dtype} on {arch}: {error}")
row = sweep_row(ctx.df, variant, dtype, int(n_cols), int(num_warps))
if facts is None and row is not None:
    facts = {k: (None if pd.isna(row[k]) else int(row[k]))
             for k in ("n_regs", "spill_store_bytes", "spill_load_bytes", "shared_bytes")}
    source = source or "from the sweep's compile columns"
if facts is not None:
    try:
        occ = occupancy_of(arch, int(facts["n_regs"]), int(num_warps), int(facts["shared_bytes"] or 0))
    except ImportError:
        if row is not None and not pd.isna(row["blocks_per_sm"]):
            occ = {"blocks_per_sm": int(row["blocks_per_sm"]), "occupancy": float(row["occupancy"]),
                   "limiter": row["limiter"], "limits": {}}
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
        m[4].metric("Occupancy", f"{occ['occupancy']:.0%}", help=f"limited by {occ['limiter']}")
    st.caption(source)
    if occ and occ.get("limits"):
        ui.chart(figures.limits_figure(occ["limits"], occ["limiter"],
                                       f"{variant} N={n_cols} {dtype} {num_warps} warps on {arch}: "
                                       f"blocks per SM each resource allows (binding: {occ['limiter']})"),
                 pd.DataFrame([{"limit": k, "blocks_per_sm": v} for k, v in occ["limits"].items()]), "occ_limits")

st.subheader("Waves")
sm_default = int(ctx.df["sm_count"].dropna().iloc[0]) if ctx.df["sm_count"].notna().any() else 132
try:
    from profiling import occupancy as occupancy_module

    if arch != data_arch or not ctx.df["sm_count"].notna().any():
        sm_default = occupancy_module.ARCHS[arch].sm_count
except (ImportError, AttributeError, KeyError):
    pass
w = st.columns(3)
n_rows = w[0].number_input("R (rows)", 1, 2**22, 4096, key="occ_rows")
sm_count = w[1].number_input("SMs", 1, 1024, sm_default, key="occ_sms")
try:
    programs = grid_programs(variant, int(n_rows), int(n_cols), dtype, int(num_warps))
    if variant == "persistent" and occ:
        programs = min(int(n_rows), int(sm_count) * max(1, occ["blocks_per_sm"]))
except Exception as error:
    programs = None
    st.error(str(error))
if programs and occ and occ["blocks_per_sm"]:
    count, tail = dd.waves(programs, int(sm_count), int(occ["blocks_per_sm"]))
    w[2].metric("Grid programs", f"{programs:,}")
    st.markdown(f"**{count:.2f} waves** of {int(sm_count) * occ['blocks_per_sm']:,} programs "
                f"({sm_count} SMs x {occ['blocks_per_sm']} per SM); the last wave is **{tail:.0%} full**.")
    st.progress(min(1.0, tail), text="tail-wave fill")

st.subheader(f"{variant}: registers, spills and occupancy vs N")
curves = df[(df["variant"] == variant) & (df["dtype"] == dtype)]
if curves["n_regs"].notna().any():
    ui.chart(figures.compile_curves_figure(df, variant, dtype), curves.dropna(subset=["n_regs"]).drop_duplicates(
        ["n_cols", "num_warps", "tunables"])[["n_cols", "num_warps", "n_regs", "spill_store_bytes", "shared_bytes",
                                            "blocks_per_sm", "occupancy", "limiter"]], "occ_curves",
             "One line per num_warps, from the results' compile columns (dotted: powers of two).")
else:
    ui.empty(f"no compile columns for {variant} {dtype} in the loaded data")

if variant == "persistent":
    st.subheader("persistent: programs vs SM count")
    ui.chart(figures.persistent_programs_figure(df, dtype),
             df[(df["variant"] == "persistent") & (df["dtype"] == dtype)][
                 ["n_cols", "num_warps", "programs", "blocks_per_sm", "sm_count"]].drop_duplicates(),
             "occ_persistent", "The persistent kernel launches SMs x blocks/SM programs that loop over rows.")

driver = dd.load_driver_occupancy()
if driver is not None and "agrees" in driver.columns:
    st.subheader("Calculator vs the CUDA driver")
    ok = driver[driver["error"] == ""] if "error" in driver.columns else driver
    st.metric("Configs where blocks/SM agree", f"{int(ok['agrees'].sum())} of {len(ok)}",
              help="cuOccupancyMaxActiveBlocksPerMultiprocessor on the compiled kernel vs profiling.occupancy")
    columns = [c for c in ("variant", "dtype", "n_cols", "num_warps", "n_regs", "shared_bytes", "calculator_limiter",
                           "calculator_blocks_per_sm", "driver_blocks_per_sm", "agrees") if c in ok.columns]
    with st.expander("Data: every validated config (data/occupancy_h200.csv)"):
        st.dataframe(ok[columns], hide_index=True, key="occ_driver")

ncu = dd.load_ncu()
if ncu is not None and {"theoretical_occupancy_pct", "achieved_occupancy_pct"} <= set(ncu.columns):
    st.subheader("Nsight Compute validation")
    ui.chart(figures.ncu_figure(ncu), ncu, "occ_ncu",
             "Theoretical vs achieved occupancy and DRAM throughput measured by ncu (data/ncu_validation.csv).")

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
    st.caption(f"Live: Triton {live_triton} on the H200; offline: Triton {offline_triton} compiling for sm_90 here. "
               "Differences come from the Triton versions, not the arch: the offline numbers are estimates of what "
               "the GPU's own Triton will allocate.")
    columns = ["variant", "dtype", "n_cols", "tunables", "live_n_regs", "offline_n_regs", "regs_difference",
               "live_shared_bytes", "offline_shared_bytes", "live_spill_store_bytes", "offline_spill_store_bytes"]
    with st.expander("Data: offline vs live (data/offline_vs_live.csv)"):
        st.dataframe(compared[columns], hide_index=True, key="occ_offline_live")

rerun_while_compiling(compiling)
