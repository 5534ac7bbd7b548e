"""Non-UI logic behind the dashboard pages: loading, filtering, best configs, regimes and findings.

Everything takes and returns pandas DataFrames in the results schema (profiling/results/__init__.py); no streamlit
and no plotly here. Times are microseconds (`_us`), bandwidth GB/s, sizes bytes.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from blockscope import paths
from blockscope.profiling.results import (
    DEFAULT_DIRECTION,
    DIRECTION_VALUES,
    NOT_RUN_PREFIXES,
    PEER_BACKENDS,
    SOFTMAX,
    ResultsError,
    concat_results,
    load_results,
    softmax_rows,
)

BUNDLED_PATH = paths.BUNDLED_SWEEP
NCU_PATH = paths.NCU_VALIDATION
DRIVER_OCCUPANCY_PATH = paths.DRIVER_OCCUPANCY
TORCH = "torch"
# The one timing method every page and the export default to: the kernel's own time (launches queued behind a GPU
# hold, L2 flushed), the method of `python -m profiling bench`; per_call_events has the host's launch gap inside.
DEFAULT_METHOD = "back_to_back_flushed"
LAUNCH_BOUND_FACTOR = 1.5  # within 1.5x of the smallest time measured (same dtype, method): launch-bound
BANDWIDTH_BOUND_FRACTION = 0.6  # at least 60% of the measured copy bandwidth: bandwidth-bound
CONFIG_COLUMNS = ("variant", "dtype", "n_rows", "n_cols", "num_warps", "tunables", "direction")
DIRECTION_LABELS: dict[str, str] = {
    "forward": "forward",
    "backward": "backward",
    "forward_backward": "forward + backward",
}
DIRECTION_BYTES: dict[str, str] = {
    "forward": "read x + write y = 2·R·N·element size",
    "backward": "read y + dy + write dx = 3·R·N·element size",
    "forward_backward": "forward + backward = 5·R·N·element size",
}
DIRECTIONS_COMMAND = "python -m profiling sweep --directions forward,backward,forward_backward --out FILE"

__all__ = ["BUNDLED_PATH", "NCU_PATH", "Filters", "ResultsError", "load_table", "load_many"]


def cache_dir() -> Path:
    """Where the dashboard caches offline compiles: env BLOCKSCOPE_CACHE_DIR, else ~/.cache/blockscope."""
    return Path(os.environ.get("BLOCKSCOPE_CACHE_DIR", Path.home() / ".cache" / "blockscope"))


def load_table(source: str | Path | bytes, name: str | None = None) -> pd.DataFrame:
    """One results file (path or bytes) through results.load_results; ResultsError names the problem."""
    return load_results(source, name=name)


def split_ops(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(plain row-softmax rows, fused-op rows) of a loaded table, each reindexed from 0. The sidebar keeps only the
    first as every page's data (pages never mix ops: a results file with `sweep --op` rows shows the same softmax
    views as without them); the Backends page's "Fused ops" section reads the second."""
    plain = softmax_rows(df)
    ops = df.drop(index=plain.index)
    return plain.reset_index(drop=True), ops.reset_index(drop=True)


def op_rows_note(op_rows: pd.DataFrame | None) -> str | None:
    """The sidebar's line saying fused-op rows were set aside (None when there are none)."""
    if op_rows is None or op_rows.empty:
        return None
    counts = op_rows["op"].value_counts()
    what = ", ".join(f"{int(n)} {op}" for op, n in sorted(counts.items()) if op != SOFTMAX)
    return f"Fused-op rows ({what}) are shown only in the Backends page's Fused ops section."


def load_many(named: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Several loaded tables stacked with a `source` column (label -> table) when there is more than one."""
    if len(named) == 1:
        return next(iter(named.values()))
    return concat_results(named)


@dataclass(frozen=True)
class Filters:
    """The sidebar's shared filters. None means 'all' (an empty tuple: none); num_warps never drops torch rows
    (NA num_warps). `direction` is 'forward' unless a page picks another (the Latency page's switch): pages
    that know nothing of backward timings never mix them in."""

    variants: tuple[str, ...] | None = None
    dtype: str | None = None
    n_range: tuple[int, int] | None = None
    num_warps: tuple[int, ...] | None = None
    method: str | None = None
    sources: tuple[str, ...] | None = None
    n_rows: int | None = None
    direction: str | None = DEFAULT_DIRECTION


def apply_filters(df: pd.DataFrame, filters: Filters, *, method: bool = True) -> pd.DataFrame:
    """Rows passing `filters` (the timing method only when `method`)."""
    keep = pd.Series(True, index=df.index)
    if filters.variants is not None:
        keep &= df["variant"].isin(filters.variants)
    if filters.dtype:
        keep &= df["dtype"] == filters.dtype
    if filters.n_range:
        keep &= df["n_cols"].between(*filters.n_range)
    if filters.n_rows is not None:
        keep &= df["n_rows"] == filters.n_rows
    if filters.num_warps is not None:
        keep &= df["num_warps"].isin(filters.num_warps).fillna(False) | df["num_warps"].isna()
    if method and filters.method:
        keep &= df["method"] == filters.method
    if filters.sources is not None and "source" in df.columns:
        keep &= df["source"].isin(filters.sources)
    if filters.direction is not None:
        keep &= directions_of(df) == filters.direction
    return df[keep.fillna(False).astype(bool)]


def directions_of(df: pd.DataFrame) -> pd.Series:
    """Each row's direction ('forward' where the column is missing or empty: files from before it existed)."""
    if "direction" not in df.columns:
        return pd.Series(DEFAULT_DIRECTION, index=df.index, dtype="string")
    return df["direction"].astype("string").fillna(DEFAULT_DIRECTION)


def directions_in(df: pd.DataFrame) -> list[str]:
    """The directions with rows in `df`, in schema order (forward, backward, forward_backward)."""
    present = set(directions_of(df))
    return [d for d in DIRECTION_VALUES if d in present]


def direction_label(direction: str) -> str:
    """'forward_backward' -> 'forward + backward' (other names as they are)."""
    return DIRECTION_LABELS.get(direction, direction)


def absent_directions_note(df: pd.DataFrame) -> str | None:
    """None when `df` holds every direction; else which are not in it and the sweep command that captures them."""
    absent = [direction_label(d) for d in DIRECTION_VALUES if d not in directions_in(df)]
    if not absent:
        return None
    return f"Not in this data: {' and '.join(absent)} rows (capture them on a GPU with `{DIRECTIONS_COMMAND}`)."


def missing_direction_note(df: pd.DataFrame, direction: str) -> str | None:
    """None when `df` has rows of `direction`; else what to say instead of a chart: which directions the data
    holds and the sweep command that captures the missing one on a GPU."""
    present = directions_in(df)
    if direction in present:
        return None
    held = " and ".join(direction_label(d) for d in present) or "no"
    return (
        f"No {direction_label(direction)} rows in this data: it holds {held} timings only. Backward timings "
        f"are captured on a GPU with `{DIRECTIONS_COMMAND}` (add `--variants`, `--n` and `--dtypes` to keep "
        "it short); load that file here."
    )


EACH_N_OWN_R = "each N's own"  # the R filter's choice that keeps every row where no N was measured at two R


def one_r_per_n(df: pd.DataFrame) -> bool:
    """Whether every (dtype, N) in `df` was measured at one R only (the default sweep: R=4096, tiny N at more rows),
    so curves over N can keep all rows without mixing row counts at one N."""
    if df.empty or "n_rows" not in df.columns:
        return False
    return bool(df.groupby(["dtype", "n_cols"])["n_rows"].nunique().max() <= 1)


ROW_DEFAULTS = ("mode", "largest")  # row_choices' defaults where "each N's own" is not offered
EACH_N_OWN_R_HELP = f"'{EACH_N_OWN_R}': every N at the one R it was measured at (the sweep gives tiny N more rows)"


def row_choices(df: pd.DataFrame, r_values: list[int], default: str = "mode") -> tuple[list, int, str]:
    """An R (rows) picker's (choices, default index, help text): EACH_N_OWN_R first where one_r_per_n(df), then
    `r_values`; the default is EACH_N_OWN_R when offered, else the most common R of `df` (`default='mode'`) or the
    largest of `r_values` ('largest'). ValueError for another default or no R values."""
    if default not in ROW_DEFAULTS:
        raise ValueError(f"unknown R default {default!r}; allowed: {', '.join(ROW_DEFAULTS)}")
    if not r_values:
        raise ValueError("no R values to choose from")
    choices: list = ([EACH_N_OWN_R] if one_r_per_n(df) else []) + list(r_values)
    if choices[0] == EACH_N_OWN_R:
        index = 0
    elif default == "largest":
        index = choices.index(max(r_values))
    else:
        index = choices.index(int(df["n_rows"].mode().iloc[0]))
    return choices, index, EACH_N_OWN_R_HELP


def picked_rows(choice: object) -> int | None:
    """The R a row_choices choice keeps: None for EACH_N_OWN_R (every row), else that R."""
    return None if choice == EACH_N_OWN_R else int(choice)


def rows_note(df: pd.DataFrame) -> str:
    """' N 8-64 ran at more rows (R 131,072-1,048,576) than the others (R 4,096): ...' where the N of `df` were
    measured at different R (the sweep gives tiny N >= 32 MB of rows), so a chart over N is read right; '' else."""
    if df.empty or "n_rows" not in df.columns or df["n_rows"].nunique() < 2 or not one_r_per_n(df):
        return ""
    per_n = df.groupby("n_cols")["n_rows"].first()
    common = int(per_n.mode().iloc[0])
    other = per_n[per_n != common]
    return (
        f" N {int(other.index.min()):,}-{int(other.index.max()):,} ran at more rows (R {int(other.min()):,}-"
        f"{int(other.max()):,}) than the others (R {common:,}): their times are for a larger tensor, their GB/s "
        "compare."
        if other.min() > common
        else f" {len(other)} N ran at another R than {common:,} (hover for R)."
    )


def hidden_by_filters(df: pd.DataFrame, filters: Filters) -> str | None:
    """What the multiselect and range filters hide (dtype and timing method pick one by design), e.g.
    'Filters hide 2 of 7 variants (auto, splitrow): 780 of 2,730 rows.'; None when they hide nothing."""
    opts = options(df)
    parts = []
    for label, key, chosen in (
        ("files", "sources", filters.sources),
        ("variants", "variants", filters.variants),
        ("num_warps", "num_warps", filters.num_warps),
    ):
        if chosen is None:
            continue
        hidden = [v for v in opts[key] if v not in chosen]
        if hidden:
            shown = ", ".join(map(str, hidden[:6])) + (", ..." if len(hidden) > 6 else "")
            parts.append(f"{len(hidden)} of {len(opts[key])} {label} ({shown})")
    if filters.n_range is not None:
        outside = [n for n in opts["n_values"] if not filters.n_range[0] <= n <= filters.n_range[1]]
        if outside:
            parts.append(
                f"{len(outside)} of {len(opts['n_values'])} N outside {filters.n_range[0]:,}–{filters.n_range[1]:,}"
            )
    if filters.n_rows is not None and len(opts["n_rows"]) > 1:
        others = [r for r in opts["n_rows"] if r != filters.n_rows]
        parts.append(f"{len(others)} other R ({', '.join(f'{r:,}' for r in others)})")
    if not parts:
        return None
    kept = apply_filters(
        df,
        Filters(
            variants=filters.variants,
            n_range=filters.n_range,
            n_rows=filters.n_rows,
            num_warps=filters.num_warps,
            sources=filters.sources,
            direction=None,
        ),
        method=False,
    )
    return f"Filters hide {'; '.join(parts)}: {len(df) - len(kept):,} of {len(df):,} rows."


def options(df: pd.DataFrame) -> dict[str, list]:
    """Distinct values for the filter widgets: variants (torch first), dtypes, n values, num_warps, methods (the
    steady-state timing methods: not 'none', nor 'cold_start', whose rows the Kernel evidence page shows apart)."""
    variants = sorted(df["variant"].dropna().unique(), key=lambda v: (v != TORCH, v))
    timed = df.loc[~df["method"].isin(("none", "cold_start")), "method"].dropna().unique()  # cold_start: its own table
    order = ("per_call_events", "back_to_back_flushed", "cuda_graph")
    return {
        "variants": list(variants),
        "dtypes": sorted(df["dtype"].dropna().unique(), key=lambda d: ("fp16", "bf16", "fp32").index(d)),
        "n_values": sorted(int(n) for n in df["n_cols"].dropna().unique()),
        "n_rows": sorted(int(r) for r in df["n_rows"].dropna().unique()),
        "num_warps": sorted(int(w) for w in df["num_warps"].dropna().unique()),
        "methods": sorted(timed, key=lambda m: order.index(m) if m in order else len(order)),
        "sources": sorted(df["source"].dropna().unique()) if "source" in df.columns else [],
    }


def ran(df: pd.DataFrame) -> pd.DataFrame:
    """Rows that ran and have a time."""
    return df[(df["error"].fillna("") == "") & df["median_us"].notna()]


def config_label(row: pd.Series | dict) -> str:
    """'teaching fp16 R=4096 N=1000 {"num_warps": 4}' for hovers and tables."""
    tunables = row.get("tunables")
    extra = "" if tunables is None or pd.isna(tunables) or tunables == "{}" else f" {tunables}"
    rows = f" R={row['n_rows']}" if "n_rows" in row else ""
    return f"{row['variant']} {row['dtype']}{rows} N={row['n_cols']}{extra}"


SETUP = "setup"  # label column of one GPU / run / file, added where several are loaded (with_setup)
_RUN_KEYS = ("gpu_name", "variant", "dtype", "n_rows", "n_cols", "tunables", "method", "direction")


def setup_columns(df: pd.DataFrame) -> list[str]:
    """The columns that tell apart measurements which must never be compared with each other, among
    `source` (several files), `gpu_name` (several GPUs) and `run_id`; only those that vary in `df`.

    `run_id` counts only where one GPU has several runs that timed the same config and method (a rerun to
    compare); runs that timed different configs are parts of one sweep and stay together.
    """
    columns = [c for c in ("source", "gpu_name") if c in df.columns and df[c].nunique(dropna=False) > 1]
    if "run_id" in df.columns and df["run_id"].nunique(dropna=False) > 1:
        timed = ran(df[df["method"] != "none"])
        keys = [c for c in (*_RUN_KEYS, "source") if c in timed.columns]
        if len(timed) and (timed.groupby(keys, dropna=False)["run_id"].nunique(dropna=False) > 1).any():
            columns.append("run_id")
    return columns


def setup_labels(df: pd.DataFrame, columns: list[str] | None = None) -> pd.Series:
    """Per row, which GPU / run / file it belongs to: 'NVIDIA H200', 'NVIDIA H200 · run r2', 'a100.csv'
    ('' when only one is loaded). A file name alone where each file holds one GPU and run."""
    columns = setup_columns(df) if columns is None else columns
    if not columns:
        return pd.Series("", index=df.index, dtype="string")
    if (
        "source" in columns
        and len(columns) > 1
        and all(
            df.groupby("source", dropna=False)[c].nunique(dropna=False).max() <= 1 for c in columns if c != "source"
        )
    ):
        columns = ["source"]
    parts = [("run " if c == "run_id" else "") + df[c].astype("string").fillna("?") for c in columns]
    label = parts[0]
    for part in parts[1:]:
        label = label + " · " + part
    return label.astype("string")


def with_setup(df: pd.DataFrame) -> pd.DataFrame:
    """`df` with a `setup` column (setup_labels) when it holds several GPUs, runs or files; else without one."""
    columns = setup_columns(df)
    if not columns:
        return df.drop(columns=SETUP, errors="ignore")
    return df.assign(**{SETUP: setup_labels(df, columns)})


def setups(df: pd.DataFrame) -> list[str]:
    """The distinct setup labels of `df` (sorted; [] when only one GPU / run / file is loaded)."""
    return sorted(set(setup_labels(df))) if setup_columns(df) else []


def split_setups(df: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """[(label, rows)] per GPU / run / file; [('', df)] when there is only one."""
    labels = setup_labels(df)
    if not setup_columns(df):
        return [("", df)]
    return [(label, df[labels == label]) for label in sorted(set(labels))]


def setup_keys(table: pd.DataFrame) -> list[str]:
    """The label columns of `table` that keep GPUs / runs / files apart (`setup`, `source`) where present."""
    return [c for c in (SETUP, "source") if c in table.columns]


def best_per_n(df: pd.DataFrame, group: tuple[str, ...] = ("variant", "dtype", "n_cols")) -> pd.DataFrame:
    """For each (variant, dtype, N) the fastest config (lowest median_us) of the rows given, per GPU / run /
    file when several are loaded (their `setup` label column is added then)."""
    timed = with_setup(ran(df))
    keys = [*group, *setup_keys(timed)]
    if timed.empty:
        return timed
    best = timed.loc[timed.groupby(keys, dropna=False)["median_us"].idxmin()]
    return best.sort_values(keys).reset_index(drop=True)


_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


def md(value: object) -> str:
    """`value` as text that Streamlit's markdown shows literally: every markdown character backslash-escaped, so a
    GPU or variant name such as '![x](http://host/p.png)' from a loaded file is never an image, link or HTML."""
    return _MARKDOWN.sub(r"\\\1", str(value))


def default_series(table: pd.DataFrame) -> list[str]:
    """The few series a time-vs-N chart draws at first: auto, torch, the fastest peer backend (lowest geometric
    mean time over the N it shares with torch) and the seed's teaching kernel, those that are present."""
    present = set(table["variant"]) if len(table) else set()
    shown = [v for v in ("auto", TORCH, "teaching") if v in present]
    peers = [p for p in PEER_BACKENDS if p != TORCH and p in present]
    if peers:
        timed = ran(table)
        common = set(timed.loc[timed["variant"] == TORCH, "n_cols"]) or set(timed["n_cols"])
        part = timed[timed["variant"].isin(peers) & timed["n_cols"].isin(common)]
        if len(part):
            geomean = part.groupby("variant")["median_us"].apply(
                lambda s: float(np.exp(np.log(s.astype(float)).mean()))
            )
            shown.insert(2, str(geomean.idxmin()))
    return shown


def pow2_edges(best: pd.DataFrame) -> pd.DataFrame:
    """Per variant and measured power of two p: the fastest time at p-1, p and p+1 (µs) and p+1 / p, where
    BLOCK_SIZE = next_pow2(N) doubles; rows only where p and at least one neighbour were measured."""
    timed = ran(best)
    out = []
    for (variant, *setup), rows in timed.groupby(["variant", *setup_keys(timed)], dropna=False):
        by_n = rows.groupby("n_cols")["median_us"].min()
        for p in sorted(int(n) for n in by_n.index if int(n) > 2 and int(n) & (int(n) - 1) == 0):
            below, above = by_n.get(p - 1), by_n.get(p + 1)
            if below is None and above is None:
                continue
            out.append(
                {
                    **dict(zip(setup_keys(timed), setup, strict=True)),
                    "variant": variant,
                    "p": p,
                    "p-1 µs": below,
                    "p µs": float(by_n[p]),
                    "p+1 µs": above,
                    "p+1 / p": None if above is None else float(above) / float(by_n[p]),
                }
            )
    return pd.DataFrame(out)


def speedup_vs_torch(df: pd.DataFrame, ours_only: bool = False) -> pd.DataFrame:
    """Best config per (variant, dtype, N) with `torch_us` and `speedup` = torch time / its time; torch of the same
    GPU / run / file only. `ours_only`: Blockscope's kernels alone (no Inductor, Liger or Quack)."""
    best = best_per_n(df)
    keys = ["dtype", "n_cols", *setup_keys(best)]
    torch_rows = best[best["variant"] == TORCH][[*keys, "median_us"]].rename(columns={"median_us": "torch_us"})
    triton = best[~best["variant"].isin(PEER_BACKENDS if ours_only else (TORCH,))]
    out = triton.merge(torch_rows, on=keys, how="inner")
    out["speedup"] = (out["torch_us"] / out["median_us"]).astype("Float64")
    return out


def power_of_two_boundaries(n_min: int, n_max: int) -> list[int]:
    """Powers of two in [n_min, n_max]: where BLOCK_SIZE = next_pow2(N) doubles just after."""
    if n_min is None or n_max is None or n_max < 1:
        return []
    low = max(1, int(n_min))
    power = 1 << max(0, math.ceil(math.log2(low)))
    out = []
    while power <= n_max:
        out.append(power)
        power *= 2
    return out


def masked_fraction(n_cols: int, tile_width: int) -> float:
    """Lanes masked off / lanes spanned when a row of N is covered by whole tiles of `tile_width` lanes."""
    spanned = math.ceil(n_cols / tile_width) * tile_width
    return (spanned - n_cols) / spanned


def lane_curve(variants: list[str], n_values: list[int], n_rows: int = 4096, dtype: str = "fp16") -> pd.DataFrame:
    """variant, n_cols, tile_width, masked_lane_fraction (0..1) for each variant's default plan in `dtype`.

    Names that are not registered Triton variants (torch, peer backends, renamed or older variants in a
    results file) have no plan and are left out; they are data, not errors. Uses blockscope.profiling.inspect.lanes.
    """
    from blockscope.profiling.inspect import lanes

    frames = []
    for variant in variants:
        if not is_registered(variant):
            continue
        try:
            frames.append(lanes.lane_curve(variant, n_values, n_rows=n_rows, dtype=dtype).assign(variant=variant))
        except (ValueError, TypeError, AttributeError, NotImplementedError):  # a variant without a lane plan
            continue
    if not frames:
        return pd.DataFrame(columns=["variant", "n_cols", "tile_width", "masked_lane_fraction"])
    return pd.concat(frames, ignore_index=True)


def is_registered(variant: str) -> bool:
    """Whether `variant` is a name in kernels.VARIANTS (False for torch and names from elsewhere)."""
    from blockscope import kernels

    return isinstance(variant, str) and variant in kernels.VARIANTS


def lane_table(values: list[float], dtype: str = "fp32") -> tuple[pd.DataFrame, int]:
    """The seed's worked example for one row, computed by running kernels.softmax_teaching.

    Returns (table with columns offset, loaded, valid, softmax, stored; BLOCK_SIZE). Lanes >= N load -inf,
    are not valid and are not stored. Needs CUDA or TRITON_INTERPRET=1 set before triton was imported.
    """
    import torch

    from blockscope import kernels

    if not values:
        raise ValueError("the row is empty; type at least one number")
    n = len(values)
    block = kernels.next_power_of_2(n)
    if block > 1024:
        raise ValueError(f"N={n}: keep the worked example under 1024 values")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.tensor([values], dtype=kernels.dtype_from_name(dtype), device=device)
    probabilities = kernels.softmax_teaching(x)[0].float().cpu().tolist()
    offsets = list(range(block))
    table = pd.DataFrame(
        {
            "offset": offsets,
            "loaded": [float(values[i]) if i < n else -math.inf for i in offsets],
            "valid": [i < n for i in offsets],
            "softmax": [probabilities[i] if i < n else 0.0 for i in offsets],
            "stored": [i < n for i in offsets],
        }
    )
    return table, block


ROW_MAX_VALUES = 1024  # the worked example's widest row (it runs on the CPU interpreter when there is no GPU)
ROW_MAX_CHARS = 32 * ROW_MAX_VALUES
DTYPE_MAX: dict[str, float] = {"fp32": 3.4028234663852886e38, "bf16": 3.3895313892515355e38, "fp16": 65504.0}


def parse_row(text: str, dtype: str | None = None) -> list[float]:
    """'0, 1, 2 3' -> [0.0, 1.0, 2.0, 3.0]: 1 to ROW_MAX_VALUES finite numbers (within `dtype`'s range when given);
    ValueError names the bad token and what is allowed."""
    tokens = [t for t in text.replace(",", " ").replace("[", " ").replace("]", " ").split() if t]
    if not tokens:
        raise ValueError(f"no numbers; type 1 to {ROW_MAX_VALUES:,} numbers separated by commas or spaces")
    if len(tokens) > ROW_MAX_VALUES:
        raise ValueError(f"{len(tokens):,} numbers; allowed: 1 to {ROW_MAX_VALUES:,}")
    limit = DTYPE_MAX.get(dtype or "fp32", DTYPE_MAX["fp32"])
    out = []
    for token in tokens:
        shown = token if len(token) <= 40 else token[:40] + "…"
        try:
            value = float(token)
        except ValueError:
            raise ValueError(f"{shown!r} is not a number; type numbers separated by commas or spaces") from None
        if not math.isfinite(value) or abs(value) > limit:
            raise ValueError(
                f"{shown!r} is outside the {dtype or 'fp32'} range; "
                f"allowed: finite numbers from {-limit:g} to {limit:g}"
            )
        out.append(value)
    return out


def regimes(
    df: pd.DataFrame, launch_factor: float = LAUNCH_BOUND_FACTOR, bandwidth_fraction: float = BANDWIDTH_BOUND_FRACTION
) -> pd.DataFrame:
    """Regime of each (variant, dtype, N) best config, derived from the data.

    spill-bound: the best config still spills (spill_store_bytes > 0); bandwidth-bound: copy_fraction >=
    `bandwidth_fraction`; launch-bound: median_us within `launch_factor` x the smallest time that variant
    measured for that dtype (its flat, launch-cost floor); otherwise 'in between'. Columns: variant, dtype, n_cols,
    median_us, copy_fraction, spill_store_bytes, regime.
    """
    best = best_per_n(df)
    if best.empty:
        return best.assign(regime=pd.Series(dtype="string"))
    keys = ["variant", "dtype", *setup_keys(best)]
    floor = best.groupby(keys, dropna=False)["median_us"].transform("min")
    spills = best["spill_store_bytes"].fillna(0) > 0
    bandwidth = best["copy_fraction"].fillna(0) >= bandwidth_fraction
    launch = best["median_us"] <= launch_factor * floor
    regime = pd.Series("in between", index=best.index, dtype="string")
    regime[launch.fillna(False).astype(bool)] = "launch-bound"
    regime[bandwidth.fillna(False).astype(bool)] = "bandwidth-bound"
    regime[spills.fillna(False).astype(bool)] = "spill-bound"
    columns = ["variant", "dtype", "n_cols", "median_us", "copy_fraction", "spill_store_bytes", *setup_keys(best)]
    return best[columns].assign(regime=regime.values)


def regime_spans(regime_table: pd.DataFrame) -> list[tuple[int, int, str]]:
    """Contiguous N ranges of one regime over the Triton variants' fastest config per N.

    Returns (n_first, n_last, regime) spans for shading; the regime at each N is that of the fastest
    Triton variant there. [] when the table holds several GPUs / runs / files (one shading cannot show them).
    """
    triton = regime_table[regime_table["variant"] != TORCH]
    if triton.empty or (SETUP in triton.columns and triton[SETUP].nunique() > 1):
        return []
    fastest = triton.loc[triton.groupby("n_cols")["median_us"].idxmin()].sort_values("n_cols")
    spans: list[tuple[int, int, str]] = []
    for n, regime in zip(fastest["n_cols"], fastest["regime"], strict=True):
        if spans and spans[-1][2] == regime:
            spans[-1] = (spans[-1][0], int(n), regime)
        else:
            spans.append((int(n), int(n), str(regime)))
    return spans


def summary(df: pd.DataFrame) -> dict[str, Any]:
    """What is loaded: GPUs, versions, copy bandwidth (GB/s), sweep extent, row and error counts."""

    def distinct(column: str) -> list:
        return sorted(str(v) for v in df[column].dropna().unique()) if column in df.columns else []

    triton = df[df["variant"] != TORCH]
    errors = df["error"].fillna("").astype(str)
    not_run = errors.str.startswith(NOT_RUN_PREFIXES)
    return {
        "rows": len(df),
        "configs": len(df.drop_duplicates(list(CONFIG_COLUMNS))),
        "errors": int(((errors != "") & ~not_run).sum()),  # failed: an error other than a backend's own rules
        "not_run": int(not_run.sum()),  # 'unsupported: ...' (a backend's rules) or 'unavailable: ...' (not installed)
        "gpus": distinct("gpu_name"),
        "sm_counts": sorted(int(v) for v in df["sm_count"].dropna().unique()),
        "torch_versions": distinct("torch_version"),
        "triton_versions": distinct("triton_version"),
        "drivers": distinct("driver_version"),
        "copy_gbps": sorted(float(v) for v in df["copy_gbps"].dropna().unique()),
        "measured_at": distinct("measured_at"),
        "variants": options(df)["variants"],
        "dtypes": distinct("dtype"),
        "methods": options(df)["methods"],
        "n_min": int(df["n_cols"].min()) if len(df) else None,
        "n_max": int(df["n_cols"].max()) if len(df) else None,
        "n_count": int(df["n_cols"].nunique()),
        "rows_r": sorted(int(v) for v in df["n_rows"].dropna().unique()),
        "num_warps": sorted(int(v) for v in triton["num_warps"].dropna().unique()),
    }


@dataclass(frozen=True)
class Finding:
    """One headline computed from the data: a title, a sentence, and the rows behind it."""

    title: str
    text: str
    data: pd.DataFrame


def n_runs(selected: list[int], all_n: list[int]) -> str:
    """'255–256, 2047–262144': runs of `selected` that are consecutive in the measured N list `all_n`."""
    position = {n: i for i, n in enumerate(sorted(all_n))}
    runs: list[list[int]] = []
    for n in sorted(selected):
        if runs and position.get(n, -2) == position.get(runs[-1][-1], -10) + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(f"{r[0]}" if len(r) == 1 else f"{r[0]}–{r[-1]}" for r in runs)


def finding_wins(df: pd.DataFrame, method: str) -> Finding:
    """Where the fastest Blockscope kernel (its variants and auto; not a peer backend) beats torch.softmax, and by
    how much (per GPU / run / file)."""
    rows = speedup_vs_torch(df[df["method"] == method], ours_only=True)
    if rows.empty:
        return Finding("Blockscope vs torch", f"No Blockscope/torch pairs measured with {method}.", rows)
    setup = setup_keys(rows)
    best = rows.loc[rows.groupby(["dtype", "n_cols", *setup], dropna=False)["speedup"].idxmax()]
    wins = best[best["speedup"] > 1.0]
    table = best[[*setup, "dtype", "n_cols", "variant", "num_warps", "median_us", "torch_us", "speedup"]]

    def where(row: pd.Series) -> str:
        return f"{row[SETUP]} " if SETUP in setup else ""

    if wins.empty:
        top = best.loc[best["speedup"].idxmax()]
        text = (
            f"With {method}, torch.softmax is at least as fast as every Blockscope kernel at every N; the closest "
            f"is {top['variant']} at N={top['n_cols']} ({where(top)}{top['dtype']}), "
            f"{float(top['speedup']):.2f}x."
        )
    else:
        top = wins.loc[wins["speedup"].idxmax()]
        parts = []
        for key, group in wins.groupby([*([SETUP] if SETUP in setup else []), "dtype"], sort=True):
            key = key if isinstance(key, tuple) else (key,)
            same = best[(best["dtype"] == key[-1]) & ((best[SETUP] == key[0]) if SETUP in setup else True)]
            measured = [int(n) for n in same["n_cols"]]
            parts.append(
                f"{' '.join(map(str, key))}: {len(group)} of {len(measured)} N "
                f"({n_runs([int(n) for n in group['n_cols']], measured)})"
            )
        text = (
            f"With {method}, the fastest Blockscope kernel beats torch.softmax at "
            + "; ".join(parts)
            + f". Largest gain: {top['variant']} {float(top['speedup']):.2f}x at N={top['n_cols']} "
            f"({where(top)}{top['dtype']}, {float(top['median_us']):.1f} vs {float(top['torch_us']):.1f} µs)."
        )
    if SETUP in setup:
        text += " Each GPU / run is compared with its own torch.softmax."
    return Finding("Where Triton beats torch", text, table.reset_index(drop=True))


def finding_spills(df: pd.DataFrame) -> Finding:
    """The smallest N at which each (variant, dtype, num_warps) spills registers."""
    triton = df[(df["variant"] != TORCH) & df["spill_store_bytes"].notna()]
    if triton.empty:
        return Finding("Where spills start", "No compile facts (spill bytes) in this data.", triton)
    spilling = with_setup(triton[triton["spill_store_bytes"] > 0])
    if spilling.empty:
        return Finding("Where spills start", "No configuration spills registers in this data.", spilling)
    setup = setup_keys(spilling)
    first = (
        spilling.groupby([*setup, "variant", "dtype", "num_warps"], dropna=False)
        .agg(first_spill_n=("n_cols", "min"), max_spill_bytes=("spill_store_bytes", "max"), n_regs=("n_regs", "max"))
        .reset_index()
        .sort_values([*setup, "dtype", "variant", "num_warps"])
    )
    parts = [
        f"{(getattr(r, SETUP) + ' ') if SETUP in setup else ''}{r.variant} {r.dtype} {r.num_warps} warps "
        f"from N={r.first_spill_n}"
        for r in first.sort_values("first_spill_n").head(4).itertuples()
    ]
    text = (
        f"Spills start at: {'; '.join(parts)}"
        + (" ..." if len(first) > 4 else "")
        + ". More warps per program move the start to larger N (fewer lanes per thread)."
    )
    return Finding("Where spills start", text, first.reset_index(drop=True))


def finding_rank_flips(df: pd.DataFrame) -> Finding:
    """(dtype, N) where the fastest variant depends on the timing method."""
    timed = best_per_n(df[df["method"] != "none"], group=("variant", "dtype", "n_cols", "method"))
    if timed.empty or timed["method"].nunique() < 2:
        return Finding("Ranking flips between timing methods", "Only one timing method in this data.", timed)
    setup = [SETUP] if SETUP in timed.columns else []  # never compare a GPU's timings with another's
    winners = timed.loc[timed.groupby([*setup, "dtype", "n_cols", "method"], dropna=False)["median_us"].idxmin()]
    table = winners.pivot_table(index=[*setup, "dtype", "n_cols"], columns="method", values="variant", aggfunc="first")
    flips = table[table.nunique(axis=1) > 1].reset_index()
    if flips.empty:
        text = "The fastest variant is the same under every timing method at every (dtype, N)."
    else:
        examples = [
            (f"{r[SETUP]} " if setup else "")
            + f"{r['dtype']} N={r['n_cols']} ("
            + ", ".join(f"{m}: {r[m]}" for m in table.columns)
            + ")"
            for _, r in flips.head(3).iterrows()
        ]
        text = (
            f"The fastest variant changes with the timing method at {len(flips)} of {len(table)} "
            f"(dtype, N) points, e.g. {'; '.join(examples)}."
        )
    flips.columns.name = None
    return Finding("Ranking flips between timing methods", text, flips)


def findings(df: pd.DataFrame, method: str) -> list[Finding]:
    """The Overview headlines, all computed from `df`."""
    return [finding_wins(df, method), finding_spills(df), finding_rank_flips(df)]


def warps_pivot(df: pd.DataFrame, value: str) -> pd.DataFrame:
    """N (rows) x num_warps (columns) of `value` for one variant/dtype/method slice (best other tunables).

    One GPU / run / file only (split_setups first); ValueError names them when several are given."""
    timed = df[df["num_warps"].notna()]
    if setup_columns(timed):
        raise ValueError(
            f"warps_pivot of several GPUs / runs / files ({', '.join(setups(timed))}); allowed: one "
            "(split with split_setups)"
        )
    if value in ("median_us", "gbps"):
        timed = best_per_n(timed, group=("n_cols", "num_warps"))
    if timed.empty:
        return pd.DataFrame()
    pivot = timed.pivot_table(index="n_cols", columns="num_warps", values=value, aggfunc="min")
    return pivot.astype(float).sort_index()


def pivot_display(pivot: pd.DataFrame) -> pd.DataFrame:
    """A warps_pivot as a flat table: n_cols then one '<w> warps' column per num_warps."""
    return pivot.rename(columns=lambda w: f"{int(w)} warps").reset_index()


def best_warps_table(df: pd.DataFrame) -> pd.DataFrame:
    """For each (variant, dtype, N): the fastest num_warps, its time and the runner-up's slowdown (%)."""
    timed = ran(df[(df["variant"] != TORCH) & df["num_warps"].notna()])
    if timed.empty:
        return timed
    per_warps = best_per_n(timed, group=("variant", "dtype", "n_cols", "num_warps"))
    setup = [SETUP] if SETUP in per_warps.columns else []
    rows = []
    for key, group in per_warps.groupby([*setup, "variant", "dtype", "n_cols"]):
        *where, variant, dtype, n = key
        ordered = group.sort_values("median_us")
        first = ordered.iloc[0]
        second = ordered.iloc[1] if len(ordered) > 1 else None
        rows.append(
            {
                **dict(zip(setup, where, strict=True)),
                "variant": variant,
                "dtype": dtype,
                "n_cols": int(n),
                "best_num_warps": int(first["num_warps"]),
                "median_us": float(first["median_us"]),
                "runner_up_num_warps": int(second["num_warps"]) if second is not None else None,
                "runner_up_slower_pct": (
                    float(second["median_us"] / first["median_us"] - 1) * 100 if second is not None else None
                ),
            }
        )
    return pd.DataFrame(rows)


def kernel_names_table(df: pd.DataFrame) -> pd.DataFrame:
    """Which CUDA kernels ran, per variant and dtype, over which N range (contiguous runs of one name set)."""
    named = df[df["kernel_names"].notna()].drop_duplicates(["variant", "dtype", "n_cols", "kernel_names"])
    rows = []
    for (variant, dtype), group in named.sort_values("n_cols").groupby(["variant", "dtype"]):
        per_n = group.groupby("n_cols")["kernel_names"].agg(lambda s: "; ".join(sorted(set(s))))
        start = prev = None
        name = None
        for n, names in per_n.items():
            if names != name:
                if name is not None:
                    rows.append({"variant": variant, "dtype": dtype, "n_from": start, "n_to": prev, "kernels": name})
                start, name = int(n), names
            prev = int(n)
        rows.append({"variant": variant, "dtype": dtype, "n_from": start, "n_to": prev, "kernels": name})
    return pd.DataFrame(rows, columns=["variant", "dtype", "n_from", "n_to", "kernels"])


NAME_THE_REST = "Run `python -m profiling sweep --out FILE` on the same file to name them (nothing is timed again)."


def kernel_names_coverage(df: pd.DataFrame) -> str | None:
    """A note when only part of `df`'s timed configs carry kernel names (the sweep's trace pass names them last, so
    a sweep stopped by --max-minutes or a signal leaves the rest unnamed): how many, per dtype; None when every
    config or none has names (NAME_THE_REST says how to name them)."""
    timed = ran(df)
    if not len(timed) or "kernel_names" not in timed.columns:
        return None
    keys = ["variant", "dtype", "n_rows", "n_cols", "tunables"]
    configs = timed.assign(named=timed["kernel_names"].notna()).groupby(keys, dropna=False)["named"].any()
    named, total = int(configs.sum()), len(configs)
    if named in (0, total):
        return None
    parts = []
    for dtype, of_dtype in configs.groupby(level="dtype"):
        some, count = int(of_dtype.sum()), len(of_dtype)
        parts.append(f"{dtype} " + ("all" if some == count else "none" if not some else f"{some} of {count}"))
    return (
        f"Kernel names for {named:,} of {total:,} configs ({', '.join(parts)}): the sweep's trace pass, which names "
        "them after all timing, did not reach the rest."
    )


def seconds_text(seconds: float) -> str:
    """0.0031 -> '3.1 ms', 1.642 -> '1.64 s': a duration short enough for a metric."""
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def first_call_table(df: pd.DataFrame) -> pd.DataFrame:
    """first_call_s (JIT compile + launch, s) next to the steady-state median (µs) per config and method."""
    timed = ran(df[df["first_call_s"].notna()])
    columns = ["variant", "dtype", "n_rows", "n_cols", "num_warps", "tunables", "method", "first_call_s", "median_us"]
    out = timed[columns].copy()
    out["first_over_steady"] = (out["first_call_s"] * 1e6 / out["median_us"]).astype("Float64")
    return out.reset_index(drop=True)


FALLBACK_ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120")


def arch_names() -> tuple[str, ...]:
    """GPU architectures the occupancy calculator knows (blockscope.profiling.inspect.occupancy.ARCHS when present)."""
    try:
        from blockscope.profiling.inspect import occupancy

        return tuple(occupancy.ARCHS)
    except (ImportError, AttributeError):
        return FALLBACK_ARCHS


def data_arch(df: pd.DataFrame, default: str = "sm_90") -> str:
    """'sm_90' from the table's compute_capability ('9.0'); `default` when absent."""
    capability = df["compute_capability"].dropna() if "compute_capability" in df.columns else []
    capability = [c for c in capability if c and c != "none"]
    return "sm_" + str(capability[0]).replace(".", "") if capability else default


def waves(grid_programs: int, sm_count: int, blocks_per_sm: int) -> tuple[float, float]:
    """(waves, tail_wave_fill): grid / (SMs x blocks per SM) and how full the last wave is (0..1].

    Uses blockscope.profiling.inspect.occupancy.waves when present.
    """
    try:
        from blockscope.profiling.inspect import occupancy

        return occupancy.waves(grid_programs, sm_count, blocks_per_sm)
    except (ImportError, AttributeError):
        pass
    per_wave = max(1, sm_count * blocks_per_sm)
    count = grid_programs / per_wave
    full = math.ceil(count)
    tail = (grid_programs - (full - 1) * per_wave) / per_wave if full else 0.0
    return count, tail


def load_ncu(path: str | Path = NCU_PATH) -> pd.DataFrame | None:
    """data/ncu_validation.csv with readable column names (percent columns 0..100), or None if absent.

    Adds theoretical_occupancy_pct, achieved_occupancy_pct, dram_pct, gpu_time_ns (gpu__time_duration.sum,
    ns), ncu_registers and ncu_blocks_per_sm (the smallest of ncu's four block limits) when ncu's metrics are there.
    """
    path = Path(path)
    if not path.exists():
        return None
    table = pd.read_csv(path)
    renames = {
        "sm__maximum_warps_per_active_cycle_pct": "theoretical_occupancy_pct",
        "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved_occupancy_pct",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_pct",
        "gpu__time_duration.sum": "gpu_time_ns",
    }
    table = table.rename(columns={k: v for k, v in renames.items() if k in table.columns})
    for column in ("theoretical_occupancy_pct", "achieved_occupancy_pct", "dram_pct", "gpu_time_ns"):
        if column in table.columns:
            table[column] = pd.to_numeric(table[column].astype(str).str.replace(",", ""), errors="coerce")
    if "launch__registers_per_thread" in table.columns:
        table["ncu_registers"] = _ncu_numbers(table["launch__registers_per_thread"]).round().astype("Int64")
    limits = [f"launch__occupancy_limit_{k}" for k in ("registers", "shared_mem", "warps", "blocks")]
    if set(limits) <= set(table.columns):
        values = pd.concat([_ncu_numbers(table[c]) for c in limits], axis=1)
        table["ncu_blocks_per_sm"] = values.min(axis=1, skipna=True).round().astype("Int64")
    if "error" in table.columns:
        table["error"] = table["error"].astype("string").fillna("")
    return table


def _ncu_numbers(series: pd.Series) -> pd.Series:
    """ncu's numbers as printed ('1,024') -> Float64."""
    return pd.to_numeric(series.astype(str).str.replace(",", ""), errors="coerce").astype("Float64")


NCU_ESTIMATE_COLUMNS = (
    "variant",
    "dtype",
    "n_cols",
    "tunables",
    "theoretical_occupancy_pct",
    "estimated_occupancy_pct",
    "achieved_occupancy_pct",
    "ncu_blocks_per_sm",
    "blocks_per_sm",
    "ncu_registers",
    "n_regs",
    "dram_pct",
    "gpu_time_ns",
)


def load_ncu_import(source: str | Path | bytes, name: str | None = None) -> pd.DataFrame:
    """An `ncu-import` table (or raw `ncu --csv` text) with load_ncu's column names: theoretical_occupancy_pct,
    achieved_occupancy_pct, dram_pct (% of peak), gpu_time_ns (ns), num_warps, ncu_registers, ncu_blocks_per_sm
    (the smallest of ncu's four block limits). Raises profiling.results.ncu.NcuError (a ValueError) when bad."""
    from blockscope.profiling.results.ncu import load_ncu_table

    table = load_ncu_table(source, name)
    frame = table.rename(
        columns={
            "dram_throughput_pct": "dram_pct",
            "duration_ns": "gpu_time_ns",
            "registers_per_thread": "ncu_registers",
        }
    )
    frame["num_warps"] = (frame["block_threads"] // 32).astype("Int64")
    limits = frame[["block_limit_registers", "block_limit_shared_mem", "block_limit_warps", "block_limit_sm"]]
    frame["ncu_blocks_per_sm"] = limits.astype("Float64").min(axis=1, skipna=True).round().astype("Int64")
    if "variant" in frame.columns:  # an ncu-import table: kernels that are not Blockscope's have no variant
        frame["variant"] = frame["variant"].astype("string").fillna("").replace("", "(not ours)")
    else:  # raw ncu CSV, not matched (that takes `ncu-import`): label rows by kernel name
        frame["variant"] = frame["kernel_name"].astype("string")
    for column in ("dtype", "n_cols", "n_rows", "tunables"):
        if column not in frame.columns:
            frame[column] = pd.NA
    return frame


def _tunables_key(text: Any) -> str:
    import json

    try:
        return json.dumps(json.loads(text), sort_keys=True) if isinstance(text, str) and text else ""
    except ValueError:
        return str(text)


def ncu_beside_estimates(ncu: pd.DataFrame, df: pd.DataFrame | None) -> pd.DataFrame:
    """ncu's rows (load_ncu or load_ncu_import) beside Blockscope's estimates for the same config from results
    `df`: estimated_occupancy_pct (occupancy calculator, 0..100), blocks_per_sm and n_regs (compiled). Rows
    are joined on config variant, dtype, n_rows, n_cols and tunables; ones without a config keep NA estimates."""
    out = ncu.copy()
    if "config_variant" in out.columns:
        out["config_variant"] = out["config_variant"].astype("string").fillna(out["variant"].astype("string"))
    else:
        out["config_variant"] = out["variant"].astype("string")
    for column in ("ncu_registers", "ncu_blocks_per_sm", "estimated_occupancy_pct"):
        if column not in out.columns:
            out[column] = pd.NA
    if "ncu_registers" in out.columns and "n_regs" in ncu.columns and out["ncu_registers"].isna().all():
        out["ncu_registers"] = ncu["n_regs"]  # data/ncu_validation.csv: launch__registers_per_thread is there too
    if "launch__registers_per_thread" in ncu.columns:
        out["ncu_registers"] = pd.to_numeric(ncu["launch__registers_per_thread"], errors="coerce")
    out = out.drop(columns=[c for c in ("n_regs", "blocks_per_sm") if c in out.columns])
    needed = {"variant", "dtype", "n_rows", "n_cols", "tunables", "occupancy", "blocks_per_sm", "n_regs"}
    if df is None or df.empty or not needed <= set(df.columns):
        out["estimated_occupancy_pct"] = pd.array([pd.NA] * len(out), dtype="Float64")
        out["blocks_per_sm"] = pd.array([pd.NA] * len(out), dtype="Int64")
        out["n_regs"] = pd.array([pd.NA] * len(out), dtype="Int64")
        return out
    estimates = df[list(needed)].copy()
    estimates["key"] = [_tunables_key(t) for t in estimates["tunables"]]
    estimates = estimates.drop_duplicates(["variant", "dtype", "n_rows", "n_cols", "key"])
    estimates["estimated_occupancy_pct"] = estimates["occupancy"].astype("Float64") * 100
    estimates = estimates.rename(columns={"variant": "config_variant"}).drop(columns=["tunables", "occupancy"])
    out = out.drop(columns=["estimated_occupancy_pct"])
    out["key"] = [_tunables_key(t) for t in out["tunables"]]
    for column in ("n_rows", "n_cols"):
        out[column] = pd.to_numeric(out[column], errors="coerce").astype("Int64")
        estimates[column] = pd.to_numeric(estimates[column], errors="coerce").astype("Int64")
    for column in ("config_variant", "dtype"):
        out[column] = out[column].astype("string")
        estimates[column] = estimates[column].astype("string")
    merged = out.merge(estimates, on=["config_variant", "dtype", "n_rows", "n_cols", "key"], how="left")
    return merged.drop(columns=["key"])


def load_driver_occupancy(path: str | Path = DRIVER_OCCUPANCY_PATH) -> pd.DataFrame | None:
    """data/occupancy_h200.csv (blocks/SM from the CUDA driver next to the calculator's) or None if absent.

    Adds `agrees` (driver_blocks_per_sm == calculator_blocks_per_sm) for rows without an error.
    """
    path = Path(path)
    if not path.exists():
        return None
    table = pd.read_csv(path)
    if {"driver_blocks_per_sm", "calculator_blocks_per_sm"} <= set(table.columns):
        table["agrees"] = table["driver_blocks_per_sm"] == table["calculator_blocks_per_sm"]
    if "error" in table.columns:
        table["error"] = table["error"].astype("string").fillna("")
    return table


OFFLINE_VS_LIVE_PATH = paths.OFFLINE_VS_LIVE


def load_offline_vs_live(path: str | Path = OFFLINE_VS_LIVE_PATH) -> pd.DataFrame | None:
    """data/offline_vs_live.csv (tools/offline_vs_live.py): live H200 vs offline sm_90 registers, spills and
    shared bytes for the same configs, with `regs_difference` = offline - live (registers/thread); None if absent."""
    path = Path(path)
    if not path.exists():
        return None
    table = pd.read_csv(path)
    table["offline_error"] = table["offline_error"].astype("string").fillna("")
    return table
