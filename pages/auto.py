"""auto: its tuning table, what it picks for a typed shape (and from which entry), the candidates the tuner timed
for it, and how the pick compares with the other backends. Logic in profiling/auto_view.py."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from pages import _common as ui
from profiling import auto_view
from profiling.backends import views


@st.cache_data(show_spinner=False)
def _table(gpu_name: str) -> tuple[dict, pd.DataFrame]:
    return auto_view.tuning_table(gpu_name)


@st.cache_data(show_spinner="Reading the tuner's log…")
def _log(path: str) -> pd.DataFrame | None:
    return auto_view.load_tune_log(path)


@st.cache_data(show_spinner="Loading the bundled backends capture…")
def _bundled_backends(path: str) -> pd.DataFrame | None:
    return views.load_bundled(path)


st.title("auto")
st.markdown("`kernels.softmax_auto` picks a variant and its tunables per (GPU, dtype, N, R) from a tuning table "
            "the tuner (`python -m profiling tune`) wrote on that GPU: the nearest measured N in the same "
            "BLOCK_SIZE bucket and row alignment, then the nearest R. Where torch.softmax was faster than every "
            "Triton config, the entry says `torch`. dtype and timing method: the sidebar's.")
ctx = ui.context(require_data=False)
dtype = ctx.dtype if ctx.df is not None else "fp16"
facts, table = _table(auto_view.DEFAULT_GPU)
if table.empty:
    st.warning(f"No tuning table for {auto_view.DEFAULT_GPU} (kernels/tuned/ or the user cache): auto uses its "
               "heuristic everywhere.")
else:
    st.caption(f"Table of **{facts.get('gpu', '?')}** made {facts.get('made_at', '?')} with Triton "
               f"{facts.get('triton_version', '?')}, torch {facts.get('torch_version', '?')}, timing "
               f"{facts.get('timing', '?')}; {len(table)} entries, tuning took {facts.get('tuning_seconds', 0):.0f} s.")

st.subheader("What auto picks for a shape")
c = st.columns(2)
n_cols = int(c[0].number_input("N (columns)", 1, 1 << 24, 5000, key="auto_n"))
n_rows = int(c[1].number_input("R (rows)", 1, 1 << 24, 4096, key="auto_rows"))
try:
    chosen = auto_view.pick(n_rows, n_cols, dtype)
except ValueError as error:
    st.error(str(error))
    st.stop()
m = st.columns(3)
m[0].metric("Runs", chosen.variant, help="torch: torch.softmax itself")
m[1].markdown(f"Tunables  \n`{auto_view.tunables_text(chosen.tunables)}`")  # a metric would cut long ones off
entry = chosen.entry
if entry is not None and not pd.isna(entry.get("median_us")) and not pd.isna(entry.get("torch_us")):
    m[2].metric("Tuned vs torch at the entry", f"{entry['torch_us'] / entry['median_us']:.2f}x",
                help=f"{entry['median_us']:.2f} µs vs torch {entry['torch_us']:.2f} µs when tuned")
st.caption(f"{dtype} R={n_rows:,} N={n_cols:,}: {chosen.how}. In eager mode on an idle stream, small shapes are "
           "also timed once against torch.softmax from the host and the faster is kept (kernels/auto.py).")

st.markdown("**Candidates the tuner timed for that entry**")
log = _log(str(auto_view.TUNE_LOG_PATH))
candidates = auto_view.candidates_for(log, chosen)
if candidates.empty:
    st.caption("No tuner log for this shape (" + ("no table entry: the heuristic picked" if entry is None else
                                                 f"`{auto_view.TUNE_LOG_PATH.name}` is not there") + ").")
else:
    st.dataframe(candidates, hide_index=True, key="auto_candidates",
                 column_config={"median_us": st.column_config.NumberColumn("median (µs)", format="%.2f"),
                                "vs_best": st.column_config.NumberColumn("x the fastest", format="%.3f")})
    st.caption(f"{len(candidates)} candidate(s) at {entry['dtype']} R={int(entry['n_rows']):,} "
               f"N={int(entry['n_cols']):,} from `data/tuning/{auto_view.TUNE_LOG_PATH.name}`; `picked` is the one "
               "auto runs.")

st.markdown("**The pick against the other backends at this N**")
method = ctx.method
sources = [(ctx.filtered, ctx.label)] if ctx.df is not None else []
if not views.has_peers(ctx.df):
    bundled = _bundled_backends(str(views.BUNDLED_BACKENDS_PATH))
    if bundled is not None:
        sources.append((bundled, f"bundled {views.BUNDLED_BACKENDS_PATH.name}"))
at_n = list(dict.fromkeys([n_cols, *([int(entry["n_cols"])] if entry is not None else [])]))
shown = False
for n, (frame, label) in ((n, source) for n in at_n for source in sources):
    versus = auto_view.backends_at(frame, dtype, n, method)
    if len(versus) > 1 and "auto" in set(versus["variant"]):
        st.dataframe(versus, hide_index=True, key="auto_versus",
                     column_config={"vs_auto": st.column_config.NumberColumn("time / auto's", format="%.2f")})
        where = f"N={n:,}" if n == n_cols else f"the entry's N={n:,} (N={n_cols:,} itself was not measured)"
        st.caption(f"From {label}, {dtype}, {method}: the fastest config of each backend at {where}; above 1 auto "
                   "is faster.")
        shown = True
        break
if not shown:
    st.info(f"N={n_cols:,} ({dtype}) was not measured with auto and another backend under {method} in the loaded "
            "data or the bundled backends capture: no comparison to show. Measured N: see the Backends page.")

if len(table):
    with st.expander(f"The tuning table ({len(table)} entries)"):
        part = table[table["dtype"] == dtype]
        st.dataframe(part if len(part) else table, hide_index=True, key="auto_table",
                     column_config={"speedup_vs_torch": st.column_config.NumberColumn("vs torch (x)", format="%.2f")})
        counts = (part if len(part) else table)["variant"].value_counts()
        st.caption("Entries per choice: " + ", ".join(f"{v} {n}" for v, n in counts.items()) + ".")
