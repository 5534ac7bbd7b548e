"""The results table: one long-format pandas DataFrame, one row per (config, timing method).

Schema (column: pandas dtype - meaning; units in the name):

Config
  variant: string - the backend: 'torch' (eager torch.softmax), a peer ('inductor', 'liger', 'quack'; see
    blockscope.profiling.measure.backends) or a registered Triton variant name; other names load as data
  dtype: string - 'fp16' | 'bf16' | 'fp32'
  n_rows: Int64 - R, rows
  n_cols: Int64 - N, softmax width
  num_warps: Int64 - warps per program (<NA> for torch)
  num_stages: Int64 - software-pipelining stages (<NA> for torch)
  tile_width: Int64 - lanes per row per program step: BLOCK_SIZE, or TILE for 'online' (<NA> for torch)
  rows_per_program: Int64 - rows in one program's tile (<NA> for torch)
  programs: Int64 - programs (CTAs) launched (<NA> for torch)
  tunables: string - JSON object of the variant's resolved tunables ('{}' for torch)
  direction: string - what was timed: 'forward' (y from x; files without the column load as forward), 'backward'
    (dx from a saved y and dy) or 'forward_backward' (one training step: forward, then dx through autograd)
  op: string - the operation timed: 'softmax' (plain row softmax; every row of files written before the column,
    schema v1), 'masked_softmax' or 'ragged_softmax' (`sweep --op`, profiling.measure.op_sweep)
  case: string - the op's case: masked_softmax 'causal' | 'scale_mask_bias', ragged_softmax 'uniform' |
    'long_tail'; NA for softmax
  op_shape: string - JSON of the op's full shape, NA for softmax: masked {"batch", "heads", "length"} (x is
    (B, H, L, L); n_rows = B*H*L, n_cols = L), ragged {"segments", "total", "max_len"} (values (T,); n_rows =
    segments, n_cols = max_len, the longest segment; bytes_moved = 2 * T * element size)
Timing (one row per method)
  method: string - 'per_call_events' | 'back_to_back_flushed' | 'cuda_graph' | 'none' (compile-only rows) |
    'cold_start' (fresh-process wall times, see Cold start below)
  median_us, p20_us, p80_us, min_us, max_us: Float64 - steady-state time per call, microseconds
  reps: Int64 - timed repetitions behind the statistics
  first_call_s: Float64 - first call (JIT compile + launch), seconds
  bytes_moved: Int64 - forward: read x + write y = 2 * R * N * element size; backward: read y + dy + write dx
    = 3 * R * N * element size; forward_backward: 5 * R * N * element size (the two added), bytes
  gbps: Float64 - bytes_moved / median time, GB/s (1e9 bytes/s)
  copy_fraction: Float64 - gbps / copy_gbps (same GPU, same run)
  timing_note: string - how the method deviated, NA otherwise (a capture-unsafe backend's cuda_graph row: "not
    captured (...)", each sample the graph's calls run eagerly between two events)
  pruned: boolean - True when the sweep stopped sampling this row early because its median's 95 % CI lay clearly
    above the best config's of its group (same shape, dtype, direction, method and backend group; sweep --no-prune
    turns it off): its statistics come from the `reps` it has (fewer, wider); False otherwise, and in files written
    before the column
Compile facts (Triton variants; <NA> for torch)
  n_regs: Int64 - registers per thread
  spill_store_bytes, spill_load_bytes: Int64 - local-memory spill traffic per thread, bytes
  shared_bytes: Int64 - Triton shared memory per program, bytes
  blocks_per_sm: Int64 - resident programs per SM (occupancy calculator)
  occupancy: Float64 - active warps / max warps per SM, 0..1
  limiter: string - 'registers' | 'shared_memory' | 'warps' | 'blocks'
  compile_source: string - 'live' | 'offline'
  masked_lane_fraction: Float64 - lanes masked off / lanes spanned, 0..1 (lanes model)
Evidence
  kernel_names: string - CUDA kernels seen by torch.profiler, '; '-joined
  error: string - '' when the config ran; otherwise why not (the row is kept): 'unsupported: <backend>: ...'
    (a shape or setup the backend does not run), 'wrong result: ...' (checked against float64 before timing;
    never timed), 'skipped: ...' (predicted pathological compile), or the exception
  max_abs_error: Float64 - max |y - float64 softmax| of the checked first call (inf when NaN appears wrongly);
    backward directions: max |dx - float64 dx|
  kernel_source: string - generated kernel code where a backend generates it (Inductor's output module)
Numerics (blockscope.profiling.inspect.numerics; <NA> where not measured): each output element's distance from the
float64 softmax rounded to the output dtype, in ULPs of that dtype (NaN vs number = +inf)
  ulp_max, ulp_mean: Float64 - largest / mean ULP distance (mean over elements without a NaN mismatch)
  ulp_frac_0, ulp_frac_1, ulp_frac_gt1: Float64 - fraction of elements at 0, 1, > 1 ULP, 0..1
  rowsum_err_max: Float64 - largest |sum of a row's outputs - 1| (float64 sum; rows with a NaN reference skipped)
  numerics_input: string - input distribution: 'normal' (the sweep's), 'scale10', 'scale30', 'dominant',
    'near_uniform', 'special'
Environment (same on every row of one run)
  run_id: string - unique id of the sweep run
  gpu_name: string, compute_capability: string ('9.0'), sm_count: Int64, driver_version: string,
  torch_version: string, triton_version: string, copy_gbps: Float64 (device copy measured in this run, GB/s),
  measured_at: string (ISO-8601 UTC timestamp)
Kernel revision (profiling/results/revision.py; <NA> in files written before these columns, shown as 'unknown')
  kernel_source_hash: string - short sha256 of the kernels source a Blockscope variant's launch uses, or the
    package versions string of torch / a peer ('liger-kernel==0.6.1')
  kernel_revision: string - '<kernel_source_hash>@triton-<triton_version>'
Cold start (method 'cold_start', `python -m profiling coldstart`; <NA> on every other row and in older files)
  cold_phase: string - what one fresh process's wall time measures: 'torch_import' (import torch), 'import' (the
    backend's imports beyond torch), 'cuda_init' (CUDA context and a first allocation), 'first_call' (the first
    softmax call, compiles included, synchronized), 'second_call' (the next call, synchronized); median_us, p20_us,
    p80_us, min_us, max_us hold that wall time over `reps` fresh processes, microseconds
  cache_state: string - 'cold' (private, empty compiler cache folders) or 'warm' (the same folders after a cold run)
"""

from __future__ import annotations

import csv
import io
import math
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from blockscope import scratch

SCHEMA_VERSION = 2  # v2: op, case, op_shape (v1 files load with op 'softmax')
# prefixes of `error` for rows a backend does not run: its support rules ("unsupported: <backend>: ..."), or it cannot
# run here at all ("unavailable: <backend>: ...": package missing, no GPU); neither is a failure
PEER_BACKENDS: tuple[str, ...] = ("torch", "inductor", "liger", "quack")  # variants that are not Blockscope's kernels
PEER_PACKAGES: dict[str, str] = {
    "torch": "torch",
    "inductor": "torch",
    "liger": "liger-kernel",
    "quack": "quack-kernels",
}
UNSUPPORTED = "unsupported: "
UNAVAILABLE = "unavailable: "
NOT_RUN_PREFIXES: tuple[str, ...] = (UNSUPPORTED, UNAVAILABLE)
WRONG_RESULT = "wrong result: "  # checked against float64 before timing and found off: never timed

CONFIG_COLUMNS: dict[str, str] = {
    "variant": "string",
    "dtype": "string",
    "n_rows": "Int64",
    "n_cols": "Int64",
    "num_warps": "Int64",
    "num_stages": "Int64",
    "tile_width": "Int64",
    "rows_per_program": "Int64",
    "programs": "Int64",
    "tunables": "string",
    "direction": "string",
    "op": "string",
    "case": "string",
    "op_shape": "string",
}
TIMING_COLUMNS: dict[str, str] = {
    "method": "string",
    "median_us": "Float64",
    "p20_us": "Float64",
    "p80_us": "Float64",
    "min_us": "Float64",
    "max_us": "Float64",
    "reps": "Int64",
    "first_call_s": "Float64",
    "bytes_moved": "Int64",
    "gbps": "Float64",
    "copy_fraction": "Float64",
    "timing_note": "string",
    "pruned": "boolean",
}
COMPILE_COLUMNS: dict[str, str] = {
    "n_regs": "Int64",
    "spill_store_bytes": "Int64",
    "spill_load_bytes": "Int64",
    "shared_bytes": "Int64",
    "blocks_per_sm": "Int64",
    "occupancy": "Float64",
    "limiter": "string",
    "compile_source": "string",
    "masked_lane_fraction": "Float64",
}
EVIDENCE_COLUMNS: dict[str, str] = {
    "kernel_names": "string",
    "error": "string",
    "max_abs_error": "Float64",
    "kernel_source": "string",
}
NUMERICS_COLUMNS: dict[str, str] = {
    "ulp_max": "Float64",
    "ulp_mean": "Float64",
    "ulp_frac_0": "Float64",
    "ulp_frac_1": "Float64",
    "ulp_frac_gt1": "Float64",
    "rowsum_err_max": "Float64",
    "numerics_input": "string",
}
# the machine record (profiling/measure/machine.py, NVML), part of ENV_COLUMNS; files without it load them as NA
MACHINE_COLUMNS: dict[str, str] = {
    "gpu_uuid": "string",  # 'GPU-9a89...'
    "host_name": "string",
    "sm_clock_mhz": "Int64",  # current SM clock when the run started, MHz
    "sm_clock_max_mhz": "Int64",
    "mem_clock_mhz": "Int64",
    "mem_clock_max_mhz": "Int64",
    "sm_app_clock_mhz": "Int64",  # applications-clock SM target, MHz
    "clock_event_reasons": "Int64",  # nvmlDeviceGetCurrentClocksEventReasons bitmask
    "clocks_locked": "boolean",
    "power_limit_w": "Float64",  # enforced power limit, W
    "ecc_enabled": "boolean",
    "persistence_mode": "boolean",
    "mig_enabled": "boolean",
    "other_gpu_processes": "Int64",  # compute processes on the GPU other than this one
    "nvml_status": "string",  # 'ok' or why NVML fields are missing
}
ENV_COLUMNS: dict[str, str] = {
    "run_id": "string",
    "gpu_name": "string",
    "compute_capability": "string",
    "sm_count": "Int64",
    "driver_version": "string",
    "torch_version": "string",
    "triton_version": "string",
    "copy_gbps": "Float64",
    "measured_at": "string",
    **MACHINE_COLUMNS,
}
REVISION_COLUMNS: dict[str, str] = {"kernel_source_hash": "string", "kernel_revision": "string"}
COLD_START_COLUMNS: dict[str, str] = {"cold_phase": "string", "cache_state": "string"}
COLUMNS: dict[str, str] = {
    **CONFIG_COLUMNS,
    **TIMING_COLUMNS,
    **COMPILE_COLUMNS,
    **EVIDENCE_COLUMNS,
    **NUMERICS_COLUMNS,
    **ENV_COLUMNS,
    **REVISION_COLUMNS,
    **COLD_START_COLUMNS,
}
TIMING_METHODS: tuple[str, ...] = ("per_call_events", "back_to_back_flushed", "cuda_graph")
REQUIRED_COLUMNS: tuple[str, ...] = ("variant", "dtype", "n_rows", "n_cols", "method", "median_us")
COLD_START = "cold_start"  # method of `python -m profiling coldstart` rows: fresh-process wall times per cold_phase
COLD_PHASE_VALUES: tuple[str, ...] = ("torch_import", "import", "cuda_init", "first_call", "second_call")
CACHE_STATE_VALUES: tuple[str, ...] = ("cold", "warm", "store")  # store: cold caches + an AOT kernel store
METHOD_VALUES: tuple[str, ...] = (*TIMING_METHODS, "none", COLD_START)
DTYPE_VALUES: tuple[str, ...] = ("fp16", "bf16", "fp32")
DIRECTION_VALUES: tuple[str, ...] = ("forward", "backward", "forward_backward")
DEFAULT_DIRECTION = "forward"  # rows without a direction (files written before the column existed)
SOFTMAX = "softmax"  # op of plain row-softmax rows, and of every row of a file without the op column (schema v1)
OP_VALUES: tuple[str, ...] = (SOFTMAX, "masked_softmax", "ragged_softmax")
OP_CASES: dict[str, tuple[str, ...]] = {
    "masked_softmax": ("causal", "scale_mask_bias"),
    "ragged_softmax": ("uniform", "long_tail"),
}
BYTES_PER_ELEMENT_PASS: dict[str, int] = {"forward": 2, "backward": 3, "forward_backward": 5}  # R x N passes moved
ELEMENT_BYTES: dict[str, int] = {"fp16": 2, "bf16": 2, "fp32": 4}
SOURCE_COLUMN = "source"  # optional, added by concat_results(..., sources=...): which file a row came from
PARQUET_VERSION_KEY = b"blockscope_schema_version"
TIME_COLUMNS: tuple[str, ...] = ("median_us", "p20_us", "p80_us", "min_us", "max_us")  # must be > 0 and finite
MAX_ROWS = 2_000_000  # rows per results file; checked from parquet metadata / CSV line count before parsing
MAX_FILE_MB = 200  # size of one results file, MiB; .streamlit/config.toml server.maxUploadSize is the same
MAX_EXPANDED_MB = 1024  # what one file may expand to once decoded (parquet pages, dictionary strings), MiB
MAX_TEXT_CHARS = 1_000_000  # longest text value one results cell may hold (Inductor's generated source: ~10 kB)
MAX_CSV_CELLS = 60_000_000  # rows x columns of one CSV, checked before pandas parses it
CSV_MARKER = "# blockscope results rows="  # the first line of a CSV save_results writes: its row count
_NAN_TOKENS = ("nan", "+nan", "-nan")
_PICKLE_PREFIXES = (b"\x80", b"(dp", b"(lp", b"ccopy_reg")


class ResultsError(ValueError):
    """A results file or table that does not follow the schema; the message names the problem and what is expected."""


def empty_results() -> pd.DataFrame:
    """A zero-row results table with every schema column and dtype."""
    return pd.DataFrame({name: pd.Series([], dtype=dtype) for name, dtype in COLUMNS.items()})


def _cast(series: pd.Series, name: str, dtype: str) -> pd.Series:
    try:
        if dtype == "string":
            out = series.astype("string")
            if name == "direction":
                return out.mask(out == "").fillna(DEFAULT_DIRECTION)
            if name == "op":
                return out.mask(out == "").fillna(SOFTMAX)
            return out.fillna("") if name == "error" else out.mask(out == "")
        if dtype == "boolean":
            if series.dtype == object or pd.api.types.is_string_dtype(series.dtype):
                text = series.astype("string").str.strip().str.lower()
                words = {"true": True, "1": True, "false": False, "0": False}
                if not text.dropna().isin([*words, ""]).all():
                    raise ValueError("not a boolean")
                out = text.map(words, na_action="ignore").astype("boolean")
                return out.fillna(False) if name == "pruned" else out
            out = series.astype("boolean")
            return out.fillna(False) if name == "pruned" else out
        if dtype == "Int64":
            if series.dtype == object or pd.api.types.is_string_dtype(series.dtype):
                series = pd.to_numeric(series.mask(series.astype("string") == ""), errors="raise")
            if pd.api.types.is_float_dtype(series.dtype):
                floats = series.astype("Float64")
                if ((floats % 1).fillna(0) != 0).any():
                    raise ValueError("non-integer value")
                return floats.astype("Int64")
            return series.astype("Int64")
        if series.dtype == object or pd.api.types.is_string_dtype(series.dtype):
            return _floats_from_text(series)
        return series.astype("Float64")
    except (TypeError, ValueError) as error:
        bad = _first_bad_value(series, dtype)
        raise ResultsError(
            f"column {name!r} cannot be read as {dtype}{bad}: expected "
            f"{ {'Int64': 'integers', 'Float64': 'numbers', 'boolean': 'true/false'}.get(dtype, 'text') } "
            f"({type(error).__name__})"
        ) from None


def _floats_from_text(series: pd.Series) -> pd.Series:
    """Text -> Float64; '' and NA are missing, while 'NaN' stays a NaN value (rejected later by name)."""
    text = series.astype("string").str.strip()
    missing = (text.isna() | (text == "")).to_numpy(dtype=bool)
    nan = text.str.lower().isin(_NAN_TOKENS).fillna(False).to_numpy(dtype=bool)
    numbers = pd.to_numeric(text.mask(missing | nan), errors="raise").astype("Float64")
    values = numbers.to_numpy(dtype="float64", na_value=0.0)
    values[nan] = np.nan
    return pd.Series(pd.arrays.FloatingArray(values, missing), index=series.index)


def _nan_values(series: pd.Series) -> pd.Series:
    """True where a Float64 value is NaN (a number that is not a number), False where it is missing (NA)."""
    values = series.to_numpy(dtype="float64", na_value=0.0)
    return pd.Series(np.isnan(values), index=series.index)


def _first_bad_value(series: pd.Series, dtype: str) -> str:
    for index, value in series.items():
        if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA or value == "":
            continue
        try:
            number = float(value)
        except (TypeError, ValueError):
            return f" (row {index}: {str(value)[:40]!r})"
        if dtype == "Int64" and not number.is_integer():
            return f" (row {index}: {value!r} is not an integer)"
    return ""


def normalize(df: pd.DataFrame) -> pd.DataFrame:
    """Schema columns first (missing ones added as NA), cast to the schema dtypes; extra columns kept after.

    String columns hold NA rather than '' except `error`, where '' means the config ran, and `direction`, where a
    missing value (a file from before the column) means 'forward', and `op`, where it means 'softmax'.
    """
    if not isinstance(df, pd.DataFrame):
        raise ResultsError(f"expected a pandas DataFrame, got {type(df).__name__}")
    out = {}
    for name, dtype in COLUMNS.items():
        column = df[name] if name in df.columns else pd.Series([pd.NA] * len(df), index=df.index, dtype=dtype)
        out[name] = _cast(column, name, dtype)
    for name in df.columns:
        if name not in COLUMNS:
            out[name] = df[name]
    return pd.DataFrame(out, index=df.index).reset_index(drop=True)


def validate(df: pd.DataFrame, name: str = "results") -> pd.DataFrame:
    """Check columns, dtypes and values; return `df` or raise ResultsError listing the problems."""
    missing = [column for column in REQUIRED_COLUMNS if column not in df.columns]
    if missing:
        raise ResultsError(
            f"{name}: not a Blockscope results table: missing column(s) {', '.join(missing)}; "
            f"expected the results schema v{SCHEMA_VERSION} "
            f"(columns {', '.join(REQUIRED_COLUMNS)}, ...)"
        )
    problems = []
    for column, dtype in COLUMNS.items():
        if column in df.columns and str(df[column].dtype) != dtype:
            problems.append(f"column {column!r} has dtype {df[column].dtype}, expected {dtype}")
    if problems:
        raise ResultsError(f"{name}: " + "; ".join(problems) + " (call normalize first)")

    def check(mask: pd.Series, what: str) -> None:
        mask = mask.fillna(False).astype(bool)
        if mask.any():
            rows = list(mask[mask].index[:3])
            problems.append(f"{int(mask.sum())} row(s) {what} (first rows {rows})")

    check(~df["method"].isin(METHOD_VALUES), f"with method outside {', '.join(METHOD_VALUES)}")
    check(~df["dtype"].isin(DTYPE_VALUES), f"with dtype outside {', '.join(DTYPE_VALUES)}")
    if "direction" in df.columns:
        check(~df["direction"].isin(DIRECTION_VALUES), f"with direction outside {', '.join(DIRECTION_VALUES)}")
    if "cold_phase" in df.columns:
        check(
            df["cold_phase"].notna() & ~df["cold_phase"].isin(COLD_PHASE_VALUES),
            f"with cold_phase outside {', '.join(COLD_PHASE_VALUES)}",
        )
    if "cache_state" in df.columns:
        check(
            df["cache_state"].notna() & ~df["cache_state"].isin(CACHE_STATE_VALUES),
            f"with cache_state outside {', '.join(CACHE_STATE_VALUES)}",
        )
    if "op" in df.columns:
        check(~df["op"].isin(OP_VALUES), f"with op outside {', '.join(OP_VALUES)}")
        for op, cases in OP_CASES.items():
            check(
                (df["op"] == op) & ~df["case"].isin(cases),
                f"of op {op} with case outside {', '.join(cases)}",
            )
    check(df["variant"].isna(), "without a variant")
    for column in ("n_rows", "n_cols"):
        check(df[column].isna() | (df[column] < 1), f"with {column} missing or < 1")
    for column in ("median_us", "p20_us", "p80_us", "min_us", "max_us", "first_call_s", "gbps", "copy_gbps"):
        check(df[column] < 0, f"with negative {column}")
    ran = (df["error"].fillna("") == "") & (df["method"] != "none")
    for column in TIME_COLUMNS:
        values = df[column]
        nan = ran & _nan_values(values)
        if nan.any():
            problems.append(
                f"{int(nan.sum())} timed row(s) with {column} NaN, not a number (first rows "
                f"{list(nan[nan].index[:3])}); expected a time in µs > 0, or an error text for a "
                "config that did not run"
            )
            continue
        bad = ran & ((values == 0) | (values == math.inf)).fillna(False)  # negatives: reported above
        if bad.any():
            shown = ", ".join(f"row {i}: {values[i]}" for i in list(bad[bad].index[:3]))
            problems.append(
                f"{int(bad.sum())} timed row(s) with {column} 0 or infinite ({shown}); expected a finite time in µs > 0"
            )
    check(ran & df["median_us"].isna(), "with neither a median_us nor an error (truncated file?)")
    check((df["occupancy"] < 0) | (df["occupancy"] > 1), "with occupancy outside 0..1")
    check((df["masked_lane_fraction"] < 0) | (df["masked_lane_fraction"] > 1), "with masked_lane_fraction outside 0..1")
    if problems:
        raise ResultsError(f"{name}: " + "; ".join(problems))
    return df


def save_results(df: pd.DataFrame, path: str | Path) -> Path:
    """Write a validated results table: .parquet (schema_version in the metadata) or .csv, by suffix; atomic and
    durable (a temporary file per writer, fsynced, renamed over `path`, then the directory fsynced)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".parquet", ".csv"):
        raise ResultsError(f"{path.name}: unsupported results file suffix {path.suffix!r}; allowed: .parquet, .csv")
    table = validate(normalize(df), path.name)
    _check_rows(len(table), path.name)  # the loader's limits, checked here too: never write what cannot be read
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = scratch.temp_path(path)  # one per writer and call; a killed writer's is reclaimed here
    try:
        if suffix == ".parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            arrow = pa.Table.from_pandas(table, preserve_index=False)
            metadata = dict(arrow.schema.metadata or {})
            metadata[PARQUET_VERSION_KEY] = str(SCHEMA_VERSION).encode()
            pq.write_table(arrow.replace_schema_metadata(metadata), tmp)
        else:
            with open(tmp, "w", encoding="utf-8", newline="") as handle:
                handle.write(f"{CSV_MARKER}{len(table)}\n")  # a cut at a line boundary shows as missing rows
                table.to_csv(handle, index=False)
        written = tmp.read_bytes()
        _check_size(len(written), path.name)
        if suffix == ".csv":
            _check_rows(max(0, written.count(b"\n") - 2), path.name, "lines")
        else:
            _check_expansion(written, path.name)
        _fsync(tmp)  # the data is on disk before the rename makes it the file
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync(path.parent)  # and the rename itself
    return path


def _fsync(path: Path) -> None:
    """fsync a file or directory (directories: best effort, some filesystems refuse)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError:
        if not path.is_dir():
            raise
    finally:
        os.close(fd)


def _read_source(source: Any, name: str | None) -> tuple[bytes, str]:
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source), name or "uploaded data"
    if isinstance(source, (str, Path)):
        path = Path(source)
        try:
            if path.is_dir():
                raise ResultsError(f"{name or path}: is a directory; expected a results .parquet or .csv file")
            info = path.stat()
            if not stat.S_ISREG(info.st_mode):  # a FIFO would block the read, /dev/zero would never end
                raise ResultsError(
                    f"{name or path}: not a regular file (a pipe, device or socket); expected a results .parquet or "
                    ".csv file"
                )
            _check_size(info.st_size, name or path.name)
            with path.open("rb") as handle:  # read no more than the limit allows, whatever the size said
                data = handle.read(MAX_FILE_MB * 2**20 + 1)
            return data, name or path.name
        except OSError as error:
            raise ResultsError(f"{name or path}: cannot read ({error.strerror or error})") from None
    if hasattr(source, "getvalue"):
        return bytes(source.getvalue()), name or getattr(source, "name", "uploaded data")
    if hasattr(source, "read"):
        return bytes(source.read()), name or getattr(source, "name", "uploaded data")
    raise ResultsError(f"cannot read results from {type(source).__name__}; expected a path, bytes or a file object")


def load_results(source: str | Path | bytes | Any, name: str | None = None) -> pd.DataFrame:
    """Read a results .parquet or .csv (path, bytes or file object), normalized and validated.

    Raises ResultsError (a ValueError) for empty, truncated, corrupt, pickled or foreign files, files over
    MAX_ROWS rows or MAX_FILE_MB MB (checked before parsing), timed rows whose times are NaN, 0 or infinite,
    and running out of memory, naming the problem and what is expected. A UTF-8 byte-order mark and quoted
    CSV headers are fine. Never unpickles.
    """
    data, name = _read_source(source, name)
    _check_size(len(data), name)
    expected = f"expected a Blockscope results .parquet or .csv (schema v{SCHEMA_VERSION})"
    if not data.strip():
        raise ResultsError(f"{name}: the file is empty; {expected}")
    if data.startswith(_PICKLE_PREFIXES) or data[:2] == b"\x80\x04":
        raise ResultsError(f"{name}: looks like a Python pickle, which is never loaded (unsafe); {expected}")
    try:
        frame = _read_parquet(data, name, expected) if data.startswith(b"PAR1") else _read_csv(data, name, expected)
        if len(frame.columns) and not set(REQUIRED_COLUMNS) <= set(frame.columns):
            missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
            raise ResultsError(
                f"{name}: not a Blockscope results file: missing column(s) {', '.join(missing)}; {expected}"
            )
        try:
            table = normalize(frame)
        except ResultsError as error:
            raise ResultsError(f"{name}: {error}") from None
        return _nan_to_na(validate(table, name))
    except MemoryError:
        raise ResultsError(
            f"{name}: out of memory while loading ({len(data):,} bytes); load a smaller file "
            f"(at most {MAX_ROWS:,} rows, {MAX_FILE_MB} MB)"
        ) from None


def _check_size(size: int, name: str) -> None:
    """ResultsError when a file of `size` bytes is over MAX_FILE_MB."""
    if size > MAX_FILE_MB * 2**20:
        raise ResultsError(
            f"{name}: {size / 2**20:,.1f} MB is over the {MAX_FILE_MB} MB limit for a results "
            f"file; split it or filter the sweep (at most {MAX_ROWS:,} rows, {MAX_FILE_MB} MB)"
        )


def _check_rows(rows: int, name: str, what: str = "rows") -> None:
    """ResultsError when a file holds more than MAX_ROWS rows (checked before parsing it)."""
    if rows > MAX_ROWS:
        raise ResultsError(
            f"{name}: {rows:,} {what} is over the {MAX_ROWS:,}-row limit for a results file; "
            f"split it or filter the sweep (at most {MAX_ROWS:,} rows, {MAX_FILE_MB} MB)"
        )


def _nan_to_na(table: pd.DataFrame) -> pd.DataFrame:
    """NaN left in Float64 columns (outside timed rows' times, which validate rejects) becomes NA (missing)."""
    for column, dtype in COLUMNS.items():
        if dtype == "Float64" and _nan_values(table[column]).any():
            table[column] = table[column].mask(_nan_values(table[column]))
    return table


def _read_parquet(data: bytes, name: str, expected: str) -> pd.DataFrame:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not data.endswith(b"PAR1") or len(data) < 12:
        raise ResultsError(f"{name}: truncated parquet (no footer); {expected}")
    try:
        rows = pq.ParquetFile(pa.BufferReader(data)).metadata.num_rows
    except MemoryError:
        raise
    except Exception as error:  # pyarrow raises ArrowInvalid, OSError, ... for corrupt data
        raise ResultsError(f"{name}: corrupt parquet ({str(error).splitlines()[0][:200]}); {expected}") from None
    _check_rows(rows, name)
    _check_expansion(data, name)
    try:
        parquet = pq.ParquetFile(pa.BufferReader(data))
        text = [f.name for f in parquet.schema_arrow if _is_text(f.type)]
        table = pq.read_table(pa.BufferReader(data), read_dictionary=text)  # text stays dictionary-encoded
        _check_text(table, rows, name)
    except (MemoryError, ResultsError):
        raise
    except Exception as error:
        raise ResultsError(f"{name}: corrupt parquet ({str(error).splitlines()[0][:200]}); {expected}") from None
    version = (table.schema.metadata or {}).get(PARQUET_VERSION_KEY)
    if version is not None:
        try:
            number = int(version)
        except ValueError:
            raise ResultsError(f"{name}: unreadable schema_version {version[:20]!r}; {expected}") from None
        if number > SCHEMA_VERSION:
            raise ResultsError(
                f"{name}: written with results schema v{number}, newer than this Blockscope "
                f"(v{SCHEMA_VERSION}); {expected}"
            )
    try:
        frame = table.to_pandas()
    except MemoryError:
        raise
    except Exception as error:
        raise ResultsError(f"{name}: parquet columns cannot be read ({error}); {expected}") from None
    return _keep_nan(table, frame)


def _is_text(arrow_type: Any) -> bool:
    import pyarrow.types as pat

    if pat.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    return pat.is_string(arrow_type) or pat.is_large_string(arrow_type) or pat.is_binary(arrow_type)


def _check_expansion(data: bytes, name: str) -> None:
    """ResultsError when the parquet's pages decode to more than MAX_EXPANDED_MB (from its footer, before reading:
    a well-compressed page of repeated long strings is small on disk and huge in memory)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(pa.BufferReader(data)).metadata
    if meta.num_columns > 4 * len(COLUMNS):
        raise ResultsError(f"{name}: {meta.num_columns} columns; allowed: a results file (at most {4 * len(COLUMNS)})")
    total = sum(
        meta.row_group(g).column(c).total_uncompressed_size
        for g in range(meta.num_row_groups)
        for c in range(meta.num_columns)
    )
    if total > MAX_EXPANDED_MB * 2**20:
        raise ResultsError(
            f"{name}: its pages decode to {total / 2**20:,.0f} MB, over the {MAX_EXPANDED_MB:,} MB a results file may "
            f"expand to; allowed: at most {MAX_ROWS:,} rows, {MAX_FILE_MB} MB on disk, {MAX_EXPANDED_MB:,} MB decoded"
        )


def _check_text(table: Any, rows: int, name: str) -> None:
    """ResultsError when a text value is longer than MAX_TEXT_CHARS or the text columns would expand past
    MAX_EXPANDED_MB once every row holds its own copy (dictionary strings: rows x the longest value)."""
    import pyarrow.compute as pc
    import pyarrow.types as pat

    expanded = 0
    for column in table.column_names:
        chunked = table.column(column)
        if not pat.is_dictionary(chunked.type):
            continue
        longest = 0
        for chunk in chunked.chunks:
            if len(chunk.dictionary):
                longest = max(longest, int(pc.max(pc.binary_length(chunk.dictionary)).as_py() or 0))
        if longest > MAX_TEXT_CHARS:
            raise ResultsError(
                f"{name}: column {column!r} holds a value of {longest:,} bytes; allowed: text values of at most "
                f"{MAX_TEXT_CHARS:,} characters in a results file"
            )
        expanded += rows * longest
    if expanded > MAX_EXPANDED_MB * 2**20:
        raise ResultsError(
            f"{name}: its text columns would expand to {expanded / 2**20:,.0f} MB, over the {MAX_EXPANDED_MB:,} MB a "
            f"results file may expand to; allowed: at most {MAX_ROWS:,} rows, {MAX_EXPANDED_MB:,} MB decoded"
        )


def _keep_nan(table: Any, frame: pd.DataFrame) -> pd.DataFrame:
    """to_pandas turns NaN into missing in nullable float columns: put NaN back where the parquet holds NaN
    (not null) in a time column, so validate names it instead of calling the row truncated."""
    import pyarrow.compute as pc
    import pyarrow.types as pat

    for column in TIME_COLUMNS:
        if column not in table.column_names or not pat.is_floating(table.schema.field(column).type):
            continue
        chunked = table.column(column)
        nan = pc.fill_null(pc.is_nan(chunked), False).to_numpy(zero_copy_only=False)
        if nan.any():
            values = pc.fill_null(chunked, 0.0).to_numpy(zero_copy_only=False).astype("float64")
            missing = chunked.is_null().to_numpy(zero_copy_only=False)
            frame[column] = pd.Series(pd.arrays.FloatingArray(values, missing), index=frame.index)
    return frame


def _read_csv(data: bytes, name: str, expected: str) -> pd.DataFrame:
    marked = data.startswith(CSV_MARKER.encode())
    _check_rows(max(0, data.count(b"\n") - 1 - marked), name, "lines")
    try:
        text = data.decode("utf-8-sig")  # a byte-order mark (Excel's UTF-8 CSV) is dropped
    except UnicodeDecodeError:
        raise ResultsError(f"{name}: binary data, neither parquet nor UTF-8 CSV; {expected}") from None
    if "\x00" in text:
        raise ResultsError(f"{name}: binary data, neither parquet nor UTF-8 CSV; {expected}")
    declared = None
    if text.startswith(CSV_MARKER):  # written by save_results: it says how many rows follow
        first, _, text = text.partition("\n")
        try:
            declared = int(first[len(CSV_MARKER) :])
        except ValueError:
            raise ResultsError(f"{name}: unreadable row count {first[:60]!r}; {expected}") from None
    try:
        header = [column.strip() for column in next(csv.reader(io.StringIO(text.split("\n", 1)[0])), [])]
    except csv.Error:
        header = []
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise ResultsError(
            f"{name}: not a Blockscope results file: CSV header lacks column(s) {', '.join(missing)}; {expected}"
        )
    cells = max(0, text.count("\n") - 1) * len(header)
    if cells > MAX_CSV_CELLS:
        raise ResultsError(
            f"{name}: {cells:,} cells is over the {MAX_CSV_CELLS:,}-cell limit for a results CSV; allowed: at most "
            f"{MAX_ROWS:,} rows, {MAX_FILE_MB} MB"
        )
    longest = max((len(line) for line in text.split("\n")), default=0)
    if longest > MAX_TEXT_CHARS * 4:
        raise ResultsError(
            f"{name}: a CSV line of {longest:,} characters; allowed: text values of at most {MAX_TEXT_CHARS:,} "
            "characters in a results file"
        )
    try:
        frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, na_values=[""])
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as error:
        raise ResultsError(f"{name}: malformed CSV ({str(error).splitlines()[0][:200]}); {expected}") from None
    frame.columns = [str(column).strip() for column in frame.columns]
    if not text.endswith("\n") and len(frame):
        raise ResultsError(f"{name}: CSV does not end with a newline (truncated?); {expected}")
    if declared is not None and declared != len(frame):
        raise ResultsError(
            f"{name}: truncated: {len(frame):,} of the {declared:,} rows it was written with; {expected}"
        )
    return frame


def concat_results(
    frames: Sequence[pd.DataFrame] | Mapping[str, pd.DataFrame], sources: Sequence[str] | None = None
) -> pd.DataFrame:
    """Stack several results tables (normalized). A mapping (label -> frame) or `sources` adds a `source` column."""
    if isinstance(frames, Mapping):
        sources, frames = list(frames.keys()), list(frames.values())
    frames = [normalize(frame) for frame in frames]
    if sources is not None:
        if len(sources) != len(frames):
            raise ValueError(f"{len(sources)} sources for {len(frames)} frames; expected one label per frame")
        frames = [
            frame.assign(**{SOURCE_COLUMN: pd.Series([label] * len(frame), dtype="string")})
            for frame, label in zip(frames, sources, strict=True)
        ]
    if not frames:
        return empty_results()
    return normalize(pd.concat(frames, ignore_index=True))


def softmax_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The plain row-softmax rows (op == 'softmax'; all rows of a v1 file), index kept: what the softmax pages and
    reports read, never the fused ops' rows."""
    if "op" not in df.columns:
        return df
    return df[(df["op"].fillna(SOFTMAX) == SOFTMAX).astype(bool)]


def bytes_moved(n_rows: int, n_cols: int, dtype: str | Any, direction: str = DEFAULT_DIRECTION) -> int:
    """Bytes one call moves (dtype: 'fp16'/'bf16'/'fp32' or a torch dtype): forward reads x + writes y
    (2 * R * N * element size), backward reads y + dy + writes dx (3 * R * N * ...), forward_backward both (5 *)."""
    key = str(dtype).replace("torch.", "")
    key = {"float16": "fp16", "half": "fp16", "bfloat16": "bf16", "float32": "fp32", "float": "fp32"}.get(key, key)
    if key not in ELEMENT_BYTES:
        raise ValueError(f"unknown dtype {dtype!r}; allowed: {', '.join(ELEMENT_BYTES)}")
    if direction not in BYTES_PER_ELEMENT_PASS:
        raise ValueError(f"unknown direction {direction!r}; allowed: {', '.join(DIRECTION_VALUES)}")
    return BYTES_PER_ELEMENT_PASS[direction] * int(n_rows) * int(n_cols) * ELEMENT_BYTES[key]


def gbps(bytes_: int | float, median_us: float) -> float:
    """Bandwidth in GB/s (1e9 bytes/s) for `bytes_` moved in `median_us` microseconds."""
    return float(bytes_) / (float(median_us) * 1e-6) / 1e9 if median_us and median_us > 0 else float("nan")
