"""Tables behind the Backends page: pure pandas on results rows (no streamlit, no plotly).

A row's status comes from its `error`: '' ran, 'unsupported: ...' (the backend's support rules or a missing
package), 'wrong result: ...' (checked against float64, never timed), 'skipped: ...', anything else failed.
Comparisons stay within one GPU and run (`gpu_name`, `run_id`), like every timing comparison here.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from blockscope import paths
from blockscope.profiling.results import UNAVAILABLE, UNSUPPORTED
from blockscope.profiling.views.dashboard_data import best_per_n, ran

BUNDLED_BACKENDS_PATH = paths.BUNDLED_BACKENDS
PEER_NAMES: tuple[str, ...] = ("torch", "inductor", "liger", "quack")
STATUS_ORDER: tuple[str, ...] = ("ran", "unsupported", "unavailable", "wrong", "failed", "skipped")
SCOPE = ("gpu_name", "run_id")


def row_status(error: object) -> str:
    """'ran' | 'unsupported' | 'unavailable' | 'wrong' | 'skipped' | 'failed' from a results row's `error`."""
    text = "" if error is None or error is pd.NA or (isinstance(error, float) and error != error) else str(error)
    if not text:
        return "ran"
    if text.startswith(UNSUPPORTED):
        return "unsupported"
    if text.startswith(UNAVAILABLE):
        return "unavailable"
    if text.startswith("wrong result"):
        return "wrong"
    if text.startswith("skipped"):
        return "skipped"
    return "failed"


def backend_order(names: list[str]) -> list[str]:
    """Peers first (torch, inductor, liger, quack), then auto, then the other variants alphabetically."""
    rank = {name: i for i, name in enumerate((*PEER_NAMES, "auto"))}
    return sorted(dict.fromkeys(names), key=lambda n: (rank.get(n, len(rank)), n))


def has_peers(df: pd.DataFrame | None) -> bool:
    """True when the table holds rows of a peer backend other than torch (inductor, liger, quack)."""
    return df is not None and len(df) > 0 and df["variant"].isin(PEER_NAMES[1:]).any()


def load_bundled(path: str | Path | None = None) -> pd.DataFrame | None:
    """The bundled H200 backends capture (or the file at `path`), or None when it is not there."""
    from blockscope.profiling.results import load_results

    path = Path(path or BUNDLED_BACKENDS_PATH)
    return load_results(path) if path.exists() else None


def _scope(df: pd.DataFrame) -> list[str]:
    return [c for c in SCOPE if c in df.columns and df[c].notna().any()]


def fastest(df: pd.DataFrame, method: str, dtype: str) -> pd.DataFrame:
    """Fastest config per (backend, N) for one method and dtype, with `vs_best` = its time / the fastest
    backend's time at that N (1.0: the winner), within each GPU and run."""
    part = df[(df["method"] == method) & (df["dtype"] == dtype)]
    keys = ["variant", "dtype", "n_cols", *_scope(part)]
    best = best_per_n(part, tuple(keys))
    if best.empty:
        return best
    group = ["n_cols", *_scope(best)]
    best = best.assign(best_us=best.groupby(group)["median_us"].transform("min"))
    return best.assign(vs_best=(best["median_us"] / best["best_us"]).astype("Float64"))


def winners(df: pd.DataFrame, method: str) -> pd.DataFrame:
    """Per (dtype, N): the fastest backend, its time, the runner-up and how much slower it is (x)."""
    rows = []
    for dtype in sorted(df["dtype"].dropna().unique()):
        table = fastest(df, method, dtype)
        if table.empty:
            continue
        for _, group in table.groupby(["n_cols", *_scope(table)], sort=True):
            ordered = group.sort_values("median_us")
            first = ordered.iloc[0]
            second = ordered.iloc[1] if len(ordered) > 1 else None
            rows.append(
                {
                    "dtype": dtype,
                    "n_cols": int(first["n_cols"]),
                    "winner": first["variant"],
                    "winner_us": float(first["median_us"]),
                    "runner_up": "" if second is None else second["variant"],
                    "runner_up_slower_x": float("nan")
                    if second is None
                    else float(second["median_us"] / first["median_us"]),
                    "backends_timed": len(ordered),
                    **({"gpu_name": first["gpu_name"]} if "gpu_name" in first.index else {}),
                }
            )
    return pd.DataFrame(rows)


def versus(df: pd.DataFrame, method: str, reference: str = "auto") -> pd.DataFrame:
    """Per backend: the (dtype, N) points both it and `reference` timed, the geometric mean of its time over the
    reference's (> 1: the reference is faster), the worst (smallest) ratio and where, points under 0.95, the best
    (largest) ratio and each point under 1 ('<reference> slower at': 'fp16 N=512 0.96x, ...'). No row for a backend
    with no such point; an empty frame without columns where `reference` timed nothing."""
    import math

    part = df[(df["method"] == method) & (df["error"].fillna("") == "") & df["median_us"].notna()]
    keys = ["dtype", "n_cols", *_scope(part)]
    times = part.groupby([*keys, "variant"])["median_us"].min().unstack("variant")
    if reference not in times.columns:
        return pd.DataFrame()
    geomean = f"geomean backend / {reference}"
    columns = ["backend", "points", geomean, "worst", "worst at", "under 0.95", "best", f"{reference} slower at"]
    rows = []
    for name in backend_order([c for c in times.columns if c != reference]):
        ratio = (times[name] / times[reference]).dropna().astype(float)
        if ratio.empty:
            continue
        worst = ratio.idxmin()
        rows.append(
            {
                "backend": name,
                "points": len(ratio),
                geomean: math.exp(ratio.map(math.log).mean()),
                "worst": float(ratio.min()),
                "worst at": f"{worst[0]} N={worst[1]}",
                "under 0.95": int((ratio < 0.95).sum()),
                "best": float(ratio.max()),
                f"{reference} slower at": ", ".join(f"{k[0]} N={k[1]} {r:.2f}x" for k, r in ratio[ratio < 1].items()),
            }
        )
    return pd.DataFrame(rows, columns=columns)


def win_counts(table: pd.DataFrame) -> pd.DataFrame:
    """How many (dtype, N) points each backend wins."""
    if table.empty:
        return pd.DataFrame(columns=["backend", "wins"])
    counts = table["winner"].value_counts()
    return pd.DataFrame({"backend": counts.index, "wins": counts.values})


def support(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (backend, dtype, N): status and reason (the first method's row; all methods share them)."""
    keys = ["variant", "dtype", "n_cols"]
    first = df.sort_values([*keys, "method"]).drop_duplicates(keys)
    out = first[keys].copy()
    out["status"] = first["error"].map(row_status)
    out["reason"] = first["error"].fillna("")
    out["max_abs_error"] = first["max_abs_error"] if "max_abs_error" in first.columns else pd.NA
    return out.reset_index(drop=True)


def support_counts(table: pd.DataFrame) -> pd.DataFrame:
    """Per backend: shapes per status (columns in STATUS_ORDER) and the distinct reasons it did not run."""
    if table.empty:
        return pd.DataFrame()
    counts = table.pivot_table(index="variant", columns="status", values="n_cols", aggfunc="count", fill_value=0)
    counts = counts.reindex(columns=[s for s in STATUS_ORDER if s in counts.columns])
    reasons = (
        table[table["status"] != "ran"]
        .groupby("variant")["reason"]
        .agg(lambda r: " | ".join(sorted({_generic(x) for x in r})))
    )
    counts["why not"] = reasons.reindex(counts.index).fillna("")
    counts = counts.reindex(backend_order(list(counts.index)))
    return counts.reset_index().rename(columns={"variant": "backend"})


def _generic(reason: str) -> str:
    """A reason with its N left out, so one rule reads once ('N = 1001 is not a multiple of 8' -> '... N ...')."""
    import re

    return re.sub(r"N = \d+", "N", re.sub(r"\(\d+ KB\)", "", reason)).strip()


def first_calls(df: pd.DataFrame) -> pd.DataFrame:
    """First-call seconds (compile + launch) per backend, dtype and N, with the steady-state median (us)."""
    timed = ran(df)
    keys = ["variant", "dtype", "n_cols"]
    if timed.empty:
        return pd.DataFrame(columns=[*keys, "first_call_s", "median_us"])
    out = timed.groupby(keys, as_index=False).agg(first_call_s=("first_call_s", "max"), median_us=("median_us", "min"))
    return out


def kernel_ranges(df: pd.DataFrame) -> pd.DataFrame:
    """Per backend and dtype: runs of consecutive measured N with the same profiler kernel names."""
    rows = []
    names = df[df["error"].fillna("") == ""].dropna(subset=["kernel_names"])
    names = names.drop_duplicates(["variant", "dtype", "n_cols"])
    for (variant, dtype), part in names.groupby(["variant", "dtype"]):
        part = part.sort_values("n_cols")
        start = prev = None
        current = None
        for n, kernels in zip(part["n_cols"], part["kernel_names"], strict=True):
            if kernels != current:
                if current is not None:
                    rows.append({"backend": variant, "dtype": dtype, "n_from": start, "n_to": prev, "kernels": current})
                start, current = int(n), kernels
            prev = int(n)
        if current is not None:
            rows.append({"backend": variant, "dtype": dtype, "n_from": start, "n_to": prev, "kernels": current})
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    table["order"] = table["backend"].map({b: i for i, b in enumerate(backend_order(list(table["backend"])))})
    return table.sort_values(["order", "dtype", "n_from"]).drop(columns="order").reset_index(drop=True)


def generated_sources(df: pd.DataFrame) -> pd.DataFrame:
    """Rows with generated kernel code (Inductor): backend, dtype, N and the source, one per shape."""
    if "kernel_source" not in df.columns:
        return pd.DataFrame(columns=["variant", "dtype", "n_cols", "kernel_source"])
    rows = df.dropna(subset=["kernel_source"]).drop_duplicates(["variant", "dtype", "n_cols"])
    return rows[["variant", "dtype", "n_cols", "kernel_source"]].sort_values(["variant", "dtype", "n_cols"])
