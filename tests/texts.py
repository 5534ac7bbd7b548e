"""What a user reads in an element whose markdown source escapes file values (views.dashboard_data.md)."""

from __future__ import annotations

import re


def plain(markdown: str) -> str:
    """`markdown` with its backslash escapes removed: 'broken\\.parquet' -> 'broken.parquet'."""
    return re.sub(r"\\(.)", r"\1", str(markdown))
