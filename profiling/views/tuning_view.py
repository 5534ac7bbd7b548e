"""What `auto` picks and why: its tuning table, the rule it follows for a typed shape, the candidates the tuner
measured, and how the pick compares with the other backends in a results table. Pure pandas (no streamlit, no
plotly); times in microseconds.

The pick mirrors kernels.auto.choose step by step (same BLOCK_SIZE bucket, dtype order, row alignment, nearest N
then R, the plan check, the heuristic) and `explain` also calls choose itself, so a drift between the two shows
(`Pick.agrees`) instead of a wrong explanation.
"""

from __future__ import annotations

import gzip
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from blockscope import paths
from blockscope.profiling.views import dashboard_data as dd

TUNING_LOG_ORDER = paths.TUNING_LOG_DIR / "order.json"  # the logs in the order they ran (data, not code)


def _ordered_logs() -> tuple[Path, ...]:
    """The shipped tuning logs, first the full tune, then each retune in the order it ran."""
    try:
        names = json.loads(TUNING_LOG_ORDER.read_text(encoding="utf-8"))["logs"]
    except (OSError, ValueError, KeyError, TypeError):
        return ()
    return tuple(paths.TUNING_LOG_DIR / name for name in names if isinstance(name, str) and "/" not in name)


TUNE_LOG_PATHS: tuple[Path, ...] = _ordered_logs()
TUNE_LOG_PATH = TUNE_LOG_PATHS[0] if TUNE_LOG_PATHS else paths.TUNING_LOG_DIR / "h200_tune_log.jsonl.gz"
DTYPES = ("fp16", "bf16", "fp32")
DTYPE_ORDER = {"fp16": ("fp16", "bf16", "fp32"), "bf16": ("bf16", "fp16", "fp32"), "fp32": ("fp32", "fp16", "bf16")}
LOG_COLUMNS = ("dtype", "n_rows", "n_cols", "variant", "tunables", "median_us", "torch_us", "error", "seconds")
TIEBREAK_COLUMNS = ("tiebreak_us", "chosen")  # autotune.break_ties: CUDA-graph us of tied configs, the one it chose


def tunables_text(tunables: dict | None) -> str:
    """'{"num_warps": 8, "rows_per_program": 16}' (sorted keys; '{}' for none)."""
    return json.dumps(dict(tunables or {}), sort_keys=True)


def shipped_gpus() -> list[str]:
    """GPU names of the tuning tables shipped in kernels/tuned/ (their 'gpu' field)."""
    from blockscope.kernels import auto

    names = []
    for path in sorted(auto.SHIPPED_DIR.glob("*.json")):
        try:
            names.append(str(json.loads(path.read_text()).get("gpu") or path.stem))
        except (OSError, ValueError):
            continue
    return names


def table_path(gpu_name: str) -> Path | None:
    """The tuning table file kernels.auto reads for `gpu_name`: the user's ($BLOCKSCOPE_CACHE_DIR/autotune) over
    the shipped one; None when there is neither."""
    from blockscope.kernels import auto

    stem = auto.gpu_key(gpu_name) + ".json"
    return next((path for path in (auto.user_table_dir() / stem, auto.SHIPPED_DIR / stem) if path.is_file()), None)


def entries_table(table: dict) -> pd.DataFrame:
    """One row per tuning-table entry: position (its index in the file), dtype, n_rows, n_cols, block_size
    (next_pow2(N)), group (auto.entry_group: the bucket it serves, 0 for rows over auto.WIDEST_BLOCK), alignment
    (auto.row_alignment: bytes of the widest load its rows allow),
    variant, tunables (JSON), median_us, torch_us
    and vs_torch = torch_us / median_us."""
    from blockscope.kernels import auto, dtype_from_name, next_power_of_2

    rows = [
        {
            "position": i,
            "dtype": e["dtype"],
            "n_rows": int(e["n_rows"]),
            "n_cols": int(e["n_cols"]),
            "block_size": next_power_of_2(int(e["n_cols"])),
            "group": auto.entry_group(int(e["n_cols"])),
            "alignment": auto.row_alignment(int(e["n_cols"]), dtype_from_name(e["dtype"]).itemsize),
            "variant": e["variant"],
            "tunables": tunables_text(e.get("tunables")),
            "median_us": float(e.get("median_us", math.nan)),
            "torch_us": float(e.get("torch_us", math.nan)),
        }
        for i, e in enumerate(table.get("entries", []))
    ]
    out = pd.DataFrame(
        rows,
        columns=[
            "position",
            "dtype",
            "n_rows",
            "n_cols",
            "block_size",
            "group",
            "alignment",
            "variant",
            "tunables",
            "median_us",
            "torch_us",
        ],
    )
    out["vs_torch"] = out["torch_us"] / out["median_us"]
    return out.sort_values(["dtype", "n_cols", "n_rows"]).reset_index(drop=True)


@dataclass
class Pick:
    """auto's choice for one shape and why: `rule` in words, the table `entry` it came from (None: heuristic),
    the `considered` entries (same bucket and dtype), and choose()'s own answer (`auto_variant`, `auto_tunables`)."""

    dtype: str
    n_rows: int
    n_cols: int
    variant: str
    tunables: dict[str, int]
    rule: str
    entry: dict | None = None
    considered: pd.DataFrame = field(default_factory=pd.DataFrame)
    table_file: str = ""
    auto_variant: str = ""
    auto_tunables: dict[str, int] = field(default_factory=dict)
    here_variant: str = ""  # what this process's auto runs (the heuristic's pick under the CPU interpreter)
    here_tunables: dict[str, int] = field(default_factory=dict)

    @property
    def agrees(self) -> bool:
        return (self.variant, self.tunables) == (self.auto_variant, self.auto_tunables)


def retune_history(table: dict) -> pd.DataFrame:
    """One row per retune of a tuning table: when, how many shapes, seconds, and the command that ran it."""
    rows = [
        {
            "made_at": str(r.get("made_at", "")),
            "shapes": r.get("shapes"),
            "seconds": r.get("seconds"),
            "command": str(r.get("command", "")),
        }
        for r in table.get("retuned", [])
    ]
    return pd.DataFrame(rows, columns=["made_at", "shapes", "seconds", "command"])


def check_shape(dtype: str, n_rows: int, n_cols: int) -> None:
    """ValueError naming what is allowed for a bad dtype, R or N."""
    from blockscope.kernels import auto

    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r} is not supported; allowed: {', '.join(DTYPES)}")
    if int(n_rows) < 1:
        raise ValueError(f"R = {n_rows}: rows must be at least 1")
    if not 1 <= int(n_cols) <= auto.MAX_N:
        raise ValueError(f"N = {n_cols}: columns must be from 1 to {auto.MAX_N:,} (the widest row auto takes)")


def _heuristic_rule(n_cols: int, why: str) -> str:
    from blockscope.kernels import next_power_of_2

    block = next_power_of_2(n_cols)
    rule = (
        "multirow (several rows per program) for BLOCK_SIZE <= 1024"
        if block <= 1024
        else "teaching (one program per row), num_warps = BLOCK_SIZE / 512 within 4..32, for BLOCK_SIZE <= 16384"
        if block <= 16384
        else "splitrow (cooperating programs per row), chunk >= 8192, 8 warps, for wider rows"
    )
    return f"{why}, so the built-in heuristic picks: {rule} (BLOCK_SIZE = {block:,})."


def _nearest_index(pool: pd.DataFrame, n_rows: int, n_cols: int):
    """Index of the entry nearest in log2 N, then in log2 R (kernels.auto._nearest; `pool` in file order, so ties
    go to the file's first as min() does)."""
    distance = pd.DataFrame(
        {
            "n": (pool["n_cols"].map(math.log2) - math.log2(n_cols)).abs(),
            "r": (pool["n_rows"].clip(lower=1).map(math.log2) - math.log2(max(1, n_rows))).abs(),
        }
    )
    return distance.sort_values(["n", "r"], kind="stable").index[0]


def explain(dtype: str, n_rows: int, n_cols: int, gpu_name: str, on_that_gpu: bool = True) -> Pick:
    """What kernels.auto.choose picks for (dtype, R, N) on `gpu_name` and which rule or table entry decides.

    `on_that_gpu` (default): the pick a process on that GPU makes, also where this process runs the CPU interpreter
    (which cannot run the GPU-only Gluon kernels and takes the heuristic instead: `here_variant` says what it runs).
    ValueError (check_shape) for a bad shape."""
    from blockscope.kernels import auto, dtype_from_name, get_variant, interpreting, next_power_of_2

    check_shape(dtype, n_rows, n_cols)
    n_rows, n_cols = int(n_rows), int(n_cols)
    auto_variant, auto_tunables = auto.choose(n_rows, n_cols, dtype_from_name(dtype), gpu_name, on_that_gpu)
    here_variant, here_tunables = auto.choose(n_rows, n_cols, dtype_from_name(dtype), gpu_name)
    path = table_path(gpu_name)
    pick = Pick(
        dtype,
        n_rows,
        n_cols,
        "",
        {},
        "",
        table_file=str(path or ""),
        auto_variant=auto_variant,
        auto_tunables=dict(auto_tunables),
        here_variant=here_variant,
        here_tunables=dict(here_tunables),
    )
    table = auto.load_table(gpu_name)
    block = next_power_of_2(n_cols)

    def heuristic(why: str) -> Pick:
        variant, tunables = auto.heuristic_choice(n_rows, n_cols)
        pick.variant, pick.tunables, pick.rule = variant, dict(tunables), _heuristic_rule(n_cols, why)
        return pick

    if table is None:
        return heuristic(f"No tuning table for {gpu_name}")
    entries = entries_table(table)
    same_bucket = entries[entries["group"] == auto.entry_group(n_cols)]
    bucket = (
        f"BLOCK_SIZE {block:,} (N {block // 2 + 1:,}..{block:,})"
        if auto.entry_group(n_cols)
        else f"N over {auto.WIDEST_BLOCK:,} (one group: no kernel tiles wider rows by BLOCK_SIZE)"
    )
    for wanted in DTYPE_ORDER[dtype]:
        of_dtype = same_bucket[same_bucket["dtype"] == wanted]
        if of_dtype.empty:
            continue
        alignment = auto.row_alignment(n_cols, dtype_from_name(dtype).itemsize)
        aligned = of_dtype[of_dtype["alignment"] == alignment]
        pool = (aligned if len(aligned) else of_dtype).sort_values("position")  # ties: the file's first, as min()
        chosen_index = _nearest_index(pool, n_rows, n_cols)
        entry = pool.loc[chosen_index].to_dict()
        reach = ""
        if entry["variant"] == "torch" and n_rows * n_cols > auto.TORCH_REACH * entry["n_rows"] * entry["n_cols"]:
            triton_pool = of_dtype[of_dtype["variant"] != "torch"].sort_values("position")
            reach = (
                f"; its torch.softmax entry R={entry['n_rows']:,} N={entry['n_cols']:,} covers inputs up to "
                f"{auto.TORCH_REACH}x its size (torch wins where the launch is the cost), and this one is larger"
            )
            if triton_pool.empty:
                return heuristic(
                    f"From the tuning table's {wanted} entries with {bucket}{reach}, and the bucket has no Triton entry"
                )
            chosen_index = _nearest_index(triton_pool, n_rows, n_cols)
            entry = triton_pool.loc[chosen_index].to_dict()
            reach += f": the bucket's nearest Triton entry is R={entry['n_rows']:,} N={entry['n_cols']:,}"
        pick.considered = of_dtype.assign(chosen=of_dtype.index == chosen_index).reset_index(drop=True)
        pick.entry = entry
        borrowed = (
            f" (no {dtype} entry there: borrowed from {wanted}, same bytes per element)"
            if wanted != dtype and {dtype, wanted} == {"fp16", "bf16"}
            else f" (no {dtype} entry there: borrowed from {wanted})"
            if wanted != dtype
            else ""
        )
        alignment = (
            f"rows that allow {alignment}-byte loads, as this one"
            if len(aligned)
            else "no entry of the same row alignment, so any alignment"
        )
        where = (
            f"the tuning table's {wanted} entries with {bucket}"
            f"{borrowed}, {alignment}: the nearest N, then R, is R={entry['n_rows']:,} N={entry['n_cols']:,}"
            if not reach
            else f"the tuning table's {wanted} entries with {bucket}{borrowed}{reach}"
        )
        tunables = json.loads(entry["tunables"])
        gpu_only = entry["variant"] != "torch" and get_variant(entry["variant"]).gpu_only
        if gpu_only and interpreting() and not on_that_gpu:
            return heuristic(
                f"From {where}, {entry['variant']} is a GPU-only Gluon kernel and this process runs "
                "the Triton CPU interpreter"
            )
        scaled = ""
        if int(entry["n_cols"]) != n_cols and tunables != auto.scaled_programs(tunables, int(entry["n_cols"]), n_cols):
            tunables = auto.scaled_programs(tunables, int(entry["n_cols"]), n_cols)
            scaled = " (programs per row scaled to keep the entry's columns per program at this N)"
        if entry["variant"] == "torch":
            pick.variant, pick.tunables = "torch", {}
            pick.rule = (
                f"From {where}, where the tuner measured torch.softmax faster than every Triton config "
                f"({entry['median_us']:.2f} µs): auto calls torch.softmax."
            )
            return pick
        fitted = auto.fitted_tunables(entry["variant"], tunables, n_rows, n_cols, dtype_from_name(dtype))
        if fitted is None:
            try:
                get_variant(entry["variant"]).plan(n_rows, n_cols, dtype_from_name(dtype), **tunables)
                reason = "its plan refuses it"
            except ValueError as error:
                reason = str(error).splitlines()[0][:160]
            return heuristic(
                f"From {where}, {entry['variant']} {tunables_text(tunables)} does not fit this shape, "
                f"nor with the variant's defaults ({reason})"
            )
        if fitted != tunables:
            scaled += (
                f" does not fit this shape, so {tunables_text(fitted)}"
                if fitted
                else " does not fit this shape, so the variant's defaults"
            )
        pick.variant, pick.tunables = entry["variant"], fitted
        pick.rule = (
            f"From {where}: {entry['variant']} {tunables_text(tunables)}{scaled}, measured "
            f"{entry['median_us']:.2f} µs there against torch.softmax {entry['torch_us']:.2f} µs."
        )
        return pick
    return heuristic(f"The tuning table has no entry with BLOCK_SIZE {block:,} in any dtype")


def read_tune_log(path: str | Path = TUNE_LOG_PATH) -> pd.DataFrame:
    """The tuner's records (tools/tune_h200.py: one JSON object per line, .gz or plain): dtype, n_rows, n_cols,
    variant, tunables (JSON), median_us (NaN when it failed), torch_us, error ('' when it ran), seconds.

    ValueError naming the file and problem when it is missing or not a tuning log."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file; expected the tuner's JSON-lines log (tools/tune_h200.py)")
    opener = gzip.open if path.suffix == ".gz" else open
    records = []
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    record = json.loads(line)
                    missing = [c for c in LOG_COLUMNS if c not in record]
                    if missing:
                        raise ValueError(f"line {number} lacks {', '.join(missing)}")
                    records.append(record)
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError, ValueError) as error:
        raise ValueError(
            f"{path.name}: not a tuning log ({str(error).splitlines()[0][:160]}); expected one JSON "
            f"record per line with {', '.join(LOG_COLUMNS)}"
        ) from None
    log = pd.DataFrame(records, columns=[*LOG_COLUMNS, *TIEBREAK_COLUMNS])  # a log before break_ties: NaN / None
    log["tiebreak_us"] = pd.to_numeric(log["tiebreak_us"], errors="coerce").astype(float)
    log["chosen"] = log["chosen"].map(lambda v: v is True or v == 1)  # None / NaN (no tie-break yet): False
    log["tunables"] = log["tunables"].map(tunables_text)
    log["median_us"] = pd.to_numeric(log["median_us"], errors="coerce").astype(float)
    log["error"] = log["error"].fillna("").astype(str)
    return log


def read_tune_logs(paths: tuple[str | Path, ...] = TUNE_LOG_PATHS) -> pd.DataFrame:
    """The tuner's records behind the shipped table: the logs in the order they ran, a later log's records of a
    shape replacing an earlier log's (a retune's winner replaced that shape's entry, and records of two runs are
    never ranked together); column `log` names the file each record comes from. ValueError as read_tune_log."""
    logs = [read_tune_log(path).assign(log=Path(path).name) for path in paths]
    keys = ["dtype", "n_rows", "n_cols"]
    merged = logs[0]
    for later in logs[1:]:
        retuned = later[keys].drop_duplicates()
        kept = merged.merge(retuned, on=keys, how="left", indicator=True)
        merged = pd.concat([kept[kept["_merge"] == "left_only"].drop(columns="_merge"), later], ignore_index=True)
    return merged


def log_sources(log: pd.DataFrame, dtype: str, n_rows: int, n_cols: int) -> list[str]:
    """The log files a shape's records come from (read_tune_logs' `log` column; [] without it)."""
    if "log" not in log.columns:
        return []
    part = log[(log["dtype"] == dtype) & (log["n_rows"] == int(n_rows)) & (log["n_cols"] == int(n_cols))]
    return sorted(part["log"].unique().tolist())


def candidates(log: pd.DataFrame, dtype: str, n_rows: int, n_cols: int, pick: Pick | None = None) -> pd.DataFrame:
    """The tuner's records for one shape, fastest first (failed ones last): rank, variant, tunables, median_us,
    vs_fastest (x), vs_torch (torch time / its time), error, tiebreak_us and chosen (a tie within 3% broken by
    CUDA-graph replay: those configs' replay us, and the one the tuner kept; NaN / False in logs before it), and
    picked (the config `pick` chose)."""
    part = log[(log["dtype"] == dtype) & (log["n_rows"] == int(n_rows)) & (log["n_cols"] == int(n_cols))].copy()
    columns = [
        "rank",
        "variant",
        "tunables",
        "median_us",
        "vs_fastest",
        "vs_torch",
        "error",
        "tiebreak_us",
        "chosen",
        "picked",
    ]
    for column, missing in (("tiebreak_us", math.nan), ("chosen", False)):  # a frame built without read_tune_log
        if column not in part.columns:
            part[column] = missing
    if part.empty:
        return pd.DataFrame(columns=columns)
    part = part.sort_values(["median_us", "variant"], na_position="last").reset_index(drop=True)
    fastest = part["median_us"].min()
    part["rank"] = range(1, len(part) + 1)
    part["vs_fastest"] = part["median_us"] / fastest
    part["vs_torch"] = part["torch_us"].astype(float) / part["median_us"]
    chosen = None
    if pick is not None and pick.entry is not None:  # the table entry the pick came from, as the tuner logged it
        chosen = (pick.entry["variant"], tunables_text(json.loads(pick.entry["tunables"])))
    elif pick is not None:
        chosen = (pick.variant, tunables_text(pick.tunables))
    part["picked"] = [chosen == (v, t) for v, t in zip(part["variant"], part["tunables"], strict=True)]
    return part[columns]


def measured_shapes(log: pd.DataFrame) -> pd.DataFrame:
    """The (dtype, n_rows, n_cols) the tuner measured, with how many candidates each."""
    return log.groupby(["dtype", "n_rows", "n_cols"], as_index=False).size().rename(columns={"size": "candidates"})


def backend_comparison(
    df: pd.DataFrame, dtype: str, n_rows: int, n_cols: int, method: str, reference: str = "auto"
) -> pd.DataFrame:
    """Each backend's fastest time at exactly (dtype, R, N) under `method` in results rows `df` (per GPU / run /
    file when several), with vs_reference = its time / `reference`'s (> 1: the reference is faster). Empty when
    the shape was not timed there."""
    part = dd.ran(
        df[
            (df["dtype"] == dtype)
            & (df["n_rows"] == int(n_rows))
            & (df["n_cols"] == int(n_cols))
            & (df["method"] == method)
        ]
    )
    columns = ["variant", "median_us", "p20_us", "p80_us", "tunables", f"vs_{reference}"]
    if part.empty:
        return pd.DataFrame(columns=columns)
    best = dd.best_per_n(part)
    setup = dd.setup_keys(best)
    reference_us = best.loc[best["variant"] == reference, [*setup, "median_us"]].rename(
        columns={"median_us": "_reference_us"}
    )
    best = (
        best.merge(reference_us, on=setup, how="left")
        if setup
        else best.assign(_reference_us=float(reference_us["_reference_us"].iloc[0]) if len(reference_us) else math.nan)
    )
    best[f"vs_{reference}"] = best["median_us"].astype(float) / best["_reference_us"].astype(float)
    return best[[*setup, *columns]].sort_values([*setup, "median_us"]).reset_index(drop=True)


def nearest_measured_n(df: pd.DataFrame, dtype: str, n_rows: int, n_cols: int, count: int = 2) -> list[int]:
    """The `count` measured N (of `dtype`, R) closest to `n_cols` in log2 distance, for 'not measured' notes."""
    values = sorted({int(n) for n in df.loc[(df["dtype"] == dtype) & (df["n_rows"] == int(n_rows)), "n_cols"]})
    return sorted(sorted(values, key=lambda n: abs(math.log2(n) - math.log2(max(1, n_cols))))[:count])


def native_replay_status() -> tuple[str, str]:
    """(state, one line) on how `auto`'s repeated calls run in this process, state one of 'in use', 'not in use'
    (the native module of kernels/native.py off, not built or failing to load) and 'no GPU'. Loads the module if
    built; never compiles."""
    import torch

    from blockscope.kernels import native

    if not torch.cuda.is_available():
        return "no GPU", (
            "Repeated calls: no CUDA GPU in this process, so `auto` replays nothing here; on a GPU box "
            "its repeated inputs run in one C++ call once `make native` has built the module (section "
            "14 of docs/kernel-changes.md)."
        )
    module = native.load()
    if module is None:
        return "not in use", (
            f"Repeated calls: native replay not in use ({native.load_error()}); `auto` replays "
            "them from Python, a few µs more host time per call. `make native` builds it once."
        )
    return "in use", (
        f"Repeated calls: native replay loaded (`{native.module_path()}`): one C++ call per repeated input."
    )
