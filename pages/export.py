"""Export: the loaded data's standard figures as PNG (2x) / SVG, their CSVs and one offline HTML report."""

from __future__ import annotations

import datetime as dt
import tempfile
from pathlib import Path

import streamlit as st

from blockscope.pages import _common as ui
from blockscope.profiling.views import dashboard_data as dd
from blockscope.profiling.views import export, images

RESULT_KEY = "_export_result"
FILTERED = "Filtered rows (sidebar filters)"
EVERYTHING = "Everything loaded (all dtypes, N, variants)"

st.title("Export for design reviews")
st.caption(
    "Every standard figure as PNG (2x) and SVG, the data behind each as CSV, and one self-contained "
    "HTML report (interactive charts, environment, findings; opens without network)."
)
ctx = ui.context()
scope = st.radio("Data", [FILTERED, EVERYTHING], horizontal=True, key="exp_scope")
df = ctx.filtered if scope == FILTERED else ctx.df
methods = dd.options(df)["methods"]
if df is None or not len(df) or not methods:
    ui.empty("no timed rows to export")
    st.stop()
method = ctx.method
if method not in methods:
    ui.empty(f"no rows timed with {method} (the sidebar's timing method) in the chosen data")
    st.stop()
st.caption(f"Timing method **{method}** (the sidebar's, as on every page).")
formats = st.multiselect("Formats", export.FORMATS, default=list(export.FORMATS), key="exp_formats")
problem = images.chromium_problem()
if problem and {"png", "svg"} & set(formats):
    st.warning(f"PNG/SVG will be skipped: {problem}. HTML and CSV are still written.")

if st.button("Run export", type="primary", disabled=not formats, key="exp_run"):
    bar = st.progress(0.0, text="Drawing figures…")

    def progress(done: int, total: int, name: str) -> None:
        bar.progress(done / max(total, 1), text=f"{done}/{total} {dd.md(name)}")

    with tempfile.TemporaryDirectory(prefix="blockscope-export-") as tmp:
        warning = None
        try:
            written = export.export_all(
                {ctx.label or "loaded data": df}, tmp, formats, method, progress, op_rows=ctx.op_rows
            )
        except export.ChromiumMissing as error:
            written, warning = error.written, str(error)
        except export.ExportError as error:
            st.error(dd.md(f"Export failed: {error}"))
            st.stop()
        report = Path(tmp) / export.REPORT_NAME
        st.session_state[RESULT_KEY] = {
            "zip": export.zip_files(written, Path(tmp)),
            "files": len(written),
            "warning": warning,
            "html": report.read_bytes() if report in written else None,
            "method": method,
            "when": dt.datetime.now().strftime("%H:%M:%S"),
            "label": ctx.label,
        }
    bar.progress(1.0, text="Done")

result = st.session_state.get(RESULT_KEY)
if result:
    st.success(dd.md(f"Exported {result['files']} files ({result['label']}, {result['method']}) at {result['when']}."))
    if result["warning"]:
        st.warning(dd.md(result["warning"]))
    stamp = dt.date.today().isoformat()
    left, right = st.columns(2)
    left.download_button(
        "Download all (zip)",
        result["zip"],
        file_name=f"blockscope-export-{stamp}.zip",
        mime="application/zip",
        key="exp_zip",
        on_click="ignore",
        icon=":material/folder_zip:",
    )
    if result["html"] is not None:
        right.download_button(
            "Download HTML report",
            result["html"],
            file_name=f"blockscope-report-{stamp}.html",
            mime="text/html",
            key="exp_html",
            on_click="ignore",
            icon=":material/description:",
        )
