"""What `auto` does, for the dashboard: its tuning table, what it picks for a typed shape and from which entry,
the candidates the tuner measured for that entry, and how the pick compares with the other backends.

Reads kernels.auto (the tables and `choose`, unchanged) and the tuner's log (data/tuning/*.jsonl.gz: one line per
candidate timed). No streamlit and no plotly; times are microseconds.
"""

from __future__ import annotations

import gzip
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import dashboard_data as dd

TUNE_LOG_PATH = dd.ROOT / "data" / "tuning" / "h200_tune_log.jsonl.gz"
DEFAULT_GPU = "NVIDIA H200"
DTYPES = ("fp16", "bf16", "fp32")
BORROW_ORDER = {"fp16": ("fp16", "bf16", "fp32"), "bf16": ("bf16", "fp16", "fp32"), "fp32": ("fp32", "fp16", "bf16")}


def tunables_text(tunables: dict | str | None) -> str:
    """{'num_warps': 8} -> '{"num_warps": 8}' (sorted keys, the results files' spelling); '{}' for none."""
    if isinstance(tunables, str):
        tunables = json.loads(tunables or "{}")
    return json.dumps(dict(sorted((tunables or {}).items())))


def tuning_table(gpu_name: str | None = DEFAULT_GPU) -> tuple[dict, pd.DataFrame]:
    """(the table's facts: gpu, made_at, timing, torch/Triton versions, path ...; one row per entry: dtype, n_rows,
    n_cols, variant, tunables, median_us, torch_us, speedup_vs_torch = torch_us / median_us). ({}, empty) when no
    table exists for the GPU."""
    from kernels import auto

    table = auto.load_table(gpu_name)
    columns = ["dtype", "n_rows", "n_cols", "variant", "tunables", "median_us", "torch_us", "speedup_vs_torch"]
    if table is None:
        return {}, pd.DataFrame(columns=columns)
    facts = {k: v for k, v in table.items() if k != "entries"}
    rows = [{"dtype": e["dtype"], "n_rows": int(e["n_rows"]), "n_cols": int(e["n_cols"]), "variant": e["variant"],
             "tunables": tunables_text(e.get("tunables")), "median_us": e.get("median_us"),
             "torch_us": e.get("torch_us")} for e in table["entries"]]
    frame = pd.DataFrame(rows, columns=columns[:-1])
    frame["speedup_vs_torch"] = frame["torch_us"] / frame["median_us"]
    order = {d: i for i, d in enumerate(DTYPES)}
    frame = frame.sort_values(["dtype", "n_cols", "n_rows"], key=lambda s: s.map(order) if s.name == "dtype" else s)
    return facts, frame.reset_index(drop=True)


@dataclass(frozen=True)
class Pick:
    """What auto runs for one shape: `variant` ('torch' when the table says torch.softmax), its tunables, the
    table entry it came from (None: the no-table heuristic) and the rule in words."""

    n_rows: int
    n_cols: int
    dtype: str
    variant: str
    tunables: dict = field(default_factory=dict)
    entry: dict | None = None
    how: str = ""


def pick(n_rows: int, n_cols: int, dtype: str, gpu_name: str | None = DEFAULT_GPU) -> Pick:
    """kernels.auto.choose for R x N of `dtype` on `gpu_name`'s table, with the entry it used and why.
    ValueError names what is allowed for a bad R, N or dtype."""
    import kernels
    from kernels import auto

    for name, value, high in (("R", n_rows, 2**31 - 1), ("N", n_cols, auto.MAX_N)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
            raise ValueError(f"{name}={value!r}; allowed: an integer from 1 to {high:,}")
    if dtype not in DTYPES:
        raise ValueError(f"dtype={dtype!r}; allowed: {', '.join(DTYPES)}")
    variant, tunables = auto.choose(n_rows, n_cols, kernels.dtype_from_name(dtype), gpu_name)
    facts, table = tuning_table(gpu_name)
    bucket = kernels.next_power_of_2(n_cols)
    aligned = n_cols % 16 == 0
    entry = None
    in_bucket = table[table["n_cols"].map(kernels.next_power_of_2) == bucket] if len(table) else table
    for wanted in BORROW_ORDER[dtype]:  # kernels.auto.choose's order: the dtype, then one of the same size
        entries = in_bucket[in_bucket["dtype"] == wanted]
        if len(entries):
            same_alignment = entries[(entries["n_cols"] % 16 == 0) == aligned]
            entries = same_alignment if len(same_alignment) else entries
            distance = ((entries["n_cols"].map(math.log2) - math.log2(n_cols)).abs(),
                        (entries["n_rows"].map(lambda r: math.log2(max(1, r))) - math.log2(n_rows)).abs())
            nearest = entries.assign(_dn=distance[0], _dr=distance[1]).sort_values(["_dn", "_dr"], kind="stable")
            entry = {k: nearest.iloc[0][k] for k in table.columns}
            break
    if entry is None or entry["variant"] != variant or entry["tunables"] != tunables_text(tunables):
        why = "no entry covers" if entry is None else "the entry's config does not plan for"
        how = (f"{why} BLOCK_SIZE {bucket:,} in {facts.get('gpu', gpu_name)}'s table: the heuristic picks "
               "(multirow up to 1024 columns, one program per row up to 16384, split-row beyond)")
        return Pick(n_rows, n_cols, dtype, variant, tunables, None, how)
    borrowed = f" (no {dtype} entries in this bucket: borrowed from {entry['dtype']})" if entry["dtype"] != dtype \
        else ""
    what = "torch.softmax was faster than every Triton config there" if variant == "torch" else \
        f"{variant} {tunables_text(tunables)} was the fastest config the tuner timed there"
    how = (f"entry {entry['dtype']} R={int(entry['n_rows']):,} N={int(entry['n_cols']):,}: the nearest N in the same "
           f"BLOCK_SIZE bucket ({bucket:,}) with the same row alignment (N % 16 {'=' if aligned else '!='} 0), then "
           f"the nearest R{borrowed}; {what}")
    return Pick(n_rows, n_cols, dtype, variant, tunables, entry, how)


def load_tune_log(path: str | Path = TUNE_LOG_PATH) -> pd.DataFrame | None:
    """The tuner's log (one row per candidate timed: dtype, n_rows, n_cols, variant, tunables, median_us, torch_us,
    error, seconds), or None when the file is absent."""
    path = Path(path)
    if not path.is_file():
        return None
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    frame = pd.DataFrame(rows)
    frame["tunables"] = frame["tunables"].map(tunables_text)
    frame["error"] = frame.get("error", pd.Series("", index=frame.index)).fillna("")
    return frame


def candidates_for(log: pd.DataFrame | None, chosen: Pick) -> pd.DataFrame:
    """The candidates the tuner timed at the shape of `chosen`'s entry, fastest first: variant, tunables,
    median_us, vs_best (time / the fastest's), error, and `picked` (the one auto runs). Empty without an entry
    or a log."""
    columns = ["variant", "tunables", "median_us", "vs_best", "error", "picked"]
    if log is None or chosen.entry is None:
        return pd.DataFrame(columns=columns)
    entry = chosen.entry
    rows = log[(log["dtype"] == entry["dtype"]) & (log["n_rows"] == entry["n_rows"])
               & (log["n_cols"] == entry["n_cols"])].copy()
    if rows.empty:
        return pd.DataFrame(columns=columns)
    rows["vs_best"] = rows["median_us"] / rows.loc[rows["error"] == "", "median_us"].min()
    rows["picked"] = (rows["variant"] == chosen.variant) & (rows["tunables"] == tunables_text(chosen.tunables))
    rows = rows.sort_values(["error", "median_us"], key=lambda s: s.ne("") if s.name == "error" else s)
    return rows[columns].reset_index(drop=True)


def backends_at(df: pd.DataFrame | None, dtype: str, n_cols: int, method: str) -> pd.DataFrame:
    """The fastest config of every variant / backend timed at exactly (dtype, N) with `method`, fastest first, with
    vs_auto = its time / auto's (above 1: auto is faster; NA when auto was not timed there)."""
    columns = ["variant", "tunables", "median_us", "p20_us", "p80_us", "vs_auto"]
    if df is None or df.empty:
        return pd.DataFrame(columns=columns)
    part = df[(df["dtype"] == dtype) & (df["n_cols"] == n_cols) & (df["method"] == method)]
    best = dd.best_per_n(part)
    if best.empty:
        return pd.DataFrame(columns=columns)
    auto_us = best.loc[best["variant"] == "auto", "median_us"]
    best = best.assign(vs_auto=(best["median_us"] / auto_us.iloc[0]).astype("Float64") if len(auto_us)
                       else pd.Series(pd.NA, index=best.index, dtype="Float64"))
    extra = [c for c in dd.setup_keys(best)]
    return best.sort_values("median_us")[[*extra, *columns]].reset_index(drop=True)
