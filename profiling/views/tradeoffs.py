"""The N x num_warps grids behind the Tradeoffs heatmaps: values, time relative to the best num_warps per N, the
best cell per N, and why a cell is empty. Pure pandas (no streamlit, no plotly).

A grid holds one variant, dtype and GPU / run / file (and one timing method for times). Its rows are every N the
rows hold, its columns every num_warps they hold, error rows included, so a cell the sweep skipped or could not
run is shown and says why instead of vanishing.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from blockscope import paths
from blockscope.profiling.results import PEER_BACKENDS
from blockscope.profiling.views import dashboard_data as dd

MEASURED = ""
NOT_MEASURED = "not measured"
NO_VALUE = "no value"
# an error row's label by the start of its `error` (the sweep's prefixes, docs/results-schema.md 'Error rows')
ERROR_PREFIXES: tuple[tuple[str, str], ...] = (
    ("unsupported", "unsupported"),
    ("unavailable", "unsupported"),
    ("skipped", "skipped"),
    ("wrong result", "wrong result"),
)


def error_label(error: str) -> str:
    """'unsupported' / 'skipped' / 'wrong result' / 'error' for an error row's text (profiling/views/backends.py
    row_status, without importing the backends layer and torch)."""
    text = str(error).strip()
    return next((label for prefix, label in ERROR_PREFIXES if text.startswith(prefix)), "error")


@dataclass(frozen=True)
class WarpsGrid:
    """values: N (index) x num_warps (columns), NaN where empty; status: '' where measured, else 'not measured',
    'no value' (ran but the column is missing), 'skipped', 'unsupported', 'wrong result' or 'error'; reason: the
    error text of an empty cell ('' otherwise)."""

    values: pd.DataFrame
    status: pd.DataFrame
    reason: pd.DataFrame

    @property
    def empty(self) -> bool:
        return self.values.empty or self.values.isna().all().all()


def warps_grid(rows: pd.DataFrame, value: str) -> WarpsGrid:
    """The grid of `value` (e.g. median_us, occupancy, spill_store_bytes) over every N and num_warps in `rows`
    (one variant, dtype, GPU / run / file; one method for times): the best other tunables per cell
    (dashboard_data.warps_pivot). ValueError (from warps_pivot) when `rows` mixes GPUs / runs / files."""
    if value not in rows.columns:
        raise ValueError(
            f"unknown value column {value!r}; allowed: a numeric results column such as median_us, "
            "occupancy, spill_store_bytes"
        )
    shaped = rows[rows["num_warps"].notna()]
    n_values = sorted(int(n) for n in shaped["n_cols"].unique())
    warps = sorted(int(w) for w in shaped["num_warps"].unique())
    pivot = dd.warps_pivot(shaped, value)
    values = (
        pivot.reindex(index=n_values, columns=warps)
        if len(pivot)
        else pd.DataFrame(float("nan"), index=n_values, columns=warps)
    ).astype(float)
    values.index.name, values.columns.name = "n_cols", "num_warps"
    status = pd.DataFrame(NOT_MEASURED, index=values.index, columns=values.columns, dtype=object)
    reason = pd.DataFrame("", index=values.index, columns=values.columns, dtype=object)
    errors = shaped["error"].fillna("").astype(str)
    for (n, w), cell in shaped.groupby([shaped["n_cols"].astype(int), shaped["num_warps"].astype(int)]):
        if pd.notna(values.at[n, w]):
            status.at[n, w] = MEASURED
            continue
        failed = cell[errors[cell.index] != ""]
        if len(failed) < len(cell):
            status.at[n, w] = NO_VALUE
            continue
        first = str(failed["error"].iloc[0])
        status.at[n, w] = error_label(first)
        reason.at[n, w] = first
    return WarpsGrid(values, status, reason)


def keep_dense(grid: WarpsGrid, minimum: int = 2) -> WarpsGrid:
    """Only the N with a value at `minimum` or more num_warps (the others have one default column)."""
    keep = grid.values.notna().sum(axis=1) >= minimum
    return WarpsGrid(grid.values[keep], grid.status[keep], grid.reason[keep])


def relative_to_best(values: pd.DataFrame) -> pd.DataFrame:
    """Each N's times over that N's fastest num_warps (x; exactly 1.0 at the best cell, NaN where empty)."""
    return values.div(values.min(axis=1), axis=0)


def best_per_n(values: pd.DataFrame, lowest: bool = True) -> pd.Series:
    """Per N the num_warps with the lowest (`lowest`) or highest value; N without a value are left out."""
    present = values.dropna(how="all")
    if present.empty:
        return pd.Series(dtype="int64", name="best_num_warps")
    best = present.idxmin(axis=1) if lowest else present.idxmax(axis=1)
    return best.astype(int).rename("best_num_warps")


def grid_table(grid: WarpsGrid, unit: str, relative: bool = False) -> pd.DataFrame:
    """The grid as a long table for 'Data behind this chart': n_cols, num_warps, value (`unit`), relative to the
    N's best (x, when `relative`), best (bool) and status / reason of empty cells."""
    long = grid.values.stack(future_stack=True).rename(f"value ({unit})").reset_index()
    if relative:
        ratio = relative_to_best(grid.values).stack(future_stack=True).reset_index(drop=True)
        long["vs best at N (x)"] = ratio.to_numpy()
        best = best_per_n(grid.values)
        long["best"] = [best.get(n) == w for n, w in zip(long["n_cols"], long["num_warps"], strict=True)]
    long["status"] = grid.status.stack(future_stack=True).to_numpy()
    long["reason"] = grid.reason.stack(future_stack=True).to_numpy()
    return long


BUNDLED_WARPS_GRID_PATH = paths.BUNDLED_WARPS_GRID


def warps_axis_variants(df: pd.DataFrame) -> list[str]:
    """Triton variants (not torch, auto or a peer backend) timed at two or more num_warps at some N: those a
    heatmap can compare."""
    if df.empty or not {"variant", "dtype", "n_cols", "num_warps"} <= set(df.columns):
        return []
    rows = df[df["error"].fillna("").eq("") & df["num_warps"].notna()] if "error" in df.columns else df
    rows = rows[~rows["variant"].map(lambda v: v in ("torch", "auto") or str(v) in PEER_BACKENDS)]
    counts = rows.groupby(["variant", "dtype", "n_cols"])["num_warps"].nunique()
    found = counts[counts >= 2].reset_index()["variant"].unique()
    return [v for v in dict.fromkeys(df["variant"]) if v in set(found)]
