"""Nsight Compute CSV (`ncu --csv`) read into one row per profiled kernel launch, in base units.

Reads the details page (the default: one line per metric, columns "ID", ..., "Kernel Name", ..., "Block Size",
"Grid Size", ..., "Section Name", "Metric Name", "Metric Unit", "Metric Value"[, rule columns]) and the raw page
(`--page raw`: one line per kernel, one column per raw metric, a units line after the header). Lines the
profiler prints (`==PROF==`, `==WARNING==`, ...) and application output before the header are skipped.
The table's columns are NCU_COLUMNS (docs/results-schema.md, "Nsight Compute imports"); imported tables are
saved as Parquet or CSV with `ncu_schema` = NCU_SCHEMA_VERSION on every row.
"""

from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path
from typing import Any

import pandas as pd

from blockscope.profiling.results.bounded import read_bounded

NCU_SCHEMA_VERSION = 1
MAX_NCU_BYTES = 256 * 1024 * 1024  # a CSV larger than this is refused before it is read
MAX_NCU_KERNELS = 200_000

# column -> (dtype, unit, description); documented in docs/results-schema.md
NCU_COLUMNS: dict[str, tuple[str, str, str]] = {
    "ncu_schema": ("Int64", "", "version of this table's layout"),
    "ncu_id": ("Int64", "", "ncu's ID of the profiled launch (0-based, launch order)"),
    "kernel_name": ("string", "", "kernel function name as ncu printed it"),
    "block_dim": ("string", "", "block size as ncu printed it, '(x, y, z)'"),
    "grid_dim": ("string", "", "grid size as ncu printed it, '(x, y, z)'"),
    "block_threads": ("Int64", "threads", "threads per program (x*y*z of Block Size)"),
    "grid_programs": ("Int64", "programs", "programs launched (x*y*z of Grid Size)"),
    "device": ("string", "", "ncu's device index"),
    "compute_capability": ("string", "", "CC, e.g. '9.0'"),
    "achieved_occupancy_pct": ("Float64", "%", "sm__warps_active.avg.pct_of_peak_sustained_active"),
    "theoretical_occupancy_pct": ("Float64", "%", "sm__maximum_warps_per_active_cycle_pct"),
    "dram_throughput_pct": ("Float64", "% of peak", "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
    "registers_per_thread": ("Int64", "registers", "launch__registers_per_thread"),
    "shared_static_bytes": ("Int64", "bytes/program", "launch__shared_mem_per_block_static"),
    "shared_dynamic_bytes": ("Int64", "bytes/program", "launch__shared_mem_per_block_dynamic"),
    "shared_driver_bytes": ("Int64", "bytes/program", "launch__shared_mem_per_block_driver"),
    "block_limit_registers": ("Int64", "programs/SM", "launch__occupancy_limit_registers"),
    "block_limit_shared_mem": ("Int64", "programs/SM", "launch__occupancy_limit_shared_mem"),
    "block_limit_warps": ("Int64", "programs/SM", "launch__occupancy_limit_warps"),
    "block_limit_sm": ("Int64", "programs/SM", "launch__occupancy_limit_blocks"),
    "waves_per_sm": ("Float64", "waves", "launch__waves_per_multiprocessor"),
    "duration_ns": ("Float64", "ns", "gpu__time_duration.sum"),
    "source_page": ("string", "", "'details' or 'raw': the ncu page the row came from"),
}
_NAMES = list(NCU_COLUMNS)
METRIC_COLUMNS = tuple(_NAMES[_NAMES.index("achieved_occupancy_pct") : _NAMES.index("duration_ns") + 1])

# raw metric name -> column (the raw page's headers; also `--metrics` rows of the details page)
RAW_METRICS: dict[str, str] = {NCU_COLUMNS[c][2]: c for c in METRIC_COLUMNS}
RAW_METRICS["gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"] = "dram_throughput_pct"
# details page display name -> column (Sections Occupancy, LaunchStats, SpeedOfLight)
DISPLAY_NAMES: dict[str, str] = {
    "Achieved Occupancy": "achieved_occupancy_pct",
    "Theoretical Occupancy": "theoretical_occupancy_pct",
    "DRAM Throughput": "dram_throughput_pct",
    "Registers Per Thread": "registers_per_thread",
    "Static Shared Memory Per Block": "shared_static_bytes",
    "Dynamic Shared Memory Per Block": "shared_dynamic_bytes",
    "Driver Shared Memory Per Block": "shared_driver_bytes",
    "Block Limit Registers": "block_limit_registers",
    "Block Limit Shared Mem": "block_limit_shared_mem",
    "Block Limit Warps": "block_limit_warps",
    "Block Limit SM": "block_limit_sm",
    "Waves Per SM": "waves_per_sm",
    "Duration": "duration_ns",
}
ID_COLUMNS = ("ID", "Kernel Name", "Block Size", "Grid Size")
LONG_COLUMNS = ("Metric Name", "Metric Unit", "Metric Value")
# unit -> factor to the column's base unit (bytes, ns); decimal prefixes assumed (Kbyte = 1000 bytes, not confirmed)
_BYTE_UNITS = {"byte": 1, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9}
_TIME_UNITS = {"nsecond": 1, "ns": 1, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6, "second": 1e9, "s": 1e9}


class NcuError(ValueError):
    """An input that is not a readable Nsight Compute CSV (or import table); the message is one line."""


def read_ncu_csv(source: str | Path | bytes, name: str | None = None) -> pd.DataFrame:
    """One row per profiled launch (NCU_COLUMNS) from `ncu --csv` text: the details page or `--page raw`.

    `source` is a path or the file's bytes; `name` labels errors. Raises NcuError naming what is wrong
    (not an ncu CSV, truncated line, unparsable number) and what is allowed."""
    text, label = _read_text(source, name)
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID",') or line.startswith("ID,")), None)
    if start is None:
        raise NcuError(
            f'{label}: not an Nsight Compute CSV: no header line starting with "ID"; allowed: the output of '
            "`ncu --csv` (details page) or `ncu --csv --page raw`"
        )
    body = [line for line in lines[start:] if not line.startswith("==")]
    try:
        rows = list(csv.reader(io.StringIO("\n".join(body)), strict=True))
    except csv.Error as error:
        raise NcuError(f"{label}: truncated or malformed CSV ({error}); allowed: a complete ncu --csv file") from None
    header = rows[0]
    missing = [c for c in ID_COLUMNS if c not in header]
    if missing:
        raise NcuError(
            f"{label}: not an Nsight Compute CSV: header lacks {', '.join(missing)}; allowed: ncu --csv output"
        )
    # The details page's trailing rule columns (Rule Name ... Estimated Speedup) are left out, after one empty field,
    # on rows no rule fired for (ncu 2025): such a row must still reach Metric Value; anything shorter is cut off.
    needed = header.index("Metric Value") + 1 if all(c in header for c in LONG_COLUMNS) else len(header)
    for number, row in enumerate(rows[1:], start=start + 2):
        if row and not needed <= len(row) <= len(header):
            raise NcuError(
                f"{label}: truncated or malformed: CSV line {number} has {len(row)} of {len(header)} fields; "
                "allowed: a complete ncu --csv file"
            )
    records = [dict(zip(header, [*row, *[""] * (len(header) - len(row))], strict=True)) for row in rows[1:] if row]
    if all(c in header for c in LONG_COLUMNS):
        table = _from_details(records, label)
    else:
        table = _from_raw(header, records, label)
    if len(table) > MAX_NCU_KERNELS:
        raise NcuError(f"{label}: {len(table)} kernels; allowed: at most {MAX_NCU_KERNELS}")
    return finish(table)


def _read_text(source: str | Path | bytes, name: str | None) -> tuple[str, str]:
    label = name or (str(source) if isinstance(source, str | Path) else "ncu CSV")
    data = read_bounded(source, label, MAX_NCU_BYTES, NcuError, "an existing ncu --csv file")
    if not data.strip():
        raise NcuError(f"{label}: empty file; allowed: ncu --csv output")
    try:
        return data.decode("utf-8-sig"), label
    except UnicodeDecodeError as error:
        raise NcuError(f"{label}: not text (byte {error.start} is not UTF-8); allowed: ncu --csv output") from None


def _number(text: str, label: str, where: str) -> float:
    cleaned = text.replace(",", "").strip()
    if cleaned in ("", "n/a", "N/A"):
        return math.nan
    try:
        return float(cleaned)
    except ValueError:
        raise NcuError(f"{label}: {where}: {text!r} is not a number; allowed: ncu's numeric values") from None


def _scale(column: str, unit: str, value: float, label: str, where: str) -> float:
    unit = unit.strip().split("/")[0].lower()
    if column.endswith("_bytes") and unit:
        if unit not in _BYTE_UNITS:
            raise NcuError(f"{label}: {where}: unit {unit!r}; allowed: {', '.join(_BYTE_UNITS)}")
        return value * _BYTE_UNITS[unit]
    if column == "duration_ns" and unit:
        if unit not in _TIME_UNITS:
            raise NcuError(f"{label}: {where}: unit {unit!r}; allowed: {', '.join(_TIME_UNITS)}")
        return value * _TIME_UNITS[unit]
    return value


def _launch_fields(record: dict[str, str], page: str) -> dict[str, Any]:
    return {
        "ncu_id": record["ID"],
        "kernel_name": record["Kernel Name"],
        "block_dim": record["Block Size"],
        "grid_dim": record["Grid Size"],
        "device": record.get("Device", ""),
        "compute_capability": record.get("CC", ""),
        "source_page": page,
    }


def _from_details(records: list[dict[str, str]], label: str) -> pd.DataFrame:
    launches: dict[str, dict[str, Any]] = {}
    for record in records:
        launch = launches.setdefault(record["ID"], _launch_fields(record, "details"))
        metric = record["Metric Name"].strip()
        column = DISPLAY_NAMES.get(metric) or RAW_METRICS.get(metric)
        if column is None:  # other metrics and rule rows (empty Metric Name)
            continue
        where = f"ID {record['ID']} {metric!r}"
        value = _number(record["Metric Value"], label, where)
        launch[column] = _scale(column, record["Metric Unit"], value, label, where)
    return pd.DataFrame(list(launches.values()))


def _from_raw(header: list[str], records: list[dict[str, str]], label: str) -> pd.DataFrame:
    units = {}
    if records and not records[0]["ID"].strip():  # the units line
        units = records.pop(0)
    rows = []
    for record in records:
        row = _launch_fields(record, "raw")
        for metric, column in RAW_METRICS.items():
            if metric in record and column not in row:
                where = f"ID {record['ID']} {metric}"
                value = _number(record[metric], label, where)
                row[column] = _scale(column, units.get(metric, ""), value, label, where)
        rows.append(row)
    if rows and not any(column in row for row in rows for column in METRIC_COLUMNS):
        raise NcuError(
            f"{label}: no known metric among {len(header)} columns; allowed: a raw page with e.g. "
            "sm__warps_active.avg.pct_of_peak_sustained_active"
        )
    return pd.DataFrame(rows)


def _dims_product(text: str) -> int | None:
    numbers = [int(n.replace(",", "")) for n in re.findall(r"\d[\d,]*", str(text))]
    if not numbers:
        return None
    product = 1
    for n in numbers:
        product *= n
    return product


def finish(table: pd.DataFrame) -> pd.DataFrame:
    """Every NCU_COLUMNS column with its dtype (missing metrics as <NA>), block_threads/grid_programs filled
    from the dims when absent; extra columns (matched configs) are kept after them."""
    table = table.copy()
    table["ncu_schema"] = NCU_SCHEMA_VERSION
    if "ncu_id" in table.columns:
        table["ncu_id"] = pd.to_numeric(table["ncu_id"].astype("string").str.replace(",", ""), errors="coerce")
    for column, source in (("block_threads", "block_dim"), ("grid_programs", "grid_dim")):
        if column not in table.columns and source in table.columns:
            table[column] = [_dims_product(v) for v in table[source]]
    for column, (dtype, _, _) in NCU_COLUMNS.items():
        if column not in table.columns:
            table[column] = pd.Series(pd.NA, index=table.index, dtype=dtype)
        elif dtype == "Int64":
            values = pd.to_numeric(table[column], errors="coerce").astype("Float64")
            table[column] = values.round().astype("Int64")
        elif dtype == "Float64":
            table[column] = pd.to_numeric(table[column], errors="coerce").astype("Float64")
        else:
            table[column] = table[column].astype("string")
    extra = [c for c in table.columns if c not in NCU_COLUMNS]
    return table[list(NCU_COLUMNS) + extra].reset_index(drop=True)


def save_ncu(table: pd.DataFrame, path: str | Path) -> Path:
    """Write an imported table as Parquet (.parquet) or CSV (.csv); returns the path."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".parquet", ".csv"):
        raise NcuError(f"{path}: suffix {path.suffix or '(none)'}; allowed: .parquet or .csv")
    path.parent.mkdir(parents=True, exist_ok=True)
    table = finish(table)
    if suffix == ".parquet":
        table.to_parquet(path, index=False)
    else:
        table.to_csv(path, index=False)
    return path


def load_ncu_table(source: str | Path | bytes, name: str | None = None) -> pd.DataFrame:
    """An imported table (Parquet or CSV written by save_ncu, any schema version up to this one) or a raw
    `ncu --csv` file, as NCU_COLUMNS. Raises NcuError (one line) for anything else."""
    label = name or (str(source) if isinstance(source, str | Path) else "ncu table")
    allowed = "an ncu import (.parquet, .csv) or ncu --csv output"
    data = read_bounded(source, label, MAX_NCU_BYTES, NcuError, allowed)
    if data[:4] == b"PAR1":
        try:
            table = pd.read_parquet(io.BytesIO(data))
        except Exception as error:  # pyarrow raises several types for damaged files
            raise NcuError(f"{label}: unreadable Parquet ({type(error).__name__})") from None
    elif data.lstrip()[:10].startswith(b"ncu_schema"):
        try:
            table = pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False)
        except Exception as error:  # pandas parser errors
            raise NcuError(f"{label}: unreadable CSV ({type(error).__name__})") from None
    else:
        return read_ncu_csv(data, label)
    if "ncu_schema" not in table.columns or "kernel_name" not in table.columns:
        raise NcuError(f"{label}: not an ncu import (no ncu_schema/kernel_name columns); allowed: `ncu-import` output")
    versions = pd.to_numeric(table["ncu_schema"], errors="coerce")
    if versions.isna().any() or (versions > NCU_SCHEMA_VERSION).any():
        raise NcuError(f"{label}: ncu_schema {sorted(set(table['ncu_schema']))}; allowed: 1..{NCU_SCHEMA_VERSION}")
    if len(table) > MAX_NCU_KERNELS:
        raise NcuError(f"{label}: {len(table)} rows; allowed: at most {MAX_NCU_KERNELS}")
    return finish(table.replace({"": pd.NA}))
