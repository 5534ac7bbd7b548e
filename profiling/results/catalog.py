"""Catalog of the results files under a folder, read by DuckDB from the Parquet files themselves (no copy).

`catalog(folder)` returns one row per `.parquet` file under `folder` (recursively; links leading outside it are
left out): CATALOG_COLUMNS, where a results file (the key-value metadata `blockscope_schema_version`, or the
required columns) gets its run ids, GPUs, versions, kernel revisions, dates, rows and methods, and any other
Parquet file gets `status` = 'not a results file: why'. `query(folder, sql)` runs SQL over the results files as
the view `results` (all their rows, columns united by name, plus `filename`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from blockscope.profiling.results import PARQUET_VERSION_KEY, REQUIRED_COLUMNS

MAX_FILES = 5000  # Parquet files one catalog reads
DUCKDB_CONFIG = {"threads": 2, "memory_limit": "1GB"}
CATALOG_COLUMNS = (
    "file",  # path relative to the folder
    "status",  # 'results' or 'not a results file: why'
    "run_ids",
    "gpus",
    "gpu_uuids",
    "torch_versions",
    "triton_versions",
    "kernel_revisions",  # the kernels' source hash @ Triton version (results rows record no git commit)
    "first_measured",
    "last_measured",
    "rows",
    "methods",
)
# catalog column -> (results column, aggregate)
_AGGREGATES = {
    "run_ids": ("run_id", "list"),
    "gpus": ("gpu_name", "list"),
    "gpu_uuids": ("gpu_uuid", "list"),
    "torch_versions": ("torch_version", "list"),
    "triton_versions": ("triton_version", "list"),
    "kernel_revisions": ("kernel_revision", "list"),
    "first_measured": ("measured_at", "min"),
    "last_measured": ("measured_at", "max"),
    "methods": ("method", "list"),
}


class CatalogError(ValueError):
    """A folder that cannot be catalogued or a query that fails; the message is one line."""


def _duckdb() -> Any:
    try:
        import duckdb
    except ImportError:
        raise CatalogError("the catalog needs duckdb; allowed: pip install duckdb") from None
    return duckdb


def parquet_files(folder: str | Path) -> list[Path]:
    """`.parquet` files under `folder` (sorted), links leading outside it left out; CatalogError when `folder` is
    not a directory or holds more than MAX_FILES."""
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise CatalogError(f"{folder}: not a directory; allowed: a folder holding results .parquet files")
    root = root.resolve()
    found = []
    for path in sorted(root.rglob("*.parquet")):
        try:
            resolved = path.resolve()
        except OSError:
            continue
        if not resolved.is_file() or not resolved.is_relative_to(root):
            continue
        found.append(path)
        if len(found) > MAX_FILES:
            raise CatalogError(f"{folder}: more than {MAX_FILES} Parquet files; allowed: a smaller folder")
    return found


def _connect() -> Any:
    return _duckdb().connect(config=dict(DUCKDB_CONFIG))


def _sql_list(paths: list[Path]) -> str:
    return "[" + ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths) + "]"


def _inspect(con: Any, path: Path) -> tuple[str, set[str]]:
    """('results' or 'not a results file: why', column names) of one Parquet file, from its footer only."""
    duckdb = _duckdb()
    literal = "'" + str(path).replace("'", "''") + "'"
    try:
        columns = {row[0] for row in con.sql(f"SELECT name FROM parquet_schema({literal})").fetchall()}
        keys = {
            bytes(row[0])
            for row in con.sql(f"SELECT key FROM parquet_kv_metadata({literal})").fetchall()
            if row[0] is not None
        }
    except duckdb.Error as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return f"not a results file: unreadable Parquet ({first[:160]})", set()
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        return f"not a results file: no {', '.join(missing)} column(s)", columns
    if PARQUET_VERSION_KEY not in keys and "kernel_names" not in columns and "run_id" not in columns:
        return "not a results file: no blockscope_schema_version metadata and no run_id column", columns
    return "results", columns


def catalog(folder: str | Path) -> pd.DataFrame:
    """One row per Parquet file under `folder` (CATALOG_COLUMNS; list columns joined with ', ')."""
    root = Path(folder).expanduser()
    files = parquet_files(root)
    con = _connect()
    try:
        inspected = [(path, *_inspect(con, path)) for path in files]
        good = [(path, columns) for path, status, columns in inspected if status == "results"]
        stats: dict[str, dict[str, Any]] = {}
        if good:
            present = set().union(*(columns for _, columns in good))
            parts = ["filename", "count(*) AS rows"]
            for name, (column, how) in _AGGREGATES.items():
                if column not in present:
                    parts.append(f"NULL AS {name}")
                elif how == "list":
                    parts.append(
                        f"array_to_string(list_sort(list_distinct(list(CAST({column} AS VARCHAR)))), ', ') AS {name}"
                    )
                else:
                    parts.append(f"{how}(CAST({column} AS VARCHAR)) AS {name}")
            sql = (
                f"SELECT {', '.join(parts)} FROM read_parquet({_sql_list([p for p, _ in good])}, "
                "union_by_name = true, filename = true, hive_partitioning = false) GROUP BY filename"
            )
            try:
                for record in con.sql(sql).df().to_dict("records"):
                    stats[str(record.pop("filename"))] = record
            except _duckdb().Error as error:
                raise CatalogError(f"{folder}: DuckDB could not read the results files: {_first(error)}") from None
    finally:
        con.close()
    rows = []
    for path, status, _ in inspected:
        row = dict.fromkeys(CATALOG_COLUMNS, pd.NA)
        row["file"] = str(path.relative_to(root.resolve()))
        row["status"] = status
        if status == "results":
            row.update({k: v for k, v in stats.get(str(path), {}).items() if k in CATALOG_COLUMNS})
        rows.append(row)
    table = pd.DataFrame(rows, columns=list(CATALOG_COLUMNS))
    table["rows"] = pd.array(table["rows"], dtype="Int64")
    for column in CATALOG_COLUMNS:
        if column != "rows":
            table[column] = table[column].astype("string").replace("", pd.NA)
    return table


def _first(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:200] if text else type(error).__name__


def query(folder: str | Path, sql: str) -> pd.DataFrame:
    """`sql` over the view `results`: every row of the results files under `folder` (columns united by name, NULL
    where a file lacks one) plus `filename`. CatalogError (one line) when the SQL fails or there are no results
    files. The connection is in-memory and reads only those files' rows through the view."""
    if not isinstance(sql, str) or not sql.strip():
        raise CatalogError("empty --query; allowed: SQL over the view `results`, e.g. SELECT count(*) FROM results")
    root = Path(folder).expanduser()
    files = parquet_files(root)
    con = _connect()
    try:
        good = [path for path in files if _inspect(con, path)[0] == "results"]
        if not good:
            raise CatalogError(f"{folder}: no results files to query; allowed: a folder with sweep .parquet files")
        con.sql(
            f"CREATE VIEW results AS SELECT * FROM read_parquet({_sql_list(good)}, union_by_name = true, "
            "filename = true, hive_partitioning = false)"
        )
        try:
            return con.sql(sql).df()
        except (_duckdb().Error, AttributeError) as error:  # AttributeError: a statement with no result set
            raise CatalogError(f"--query failed: {_first(error)}") from None
    finally:
        con.close()
