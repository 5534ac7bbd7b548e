"""Plotly figures of the scope breakdowns (Kernel evidence page; profiling.views.scopes makes the tables).

Scope and config names come from loaded files: they are HTML-escaped before they reach a title, axis or hover.
"""

from __future__ import annotations

import html

import pandas as pd
import plotly.graph_objects as go

from blockscope.profiling.views import figures as base
from blockscope.profiling.views.scopes import KERNEL_SCOPE, OTHER_SCOPE

SCOPE_COLORS: dict[str, str] = {
    "load": "#1f77b4",
    "local": "#ff7f0e",
    "publish": "#9467bd",
    "exchange": "#d62728",
    "store": "#2ca02c",
    OTHER_SCOPE: "#c7c7c7",
}


def _text(value: object) -> str:
    """A file's value as plain text for plotly (HTML-escaped, control characters dropped, at most 80 chars)."""
    return html.escape("".join(c for c in str(value) if ord(c) >= 32)[:80])


def scope_color(scope: str, index: int = 0) -> str:
    """The scope's colour (a spare one for names not in SCOPE_COLORS)."""
    return SCOPE_COLORS.get(scope, base.EXTRA_COLORS[index % len(base.EXTRA_COLORS)])


def scope_cycles_figure(table: pd.DataFrame, config: str) -> go.Figure:
    """One config's breakdown (rows of one kernel): a bar per scope (the `kernel` scope left out) of median cycles
    per warp, an error bar up to the p90, the share of the kernel's cycles as text."""
    rows = table[table["scope"] != KERNEL_SCOPE].reset_index(drop=True)
    fig = go.Figure()
    for i, r in rows.iterrows():
        share = r["share_of_kernel"]
        fig.add_trace(
            go.Bar(
                x=[_text(r["scope"])],
                y=[float(r["median_cycles"])],
                name=_text(r["scope"]),
                marker_color=scope_color(str(r["scope"]), int(i)),
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [max(0.0, float(r["p90_cycles"]) - float(r["median_cycles"]))],
                    "arrayminus": [0.0],
                },
                text=[f"{100 * share:.0f}%" if share == share else ""],
                textposition="outside",
                hovertext=[
                    f"{_text(r['scope'])}: median {r['median_cycles']:,.0f}, p90 {r['p90_cycles']:,.0f} cycles per "
                    f"warp; {100 * share:.1f}% of the kernel's cycles; {int(r['ctas'])} CTAs, {int(r['warps'])} warps"
                ],
                hoverinfo="text",
            )
        )
    base._layout(
        fig,
        f"Cycles per warp by scope — {_text(config)}",
        "scope",
        "cycles per warp (median; bar to p90)",
        log_x=False,
        height=380,
    )
    fig.update_xaxes(type="category")
    fig.update_layout(showlegend=False)
    return fig


def scope_share_figure(table: pd.DataFrame) -> go.Figure:
    """Every config's share of kernel cycles by scope, stacked (one bar per config; `kernel` itself left out)."""
    rows = table[table["scope"] != KERNEL_SCOPE]
    configs = [_text(c) for c in dict.fromkeys(rows["config"])]
    fig = go.Figure()
    for i, scope in enumerate(dict.fromkeys(rows["scope"])):
        part = rows[rows["scope"] == scope].set_index("config")["share_of_kernel"]
        part = part[~part.index.duplicated()]
        values = [float(part.get(c, 0.0)) * 100 for c in dict.fromkeys(rows["config"])]
        fig.add_trace(
            go.Bar(x=configs, y=values, name=_text(scope), marker_color=scope_color(str(scope), i)),
        )
    fig.update_layout(barmode="stack")
    base._layout(fig, "Share of the kernel's cycles by scope", "config", "% of kernel cycles", log_x=False)
    fig.update_xaxes(type="category")
    return fig
