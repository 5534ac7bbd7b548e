"""Plotly figures of the numerics columns (ULP error): pure DataFrame -> Figure functions, no streamlit.

Same conventions as profiling.views.figures (whose colours and power-of-two lines are reused): the platform the
numbers come from is in every title, ULPs are of the output dtype, NaN mismatches (ulp_max = inf) are
drawn as 'x' markers at the top of their panel instead of an infinite line.
"""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from blockscope.profiling.views.figures import TEMPLATE, add_pow2_lines, variant_color

FRACTION_COLORS: dict[str, str] = {"0 ULP": "#4c9f70", "1 ULP": "#f2c14e", "> 1 ULP": "#e4572e"}
TORCH = "torch"


def numerics_rows(df: pd.DataFrame | None) -> pd.DataFrame:
    """Rows with numerics measured, one per (variant, dtype, R, N, tunables, input[, source]) (method rows merged)."""
    if df is None or "ulp_max" not in df.columns:
        return pd.DataFrame()
    rows = df[df["ulp_max"].notna() & (df["error"].fillna("") == "")]
    keys = [
        c for c in ("variant", "dtype", "n_rows", "n_cols", "tunables", "numerics_input", "source") if c in rows.columns
    ]
    return rows.drop_duplicates(subset=keys).reset_index(drop=True)


def worst_per_n(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (variant, dtype, R, N, input[, source]) the config with the largest ulp_max, then ulp_mean (a sweep
    with several num_warps / tiles per N has one row each; the curve shows the least exact)."""
    if rows.empty:
        return rows
    keys = [c for c in ("variant", "dtype", "n_rows", "n_cols", "numerics_input", "source") if c in rows.columns]
    ranked = rows.assign(_max=rows["ulp_max"].astype(float), _mean=rows["ulp_mean"].astype(float).fillna(-1.0))
    ranked = ranked.sort_values(["_max", "_mean"], ascending=False, kind="stable")
    return ranked.drop_duplicates(subset=keys).drop(columns=["_max", "_mean"]).sort_values(keys).reset_index(drop=True)


def _ordered_variants(table: pd.DataFrame) -> list[str]:
    return sorted(table["variant"].dropna().unique(), key=lambda v: (v != TORCH, v))


def _finish(fig: go.Figure, title: str, height: int) -> go.Figure:
    fig.update_layout(
        title={"text": title, "x": 0.01, "xanchor": "left", "font": {"size": 15}},
        template=TEMPLATE,
        height=height,
        margin={"l": 60, "r": 20, "t": 85, "b": 50},
        hovermode="closest",
        legend={"orientation": "v", "yanchor": "top", "y": 1.0, "x": 1.01, "xanchor": "left"},
    )
    return fig


def _hover(row: pd.Series) -> str:
    parts = [f"{row['variant']} {row['dtype']} R={row['n_rows']} N={row['n_cols']} input={row['numerics_input']}"]
    for column, label in (
        ("ulp_max", "max ULP"),
        ("ulp_mean", "mean ULP"),
        ("ulp_frac_0", "at 0 ULP"),
        ("ulp_frac_1", "at 1 ULP"),
        ("ulp_frac_gt1", "> 1 ULP"),
        ("rowsum_err_max", "row-sum err"),
    ):
        value = row.get(column)
        if value is not None and not pd.isna(value):
            parts.append(f"{label} = {value:.4g}")
    return "<br>".join(parts)


def ulp_vs_n_figure(table: pd.DataFrame, dtype: str, input_name: str, platform: str) -> go.Figure:
    """Max and mean ULP error vs N (log x), one line per variant/backend; dotted lines at powers of two."""
    part = worst_per_n(numerics_rows(table))
    if len(part):
        part = part[(part["dtype"] == dtype) & (part["numerics_input"] == input_name)].sort_values("n_cols")
    fig = make_subplots(
        rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.1, subplot_titles=("max ULP error", "mean ULP error")
    )
    for panel, column in ((1, "ulp_max"), (2, "ulp_mean")):
        finite = part[column].astype(float).replace([math.inf, -math.inf], math.nan) if len(part) else part
        top = float(finite.max()) if len(part) and finite.notna().any() else 1.0
        for variant in _ordered_variants(part) if len(part) else []:
            rows = part[part["variant"] == variant]
            values = rows[column].astype(float)
            fig.add_trace(
                go.Scatter(
                    x=rows["n_cols"].astype(int),
                    y=values.where(values.abs() != math.inf),
                    mode="lines+markers",
                    name=variant,
                    legendgroup=variant,
                    showlegend=panel == 1,
                    line={"color": variant_color(variant), "width": 2},
                    marker={"size": 6},
                    hovertext=[_hover(r) for _, r in rows.iterrows()],
                    hoverinfo="text",
                ),
                row=panel,
                col=1,
            )
            mismatched = rows[values == math.inf]
            if len(mismatched):
                fig.add_trace(
                    go.Scatter(
                        x=mismatched["n_cols"].astype(int),
                        y=[top * 1.05 if top else 1.0] * len(mismatched),
                        mode="markers",
                        name=f"{variant}: NaN mismatch",
                        legendgroup=variant,
                        showlegend=panel == 1,
                        marker={"symbol": "x", "size": 11, "color": variant_color(variant)},
                        hovertext=[
                            f"{_hover(r)}<br>NaN where the reference is a number (or the reverse): max = inf"
                            for _, r in mismatched.iterrows()
                        ],
                        hoverinfo="text",
                    ),
                    row=panel,
                    col=1,
                )
    if len(part):
        add_pow2_lines(fig, int(part["n_cols"].min()), int(part["n_cols"].max()), rows=(1, 2))
    fig.update_xaxes(type="log", title_text="N (columns)", row=2, col=1)
    fig.update_xaxes(type="log", row=1, col=1)
    fig.update_yaxes(title_text=f"ULPs of {dtype}", rangemode="tozero", tickformat="~g")
    return _finish(fig, f"ULP error vs N — {platform}, {dtype}, input {input_name}", 560)


def ulp_fractions_figure(table: pd.DataFrame, dtype: str, n_cols: int, input_name: str, platform: str) -> go.Figure:
    """Share of elements at 0, 1 and > 1 ULP per variant at one N (stacked horizontal bars, 0..100 %)."""
    part = worst_per_n(numerics_rows(table))
    if len(part):
        part = part[(part["dtype"] == dtype) & (part["n_cols"] == n_cols) & (part["numerics_input"] == input_name)]
    variants = _ordered_variants(part) if len(part) else []
    fig = go.Figure()
    for label, column in (("0 ULP", "ulp_frac_0"), ("1 ULP", "ulp_frac_1"), ("> 1 ULP", "ulp_frac_gt1")):
        values = [100 * float(part.loc[part["variant"] == v, column].iloc[0]) for v in variants]
        fig.add_trace(
            go.Bar(
                y=variants,
                x=values,
                name=label,
                orientation="h",
                marker={"color": FRACTION_COLORS[label]},
                hovertemplate=f"%{{y}}: %{{x:.2f}}% of elements at {label}<extra></extra>",
            )
        )
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title_text="elements (%)", range=[0, 100])
    fig.update_yaxes(title_text="variant", autorange="reversed")
    return _finish(
        fig,
        f"ULP error distribution at N={n_cols} — {platform}, {dtype}, input {input_name}",
        120 + 40 * max(1, len(variants)),
    )


def ulp_histogram_figure(counts: pd.DataFrame, title: str) -> go.Figure:
    """Elements per ULP distance (columns variant, ulp, count), as % of each variant's elements; inf = NaN mismatch."""
    fig = go.Figure()
    for variant in _ordered_variants(counts) if len(counts) else []:
        rows = counts[counts["variant"] == variant].sort_values("ulp")
        total = float(rows["count"].sum()) or 1.0
        labels = ["NaN mismatch" if math.isinf(u) else f"{u:g}" for u in rows["ulp"]]
        fig.add_trace(
            go.Bar(
                x=labels,
                y=100 * rows["count"] / total,
                name=variant,
                marker={"color": variant_color(variant)},
                customdata=rows["count"],
                hovertemplate=f"{variant}: %{{y:.2f}}% (%{{customdata}} elements) at %{{x}} ULP<extra></extra>",
            )
        )
    fig.update_layout(barmode="group")
    fig.update_xaxes(title_text="ULP distance from the correctly rounded float64 softmax", type="category")
    fig.update_yaxes(title_text="elements (%)")
    return _finish(fig, title, 380)


def exp_probe_figure(table: pd.DataFrame, dtype: str, platform: str) -> go.Figure:
    """Max and mean ULP per input distribution for the tl.exp, tl.exp2 and float64 probes (grouped bars)."""
    part = worst_per_n(numerics_rows(table))
    if len(part):
        part = part[part["dtype"] == dtype]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("max ULP error", "mean ULP error"))
    names = {"probe_exp": "tl.exp", "probe_exp2": "tl.exp2(x·log2 e)", "probe_fp64": "float64 exp, sum, division"}
    colors = {"probe_exp": "#1f77b4", "probe_exp2": "#ff7f0e", "probe_fp64": "#2ca02c"}
    for col, column in ((1, "ulp_max"), (2, "ulp_mean")):
        for probe, label in names.items():
            rows = part[part["variant"] == probe] if len(part) else part
            if not len(rows):
                continue
            values = rows[column].astype(float)
            fig.add_trace(
                go.Bar(
                    x=rows["numerics_input"],
                    y=values,
                    name=label,
                    legendgroup=probe,
                    showlegend=col == 1,
                    marker={"color": colors[probe]},
                    text=[f"{v:.3g}" for v in values],  # a 0-ULP bar has no height: its label says 0
                    textposition="outside",
                    cliponaxis=False,
                    hovertemplate=f"{label} %{{x}}: %{{y:.4g}} ULP<extra></extra>",
                ),
                row=1,
                col=col,
            )
    fig.update_layout(barmode="group")
    fig.update_yaxes(title_text=f"ULPs of {dtype}", rangemode="tozero", tickformat="~g")
    order = ("normal", "scale10", "scale30", "dominant", "near_uniform", "special")
    fig.update_xaxes(title_text="input distribution", categoryorder="array", categoryarray=list(order))
    n = sorted(part["n_cols"].unique()) if len(part) else []
    return _finish(
        fig,
        f"tl.exp vs tl.exp2 vs float64 (teaching-kernel probe, N={', '.join(map(str, n))}) — {platform}, {dtype}",
        400,
    )
