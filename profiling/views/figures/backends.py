"""Plotly figures of the Backends page (pure DataFrame -> Figure; imports plotly, unlike the rest of backends/)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from blockscope.profiling.views import figures as base
from blockscope.profiling.views.backends import STATUS_ORDER, backend_order

BACKEND_COLORS: dict[str, str] = {"inductor": "#17becf", "liger": "#bcbd22", "quack": "#e377c2"}
STATUS_COLORS: dict[str, str] = {
    "ran": "#5fa8d3",
    "unsupported": "#cccccc",
    "unavailable": "#e8e8e8",
    "wrong": "#e4572e",
    "failed": "#f2c14e",
    "skipped": "#9e9e9e",
}


def backend_color(name: str) -> str:
    """Peers get their own colours; Blockscope variants and torch keep the dashboard's."""
    return BACKEND_COLORS.get(name) or base.variant_color(name)


def _hover(rows: pd.DataFrame) -> list[str]:
    out = []
    for _, r in rows.iterrows():
        lines = [
            f"{r['variant']} {r['dtype']} R={r['n_rows']} N={r['n_cols']}",
            f"median {r['median_us']:.4g} µs (p20 {r['p20_us']:.4g}, p80 {r['p80_us']:.4g})",
        ]
        for column, text in (
            ("vs_best", "x the fastest here"),
            ("gbps", "GB/s"),
            ("n_regs", "regs/thread"),
            ("kernel_names", ""),
        ):
            value = r.get(column)
            if value is not None and not pd.isna(value):
                lines.append(f"{value:.3g} {text}" if isinstance(value, float) else f"{value} {text}".strip())
        out.append("<br>".join(lines))
    return out


def is_pow2_neighbour(n: int) -> bool:
    """N = 2**k - 1 or 2**k + 1 (not a power of two itself): the sweep's edge points around each doubling."""
    n = int(n)
    return n & (n - 1) != 0 and any(m > 0 and m & (m - 1) == 0 for m in (n - 1, n + 1))


def _lines(table: pd.DataFrame, y: str, title: str, y_title: str, log_y: bool) -> go.Figure:
    """One line per backend through the N that are not power-of-two neighbours; the 2**k +- 1 points as markers
    of the same colour (on a log axis they sit on top of 2**k: a line through them would zig-zag)."""
    fig = go.Figure()
    for name in backend_order(list(table["variant"].unique())):
        rows = table[table["variant"] == name].sort_values("n_cols")
        edge = rows["n_cols"].map(is_pow2_neighbour).astype(bool)
        color = backend_color(name)
        fig.add_trace(
            go.Scatter(
                x=rows.loc[~edge, "n_cols"],
                y=rows.loc[~edge, y],
                name=name,
                legendgroup=name,
                mode="lines+markers",
                line={"color": color, "width": 3 if name == "auto" else 2},
                marker={"size": 6},
                hovertext=_hover(rows[~edge]),
                hoverinfo="text",
            )
        )
        if edge.any():
            fig.add_trace(
                go.Scatter(
                    x=rows.loc[edge, "n_cols"],
                    y=rows.loc[edge, y],
                    name=f"{name} (2^k ± 1)",
                    legendgroup=name,
                    showlegend=False,
                    mode="markers",
                    marker={"size": 7, "color": color, "symbol": "diamond-open"},
                    hovertext=_hover(rows[edge]),
                    hoverinfo="text",
                )
            )
    base._layout(fig, title, "N (columns per row)", y_title, log_y=log_y)
    if len(table):
        base.add_pow2_lines(fig, int(table["n_cols"].min()), int(table["n_cols"].max()))
    return fig


def latency_figure(table: pd.DataFrame, df: pd.DataFrame, method: str, dtype: str) -> go.Figure:
    """Median time per backend vs N (log-log), powers of two dotted."""
    return _lines(
        table,
        "median_us",
        base.title_for("Backends: median time vs N", df, dtype, method),
        "median time (µs)",
        log_y=True,
    )


def relative_figure(table: pd.DataFrame, df: pd.DataFrame, method: str, dtype: str) -> go.Figure:
    """Each backend's time / the fastest backend's time at that N (1.0 = the winner there)."""
    fig = _lines(
        table,
        "vs_best",
        base.title_for("Backends: time relative to the fastest at each N", df, dtype, method),
        "time / fastest (x)",
        log_y=False,
    )
    fig.add_hline(y=1.0, line={"color": "#3b3b3b", "dash": "dot"})
    return fig


def bandwidth_figure(table: pd.DataFrame, df: pd.DataFrame, method: str, dtype: str) -> go.Figure:
    """Achieved GB/s per backend vs N, with the copy bandwidth measured in the same run."""
    fig = _lines(
        table,
        "gbps",
        base.title_for("Backends: achieved bandwidth vs N", df, dtype, method),
        "achieved bandwidth (GB/s)",
        log_y=False,
    )
    copies = table["copy_gbps"].dropna()
    if len(copies):
        copy = float(copies.median())
        fig.add_hline(
            y=copy,
            line={"color": "#d62728", "dash": "dash"},
            annotation_position="top left",
            annotation_text=f"device copy measured in the same run: {copy:,.0f} GB/s",
        )
    return fig


def support_figure(table: pd.DataFrame, dtype: str) -> go.Figure:
    """Backend x N grid coloured by status (ran / unsupported / wrong / failed / skipped), reason on hover."""
    part = table[table["dtype"] == dtype]
    names = backend_order(list(part["variant"].unique()))
    n_values = sorted(part["n_cols"].unique())
    codes = {s: i for i, s in enumerate(STATUS_ORDER)}
    z, text = [], []
    for name in names:
        rows = part[part["variant"] == name].set_index("n_cols")
        z.append([codes[rows.loc[n, "status"]] if n in rows.index else None for n in n_values])
        text.append(
            [
                f"{name} N={n}: {rows.loc[n, 'status']}"
                + (f"<br>{rows.loc[n, 'reason'][:160]}" if n in rows.index and rows.loc[n, "reason"] else "")
                if n in rows.index
                else f"{name} N={n}: not in the sweep"
                for n in n_values
            ]
        )
    scale = []
    for i, status in enumerate(STATUS_ORDER):
        low, high = i / len(STATUS_ORDER), (i + 1) / len(STATUS_ORDER)
        scale += [[low, STATUS_COLORS[status]], [high, STATUS_COLORS[status]]]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[str(n) for n in n_values],
            y=names,
            text=text,
            hoverinfo="text",
            colorscale=scale,
            zmin=-0.5,
            zmax=len(STATUS_ORDER) - 0.5,
            xgap=1,
            ygap=1,
            colorbar={"tickvals": list(range(len(STATUS_ORDER))), "ticktext": list(STATUS_ORDER), "title": "status"},
        )
    )
    base._layout(
        fig,
        f"Which backend runs which shape — {dtype} (hover: why not)",
        "N (columns per row)",
        "backend",
        log_x=False,
        height=120 + 36 * max(1, len(names)),
    )
    fig.update_xaxes(type="category")
    fig.update_yaxes(type="category", autorange="reversed")  # _layout made it linear: names would be NaN
    return fig


def first_call_figure(table: pd.DataFrame, dtype: str) -> go.Figure:
    """First call (compile + launch) seconds per backend vs N (log y): Inductor and Quack compile per shape."""
    part = table[table["dtype"] == dtype]
    fig = go.Figure()
    for name in backend_order(list(part["variant"].unique())):
        rows = part[part["variant"] == name].sort_values("n_cols")
        fig.add_trace(
            go.Scatter(
                x=rows["n_cols"],
                y=rows["first_call_s"],
                name=name,
                mode="markers",
                marker={"color": backend_color(name), "size": 7},
                hovertext=[
                    f"{name} N={n}: first call {s:.3g} s, steady {u:.3g} µs"
                    for n, s, u in zip(rows["n_cols"], rows["first_call_s"], rows["median_us"], strict=True)
                ],
                hoverinfo="text",
            )
        )
    base._layout(
        fig, f"First call (compile + launch) vs N — {dtype}", "N (columns per row)", "first call (s)", log_y=True
    )
    return fig
