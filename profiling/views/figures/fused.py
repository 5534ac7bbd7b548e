"""Plotly figures of the fused ops (Backends page's "Fused ops", Masked lanes page's fusion models).

Names from a loaded file (backends, cases) are HTML-escaped before they reach a title, legend or hover text.
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from blockscope.profiling.inspect.fusion import FusionTraffic, PaddingModel
from blockscope.profiling.views import figures as base

FUSED_COLORS: dict[str, str] = {
    "blockscope": "#d62728",
    "eager": "#1f77b4",
    "inductor": "#17becf",
    "sdpa_math_softmax": "#9467bd",
    "nested": "#2ca02c",
    "pad_unpad": "#ff7f0e",
    "segment_reduce": "#8c564b",
}


def _text(value: object) -> str:
    """A file's value as plain text for plotly (HTML-escaped, control characters dropped, at most 80 chars)."""
    return html.escape("".join(c for c in str(value) if ord(c) >= 32)[:80])


def fused_time_figure(curve: pd.DataFrame, op: str, case: str, dtype: str, method: str) -> go.Figure:
    """Median µs per call vs L (Lk of a masked shape, the longest row of a ragged one) per backend, log-log; the
    p20-p80 band as error bars."""
    fig = go.Figure()
    for name in dict.fromkeys(curve["backend"]):
        rows = curve[curve["backend"] == name]
        median = rows["median_us"].astype(float)
        fig.add_trace(
            go.Scatter(
                x=rows["length"].astype(int),
                y=median,
                name=_text(name),
                mode="lines+markers",
                line={"color": FUSED_COLORS.get(name, "#7f7f7f"), "width": 3 if name == "blockscope" else 2},
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": (rows["p80_us"].astype(float) - median).clip(lower=0).fillna(0),
                    "arrayminus": (median - rows["p20_us"].astype(float)).clip(lower=0).fillna(0),
                    "thickness": 1,
                },
                hovertext=[
                    f"{_text(name)} {_text(s)}<br>median {m:.4g} µs<br>{p:.0f}% of ideal"
                    for s, m, p in zip(
                        rows["shape"], median, rows["pct_of_ideal"].astype(float).fillna(np.nan), strict=True
                    )
                ],
                hoverinfo="text",
            )
        )
    x_title = "L = Lk (columns per row)" if op == "masked_softmax" else "L = longest row (elements)"
    title = f"{_text(op)} {_text(case)}, {_text(dtype)}: time per call ({_text(method)})"
    return base._layout(fig, title, x_title, "median µs per call (log)", log_y=True)


def fusion_traffic_figure(traffic: FusionTraffic) -> go.Figure:
    """Stacked bars of MB per kernel: the eager chain vs the fused kernel."""
    fig = go.Figure()
    for chain, steps in (("eager chain", traffic.eager), ("fused", traffic.fused)):
        for step in steps:
            fig.add_trace(
                go.Bar(
                    x=[chain],
                    y=[step.total_bytes / 1e6],
                    name=step.kernel,
                    hovertemplate=(
                        f"{step.kernel}<br>read {step.read_bytes / 1e6:,.3f} MB"
                        f"<br>write {step.write_bytes / 1e6:,.3f} MB<extra></extra>"
                    ),
                )
            )
    b, h, lq, lk = traffic.shape
    title = (
        f"Bytes moved, ({b}, {h}, {lq}, {lk}) {traffic.dtype}{' causal' if traffic.causal else ''}: "
        f"{traffic.ratio:.2f}x less fused"
    )
    base._layout(fig, title, "", "MB moved (1e6 bytes)", log_x=False)
    fig.update_layout(barmode="stack")
    return fig


def length_histogram(lengths: np.ndarray, model: PaddingModel) -> go.Figure:
    """Histogram of the row lengths, with the longest row (what padding pads every row to) marked."""
    fig = go.Figure(go.Histogram(x=np.asarray(lengths), nbinsx=60, name="rows", marker={"color": "#1f77b4"}))
    fig.add_vline(x=model.max_len, line_dash="dash", line_color="#d62728", annotation_text=f"max {model.max_len:,}")
    title = f"{model.segments:,} row lengths: padding to the longest spans {model.waste_factor:.2f}x the packed lanes"
    base._layout(fig, title, "row length (elements)", "rows", log_x=False)
    fig.update_layout(showlegend=False)
    return fig
