"""Tables behind the Backends page's "Fused ops" section and the Masked lanes page's fusion models (pure pandas).

Benchmark rows come from profiling.results.fused (tools/bench_fused.py's CSV, or the op rows of a results file
written by `python -m profiling sweep --op ...`, converted to the same frame); the traffic and padding models from
profiling.inspect.fusion. Text from a loaded file reaches the page only through st.dataframe (never markdown) or
md() below.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from blockscope import paths
from blockscope.profiling.inspect import fusion
from blockscope.profiling.results import ResultsError
from blockscope.profiling.results.fused import fused_from_results, load_fused_any
from blockscope.profiling.views.dashboard_data import md

BUNDLED_FUSED_PATH = paths.BUNDLED_FUSED
BUNDLED_NOTE = (  # what the bundled CSV's blockscope rows measured, said beside them on the page
    "Bundled data (2026-12-04): its `ragged_softmax` Blockscope rows measured design 0 (per-segment items); the "
    "default is now design 1 (length classes), 2.25x faster on uniform fp16 lengths in "
    "experiments/2026-12-04-ragged-redesign. Rerun `python3 -m tools.bench_fused` on a GPU to see it here."
)
MISSING_FUSED = "no fused-op benchmark bundled; run `python3 -m tools.bench_fused --out-dir DIR`"
REFERENCE = "blockscope"
KEYS = ["op", "case", "dtype", "length", "shape"]
DTYPE_NAMES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}  # the sidebar's names -> torch's

__all__ = ["MISSING_FUSED", "ResultsError", "load_bundled_fused", "md"]


def load_bundled_fused(path: str | Path | None = None) -> pd.DataFrame | None:
    """The bundled fused-op benchmark (or the file at `path`: a bench_fused.csv or a results file with op rows, from
    `sweep --op`), or None when it is not there; ResultsError when bad."""
    path = Path(path or BUNDLED_FUSED_PATH)
    return load_fused_any(path) if path.exists() else None


def from_op_rows(op_rows: pd.DataFrame | None) -> pd.DataFrame | None:
    """The fused frame of loaded results' op rows (the sidebar's data, dashboard_data.split_ops); None when none."""
    if op_rows is None or op_rows.empty:
        return None
    table = fused_from_results(op_rows)
    return None if table.empty else table


def timed(df: pd.DataFrame, method: str) -> pd.DataFrame:
    """Rows of `method` that ran (a time, no error), tuning rows and skipped cases left out."""
    keep = (
        (df["method"] == method)
        & df["median_us"].notna()
        & (df["error"].fillna("") == "")
        & (df["phase"].fillna("") != "tuning")
        & (df["backend"] != "all")
    )
    return df[keep.fillna(False)]


def methods(df: pd.DataFrame) -> list[str]:
    """Timing methods present, cuda_graph first."""
    found = sorted(set(df["method"].dropna()))
    return sorted(found, key=lambda m: (m != "cuda_graph", m))


def backends(df: pd.DataFrame) -> list[str]:
    """Backends present: blockscope first, then the others in file order (tuning rows left out)."""
    names = list(dict.fromkeys(df.loc[df["phase"].fillna("") != "tuning", "backend"].dropna()))
    names = [n for n in names if n != "all"]
    return sorted(names, key=lambda n: n != REFERENCE)


def fused_table(df: pd.DataFrame, method: str) -> pd.DataFrame:
    """One row per op, case, dtype, L (shape): each backend's median µs, % of ideal, and its time / blockscope's
    (x; above 1: blockscope is faster). A backend that failed there has an empty cell and its error in `failed`."""
    part = timed(df, method)
    rows = []
    bad = df[
        ((df["method"] == method) & (df["error"].fillna("") != "") & (df["phase"].fillna("") != "tuning")).fillna(False)
    ]
    failures: dict[tuple, list[str]] = {}
    for _, r in bad.iterrows():
        failures.setdefault((r["op"], r["case"], r["dtype"], r["shape"]), []).append(f"{r['backend']}: {r['error']}")
    for key, group in part.groupby(KEYS, sort=True, dropna=False):
        row = dict(zip(KEYS, key, strict=True))
        ours = group.loc[group["backend"] == REFERENCE, "median_us"]
        ours_us = float(ours.iloc[0]) if len(ours) else None
        for _, r in group.iterrows():
            name = r["backend"]
            row[f"{name} µs"] = float(r["median_us"])
            row[f"{name} % ideal"] = None if pd.isna(r["pct_of_ideal"]) else float(r["pct_of_ideal"])
            if name != REFERENCE and ours_us:
                row[f"{name} / {REFERENCE}"] = float(r["median_us"]) / ours_us
        row["failed"] = "; ".join(failures.get((row["op"], row["case"], row["dtype"], row["shape"]), []))
        rows.append(row)
    return pd.DataFrame(rows)


def speedups(df: pd.DataFrame, method: str) -> pd.DataFrame:
    """Long form: per op, case, dtype, L and other backend, blockscope's speedup = backend µs / blockscope µs (x)."""
    part = timed(df, method)
    ours = part[part["backend"] == REFERENCE][[*KEYS, "median_us"]].rename(columns={"median_us": "blockscope_us"})
    others = part[part["backend"] != REFERENCE][[*KEYS, "backend", "median_us"]]
    joined = others.merge(ours, on=KEYS, how="inner")
    joined["speedup"] = joined["median_us"] / joined["blockscope_us"]
    return joined.sort_values([*KEYS, "backend"]).reset_index(drop=True)


def speedup_summary(df: pd.DataFrame, method: str) -> pd.DataFrame:
    """Per op and backend: geometric mean, min and max of blockscope's speedup over it (x), and the points behind."""
    table = speedups(df, method)
    if table.empty:
        return pd.DataFrame(columns=["op", "backend", "geomean_speedup", "min_speedup", "max_speedup", "points"])
    out = table.groupby(["op", "backend"], sort=True)["speedup"].agg(
        geomean_speedup=lambda s: float(np.exp(np.log(s.astype(float)).mean())),
        min_speedup="min",
        max_speedup="max",
        points="count",
    )
    return out.reset_index()


def curve(df: pd.DataFrame, method: str, op: str, case: str, dtype: str) -> pd.DataFrame:
    """Time vs L of every backend for one op, case and dtype: backend, length, median_us, p20_us, p80_us,
    pct_of_ideal, shape; sorted by backend (blockscope first) and L."""
    part = timed(df, method)
    part = part[(part["op"] == op) & (part["case"] == case) & (part["dtype"] == dtype) & part["length"].notna()]
    order = {b: i for i, b in enumerate(backends(df))}
    columns = ["backend", "length", "median_us", "p20_us", "p80_us", "pct_of_ideal", "shape"]
    part = part[columns].assign(_rank=part["backend"].map(order))
    return part.sort_values(["_rank", "length"]).drop(columns="_rank").reset_index(drop=True)


def fusion_steps(traffic: fusion.FusionTraffic) -> pd.DataFrame:
    """The kernels counted in both chains, bytes read / written / total and MB (1e6 bytes)."""
    table = pd.DataFrame(traffic.table())
    return table.assign(total_mb=table["total_bytes"] / 1e6)


def padding_table(model: fusion.PaddingModel) -> pd.DataFrame:
    """Padded vs packed: rows, lanes (elements), bytes of the softmax's read + write, waste factor."""
    return pd.DataFrame(
        [
            {
                "layout": "padded to the longest row",
                "lanes": model.padded_lanes,
                "bytes": model.padded_bytes,
                "x packed": model.waste_factor,
            },
            {
                "layout": "packed (ragged_softmax)",
                "lanes": model.packed_lanes,
                "bytes": model.packed_bytes,
                "x packed": 1.0,
            },
        ]
    )


def length_summary(lengths: np.ndarray) -> pd.DataFrame:
    """Count, min, median, mean, p99 and max of the row lengths (elements)."""
    values = np.asarray(lengths, dtype=np.int64)
    return pd.DataFrame(
        [
            {
                "rows": len(values),
                "min": int(values.min()),
                "median": float(np.median(values)),
                "mean": float(values.mean()),
                "p99": float(np.percentile(values, 99)),
                "max": int(values.max()),
            }
        ]
    )
