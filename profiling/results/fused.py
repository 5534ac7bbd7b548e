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
"""

from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path
from typing import Any

import pandas as pd

from blockscope.profiling.results import ResultsError, _check_rows, _read_source

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
