"""Per-chart download buttons: PNG (2x), SVG and CSV of one figure. Rendering only; images come from
blockscope.profiling.views.images (kaleido + Debian Chromium), computed when a button is clicked and cached."""

from __future__ import annotations

import functools

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
import streamlit as st

from blockscope.profiling.views import images, provenance
from blockscope.profiling.views.figures import for_export


@functools.lru_cache(maxsize=64)
def _image(fig_json: str, fmt: str) -> bytes:
    """PNG (2x) or SVG bytes of a figure given as plotly JSON (the cache key)."""
    fig = pio.from_json(fig_json, skip_invalid=True)
    return images.figure_to_png(fig, scale=2) if fmt == "png" else images.figure_to_svg(fig)


def _csv(data: pd.DataFrame) -> bytes:
    from blockscope.profiling.views.export import safe_csv

    return safe_csv(data).encode("utf-8")


def export_buttons(
    fig: go.Figure, data: pd.DataFrame | None, name: str, key: str, source: pd.DataFrame | None = None
) -> None:
    """PNG (2x), SVG and CSV download buttons for one chart (file names `<name>.png` ...; keys `<key>_png` ...).

    PNG/SVG are rendered only when clicked (then cached), with the whole legend and a provenance footer of the
    loaded rows `source` (figures.for_export); without Chromium a caption says why and only the CSV is offered.
    """
    problem = images.chromium_problem()
    fig = for_export(fig, provenance.footer(source))
    left, middle, right = st.columns(3)
    if problem is None:
        left.download_button(
            "PNG (2x)",
            data=lambda: _image(fig.to_json(), "png"),
            file_name=f"{name}.png",
            mime="image/png",
            key=f"{key}_png",
            on_click="ignore",
            icon=":material/image:",
        )
        middle.download_button(
            "SVG",
            data=lambda: _image(fig.to_json(), "svg"),
            file_name=f"{name}.svg",
            mime="image/svg+xml",
            key=f"{key}_svg",
            on_click="ignore",
            icon=":material/draw:",
        )
    table = data if data is not None else pd.DataFrame()
    right.download_button(
        "CSV",
        data=lambda: _csv(table),
        file_name=f"{name}.csv",
        mime="text/csv",
        key=f"{key}_csv",
        on_click="ignore",
        icon=":material/table:",
    )
    if problem is not None:
        st.caption(f"PNG/SVG downloads unavailable: {problem}.")
