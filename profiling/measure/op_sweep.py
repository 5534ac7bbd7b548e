"""The fused ops' sweep (`python -m profiling sweep --op masked_softmax,ragged_softmax`): rows tagged with the op.

Configs are op x case x dtype x backend (x L for masked_softmax); each becomes one results row per timing method
(profiling/results/__init__.py, schema v2) with `op`, `case` and `op_shape` set. Shapes (docs/results-schema.md):
masked_softmax x is (B, H, L, L): n_rows = B*H*L, n_cols = L, bytes_moved = 2*B*H*L*L*element size (x read once,
y written once; the mask and bias are broadcast and not counted); ragged_softmax values are (T,) in `segments`
segments: n_rows = segments, n_cols = the longest segment, bytes_moved = 2*T*element size. op_shape holds the full
shape as JSON. Inputs, backends and float64 references come from profiling.measure.backends.fused (shared with
tools/bench_fused.py); timing is profiling.measure.timing.benchmark, the plain sweep's methods and stopping rule.
Per config: a backend that cannot run the case here gives 'unsupported: <backend>: why' rows; the first call is
timed cold and checked against the float64 reference (max |y - ref| over the reference's non-NaN lanes, NaN
positions equal, within fused.TOLERANCES): off -> 'wrong result: ...' rows, never timed; an exception -> rows with
the error. `out` is locked and resumed like the plain sweep's (same GPU, torch and Triton; transient errors
retried); plain softmax rows in `out` are kept as they are. Clock, device and environment are injectable (tests).
"""

from __future__ import annotations

import contextlib
import functools
import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from blockscope.kernels import DTYPE_NAMES, dtype_from_name
from blockscope.profiling.measure import timing
from blockscope.profiling.measure.backends import fused
from blockscope.profiling.measure.env import fingerprint
from blockscope.profiling.measure.sweep import (
    DEFAULT_DTYPES,
    RESUME_ENV_COLUMNS,
    _error_text,
    error_kind,
    results_lock,
    resume_env,
    save_or_rescue,
)
from blockscope.profiling.results import (
    COLUMNS,
    ELEMENT_BYTES,
    ENV_COLUMNS,
    SOFTMAX,
    empty_results,
    gbps,
    load_results,
    normalize,
)
from blockscope.profiling.results.revision import backend_versions, kernel_revision, op_source_hash

OPS: tuple[str, ...] = fused.OPS
KEY_COLUMNS: tuple[str, ...] = ("op", "case", "variant", "dtype", "n_rows", "n_cols", "op_shape", "method")

OpProgress = Callable[[int, int, "OpConfig"], None]


@dataclass(frozen=True)
class OpConfig:
    """One fused-op sweep point: op, case, backend, dtype ('fp16'/'bf16'/'fp32') and the shape (masked: batch,
    heads, length L; ragged: segments and the length scale of fused.ragged_lengths)."""

    op: str
    case: str
    backend: str
    dtype: str
    length: int = 0  # masked_softmax L (0 for ragged_softmax)
    batch: int = fused.BATCH
    heads: int = fused.HEADS
    segments: int = fused.RAGGED_SEGMENTS
    length_scale: float = 1.0

    @property
    def shape_key(self) -> tuple:
        """The configs sharing one input (same op, case, dtype and shape)."""
        return (self.op, self.case, self.dtype, self.length, self.batch, self.heads, self.segments, self.length_scale)

    def op_shape(self) -> dict[str, int]:
        """The full shape: masked {"batch", "heads", "length"}, ragged {"segments", "total", "max_len"}."""
        if self.op == fused.MASKED:
            return {"batch": self.batch, "heads": self.heads, "length": self.length}
        segments, total, max_len = _ragged_shape(self.case, self.segments, self.length_scale)
        return {"segments": segments, "total": total, "max_len": max_len}

    def rows_cols(self) -> tuple[int, int]:
        """(n_rows, n_cols) of the results row: masked (B*H*L, L), ragged (segments, longest segment)."""
        shape = self.op_shape()
        if self.op == fused.MASKED:
            return self.batch * self.heads * self.length, self.length
        return shape["segments"], shape["max_len"]

    def elements(self) -> int:
        """Elements of x (masked B*H*L*L, ragged T)."""
        n_rows, n_cols = self.rows_cols()
        return n_rows * n_cols if self.op == fused.MASKED else self.op_shape()["total"]

    def label(self) -> str:
        where = f"L={self.length}" if self.op == fused.MASKED else f"segments={self.segments}"
        return f"{self.op} {self.case} {self.backend} {self.dtype} {where}"


@functools.cache
def _ragged_shape(case: str, segments: int, scale: float) -> tuple[int, int, int]:
    lengths = fused.ragged_lengths(case, segments, scale)
    return int(lengths.numel()), int(lengths.sum()), int(lengths.max())


def parse_ops(ops: str | Sequence[str] | None) -> list[str]:
    """'masked_softmax,ragged_softmax' (or a list) -> the fused ops; ValueError naming the allowed ones ('softmax'
    is the plain sweep's and does not mix with these)."""
    names = [o.strip() for o in (ops.split(",") if isinstance(ops, str) else ops or ()) if o.strip()]
    if not names:
        raise ValueError(f"no op given; allowed: {SOFTMAX} (alone) or a comma list of {', '.join(OPS)}")
    bad = [o for o in names if o not in OPS]
    if bad:
        if bad == [SOFTMAX]:
            raise ValueError(f"{SOFTMAX} runs alone; allowed: {SOFTMAX} or a comma list of {', '.join(OPS)}")
        shown = ", ".join(b for b in bad if b != SOFTMAX)
        raise ValueError(f"unknown op(s) {shown}; allowed: {SOFTMAX} (alone) or a comma list of {', '.join(OPS)}")
    return list(dict.fromkeys(names))


def build_op_configs(
    ops: Sequence[str],
    dtypes: Sequence[str] | None = None,
    lengths: Sequence[int] | None = None,
    backends: Sequence[str] | None = None,
    cases: Sequence[str] | None = None,
    *,
    batch: int = fused.BATCH,
    heads: int = fused.HEADS,
    segments: int = fused.RAGGED_SEGMENTS,
    length_scale: float = 1.0,
) -> list[OpConfig]:
    """op x case x dtype (x L for masked_softmax) x backend. Defaults: every case, fp16/bf16/fp32, L in
    fused.MASKED_LENGTHS at (B, H) = (2, 16), every registered backend; ragged lengths as tools/bench_fused.py.
    `backends` names apply to the ops that have them (each name must belong to one of `ops`); `cases` likewise.
    ValueError for unknown ops, dtypes, backends or cases and L, batch, heads or segments below 1."""
    ops = parse_ops(ops)
    dtypes = [DTYPE_NAMES[dtype_from_name(d)] for d in (dtypes or DEFAULT_DTYPES)]
    lengths = list(lengths) if lengths else list(fused.MASKED_LENGTHS)
    for name, values in (("L", lengths), ("batch", [batch]), ("heads", [heads]), ("segments", [segments])):
        bad = [v for v in values if isinstance(v, bool) or not isinstance(v, int) or v < 1]
        if bad:
            raise ValueError(f"{name} {', '.join(map(repr, bad))}; allowed: integers >= 1")
    known = {op: fused.backend_names(op) for op in ops}
    if backends:
        bad = [b for b in backends if not any(b in names for names in known.values())]
        if bad:
            allowed = ", ".join(dict.fromkeys(n for names in known.values() for n in names))
            raise ValueError(f"unknown backend(s) {', '.join(bad)} for {', '.join(ops)}; allowed: {allowed}")
    if cases:
        bad = [c for c in cases if not any(c in fused.CASES[op] for op in ops)]
        if bad:
            allowed = ", ".join(c for op in ops for c in fused.CASES[op])
            raise ValueError(f"unknown case(s) {', '.join(bad)} for {', '.join(ops)}; allowed: {allowed}")
    configs = []
    for op in ops:
        names = [b for b in known[op] if not backends or b in backends]
        op_cases = [c for c in fused.CASES[op] if not cases or c in cases]
        for case in op_cases:
            for dtype in dtypes:
                for length in lengths if op == fused.MASKED else [0]:
                    for name in names:
                        configs.append(
                            OpConfig(op, case, name, dtype, length, batch, heads, segments, float(length_scale))
                        )
    return list(dict.fromkeys(configs))


def row_key(row: Mapping[str, Any]) -> tuple:
    """The identity of one op row: KEY_COLUMNS' values as text."""
    return tuple("" if row.get(c) is None or row.get(c) is pd.NA else str(row.get(c)) for c in KEY_COLUMNS)


def _op_rows(table: pd.DataFrame, env: Mapping[str, Any], retry_errors: bool) -> tuple[set[tuple], dict[tuple, list]]:
    """(keys of `table`'s op rows that count as done in `env`, key -> index of its error rows a new result replaces)."""
    if not len(table):
        return set(), {}
    mask = table["op"].isin(OPS).fillna(False).astype(bool)
    for name, value in zip(RESUME_ENV_COLUMNS, resume_env(env), strict=True):
        mask &= (table[name].astype("string").fillna("") == value).astype(bool)
    kinds = table["error"].map(error_kind)
    retried = (kinds != "") if retry_errors else (kinds == "transient")
    done: set[tuple] = set()
    replaceable: dict[tuple, list] = {}
    for index in table.index[mask]:
        key = row_key(table.loc[index].to_dict())
        if retried[index]:
            replaceable.setdefault(key, []).append(index)
        else:
            done.add(key)
    return done, replaceable


def _kernel_hash(config: OpConfig) -> str:
    if config.backend == "blockscope":
        return op_source_hash(config.op)
    return backend_versions("torch")


def _launch_columns(config: OpConfig) -> dict[str, Any]:
    """Blockscope's resolved launch (num_warps, tunables JSON) for the config's shape; '{}' and NA for torch's."""
    if config.backend != "blockscope":
        return {"tunables": "{}"}
    try:
        dtype = dtype_from_name(config.dtype)
        if config.op == fused.MASKED:
            from blockscope.kernels import masked

            n_rows, n_cols = config.rows_cols()
            plan = masked.forward_plan(n_rows, n_cols, dtype, causal=config.case == "causal")
        else:
            from blockscope.kernels import ragged

            plan = ragged.plan(config.op_shape()["total"], 1, dtype)
        return {"num_warps": plan.num_warps, "tunables": json.dumps(plan.tunables, sort_keys=True)}
    except Exception:  # the launch columns are evidence: NA when the plan cannot be read
        return {"tunables": "{}"}


def _inputs(config: OpConfig, device: torch.device, seed: int) -> Any:
    dtype = dtype_from_name(config.dtype)
    if config.op == fused.MASKED:
        return fused.masked_inputs(config.case, config.length, dtype, device, batch=config.batch, heads=config.heads)
    return fused.ragged_inputs(
        config.case, dtype, device, segments=config.segments, scale=config.length_scale, seed=seed
    )


def _reference(config: OpConfig, inputs: Any) -> torch.Tensor:
    return fused.masked_reference(inputs) if config.op == fused.MASKED else fused.ragged_reference(inputs)


def _base_row(config: OpConfig, env_row: Mapping[str, Any]) -> dict[str, Any]:
    n_rows, n_cols = config.rows_cols()
    source_hash = _kernel_hash(config)
    return {
        **env_row,
        "variant": config.backend,
        "dtype": config.dtype,
        "n_rows": n_rows,
        "n_cols": n_cols,
        "direction": "forward",
        "op": config.op,
        "case": config.case,
        "op_shape": json.dumps(config.op_shape(), sort_keys=True),
        "bytes_moved": 2 * config.elements() * ELEMENT_BYTES[config.dtype],
        "error": "",
        "pruned": False,
        "kernel_source_hash": source_hash,
        "kernel_revision": kernel_revision(source_hash, env_row.get("triton_version")),
        **_launch_columns(config),
    }


def run_op_sweep(
    configs: Sequence[OpConfig],
    *,
    methods: Sequence[str] = timing.TIMING_METHODS,
    out: str | Path | None = None,
    device: str | torch.device | None = None,
    clock: timing.Clock | None = None,
    env: Mapping[str, Any] | None = None,
    reps: int | None = None,
    warmup: int = timing.DEFAULT_WARMUP,
    min_reps: int = timing.DEFAULT_MIN_REPS,
    max_reps: int = timing.DEFAULT_MAX_REPS,
    rel_ci: float | None = timing.DEFAULT_REL_CI,
    budget_ms: float = timing.DEFAULT_BUDGET_MS,
    graph_calls: int = timing.DEFAULT_GRAPH_CALLS,
    progress: OpProgress | None = None,
    cancel: Callable[[], bool] | None = None,
    save_every_s: float = 20.0,
    seed: int = 0,
    retry_errors: bool = False,
) -> pd.DataFrame:
    """Run `configs` x `methods`; return the whole table (rows already in `out` first, then the new ones).

    `out` (.parquet/.csv) is locked for the run, read first (op rows measured in this environment are skipped;
    transient error rows, or all error rows with `retry_errors`, are measured again and replaced) and rewritten
    every `save_every_s` seconds and at the end, also when interrupted. `progress(done, total, config)` after each
    config; `cancel()` returning True stops before the next one. Defaults: CUDA clock and the live environment
    fingerprint. `df.attrs['sweep']` holds the counts (done, skipped_existing, errors, cancelled, seconds)."""
    started = time.perf_counter()
    methods = list(dict.fromkeys(methods))
    for method in methods:
        if method not in timing.TIMING_METHODS:
            raise ValueError(f"unknown timing method {method!r}; allowed: {', '.join(timing.TIMING_METHODS)}")
    device = (
        torch.device(device) if device is not None else torch.device("cuda" if torch.cuda.is_available() else "cpu")
    )
    if clock is None:
        if device.type != "cuda":
            raise ValueError(f"timing on {device} needs an injected clock; allowed: a cuda device")
        clock = timing.CudaClock(device)
    env = dict(env) if env is not None else fingerprint(device)
    env_row = {name: env.get(name) for name in ENV_COLUMNS}
    if any(c.backend == "inductor" for c in configs):
        for option in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit"):
            if hasattr(torch._dynamo.config, option):  # one compiled expression per (case, dtype, L)
                setattr(torch._dynamo.config, option, max(1024, getattr(torch._dynamo.config, option)))
    info: dict[str, Any] = {"done": 0, "skipped_existing": 0, "errors": 0, "cancelled": False, "saved_to": None}
    with contextlib.ExitStack() as stack:
        if out is not None:
            stack.enter_context(results_lock(out))
        out_path = Path(out) if out is not None else None
        existing = load_results(out_path) if out_path is not None and out_path.exists() else empty_results()
        done_keys, replaceable = _op_rows(existing, env_row, retry_errors)
        replaced: list = []
        new_rows: list[dict[str, Any]] = []
        last_save = time.perf_counter()

        def table() -> pd.DataFrame:
            kept = existing.drop(index=replaced)
            if not new_rows:
                return normalize(kept)
            new = normalize(pd.DataFrame(new_rows, columns=list(COLUMNS)))
            return normalize(pd.concat([kept, new], ignore_index=True)) if len(kept) else new

        def save() -> None:
            nonlocal last_save
            if out_path is not None and new_rows:
                written = save_or_rescue(table(), out_path)
                if written != out_path and str(written) != info["saved_to"]:
                    info["saved_to"] = str(written)
                    sys.stderr.write(f"sweep: {out_path}: No space left on device; its rows are saved in {written}\n")
            last_save = time.perf_counter()

        pending: list[tuple[OpConfig, dict[str, Any], list[str]]] = []
        for config in configs:
            base = _base_row(config, env_row)
            todo = [m for m in methods if row_key({**base, "method": m}) not in done_keys]
            if todo:
                pending.append((config, base, todo))
            else:
                info["skipped_existing"] += 1
        groups: dict[tuple, list[tuple[OpConfig, dict[str, Any], list[str]]]] = {}
        for item in pending:
            groups.setdefault(item[0].shape_key, []).append(item)
        total = len(pending)
        try:
            with torch.no_grad():
                for group in groups.values():
                    if cancel is not None and cancel():
                        info["cancelled"] = True
                        break
                    rows = _run_group(
                        group,
                        device=device,
                        clock=clock,
                        seed=seed,
                        reps=reps,
                        warmup=warmup,
                        min_reps=min_reps,
                        max_reps=max_reps,
                        rel_ci=rel_ci,
                        budget_ms=budget_ms,
                        graph_calls=graph_calls,
                        copy_gbps=env_row.get("copy_gbps"),
                        progress=lambda config: progress(info["done"], total, config) if progress else None,
                        info=info,
                        cancel=cancel,
                    )
                    for row in rows:
                        replaced.extend(replaceable.pop(row_key(row), ()))
                    info["errors"] += sum(1 for row in rows if row["error"])
                    new_rows.extend(rows)
                    if time.perf_counter() - last_save >= save_every_s:
                        save()
        finally:
            save()
        result = table()
    info["seconds"] = time.perf_counter() - started
    info["total"] = total
    result.attrs["sweep"] = info
    return result


def _run_group(
    group: list[tuple[OpConfig, dict[str, Any], list[str]]],
    *,
    device: torch.device,
    clock: timing.Clock,
    seed: int,
    copy_gbps: float | None,
    progress: Callable[[OpConfig], None],
    info: dict[str, Any],
    cancel: Callable[[], bool] | None,
    **timing_options: Any,
) -> list[dict[str, Any]]:
    """The rows of the configs sharing one input: built once, its float64 reference once (when a backend runs)."""
    rows: list[dict[str, Any]] = []
    first = group[0][0]
    try:
        inputs = _inputs(first, device, seed)
    except Exception as error:  # e.g. out of memory making x: every config of the shape says so
        for config, base, todo in group:
            rows += [{**base, "method": m, "error": _error_text(error)} for m in todo]
            info["done"] += 1
            progress(config)
        return rows
    reference = None
    tolerance = fused.TOLERANCES[dtype_from_name(first.dtype)]
    for config, base, todo in group:
        if cancel is not None and cancel():
            info["cancelled"] = True
            break
        why = fused.unsupported_reason(config.op, config.backend, inputs)
        if why is None:
            try:
                if reference is None:
                    reference = _reference(config, inputs)
                rows += _run_config(config, base, todo, inputs, reference, tolerance, clock, copy_gbps, timing_options)
            except Exception as error:  # the backend failed to build or run: rows with the error, the sweep goes on
                rows += [{**base, "method": m, "error": _error_text(error)} for m in todo]
        else:
            rows += [{**base, "method": m, "error": why} for m in todo]
        info["done"] += 1
        progress(config)
        if device.type == "cuda":
            torch.cuda.empty_cache()
    del inputs, reference
    return rows


def _run_config(
    config: OpConfig,
    base: dict[str, Any],
    todo: list[str],
    inputs: Any,
    reference: torch.Tensor,
    tolerance: float,
    clock: timing.Clock,
    copy_gbps: float | None,
    timing_options: dict[str, Any],
) -> list[dict[str, Any]]:
    fn = fused.get_backend(config.op, config.backend).build(inputs)
    outputs: list[torch.Tensor] = []
    first_s = timing.first_call_seconds(lambda: outputs.append(fn()), clock)
    err, nan_mismatch, shape_error = fused.max_abs_error(outputs.pop(), reference)
    base = {**base, "first_call_s": first_s, "max_abs_error": err if not nan_mismatch else float("inf")}
    if shape_error or nan_mismatch or err > tolerance:
        why = shape_error or f"max_abs={err:.3g} nan_mismatch={nan_mismatch} (tolerance {tolerance:g} vs float64)"
        return [{**base, "method": m, "error": f"wrong result: {why}"} for m in todo]
    rows = []
    options = dict(timing_options)
    warmup = options.pop("warmup")
    for position, method in enumerate(todo):
        row = {**base, "method": method}
        try:
            stats = timing.benchmark(
                fn,
                method,
                clock=clock,
                first_call_s=first_s,
                warmup=warmup if position == 0 else min(warmup, timing.WARMUP_CHUNK),
                **options,
            )
            row.update({k: getattr(stats, k) for k in ("median_us", "p20_us", "p80_us", "min_us", "max_us", "reps")})
            row["gbps"] = gbps(row["bytes_moved"], stats.median_us)
            if copy_gbps:
                row["copy_fraction"] = row["gbps"] / copy_gbps
        except Exception as error:  # one method failing (e.g. graph capture) is that method's row
            row["error"] = _error_text(error)
        rows.append(row)
    return rows
