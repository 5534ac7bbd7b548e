"""Sweep runner: variants ('torch' + kernels.VARIANTS) x dtypes x N x R x num_warps x other tunables.

One results row per (config, timing method) in the schema of profiling/results/__init__.py. Per config: resolve the
launch plan, skip configs with a pathological predicted compile cost, make the input (shared by configs of
the same shape), time the cold first call, check it once against kernels.reference_softmax (float64),
gather compile facts (profiling.inspect.compiled / occupancy / lanes, imported lazily; NA when unavailable), then
time each method. A failing config becomes error rows and the sweep goes on. Kernel names come from a
trace pass after all timing (one torch.profiler call per config, also filling rows of earlier runs that
lack them): CUPTI, once initialised, can stay attached and slow later launches, so no trace precedes a
timed call. Rows are saved to `out` periodically (atomic, fsynced rewrite) under an exclusive lock on `out`
(a sidecar '<out>.lock' held for the whole sweep; a second writer gets ResultsLockError naming the holder),
and a rerun skips the (config, method) pairs already there, so an interrupted sweep resumes from its output
file. Resuming counts only rows measured on the same GPU with the same torch and Triton versions (rows of
another GPU stay in the file and are measured again here), and never error rows of a transient failure (CUDA
out of memory, CUDA/driver errors, RuntimeErrors from a launch): those are retried and replaced by the new
result; deterministic errors (over a limit, bad tunables, a predicted pathological compile, a wrong result)
are kept unless `retry_errors`. Timer, tracer, compile facts and environment are injectable for CPU tests.
Timing prunes by default (`prune`, PruneBoard): within a group (shape, dtype, direction, method, backend group:
the Blockscope variants together, torch and each peer alone), a config whose median's 95 % CI lies clearly above the
best so far (timing.clearly_slower) stops sampling after a few samples and its rows say pruned=True; 'auto' runs
first in each shape. `status` reports phases (precompile, timing, trace) with time left measured per phase
(profiling.measure.progress). A config's later methods warm up with one chunk (the first method warmed it).
The default N (`default_n_values`) include the tiny rows TINY_N (8-64), whose rows the CLI's default sweep scales
per N and dtype so a config moves >= TINY_MIN_BYTES = 32 MB (`sweep_rows`: R = max(R, ceil(32 MB / (2 x N x
itemsize)))).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import math
import os
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from blockscope import kernels
from blockscope.kernels import DTYPE_NAMES, LaunchPlan, dtype_from_name, get_variant
from blockscope.kernels._common import NUM_WARPS_ALLOWED
from blockscope.profiling.measure import machine, timing
from blockscope.profiling.measure.backends import PEERS, get_backend, is_peer, unsupported_reason
from blockscope.profiling.measure.directions import (
    BACKWARD,
    FORWARD,
    GradientInputs,
    backward_plan,
    check_direction,
    direction_callable,
    gradient_inputs,
    parse_directions,
)
from blockscope.profiling.measure.env import arch_of, fingerprint, utc_now_iso
from blockscope.profiling.measure.progress import EtaEstimator, SweepStatus, format_duration
from blockscope.profiling.results import (
    COLUMNS,
    COMPILE_COLUMNS,
    ENV_COLUMNS,
    SOFTMAX,
    bytes_moved,
    empty_results,
    gbps,
    load_results,
    normalize,
    save_results,
)
from blockscope.profiling.results.revision import kernel_revision, kernel_source_hash

TORCH = "torch"
DEFAULT_ROWS = 4096
DEFAULT_DTYPES: tuple[str, ...] = ("fp16", "bf16", "fp32")
MID_POINTS: tuple[int, ...] = (1000, 3000, 6000, 12000, 50000)
# tiny rows (MoE routers over 8-64 experts, issue 37): in the default sweep at rows scaled per N and dtype so that a
# config moves >= TINY_MIN_BYTES (read + write): R = max(R, ceil(TINY_MIN_BYTES / (2 x N x itemsize))), e.g. 1048576
# rows of 8 fp16 or 65536 rows of 64 fp32 (at R=4096 such a config moves 64 KB to 2 MB: launch-bound, it says nothing
# of bandwidth)
TINY_N: tuple[int, ...] = (8, 16, 32, 64)
TINY_MIN_BYTES = 32 * 2**20
# configs whose Chrome trace a CLI sweep keeps by default (those the sweep runs): the seed's shape, a wide row
DEFAULT_TRACE_CONFIGS: tuple[str, ...] = (
    "torch:fp16:1000",
    "teaching:fp16:1000",
    "auto:fp16:1000",
    "torch:fp16:65536",
    "auto:fp16:65536",
    "splitrow:fp32:262144",
)
# lanes one thread holds = tile lanes / (32 x num_warps); 512+ compiles for minutes (teaching, BLOCK 65536,
# 1 warp = 2048 lanes/thread took 71 s on the H200), so such configs are skipped with an error row
DEFAULT_MAX_LANES_PER_THREAD = 256
DEFAULT_COMPILE_CAP_S = 30.0
TOLERANCES: dict[str, tuple[float, float]] = {"fp32": (5e-5, 1e-6), "fp16": (2e-3, 1e-5), "bf16": (1.6e-2, 1e-5)}

Progress = Callable[[int, int, "Config"], None]
Status = Callable[[SweepStatus], None]  # phase, done/total and seconds left (profiling.measure.progress)
Cancel = Callable[[], bool]
Tracer = Callable[[Callable[[], Any]], list[str]]
BatchTracer = Callable[[Sequence[Callable[[], Any]]], "list[list[str]] | None"]  # one session, names per call
TRACE_BATCH = 64  # configs per profiler session of the trace pass (those of one shape)
ChromeTracer = Callable[[Callable[[], Any], Path], list[str]]  # run once, write a Chrome trace, return kernel names
CompileFacts = Callable[["Config", "LaunchPlan", "str | None"], dict[str, Any]]


def all_variants() -> tuple[str, ...]:
    """'torch' plus every registered Triton variant that runs here (GPU-only Gluon variants need CUDA and no
    interpreter)."""
    return (TORCH, *(name for name, spec in kernels.VARIANTS.items() if spec.runs_here()))


def default_variants() -> tuple[str, ...]:
    """The CLI's default: 'torch', every Triton variant, and (on a CUDA machine, where sweeps run) the peer
    backends that can run there."""
    peers = tuple(
        name for name in PEERS if name != TORCH and torch.cuda.is_available() and get_backend(name).available() is None
    )
    return (TORCH, *peers, *all_variants()[1:])


def default_n_values(
    low: int = 128, high: int = 262144, mid: Iterable[int] = MID_POINTS, tiny: Iterable[int] = TINY_N
) -> list[int]:
    """Powers of two from `low` to `high` with their +-1 neighbours (within range), plus mid points, plus the tiny N
    (below `low`; their rows scale per N, see `sweep_rows`)."""
    values = set(mid)
    power = low
    while power <= high:
        values.update(n for n in (power - 1, power, power + 1) if low <= n <= high)
        power *= 2
    return sorted({v for v in values if low <= v <= high} | {int(v) for v in tiny if 1 <= int(v) < low})


def sweep_rows(n_cols: int, dtype: str | torch.dtype, n_rows: int = DEFAULT_ROWS) -> int:
    """Rows of a default-sweep config: `n_rows`, or for N <= max(TINY_N) enough rows to move TINY_MIN_BYTES (input
    read + output written): max(n_rows, ceil(TINY_MIN_BYTES / (2 x N x itemsize)))."""
    if n_cols > max(TINY_N):
        return n_rows
    itemsize = dtype_from_name(dtype).itemsize
    return max(n_rows, -(-TINY_MIN_BYTES // (2 * n_cols * itemsize)))


def max_n(variant: str, dtype: str | None = None) -> int:
    """The largest N a variant takes, in `dtype` when given (peers: their own `supports` rules decide, per row)."""
    if is_peer(variant):
        return 2**31 - 1
    spec = get_variant(variant)
    return spec.max_n if dtype is None else spec.limit(dtype_from_name(dtype))


@dataclass(frozen=True)
class Config:
    """One sweep point; `tunables` are the requested ones (sorted name/value pairs)."""

    variant: str
    dtype: str
    n_rows: int
    n_cols: int
    tunables: tuple[tuple[str, int], ...] = ()
    direction: str = FORWARD  # 'forward' | 'backward' | 'forward_backward' (blockscope.profiling.measure.directions)

    @property
    def tunables_dict(self) -> dict[str, int]:
        return dict(self.tunables)

    def label(self) -> str:
        extra = "".join(f" {k}={v}" for k, v in self.tunables)
        way = "" if self.direction == FORWARD else f" [{self.direction}]"
        return f"{self.variant} {self.dtype} R={self.n_rows} N={self.n_cols}{extra}{way}"


def make_config(
    variant: str, dtype: str, n_rows: int, n_cols: int, *, direction: str = FORWARD, **tunables: int
) -> Config:
    (direction,) = parse_directions([direction])
    return Config(
        variant,
        DTYPE_NAMES[dtype_from_name(dtype)],
        int(n_rows),
        int(n_cols),
        tuple(sorted((k, int(v)) for k, v in tunables.items())),
        direction,
    )


def build_configs(
    variants: Sequence[str] | None = None,
    dtypes: Sequence[str] | None = None,
    n_values: Sequence[int] | None = None,
    n_rows: int | Sequence[int] = DEFAULT_ROWS,
    num_warps: Sequence[int] | None = None,
    tunable_grid: Mapping[str, Sequence[int]] | None = None,
    directions: Sequence[str] | None = None,
    scale_tiny_rows: bool = False,
    default_selection: bool = False,
) -> list[Config]:
    """The cross product, each variant only within its N limit; num_warps and `tunable_grid` values apply to
    the variants that take that tunable ('torch' and 'auto' take none: one config each). `directions`
    (default forward only): each config once per direction, except that 'backward' configs of Blockscope variants
    take no tunables (their backward is one Triton kernel whatever the forward's tunables). `scale_tiny_rows` (the
    default sweep): each R of N <= max(TINY_N) raised by `sweep_rows` so the config moves >= TINY_MIN_BYTES.
    `default_selection` (the variants were not named): a variant with a `sweep_where` rule only where it holds.
    ValueError for unknown variants/dtypes/directions, N or R below 1 and num_warps outside NUM_WARPS_ALLOWED."""
    ways = parse_directions(directions)
    variants = list(variants) if variants else list(all_variants())
    for variant in variants:
        if not is_peer(variant):
            get_variant(variant)
    dtypes = [DTYPE_NAMES[dtype_from_name(d)] for d in (dtypes or DEFAULT_DTYPES)]
    n_values = list(n_values) if n_values else default_n_values()
    rows = [n_rows] if isinstance(n_rows, int) else list(n_rows)
    for name, values in (("n_values", n_values), ("n_rows", rows)):
        bad = [v for v in values if isinstance(v, bool) or not isinstance(v, int) or v < 1]
        if bad:
            raise ValueError(f"{name} {', '.join(map(repr, bad))}; allowed: integers >= 1")
    bad = [w for w in num_warps or () if w not in NUM_WARPS_ALLOWED]
    if bad:
        raise ValueError(f"num_warps {', '.join(map(repr, bad))}; allowed: {', '.join(map(str, NUM_WARPS_ALLOWED))}")
    grid: dict[str, list[int]] = {}
    if num_warps:
        grid["num_warps"] = list(num_warps)
    for name, values in (tunable_grid or {}).items():
        grid[name] = list(values)
    configs: list[Config] = []
    for dtype in dtypes:
        for r in rows:
            for n in n_values:
                r_here = sweep_rows(n, dtype, r) if scale_tiny_rows else r
                for variant in variants:
                    if n > max_n(variant, dtype):
                        continue
                    rule = None if is_peer(variant) else get_variant(variant).sweep_where
                    if default_selection and rule is not None and not rule(n, dtype_from_name(dtype)):
                        continue
                    accepted = {} if is_peer(variant) else get_variant(variant).tunables
                    axes = [(name, values) for name, values in grid.items() if name in accepted]
                    for way in ways:
                        for combo in _product(axes if way != BACKWARD else []):
                            configs.append(make_config(variant, dtype, r_here, n, direction=way, **combo))
    return list(dict.fromkeys(configs))


def _product(axes: list[tuple[str, list[int]]]) -> list[dict[str, int]]:
    combos: list[dict[str, int]] = [{}]
    for name, values in axes:
        combos = [{**c, name: v} for c in combos for v in values]
    return combos


def resolve_plan(config: Config, gpu_name: str | None = None) -> kernels.LaunchPlan | None:
    """The variant's LaunchPlan (None for peers, and for 'auto' where it picks torch.softmax); raises the
    variant's ValueError for bad tunables/N."""
    if is_peer(config.variant):
        return None
    dtype = dtype_from_name(config.dtype)
    if config.direction == BACKWARD:  # every variant's autograd runs the one Triton backward
        return backward_plan(config.n_rows, config.n_cols, dtype)
    if config.variant == "auto":
        from blockscope.kernels import auto

        if auto.choose(config.n_rows, config.n_cols, dtype, gpu_name)[0] == TORCH:
            return None  # the tuning table picks torch.softmax here: no Triton kernel
        return get_variant("auto").plan(config.n_rows, config.n_cols, dtype, gpu_name=gpu_name)
    return get_variant(config.variant).plan(config.n_rows, config.n_cols, dtype, **config.tunables_dict)


def resolved_tunables_json(config: Config, plan: kernels.LaunchPlan | None) -> str:
    """JSON of the resolved tunables ('{}' for peers and auto; the requested ones when the plan failed; the Triton
    backward's for a Blockscope variant's 'backward' config)."""
    if is_peer(config.variant) or (config.variant == "auto" and config.direction != BACKWARD):
        return "{}"
    tunables = plan.tunables if plan is not None else config.tunables_dict
    return json.dumps({k: int(v) for k, v in tunables.items()}, sort_keys=True)


def lanes_per_thread(plan: kernels.LaunchPlan) -> float:
    """Lanes one thread holds: tile_width x rows_per_program / (32 x num_warps)."""
    return plan.tile_width * plan.rows_per_program / (32 * plan.num_warps)


def predicted_compile_problem(plan: kernels.LaunchPlan | None, max_lanes: float | None) -> str | None:
    """Why a config is skipped before compiling (None: go ahead)."""
    if plan is None or max_lanes is None:
        return None
    lanes = lanes_per_thread(plan)
    if lanes > max_lanes:
        return (
            f"skipped: predicted pathological compile time: {lanes:g} lanes per thread (tile "
            f"{plan.tile_width} x {plan.rows_per_program} rows / (32 x {plan.num_warps} warps)) is over the "
            f"limit {max_lanes:g} (the teaching kernel at BLOCK 65536 with 1 warp took 71 s to compile on "
            "the H200)"
        )
    return None


def _na_compile() -> dict[str, Any]:
    return dict.fromkeys(COMPILE_COLUMNS, None)


_COMPILE_CACHE: dict[tuple, dict[str, Any]] = {}  # kernel key -> compile + occupancy facts (successes only)


def _live_arch() -> str | None:
    if not torch.cuda.is_available():
        return None
    major, minor = torch.cuda.get_device_capability()
    return f"sm_{major}{minor}"


def compile_facts_key(config: Config, plan: kernels.LaunchPlan, arch: str | None) -> tuple:
    """The in-process compile-facts cache key of a config's kernel (profiling.measure.precompile seeds it)."""
    return (
        plan.variant,
        config.dtype,
        plan.num_warps,
        plan.num_stages,
        tuple(sorted(plan.constexprs.items())),
        tuple(sorted(plan.tunables.items())),
        arch,
    )


def default_compile_facts(config: Config, plan: kernels.LaunchPlan | None, arch: str | None) -> dict[str, Any]:
    """Compile columns from profiling.inspect.compiled / occupancy / lanes; a missing or failing module leaves NA.

    `arch` None means the live GPU (inspect compiles or reads the kernel for this device; occupancy gets its
    'sm_XY'). Compile facts are cached per kernel (variant, dtype, warps, stages, constexprs)."""
    facts = _na_compile()
    if plan is None:
        return facts
    dtype = dtype_from_name(config.dtype)
    key = compile_facts_key(config, plan, arch)
    if key in _COMPILE_CACHE:
        facts.update(_COMPILE_CACHE[key])
    else:
        try:
            from blockscope.profiling.inspect import compiled

            info = compiled.inspect(
                plan.variant, config.n_cols, dtype, arch=arch, n_rows=config.n_rows, **plan.tunables
            )
            facts.update(
                n_regs=info.n_regs,
                spill_store_bytes=info.spill_store_bytes,
                spill_load_bytes=info.spill_load_bytes,
                shared_bytes=info.shared_bytes,
                compile_source=getattr(info, "source", None),
            )
            facts.update(
                _occupancy_columns(
                    getattr(info, "arch", None) or arch or _live_arch(), info.n_regs, plan.num_warps, info.shared_bytes
                )
            )
        except Exception:  # compile analysis is evidence, not a requirement: NA columns
            pass
        if facts["n_regs"] is not None and facts["blocks_per_sm"] is not None:
            _COMPILE_CACHE[key] = {k: v for k, v in facts.items() if k != "masked_lane_fraction"}
    try:
        from blockscope.profiling.inspect import lanes

        model = lanes.lane_model(plan.variant, config.n_cols, n_rows=config.n_rows, dtype=dtype, **plan.tunables)
        facts["masked_lane_fraction"] = model.masked_lane_fraction
    except Exception:
        pass
    return facts


def check_result(y: torch.Tensor, reference: torch.Tensor, dtype: str) -> tuple[str, float]:
    """('' or why y is wrong, max abs error) against the float64 reference within the dtype's tolerance
    (NaN where the reference has NaN counts as right; a NaN elsewhere makes the error inf)."""
    if not isinstance(y, torch.Tensor) or y.shape != reference.shape:
        got = tuple(y.shape) if isinstance(y, torch.Tensor) else type(y).__name__
        return f"wrong result: shape {got}, expected {tuple(reference.shape)}", math.inf
    rtol, atol = TOLERANCES[dtype]
    bad = 0
    worst = 0.0
    step = max(1, (1 << 24) // max(1, y.shape[-1]))
    for start in range(0, y.shape[0], step):
        got = y[start : start + step].to(torch.float64)
        want = reference[start : start + step]
        diff = (got - want).abs()
        diff = torch.where(torch.isnan(got) & torch.isnan(want), torch.zeros_like(diff), diff)
        bad += int((~(diff <= atol + rtol * want.abs())).sum())
        worst = max(worst, float(torch.nan_to_num(diff, nan=math.inf).max()))
    if bad:
        return (
            f"wrong result: {bad} of {y.numel()} elements off the float64 reference (max abs error "
            f"{worst:.3g}; rtol {rtol:g}, atol {atol:g})"
        ), worst
    return "", worst


def capture_unsafe_for(variant: str, direction: str) -> str | None:
    """Why `variant`'s `direction` calls must not be captured in a CUDA graph (its backend marks the direction
    capture-unsafe: a failed capture poisons the process), or None when they may be."""
    if not is_peer(variant):
        return None
    backend = get_backend(variant)
    if direction in backend.capture_unsafe_directions:
        return f"{variant} {direction}: {backend.capture_unsafe_reason or 'capture-unsafe'}"
    return None


def capture_unsafe_reason(config: Config) -> str | None:
    """capture_unsafe_for(config.variant, config.direction)."""
    return capture_unsafe_for(config.variant, config.direction)


def backend_callable(config: Config, x: torch.Tensor) -> Callable[[], torch.Tensor]:
    """The zero-argument closure a config times: a peer backend's, or the Triton variant's launcher."""
    if is_peer(config.variant):
        return get_backend(config.variant).prepare(x)
    launcher, kw = get_variant(config.variant).launcher, config.tunables_dict
    return lambda: launcher(x, **kw)


def peer_compile_facts(config: Config, x: torch.Tensor, arch: str | None) -> dict[str, Any]:
    """Compile columns of a peer backend's first Triton kernel (Inductor, Liger) plus its generated source;
    occupancy from the calculator for the live arch. Facts are evidence: failures leave NA."""
    facts: dict[str, Any] = {}
    try:
        evidence = get_backend(config.variant).evidence(x)
    except Exception:
        return facts
    facts["kernel_source"] = evidence.source
    kernel = next((k for k in evidence.kernels if k.n_regs is not None), None)
    if kernel is None:
        return facts
    facts.update(
        n_regs=kernel.n_regs,
        spill_store_bytes=kernel.n_spills,
        shared_bytes=kernel.shared_bytes,
        num_warps=kernel.num_warps,
        compile_source="live",
    )
    try:
        if kernel.num_warps:
            facts.update(
                _occupancy_columns(arch or _live_arch(), kernel.n_regs, kernel.num_warps, kernel.shared_bytes or 0)
            )
    except Exception:
        pass
    return facts


def _occupancy_columns(arch: str | None, n_regs: int, num_warps: int, shared_bytes: int) -> dict[str, Any]:
    """blocks_per_sm, occupancy and limiter from the occupancy calculator for `arch` ('sm_90')."""
    from blockscope.profiling.inspect import occupancy

    result = occupancy.occupancy(arch, n_regs, num_warps, shared_bytes)
    return {"blocks_per_sm": result.blocks_per_sm, "occupancy": result.occupancy, "limiter": result.limiter}


def _error_text(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0][:300] if lines else ''}".rstrip(": ")


def row_key(
    variant: str, dtype: str, n_rows: int, n_cols: int, tunables: str, method: str, direction: str = FORWARD
) -> tuple:
    return (str(variant), str(dtype), int(n_rows), int(n_cols), str(tunables), str(method), str(direction))


KEY_COLUMNS: tuple[str, ...] = ("variant", "dtype", "n_rows", "n_cols", "tunables", "method", "direction")
RESUME_ENV_COLUMNS: tuple[str, ...] = ("gpu_name", "torch_version", "triton_version")
# error rows that say nothing about the config: retried on resume (first line of the error, lower case)
TRANSIENT_ERROR_MARKERS: tuple[str, ...] = (
    "out of memory",
    "cuda error",
    "cuda driver",
    "driver error",
    "triton error [cuda]",
    "cuda_error_",
    "cudaerror",
    "device-side assert",
    "launch failed",
    "unspecified launch failure",
)
TRANSIENT_ERROR_TYPES: tuple[str, ...] = (
    "unavailable:",
    "RuntimeError:",
    "OutOfMemoryError:",
    "AcceleratorError:",
    "CudaError:",
)  # unavailable: a peer package missing where the row ran
DETERMINISTIC_ERROR_PREFIXES: tuple[str, ...] = (
    "skipped:",
    "wrong result:",
    "unsupported:",
    "ValueError:",
    "TypeError:",
    "CompilationError:",
    "OutOfResources:",
    "NotImplementedError:",
)


def error_kind(error: str | None) -> str:
    """'' for a row that ran; 'deterministic' for errors the config will give again (over a variant's limit, bad
    tunables, a predicted pathological compile, a wrong result, compile errors, Triton's out of resource), kept on
    resume; 'transient' for CUDA out of memory, CUDA/driver errors and other RuntimeErrors from a launch, retried."""
    text = "" if error is None or error is pd.NA else str(error).strip()
    if not text:
        return ""
    lower = text.lower()
    if text.startswith(DETERMINISTIC_ERROR_PREFIXES) or "out of resource" in lower:
        return "deterministic"
    if text.startswith(TRANSIENT_ERROR_TYPES) or any(marker in lower for marker in TRANSIENT_ERROR_MARKERS):
        return "transient"
    return "deterministic"


def resume_env(env: Mapping[str, Any]) -> tuple[str, ...]:
    """(gpu_name, torch_version, triton_version) of a run: rows count as done only for the same three."""
    return tuple(
        "" if env.get(name) is None or env.get(name) is pd.NA else str(env.get(name)) for name in RESUME_ENV_COLUMNS
    )


def _key_frame(table: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    sub = table[list(columns)].astype(object)
    return sub.where(table[list(columns)].notna(), None)


def _resume_masks(
    table: pd.DataFrame, env: Mapping[str, Any] | None, retry_errors: bool
) -> tuple[pd.Series, pd.Series]:
    """(rows that count as done, error rows this run re-measures and replaces) of `table` for a run in `env`."""
    same_env = pd.Series(True, index=table.index)
    if env is not None:
        wanted = resume_env(env)
        for name, value in zip(RESUME_ENV_COLUMNS, wanted, strict=True):
            same_env &= table[name].astype("string").fillna("") == value
        same_env &= _same_kernel_source(table)
    kinds = table["error"].map(error_kind) if len(table) else pd.Series([], dtype=object)
    retried = (kinds != "") if retry_errors else (kinds == "transient")
    same_env &= _softmax_mask(table)  # the fused ops' rows (sweep --op) are op_sweep's to resume, never keys here
    return same_env & ~retried, same_env & retried


def _softmax_mask(table: pd.DataFrame) -> pd.Series:
    """True for plain row-softmax rows (op 'softmax', or no op column)."""
    if "op" not in table.columns:
        return pd.Series(True, index=table.index)
    return (table["op"].astype("string").fillna(SOFTMAX) == SOFTMAX).astype(bool)


def _same_kernel_source(table: pd.DataFrame) -> pd.Series:
    """True for rows measured with this tree's kernel source (kernel_source_hash) or recording none (older files):
    a row of a changed kernel does not count as done, it is measured again (and kept, as rows of other runs)."""
    if not len(table) or "kernel_source_hash" not in table.columns:
        return pd.Series(True, index=table.index)
    recorded = table["kernel_source_hash"].astype("string")
    variants = table["variant"].astype("string")
    current = variants.map({v: _source_hash_or_none(str(v)) for v in variants.dropna().unique()}).astype("string")
    return (recorded.isna() | current.isna() | (recorded == current)).fillna(True).astype(bool)


def existing_keys(
    table: pd.DataFrame, env: Mapping[str, Any] | None = None, *, retry_errors: bool = False
) -> set[tuple]:
    """row_key of the rows that count as done when resuming: with `env`, only rows measured with its gpu_name,
    torch_version and triton_version; never error rows of a transient failure (nor any error row with
    `retry_errors`)."""
    done, _ = _resume_masks(table, env, retry_errors)
    sub = _key_frame(table[done], KEY_COLUMNS)
    sub["tunables"] = sub["tunables"].fillna("{}")
    return {row_key(*values) for values in sub.itertuples(index=False, name=None)}


def _replaceable_rows(table: pd.DataFrame, env: Mapping[str, Any] | None, retry_errors: bool) -> dict[tuple, list]:
    """row_key -> index of this run's environment's error rows that a new result for that key replaces."""
    _, retried = _resume_masks(table, env, retry_errors)
    sub = _key_frame(table[retried], KEY_COLUMNS)
    sub["tunables"] = sub["tunables"].fillna("{}")
    out: dict[tuple, list] = {}
    for index, values in zip(sub.index, sub.itertuples(index=False, name=None), strict=True):
        out.setdefault(row_key(*values), []).append(index)
    return out


class ResultsLockError(RuntimeError):
    """Another sweep holds the output file's lock; the message names its pid, host and start time."""


class SweepSaveError(OSError):
    """Neither the output file nor any rescue folder had room for the sweep's rows; names every place tried."""


def RESCUE_DIRS() -> list[Path]:  # noqa: N802 - a constant's role, computed late (tests point it elsewhere)
    """Folders tried, in order, when the output's disk is full: the system temp folder, then the home folder."""
    return [Path(tempfile.gettempdir()), Path.home()]


def save_or_rescue(table: pd.DataFrame, out: Path) -> Path:
    """save_results(table, out); when that disk is full (ENOSPC, EDQUOT) the same table goes to
    `<stem>.rescued-<pid><suffix>` in the first RESCUE_DIRS folder with room. The path written; SweepSaveError
    when none had room. Other errors propagate."""
    try:
        return save_results(table, out)
    except OSError as error:
        if error.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        first = error
    tried = [f"{out} ({first.strerror or first})"]
    for folder in RESCUE_DIRS():
        rescue = Path(folder) / f"{out.stem}.rescued-{os.getpid()}{out.suffix}"
        try:
            return save_results(table, rescue)
        except OSError as error:
            tried.append(f"{rescue} ({error.strerror or error})")
    raise SweepSaveError(first.errno, f"no room to save the sweep's {len(table)} rows: tried {'; '.join(tried)}")


def lock_path(out: str | Path) -> Path:
    """The sidecar lock file of a results file: 'run.parquet' -> 'run.parquet.lock'."""
    out = Path(out)
    return out.with_name(out.name + ".lock")


def _holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f"pid {info['pid']} on {info['host']}, started {info['started']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "holder not recorded yet"


@contextlib.contextmanager
def results_lock(out: str | Path) -> Iterator[Path]:
    """Hold an exclusive fcntl.flock on `out`'s sidecar lock file for the block (it records pid, host and start
    time, and is removed on release). ResultsLockError at once when another writer holds it."""
    out = Path(out)
    path = lock_path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise ResultsLockError(
                f"{out} is being written by another sweep ({holder}; lock {path.name}); "
                "allowed: one sweep per output file at a time (wait for it, or use another "
                "output file)"
            ) from None
        try:  # a holder that just finished removed the file we opened: lock the current one instead
            current = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            current = False
        if current:
            break
        os.close(fd)
    try:
        record = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": utc_now_iso()})
        os.ftruncate(fd, 0)
        os.pwrite(fd, record.encode(), 0)
        yield path
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # still holding the lock: no one else can be between open and flock on this inode
        os.close(fd)


@dataclass
class _Shape:
    key: tuple = ()
    x: torch.Tensor | None = None
    reference: torch.Tensor | None = None
    gradients: GradientInputs | None = None  # y, dy and reference dx of the backward directions (made when needed)


@dataclass
class SweepState:
    """Bookkeeping returned in df.attrs['sweep']."""

    total: int = 0
    done: int = 0
    skipped_existing: int = 0
    errors: int = 0
    cancelled: bool = False
    seconds: float = 0.0
    slow_compiles: list[tuple[str, float]] = field(default_factory=list)
    phase_s: dict[str, float] = field(default_factory=dict)  # wall seconds per phase (precompile, first_call, ...)
    precompile: dict[str, Any] = field(default_factory=dict)  # compiled / failed counts, workers, why it broke
    traces: list[str] = field(default_factory=list)  # Chrome trace files kept
    saved_to: str | None = None  # where the rows went when the output's disk was full
    proton: str = ""  # the Proton .hatchet file written, or why none
    warmed_keys: set[tuple] | None = None  # compile keys the compile warm-up compiled (None: no warm-up ran)
    first_calls: dict[str, int] = field(default_factory=dict)  # first calls counted per first_call phase
    slowest_first_calls: list[tuple[float, str]] = field(default_factory=list)  # (seconds, 'label [phase]'), worst

    def add_phase(self, name: str, seconds: float) -> None:
        self.phase_s[name] = self.phase_s.get(name, 0.0) + seconds

    def note_first_call(self, seconds: float, label: str, keep: int = 8) -> None:
        """Keep the `keep` slowest first calls (seconds, label), slowest first."""
        self.slowest_first_calls = sorted([*self.slowest_first_calls, (seconds, label)], reverse=True)[:keep]


def prune_group(variant: str) -> str:
    """The backend group a config is pruned within: 'blockscope' for every Blockscope Triton variant (they compete
    with each other), the backend's own name for torch and each peer (the baselines are always sampled in full)."""
    return variant if is_peer(variant) else "blockscope"


class PruneBoard:
    """The best (median, 95 % CI) so far per pruning group - (dtype, R, N, direction, method, prune_group) - and
    the stop rule of the configs timed after it (timing.clearly_slower with `margin` and `min_samples`)."""

    def __init__(
        self, margin: float = timing.DEFAULT_PRUNE_MARGIN, min_samples: int = timing.DEFAULT_PRUNE_MIN_SAMPLES
    ) -> None:
        if margin < 0:
            raise ValueError(f"prune margin {margin!r}; allowed: a number >= 0 (0.10 = 10 %)")
        self.margin, self.min_samples = float(margin), int(min_samples)
        self._best: dict[tuple, tuple[float, float, float]] = {}  # group -> (median, ci lo, ci hi), us

    @staticmethod
    def group(config: Config, method: str) -> tuple:
        return (config.dtype, config.n_rows, config.n_cols, config.direction, method, prune_group(config.variant))

    def best(self, config: Config, method: str) -> tuple[float, float, float] | None:
        """(median, CI low, CI high) in us of the best config so far in this config's group, or None."""
        return self._best.get(self.group(config, method))

    def stop_for(self, config: Config, method: str) -> Callable[[list[float]], bool]:
        """The `stop` rule for timing.benchmark: True once the samples are clearly slower than the group's best."""
        key = self.group(config, method)

        def stop(samples: list[float]) -> bool:
            best = self._best.get(key)
            return timing.clearly_slower(
                samples, None if best is None else best[1:], min_samples=self.min_samples, margin=self.margin
            )

        return stop

    def record(self, config: Config, method: str, stats: timing.TimingStats) -> None:
        """A timed row: it becomes its group's best when its median is the lowest so far (pruned rows never are)."""
        if stats.pruned or stats.ci_lo_us is None or stats.ci_hi_us is None:
            return
        key = self.group(config, method)
        best = self._best.get(key)
        if best is None or stats.median_us < best[0]:
            self._best[key] = (stats.median_us, stats.ci_lo_us, stats.ci_hi_us)


def predicted_config_weight(config: Config, n_methods: int) -> float:
    """Relative wall cost of running and timing one config (the ETA's weights; seconds on an H200-class GPU, roughly):
    0.06 s of first call and check, plus per method 15 ms (host side, syncs, graph capture), the warmup (25 calls,
    at most 15 ms) and ~10 samples (kernel
    time from bytes at 3.5 TB/s, + 20 us of sync), capped by the per-method budgets (calibrated on the 2026-12-03
    H200 default sweep: 97 s of first calls and checks, 112 s of timing for 1602 configs)."""
    kernel_us = bytes_moved(config.n_rows, config.n_cols, config.dtype, config.direction) / 3.5e6 + 4.0  # 3.5 B/ps
    warm_us = min(timing.DEFAULT_WARMUP * kernel_us, timing.DEFAULT_WARMUP_MS * 1000.0)
    per_method = min(
        (timing.DEFAULT_BUDGET_MS + timing.DEFAULT_WARMUP_MS) / 1000.0,
        0.015 + (warm_us + 10 * (kernel_us + 20.0)) * 1e-6,
    )
    return 0.06 + max(1, n_methods) * per_method


def predicted_seconds(
    configs: Sequence[Config],
    methods: Sequence[str] = timing.TIMING_METHODS,
    *,
    compile_workers: bool = True,
    trace: bool = True,
) -> float:
    """A first estimate of a sweep's wall seconds before it runs, from the same priors its running time left starts
    from (profiling.measure.progress.PRIOR_S and predicted_config_weight); the running estimate replaces each
    phase's prior with its measured rate."""
    from blockscope.profiling.measure.progress import PRIOR_S

    total = sum(predicted_config_weight(config, len(methods)) for config in configs) * PRIOR_S["timing"]
    if compile_workers:
        total += len(configs) * PRIOR_S["precompile"]
    if trace:
        total += len(configs) * PRIOR_S["trace"]
    return total


def _run_order(configs: Sequence[Config]) -> list[int]:
    """Indices of `configs` in run order: by dtype, R and N (inputs shared by a shape), 'auto' first within a shape
    (the tuning table's pick: most often the best, so the configs after it are pruned soonest), then as given."""
    return sorted(
        range(len(configs)),
        key=lambda i: (configs[i].dtype, configs[i].n_rows, configs[i].n_cols, configs[i].variant != "auto"),
    )


def run_sweep(
    configs: Sequence[Config],
    *,
    methods: Sequence[str] = timing.TIMING_METHODS,
    out: str | Path | None = None,
    device: str | torch.device | None = None,
    clock: timing.Clock | None = None,
    tracer: Tracer | None = None,
    trace: bool = True,
    compile_facts: CompileFacts | None = None,
    env: Mapping[str, Any] | None = None,
    reps: int | None = None,
    warmup: int = timing.DEFAULT_WARMUP,
    target_ms: float = timing.DEFAULT_TARGET_MS,
    min_reps: int = timing.DEFAULT_MIN_REPS,
    max_reps: int = timing.DEFAULT_MAX_REPS,
    max_lanes_per_thread: float | None = DEFAULT_MAX_LANES_PER_THREAD,
    compile_cap_s: float | None = DEFAULT_COMPILE_CAP_S,
    progress: Progress | None = None,
    cancel: Cancel | None = None,
    save_every_s: float = 20.0,
    seed: int = 0,
    graph_calls: int = timing.DEFAULT_GRAPH_CALLS,
    retry_errors: bool = False,
    rel_ci: float | None = timing.DEFAULT_REL_CI,
    budget_ms: float = timing.DEFAULT_BUDGET_MS,
    compile_workers: int = 0,
    precompile_timeout_s: float = 300.0,
    timing_started: Callable[[], None] | None = None,
    trace_configs: Sequence[Config] = (),
    trace_dir: str | Path | None = None,
    chrome_tracer: ChromeTracer | None = None,
    on_warning: Callable[[str], None] | None = None,
    proton: bool = False,
    proton_profiler: Callable[..., Path] | None = None,
    prune: bool = True,
    prune_margin: float = timing.DEFAULT_PRUNE_MARGIN,
    prune_min_samples: int = timing.DEFAULT_PRUNE_MIN_SAMPLES,
    status: Status | None = None,
    batch_tracer: BatchTracer | None = None,
) -> pd.DataFrame:
    """Run `configs` x `methods`; return the whole table (rows already in `out` first, then the new ones).

    `out` (.parquet/.csv) is locked for the whole sweep (ResultsLockError if another sweep holds it), read first
    (pairs already measured in this environment are skipped; transient error rows, or all error rows with
    `retry_errors`, are measured again and replaced) and rewritten every `save_every_s` seconds and at the end,
    also when interrupted (any exception, KeyboardInterrupt included). `progress(done, total, config)` is called
    after each config (total counts configs still to run); `cancel()` returning True stops before the next
    config. `compile_cap_s`: after a first call slower than this, later configs of the same variant with at
    least as many lanes per thread are skipped (a running compile cannot be interrupted). Defaults: CUDA
    clock, torch.profiler tracer, live environment fingerprint with copy bandwidth. `rel_ci` / `budget_ms`: the
    adaptive reps' stopping rule (profiling.measure.timing.benchmark). `compile_workers` > 0 compiles the configs still
    to run ahead of timing in that many worker processes (profiling.measure.precompile; on a CPU device: offline for the
    env's arch); a worker failure only means those kernels JIT in-process. `timing_started()` is called once the
    warm-up is over and the first config starts (ProgressClock.start). `df.attrs['sweep']` holds the counts,
    `phase_s` (wall seconds per phase) and the precompile report. `trace_configs`: configs whose Chrome trace
    (torch.profiler, one call) is kept in `trace_dir` (default: '<out stem>_traces' beside `out`) with an
    index.json naming each file's config (profiling.measure.trace.read_trace_index); after all timing, on CUDA.
    `on_warning(line)` gets each machine warning before timing starts (clocks not locked, other processes on the
    GPU: profiling.measure.machine.warnings); `df.attrs['sweep']['machine_warnings']` keeps them.
    `proton`: after all timing, profile every config that ran in this run with Proton (profiling.measure.proton,
    `proton_profiler` replaces profile_configs in tests) into '<out stem>_proton/<run_id>.hatchet';
    `df.attrs['sweep']['proton']` names the file, or why there is none.
    `prune` (default on; adaptive reps only): stop sampling a config once its median's 95 % CI lies clearly above
    the best config's of its group (PruneBoard, timing.clearly_slower: CI low > best's CI high x (1 + prune_margin)
    after >= prune_min_samples); its rows keep the samples they have and say `pruned=True`.
    `status(SweepStatus)` is called as each phase starts ('precompile', 'timing', 'trace'), as compile tasks
    finish (and every few seconds while they run), before each config (label 'running <config>') and after it,
    with seconds left from the measured per-config cost of each phase (profiling.measure.progress.EtaEstimator).
    `batch_tracer` names the kernels of a shape's configs in one profiler session (default on CUDA with the default
    tracer: trace.kernel_names_batch; where it cannot, `tracer` traces them one by one).
    """
    started = time.perf_counter()
    methods = list(dict.fromkeys(methods))
    for method in methods:
        if method not in timing.TIMING_METHODS:
            raise ValueError(f"unknown timing method {method!r}; allowed: {', '.join(timing.TIMING_METHODS)}")
    cuda = torch.cuda.is_available()
    device = torch.device(device) if device is not None else torch.device("cuda" if cuda else "cpu")
    if clock is None:
        if device.type != "cuda":
            raise ValueError(f"timing on {device} needs an injected clock; allowed: a cuda device")
        clock = timing.CudaClock(device)
    if tracer is None and trace and device.type == "cuda":
        from blockscope.profiling.measure.trace import kernel_names, kernel_names_batch

        tracer = kernel_names
        batch_tracer = batch_tracer or kernel_names_batch
    env = dict(env) if env is not None else fingerprint(device)
    env_row = {name: env.get(name) for name in ENV_COLUMNS}
    machine_warnings = machine.warnings(env_row)
    for line in machine_warnings:
        if on_warning is not None:
            on_warning(line)
    gpu_name = env_row["gpu_name"] if env_row.get("gpu_name") not in (None, "none") else None
    arch = None if device.type == "cuda" else arch_of(env_row)
    compile_facts = compile_facts or default_compile_facts

    with contextlib.ExitStack() as stack:
        if out is not None:
            stack.enter_context(results_lock(out))
        out_path = Path(out) if out is not None else None
        existing = load_results(out_path) if out_path is not None and out_path.exists() else empty_results()
        done_keys = existing_keys(existing, env_row, retry_errors=retry_errors)
        replaceable = _replaceable_rows(existing, env_row, retry_errors)  # row_key -> error rows a new result replaces
        replaced: list = []  # index of `existing` rows replaced by this run's rows
        new_rows: list[dict[str, Any]] = []
        state = SweepState()
        last_save = time.perf_counter()

        filled = False  # the trace pass named rows already in the file

        def save() -> None:
            nonlocal last_save
            if out_path is not None and (new_rows or filled):
                table = _table(existing.drop(index=replaced), new_rows)
                written = save_or_rescue(table, out_path)
                if written != out_path and str(written) != state.saved_to:
                    state.saved_to = str(written)
                    sys.stderr.write(
                        f"sweep: {out_path}: No space left on device; its {len(table)} rows are saved in {written} "
                        f"instead (move it to {out_path} and rerun to resume)\n"
                    )
                elif written == out_path:
                    state.saved_to = None
            last_save = time.perf_counter()

        pending: list[tuple[Config, kernels.LaunchPlan | None, str, str, list[str]]] = []
        for i in _run_order(configs):
            config = configs[i]
            plan, plan_error = None, ""
            rule = (
                None
                if is_peer(config.variant) or config.direction != FORWARD
                else unsupported_reason(config.variant, config.n_rows, config.n_cols, dtype_from_name(config.dtype))
            )
            try:
                if rule:  # the variant's own rules leave this shape out (staged: odd N in 16 bits), as a peer's do
                    plan_error = rule
                else:
                    plan = resolve_plan(config, gpu_name)
            except Exception as error:  # bad tunables for this N: an error row
                plan_error = _error_text(error)
            tunables = resolved_tunables_json(config, plan)
            todo = [
                m
                for m in methods
                if row_key(config.variant, config.dtype, config.n_rows, config.n_cols, tunables, m, config.direction)
                not in done_keys
            ]
            if todo:
                pending.append((config, plan, plan_error, tunables, todo))
            else:
                state.skipped_existing += 1
        state.total = len(pending)
        weights = [predicted_config_weight(config, len(todo)) for config, _p, _e, _t, todo in pending]
        eta = EtaEstimator(
            {
                "precompile": len(pending) if compile_workers else 0,
                "timing": sum(weights),
                "trace": len(pending) if tracer is not None else 0,
            },
            {"precompile": None, "timing": None, "trace": None} if not pending else None,
        )

        def report(phase: str, done: int, total: int, label: str = "", workers: int = 0) -> None:
            if status is not None:
                status(eta.status(phase, done, total, label, workers))

        if compile_workers and pending:
            _precompile(
                pending,
                state,
                compile_workers,
                device=device,
                arch=arch,
                gpu_name=gpu_name,
                max_lanes=max_lanes_per_thread,
                timeout_s=precompile_timeout_s,
                eta=eta,
                report=report,
            )
        if timing_started is not None:
            timing_started()
        board = PruneBoard(prune_margin, prune_min_samples) if prune else None
        eta.begin("timing")
        report("timing", 0, state.total)
        weight_done = 0.0
        shape = _Shape()
        backends_seen: set[str] = set()  # a backend's first config carries its one-off start-up (ETA leaves it out)
        try:
            for (config, plan, plan_error, tunables, todo), weight in zip(pending, weights, strict=True):
                if cancel is not None and cancel():
                    state.cancelled = True
                    break
                report("timing", state.done, state.total, f"running {config.label()}")
                rows = _run_config(
                    config,
                    plan,
                    plan_error,
                    tunables,
                    todo,
                    device=device,
                    clock=clock,
                    compile_facts=compile_facts,
                    arch=arch,
                    shape=shape,
                    reps=reps,
                    warmup=warmup,
                    target_ms=target_ms,
                    min_reps=min_reps,
                    max_reps=max_reps,
                    max_lanes=max_lanes_per_thread,
                    compile_cap_s=compile_cap_s,
                    state=state,
                    seed=seed,
                    graph_calls=graph_calls,
                    rel_ci=rel_ci,
                    budget_ms=budget_ms,
                    board=board,
                )
                for row in rows:
                    row.update(env_row)
                    row["kernel_revision"] = kernel_revision(row["kernel_source_hash"], env_row.get("triton_version"))
                    if row.get("gbps") is not None and env_row.get("copy_gbps"):
                        row["copy_fraction"] = row["gbps"] / env_row["copy_gbps"]
                state.errors += sum(1 for row in rows if row["error"])
                for row in rows:
                    replaced.extend(replaceable.pop(row_key(*(row[c] for c in KEY_COLUMNS)), ()))
                new_rows.extend(rows)
                state.done += 1
                weight_done += weight
                first_call = max((row.get("first_call_s") or 0.0 for row in rows), default=0.0)
                if first_call and config.variant not in backends_seen:
                    backends_seen.add(config.variant)
                    eta.add_one_off("timing", first_call)
                eta.advance("timing", weight_done)
                report("timing", state.done, state.total, config.label())
                if progress is not None:
                    progress(state.done, state.total, config)
                if time.perf_counter() - last_save >= save_every_s:
                    save()
            eta.finish("timing")
            if tracer is not None and not state.cancelled:
                tic = time.perf_counter()

                def traced(done: int, total: int) -> None:
                    eta.set_weight("trace", total)
                    eta.advance("trace", done)
                    report("trace", done, total)

                def named() -> None:  # names land in `existing` as they come: a signal or a save keeps them
                    nonlocal filled
                    filled = True
                    if time.perf_counter() - last_save >= save_every_s:
                        save()

                complete = _trace_pass(
                    existing,
                    new_rows,
                    tracer,
                    device,
                    gpu_name,
                    cancel,
                    seed,
                    on_progress=traced,
                    batch_tracer=batch_tracer,
                    on_named=named,
                )
                if not complete:  # stopped by `cancel` (--max-minutes): some rows still lack names; rerun to resume
                    state.cancelled = True
                state.add_phase("trace", time.perf_counter() - tic)
            eta.finish("trace")
            if trace_configs and not state.cancelled and (chrome_tracer is not None or device.type == "cuda"):
                tic = time.perf_counter()
                folder = (
                    Path(trace_dir)
                    if trace_dir is not None
                    else (_traces_dir(out_path) if out_path is not None else None)
                )
                if folder is not None:
                    earlier = _earlier_rows(existing, env_row)
                    state.traces = _keep_traces(
                        trace_configs, new_rows + earlier, folder, chrome_tracer, device, env_row, seed
                    )
                state.add_phase("chrome_traces", time.perf_counter() - tic)
            if proton and not state.cancelled and out_path is not None:
                tic = time.perf_counter()
                state.proton = _keep_proton(configs, new_rows, out_path, device, env_row, seed, proton_profiler)
                state.add_phase("proton", time.perf_counter() - tic)
        finally:
            shape.x = shape.reference = shape.gradients = None
            save()
        table = _table(existing.drop(index=replaced), new_rows)
        state.seconds = time.perf_counter() - started
        table.attrs["sweep"] = {k: v for k, v in state.__dict__.items() if k not in ("slow_compiles", "warmed_keys")}
        table.attrs["sweep"]["machine_warnings"] = machine_warnings
        table.attrs["sweep"]["pruned_rows"] = sum(1 for row in new_rows if row.get("pruned"))
        return table


def _traces_dir(out: Path) -> Path:
    from blockscope.profiling.measure.trace import traces_dir_for

    return traces_dir_for(out)


def _default_chrome_tracer(fn: Callable[[], Any], path: Path) -> list[str]:
    from blockscope.profiling.measure.trace import trace_kernels

    return [record.name for record in trace_kernels(fn, export_path=path)]


def _keep_proton(
    configs: Sequence[Config],
    new_rows: list[dict[str, Any]],
    out_path: Path,
    device: torch.device,
    env_row: Mapping[str, Any],
    seed: int,
    profiler: Callable[..., Path] | None,
) -> str:
    """One Proton session over the configs that ran without error in this run (a scope per config label);
    the .hatchet path written, or 'not written: why' (evidence, not results: a failure does not stop the sweep)."""
    from blockscope.profiling.measure.proton import ProtonError, profile_configs, proton_dir_for

    ran = {(r["variant"], r["dtype"], r["n_rows"], r["n_cols"], r["tunables"], r.get("direction", FORWARD))
           for r in new_rows if not r["error"]}  # fmt: skip
    calls = []
    for config in dict.fromkeys(configs):
        resolved = [k for k in ran if k[:4] == (config.variant, config.dtype, config.n_rows, config.n_cols)]
        if not resolved or config.direction != FORWARD:
            continue

        def make(config: Config = config) -> Callable[[], Any]:
            generator = torch.Generator(device=device).manual_seed(seed)
            dtype = dtype_from_name(config.dtype)
            x = torch.randn(config.n_rows, config.n_cols, device=device, dtype=dtype, generator=generator)
            return backend_callable(config, x)

        calls.append((config.label(), make))
    if not calls:
        return "not written: no forward config ran in this run"
    target = proton_dir_for(out_path) / str(env_row.get("run_id") or "run")
    try:
        return str((profiler or profile_configs)(calls, target))
    except (ProtonError, ValueError) as error:
        return f"not written: {error}"


def _earlier_rows(existing: pd.DataFrame, env_row: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The error-free rows of `existing` measured on this run's GPU, torch and Triton with this tree's kernel source,
    as dicts: a resumed sweep keeps Chrome traces of configs an earlier part of the run measured."""
    if not len(existing):
        return []
    done, _ = _resume_masks(existing, env_row, False)
    rows = existing[done & (existing["error"].astype("string").fillna("") == "")]
    return [
        {k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()} for r in rows.to_dict("records")
    ]


def _keep_traces(
    configs: Sequence[Config],
    new_rows: list[dict[str, Any]],
    folder: Path,
    chrome_tracer: ChromeTracer | None,
    device: torch.device,
    env_row: Mapping[str, Any],
    seed: int,
) -> list[str]:
    """One Chrome trace per config in `configs` that ran without error (in `new_rows`: this run's rows first, then
    an earlier part's of a resumed run), plus the folder's index.json; a failing trace is skipped (evidence, not
    results). Returns the files written."""
    from blockscope.profiling.measure.trace import trace_file_name, write_trace_index

    tracer = chrome_tracer or _default_chrome_tracer
    ran: dict[tuple, dict[str, Any]] = {}
    for r in new_rows:  # the first error-free row of each shape and direction: the first config, as picked
        if not r["error"]:
            ran.setdefault((r["variant"], r["dtype"], r["n_rows"], r["n_cols"], r.get("direction", FORWARD)), r)
    written, entries = [], []
    for config in dict.fromkeys(configs):
        row = ran.get((config.variant, config.dtype, config.n_rows, config.n_cols, config.direction))
        if row is None:
            continue
        name = trace_file_name(config.variant, config.dtype, config.n_rows, config.n_cols, row["tunables"])
        try:
            generator = torch.Generator(device=device).manual_seed(seed)
            x = torch.randn(
                config.n_rows, config.n_cols, device=device, dtype=dtype_from_name(config.dtype), generator=generator
            )
            folder.mkdir(parents=True, exist_ok=True)
            names = tracer(backend_callable(config, x), folder / name)
            del x
        except Exception:
            continue
        written.append(name)
        entries.append(
            {
                "file": name,
                "variant": config.variant,
                "dtype": config.dtype,
                "n_rows": config.n_rows,
                "n_cols": config.n_cols,
                "tunables": row["tunables"],
                "kernels": list(names),
                "run_id": env_row.get("run_id"),
                "gpu_name": env_row.get("gpu_name"),
                "kernel_revision": row.get("kernel_revision"),
                "measured_at": env_row.get("measured_at"),
            }
        )
    if entries:
        write_trace_index(folder, entries)
    return written


def pick_trace_configs(configs: Sequence[Config], specs: Sequence[str], *, strict: bool = True) -> list[Config]:
    """Configs named by 'variant:dtype:N' specs (the first forward config of that variant, dtype and N: its default
    tunables when swept). ValueError for a malformed spec, or (strict) one matching no config."""
    picked = []
    for spec in specs:
        parts = str(spec).split(":")
        if len(parts) != 3 or not parts[2].strip().isdigit():
            raise ValueError(f"trace config {spec!r} is malformed; allowed: VARIANT:DTYPE:N (e.g. teaching:fp16:1000)")
        variant, dtype, n = parts[0].strip(), parts[1].strip(), int(parts[2])
        wanted = (variant, dtype, n, FORWARD)
        match = next((c for c in configs if (c.variant, c.dtype, c.n_cols, c.direction) == wanted), None)
        if match is None:
            if strict:
                raise ValueError(
                    f"trace config {spec!r} names no config of this sweep; allowed: a variant, dtype and "
                    "N that the sweep runs"
                )
            continue
        picked.append(match)
    return list(dict.fromkeys(picked))


def eta_seconds(done: int, total: int, elapsed_s: float) -> float | None:
    """Seconds left at the mean rate so far (None before the first config is done)."""
    if done <= 0 or total <= 0 or elapsed_s < 0:
        return None
    return elapsed_s / done * max(0, total - done)


def format_progress(done: int, total: int, elapsed_s: float) -> str:
    """'12/100 configs, 8 s elapsed, about 1 min 13 s left' (the CLI's and the Run sweep page's progress text)."""
    eta = eta_seconds(done, total, elapsed_s)
    left = (
        "estimating time left" if eta is None else ("done" if done >= total else f"about {format_duration(eta)} left")
    )
    return f"{done}/{total} configs, {format_duration(elapsed_s)} elapsed, {left}"


class ProgressClock:
    """Progress text whose elapsed time counts from `start()` (pass it as run_sweep's `timing_started`, so the
    compile warm-up does not inflate the ETA), or from construction when never started."""

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self._now = now
        self._start = now()

    def start(self) -> None:
        self._start = self._now()

    def text(self, done: int, total: int) -> str:
        return format_progress(done, total, self._now() - self._start)


def _config_from_row(
    variant: str, dtype: str, n_rows: int, n_cols: int, tunables: str, direction: str = FORWARD
) -> Config:
    """The config a results row came from (its resolved tunables are valid requested ones; a 'backward' row's are
    the Triton backward's, which its config does not take)."""
    given = {} if variant == "auto" or is_peer(variant) or direction == BACKWARD else json.loads(tunables or "{}")
    return make_config(variant, dtype, int(n_rows), int(n_cols), direction=direction, **given)


def _trace_pass(
    existing: pd.DataFrame,
    new_rows: list[dict[str, Any]],
    tracer: Tracer,
    device: torch.device,
    gpu_name: str | None,
    cancel: Cancel | None,
    seed: int,
    on_progress: Callable[[int, int], None] | None = None,
    batch_tracer: BatchTracer | None = None,
    on_named: Callable[[], None] | None = None,
) -> bool:
    """Fill kernel_names of error-free rows lacking them (this run's and the file's), one traced call per config;
    `batch_tracer` (the default on CUDA: trace.kernel_names_batch) traces the configs of one shape in one profiler
    session, and where it returns None they are traced one by one with `tracer`; `on_progress(done, total)`
    (configs) before the first and as they are named.

    Fills `new_rows` and `existing` in place, calling `on_named()` after each batch that named a row of `existing`
    (the caller saves; a signal mid-pass keeps what was named); returns False when `cancel` stopped it early."""
    key_cols = ["variant", "dtype", "n_rows", "n_cols", "tunables", "direction"]
    wanted: dict[tuple, list] = {}
    for row in new_rows:
        if not row["error"] and row.get("kernel_names") is None:
            wanted.setdefault(tuple(row[c] for c in key_cols), []).append(row)
    changed = False
    if len(existing):
        missing = (existing["error"] == "") & existing["kernel_names"].isna() & _softmax_mask(existing)
        for index in existing.index[missing]:
            wanted.setdefault(tuple(existing.loc[index, c] for c in key_cols), []).append(index)
    shape = _Shape()
    keys = sorted(wanted, key=lambda k: (str(k[1]), int(k[2]), int(k[3]), str(k[0])))
    if on_progress is not None:
        on_progress(0, len(keys))

    def make(key: tuple) -> Callable[[], Any] | None:
        """The config's call on the shape's input (its setup, a compile, done outside any trace); None on failure."""
        try:
            config = _config_from_row(*key)
            dtype = dtype_from_name(config.dtype)
            if shape.key != (config.dtype, config.n_rows, config.n_cols):
                shape.x = shape.gradients = None
                generator = torch.Generator(device=device).manual_seed(seed)
                shape.x = torch.randn(config.n_rows, config.n_cols, device=device, dtype=dtype, generator=generator)
                shape.key = (config.dtype, config.n_rows, config.n_cols)
            if config.direction == FORWARD:
                return backend_callable(config, shape.x)
            shape.gradients = shape.gradients or gradient_inputs(shape.x, seed)
            fn = direction_callable(config.direction, config.variant, config.tunables_dict, shape.x, shape.gradients)
            fn()  # setup (a compile) outside the trace, as the timed rows had it
            return fn
        except Exception:  # names are evidence: a failing config leaves NA
            return None

    def fill(key: tuple, names: list[str]) -> None:
        nonlocal changed
        text = "; ".join(names) if names else None
        for target in wanted[key]:
            if isinstance(target, dict):
                target["kernel_names"] = text
            elif text is not None:
                existing.loc[target, "kernel_names"] = text
                changed = True

    done, index, stopped = 0, 0, False
    while index < len(keys) and not stopped and not (cancel is not None and cancel()):
        batch = [keys[index]]  # the configs of one shape (one input), at most TRACE_BATCH per profiler session
        index += 1
        while index < len(keys) and keys[index][1:4] == batch[0][1:4] and len(batch) < TRACE_BATCH:
            batch.append(keys[index])
            index += 1
        calls = [(key, fn) for key in batch if (fn := make(key)) is not None]
        names_of = batch_tracer([fn for _, fn in calls]) if batch_tracer is not None and calls else None
        for position, (key, fn) in enumerate(calls):
            if names_of is not None:
                fill(key, names_of[position])
                continue
            if cancel is not None and cancel():
                stopped = True
                break
            try:
                fill(key, tracer(fn))
            except Exception:  # names are evidence: a failing trace leaves NA
                pass
            if on_progress is not None:
                on_progress(done + position + 1, len(keys))
        done += len(batch)
        if on_progress is not None:
            on_progress(done, len(keys))
        if changed and on_named is not None:
            on_named()
            changed = False
    shape.x = shape.gradients = None
    return index >= len(keys) and not stopped


def _table(existing: pd.DataFrame, rows: list[dict[str, Any]]) -> pd.DataFrame:
    if not rows:
        return normalize(existing)
    new = normalize(pd.DataFrame(rows, columns=list(COLUMNS)))
    return normalize(pd.concat([normalize(existing), new], ignore_index=True)) if len(existing) else new


def _source_hash_or_none(variant: str) -> str | None:
    """This tree's kernel_source_hash of `variant` (profiling.results.revision); None when it cannot be read."""
    try:
        return kernel_source_hash(variant)
    except Exception:
        return None


def _base_row(config: Config, plan: kernels.LaunchPlan | None, tunables: str) -> dict[str, Any]:
    row = dict.fromkeys(COLUMNS)
    row.update(
        variant=config.variant,
        dtype=config.dtype,
        n_rows=config.n_rows,
        n_cols=config.n_cols,
        tunables=tunables,
        direction=config.direction,
        error="",
        bytes_moved=bytes_moved(config.n_rows, config.n_cols, config.dtype, config.direction),
        kernel_source_hash=_source_hash_or_none(config.variant),
    )
    if plan is not None:
        row.update(
            num_warps=plan.num_warps,
            num_stages=plan.num_stages,
            tile_width=plan.tile_width,
            rows_per_program=plan.rows_per_program,
            programs=plan.programs,
        )
    return row


def _launched_programs(plan: kernels.LaunchPlan, x: torch.Tensor) -> int | None:
    """Programs the GPU launch used when the grid is resolved at launch (persistent, splitrow)."""
    if not plan.grid_resolved_at_launch or x.device.type != "cuda" or kernels.interpreting():
        return plan.programs
    try:
        if plan.variant == "persistent":
            from blockscope.kernels import persistent

            return min(plan.n_rows, persistent.resident_programs(x, x, plan))  # cached by now: nothing launched
        if plan.variant == "splitrow":
            from blockscope.kernels import splitrow

            return splitrow.launched_programs(x.reshape(-1, x.shape[-1]), plan)  # cached by now: nothing launched
        if plan.variant == "staged_split":
            from blockscope.kernels import staged_split

            return staged_split.launched_programs(x.reshape(-1, x.shape[-1]), plan)  # cached by now
    except Exception:
        return None
    return plan.programs


def _run_config(
    config: Config,
    plan: kernels.LaunchPlan | None,
    plan_error: str,
    tunables: str,
    methods: list[str],
    *,
    device: torch.device,
    clock: timing.Clock,
    compile_facts: CompileFacts,
    arch: str | None,
    shape: _Shape,
    reps: int | None,
    warmup: int,
    target_ms: float,
    min_reps: int,
    max_reps: int,
    max_lanes: float | None,
    compile_cap_s: float | None,
    state: SweepState,
    seed: int,
    graph_calls: int,
    rel_ci: float | None = timing.DEFAULT_REL_CI,
    budget_ms: float = timing.DEFAULT_BUDGET_MS,
    board: PruneBoard | None = None,
) -> list[dict[str, Any]]:
    base = _base_row(config, plan, tunables)

    def error_rows(message: str, **extra: Any) -> list[dict[str, Any]]:
        return [{**base, **extra, "method": m, "error": message} for m in methods]

    if plan_error:
        return error_rows(plan_error)
    problem = predicted_compile_problem(plan, max_lanes)
    if problem is None and plan is not None:
        lanes = lanes_per_thread(plan)
        for variant, slow_lanes in state.slow_compiles:
            if variant == plan.variant and lanes >= slow_lanes:
                problem = (
                    f"skipped: a config of {variant} with {slow_lanes:g} lanes per thread took over "
                    f"{compile_cap_s:g} s to compile; this one has {lanes:g}"
                )
                break
    if problem:
        return error_rows(problem)
    dtype = dtype_from_name(config.dtype)
    backward = config.direction != FORWARD
    if is_peer(config.variant) or backward:
        reason = unsupported_reason(config.variant, config.n_rows, config.n_cols, dtype, config.direction)
        if reason:
            return error_rows(reason)
    tic = time.perf_counter()
    phase = "inputs"
    try:
        key = (config.dtype, config.n_rows, config.n_cols)
        if shape.key != key:
            shape.x = shape.reference = shape.gradients = None
            if device.type == "cuda":
                torch.cuda.empty_cache()
            generator = torch.Generator(device=device).manual_seed(seed)
            shape.x = torch.randn(config.n_rows, config.n_cols, device=device, dtype=dtype, generator=generator)
            shape.reference = kernels.reference_softmax(shape.x)
            shape.key = key
        x = shape.x
        if backward and shape.gradients is None:
            shape.gradients = gradient_inputs(x, seed, shape.reference)
        fn = (
            direction_callable(config.direction, config.variant, config.tunables_dict, x, shape.gradients)
            if backward
            else backend_callable(config, x)
        )
        result: list[torch.Tensor] = []
        state.add_phase(phase, time.perf_counter() - tic)
        tic, phase = time.perf_counter(), _first_call_phase(config, plan, state)
        state.first_calls[phase] = state.first_calls.get(phase, 0) + 1
        first_call_s = timing.first_call_seconds(lambda: result.append(fn()), clock)
        state.add_phase(phase, time.perf_counter() - tic)
        state.note_first_call(first_call_s, f"{config.label()} [{phase}]")
        tic, phase = time.perf_counter(), "check"
        base["first_call_s"] = first_call_s
        if compile_cap_s is not None and plan is not None and first_call_s > compile_cap_s:
            state.slow_compiles.append((plan.variant, lanes_per_thread(plan)))
        if backward:  # dx against the float64 gradient
            wrong, base["max_abs_error"] = check_direction(
                config.direction, result[0], shape.gradients, shape.reference, config.dtype
            )
        else:
            wrong, base["max_abs_error"] = check_result(result[0], shape.reference, config.dtype)
        if not wrong and not backward:  # ULP columns vs the same float64 reference; {} when they cannot be computed
            from blockscope.profiling.inspect.numerics import sweep_columns

            base.update(sweep_columns(result[0], shape.reference))
        result.clear()
        if wrong:
            return error_rows(wrong)
    except Exception as error:  # OutOfResources, CUDA OOM, compile errors: an error row, the sweep goes on
        if device.type == "cuda":
            torch.cuda.empty_cache()
        return error_rows(_error_text(error))
    finally:
        state.add_phase(phase, time.perf_counter() - tic)
    tic = time.perf_counter()
    if is_peer(config.variant) and not backward:
        base.update(peer_compile_facts(config, x, arch))
    if plan is not None and config.direction != BACKWARD:  # forward_backward: the forward kernel's facts
        base["programs"] = _launched_programs(plan, x)
        try:
            facts = compile_facts(config, plan, arch)
            base.update({k: v for k, v in facts.items() if k in COMPILE_COLUMNS})
        except Exception:
            pass
    state.add_phase("compile_facts", time.perf_counter() - tic)
    rows = []
    unsafe = capture_unsafe_reason(config) if "cuda_graph" in methods else None
    for position, method in enumerate(methods):
        capture = not (method == "cuda_graph" and unsafe)
        tic = time.perf_counter()
        try:
            stats = timing.benchmark(
                fn,
                method,
                reps=reps,
                # the first method warms the kernel up; the later ones follow it at once on the same input
                warmup=warmup if position == 0 else min(warmup, timing.WARMUP_CHUNK),
                clock=clock,
                first_call_s=first_call_s,
                target_ms=target_ms,
                min_reps=min_reps,
                max_reps=max_reps,
                graph_calls=graph_calls,
                rel_ci=rel_ci,
                budget_ms=budget_ms,
                capture=capture,
                stop=board.stop_for(config, method) if board is not None else None,
            )
        except Exception as error:
            if device.type == "cuda":
                torch.cuda.empty_cache()
            rows.append({**base, "method": method, "error": _error_text(error)})
            continue
        finally:
            state.add_phase(f"timing {method}", time.perf_counter() - tic)
        if board is not None:
            board.record(config, method, stats)
        row = {**base, **stats.as_dict()}
        if not capture:
            row["timing_note"] = (
                f"not captured ({unsafe}): each cuda_graph sample is {graph_calls} eager calls between two "
                "events, no graph"
            )
        row["gbps"] = gbps(base["bytes_moved"], stats.median_us)
        rows.append(row)
    return rows


def _free_gpu_bytes(device: torch.device) -> int | None:
    """The GPU's free memory in bytes (cudaMemGetInfo), None where it cannot be read."""
    try:
        return int(torch.cuda.mem_get_info(device)[0])
    except (RuntimeError, AssertionError, ValueError):
        return None


def _first_call_phase(config: Config, plan: kernels.LaunchPlan | None, state: SweepState) -> str:
    """The phase a config's first call counts in: 'first_call', or 'first_call (not warmed)' when a compile
    warm-up ran but did not compile this config's kernel (its first call compiles in-process)."""
    if state.warmed_keys is None:
        return "first_call"
    from blockscope.profiling.measure.precompile import compile_key

    key = compile_key(config, plan)
    return "first_call" if key is None or key in state.warmed_keys else "first_call (not warmed)"


def _precompile(
    pending: list,
    state: SweepState,
    workers: int,
    *,
    device: torch.device,
    arch: str | None,
    gpu_name: str | None,
    max_lanes: float | None,
    timeout_s: float,
    eta: EtaEstimator | None = None,
    report: Callable[..., None] | None = None,
) -> None:
    """Compile the pending configs' kernels in worker processes (profiling.measure.precompile) and seed the in-process
    compile-facts cache with what they found; whatever fails is compiled in-process later, as without it.
    `report('precompile', done, total, '', workers)` as compile tasks finish (and `eta` advanced)."""
    from blockscope.profiling.measure import precompile

    tic = time.perf_counter()
    configs = [config for config, _plan, plan_error, _tunables, _todo in pending if not plan_error]
    mode = "run" if device.type == "cuda" else "offline"
    if eta is not None:
        eta.begin("precompile")
    if report is not None:
        report("precompile", 0, len(configs), "", workers)

    def compiled(done: int, total: int) -> None:
        if eta is not None:
            eta.set_weight("precompile", total)
            eta.advance("precompile", done)
        if report is not None:
            report("precompile", done, total, "", workers)

    result = precompile.precompile(
        configs,
        workers,
        mode=mode,
        arch=arch or ("sm_90" if mode == "offline" else None),
        gpu_name=gpu_name,
        max_lanes_per_thread=max_lanes,
        timeout_s=timeout_s,
        on_progress=compiled,
        free_bytes=_free_gpu_bytes(device) if mode == "run" else None,
    )
    _COMPILE_CACHE.update(result.facts)
    state.precompile = {
        "compiled": result.compiled,
        "failed": len(result.failed),
        "workers": result.workers,
        "seconds": round(result.seconds, 2),
        "broken": result.broken,
        "failed_reasons": [[reason, count] for reason, count in result.failure_reasons()],
        "no_facts": result.no_facts,
    }
    state.warmed_keys = result.compiled_keys
    state.add_phase("precompile", time.perf_counter() - tic)


def estimate_seconds(
    configs: Sequence[Config],
    methods: Sequence[str] = timing.TIMING_METHODS,
    *,
    reps: int | None = None,
    warmup: int = timing.DEFAULT_WARMUP,
    target_ms: float = timing.DEFAULT_TARGET_MS,
    min_reps: int = timing.DEFAULT_MIN_REPS,
    max_reps: int = timing.DEFAULT_MAX_REPS,
    hbm_gbps: float = 3500.0,
    compile_s: float = 1.5,
    config_overhead_s: float = 0.12,
    sync_us: float = 25.0,
    flush_us: float = 90.0,
    max_lanes_per_thread: float | None = DEFAULT_MAX_LANES_PER_THREAD,
) -> float:
    """Rough wall seconds on a GPU: compiles (per distinct kernel) + per-config overhead (input, check, trace)
    + per method (warmup + estimate + reps) x (kernel time ~ bytes / hbm_gbps + 4 us, + sync/flush costs)."""
    kernels_seen: set[tuple] = set()
    total = 0.0
    for config in configs:
        try:
            plan = resolve_plan(config)
        except Exception:
            continue
        if predicted_compile_problem(plan, max_lanes_per_thread):
            continue
        if plan is not None:
            key = (plan.variant, config.dtype, plan.num_warps, plan.num_stages, tuple(sorted(plan.constexprs.items())))
            if key not in kernels_seen:
                kernels_seen.add(key)
                total += compile_s
        launches = 2 if config.direction == "forward_backward" else 1
        kernel_us = (
            bytes_moved(config.n_rows, config.n_cols, config.dtype, config.direction) / (hbm_gbps * 1e3)
            + 4.0 * launches
        )
        total += config_overhead_s + 3 * kernel_us * 1e-6  # + input, reference and check
        n = reps if reps is not None else timing.choose_reps(kernel_us, target_ms, min_reps, max_reps)
        for method in methods:
            per_call = {
                "per_call_events": max(kernel_us, 8.0) + sync_us,
                "back_to_back_flushed": kernel_us + flush_us,
                "cuda_graph": kernel_us,
            }[method]
            total += (warmup + 5) * max(kernel_us, 6.0) * 1e-6 + (n + 5) * per_call * 1e-6
            if method == "cuda_graph":
                total += 0.01
    return total
