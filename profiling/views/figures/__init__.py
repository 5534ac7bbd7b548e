"""Plotly figures for the dashboard and the export: pure DataFrame -> Figure functions (no streamlit).

Every figure names its GPU, dtype and timing method in the title where they apply, puts units on the
axes, hovers with the config, and colours variants the same everywhere (VARIANT_COLORS). Power-of-two
boundaries (where BLOCK_SIZE = next_pow2(N) doubles) are vertical lines whose shape name starts 'pow2'.
"""

from __future__ import annotations

import hashlib
import html
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from blockscope.profiling.views import curves, tradeoffs
from blockscope.profiling.views import dashboard_data as dd

VARIANT_COLORS: dict[str, str] = {  # one colour per backend on every page and in every export, none repeated
    "torch": "#3b3b3b",
    "auto": "#d62728",
    "teaching": "#1f77b4",
    "multirow": "#2ca02c",
    "online": "#ff7f0e",
    "persistent": "#9467bd",
    "splitrow": "#8c564b",
    "staged": "#17becf",
    "staged_split": "#0b6e79",
    "cluster": "#bcbd22",
    "warprows": "#e377c2",
    "stagedrows": "#7b4173",
    "tinyrows": "#b5cf6b",
    "vecrows": "#e7969c",
    "inductor": "#ff9896",
    "liger": "#6b6ecf",
    "quack": "#e6550d",
}
EXTRA_COLORS = ("#637939", "#8c6d31", "#843c39", "#7f7f7f", "#393b79", "#a55194")
REGIME_COLORS: dict[str, str] = {
    "launch-bound": "#f2c14e",
    "bandwidth-bound": "#5fa8d3",
    "spill-bound": "#e4572e",
    "in between": "#cccccc",
}
LIMIT_LABELS = {"registers": "registers", "shared_memory": "shared memory", "warps": "warps", "blocks": "blocks"}
DASHES = ("solid", "dash", "dot", "dashdot", "longdash")
TEMPLATE = "plotly_white"


@dataclass
class FigureSpec:
    """A named figure and the table it was drawn from (for the export: PNG/SVG/HTML + CSV); the figure's text is
    escaped (escape_markup) when the spec is made."""

    name: str
    title: str
    figure: go.Figure
    data: pd.DataFrame

    def __post_init__(self) -> None:
        self.figure = escape_markup(self.figure)


# the tags the figures themselves write (titles, hovers): every other '<' or '>' in a figure's text is escaped
_MARKUP = re.compile(r"(<\s*/?\s*(?:br|b|i|em|sub|sup|extra)\s*/?\s*>)|[<>]", re.I)


def escape_text(text: str) -> str:
    """`text` with every '<' and '>' as an entity except in the few tags the figures write (br, b, i, em, sub, sup,
    extra): a value from a file such as '<img src=x onerror=...>' or '<a href=...>' is shown, never rendered."""
    return _MARKUP.sub(lambda m: m.group(1) or ("&lt;" if m.group(0) == "<" else "&gt;"), text)


def _escaped(value: object) -> object:
    if isinstance(value, str):
        return escape_text(value)
    if isinstance(value, dict):
        return {key: _escaped(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_escaped(item) for item in value)
    if isinstance(value, np.ndarray) and value.dtype.kind in "OUS":
        return np.array([_escaped(item) for item in value.ravel().tolist()], dtype=object).reshape(value.shape)
    return value


def escape_markup(fig: go.Figure) -> go.Figure:
    """A copy of `fig` whose every text (titles, trace names, axis categories, hover text and custom data) shows
    HTML from a loaded file as text: plotly renders a subset of HTML in all of them."""
    return go.Figure(_escaped(fig.to_dict()))


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # control characters: never in a title
MAX_NAME_CHARS = 120  # a file-name stem; '<stem>.png' stays far under a file system's 255 bytes


def safe_name(*parts: object) -> str:
    """A file-name stem from `parts` joined by '_': only [A-Za-z0-9._-] (other runs become '_'), no leading dot,
    so a value such as 'x/../../escaped' can never name a path outside the export directory."""
    text = _UNSAFE.sub("_", "_".join(str(part) for part in parts)).lstrip(".")
    if len(text) > MAX_NAME_CHARS:  # a file system allows 255 bytes: keep a readable head and a hash of the whole
        digest = hashlib.sha256(text.encode()).hexdigest()[:12]
        text = f"{text[: MAX_NAME_CHARS - 13]}-{digest}"
    return text or "figure"


def variant_color(variant: str) -> str:
    """The variant's colour on every page (unknown variants get a stable extra colour)."""
    if variant in VARIANT_COLORS:
        return VARIANT_COLORS[variant]
    return EXTRA_COLORS[sum(map(ord, variant)) % len(EXTRA_COLORS)]


def gpu_label(df: pd.DataFrame) -> str:
    """'NVIDIA H200' (or 'A vs B' for several GPUs; 'unknown GPU')."""
    names = (
        sorted(_CONTROL.sub(" ", str(v)) for v in df["gpu_name"].dropna().unique()) if "gpu_name" in df.columns else []
    )
    names = [n for n in names if n != "none"]
    return " vs ".join(names) if names else "unknown GPU"


def title_for(what: str, df: pd.DataFrame, dtype: str | None = None, method: str | None = None) -> str:
    """'<what> — GPU, dtype, timing method'."""
    parts = [gpu_label(df), *([dtype] if dtype else []), *([f"timing: {method}"] if method else [])]
    return f"{what} — {', '.join(parts)}"


def _pow2_text(n: int) -> str:
    return f"{n // 1024}K" if n >= 1024 else str(n)


def _axis_refs(fig: go.Figure, row: int | None) -> tuple[str, str]:
    """(xref, yref) of subplot `row` (1 column) for shapes spanning its full height."""
    if row is None or row == 1 or not fig._has_subplots():
        return "x", "y domain"
    return f"x{row}", f"y{row} domain"


def add_pow2_lines(fig: go.Figure, n_min: int, n_max: int, rows: tuple[int, ...] | None = None) -> list[int]:
    """Dotted vertical lines at powers of two in [n_min, n_max] (shape names 'pow2 <n>'), ticks there too.

    `rows`: the subplot rows (one column) to draw in. Shapes go in with one layout update (add_vline per
    line re-validates every shape and is slow)."""
    boundaries = dd.power_of_two_boundaries(n_min, n_max)
    shapes = []
    for row in rows or (None,):
        xref, yref = _axis_refs(fig, row)
        shapes += [
            {
                "type": "line",
                "x0": n,
                "x1": n,
                "y0": 0,
                "y1": 1,
                "xref": xref,
                "yref": yref,
                "line": {"color": "#9a9a9a", "width": 1, "dash": "dot"},
                "layer": "below",
                "name": f"pow2 {n}",
            }
            for n in boundaries
        ]
    fig.update_layout(shapes=[*fig.layout.shapes, *shapes])
    fig.update_xaxes(tickvals=boundaries, ticktext=[_pow2_text(n) for n in boundaries])
    return boundaries


def _layout(
    fig: go.Figure,
    title: str,
    x_title: str,
    y_title: str,
    *,
    log_x: bool = True,
    log_y: bool = False,
    height: int = 440,
) -> go.Figure:
    fig.update_layout(
        title={"text": title, "x": 0.01, "xanchor": "left", "font": {"size": 15}},
        template=TEMPLATE,
        height=height,
        margin={"l": 60, "r": 20, "t": 50, "b": 50},
        legend={
            "orientation": "v",
            "yanchor": "top",
            "y": 1.0,
            "x": 1.01,
            "xanchor": "left",
            "groupclick": "toggleitem",
        },
        hovermode="closest",
    )
    if getattr(fig, "_grid_ref", None):  # subplots: room for the panel titles under the figure title
        fig.update_layout(margin={"t": 85})
    fig.update_xaxes(title_text=x_title, type="log" if log_x else "linear")
    fig.update_yaxes(title_text=y_title, type="log" if log_y else "linear")
    if log_y and not fig.layout.yaxis.tickvals:  # 1-2-5 per decade, written out in full
        ticks = [m * 10**e for e in range(-4, 7) for m in (1, 2, 5)]
        fig.update_yaxes(tickmode="array", tickvals=ticks, ticktext=[f"{t:,g}" for t in ticks])
    return fig


EDGE_SYMBOL = "diamond-open"
EDGE_LEGEND = "N = 2^k ± 1 (BLOCK_SIZE edge)"


def _floats(values: pd.Series) -> list[float | None]:
    """Plain floats for plotly, None where missing (a gap in a line)."""
    return [None if pd.isna(v) else float(v) for v in values]


def add_series(
    fig: go.Figure,
    rows: pd.DataFrame,
    y: str,
    grid: list[int],
    name: str,
    color: str,
    *,
    dash: str = "solid",
    width: float = 2,
    scale: float = 1.0,
    hovertext: list[str] | None = None,
    hovertemplate: str | None = None,
    legendgroup: str | None = None,
    showlegend: bool = True,
    marker_size: int = 5,
    row: int | None = None,
    col: int | None = None,
    error: tuple[str, str] | None = None,
    visible: bool | str = True,
    edge_markers: bool = True,
) -> None:
    """One series (one row per N) as a line through the curve N of `grid` with markers, broken (a gap) at grid
    N the series did not measure, and its power-of-two edge points (curves.edge_points) as separate open
    markers in the same colour, never joined to the line. `error`: (low, high) columns drawn as error bars.
    `visible` 'legendonly': listed in the legend, drawn on a click; `edge_markers` False: no edge points drawn."""
    needed = ["n_cols", y, *(error or ())]  # the columns drawn: splitting a few columns, not all of a results row
    rows = rows[list(dict.fromkeys(needed))].assign(
        _hover=list(hovertext) if hovertext is not None else [""] * len(rows)
    )
    curve, edges = curves.split_series(rows, grid)
    if not edge_markers:
        edges = edges.iloc[0:0]
    where = {"row": row, "col": col} if row is not None else {}
    hover = (
        {"hovertemplate": hovertemplate}
        if hovertemplate
        else {"hoverinfo": "text", "hovertext": curve["_hover"].fillna("").tolist()}
    )

    def bars(part: pd.DataFrame) -> dict:
        if error is None:
            return {}
        middle = part[y].astype("float64")
        return {
            "error_y": {
                "type": "data",
                "symmetric": False,
                "color": color,
                "thickness": 1,
                "width": 3,
                "array": _floats((part[error[1]].astype("float64") - middle) * scale),
                "arrayminus": _floats((middle - part[error[0]].astype("float64")) * scale),
            }
        }

    fig.add_trace(
        go.Scatter(
            x=curve["n_cols"].tolist(),
            y=_floats(curve[y].astype("float64") * scale),
            name=name,
            mode="lines+markers",
            connectgaps=False,
            marker={"size": marker_size},
            line={"color": color, "width": width, "dash": dash},
            legendgroup=legendgroup or name,
            showlegend=showlegend,
            visible=visible,
            **bars(curve),
            **hover,
        ),
        **where,
    )
    if len(edges):
        if not hovertemplate:
            hover["hovertext"] = edges["_hover"].tolist()
        marker = {
            "color": color,
            "size": marker_size + 3,
            "symbol": EDGE_SYMBOL,
            "line": {"width": 1.5, "color": color},
        }
        fig.add_trace(
            go.Scatter(
                x=edges["n_cols"].tolist(),
                y=_floats(edges[y].astype("float64") * scale),
                name=name,
                mode="markers",
                legendgroup=legendgroup or name,
                showlegend=False,
                visible=visible,
                marker=marker,
                line={"color": color},
                **bars(edges),
                **hover,
            ),
            **where,
        )


def add_edge_legend(fig: go.Figure, grid: list[int]) -> None:
    """One legend entry explaining the open-diamond edge markers, when `grid` has edge points."""
    if curves.edge_points(grid):
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                name=EDGE_LEGEND,
                legendgroup="edges",
                marker={
                    "color": "#7f7f7f",
                    "size": 8,
                    "symbol": EDGE_SYMBOL,
                    "line": {"width": 1.5, "color": "#7f7f7f"},
                },
                hoverinfo="skip",
            )
        )


def _grid(table: pd.DataFrame) -> list[int]:
    return sorted(int(n) for n in table["n_cols"].dropna().unique()) if len(table) else []


def _hover(table: pd.DataFrame) -> list[str]:
    out = []
    for row in table.to_dict("records"):
        lines = [dd.config_label(row)]
        for column, unit in (
            ("median_us", "µs"),
            ("p20_us", "µs"),
            ("p80_us", "µs"),
            ("gbps", "GB/s"),
            ("speedup", "x"),
            ("n_regs", "regs/thread"),
            ("spill_store_bytes", "B spilled"),
            ("occupancy", ""),
            ("programs", "programs"),
        ):
            value = row.get(column)
            if value is not None and not pd.isna(value):
                lines.append(f"{column} = {value:.4g} {unit}".rstrip())
        out.append("<br>".join(lines))
    return out


def _series_groups(table: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame, str]]:
    """(trace name, variant, rows, dash) per variant, and per GPU / run / file (dash style) when several are
    loaded: side by side, never mixed."""
    labels = table[dd.SETUP] if dd.SETUP in table.columns else dd.setup_labels(table)
    setups = sorted(set(labels.dropna())) if len(table) else []
    groups = []
    for variant in sorted(table["variant"].unique(), key=lambda v: (v != dd.TORCH, v)):
        rows = table[table["variant"] == variant]
        if len(setups) > 1:
            for i, setup in enumerate(setups):
                part = rows[(labels[rows.index] == setup).to_numpy(dtype=bool)]
                if len(part):
                    groups.append((f"{variant} · {setup}", variant, part, DASHES[i % len(DASHES)]))
        else:
            groups.append((variant, variant, rows, "solid"))
    return groups


def masked_lanes_figure(curve: pd.DataFrame, dtype: str = "fp16") -> go.Figure:
    """Masked lane fraction (%) vs N, one panel per variant (lanes model or plans, of rows of `dtype`, named in the
    title), powers of two drawn.

    Panels rather than overlaid lines: teaching, multirow and persistent share next_pow2(N) and would hide
    each other."""
    variants = list(dict.fromkeys(curve["variant"])) if len(curve) else []
    fig = make_subplots(
        rows=max(1, len(variants)), cols=1, shared_xaxes=True, vertical_spacing=0.04, subplot_titles=variants or None
    )
    for i, variant in enumerate(variants, start=1):
        rows = curve[curve["variant"] == variant].sort_values("n_cols")
        tiles = rows["tile_width"] if "tile_width" in rows else pd.Series([None] * len(rows))
        fig.add_trace(
            go.Scatter(
                x=rows["n_cols"],
                y=rows["masked_lane_fraction"] * 100,
                name=variant,
                mode="lines",
                line={"color": variant_color(variant), "width": 2},
                fill="tozeroy",
                fillcolor=_alpha(variant_color(variant), 0.12),
                customdata=tiles.to_numpy().reshape(-1, 1),
                hovertemplate=f"{variant}<br>N=%{{x}}<br>tile=%{{customdata[0]}} lanes<br>"
                "masked=%{y:.1f}%<extra></extra>",
            ),
            row=i,
            col=1,
        )
    _layout(
        fig,
        f"Wasted (masked) lanes per program vs N ({dtype} rows) — BLOCK_SIZE = next_pow2(N)",
        "",
        "masked lanes (% of lanes spanned)",
        height=max(300, 150 * len(variants) + 110),
    )
    fig.update_layout(showlegend=False)
    fig.update_xaxes(type="log")
    top = float(curve["masked_lane_fraction"].max()) * 100 if len(curve) else 0.0  # staged at small N: > 50%
    fig.update_yaxes(range=[0, max(55.0, min(100.0, top * 1.05))], title_text="% masked", title_font={"size": 11})
    fig.update_xaxes(title_text="N (columns per row)", row=max(1, len(variants)), col=1)
    if len(curve):
        add_pow2_lines(
            fig, int(curve["n_cols"].min()), int(curve["n_cols"].max()), rows=tuple(range(1, len(variants) + 1))
        )
    return fig


def latency_figure(
    df: pd.DataFrame,
    method: str,
    dtype: str,
    spans: list[tuple[int, int, str]] | None = None,
    band: bool = True,
    shown: Sequence[str] | None = None,
    edge_markers: bool = True,
) -> go.Figure:
    """Median time per call (µs, log) vs N (log) for torch and each variant's fastest config per N.

    `band` draws the p20..p80 spread; `spans` (from dashboard_data.regime_spans) shade the regimes. `shown`: the
    variants drawn at first (the others are in the legend, one click away); None draws all. `edge_markers` False
    leaves the N = 2^k ± 1 points off the chart (the Latency page tables them instead).
    """
    table = dd.best_per_n(df[(df["method"] == method) & (df["dtype"] == dtype)])
    grid = _grid(table)
    fig = go.Figure()
    for name, variant, rows, dash in _series_groups(table):
        color = variant_color(variant)
        visible = True if shown is None or variant in shown else "legendonly"
        if band and rows["p20_us"].notna().any():  # on the curve N only, broken where the series has no row
            curve, _ = curves.split_series(rows, grid)
            fig.add_trace(
                go.Scatter(
                    x=curve["n_cols"].tolist(),
                    y=_floats(curve["p80_us"].astype("float64")),
                    mode="lines",
                    line={"width": 0},
                    connectgaps=False,
                    legendgroup=name,
                    showlegend=False,
                    hoverinfo="skip",
                    name=f"band {name}",
                    visible=visible,
                )
            )
            fig.add_trace(
                go.Scatter(
                    x=curve["n_cols"].tolist(),
                    y=_floats(curve["p20_us"].astype("float64")),
                    mode="lines",
                    line={"width": 0},
                    connectgaps=False,
                    fill="tonexty",
                    fillcolor=_alpha(color, 0.18),
                    legendgroup=name,
                    showlegend=False,
                    hoverinfo="skip",
                    name=f"band {name}",
                    visible=visible,
                )
            )
        add_series(
            fig,
            rows,
            "median_us",
            grid,
            name,
            color,
            dash=dash,
            width=2.5 if variant == dd.TORCH else 2,
            hovertext=_hover(rows),
            visible=visible,
            edge_markers=edge_markers,
        )
    if edge_markers:
        add_edge_legend(fig, grid)
    _layout(
        fig,
        title_for("Time per call vs N (fastest config per variant)", df, dtype, method),
        "N (columns per row)",
        "median time per call (µs)",
        log_y=True,
    )
    if len(table):
        _shade_regimes(fig, spans or [], sorted(int(n) for n in table["n_cols"].unique()))
        add_pow2_lines(fig, int(table["n_cols"].min()), int(table["n_cols"].max()))
    return fig


def _alpha(hex_color: str, alpha: float) -> str:
    hex_color = hex_color.lstrip("#")
    r, g, b = (int(hex_color[i : i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def _shade_regimes(fig: go.Figure, spans: list[tuple[int, int, str]], n_values: list[int]) -> None:
    """Shaded N ranges per regime, edges at geometric midpoints between measured N; legend entries too."""
    seen = set()
    rects: list[dict] = []
    for first, last, regime in spans:
        lower = [n for n in n_values if n < first]
        upper = [n for n in n_values if n > last]
        x0 = math.sqrt(lower[-1] * first) if lower else first
        x1 = math.sqrt(last * upper[0]) if upper else last
        color = REGIME_COLORS.get(regime, "#cccccc")
        rects.append(
            {
                "type": "rect",
                "x0": x0,
                "x1": x1,
                "y0": 0,
                "y1": 1,
                "xref": "x",
                "yref": "y domain",
                "fillcolor": color,
                "opacity": 0.16,
                "line": {"width": 0},
                "layer": "below",
                "name": f"regime {regime}",
            }
        )
        if regime not in seen:
            seen.add(regime)
            fig.add_trace(
                go.Scatter(
                    x=[None],
                    y=[None],
                    mode="markers",
                    name=f"{regime}",
                    marker={"symbol": "square", "size": 12, "color": color, "opacity": 0.5},
                    legendgroup="regimes",
                    legendgrouptitle_text="regime (fastest Triton)",
                )
            )
    fig.update_layout(shapes=[*fig.layout.shapes, *rects])


def _torch_parity(fig: go.Figure) -> None:
    """The speedup = 1 line (torch.softmax); its label placed in log10 units, as plotly wants on a log axis."""
    fig.add_hline(y=1.0, line={"color": VARIANT_COLORS["torch"], "width": 1.5}, name="torch parity")
    ticks = (0.1, 0.2, 0.3, 0.5, 0.7, 1, 1.5, 2, 3, 5, 10)
    fig.update_yaxes(tickmode="array", tickvals=ticks, ticktext=[f"{t:g}x" for t in ticks])
    fig.add_annotation(
        x=1,
        xref="x domain",
        y=0,
        yref="y",
        text="torch.softmax = 1",
        showarrow=False,
        xanchor="right",
        yanchor="bottom",
        font={"size": 11, "color": VARIANT_COLORS["torch"]},
    )


def speedup_figure(
    speedups: pd.DataFrame,
    df: pd.DataFrame,
    method: str,
    dtype: str,
    shown: Sequence[str] | None = None,
    edge_markers: bool = True,
) -> go.Figure:
    """torch time / its time per variant vs N (> 1: faster than torch), from dashboard_data.speedup_vs_torch.
    `shown` / `edge_markers` as in latency_figure."""
    table = speedups[speedups["dtype"] == dtype]
    grid = _grid(table)
    fig = go.Figure()
    for name, variant, rows, dash in _series_groups(table):
        visible = True if shown is None or variant in shown else "legendonly"
        add_series(
            fig,
            rows,
            "speedup",
            grid,
            name,
            variant_color(variant),
            dash=dash,
            hovertext=_hover(rows),
            visible=visible,
            edge_markers=edge_markers,
        )
    if edge_markers:
        add_edge_legend(fig, grid)
    _torch_parity(fig)
    _layout(
        fig,
        title_for("Speedup vs torch.softmax (torch time / its time)", df, dtype, method),
        "N (columns per row)",
        "speedup vs torch (x, >1 = faster than torch)",
        log_y=True,
    )
    if len(table):
        add_pow2_lines(fig, int(table["n_cols"].min()), int(table["n_cols"].max()))
    return fig


def best_speedup_figure(speedups: pd.DataFrame, df: pd.DataFrame, method: str) -> go.Figure:
    """The fastest Blockscope kernel's (variants and auto; peers left out) speedup vs torch per N, one line per dtype
    (hover names the variant)."""
    fig = go.Figure()
    dtype_colors = {"fp16": "#1f77b4", "bf16": "#2ca02c", "fp32": "#d62728"}
    if len(speedups):
        setup = [dd.SETUP] if dd.SETUP in speedups.columns else []  # one line per dtype and GPU / run / file
        best = speedups.loc[speedups.groupby([*setup, "dtype", "n_cols"])["speedup"].idxmax()].sort_values("n_cols")
        labels = sorted(best[dd.SETUP].unique()) if setup else [""]
        grid = _grid(best)
        for key, rows in best.groupby(["dtype", *setup]):
            dtype, *where = key if isinstance(key, tuple) else (key,)
            add_series(
                fig,
                rows,
                "speedup",
                grid,
                " · ".join([dtype, *where]),
                dtype_colors.get(dtype, "#7f7f7f"),
                dash=DASHES[labels.index(where[0]) % len(DASHES)] if where else "solid",
                hovertext=_hover(rows),
            )
        add_edge_legend(fig, grid)
    _torch_parity(fig)
    _layout(
        fig,
        title_for("Fastest Blockscope kernel vs torch.softmax", df, method=method),
        "N (columns per row)",
        "speedup vs torch (x, >1 = Blockscope faster)",
        log_y=True,
        height=360,
    )
    if len(speedups):
        add_pow2_lines(fig, int(speedups["n_cols"].min()), int(speedups["n_cols"].max()))
    return fig


def bandwidth_figure(
    df: pd.DataFrame, method: str, dtype: str, shown: Sequence[str] | None = None, edge_markers: bool = True
) -> go.Figure:
    """Achieved GB/s (read x + write y) per variant vs N, with the run's measured copy bandwidth line."""
    table = dd.best_per_n(df[(df["method"] == method) & (df["dtype"] == dtype)])
    grid = _grid(table)
    fig = go.Figure()
    for name, variant, rows, dash in _series_groups(table):
        visible = True if shown is None or variant in shown else "legendonly"
        add_series(
            fig,
            rows,
            "gbps",
            grid,
            name,
            variant_color(variant),
            dash=dash,
            hovertext=_hover(rows),
            visible=visible,
            edge_markers=edge_markers,
        )
    if edge_markers:
        add_edge_legend(fig, grid)
    copies = df.dropna(subset=["copy_gbps"]).groupby("gpu_name")["copy_gbps"].agg(["median", "count", "nunique"])
    for gpu, row in copies.iterrows():  # one line per GPU: the median of its runs' copy measurements
        runs = f", median of {int(row['nunique'])} runs" if row["nunique"] > 1 else ""
        label = f"{gpu}: " if len(copies) > 1 else ""
        fig.add_hline(
            y=float(row["median"]),
            line={"color": "#d62728", "dash": "dash"},
            name="copy bandwidth",
            annotation_text=f"{label}measured device copy {float(row['median']):,.0f} GB/s{runs}",
            annotation_position="top left",
        )
    _layout(
        fig,
        title_for("Achieved bandwidth vs N against the measured copy bandwidth", df, dtype, method),
        "N (columns per row)",
        "achieved bandwidth (GB/s)",
    )
    if len(table):
        add_pow2_lines(fig, int(table["n_cols"].min()), int(table["n_cols"].max()))
    return fig


def compile_curves_figure(df: pd.DataFrame, variant: str, dtype: str) -> go.Figure:
    """Registers/thread, spill bytes/thread and occupancy (%) vs N, one line per num_warps (compile columns)."""
    table = df[
        (df["variant"] == variant) & (df["dtype"] == dtype) & df["num_warps"].notna() & df["n_regs"].notna()
    ].drop_duplicates(["n_cols", "num_warps", "tunables"])
    fig = make_subplots(
        rows=3,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.06,
        subplot_titles=("registers per thread", "spill stores per thread (bytes)", "occupancy (% of max warps per SM)"),
    )
    warps = sorted(int(w) for w in table["num_warps"].unique())
    palette = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02")
    grid = _grid(table)
    for i, w in enumerate(warps):
        rows = (
            table[table["num_warps"] == w]
            .groupby("n_cols", as_index=False)
            .agg(n_regs=("n_regs", "max"), spill=("spill_store_bytes", "max"), occupancy=("occupancy", "min"))
        )
        color = palette[i % len(palette)]
        for r, column, scale in ((1, "n_regs", 1), (2, "spill", 1), (3, "occupancy", 100)):
            add_series(
                fig,
                rows,
                column,
                grid,
                f"{w} warps",
                color,
                scale=scale,
                legendgroup=f"w{w}",
                showlegend=r == 1,
                marker_size=4,
                row=r,
                col=1,
                hovertemplate=f"num_warps={w}<br>N=%{{x}}<br>{column}=%{{y:.4g}}<extra></extra>",
            )
    add_edge_legend(fig, grid)
    fig.add_hline(
        y=255,
        line={"color": "#d62728", "dash": "dash", "width": 1},
        row=1,
        col=1,
        name="register cap",
        annotation_text="255 cap",
        annotation_position="top left",
    )
    _layout(fig, title_for(f"{variant}: compiled resources vs N per num_warps", df, dtype), "", "", height=620)
    fig.update_xaxes(type="log")
    fig.update_xaxes(title_text="N (columns per row)", row=3, col=1)
    fig.update_yaxes(title_text="regs/thread", row=1, col=1)
    fig.update_yaxes(title_text="bytes/thread", row=2, col=1)
    fig.update_yaxes(title_text="occupancy (%)", row=3, col=1, range=[0, 105])
    if len(table):
        add_pow2_lines(fig, int(table["n_cols"].min()), int(table["n_cols"].max()), rows=(1, 2, 3))
    return fig


def limits_figure(limits: dict[str, int], limiter: str, title: str) -> go.Figure:
    """Blocks per SM each resource allows (bars); the binding (smallest) one highlighted."""
    names = list(limits)
    values = [limits[n] for n in names]
    colors = ["#e4572e" if n == limiter else "#a9c4de" for n in names]
    fig = go.Figure(
        go.Bar(
            x=values,
            y=[LIMIT_LABELS.get(n, n) for n in names],
            orientation="h",
            marker_color=colors,
            text=[f"{v} blocks" for v in values],
            textposition="outside",
            hovertemplate="%{y}: %{x} blocks/SM<extra></extra>",
            name="blocks per SM limit",
        )
    )
    _layout(fig, title, "blocks (programs) per SM allowed", "", log_x=False, height=300)
    fig.update_layout(showlegend=False)
    fig.update_yaxes(type="category", autorange="reversed")
    fig.update_xaxes(range=[0, max(values + [1]) * 1.25])
    return fig


def heatmap_figure(
    pivot: pd.DataFrame, title: str, colorbar: str, fmt: str = ".3g", reverse: bool = False
) -> go.Figure:
    """N (y, categorical) x num_warps (x) heatmap of a pivot from dashboard_data.warps_pivot."""
    z = pivot.to_numpy(dtype=float)
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[f"{int(c)}" for c in pivot.columns],
            y=[str(int(i)) for i in pivot.index],
            colorscale="Viridis",
            reversescale=reverse,
            colorbar={"title": {"text": colorbar}},
            texttemplate=f"%{{z:{fmt}}}",
            hovertemplate="N=%{y}<br>num_warps=%{x}<br>%{z:.4g}<extra></extra>",
        )
    )
    _layout(
        fig,
        title,
        "num_warps (warps per program)",
        "N (columns per row)",
        log_x=False,
        height=max(320, 26 * len(pivot) + 120),
    )
    fig.update_xaxes(type="category")
    fig.update_yaxes(type="category")
    return fig


MISSING_COLOR = "#e6e6e6"
BEST_MARK = "★"


def tradeoff_heatmap_figure(
    grid: tradeoffs.WarpsGrid, title: str, unit: str, fmt: str = ".3g", relative: bool = False, reverse: bool = False
) -> go.Figure:
    """N (y) x num_warps (x) heatmap of a tradeoffs.WarpsGrid with every empty cell labelled from the data
    ('not measured', 'skipped', 'unsupported', 'error', ...) on grey.

    `relative` (times): colour and text are each N's time over its fastest num_warps (1.0 = that N's best,
    marked ★ and with an outlined cell), so colour compares num_warps within an N, never N with N; the hover has
    the time in `unit`. Otherwise the values themselves (`fmt`), `reverse` flipping the colour scale."""
    values = grid.values
    x = [str(int(w)) for w in values.columns]
    y = [str(int(n)) for n in values.index]
    shown = tradeoffs.relative_to_best(values) if relative else values
    best = tradeoffs.best_per_n(values) if relative else pd.Series(dtype="int64")
    text = []
    for n, row in shown.iterrows():
        cells = []
        for w, v in row.items():
            if pd.isna(v):
                cells.append(grid.status.at[n, w] or "no value")
            elif relative:
                cells.append(f"{v:.2f}x {BEST_MARK}" if best.get(n) == w else f"{v:.2f}x")
            else:
                cells.append(format(v, fmt))
        text.append(cells)
    absolute = values.to_numpy(dtype=float)
    z = shown.to_numpy(dtype=float)
    empty = values.isna().to_numpy()
    colorbar = "x best at N" if relative else unit
    hover = f"N=%{{y}}<br>num_warps=%{{x}}<br>%{{z:.4g}} {unit}<extra></extra>"
    if relative:
        hover = (
            f"N=%{{y}}<br>num_warps=%{{x}}<br>%{{customdata:.4g}} {unit}<br>%{{z:.3f}}x the fastest num_warps "
            "at this N<extra></extra>"
        )
    # plotly writes a heatmap's text into every cell, null z or not: each trace gets only its own cells' text
    fig = go.Figure(
        go.Heatmap(
            z=[[None if e else v for v, e in zip(r, er, strict=True)] for r, er in zip(z, empty, strict=True)],
            x=x,
            y=y,
            customdata=absolute,
            text=[[("" if e else t) for t, e in zip(r, er, strict=True)] for r, er in zip(text, empty, strict=True)],
            texttemplate="%{text}",
            colorscale="Viridis",
            reversescale=reverse or relative,
            name="measured",
            colorbar={"title": {"text": colorbar}},
            hovertemplate=hover,
            hoverongaps=False,
            **({"zmin": 1.0} if relative else {}),
        )
    )
    if empty.any():
        reasons = [[(grid.reason.at[n, w] or grid.status.at[n, w])[:160] for w in values.columns] for n in values.index]
        fig.add_trace(
            go.Heatmap(
                z=[[0.0 if e else None for e in r] for r in empty],
                x=x,
                y=y,
                text=[
                    [(t if e else "") for t, e in zip(r, er, strict=True)] for r, er in zip(text, empty, strict=True)
                ],
                texttemplate="%{text}",
                textfont={"color": "#555555", "size": 11},
                customdata=reasons,
                showscale=False,
                colorscale=[[0, MISSING_COLOR], [1, MISSING_COLOR]],
                name="empty cells",
                hoverongaps=False,
                hovertemplate="N=%{y}<br>num_warps=%{x}<br>%{customdata}<extra></extra>",
            )
        )
    if len(best):  # an outline around each N's best cell (category i spans i - 0.5 .. i + 0.5)
        outline = {"color": "#d62728", "width": 3}
        fig.update_layout(
            shapes=[
                {
                    "type": "rect",
                    "xref": "x",
                    "yref": "y",
                    "x0": x.index(str(int(w))) - 0.5,
                    "x1": x.index(str(int(w))) + 0.5,
                    "y0": y.index(str(int(n))) - 0.5,
                    "y1": y.index(str(int(n))) + 0.5,
                    "line": outline,
                    "name": f"best {int(n)}",
                }
                for n, w in best.items()
            ]
        )
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                name=f"{BEST_MARK} fastest num_warps at this N",
                hoverinfo="skip",
                marker={"symbol": "square-open", "size": 14, "color": "#d62728", "line": {"width": 3}},
            )
        )
    _layout(
        fig,
        title,
        "num_warps (warps per program)",
        "N (columns per row)",
        log_x=False,
        height=max(320, 26 * len(values) + 140),
    )
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=x)
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=y)
    fig.update_layout(legend={"orientation": "h", "x": 1, "xanchor": "right", "y": 1.0, "yanchor": "bottom"})
    return fig


def persistent_programs_figure(df: pd.DataFrame, dtype: str) -> go.Figure:
    """Persistent variant: programs launched vs N per num_warps against the SM count (programs = SMs x blocks/SM)."""
    table = df[(df["variant"] == "persistent") & (df["dtype"] == dtype) & df["programs"].notna()]
    table = table.drop_duplicates(["n_cols", "num_warps", "tunables"])
    fig = go.Figure()
    grid = _grid(table)
    for i, (w, rows) in enumerate(table.groupby("num_warps")):
        rows = rows.sort_values("programs").drop_duplicates("n_cols")  # one config per N (fewest programs)
        add_series(
            fig,
            rows,
            "programs",
            grid,
            f"{int(w)} warps",
            ("#1b9e77", "#d95f02", "#7570b3", "#e7298a")[i % 4],
            hovertext=_hover(rows),
        )
    add_edge_legend(fig, grid)
    for sm in sorted(df["sm_count"].dropna().unique()):
        fig.add_hline(
            y=int(sm),
            line={"color": "#d62728", "dash": "dash"},
            name="SM count",
            annotation_text=f"{int(sm)} SMs",
            annotation_position="bottom left",
        )
    _layout(
        fig,
        title_for("persistent: programs launched vs N (SMs x blocks per SM)", df, dtype),
        "N (columns per row)",
        "programs launched",
    )
    if len(table):
        add_pow2_lines(fig, int(table["n_cols"].min()), int(table["n_cols"].max()))
    return fig


def occupancy_vs_n_figure(df: pd.DataFrame, dtype: str, variants: list[str] | None = None) -> go.Figure:
    """Theoretical occupancy (%) vs N per variant, one dash per num_warps (compile columns); `variants` limits the
    series (the export draws one figure per variant group so its legend stays readable)."""
    table = df[(df["dtype"] == dtype) & df["occupancy"].notna() & (df["variant"] != dd.TORCH)]
    if variants is not None:
        table = table[table["variant"].isin(variants)]
    table = table.drop_duplicates(["variant", "n_cols", "num_warps", "tunables"])
    fig = go.Figure()
    warps = sorted(int(w) for w in table["num_warps"].dropna().unique())
    table = dd.with_setup(table)  # several GPUs: one line each (their archs differ)
    setup = [dd.SETUP] if dd.SETUP in table.columns else []
    grid = _grid(table)
    for key, rows in table.groupby(["variant", "num_warps", *setup]):
        variant, w, *where = key
        rows = rows.groupby("n_cols", as_index=False)["occupancy"].min()
        add_series(
            fig,
            rows,
            "occupancy",
            grid,
            " · ".join([f"{variant} {int(w)}w", *where]),
            variant_color(variant),
            dash=DASHES[warps.index(int(w)) % 5],
            scale=100,
            marker_size=4,
            hovertemplate=f"{variant} num_warps={int(w)}<br>N=%{{x}}<br>occupancy=%{{y:.1f}}%<extra></extra>",
        )
    add_edge_legend(fig, grid)
    which = f" ({', '.join(variants)})" if variants else ""
    _layout(
        fig,
        title_for(f"Theoretical occupancy vs N{which}", df, dtype),
        "N (columns per row)",
        "occupancy (% of max warps per SM)",
    )
    fig.update_yaxes(range=[0, 105])
    if len(table):
        add_pow2_lines(fig, int(table["n_cols"].min()), int(table["n_cols"].max()))
    fit_legend(fig)
    return fig


def legend_entries(fig: go.Figure) -> int:
    """How many entries the figure's legend shows (legend group titles count as one more each)."""
    shown = [t for t in fig.data if t.showlegend is not False and t.name]
    titles = {t.legendgroup for t in shown if t.legendgrouptitle and t.legendgrouptitle.text}
    return len(shown) + len(titles)


LEGEND_ROW_PX = 30  # one legend entry in CSS pixels: a 19 px row + the 10 px gap between legend groups


def fit_legend(fig: go.Figure) -> go.Figure:
    """Make the figure tall enough for its vertical legend (plotly cuts a legend taller than the plot off in a
    static image: no scrollbar there), keeping the plot area at least as tall as before."""
    needed = legend_entries(fig) * LEGEND_ROW_PX + 40
    margin = fig.layout.margin
    plot = (fig.layout.height or 450) - (margin.t or 0) - (margin.b or 0)
    if needed > plot:
        fig.update_layout(height=int(needed + (margin.t or 0) + (margin.b or 0)))
    return fig


def ncu_figure(ncu: pd.DataFrame) -> go.Figure:
    """Nsight Compute: theoretical vs achieved occupancy (%) and DRAM throughput (% of peak) per config."""
    table = ncu.dropna(subset=["theoretical_occupancy_pct", "achieved_occupancy_pct"])
    labels = [f"{r.variant} {r.dtype} N={r.n_cols} w={getattr(r, 'num_warps', '?')}" for r in table.itertuples()]
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=("theoretical vs achieved occupancy (%)", "DRAM throughput (% of peak) vs achieved occupancy"),
    )
    for variant in table["variant"].unique():
        mask = (table["variant"] == variant).to_numpy()
        rows = table[mask]
        text = [t for t, m in zip(labels, mask, strict=True) if m]
        marker = {"color": variant_color(variant), "size": 9}
        fig.add_trace(
            go.Scatter(
                x=rows["theoretical_occupancy_pct"],
                y=rows["achieved_occupancy_pct"],
                mode="markers",
                name=variant,
                marker=marker,
                hovertext=text,
                hoverinfo="text+x+y",
                legendgroup=variant,
            ),
            row=1,
            col=1,
        )
        if "dram_pct" in rows:
            fig.add_trace(
                go.Scatter(
                    x=rows["achieved_occupancy_pct"],
                    y=rows["dram_pct"],
                    mode="markers",
                    name=variant,
                    marker=marker,
                    hovertext=text,
                    hoverinfo="text+x+y",
                    legendgroup=variant,
                    showlegend=False,
                ),
                row=1,
                col=2,
            )
    fig.add_trace(
        go.Scatter(
            x=[0, 100],
            y=[0, 100],
            mode="lines",
            line={"color": "#999", "dash": "dot"},
            name="achieved = theoretical",
            showlegend=False,
        ),
        row=1,
        col=1,
    )
    _layout(fig, "Nsight Compute validation: occupancy and DRAM throughput", "", "", log_x=False, height=420)
    fig.update_xaxes(title_text="theoretical occupancy (%)", row=1, col=1, range=[0, 105])
    fig.update_yaxes(title_text="achieved occupancy (%)", row=1, col=1, range=[0, 105])
    fig.update_xaxes(title_text="achieved occupancy (%)", row=1, col=2, range=[0, 105])
    fig.update_yaxes(title_text="DRAM throughput (% of peak)", row=1, col=2, range=[0, 105])
    return fig


def first_call_figure(table: pd.DataFrame, df: pd.DataFrame, method: str) -> go.Figure:
    """First call (JIT compile + launch, seconds, log) vs N per variant; hover has the steady-state median."""
    rows_m = table[table["method"] == method]
    fig = go.Figure()
    for variant, rows in rows_m.groupby("variant"):
        hover = [
            f"{dd.config_label(r)}<br>first call = {r['first_call_s']:.3g} s<br>steady = "
            f"{r['median_us']:.3g} µs<br>ratio = {r['first_over_steady']:,.0f}x"
            for _, r in rows.iterrows()
        ]
        fig.add_trace(
            go.Scatter(
                x=rows["n_cols"],
                y=rows["first_call_s"],
                mode="markers",
                name=variant,
                marker={"color": variant_color(variant), "size": 7, "opacity": 0.8},
                hovertext=hover,
                hoverinfo="text",
            )
        )
    _layout(
        fig,
        title_for("First call (JIT compile + launch) vs N", df, method=method),
        "N (columns per row)",
        "first call (s)",
        log_y=True,
    )
    if len(rows_m):
        add_pow2_lines(fig, int(rows_m["n_cols"].min()), int(rows_m["n_cols"].max()))
    return fig


def ratio_figure(table: pd.DataFrame, label_a: str, label_b: str, dtype: str, method: str) -> go.Figure:
    """Run B / run A time ratio (x, log) vs N per variant from compare.ratio_table (one row per variant and N:
    the 'fastest config per variant' mode), error bars from the p20..p80 spreads; 1 = no change."""
    part = table[(table["dtype"] == dtype) & (table["method"] == method)] if len(table) else table
    grid = _grid(part)
    fig = go.Figure()
    # one series per variant where each N has one R (the sweep's tiny N run at more rows), else per (variant, R)
    several_r = bool(len(part)) and not dd.one_r_per_n(part)
    keys = ["variant", "n_rows"] if several_r else ["variant"]
    for key, rows in part.groupby(keys) if len(part) else []:
        variant, n_rows = (key[0], key[1]) if several_r else (key[0], None)
        rows = rows.sort_values("n_cols").drop_duplicates("n_cols")
        hover = [
            f"{variant} {dtype} R={r.n_rows} N={r.n_cols}<br>A {r.a_us:.4g} µs, B {r.b_us:.4g} µs<br>"
            f"B/A = {r.ratio:.3f} (spread {r.ratio_low:.3f}..{r.ratio_high:.3f}): {r.change}"
            for r in rows.itertuples()
        ]
        add_series(
            fig,
            rows,
            "ratio",
            grid,
            f"{variant} R={n_rows}" if several_r else variant,
            variant_color(variant),
            hovertext=hover,
            error=("ratio_low", "ratio_high"),
        )
    add_edge_legend(fig, grid)
    fig.add_hline(y=1.0, line={"color": "#3b3b3b", "width": 1.5}, name="no change")
    fig.add_annotation(
        x=1,
        xref="x domain",
        y=0,
        yref="y",
        text="B = A",
        showarrow=False,
        xanchor="right",
        yanchor="bottom",
        font={"size": 11},
    )
    _layout(
        fig,
        f"Run B / run A time per call (fastest config per variant) — {dtype}, timing: {method}<br>"
        f"<sup>A: {label_a} · B: {label_b} · > 1: B slower</sup>",
        "N (columns per row)",
        "B / A median time (x)",
        log_y=True,
    )
    ratios = (
        [v for c in ("ratio", "ratio_low", "ratio_high") for v in part[c].astype(float) if v > 0] if len(part) else []
    )
    if ratios:  # a range that always shows the 1 line and every ratio with its spread, ticks written out
        low, high = min(min(ratios), 1.0) / 1.05, max(max(ratios), 1.0) * 1.05
        ticks = [t for t in (0.25, 0.5, 0.67, 0.8, 0.9, 0.95, 1, 1.05, 1.1, 1.25, 1.5, 2, 3, 4) if low <= t <= high]
        fig.update_yaxes(
            range=[math.log10(low), math.log10(high)],
            tickmode="array",
            tickvals=ticks,
            ticktext=[f"{t:g}x" for t in ticks],
        )
        fig.update_layout(margin={"t": 70})
    if len(part):
        add_pow2_lines(fig, int(part["n_cols"].min()), int(part["n_cols"].max()))
    fit_legend(fig)
    return fig


def candidates_figure(candidates: pd.DataFrame, title: str) -> go.Figure:
    """The tuner's candidates for one shape (tuning_view.candidates): median µs per config, fastest at the top,
    auto's pick in red, torch.softmax dark grey, a tie-break's CUDA-graph us beside the tied configs and ': kept' on
    the one it kept; failed candidates are left out (their table says why)."""
    ran = candidates[candidates["median_us"].notna()].iloc[::-1]
    labels = [f"{v} {t}" if t != "{}" else v for v, t in zip(ran["variant"], ran["tunables"], strict=True)]
    colors = [
        "#d62728" if picked else VARIANT_COLORS["torch"] if v == dd.TORCH else _alpha(variant_color(v), 0.55)
        for v, picked in zip(ran["variant"], ran["picked"], strict=True)
    ]
    fig = go.Figure(
        go.Bar(
            x=ran["median_us"].astype(float),
            y=labels,
            orientation="h",
            marker_color=colors,
            text=[
                f"{t:.2f} µs ({r:.2f}x)"
                + (f", replay {b:.2f} µs" if math.isfinite(b) else "")
                + (": kept" if kept else "")
                for t, r, b, kept in zip(
                    ran["median_us"], ran["vs_fastest"], ran["tiebreak_us"], ran["chosen"], strict=True
                )
            ],
            textposition="outside",
            name="candidates",
            hovertemplate="%{y}<br>%{x:.3f} µs<extra></extra>",
        )
    )
    _layout(fig, title, "median time per call (µs)", "", log_x=False, height=max(260, 22 * len(ran) + 110))
    fig.update_layout(showlegend=False, margin={"l": 20})
    fig.update_yaxes(type="category", automargin=True)
    fig.update_xaxes(range=[0, float(ran["median_us"].max()) * 1.3] if len(ran) else None)
    return fig


EXPORT_WIDTH_PX = 1100  # CSS pixels of an exported figure (images.DEFAULT_WIDTH_PX)
FOOTER_LINE_PX = 14


def for_export(fig: go.Figure, footer: str, width: int = EXPORT_WIDTH_PX) -> go.Figure:
    """A copy of `fig` laid out for a static image: tall enough for its whole legend (fit_legend: a static image
    has no legend scrollbar, so a taller legend would be cut) and `footer` (provenance) in small grey type under
    the plot, the figure growing by the footer's lines."""
    out = fit_legend(go.Figure(fig))
    lines = footer.split(" | ") if footer else []
    if not lines:
        return out.update_layout(width=width)
    footer_px = len(lines) * FOOTER_LINE_PX + 12
    height = int(out.layout.height or 440)
    top = int(out.layout.margin.t if out.layout.margin.t is not None else 50)
    bottom = int(out.layout.margin.b if out.layout.margin.b is not None else 50)
    new_height, new_bottom = height + footer_px, bottom + footer_px
    out.update_layout(width=width, height=new_height, margin={"b": new_bottom})
    plot_px = max(1, new_height - top - new_bottom)
    out.add_annotation(
        text="<br>".join(html.escape(line) for line in lines),
        xref="paper",
        yref="paper",
        x=0,
        y=-(new_bottom - 4) / plot_px,
        xanchor="left",
        yanchor="bottom",
        align="left",
        showarrow=False,
        font={"size": 10, "color": "#6b6b6b"},
    )
    return out


def standard_figures(
    df: pd.DataFrame,
    method: str | None = None,
    dtypes: list[str] | None = None,
    backends: pd.DataFrame | None = None,
    numerics: pd.DataFrame | None = None,
    warps_grid: pd.DataFrame | None = None,
    fused: pd.DataFrame | None = None,
) -> list[FigureSpec]:
    """The export set, a figure for what every page draws: the Overview's speedup, masked lanes, and per dtype
    latency, speedup vs torch and GB/s (Latency), occupancy vs N and the occupancy limits (Occupancy), the
    num_warps x N heatmaps (Tradeoffs: from `warps_grid` when `df` times each variant at one num_warps), the
    backends' time, relative time, GB/s and support (Backends: from `backends` when given), and ULP vs N and the
    exp probes (Numerics: from `numerics` when given, else `df`'s numerics rows), and the fused ops' time vs L per
    op, case and dtype (Backends' Fused ops: from `fused`, a views.fused table, when given)."""
    opts = dd.options(df)
    methods = opts["methods"]
    method = method or (dd.DEFAULT_METHOD if dd.DEFAULT_METHOD in methods else methods[0] if methods else "cuda_graph")
    dtypes = dtypes or opts["dtypes"]
    specs: list[FigureSpec] = []
    triton = [v for v in opts["variants"] if v != dd.TORCH]
    if triton:  # registered variants only: other names (peer backends, older files) have no lane plan
        lane_dtype = dtypes[0] if len(dtypes) == 1 else "fp16"  # one dtype asked for: its layouts
        curve = dd.lane_curve(
            [v for v in triton if v != "auto"] or triton,
            lane_n_values(
                opts["n_values"][0] if opts["n_values"] else 128, opts["n_values"][-1] if opts["n_values"] else 65536
            ),
            dtype=lane_dtype,
        )
        if len(curve):
            fig = masked_lanes_figure(curve, lane_dtype)
            specs.append(FigureSpec("masked_lanes", fig.layout.title.text, fig, curve))
    for dtype in dtypes:
        part = df[(df["dtype"] == dtype) & (df["method"] == method)]
        spans = dd.regime_spans(dd.regimes(part))
        best = dd.best_per_n(part)
        drawn = {"shown": dd.default_series(best) or None, "edge_markers": False}  # as the Latency page draws them
        for name, fig, data in (
            ("latency", latency_figure(df, method, dtype, spans, **drawn), best),
            (
                "speedup",
                speedup_figure(dd.speedup_vs_torch(part), df, method, dtype, **drawn),
                dd.speedup_vs_torch(part),
            ),
            ("bandwidth", bandwidth_figure(df, method, dtype, **drawn), best),
        ):
            specs.append(FigureSpec(safe_name(name, dtype, method), fig.layout.title.text, fig, data))
        occupancy = df[(df["dtype"] == dtype) & df["occupancy"].notna() & (df["variant"] != dd.TORCH)]
        for group in occupancy_groups(occupancy):  # a legend that fits: at most MAX_SERIES lines per figure
            fig = occupancy_vs_n_figure(df, dtype, variants=group)
            data = occupancy[occupancy["variant"].isin(group)]
            suffix = group if len(group) < len(set(occupancy["variant"])) else []
            specs.append(FigureSpec(safe_name("occupancy", *suffix, dtype, method), fig.layout.title.text, fig, data))
        heat_source = part
        if warps_grid is not None and not tradeoffs.warps_axis_variants(part):  # as the Tradeoffs page does
            heat_source = warps_grid[(warps_grid["dtype"] == dtype) & (warps_grid["method"] == method)]
        for variant in tradeoffs.warps_axis_variants(heat_source):
            for setup, rows in dd.split_setups(heat_source[heat_source["variant"] == variant]):  # one per GPU / run
                grid = tradeoffs.keep_dense(tradeoffs.warps_grid(rows, "median_us"))
                if not grid.empty:
                    title = title_for(f"{variant}: time relative to the fastest num_warps per N", rows, dtype, method)
                    title += f" ({setup})" if setup else ""
                    specs.append(
                        FigureSpec(
                            safe_name("heatmap", variant, *([setup] if setup else []), dtype, method),
                            title,
                            tradeoff_heatmap_figure(grid, title, "µs", relative=True),
                            tradeoffs.grid_table(grid, "µs", relative=True),
                        )
                    )
        if dtype == dtypes[0]:  # one dtype: the limits depend on registers and warps, much the same across dtypes
            specs.extend(_limits_specs(part, dtype, method))
    specs[:0] = _overview_specs(df, method)
    specs.extend(_backends_specs(backends if backends is not None else df, method, dtypes))
    specs.extend(_numerics_specs(numerics if numerics is not None else df, dtypes))
    if fused is not None and len(fused):
        specs.extend(_fused_specs(fused, method))
    return unique_names(specs)


def _fused_specs(table: pd.DataFrame, method: str) -> list[FigureSpec]:
    """Time vs L per backend for every (op, case, dtype) of a fused-op table (views.fused), at `method` when it
    has rows of it, else at its first method (as the Backends page falls back)."""
    from blockscope.profiling.views import fused
    from blockscope.profiling.views.figures.fused import fused_time_figure

    present = fused.methods(table)
    if not present:
        return []
    method = method if method in present else present[0]
    short = {name: key for key, name in fused.DTYPE_NAMES.items()}  # float16 -> fp16, as every other file name
    specs = []
    for (op, case, dtype), _ in table.groupby(["op", "case", "dtype"], sort=True):
        curve = fused.curve(table, method, op, case, dtype)
        if curve.empty:
            continue
        fig = fused_time_figure(curve, op, case, short.get(dtype, dtype), method)
        name = safe_name("fused", op, case, short.get(dtype, dtype), method)
        specs.append(FigureSpec(name, fig.layout.title.text, fig, curve))
    return specs


def _overview_specs(df: pd.DataFrame, method: str) -> list[FigureSpec]:
    speedups = dd.speedup_vs_torch(df[df["method"] == method], ours_only=True)
    if speedups.empty:
        return []
    fig = best_speedup_figure(speedups, df, method)
    return [FigureSpec(safe_name("overview_speedup", method), fig.layout.title.text, fig, speedups)]


def _limits_specs(part: pd.DataFrame, dtype: str, method: str) -> list[FigureSpec]:
    """Per Blockscope variant, the occupancy limits of its fastest config at the N nearest 4096 (the resources that
    cap its programs per SM), from the rows' compile columns."""
    from blockscope.profiling.inspect import occupancy

    specs = []
    rows = dd.ran(part).dropna(subset=["n_regs", "num_warps"])
    rows = rows[~rows["variant"].isin(dd.PEER_BACKENDS)]
    for variant, of_variant in rows.groupby("variant"):
        n = min(of_variant["n_cols"].unique(), key=lambda v: abs(int(v) - 4096))
        best = of_variant[of_variant["n_cols"] == n].sort_values("median_us").iloc[0]
        arch = dd.data_arch(of_variant)
        try:
            result = occupancy.occupancy(
                arch, int(best["n_regs"]), int(best["num_warps"]), int(best["shared_bytes"] or 0)
            )
        except (ValueError, TypeError):
            continue
        title = title_for(
            f"{variant} N={int(n):,}, {int(best['num_warps'])} warps, {int(best['n_regs'])} regs: "
            f"blocks per SM each resource allows ({arch})",
            of_variant,
            dtype,
        )
        table = pd.DataFrame({"resource": list(result.limits), "blocks_per_sm": list(result.limits.values())})
        specs.append(
            FigureSpec(
                safe_name("occupancy_limits", variant, dtype, method),
                title,
                limits_figure(result.limits, result.limiter, title),
                table,
            )
        )
    return specs


def _backends_specs(df: pd.DataFrame, method: str, dtypes: list[str]) -> list[FigureSpec]:
    from blockscope.profiling.views import backends as views
    from blockscope.profiling.views.figures import backends as bf

    if not views.has_peers(df):
        return []
    specs = []
    support = views.support(df)
    for dtype in dtypes:
        table = views.fastest(df, method, dtype)
        if table.empty:
            continue
        for name, fig in (
            ("backends_latency", bf.latency_figure(table, df, method, dtype)),
            ("backends_relative", bf.relative_figure(table, df, method, dtype)),
            ("backends_bandwidth", bf.bandwidth_figure(table, df, method, dtype)),
        ):
            specs.append(FigureSpec(safe_name(name, dtype, method), fig.layout.title.text, fig, table))
        fig = bf.support_figure(support, dtype)
        specs.append(
            FigureSpec(
                safe_name("backends_support", dtype), fig.layout.title.text, fig, support[support["dtype"] == dtype]
            )
        )
    return specs


def _numerics_specs(df: pd.DataFrame, dtypes: list[str]) -> list[FigureSpec]:
    from blockscope.profiling.views.figures import numerics as fn

    rows = fn.numerics_rows(df)
    if rows.empty:
        return []
    platform = ", ".join(sorted(str(g) for g in rows["gpu_name"].dropna().unique())) or "unknown GPU"
    specs = []
    probes = ("probe_exp", "probe_exp2", "probe_fp64")
    for dtype in dtypes or sorted(rows["dtype"].dropna().unique()):
        of_dtype = rows[rows["dtype"] == dtype]
        if of_dtype.empty:
            continue
        for input_name in ("normal", "scale30"):
            part = of_dtype[(of_dtype["numerics_input"] == input_name) & ~of_dtype["variant"].isin(probes)]
            if len(part):
                fig = fn.ulp_vs_n_figure(of_dtype[~of_dtype["variant"].isin(probes)], dtype, input_name, platform)
                specs.append(FigureSpec(safe_name("numerics_ulp", input_name, dtype), fig.layout.title.text, fig, part))
        probe_rows = of_dtype[of_dtype["variant"].isin(probes)]
        if len(probe_rows):
            fig = fn.exp_probe_figure(probe_rows, dtype, platform)
            specs.append(FigureSpec(safe_name("numerics_exp_probe", dtype), fig.layout.title.text, fig, probe_rows))
    return specs


MAX_SERIES = 12  # lines per exported figure: more and the legend (and the colours) stop being readable


def occupancy_groups(table: pd.DataFrame, max_series: int = MAX_SERIES) -> list[list[str]]:
    """Variants of `table` grouped so each group's (variant, num_warps, GPU / run) lines number at most
    `max_series` (a variant with more lines gets a figure of its own); one group when all fit."""
    table = dd.with_setup(table)
    keys = ["variant", "num_warps", *([dd.SETUP] if dd.SETUP in table.columns else [])]
    counts = table.drop_duplicates(keys).groupby("variant").size()
    groups: list[list[str]] = []
    lines = 0
    for variant in sorted(counts.index, key=lambda v: (v != dd.TORCH, v)):
        if groups and lines + counts[variant] <= max_series:
            groups[-1].append(variant)
            lines += counts[variant]
        else:
            groups.append([variant])
            lines = counts[variant]
    return groups


def unique_names(specs: list[FigureSpec]) -> list[FigureSpec]:
    """Specs whose names collide after safe_name ('a/b' and 'a_b') get '-2', '-3', ... so no file overwrites another."""
    seen: set[str] = set()
    for spec in specs:
        name, k = spec.name, 1
        while name.lower() in seen:  # case-insensitive file systems too
            k += 1
            name = f"{spec.name}-{k}"
        seen.add(name.lower())
        spec.name = name
    return specs


def lane_n_values(n_min: int, n_max: int, per_octave: int = 24) -> list[int]:
    """A dense N grid (log spaced, plus each power of two and its +1) for sawtooth lane curves."""
    n_min, n_max = max(1, int(n_min)), max(1, int(n_max))
    values = {n_min, n_max}
    k = math.log2(n_min)
    while 2**k <= n_max:
        values.add(int(round(2**k)))
        k += 1 / per_octave
    for p in dd.power_of_two_boundaries(n_min, n_max):
        values.update((p, p + 1))
    return sorted(v for v in values if n_min <= v <= n_max)
