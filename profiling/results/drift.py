"""Repeat drift: per-config median change between two sweeps of the same configs (run-to-run reproducibility).

`repeat_drift(first, second)` pairs rows by (variant, dtype, n_rows, n_cols, tunables, method), keeps configs
that ran in both with a first median of at least `min_us` (20 us: shorter kernels are launch-bound and noisy by
nature) and gives `drift` = second / first - 1. `drift_summary` counts how many are within `limit` (3 %), and
`drift_lines` prints it. Runs from different environments (GPU, compute capability, torch or Triton version) are
refused with DriftMismatch naming the difference unless `force=True`; a forced table carries the difference in
`attrs["mismatch"]` and a `compared_across` column, and its printed summary starts with "FORCED". Imports neither
streamlit nor plotly.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

KEY = ["variant", "dtype", "n_rows", "n_cols", "tunables", "method"]
OP_KEY = {"op": "softmax", "case": "", "op_shape": ""}  # more of a config's identity, and its value when missing
DEFAULT_MIN_US = 20.0
DEFAULT_LIMIT = 0.03
ENVIRONMENT = ("gpu_name", "gpu_uuid", "compute_capability", "torch_version", "triton_version")


class DriftMismatch(ValueError):
    """The two runs come from different environments; the message names each difference and --force."""


def environment_differences(first: pd.DataFrame, second: pd.DataFrame) -> list[str]:
    """'column: a vs b' for each ENVIRONMENT column whose values (over the timed rows) differ between the runs."""
    a, b = _timed(first), _timed(second)
    differences = []
    for column in ENVIRONMENT:
        if column not in a.columns or column not in b.columns:
            continue
        left = sorted({str(v) for v in a[column].dropna()})
        right = sorted({str(v) for v in b[column].dropna()})
        if left and right and left != right:
            differences.append(f"{column}: {' / '.join(map(repr, left))} vs {' / '.join(map(repr, right))}")
    return differences


class DifferentGPUError(DriftMismatch):
    """Two runs measured on different physical GPUs (their gpu_uuid sets differ); pass force to compare anyway."""


def gpu_uuids(table: pd.DataFrame) -> set[str]:
    """The GPU UUIDs ('GPU-...') a results table was measured on; empty when the rows have none (older files)."""
    if "gpu_uuid" not in table.columns:
        return set()
    return {str(v) for v in table["gpu_uuid"].dropna().unique() if str(v)}


def check_same_gpu(first: pd.DataFrame, second: pd.DataFrame, *, force: bool = False) -> str | None:
    """None when both runs name the same GPU UUIDs or either names none (files without the machine record).

    Different UUIDs raise DifferentGPUError (one line naming both) unless `force`, which returns that line instead
    so a caller can print it beside the comparison."""
    a, b = gpu_uuids(first), gpu_uuids(second)
    if not a or not b or a == b:
        return None
    line = f"the runs were measured on different GPUs ({', '.join(sorted(a))} vs {', '.join(sorted(b))})"
    if force:
        return line
    raise DifferentGPUError(f"{line}; allowed: runs of one GPU, or force the comparison (--force / the checkbox)")


def _timed(table: pd.DataFrame) -> pd.DataFrame:
    """Rows that ran with a median, one per key (the last measured when a file holds several runs)."""
    ran = table[(table["error"].fillna("") == "") & table["median_us"].notna() & (table["method"] != "none")].copy()
    ran["tunables"] = ran["tunables"].fillna("{}")
    for column, missing in OP_KEY.items():  # fused-op rows (sweep --op) pair only with the same op, case and shape
        values = ran[column] if column in ran.columns else pd.Series(pd.NA, index=ran.index, dtype="string")
        ran[column] = values.astype("string").fillna(missing)
    if "measured_at" in ran.columns:
        ran = ran.sort_values("measured_at", kind="stable", na_position="first")
    return ran.drop_duplicates([*KEY, *OP_KEY], keep="last")


def repeat_drift(
    first: pd.DataFrame,
    second: pd.DataFrame,
    *,
    min_us: float = DEFAULT_MIN_US,
    methods: tuple[str, ...] | None = None,
    force: bool = False,
) -> pd.DataFrame:
    """Per config and method: first_us, second_us (medians, us), drift (second / first - 1) and abs_drift, for
    configs timed in both runs with first_us >= min_us; sorted by abs_drift, largest first. DriftMismatch when the
    runs' environments differ (environment_differences) unless `force`, which labels the table instead."""
    if min_us < 0:
        raise ValueError(f"min_us={min_us}; allowed: a number >= 0 (microseconds)")
    check_same_gpu(first, second, force=force)  # DifferentGPUError (a DriftMismatch) names the two UUIDs
    differences = environment_differences(first, second)
    if differences and not force:
        raise DriftMismatch(
            f"the runs differ in {'; '.join(differences)}: drift between environments is not repeat drift; "
            "allowed: two runs of one GPU and software stack, or --force (force=True) to compare anyway"
        )
    a, b = _timed(first), _timed(second)
    if methods:
        a, b = a[a["method"].isin(methods)], b[b["method"].isin(methods)]
    keys = [*KEY, *OP_KEY]
    merged = a[[*keys, "median_us"]].merge(b[[*keys, "median_us"]], on=keys, suffixes=("_first", "_second"))
    if (merged["op"] == "softmax").all():
        merged = merged.drop(columns=list(OP_KEY))  # plain softmax runs: the table as before the op column
    merged = merged.rename(columns={"median_us_first": "first_us", "median_us_second": "second_us"})
    merged = merged[merged["first_us"] >= min_us].copy()
    merged["drift"] = (merged["second_us"] / merged["first_us"] - 1.0).astype("Float64")
    merged["abs_drift"] = merged["drift"].abs()
    result = merged.sort_values("abs_drift", ascending=False, kind="stable").reset_index(drop=True)
    if differences:
        result["compared_across"] = "; ".join(differences)
    result.attrs["mismatch"] = "; ".join(differences)
    return result


def drift_summary(drift: pd.DataFrame, limit: float = DEFAULT_LIMIT) -> dict[str, Any]:
    """configs compared, within limit (count and share), median / 95th percentile / max of |drift|, per method."""
    if not len(drift):
        return {
            "configs": 0,
            "within": 0,
            "share_within": None,
            "median_abs": None,
            "p95_abs": None,
            "max_abs": None,
            "limit": limit,
            "by_method": {},
        }
    absolute = drift["abs_drift"].astype(float)
    within = int((absolute <= limit).sum())
    by_method = {
        method: {
            "configs": int(len(group)),
            "within": int((group["abs_drift"].astype(float) <= limit).sum()),
            "median_abs": float(group["abs_drift"].astype(float).median()),
        }
        for method, group in drift.groupby("method", sort=True)
    }
    return {
        "configs": int(len(drift)),
        "within": within,
        "share_within": within / len(drift),
        "median_abs": float(absolute.median()),
        "p95_abs": float(absolute.quantile(0.95)),
        "max_abs": float(absolute.max()),
        "limit": limit,
        "by_method": by_method,
    }


def drift_lines(
    drift: pd.DataFrame, limit: float = DEFAULT_LIMIT, min_us: float = DEFAULT_MIN_US, worst: int = 10
) -> list[str]:
    """Printable summary: one line overall, one per method, then the `worst` configs."""
    summary = drift_summary(drift, limit)
    mismatch = drift.attrs.get("mismatch")
    forced = [f"FORCED across different environments ({mismatch}): not a repeat run"] if mismatch else []
    if not summary["configs"]:
        return [*forced, f"repeat drift: no config over {min_us:g} us was timed in both runs"]
    lines = [
        *forced,
        f"repeat drift (configs >= {min_us:g} us): {summary['within']}/{summary['configs']} within "
        f"{limit:.0%} ({summary['share_within']:.1%}); |drift| median {summary['median_abs']:.2%}, p95 "
        f"{summary['p95_abs']:.2%}, max {summary['max_abs']:.2%}",
    ]
    for method, info in summary["by_method"].items():
        lines.append(
            f"  {method}: {info['within']}/{info['configs']} within {limit:.0%}, median |drift| "
            f"{info['median_abs']:.2%}"
        )
    for row in drift.head(worst).itertuples(index=False):
        lines.append(
            f"  {row.variant} {row.dtype} R={row.n_rows} N={row.n_cols} {row.tunables} {row.method}: "
            f"{row.first_us:.2f} -> {row.second_us:.2f} us ({row.drift:+.2%})"
        )
    return lines
