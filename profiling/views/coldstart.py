"""Cold-start rows (method 'cold_start', `python -m profiling coldstart`) as one table: per backend, shape and cache
state, each phase's median wall time in seconds, the first call's p20-p80 spread and the time to a first result
beyond `import torch`. Pure pandas (no streamlit, no plotly)."""

from __future__ import annotations

import pandas as pd

from blockscope.profiling.results import CACHE_STATE_VALUES, COLD_PHASE_VALUES, COLD_START

KEYS: tuple[str, ...] = ("variant", "n_rows", "n_cols", "dtype", "cache_state")
READY_PHASES: tuple[str, ...] = ("import", "cuda_init", "first_call")  # beyond torch: to the first result


def cold_start_rows(df: pd.DataFrame | None) -> pd.DataFrame:
    """The rows of `df` with method 'cold_start' (empty when none or no table)."""
    if df is None or df.empty or "method" not in df.columns or "cold_phase" not in df.columns:
        return pd.DataFrame()
    return df[df["method"] == COLD_START]


def bundled_cold_start_rows() -> pd.DataFrame:
    """The bundled cold-start rows (data/h200_coldstart.parquet), shown where the loaded data has none; empty when
    the file is absent or unreadable."""
    from blockscope import paths
    from blockscope.profiling.results import ResultsError, load_results

    try:
        if not paths.BUNDLED_COLDSTART.is_file():
            return pd.DataFrame()
        return cold_start_rows(load_results(paths.BUNDLED_COLDSTART))
    except ResultsError:
        return pd.DataFrame()


def rows_or_bundled(df: pd.DataFrame | None) -> tuple[pd.DataFrame, bool]:
    """(the cold-start rows to show, whether they are the bundled ones): `df`'s own, else the bundled file's."""
    own = cold_start_rows(df)
    return (own, False) if len(own) else (bundled_cold_start_rows(), True)


def describe_runs(rows: pd.DataFrame) -> str:
    """'run <id> on <GPU>, <date>' for each run of these rows, joined by '; '."""
    if rows.empty or "run_id" not in rows.columns:
        return ""
    parts = []
    for run, group in rows.groupby("run_id", sort=False, dropna=False):
        gpu = ", ".join(str(v) for v in group["gpu_name"].dropna().unique()) if "gpu_name" in group else ""
        dates = group["measured_at"].dropna() if "measured_at" in group else pd.Series(dtype="string")
        when = str(dates.iloc[0])[:16] if len(dates) else ""
        parts.append(" ".join(p for p in (f"run {run}", f"on {gpu}" if gpu else "", when) if p))
    return "; ".join(parts)


def cold_start_table(df: pd.DataFrame | None) -> pd.DataFrame:
    """One row per (backend, R, N, dtype, cache state): `<phase>_s` medians (seconds; NA where not measured, e.g.
    cuda_init on CPU), `first_call_p20_p80_s` (text), `to_first_result_s` (import + CUDA init + first call,
    seconds beyond torch), `reps` and `error` ('' when it ran). Cold before warm; backends in file order."""
    rows = cold_start_rows(df)
    columns = [
        *KEYS,
        *(f"{phase}_s" for phase in COLD_PHASE_VALUES),
        "first_call_p20_p80_s",
        "to_first_result_s",
        "reps",
        "error",
    ]
    if rows.empty:
        return pd.DataFrame(columns=columns)
    out = []
    rows = rows.assign(cache_state=rows["cache_state"].fillna(""), error=rows["error"].fillna(""))
    for key, group in rows.groupby(list(KEYS), sort=False, dropna=False):
        record: dict = dict(zip(KEYS, key, strict=True))
        errors = [e for e in group["error"] if e]
        record["error"] = errors[0] if errors else ""
        timed = group[group["error"] == ""].drop_duplicates("cold_phase", keep="last").set_index("cold_phase")
        for phase in COLD_PHASE_VALUES:
            record[f"{phase}_s"] = timed.loc[phase, "median_us"] / 1e6 if phase in timed.index else pd.NA
        if "first_call" in timed.index:
            first = timed.loc["first_call"]
            record["first_call_p20_p80_s"] = f"{first['p20_us'] / 1e6:.3g}-{first['p80_us'] / 1e6:.3g}"
        else:
            record["first_call_p20_p80_s"] = ""
        ready = [timed.loc[p, "median_us"] for p in READY_PHASES if p in timed.index]
        record["to_first_result_s"] = sum(ready) / 1e6 if "first_call" in timed.index else pd.NA
        record["reps"] = int(timed["reps"].max()) if len(timed) and timed["reps"].notna().any() else pd.NA
        out.append(record)
    table = pd.DataFrame(out, columns=columns)
    order = {state: i for i, state in enumerate(CACHE_STATE_VALUES)}
    backends = {name: i for i, name in enumerate(dict.fromkeys(table["variant"]))}
    table = table.assign(
        _b=table["variant"].map(backends), _c=table["cache_state"].map(order).fillna(len(order))
    ).sort_values(["_b", "n_rows", "n_cols", "_c"], kind="stable")
    for column in (*(f"{phase}_s" for phase in COLD_PHASE_VALUES), "to_first_result_s"):
        table[column] = pd.to_numeric(table[column], errors="coerce").astype("Float64")
    return table.drop(columns=["_b", "_c"]).reset_index(drop=True)
