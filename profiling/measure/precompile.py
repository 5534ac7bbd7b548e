"""Compile a sweep's kernels ahead of timing, in parallel worker processes, so the sweep's own JIT only loads.

Two steps:
  * `plan_precompile(configs, workers)` (pure): which configs need a compile - one per distinct kernel
    specialization (variant, dtype, warps, stages, constexprs, tunables, and how Triton specializes the integer
    arguments: == 1, divisible by 16), every peer-backend shape (Inductor compiles per shape), none for torch or
    configs the sweep skips - grouped into at most `workers` lists balanced by estimated cost; configs with a
    large input (>= HEAVY_BYTES read + write) all go to one group so the workers' GPU memory stays bounded.
  * `run_precompile(groups, ...)`: a spawn-context ProcessPoolExecutor with one worker per group; each group is
    submitted as tasks of at most `chunk` configs (the heavy group as one task, so its inputs are never on the GPU
    twice at once), so `on_progress(configs done, configs in all)` is reported as tasks finish and at least every
    `heartbeat_s` seconds (also while the workers still import torch). A worker runs each
    config once on the GPU (mode 'run': Triton's on-disk cache (TRITON_CACHE_DIR, ~/.triton/cache), Inductor's
    and Liger's caches fill) and gathers its compile facts (registers, spills, shared memory, occupancy: the
    sweep's compile columns), or compiles offline for an arch without a GPU (mode 'offline', `triton.compile`
    for e.g. sm_90 plus the facts' own disk cache). It returns the facts keyed as the sweep's in-process cache.
    A failing config, a crashed worker or the overall timeout only loses that part of the warm-up: the sweep
    then compiles those kernels in-process as before (nothing here raises).

Imports neither torch nor triton at module level: the worker initializer sets the environment (e.g. clears
TRITON_INTERPRET for offline compiles) before they are imported in the worker.
"""

from __future__ import annotations

import contextlib
import heapq
import os
import sys
import time
import types
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

HEAVY_BYTES = 2 * 2**30  # read x + write y at or above this: one worker compiles all such configs, one at a time
DEFAULT_MAX_WORKERS = 16
# estimated compile cost relative to one Triton variant kernel
COMPILE_COST: dict[str, float] = {"inductor": 4.0, "quack": 3.0, "liger": 1.5, "auto": 1.5}
DEFAULT_TIMEOUT_S = 300.0
DEFAULT_CHUNK = 4  # configs per worker task: progress granularity (a task's configs report together)
HEARTBEAT_S = 2.0  # on_progress at least this often, seconds


def default_workers() -> int:
    """min(16, CPU cores) worker processes."""
    return max(1, min(DEFAULT_MAX_WORKERS, os.cpu_count() or 1))


def compile_key(config: Any, plan: Any) -> tuple | None:
    """What a compile depends on for one config; None when nothing is compiled (torch, auto picking torch).

    Triton variants: the plan's kernel, dtype, warps, stages, constexprs and tunables, plus Triton's
    specialization of the integer arguments (equal to 1, divisible by 16); peers: the whole shape."""
    from blockscope.profiling.measure.backends import is_peer

    if config.variant == "torch":
        return None
    if is_peer(config.variant):
        return (config.variant, config.dtype, config.n_rows, config.n_cols)
    if plan is None:
        return None
    specialization = tuple(sorted((name, value == 1, value % 16 == 0) for name, value in plan.scalar_args.items()))
    return (
        plan.variant,
        config.dtype,
        plan.num_warps,
        plan.num_stages,
        tuple(sorted(plan.constexprs.items())),
        tuple(sorted(plan.tunables.items())),
        specialization,
    )


def plan_precompile(
    configs: Sequence[Any],
    workers: int,
    *,
    gpu_name: str | None = None,
    max_lanes_per_thread: float | None = None,
    heavy_bytes: int = HEAVY_BYTES,
) -> list[list[Any]]:
    """Configs to compile ahead, one per compile_key, in at most `workers` groups (largest estimated cost first,
    each to the least loaded group; all heavy configs in one group). Configs whose plan fails or that the sweep
    skips (predicted pathological compile) are left out."""
    from blockscope.profiling.measure import sweep

    if workers < 1:
        raise ValueError(f"workers={workers}; allowed: an integer >= 1")
    chosen: dict[tuple, Any] = {}
    for config in configs:
        try:
            plan = sweep.resolve_plan(config, gpu_name)
        except Exception:
            continue  # the sweep writes its error row
        if sweep.predicted_compile_problem(plan, max_lanes_per_thread):
            continue
        key = compile_key(config, plan)
        if key is not None and (key not in chosen or _bytes(config) < _bytes(chosen[key])):
            chosen[key] = config  # of configs sharing a kernel, the smallest input
    heavy = [c for c in chosen.values() if _bytes(c) >= heavy_bytes]
    light = [c for c in chosen.values() if _bytes(c) < heavy_bytes]
    groups: list[list[Any]] = [list(heavy)] if heavy else []
    free = max(1, workers - len(groups))
    loads = [(0.0, index) for index in range(free)]
    light_groups: list[list[Any]] = [[] for _ in range(free)]
    for config in sorted(light, key=lambda c: -COMPILE_COST.get(c.variant, 1.0)):
        load, index = heapq.heappop(loads)
        light_groups[index].append(config)
        heapq.heappush(loads, (load + COMPILE_COST.get(config.variant, 1.0), index))
    if heavy and workers == 1:  # one worker: everything in one group, heavy ones last
        return [[*light_groups[0], *heavy]] if light_groups[0] else groups
    return groups + [g for g in light_groups if g]


def _bytes(config: Any) -> int:
    from blockscope.profiling.results import bytes_moved

    return bytes_moved(config.n_rows, config.n_cols, config.dtype)


@dataclass
class PrecompileReport:
    """What the warm-up did: configs compiled, failed (config label -> error), compile facts for the sweep's
    cache (key -> facts), wall seconds, and whether the pool broke or timed out (the rest compiles in-process)."""

    compiled: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    facts: dict[tuple, dict[str, Any]] = field(default_factory=dict)
    seconds: float = 0.0
    workers: int = 0
    broken: str = ""


def _worker_init(env: dict[str, str | None]) -> None:
    """Set (or, for None, remove) environment variables in a fresh worker before torch/triton are imported."""
    for name, value in env.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def compile_group(
    configs: list[Any], mode: str, arch: str | None, gpu_name: str | None, seed: int = 0
) -> list[dict[str, Any]]:
    """Worker task: per config, {'label', 'key' (the sweep's compile-facts cache key or None), 'facts', 'error',
    'seconds'}. mode 'run': run the config once on the GPU, then its compile facts (live); 'offline': compile
    facts for `arch` (triton.compile, no GPU)."""
    import torch

    from blockscope.profiling.measure import sweep
    from blockscope.profiling.measure.backends import is_peer

    results = []
    for config in configs:
        start = time.perf_counter()
        entry: dict[str, Any] = {"label": config.label(), "key": None, "facts": None, "error": ""}
        try:
            plan = sweep.resolve_plan(config, gpu_name)
            if mode == "run":
                dtype = sweep.dtype_from_name(config.dtype)
                generator = torch.Generator(device="cuda").manual_seed(seed)
                x = torch.randn(config.n_rows, config.n_cols, device="cuda", dtype=dtype, generator=generator)
                try:
                    sweep.backend_callable(config, x)()
                    torch.cuda.synchronize()
                finally:
                    del x
                    torch.cuda.empty_cache()
            if plan is not None and not is_peer(config.variant):
                facts_arch = None if mode == "run" else arch
                facts = sweep.default_compile_facts(config, plan, facts_arch)
                key = sweep.compile_facts_key(config, plan, facts_arch)
                if key in sweep._COMPILE_CACHE:  # only successes are cached there
                    entry.update(key=key, facts=sweep._COMPILE_CACHE[key])
                elif facts.get("n_regs") is None:
                    entry["error"] = "no compile facts"
        except Exception as error:  # the sweep compiles this config in-process and reports its error there
            entry["error"] = f"{type(error).__name__}: {str(error).strip().splitlines()[0][:200] if str(error) else ''}"
        entry["seconds"] = time.perf_counter() - start
        results.append(entry)
    return results


def run_precompile(
    groups: list[list[Any]],
    *,
    mode: str = "run",
    arch: str | None = None,
    gpu_name: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    env: dict[str, str | None] | None = None,
    task: Callable[..., list[dict[str, Any]]] = compile_group,
    on_progress: Callable[[int, int], None] | None = None,
    chunk: int = DEFAULT_CHUNK,
    heartbeat_s: float = HEARTBEAT_S,
) -> PrecompileReport:
    """Run `task(configs, mode, arch, gpu_name)` over the groups in len(groups) spawned worker processes, in
    tasks of at most `chunk` configs (a heavy group, one of inputs >= HEAVY_BYTES, as one task); never raises.

    `env` is applied in each worker before imports (mode 'offline' clears TRITON_INTERPRET by default). Whatever
    has not finished after `timeout_s` seconds is abandoned (its workers terminated). `on_progress(done, total)`
    (configs) is called at the start, whenever tasks finish and at least every `heartbeat_s` seconds."""
    if mode not in ("run", "offline"):
        raise ValueError(f"mode={mode!r}; allowed: 'run' (on the GPU) or 'offline' (compile for an arch)")
    if chunk < 1:
        raise ValueError(f"chunk={chunk}; allowed: an integer >= 1")
    report = PrecompileReport(workers=len(groups))
    started = time.perf_counter()
    if not groups:
        return report
    tasks = [
        part
        for group in groups
        for part in ([group] if _bytes(group[0]) >= HEAVY_BYTES else _chunks(group, chunk))
        if part
    ]
    total = sum(len(part) for part in tasks)
    finished = 0
    if on_progress is not None:
        on_progress(0, total)
    import multiprocessing

    worker_env = {"TRITON_INTERPRET": None} if mode == "offline" else {}
    worker_env.update(env or {})
    executor = None
    try:
        with bare_main():  # the workers start while the pool takes the tasks
            executor = ProcessPoolExecutor(
                max_workers=len(groups),
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_worker_init,
                initargs=(worker_env,),
            )
            futures = {executor.submit(task, part, mode, arch, gpu_name): part for part in tasks}
        not_done = set(futures)
        deadline = started + timeout_s
        while not_done:
            left = deadline - time.perf_counter()
            if left <= 0:
                break
            done, not_done = wait(not_done, timeout=min(heartbeat_s, left), return_when=FIRST_COMPLETED)
            for future in done:
                finished += len(futures[future])
                try:
                    results = future.result()
                except Exception as error:  # a crashed worker (BrokenProcessPool) or a task that raised
                    report.broken = report.broken or f"{type(error).__name__}: {error}"
                    for config in futures[future]:
                        report.failed[config.label()] = f"worker failed: {type(error).__name__}"
                    continue
                for entry in results:
                    if entry.get("error"):
                        report.failed[entry["label"]] = entry["error"]
                    else:
                        report.compiled += 1
                    if entry.get("key") is not None and entry.get("facts"):
                        report.facts[entry["key"]] = entry["facts"]
            if on_progress is not None:
                on_progress(finished, total)
        if not_done:
            report.broken = report.broken or f"timed out after {timeout_s:g} s"
            for future in not_done:
                future.cancel()
                for config in futures[future]:
                    report.failed.setdefault(config.label(), "not compiled: timeout")
    except Exception as error:  # the pool itself could not start: the sweep JITs in-process
        report.broken = report.broken or f"{type(error).__name__}: {error}"
    finally:
        if executor is not None:
            if report.broken.startswith("timed out"):
                for process in list(getattr(executor, "_processes", {}).values()):
                    process.terminate()
            executor.shutdown(wait=True, cancel_futures=True)
    report.seconds = time.perf_counter() - started
    return report


@contextlib.contextmanager
def bare_main() -> Iterator[None]:
    """A spawned worker first re-runs the parent's `__main__` from its file (multiprocessing's `prepare`). Under
    Streamlit that module is the page script being run (a live sweep from the Run sweep page; AppTest in the tests),
    whose rerun in a worker fails and breaks the pool. The workers need nothing from it: a bare `__main__` while
    they start."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


def _chunks(group: list[Any], size: int) -> list[list[Any]]:
    return [group[start : start + size] for start in range(0, len(group), size)]


def planned_count(groups: list[list[Any]]) -> int:
    """Configs the groups compile."""
    return sum(len(group) for group in groups)


def precompile(
    configs: Sequence[Any],
    workers: int | None = None,
    *,
    mode: str = "run",
    arch: str | None = None,
    gpu_name: str | None = None,
    max_lanes_per_thread: float | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    env: dict[str, str | None] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> PrecompileReport:
    """plan_precompile + run_precompile (workers default: min(16, CPU cores)); `on_progress(done, total)` as
    run_precompile's."""
    workers = default_workers() if workers is None else workers
    groups = plan_precompile(configs, workers, gpu_name=gpu_name, max_lanes_per_thread=max_lanes_per_thread)
    return run_precompile(
        groups, mode=mode, arch=arch, gpu_name=gpu_name, timeout_s=timeout_s, env=env, on_progress=on_progress
    )
