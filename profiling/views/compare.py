"""Run vs run: per-config time ratios between two loaded runs and where the fastest variant changes.

A run is one GPU / run / file as dashboard_data.split_setups tells them apart (gpu_name, run_id, source), with
its versions (torch, Triton, driver) from its rows. Ratios are B / A of median times (> 1: B slower); the spread
interval [B p20 / A p80, B p80 / A p20] is what the two runs' p20..p80 spreads allow, so a ratio whose interval
excludes 1 is a change beyond the noise. Pure pandas (no streamlit, no plotly); times in microseconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from blockscope.profiling.results.drift import DifferentGPUError, check_same_gpu, gpu_uuids  # noqa: F401 - shared
from blockscope.profiling.views import dashboard_data as dd

CONFIG_KEYS = ("variant", "dtype", "n_rows", "n_cols", "tunables", "method")
SHAPE_KEYS = ("variant", "dtype", "n_rows", "n_cols", "method")
MODES = ("same config", "fastest config per variant")
FASTER, SLOWER, WITHIN, NO_SPREAD = "B faster", "B slower", "within spread", "no spread"
VERSION_COLUMNS = (
    "gpu_name",
    "gpu_uuid",
    "host_name",
    "run_id",
    "torch_version",
    "triton_version",
    "driver_version",
    "measured_at",
)


@dataclass(frozen=True)
class Run:
    """One GPU / run / file: its label (dashboard_data.setup_labels) and rows."""

    label: str
    rows: pd.DataFrame


def runs(df: pd.DataFrame) -> list[Run]:
    """The runs loaded in `df` (one when it holds a single GPU / run / file; its label is then 'loaded data')."""
    return [Run(label or "loaded data", rows) for label, rows in dd.split_setups(df)]


def run_info(items: list[Run]) -> pd.DataFrame:
    """One row per run: label, source file, GPU, run id(s), versions, measured at, rows and timed configs."""
    out = []
    for run in items:
        rows = run.rows

        def values(column: str, rows: pd.DataFrame = rows) -> str:
            if column not in rows.columns:
                return ""
            return ", ".join(sorted(str(v) for v in rows[column].dropna().unique()))

        out.append(
            {
                "run": run.label,
                "source": values("source"),
                **{c: values(c) for c in VERSION_COLUMNS},
                "rows": len(rows),
                "timed configs": len(dd.ran(rows[rows["method"] != "none"]).drop_duplicates(list(CONFIG_KEYS))),
            }
        )
    return pd.DataFrame(out)


def _timed(rows: pd.DataFrame, method: str | None, dtype: str | None) -> pd.DataFrame:
    rows = dd.ran(rows[rows["method"] != "none"])
    if method is not None:
        rows = rows[rows["method"] == method]
    if dtype is not None:
        rows = rows[rows["dtype"] == dtype]
    return rows


def _fastest(rows: pd.DataFrame, keys: tuple[str, ...]) -> pd.DataFrame:
    """The fastest row (lowest median_us) per `keys`."""
    if rows.empty:
        return rows
    return rows.loc[rows.groupby(list(keys), dropna=False)["median_us"].idxmin()]


def ratio_table(
    a: pd.DataFrame, b: pd.DataFrame, method: str | None = None, dtype: str | None = None, mode: str = MODES[0]
) -> pd.DataFrame:
    """B / A per config both runs timed (rows that ran), for one timing `method` and `dtype` (None: all).

    mode 'same config': one row per (variant, dtype, R, N, tunables, method); 'fastest config per variant': each
    run's fastest config per (variant, dtype, R, N, method), whose tunables may differ (a_tunables, b_tunables).
    Columns: the keys, num_warps, a_us, b_us (medians, µs), ratio = b_us / a_us, ratio_low = B p20 / A p80,
    ratio_high = B p80 / A p20 (NaN without percentiles) and change: 'B faster' (ratio_high < 1), 'B slower'
    (ratio_low > 1), 'within spread' or 'no spread'. ValueError for an unknown mode."""
    if mode not in MODES:
        raise ValueError(f"unknown comparison mode {mode!r}; allowed: {', '.join(MODES)}")
    a, b = _timed(a, method, dtype), _timed(b, method, dtype)
    keys = CONFIG_KEYS if mode == MODES[0] else SHAPE_KEYS
    a, b = _fastest(a, CONFIG_KEYS), _fastest(b, CONFIG_KEYS)  # a run holding a config twice: its fastest
    if mode != MODES[0]:
        a, b = _fastest(a, SHAPE_KEYS), _fastest(b, SHAPE_KEYS)
    carried = ["median_us", "p20_us", "p80_us", "num_warps", *([] if mode == MODES[0] else ["tunables"])]
    both = a[[*keys, *carried]].merge(b[[*keys, *carried]], on=list(keys), suffixes=("_a", "_b"))
    columns = [
        *keys,
        "num_warps",
        *([] if mode == MODES[0] else ["a_tunables", "b_tunables"]),
        "a_us",
        "b_us",
        "ratio",
        "ratio_low",
        "ratio_high",
        "change",
    ]
    if both.empty:
        return pd.DataFrame(columns=columns)
    out = both[list(keys)].copy()
    out["num_warps"] = both["num_warps_a"] if mode == MODES[0] else both["num_warps_b"]
    if mode != MODES[0]:
        out["a_tunables"], out["b_tunables"] = both["tunables_a"], both["tunables_b"]
    out["a_us"] = both["median_us_a"].astype(float)
    out["b_us"] = both["median_us_b"].astype(float)
    out["ratio"] = out["b_us"] / out["a_us"]
    out["ratio_low"] = both["p20_us_b"].astype(float) / both["p80_us_a"].astype(float)
    out["ratio_high"] = both["p80_us_b"].astype(float) / both["p20_us_a"].astype(float)
    out["change"] = [
        NO_SPREAD if math.isnan(low) or math.isnan(high) else SLOWER if low > 1 else FASTER if high < 1 else WITHIN
        for low, high in zip(out["ratio_low"], out["ratio_high"], strict=True)
    ]
    return out[columns].sort_values(["dtype", "variant", "n_rows", "n_cols"]).reset_index(drop=True)


def ratio_summary(table: pd.DataFrame) -> dict[str, float | int]:
    """points, geomean (of B / A), B faster / B slower / within spread counts, the smallest and largest ratio."""
    ratios = table["ratio"].astype(float) if len(table) else pd.Series(dtype=float)
    counts = table["change"].value_counts() if len(table) else pd.Series(dtype=int)
    return {
        "points": len(table),
        "geomean": math.exp(ratios.map(math.log).mean()) if len(ratios) else math.nan,
        "b_faster": int(counts.get(FASTER, 0)),
        "b_slower": int(counts.get(SLOWER, 0)),
        "within_spread": int(counts.get(WITHIN, 0)),
        "min": float(ratios.min()) if len(ratios) else math.nan,
        "max": float(ratios.max()) if len(ratios) else math.nan,
    }


def ranking_changes(
    a: pd.DataFrame, b: pd.DataFrame, method: str | None = None, dtype: str | None = None
) -> tuple[pd.DataFrame, int]:
    """(table, points compared): the (dtype, R, N, method) where the fastest variant differs between the runs,
    among the variants both runs timed there (a variant only one run has cannot flip a ranking).

    Columns: dtype, n_rows, n_cols, method, a_fastest, a_us, b_fastest, b_us, and the other run's time of each
    winner (a_fastest_in_b_us, b_fastest_in_a_us)."""
    point = ["dtype", "n_rows", "n_cols", "method"]
    a = _fastest(_timed(a, method, dtype), SHAPE_KEYS)[[*point, "variant", "median_us"]]
    b = _fastest(_timed(b, method, dtype), SHAPE_KEYS)[[*point, "variant", "median_us"]]
    both = a.merge(b, on=[*point, "variant"], suffixes=("_a", "_b"))  # variants timed by both runs
    columns = [*point, "a_fastest", "a_us", "b_fastest", "b_us", "a_fastest_in_b_us", "b_fastest_in_a_us"]
    if both.empty:
        return pd.DataFrame(columns=columns), 0
    rows = []
    groups = both.groupby(point, sort=True)
    for key, group in groups:
        first_a = group.loc[group["median_us_a"].idxmin()]
        first_b = group.loc[group["median_us_b"].idxmin()]
        if first_a["variant"] != first_b["variant"]:
            rows.append(
                {
                    **dict(zip(point, key, strict=True)),
                    "a_fastest": first_a["variant"],
                    "a_us": float(first_a["median_us_a"]),
                    "b_fastest": first_b["variant"],
                    "b_us": float(first_b["median_us_b"]),
                    "a_fastest_in_b_us": float(first_a["median_us_b"]),
                    "b_fastest_in_a_us": float(first_b["median_us_a"]),
                }
            )
    return pd.DataFrame(rows, columns=columns), groups.ngroups
