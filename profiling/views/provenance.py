"""Provenance of an exported figure or report: where its data came from and what exported it.

`data_line(df)`: GPU(s), driver, torch and Triton versions, run ids and measurement dates of the rows;
`exporter_line()`: Blockscope's version, the git commit of a checkout (or 'installed'), and the export date (UTC);
`footer(df)`: both, for the bottom of a figure or report. Values from files are cleaned of control characters.
"""

from __future__ import annotations

import datetime as _dt
import functools
import re

import pandas as pd

from blockscope import __version__, paths

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
MAX_LISTED = 3  # values listed per field before '+N more'


def _values(df: pd.DataFrame, column: str) -> list[str]:
    if column not in df.columns:
        return []
    return sorted({_CONTROL.sub(" ", str(v)).strip() for v in df[column].dropna().unique()} - {"", "none", "nan"})


def _listed(values: list[str]) -> str:
    shown = ", ".join(values[:MAX_LISTED])
    return shown + (f" +{len(values) - MAX_LISTED} more" if len(values) > MAX_LISTED else "") if values else "?"


def data_line(df: pd.DataFrame) -> str:
    """'data: NVIDIA H200 · driver 580.1 · torch 2.11.0 · Triton 3.6.0 · run 2026...-55ff · measured 2026-12-03'."""
    dates = sorted({d[:10] for d in _values(df, "measured_at")})
    measured = dates[0] if len(dates) == 1 else f"{dates[0]} .. {dates[-1]}" if dates else "?"
    return (
        f"data: {_listed(_values(df, 'gpu_name'))} · driver {_listed(_values(df, 'driver_version'))} · "
        f"torch {_listed(_values(df, 'torch_version'))} · Triton {_listed(_values(df, 'triton_version'))} · "
        f"run {_listed(_values(df, 'run_id'))} · measured {measured}"
    )


@functools.cache
def commit() -> str:
    """The checkout's git commit (12 hex digits, read from .git without running git), or 'installed'."""
    git = paths.IMPORT_ROOT / ".git"
    try:
        head = (git / "HEAD").read_text(encoding="utf-8").strip()
        if head.startswith("ref: "):
            ref = head[5:]
            path = git / ref
            if path.is_file():
                return path.read_text(encoding="utf-8").strip()[:12]
            packed = (git / "packed-refs").read_text(encoding="utf-8")
            for line in packed.splitlines():
                if line.endswith(" " + ref):
                    return line.split()[0][:12]
            return "unknown"
        return head[:12]
    except (OSError, UnicodeDecodeError, NotADirectoryError):
        return "installed"


def exporter_line(now: _dt.datetime | None = None) -> str:
    """'exported by Blockscope 0.2.0 (commit 0123456789ab) on 2026-12-04 02:30 UTC'."""
    now = now or _dt.datetime.now(_dt.UTC)
    return f"exported by Blockscope {__version__} (commit {commit()}) on {now:%Y-%m-%d %H:%M} UTC"


def footer(df: pd.DataFrame | None, now: _dt.datetime | None = None) -> str:
    """The provenance footer: the data line (when there is data) and the exporter line."""
    parts = [data_line(df)] if df is not None and len(df) else []
    return " | ".join([*parts, exporter_line(now)])
