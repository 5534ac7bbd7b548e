"""Shared UI for every page: the sidebar data source and filters, the page context, chart + data table."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import streamlit as st

from blockscope import paths
from blockscope.profiling.views import dashboard_data as dd

BUNDLED = "Bundled H200 dataset"
UPLOAD = "Upload results files"
PATH = "Path on this machine"
LIVE = "Live sweep results"
DEMO = "Demo data (synthetic)"
CATALOG = "Catalog folder"
CONTEXT_KEY = "_blockscope_context"
MAX_PATH_CHARS = 4096  # a typed path or folder (Linux's PATH_MAX)
LIVE_KEY = "live_results"
# The sidebar's timing method is the only one in the app: every page and the export use it. The default measures the
# kernel (launches queued behind a GPU hold, L2 flushed; the method of `python -m profiling bench` and the README);
# per_call_events is the seed's experiment, where the host's launch gap between calls is part of each time.
DEFAULT_METHOD = dd.DEFAULT_METHOD
METHOD_HELP = (
    "One timing method for every page and the export. **back_to_back_flushed** (default): calls queued "
    "behind a GPU hold with L2 flushed before each, so the time is the kernel's own (the method of "
    "`python -m profiling bench` and the README's headlines). **cuda_graph**: graph replay, launch cost "
    "removed. **per_call_events**: the seed's experiment, CUDA events around each call; the host's "
    "launch gap (Python + driver, ~10-20 us) is inside every time, so launch-bound shapes measure the "
    "host, not the kernel."
)


@dataclass
class Context:
    """What the sidebar selected: all loaded rows, the filtered rows (every method) and the chosen method."""

    df: pd.DataFrame | None = None
    filtered: pd.DataFrame | None = None
    filters: dd.Filters = field(default_factory=dd.Filters)
    label: str = ""
    synthetic: bool = False
    op_rows: pd.DataFrame | None = None  # the loaded fused-op rows (sweep --op), kept out of `df`

    @property
    def method(self) -> str:
        return self.filters.method or DEFAULT_METHOD

    @property
    def dtype(self) -> str:
        return self.filters.dtype or "fp16"

    def timed(self) -> pd.DataFrame:
        """Filtered rows of the selected timing method."""
        return self.filtered[self.filtered["method"] == self.method]


@st.cache_resource(show_spinner=False)
def cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


@st.cache_data(show_spinner="Loading results…", max_entries=8)
def _load_path(path: str, mtime: float) -> pd.DataFrame:
    return dd.load_table(path)


@st.cache_data(show_spinner="Loading results…", max_entries=16)
def _load_bytes(data: bytes, name: str) -> pd.DataFrame:
    return dd.load_table(data, name=name)


@st.cache_data(show_spinner=False)
def _demo() -> pd.DataFrame:
    from blockscope.demo import synthetic_results

    return synthetic_results()


def typed_path_problem(text: str) -> str | None:
    """Why `text` cannot name a file (a control character such as NUL, or longer than MAX_PATH_CHARS), or None."""
    if len(text) > MAX_PATH_CHARS:
        return f"a path of {len(text):,} characters; allowed: at most {MAX_PATH_CHARS:,}"
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        return f"{text[:80]!r}: contains a control character; allowed: a path of printable characters"
    return None


def load_path(path: str | Path) -> pd.DataFrame:
    """A results file by path (cached on path + modification time); ResultsError when it is bad or when it lies
    outside the folders a typed path may name (paths.allowed_roots)."""
    problem = typed_path_problem(str(path))
    if problem:
        raise dd.ResultsError(problem)
    inside = paths.confined(path)
    if inside is None:
        roots = ", ".join(str(r) for r in paths.allowed_roots())
        raise dd.ResultsError(
            f"{path}: outside the folders this dashboard reads; allowed: a file under {roots} "
            f"(${paths.ALLOWED_ROOTS_ENV} adds folders)"
        )
    path = inside
    if not path.is_file():
        raise dd.ResultsError(f"{path}: no such file; expected a Blockscope results .parquet or .csv")
    return _load_path(str(path.resolve()), path.stat().st_mtime)


def _source_sidebar() -> tuple[pd.DataFrame | None, str, bool]:
    """The data source radio and its inputs -> (table or None, label, synthetic?)."""
    choices = [BUNDLED, UPLOAD, PATH, CATALOG, *([LIVE] if cuda_available() else []), DEMO]
    source = st.sidebar.radio(
        "Data source",
        choices,
        key="data_source",
        help="Several uploaded files are stacked with a `source` column to compare GPUs or versions.",
    )
    if source == BUNDLED:
        if not dd.BUNDLED_PATH.exists():
            st.sidebar.warning(
                f"`data/{dd.BUNDLED_PATH.name}` is not there yet (the H200 sweep has not been "
                f"bundled). Pick **{DEMO}** to explore the dashboard, or upload a results file."
            )
            return None, "", False
        return _guard(lambda: load_path(dd.BUNDLED_PATH), f"bundled {dd.BUNDLED_PATH.name}")
    if source == UPLOAD:
        files = st.sidebar.file_uploader(
            "Results files (.parquet, .csv)", type=["parquet", "csv"], accept_multiple_files=True, key="uploads"
        )
        return _load_uploads([(f.name, f.getvalue()) for f in files or []])
    if source == PATH:
        text = st.sidebar.text_input(
            "Results file path",
            key="typed_path",
            placeholder="my_sweep.parquet",
            max_chars=MAX_PATH_CHARS,
            help="A file under the working directory or the bundled data; $BLOCKSCOPE_ALLOWED_ROOTS adds folders.",
        )
        st.sidebar.caption("Readable here: " + dd.md(", ".join(str(r) for r in paths.allowed_roots())))
        if not text.strip():
            return None, "", False
        return _guard(lambda: load_path(text.strip()), Path(text.strip()).name)
    if source == CATALOG:
        return _catalog_sidebar()
    if source == LIVE:
        live = st.session_state.get(LIVE_KEY)
        if live is None or live.empty:
            st.sidebar.info("No live results yet: run a sweep on the **Run sweep** page.")
            return None, "", False
        return live, "live sweep (this session)", False
    return _demo(), "demo data (synthetic)", True


@st.cache_data(show_spinner="Reading the catalog…", max_entries=4, ttl=60)
def _catalog(folder: str) -> pd.DataFrame:
    from blockscope.profiling.results.catalog import catalog

    return catalog(folder)


def _catalog_sidebar() -> tuple[pd.DataFrame | None, str, bool]:
    """A folder under the working directory, its results files (profiling.results.catalog) and the runs picked."""
    text = st.sidebar.text_input(
        "Catalog folder (under the working directory)", value="results", key="catalog_dir", max_chars=MAX_PATH_CHARS
    )
    root = Path.cwd().resolve()
    problem = typed_path_problem(text)
    if problem:
        st.sidebar.error(dd.md(f"Catalog folder: {problem}"))
        return None, "", False
    folder = (root / text.strip()).resolve()
    if not folder.is_relative_to(root):
        st.sidebar.error(dd.md(f"{text}: outside the working directory; allowed: a folder under {root}"))
        return None, "", False
    try:
        table = _catalog(str(folder))
    except ValueError as error:  # CatalogError: not a directory, too many files, duckdb missing
        st.sidebar.error(dd.md(f"Catalog: {error}"))
        return None, "", False
    results = table[table["status"] == "results"]
    foreign = len(table) - len(results)
    if foreign:
        st.sidebar.caption(dd.md(f"{foreign} other Parquet file(s) under {text} are not results files."))
    labels = {
        f"{r.file} ({r.gpus or '?'}, {r.rows} rows, {r.last_measured or 'undated'})": r.file
        for r in results.itertuples()
    }
    picked = st.sidebar.multiselect("Runs", list(labels), key="catalog_runs")
    if not picked:
        if results.empty:
            st.sidebar.info(dd.md(f"No results files under {text}."))
        return None, "", False
    loaded: dict[str, pd.DataFrame] = {}
    for label in picked:
        try:
            loaded[labels[label]] = load_path(folder / labels[label])
        except dd.ResultsError as error:
            st.sidebar.error(dd.md(f"Skipped {labels[label]}: {error}"))
    if not loaded:
        return None, "", False
    return dd.load_many(loaded), " + ".join(loaded), False


def _guard(load, label: str) -> tuple[pd.DataFrame | None, str, bool]:
    try:
        return load(), label, False
    except dd.ResultsError as error:
        st.sidebar.error(dd.md(f"Could not load results: {error}"))
        return None, "", False


def _load_uploads(files: list[tuple[str, bytes]]) -> tuple[pd.DataFrame | None, str, bool]:
    """Load each uploaded file; bad ones get an error naming the problem, good ones are still used."""
    loaded: dict[str, pd.DataFrame] = {}
    for name, data in files:
        try:
            loaded[name] = _load_bytes(data, name)
        except dd.ResultsError as error:
            st.sidebar.error(dd.md(f"Skipped an upload: {error}"))
    if not loaded:
        return None, "", False
    return dd.load_many(loaded), " + ".join(loaded), False


def _follow(key: str, options: list, multiselect: bool = True) -> None:
    """Keep widget `key` in step with its options when the loaded data changes (call before drawing it).

    Multiselects: values new since the last run are selected, values that are gone are dropped, values the
    user deselected stay deselected (drawn without `default`: this sets the value). Single choices and the N
    range go back to their default when the options change and their value is no longer offered (the range:
    always, as its ends may no longer be measured N).
    """
    seen_key = f"_seen_{key}"
    previous = st.session_state.get(seen_key)
    st.session_state[seen_key] = list(options)
    if multiselect:
        if key not in st.session_state or previous is None:
            st.session_state[key] = list(options)
        elif previous != list(options):
            chosen = set(st.session_state[key])
            st.session_state[key] = [v for v in options if v in chosen or v not in previous]
    elif key in st.session_state and previous is not None and previous != list(options):
        value = st.session_state[key]
        if isinstance(value, (tuple, list)) or value not in options:
            del st.session_state[key]


# the N range is not restored: its slider takes its (range) value as a parameter and starts at the full range
FILTER_KEYS = ("f_sources", "f_variants", "f_dtype", "f_rows", "f_warps", "f_method")
DRAWN_KEY = "_filters_drawn"  # did the last run draw the filters? (a source without data draws none)


def _restore_filters() -> None:
    """Give each filter widget the value it had when it was last drawn, when the last run drew no filters.

    Streamlit forgets a widget's state in a run that does not draw it, and the browser then re-creates the widget
    empty: a trip through a source without data (Upload, a path not yet typed) would empty Variants and
    num_warps. The values are kept under keys of their own (`_keep_<key>`) that no widget owns."""
    if st.session_state.get(DRAWN_KEY, True):
        return
    for key in FILTER_KEYS:
        kept = st.session_state.get(f"_keep_{key}")
        if kept is not None:
            st.session_state[key] = kept


def _keep_filters() -> None:
    """Remember the drawn filters' values (see _restore_filters)."""
    for key in FILTER_KEYS:
        if key in st.session_state:
            st.session_state[f"_keep_{key}"] = st.session_state[key]
    st.session_state[DRAWN_KEY] = True


def _filters_sidebar(df: pd.DataFrame) -> dd.Filters:
    _restore_filters()
    opts = dd.options(df)
    sidebar = st.sidebar
    sidebar.subheader("Filters")
    sources: tuple[str, ...] | None = None
    if len(opts["sources"]) > 1:
        _follow("f_sources", opts["sources"])
        sources = tuple(sidebar.multiselect("Files", opts["sources"], key="f_sources"))
    _follow("f_variants", opts["variants"])
    variants = sidebar.multiselect("Variants", opts["variants"], key="f_variants")
    _follow("f_dtype", opts["dtypes"], multiselect=False)
    dtype = sidebar.selectbox("dtype", opts["dtypes"], key="f_dtype") if opts["dtypes"] else None
    n_values = opts["n_values"]
    n_range = None
    if len(n_values) > 1:
        _follow("f_n_range", n_values, multiselect=False)
        n_range = sidebar.select_slider(
            "N range (columns)", n_values, value=(n_values[0], n_values[-1]), key="f_n_range"
        )
    n_rows = None
    if len(opts["n_rows"]) > 1:  # curves pick the fastest config per N: never mix row counts of one N
        choices, common, rows_help = dd.row_choices(df, opts["n_rows"], default="mode")
        _follow("f_rows", choices, multiselect=False)
        initial = {} if "f_rows" in st.session_state else {"index": common}
        chosen_rows = sidebar.selectbox("R (rows)", choices, key="f_rows", help=rows_help, **initial)
        n_rows = dd.picked_rows(chosen_rows)
    _follow("f_warps", opts["num_warps"])
    warps = sidebar.multiselect("num_warps", opts["num_warps"], key="f_warps")
    _follow("f_method", opts["methods"], multiselect=False)
    method = (
        sidebar.selectbox(
            "Timing method",
            opts["methods"],
            key="f_method",
            help=METHOD_HELP,
            **(
                {}
                if "f_method" in st.session_state
                else {"index": opts["methods"].index(DEFAULT_METHOD) if DEFAULT_METHOD in opts["methods"] else 0}
            ),
        )
        if opts["methods"]
        else None
    )
    if method == "per_call_events":
        sidebar.caption(
            ":orange[per_call_events: the seed's experiment — each time includes the host's launch gap, "
            "not only the kernel.]"
        )
    filters = dd.Filters(
        variants=tuple(variants),
        dtype=dtype,
        n_range=tuple(n_range) if n_range else None,
        num_warps=tuple(warps),
        method=method,
        sources=sources,
        n_rows=n_rows,
    )
    hidden = dd.hidden_by_filters(df, filters)
    if hidden:
        sidebar.info(dd.md(hidden), icon=":material/filter_alt:")
    _keep_filters()
    return filters


def sidebar() -> Context:
    """Draw the data source and filters (called by app.py before the page runs); stores the Context."""
    df, label, synthetic = _source_sidebar()
    op_rows = None
    if df is not None:
        df, op_rows = dd.split_ops(df)  # pages never mix ops: softmax rows only; op rows for the Fused ops section
        note = dd.op_rows_note(op_rows)
        if note:
            st.sidebar.caption(dd.md(note))
    kept = op_rows if op_rows is not None and len(op_rows) else None
    context = Context(label=label, synthetic=synthetic, op_rows=kept)
    if df is not None and len(df):
        context.df = df
        context.filters = _filters_sidebar(df)
        context.filtered = dd.apply_filters(df, context.filters, method=False)
    else:
        st.session_state[DRAWN_KEY] = False
    st.session_state[CONTEXT_KEY] = context
    return context


def context(require_data: bool = True) -> Context:
    """The page's Context; without data (and `require_data`) shows why and stops the page."""
    found = st.session_state.get(CONTEXT_KEY) or Context()
    if require_data and found.df is None:
        st.info(
            f"No results loaded. The default source is the bundled H200 sweep (`data/"
            f"{dd.BUNDLED_PATH.name}`); pick **{DEMO}** in the sidebar to see every page on a small "
            "synthetic table, or upload / type the path of a results file."
        )
        st.stop()
    if found.synthetic:
        st.caption(":orange-background[demo data (synthetic) — not a measurement]")
    if found.df is not None:
        notice = setups_notice(found.df)
        if notice:
            st.info(notice, icon=":material/compare:")
        kernel_revision_notice(found.df)
    return found


def data_key(ctx: Context, *extra: object) -> str:
    """A cheap key for what the page computes from the loaded rows: the source label, its size, runs and dates,
    the sidebar filters and `extra` (the page's own settings). Pages pass the rows themselves as an unhashed
    argument (`_rows`) to a cached function, so a rerun with nothing changed draws from the cache."""
    df = ctx.df
    if df is None:
        return f"{ctx.label}|empty|{extra}"
    runs = sorted(map(str, df["run_id"].dropna().unique())) if "run_id" in df.columns else []
    last = str(df["measured_at"].max()) if "measured_at" in df.columns and len(df) else ""
    return f"{ctx.label}|{len(df)}|{runs}|{last}|{ctx.filters}|{extra}"


def kernel_revision_notice(df: pd.DataFrame) -> None:
    """Say which loaded rows were measured with a kernel that has changed since (profiling.results.revision)."""
    from blockscope.profiling.results.revision import revision_notice

    notice = revision_notice(df)
    if notice is not None:
        (st.warning if notice.stale else st.caption)(
            dd.md(notice.text), **({"icon": ":material/history:"} if notice.stale else {})
        )


def setups_notice(df: pd.DataFrame) -> str | None:
    """The notice shown when several GPUs or runs (or files) are loaded; None for one."""
    labels = dd.setups(df)
    if not labels:
        return None
    gpus = sorted(str(g) for g in df["gpu_name"].dropna().unique())
    runs = df["run_id"].nunique()
    return (
        f"{len(labels)} GPUs / runs / files loaded ({dd.md(', '.join(labels))}; {len(gpus)} GPU(s), {runs} run(s)). "
        "They are compared side by side, never mixed: one line per variant and GPU/run (dash style), "
        "speedups against the torch.softmax of the same GPU/run, fastest config per N and findings per "
        "GPU/run, one heatmap each."
    )


def chart(fig, data: pd.DataFrame, key: str, caption: str | None = None) -> None:
    """A plotly chart with its caption; its data table (and PNG/SVG/CSV downloads) one click away."""
    from blockscope.profiling.views.figures import escape_markup

    fig = escape_markup(fig)  # names from a loaded file in titles, legends, axes and hovers: text, never HTML
    st.plotly_chart(fig, key=key, config={"displaylogo": False})
    if caption:
        st.caption(caption)
    with st.expander("Data behind this chart"):
        st.dataframe(_display(data), hide_index=True, key=f"{key}_data")
        try:
            from blockscope.pages._exports import export_buttons
        except ImportError:  # the export feature is optional
            return
        loaded = st.session_state.get(CONTEXT_KEY)
        source = loaded.df if isinstance(loaded, Context) else None
        export_buttons(fig, _display(data), key.removeprefix("_"), key=f"{key}_export", source=source)


def _display(data: pd.DataFrame) -> pd.DataFrame:
    """Drop all-NA columns so tables stay readable."""
    if data is None:
        return pd.DataFrame()
    if "kernel_source_hash" in data.columns:  # raw rows: say whose kernel changed since (profiling.results.revision)
        from blockscope.profiling.results.revision import with_revision_columns

        data = with_revision_columns(data)
    return data.dropna(axis=1, how="all")


def allowed(low: int, high: int) -> str:
    """The range a number input takes, for its tooltip: the widget refuses anything outside it."""
    return f"Allowed: {low:,} to {high:,}."


def empty(what: str) -> None:
    st.warning(f"Nothing to show: {what}. Widen the sidebar filters or load other data.")
