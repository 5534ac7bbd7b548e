"""A Proton tree profile (`.hatchet` JSON) as a table: one row per node, depth-first, with its path and metrics.

Proton's tree file is a JSON list: element 0 the root node `{"frame": {"name", "type"}, "metrics": {...},
"children": [...]}`, element 1 (optional) device info. `hatchet_table` gives depth, name, path ('ROOT/scope/
kernel'), type, count, time_ns (the node's own metric: kernels carry it), inclusive_time_ns (its own time, else the
sum of its children's: scopes), avg_time_ns (time / count), pct_of_root (inclusive, % of the root's), and every other
numeric metric as a column (bytes, flops*, cycles, ...). Files are untrusted: size, node count and depth are
bounded and anything else is a HatchetError (a ValueError) with one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from blockscope.profiling.results.bounded import load_json

MAX_HATCHET_BYTES = 64 * 1024 * 1024
MAX_NODES = 200_000
MAX_DEPTH = 256
BASE_COLUMNS = ("depth", "name", "path", "type", "count", "time_ns", "inclusive_time_ns", "avg_time_ns", "pct_of_root")


class HatchetError(ValueError):
    """Not a readable Proton tree profile; the message is one line."""


def _load(source: str | Path | bytes, label: str) -> Any:
    return load_json(source, label, MAX_HATCHET_BYTES, HatchetError, "a Proton .hatchet file")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def hatchet_table(source: str | Path | bytes, name: str | None = None) -> pd.DataFrame:
    """Rows of the tree in depth-first order (BASE_COLUMNS + other numeric metrics); HatchetError when bad."""
    label = name or (str(source) if isinstance(source, str | Path) else "hatchet")
    data = _load(source, label)
    root = data[0] if isinstance(data, list) and data else data
    if not isinstance(root, dict) or "frame" not in root:
        raise HatchetError(f"{label}: no tree (element 0 needs 'frame', 'metrics', 'children'); allowed: Proton tree")
    rows: list[dict[str, Any]] = []
    stack: list[tuple[dict, int, str, int]] = [(root, 0, "", -1)]
    parents: list[int] = []
    while stack:
        node, depth, parent, parent_row = stack.pop()
        if len(rows) >= MAX_NODES:
            raise HatchetError(f"{label}: more than {MAX_NODES} nodes; allowed: a smaller profile")
        if depth > MAX_DEPTH:
            raise HatchetError(f"{label}: deeper than {MAX_DEPTH} levels; allowed: a Proton tree profile")
        if not isinstance(node, dict):
            raise HatchetError(f"{label}: a node under {parent or 'the root'} is not an object")
        frame = node.get("frame") if isinstance(node.get("frame"), dict) else {}
        node_name = str(frame.get("name", "?"))
        path = f"{parent}/{node_name}" if parent else node_name
        metrics = node.get("metrics") if isinstance(node.get("metrics"), dict) else {}
        row: dict[str, Any] = {"depth": depth, "name": node_name, "path": path, "type": str(frame.get("type", ""))}
        for key, value in metrics.items():
            number = _number(value)
            if number is None:
                continue
            column = {"count": "count", "time (ns)": "time_ns"}.get(str(key), str(key))
            row[column] = number
        rows.append(row)
        parents.append(parent_row)
        children = node.get("children", [])
        if not isinstance(children, list):
            raise HatchetError(f"{label}: 'children' of {path} is not a list")
        for child in reversed(children):
            stack.append((child, depth + 1, path, len(rows) - 1))
    table = pd.DataFrame(rows)
    for column in ("count", "time_ns"):
        if column not in table.columns:
            table[column] = float("nan")
    inclusive = [0.0] * len(table)
    own = table["time_ns"].tolist()
    for i in range(len(table) - 1, -1, -1):  # children come after their parent in depth-first order
        if not pd.isna(own[i]):
            inclusive[i] = own[i]
        if parents[i] >= 0 and pd.isna(own[parents[i]]):
            inclusive[parents[i]] += inclusive[i]
    table["inclusive_time_ns"] = inclusive
    table["avg_time_ns"] = table["time_ns"] / table["count"].where(table["count"] > 0)
    root_time = inclusive[0]
    table["pct_of_root"] = table["inclusive_time_ns"] / root_time * 100 if root_time else float("nan")
    extra = sorted(c for c in table.columns if c not in BASE_COLUMNS)
    return table[list(BASE_COLUMNS) + extra]


def device_info(source: str | Path | bytes) -> dict[str, Any]:
    """Element 1 of the tree file (e.g. {'CUDA': {'0': {'arch': '90', 'num_sms': 132, ...}}}), {} if absent."""
    data = _load(source, str(source) if isinstance(source, str | Path) else "hatchet")
    return data[1] if isinstance(data, list) and len(data) > 1 and isinstance(data[1], dict) else {}
