"""The design-review HTML report: one self-contained file (plotly.js inlined once, no network needed).

Sections: the run environment (GPU, compute capability, SMs, driver, torch/Triton versions, measured copy
bandwidth in GB/s, date), the findings from dashboard_data.findings, then every standard figure as an
interactive plotly chart (one `plotly-graph-div` per FigureSpec). No streamlit here.
"""

from __future__ import annotations

import datetime as _dt
import html
from collections.abc import Sequence

import pandas as pd
import plotly.io as pio
from plotly.offline import get_plotlyjs

from blockscope.profiling.views import dashboard_data as dd
from blockscope.profiling.views import provenance
from blockscope.profiling.views.coldstart import cold_start_table, describe_runs, rows_or_bundled
from blockscope.profiling.views.figures import FigureSpec

ENV_FIELDS: tuple[tuple[str, str], ...] = (
    ("gpu_name", "GPU"),
    ("compute_capability", "CC"),
    ("sm_count", "SMs"),
    ("driver_version", "driver"),
    ("torch_version", "torch"),
    ("triton_version", "Triton"),
    ("copy_gbps", "copy GB/s"),
    ("measured_at", "date (UTC)"),
)
PLOT_CONFIG = {"displaylogo": False, "responsive": True}
STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:8px 0 16px}th,td{border:1px solid #ddd;padding:4px 8px;text-align:left}
th{background:#f4f4f4}h2{margin-top:32px;border-bottom:1px solid #eee}.figure{margin:20px 0 36px}
.muted{color:#777;font-size:90%}nav li{margin:2px 0}
"""


def environment_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per run (and file, when several are stacked): GPU, CC, SMs, driver, versions, copy GB/s, date."""
    keys = [c for c in ("source", "run_id") if c in df.columns and df[c].notna().any()]
    rows = []
    groups = df.groupby(keys, dropna=False, sort=True) if keys else [((), df)]
    for key, part in groups:
        key = key if isinstance(key, tuple) else (key,)
        row = {
            ("file" if k == "source" else "run"): ("" if pd.isna(v) else str(v)) for k, v in zip(keys, key, strict=True)
        }
        for column, label in ENV_FIELDS:
            values = part[column].dropna().unique() if column in part.columns else []
            if column == "copy_gbps":
                row[label] = ", ".join(f"{float(v):,.0f}" for v in sorted(values)) or "—"
            elif column == "measured_at":
                dates = sorted(str(v) for v in values)
                row[label] = (
                    (
                        dates[0][:16].replace("T", " ")
                        if len(dates) == 1 or dates[0][:10] == dates[-1][:10]
                        else f"{dates[0][:10]} .. {dates[-1][:10]}"
                    )
                    if dates
                    else "—"
                )
            else:
                row[label] = ", ".join(str(v) for v in sorted(map(str, values))) or "—"
        row["rows"] = len(part)
        rows.append(row)
    return pd.DataFrame(rows)


def _table_html(table: pd.DataFrame) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in table.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>"
        for row in table.itertuples(index=False)
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _findings_html(df: pd.DataFrame, method: str) -> str:
    try:
        found = dd.findings(df, method)
    except Exception as error:  # a findings helper failing must not lose the export; say so in the report
        return f"<p class='muted'>Findings could not be computed: {html.escape(str(error))}</p>"
    items = "".join(f"<li><b>{html.escape(f.title)}.</b> {html.escape(f.text)}</li>" for f in found)
    return f"<ul>{items}</ul>"


def _cold_start_html(df: pd.DataFrame) -> str:
    """The cold-start section (rows of `python -m profiling coldstart`: `df`'s own, else the bundled ones, said so),
    or '' when there are none."""
    rows, bundled = rows_or_bundled(df)
    table = cold_start_table(rows)
    if table.empty:
        return ""
    shown = table.copy()
    for column in shown.columns:
        if column.endswith("_s") and column != "first_call_p20_p80_s":
            shown[column] = shown[column].map(lambda v: "" if pd.isna(v) else f"{v:.4g}")
    source = (
        f" The exported data has no cold-start rows: these are the bundled ones (data/h200_coldstart.parquet, "
        f"{describe_runs(rows)})."
        if bundled
        else ""
    )
    return (
        "<h2>Cold start</h2><p class='muted'>Median wall time per phase over fresh processes, seconds; cold: empty "
        "private compiler caches, warm: the same caches after a cold run; store: empty caches and a kernel store "
        f"with launch records.{html.escape(source)}</p>" + _table_html(shown)
    )


def figure_div(spec: FigureSpec) -> str:
    """The figure as a plotly div + newPlot script (no plotly.js; the report inlines it once)."""
    return pio.to_html(
        spec.figure,
        full_html=False,
        include_plotlyjs=False,
        include_mathjax=False,
        config=PLOT_CONFIG,
        div_id=f"fig-{spec.name}",
        default_width="100%",
    )


def report_html(
    df: pd.DataFrame,
    specs: Sequence[FigureSpec],
    method: str,
    title: str = "Blockscope export",
    sources: Sequence[str] = (),
    provenance_rows: pd.DataFrame | None = None,
) -> str:
    """The whole report as one HTML string (UTF-8, ~5 MB of it plotly.js); its provenance footer names the runs of
    `provenance_rows` (default `df`: pass more rows when figures come from elsewhere too, e.g. fused-op rows)."""
    now = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    rows = df if provenance_rows is None else provenance_rows
    footer_lines = "<br>".join(html.escape(part) for part in provenance.footer(rows).split(" | "))
    what = ", ".join(html.escape(s) for s in sources) or "results table"
    nav = "".join(f"<li><a href='#sec-{html.escape(s.name)}'>{html.escape(s.title)}</a></li>" for s in specs)
    figures = "".join(
        f"<section class='figure' id='sec-{html.escape(s.name)}'>{figure_div(s)}"
        f"<p class='muted'>data: {html.escape(s.name)}.csv ({len(s.data)} rows)</p></section>"
        for s in specs
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>{STYLE}</style>
<script type="text/javascript">{get_plotlyjs()}</script>
</head><body>
<h1>{html.escape(title)}</h1>
<p class="muted">From {what} ({len(df)} rows); timing method {html.escape(method)}; generated {now}.
Figures are interactive (hover, zoom, legend toggles); this file needs no network.</p>
<h2>Environment</h2>{_table_html(environment_table(df))}
<h2>Findings</h2>{_findings_html(df, method)}
{_cold_start_html(df)}
<h2>Figures</h2><nav><ol>{nav}</ol></nav>
{figures}
<footer class="muted"><p>{footer_lines}</p></footer>
</body></html>
"""
