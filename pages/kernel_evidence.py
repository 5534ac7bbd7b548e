"""Kernel evidence: which CUDA kernels ran, first call vs steady state, PTX/SASS of one config."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from blockscope import paths
from blockscope.pages import _common as ui
from blockscope.pages import _ncu as ncu_section
from blockscope.pages._compile import background_compile, rerun_while_compiling
from blockscope.profiling.views import dashboard_data as dd
from blockscope.profiling.views import figures
from blockscope.profiling.views.coldstart import cold_start_table, describe_runs, rows_or_bundled

st.title("Kernel evidence")
ctx = ui.context()
df = ctx.filtered

st.subheader("Which kernels ran")
st.caption(
    "CUDA kernel names recorded by torch.profiler (one traced call per config), grouped into N ranges. "
    "For torch this shows which ATen kernel it dispatched at which N."
)
names = dd.kernel_names_table(df)
if names.empty and ctx.df is not None and dd.kernel_names_table(ctx.df).empty:
    st.info(
        "This data has no kernel names: its sweep ran with `--no-trace` or stopped (`--max-minutes`) before its "
        "trace phase. The profiler traces below name the kernels of the runs that have them."
    )
elif names.empty:
    ui.empty("no kernel names in the filtered rows")
else:
    if note := dd.kernel_names_coverage(df):
        st.caption(f"{dd.md(note)} {dd.NAME_THE_REST}")
    torch_names = names[names["variant"] == dd.TORCH]
    if len(torch_names):
        st.markdown("**torch.softmax**")
        st.dataframe(
            torch_names,
            hide_index=True,
            key="ev_torch_names",
            column_config={"kernels": st.column_config.TextColumn(width="large")},
        )
    st.markdown("**Triton variants**")
    st.dataframe(
        names[names["variant"] != dd.TORCH],
        hide_index=True,
        key="ev_triton_names",
        column_config={"kernels": st.column_config.TextColumn(width="large")},
    )

st.subheader("First call vs steady state")
first = dd.first_call_table(df)
if first.empty:
    ui.empty("no first_call_s in the filtered rows")
else:
    c = st.columns(3)
    triton_first = first[first["variant"] != dd.TORCH]["first_call_s"]
    if len(triton_first):
        c[0].metric("Triton first call (median)", dd.seconds_text(triton_first.median()))
        c[1].metric("Slowest first call", dd.seconds_text(triton_first.max()))
    c[2].metric("First call / steady (median)", f"{first['first_over_steady'].median():,.0f}x")
    ui.chart(
        figures.first_call_figure(first, ctx.df, ctx.method),
        first[first["method"] == ctx.method],
        "ev_first",
        "JIT compile + first launch (wall clock) — paid once per config per process; the "
        "steady-state median is microseconds.",
    )

st.subheader("Cold start (fresh processes)")
cold_rows, cold_bundled = rows_or_bundled(ctx.df)
cold = cold_start_table(cold_rows)
if cold.empty:
    st.caption(
        "No cold-start rows loaded. `python -m profiling coldstart --out FILE` measures, per backend and shape, a "
        "fresh process's import beyond torch, CUDA init, first and second call, with empty (cold) and reused "
        "(warm) private compiler caches; load its file here."
    )
else:
    st.caption(
        "Median wall time per phase over fresh processes, seconds (docs/results-schema.md, 'Cold start'). "
        "to_first_result_s = import beyond torch + CUDA init + first call; cold: empty private compiler caches, "
        "warm: the same caches after a cold run; store: empty caches and a kernel store made by `warm` "
        "(compiled kernels and launch records)."
        + (
            f" The loaded data has no cold-start rows: these are the bundled ones (data/h200_coldstart.parquet, "
            f"{describe_runs(cold_rows)}); `python -m profiling coldstart --out FILE` measures yours."
            if cold_bundled
            else ""
        )
    )
    st.dataframe(cold, hide_index=True, key="ev_cold_start")

errors = df[df["error"].fillna("") != ""]
if len(errors):
    with st.expander(f"{errors.drop_duplicates(list(dd.CONFIG_COLUMNS)).shape[0]} config(s) that did not run"):
        st.dataframe(
            errors[["variant", "dtype", "n_cols", "num_warps", "tunables", "method", "error"]],
            hide_index=True,
            key="ev_errors",
        )


st.subheader("Profiler traces")
from pathlib import Path  # noqa: E402

from blockscope.profiling.measure.trace import chrome_trace_kernels, read_trace_index, traces_dir_for  # noqa: E402

BUNDLED_TRACES = paths.BUNDLED_TRACES
# the results files the visitor typed or swept into, where the dashboard may read: their evidence folders beside them
results_paths = [
    inside
    for key in ("typed_path", "sw_out")
    if isinstance(typed := st.session_state.get(key), str) and (inside := paths.confined(typed)) is not None
]
trace_dirs = [BUNDLED_TRACES] + [d for p in results_paths if (d := paths.confined(traces_dir_for(p))) is not None]
traces = [entry for folder in dict.fromkeys(trace_dirs) for entry in read_trace_index(folder)]
if not traces:
    st.caption(
        "No Chrome traces found (in data/traces/, or `<results stem>_traces/` beside a typed path or the "
        "live sweep's file). `python -m profiling sweep --trace-config VARIANT:DTYPE:N` keeps them."
    )
else:
    labels = [
        f"{e.get('variant', '?')} {e.get('dtype', '')} N={e.get('n_cols', '?')} — {e['file']}"
        if "variant" in e
        else e["file"]
        for e in traces
    ]
    pick = st.selectbox("Trace", range(len(traces)), format_func=lambda i: labels[i], key="ev_trace")
    entry = traces[pick]
    data = Path(entry["path"]).read_bytes()
    st.download_button(
        "Download Chrome trace (.json)",
        data,
        entry["file"],
        mime="application/json",
        key="ev_trace_download",
        help="Open in ui.perfetto.dev or chrome://tracing.",
    )
    try:
        records = chrome_trace_kernels(data)
        st.dataframe(
            pd.DataFrame([{"kernel": r.name, "calls": r.calls, "device_us": r.device_us} for r in records]),
            hide_index=True,
            key="ev_trace_kernels",
        )
    except ValueError as error:
        st.error(dd.md(f"{entry['file']}: {error}"))

ncu_section.launches_section(ctx.df)

st.subheader("Proton profile")
from blockscope.profiling.results.sidecars import proton_files as beside_results  # noqa: E402
from blockscope.profiling.views.hatchet import HatchetError, hatchet_table  # noqa: E402

proton_files = beside_results(results_paths, "*.hatchet", 200)
uploaded_tree = st.file_uploader("Or upload a Proton .hatchet file", type=["hatchet", "json"], key="ev_proton_upload")
tree_source, tree_label = None, ""
if uploaded_tree is not None:
    tree_source, tree_label = uploaded_tree.getvalue(), uploaded_tree.name
elif proton_files:
    pick = st.selectbox("Profile", proton_files, format_func=lambda p: p.name, key="ev_proton")
    tree_source, tree_label = pick, pick.name
if tree_source is None:
    st.caption(
        "No Proton profile found (`<results stem>_proton/` beside a typed path or the live sweep's file). "
        "`python -m profiling sweep --proton` writes one on a GPU."
    )
else:
    try:
        tree = hatchet_table(tree_source, tree_label)
    except HatchetError as error:
        st.error(dd.md(f"Could not read {tree_label}: {error}"))
    else:
        shown = tree.assign(name=["  " * d + n for d, n in zip(tree["depth"], tree["name"], strict=True)])
        columns = [c for c in ("name", "count", "time_ns", "inclusive_time_ns", "avg_time_ns", "pct_of_root", "bytes")]
        st.caption(
            f"{dd.md(tree_label)}: Proton's tree (ROOT, one scope per config, its kernels); time_ns summed over the "
            "profiled calls (count), avg_time_ns per call, pct_of_root of the whole session's kernel time."
        )
        st.dataframe(shown[[c for c in columns if c in shown.columns]], hide_index=True, key="ev_proton_tree")

st.subheader("Inside the kernel: load, exchange, store")
from blockscope.profiling.views import scopes as scope_views  # noqa: E402
from blockscope.profiling.views.figures import scopes as scope_figures  # noqa: E402

scope_files = scope_views.find_scope_traces(results_paths)
if not scope_files:
    st.caption(
        "No scope breakdowns found (`<results stem>_proton/<run id>_scopes/*.json` beside a typed path or the live "
        "sweep's file). `python -m profiling bench --proton-scopes --variants splitrow,staged,cluster --dtypes "
        "fp16,fp32 --n 65536,262144 --csv STEM.csv` writes them on a GPU into `STEM_proton/` (Proton's "
        "instrumentation backend; only the stem of --csv is used)."
    )
else:
    breakdown, scope_errors = scope_views.breakdowns(scope_files)
    for file_name, error in scope_errors.items():
        st.error(dd.md(f"Could not read {file_name}: {error}"))
    if len(breakdown):
        st.caption(
            "Cycles each warp spends per scope of the kernel, from one launch of its instrumented copy (Proton's "
            "instrumentation backend: a clock read at each scope's start and end, per warp of every CTA). `exchange`"
            " is waiting for and reading the other programs' partial max and sum (splitrow: spin-wait on L2; staged"
            " and cluster: the distributed-shared-memory exchange); `other` is the kernel's cycles outside the named "
            "scopes. Median and p90 over warps; share of the kernel's cycles summed over warps."
        )
        ui.chart(
            scope_figures.scope_share_figure(breakdown),
            breakdown,
            "ev_scope_share",
            "One bar per config; splitrow's scopes run once per row, summed per warp.",
        )
        configs = list(dict.fromkeys(breakdown["config"]))
        config = st.selectbox("Config", configs, key="ev_scope_config")
        rows = breakdown[breakdown["config"] == config]
        ui.chart(scope_figures.scope_cycles_figure(rows, config), rows, "ev_scope_cycles")

st.subheader("PTX / SASS of one config")
c = st.columns(4)
variants = [v for v in ("teaching", "multirow", "online", "persistent", "splitrow") if v in set(ctx.df["variant"])]
variant = c[0].selectbox("Variant", variants or ["teaching"], key="ev_variant")
n_cols = c[1].number_input("N (any)", 1, 1 << 24, 1024, key="ev_n", help=ui.allowed(1, 1 << 24))
num_warps = c[2].selectbox("num_warps", (1, 2, 4, 8, 16, 32), index=2, key="ev_warps")
dtype = ctx.dtype
arch_names = dd.arch_names()
arch = c[3].selectbox(
    "arch",
    arch_names,
    key="ev_arch",
    index=arch_names.index(dd.data_arch(ctx.df)) if dd.data_arch(ctx.df) in arch_names else 0,
)
st.caption(f"dtype **{dtype}** (sidebar).")
compiling = None  # the background compile this page waits for (rerun shortly)
if st.toggle(
    "Compile and show assembly",
    False,
    key="ev_show",
    help="Offline compile on this machine, in the background (a few seconds the first time, then cached on "
    "disk); configs predicted to compile for minutes are not compiled unless forced.",
):
    info = None
    try:
        info, compiling = background_compile(variant, int(n_cols), dtype, arch, int(num_warps), "ev_force")
    except ImportError:
        st.info("blockscope.profiling.inspect.compiled is not available yet in this checkout.")
    except Exception as error:
        st.error(f"Compile failed: {error}")
    if info is not None:
        st.caption(
            f"{info.n_regs} registers/thread, {info.spill_store_bytes} B spilled, "
            f"{info.shared_bytes} B shared; {info.source} compile in {info.compile_seconds or 0:.1f} s"
        )
        ptx_tab, sass_tab = st.tabs(["PTX", "SASS"])
        ptx_tab.code(info.ptx or "(no PTX)", language="asm", height=420)
        sass_tab.code(info.sass or "(no SASS: needs nvdisasm / cuobjdump)", language="asm", height=420)

rerun_while_compiling(compiling)
