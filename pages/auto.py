"""auto: its tuning table, what it picks for a typed shape and why, the candidates the tuner measured there, and how
the pick compares with the other backends. Logic in profiling/views/tuning_view.py."""

from __future__ import annotations

import json

import streamlit as st

from blockscope.kernels import auto
from blockscope.pages import _common as ui
from blockscope.profiling.views import backends as views
from blockscope.profiling.views import dashboard_data as dd
from blockscope.profiling.views import figures, tuning_view


@st.cache_data(show_spinner="Reading the tuner's logs…")
def _tune_log(paths: tuple[str, ...], mtimes: tuple[float, ...]):
    return tuning_view.read_tune_logs(paths)


@st.cache_data(show_spinner="Loading the bundled backends capture…")
def _bundled_backends(path: str, mtime: float):
    return views.load_bundled(path)


st.title("auto: what it picks and why")
st.markdown(
    "`auto` looks a shape up in a tuning table made on the GPU (`python -m profiling tune`, "
    "`tools/tune_h200.py`): among entries of the same BLOCK_SIZE bucket (next_pow2(N); rows wider than "
    f"{auto.WIDEST_BLOCK:,} columns form one group, since no kernel tiles them by BLOCK_SIZE) and row "
    "alignment (the widest load its rows allow: 16, 8, 4 or 2 bytes), the nearest N, then the nearest R. "
    "Without an entry a built-in heuristic picks. See `kernels/auto.py`."
)
ctx = ui.context(require_data=False)
gpus = tuning_view.shipped_gpus()
if not gpus:
    st.warning("No tuning table in kernels/tuned/: auto uses its heuristic everywhere.")
    st.stop()
gpu = st.selectbox("Tuning table (GPU)", gpus, key="auto_gpu")
path = tuning_view.table_path(gpu)
table = auto.load_table(gpu)
entries = tuning_view.entries_table(table)
meta = st.columns(4)
meta[0].metric("entries", f"{len(entries):,}")
meta[1].metric("shapes tuned", f"{entries[['dtype', 'n_rows', 'n_cols']].drop_duplicates().shape[0]:,}")
meta[2].metric("Triton config beats torch at", f"{(entries['variant'] != 'torch').sum():,} of {len(entries):,}")
retunes = table.get("retuned", [])
retune_seconds = sum(float(r.get("seconds", 0)) for r in retunes)
meta[3].metric(
    "tuning took",
    f"{float(table.get('tuning_seconds', float('nan'))) + retune_seconds:,.0f} s",
    help=f"the full tune {float(table.get('tuning_seconds', float('nan'))):,.0f} s"
    + "".join(f" + a retune {float(r.get('seconds', 0)):,.0f} s" for r in retunes),
)
st.caption(
    f"`{path.name}` — {table.get('gpu', '?')} (sm {table.get('compute_capability', '?')}), made "
    f"{table.get('made_at', '?')} with torch {table.get('torch_version', '?')}, Triton "
    f"{table.get('triton_version', '?')}; timing: {table.get('timing', '?')}; retuned {len(retunes)} times."
)
if retunes:
    with st.expander(f"Retune history ({len(retunes)} retunes after the full tune)"):
        st.dataframe(tuning_view.retune_history(table), hide_index=True, key="auto_retunes")
native_state, native_text = tuning_view.native_replay_status()
(st.info if native_state == "not in use" else st.caption)(native_text)

st.subheader("Pick for a shape")
c1, c2, c3 = st.columns(3)
dtypes = list(tuning_view.DTYPES)
if ctx.df is not None and ctx.dtype in dtypes:  # the sidebar's dtype, as on every page
    dtype = ctx.dtype
    c1.metric("dtype (sidebar)", dtype)
else:  # no data loaded: no sidebar dtype to follow
    dtype = c1.selectbox("dtype", dtypes, key="auto_dtype")
MAX_ROWS = 2**31 - 1
n_rows = int(
    c2.number_input(
        "R (rows)", min_value=1, max_value=MAX_ROWS, value=4096, step=1, key="auto_rows", help=ui.allowed(1, MAX_ROWS)
    )
)
n_cols = int(
    c3.number_input(
        "N (columns)",
        min_value=1,
        max_value=auto.MAX_N,
        value=5000,
        step=1,
        key="auto_n",
        help=ui.allowed(1, auto.MAX_N),
    )
)
try:
    pick = tuning_view.explain(dtype, n_rows, n_cols, gpu)
except ValueError as error:
    st.error(str(error))
    st.stop()
label = pick.variant if not pick.tunables else f"{pick.variant} {json.dumps(pick.tunables, sort_keys=True)}"
st.metric(f"auto picks for {dtype} R={n_rows:,} N={n_cols:,} on {table.get('gpu', gpu)}", pick.variant, help=label)
st.markdown(f"**Tunables:** `{json.dumps(pick.tunables, sort_keys=True)}`  \n**Why:** {pick.rule}")
if (pick.here_variant, pick.here_tunables) != (pick.variant, pick.tunables):
    st.caption(
        f"This process has no {table.get('gpu', gpu)} (it runs the Triton CPU interpreter, which cannot run the "
        f"GPU-only Gluon kernels): here `auto` runs {pick.here_variant} "
        f"`{json.dumps(pick.here_tunables, sort_keys=True)}` instead."
    )
if not pick.agrees:
    st.error(
        f"kernels.auto.choose returns {pick.auto_variant} {pick.auto_tunables}, not the pick explained here: "
        "the explanation (profiling/views/tuning_view.py) no longer follows kernels/auto.py."
    )
if len(pick.considered):
    with st.expander(f"The {len(pick.considered)} entries of that bucket it chose from"):
        st.dataframe(pick.considered.drop(columns=["position", "group"]), hide_index=True, key="auto_considered")

st.subheader("Candidates the tuner measured there")
log_paths = tuning_view.TUNE_LOG_PATHS
missing_logs = [path.name for path in log_paths if not path.is_file()]
if pick.entry is None:
    st.info("No table entry decided this pick (heuristic), so there is no tuner measurement behind it.")
elif missing_logs:
    st.info(f"The tuner's log(s) {', '.join(missing_logs)} are not there; the table keeps only each shape's winner.")
else:
    try:
        log = _tune_log(tuple(map(str, log_paths)), tuple(path.stat().st_mtime for path in log_paths))
    except ValueError as error:
        st.error(str(error))
    else:
        shape = (pick.entry["dtype"], int(pick.entry["n_rows"]), int(pick.entry["n_cols"]))
        found = tuning_view.candidates(log, *shape, pick=pick)
        same = shape == (dtype, n_rows, n_cols)
        where = "this shape" if same else f"the entry's shape {shape[0]} R={shape[1]:,} N={shape[2]:,}"
        if found.empty:
            st.info(f"The tuner's log has no records for {where}.")
        else:
            title = (
                f"Tuner's candidates at {shape[0]} R={shape[1]:,} N={shape[2]:,} — {table.get('gpu', gpu)}, "
                f"{table.get('timing', '')}"
            )
            sources = tuning_view.log_sources(log, *shape)
            retune = (
                ""
                if sources == [tuning_view.TUNE_LOG_PATH.name]
                else (
                    f" Records from {', '.join(sources)}: a retune against new variants (torch, the earlier pick and "
                    "the new variants' candidates; `tools/tune_h200.py --challenge`)."
                )
            )
            ui.chart(
                figures.candidates_figure(found, title),
                found,
                "auto_candidates",
                f"Measured at {where} ({len(found)} configs, {int((found['error'] != '').sum())} failed); "
                f"red: auto's pick. Configs within 3% of the fastest flushed median are a tie the "
                f"tuner breaks by CUDA-graph replay (autotune.break_ties; their replay µs beside the bar, "
                f"': kept' on its choice; logs before 2026-12-02 have none).{retune}",
            )

st.subheader("Against the other backends")
method = ctx.method
options = []
if ctx.df is not None and (ctx.df["variant"] == "auto").any():
    options.append("loaded data")
bundled_path = views.BUNDLED_BACKENDS_PATH
if bundled_path.exists():
    options.append("bundled backends capture")
if not options:
    st.info("No results with `auto` rows are loaded and the bundled backends capture is not there.")
    st.stop()
source = st.segmented_control("Compare in", options, default=options[0], key="auto_source") or options[0]
rows = ctx.df if source == "loaded data" else _bundled_backends(str(bundled_path), bundled_path.stat().st_mtime)
compared = tuning_view.backend_comparison(rows, dtype, n_rows, n_cols, method)
if compared.empty or not (compared["variant"] == "auto").any():
    near = tuning_view.nearest_measured_n(rows, dtype, n_rows, n_cols)
    st.info(
        f"{dtype} R={n_rows:,} N={n_cols:,} was not measured with {method} in the {source}"
        + (f"; the nearest measured N: {', '.join(f'{n:,}' for n in near)}." if near else ".")
    )
else:
    versions = dd.md(", ".join(sorted({f"Triton {v}" for v in rows["triton_version"].dropna().unique()})))
    st.dataframe(
        compared,
        hide_index=True,
        key="auto_backends",
        column_config={
            "vs_auto": st.column_config.NumberColumn(format="%.2fx"),
            **{c: st.column_config.NumberColumn(format="%.2f µs") for c in ("median_us", "p20_us", "p80_us")},
        },
    )
    st.caption(
        f"{source}, {dtype} R={n_rows:,} N={n_cols:,}, timing: {method} ({versions}): each backend's "
        "fastest config; vs_auto = its time / auto's (> 1: auto is faster). auto's row ran whatever its table "
        "picked when it was measured, which may differ from the pick above if the table changed since."
    )

with st.expander("The whole tuning table"):
    st.dataframe(
        entries[entries["dtype"] == dtype].drop(columns=["position", "group"]),
        hide_index=True,
        key="auto_entries",
        column_config={"vs_torch": st.column_config.NumberColumn(format="%.2fx")},
    )
