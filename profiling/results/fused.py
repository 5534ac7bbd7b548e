"""Fused-op benchmark results: the CSV tools/bench_fused.py writes (one row per op, case, dtype, backend, method).

Columns (FUSED_COLUMNS; the same names and order as tools/bench_fused.py's FIELDS):
  op: 'masked_softmax' | 'ragged_softmax'; case: 'causal', 'scale_mask_bias', 'uniform', 'long_tail', ...
  dtype: torch's name ('float16', 'bfloat16', 'float32'); shape: 'BxHxLqxLk' (masked) or 'B=.. T=.. max=..' (ragged)
  backend: 'blockscope', 'eager', 'inductor', ... ('blockscope[name=value]' on tuning rows; 'all' on skipped cases)
  method: 'cuda_graph' | 'back_to_back_flushed'
  median_us, p20_us, p80_us: time per call, microseconds; reps: timed repetitions
  ideal_us: x read once + y written once at the run's copy bandwidth, microseconds; pct_of_ideal: ideal / median, %
  vs_blockscope: this backend's time / blockscope's, x; check: 'ok' or the mismatch; error: why it did not run
  phase: '' or 'tuning'
Loading adds `length`: Lk of a masked shape, the longest row (max=) of a ragged one (<NA> when unreadable).
The same frame comes from the op rows of a results file (`sweep --op`, results schema v2): fused_from_results;
load_fused_any reads either kind of file.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from blockscope.profiling.results import CSV_MARKER, ResultsError, _check_rows, _read_source, load_results

FUSED_COLUMNS: dict[str, str] = {
    "op": "string",
    "case": "string",
    "dtype": "string",
    "shape": "string",
    "backend": "string",
    "method": "string",
    "median_us": "Float64",
    "p20_us": "Float64",
    "p80_us": "Float64",
    "reps": "Int64",
    "ideal_us": "Float64",
    "pct_of_ideal": "Float64",
    "vs_blockscope": "Float64",
    "check": "string",
    "error": "string",
    "phase": "string",
}
REQUIRED_FUSED = tuple(FUSED_COLUMNS)  # the tool writes every column on every row (empty where not measured)
MAX_FUSED_MB = 16  # one bench_fused.csv (a full run is ~100 kB)
MAX_FUSED_ROWS = 100_000
MAX_FUSED_TEXT = 2_000  # longest text cell (an error message is cut to a few hundred characters by the tool)
MAX_US = 1e12  # a time past this (11 days per call) is not a measurement
EXPECTED = "expected the bench_fused.csv written by `python3 -m tools.bench_fused --out-dir DIR`"


def _length(op: str, shape: str) -> int | None:
    """Lk of 'BxHxLqxLk', or max of 'B=.. T=.. max=..'; None otherwise."""
    masked = re.fullmatch(r"\s*\d+x\d+x\d+x(\d+)\s*", shape or "")
    if masked:
        return int(masked.group(1))
    ragged = re.search(r"\bmax=(\d+)\b", shape or "")
    return int(ragged.group(1)) if ragged else None


def load_fused(source: str | Path | bytes | Any, name: str | None = None) -> pd.DataFrame:
    """A bench_fused.csv (path, bytes or file object) as a table of FUSED_COLUMNS + `length`.

    Raises ResultsError naming the problem and what is allowed: not a regular file, over MAX_FUSED_MB or
    MAX_FUSED_ROWS (checked before parsing), binary data, missing columns, a number that does not parse or is
    negative or infinite, a text cell over MAX_FUSED_TEXT characters. Text values are kept as written: escape them
    where they are rendered as markdown or HTML."""
    data, label = _read_source(source, name)
    if len(data) > MAX_FUSED_MB * 2**20:
        raise ResultsError(
            f"{label}: {len(data) / 2**20:,.1f} MB; allowed: a bench_fused.csv of at most {MAX_FUSED_MB} MB"
        )
    if not data.strip():
        raise ResultsError(f"{label}: the file is empty; {EXPECTED}")
    lines = max(0, data.count(b"\n") - 1)
    _check_rows(lines, label, "lines")
    if lines > MAX_FUSED_ROWS:
        raise ResultsError(f"{label}: {lines:,} lines; allowed: at most {MAX_FUSED_ROWS:,} rows")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ResultsError(f"{label}: binary data, not a UTF-8 CSV; {EXPECTED}") from None
    if "\x00" in text:
        raise ResultsError(f"{label}: binary data, not a UTF-8 CSV; {EXPECTED}")
    try:
        rows = list(csv.reader(io.StringIO(text), strict=True))
    except csv.Error as error:
        raise ResultsError(f"{label}: malformed CSV ({error}); {EXPECTED}") from None
    header = [h.strip() for h in rows[0]]
    missing = [c for c in REQUIRED_FUSED if c not in header]
    if missing:
        raise ResultsError(f"{label}: missing column(s) {', '.join(missing)}; {EXPECTED}")
    repeated = sorted({c for c in header if header.count(c) > 1})
    if repeated:
        raise ResultsError(f"{label}: column(s) {', '.join(repeated)[:200]} appear twice; {EXPECTED}")
    body = [r for r in rows[1:] if r]
    for number, row in enumerate(body, start=2):
        if len(row) != len(header):
            raise ResultsError(
                f"{label}: line {number} has {len(row)} of {len(header)} fields (truncated?); {EXPECTED}"
            )
        longest = max((len(cell) for cell in row), default=0)
        if longest > MAX_FUSED_TEXT:
            raise ResultsError(
                f"{label}: line {number} has a {longest:,}-character value; allowed: at most {MAX_FUSED_TEXT:,}"
            )
    raw = pd.DataFrame(body, columns=header, dtype=object)
    table = pd.DataFrame(index=range(len(raw)))
    for column, dtype in FUSED_COLUMNS.items():
        values = raw[column]
        if dtype == "string":
            table[column] = values.astype("string")
            continue
        table[column] = _numbers(values, column, dtype, label)
    table["length"] = pd.array([_length(o, s) for o, s in zip(table["op"], table["shape"], strict=True)], "Int64")
    return table


def _numbers(values: pd.Series, column: str, dtype: str, label: str) -> pd.Series:
    """`values` (text) as `dtype`, '' -> NA; ResultsError for anything that is not a finite number >= 0."""
    out = []
    for number, value in enumerate(values, start=2):
        text = str(value).strip()
        if not text:
            out.append(None)
            continue
        try:
            parsed = float(text)
        except ValueError:
            parsed = math.nan
        if not math.isfinite(parsed) or not 0 <= parsed <= MAX_US or (dtype == "Int64" and parsed != int(parsed)):
            kind = "an integer" if dtype == "Int64" else "a number"
            raise ResultsError(
                f"{label}: line {number}, {column} = {text[:40]!r}; allowed: {kind} from 0 to {MAX_US:g} or empty"
            )
        out.append(int(parsed) if dtype == "Int64" else parsed)
    return pd.Series(pd.array(out, dtype=dtype))


TORCH_DTYPE_NAMES: dict[str, str] = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}
FUSED_OPS: tuple[str, ...] = ("masked_softmax", "ragged_softmax")
NO_OP_ROWS = (
    "has no fused-op rows (op masked_softmax or ragged_softmax); allowed: a bench_fused.csv or a results file of "
    "`python -m profiling sweep --op masked_softmax,ragged_softmax --out FILE`"
)


def _shape_text(op: str, op_shape: Any, n_rows: Any, n_cols: Any) -> str:
    """The bench CSV's shape text from a results row: 'BxHxLxL' (masked) or 'B=.. T=.. max=..' (ragged)."""
    try:
        shape = json.loads(op_shape) if isinstance(op_shape, str) else {}
    except ValueError:
        shape = {}
    if op == "masked_softmax":
        length = int(shape.get("length", n_cols))
        return f"{int(shape.get('batch', 1))}x{int(shape.get('heads', int(n_rows) // length))}x{length}x{length}"
    return f"B={int(shape.get('segments', n_rows))} T={shape.get('total', '?')} max={int(shape.get('max_len', n_cols))}"


def fused_from_results(df: pd.DataFrame) -> pd.DataFrame:
    """The fused-op rows (op masked_softmax / ragged_softmax) of a results table as the bench CSV's frame
    (FUSED_COLUMNS + `length`): dtype in torch's names, backend = variant, ideal_us = bytes_moved at the row's
    copy_gbps (x read once + y written once), pct_of_ideal = 100 x ideal / median, vs_blockscope = median /
    blockscope's (same op, case, dtype, shape, method, run), check 'ok' for rows that ran, error as written, length
    = n_cols (masked L, ragged longest segment). When several runs timed one point, the latest (measured_at) wins."""
    rows = df[df["op"].isin(FUSED_OPS).fillna(False).astype(bool)] if "op" in df.columns else df.iloc[0:0]
    if "measured_at" in rows.columns:
        rows = rows.sort_values("measured_at", kind="stable", na_position="first")
    out = pd.DataFrame(index=range(len(rows)))
    out["op"] = rows["op"].astype("string").to_numpy()
    out["case"] = rows["case"].astype("string").to_numpy()
    out["dtype"] = rows["dtype"].map(lambda d: TORCH_DTYPE_NAMES.get(str(d), str(d))).astype("string").to_numpy()
    shapes = [
        _shape_text(o, s, r, n)
        for o, s, r, n in zip(rows["op"], rows["op_shape"], rows["n_rows"], rows["n_cols"], strict=True)
    ]
    out["shape"] = pd.array(shapes, dtype="string")
    out["backend"] = rows["variant"].astype("string").to_numpy()
    out["method"] = rows["method"].astype("string").to_numpy()
    for column in ("median_us", "p20_us", "p80_us"):
        out[column] = pd.array(rows[column].to_numpy(dtype="float64", na_value=np.nan), dtype="Float64")
    out["reps"] = pd.array(rows["reps"].to_numpy(dtype="float64", na_value=np.nan), dtype="Float64").astype("Int64")
    moved = rows["bytes_moved"].to_numpy(dtype="float64", na_value=np.nan)
    copy = rows["copy_gbps"].to_numpy(dtype="float64", na_value=np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        ideal = np.where(copy > 0, moved / (copy * 1e9) * 1e6, np.nan)
        pct = 100.0 * ideal / out["median_us"].to_numpy(dtype="float64", na_value=np.nan)
    out["ideal_us"] = pd.array(ideal, dtype="Float64")
    out["pct_of_ideal"] = pd.array(pct, dtype="Float64")
    ran = (rows["error"].fillna("") == "").to_numpy()
    out["check"] = pd.array(np.where(ran, "ok", ""), dtype="string")
    out["error"] = rows["error"].fillna("").astype("string").to_numpy()
    out["phase"] = pd.array([""] * len(out), dtype="string")
    run = rows["run_id"].astype("string").fillna("").to_numpy() if "run_id" in rows.columns else [""] * len(out)
    group = ["op", "case", "dtype", "shape", "method"]
    keyed = out.assign(_run=run)
    keyed = keyed.drop_duplicates([*group, "backend", "_run"], keep="last")
    keyed = keyed.drop_duplicates([*group, "backend"], keep="last")  # the latest run of each point
    ours = keyed[(keyed["backend"] == "blockscope") & keyed["median_us"].notna()][[*group, "median_us"]]
    ours = ours.rename(columns={"median_us": "_ours"})
    merged = keyed.merge(ours, on=group, how="left")
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = merged["median_us"].to_numpy(dtype="float64", na_value=np.nan) / merged["_ours"].to_numpy(
            dtype="float64", na_value=np.nan
        )
    merged["vs_blockscope"] = pd.array(ratio, dtype="Float64")
    table = merged[list(FUSED_COLUMNS)].reset_index(drop=True)
    for column, dtype in FUSED_COLUMNS.items():
        table[column] = table[column].astype(dtype)
    table["length"] = pd.array([_length(o, s) for o, s in zip(table["op"], table["shape"], strict=True)], "Int64")
    return table


def is_results_file(data: bytes) -> bool:
    """True for a Blockscope results file (parquet, or a CSV with the results marker or a `variant` column) rather
    than a bench_fused.csv."""
    if data.startswith(b"PAR1") or data.startswith(CSV_MARKER.encode()):
        return True
    first = data.lstrip(b"\xef\xbb\xbf").split(b"\n", 1)[0].decode("utf-8", "replace")
    header = {h.strip().strip('"') for h in first.split(",")}
    return "variant" in header and "backend" not in header


def load_fused_any(source: str | Path | bytes | Any, name: str | None = None) -> pd.DataFrame:
    """A bench_fused.csv (load_fused) or a results file with fused-op rows (load_results, then fused_from_results),
    told apart by content. ResultsError names the problem: a results file without op rows is refused."""
    data, label = _read_source(source, name)
    if not is_results_file(data):
        return load_fused(data, label)
    table = fused_from_results(load_results(data, label))
    if table.empty:
        raise ResultsError(f"{label}: {NO_OP_ROWS}")
    return table
