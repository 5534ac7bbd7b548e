"""Compile a sweep's kernels ahead of timing, in parallel worker processes, so the sweep's own JIT only loads.

Two steps:
  * `plan_precompile(configs, workers)` (pure): which configs need a compile - one per distinct kernel
    specialization (variant, dtype, warps, stages, constexprs, tunables, and how Triton specializes the integer
    arguments: == 1, divisible by 16), every peer-backend shape (Inductor compiles per shape), none for torch or
    configs the sweep skips - grouped into at most `workers` lists balanced by estimated cost. A Triton config
    compiles on a stand-in of the fewest rows that keeps its compile key (R = 16 for most: the kernel, not the
    input, is what the sweep needs from the worker). Configs whose input stays large (>= HEAVY_BYTES read +
    write: peers, which compile per shape) are split over a few heavy groups, as many as the GPU's free memory
    holds at once (one without that figure), so the workers' GPU memory stays bounded.
  * `run_precompile(groups, ...)`: a spawn-context ProcessPoolExecutor with one worker per group; each group is
    submitted as tasks of at most `chunk` configs (a heavy group as one task, so its inputs are never on the GPU
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

import collections
import contextlib
import dataclasses
import heapq
import os
import sys
import time
import types
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

HEAVY_BYTES = 2 * 2**30  # read x + write y at or above this: a heavy group's task compiles such configs one at a time
HEAVY_PEAK = 2.0  # a heavy config's peak GPU memory over its read + write bytes (input, output, a peer's temporaries)
LIGHT_WORKER_BYTES = 3 * 2**30  # GPU memory one light worker may hold: its CUDA context, input and output
MAX_HEAVY_GROUPS = 4
STAND_IN_ROWS = (16, 64, 256, 1024)  # rows a Triton config's compile stand-in may have, fewest first
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


def stand_in(config: Any, key: tuple, gpu_name: str | None = None) -> Any:
    """`config` on the fewest STAND_IN_ROWS rows whose plan keeps its compile key (the same kernel, compiled on a
    smaller input), or `config` itself: peers (their key is the shape) and configs no smaller R keeps. An 'auto'
    config becomes its pick's variant and tunables first (auto at a stand-in shape would write a launch record of a
    shape nobody runs into the user's kernel store)."""
    from blockscope.profiling.measure import sweep
    from blockscope.profiling.measure.backends import is_peer

    if is_peer(config.variant):
        return config
    if config.variant == "auto":
        try:
            plan = sweep.resolve_plan(config, gpu_name)
            pick = sweep.make_config(plan.variant, config.dtype, config.n_rows, config.n_cols, **plan.tunables)
            if compile_key(pick, sweep.resolve_plan(pick, gpu_name)) != key:
                return config
        except Exception:
            return config
        config = pick
    for rows in STAND_IN_ROWS:
        if rows >= config.n_rows:
            break
        candidate = dataclasses.replace(config, n_rows=rows)
        try:
            if compile_key(candidate, sweep.resolve_plan(candidate, gpu_name)) == key:
                return candidate
        except Exception:
            continue
    return config


def heavy_group_count(free_bytes: int | None, largest_heavy_bytes: int, workers: int) -> int:
    """How many heavy groups run at once: what the GPU's free memory (bytes) holds after `workers` light workers'
    LIGHT_WORKER_BYTES, at HEAVY_PEAK x the largest heavy config's read + write bytes; 1 to MAX_HEAVY_GROUPS, 1
    when the free memory is unknown (None)."""
    if free_bytes is None or largest_heavy_bytes <= 0:
        return 1
    spare = free_bytes - workers * LIGHT_WORKER_BYTES
    return max(1, min(MAX_HEAVY_GROUPS, workers, int(spare // (HEAVY_PEAK * largest_heavy_bytes))))


def plan_precompile(
    configs: Sequence[Any],
    workers: int,
    *,
    gpu_name: str | None = None,
    max_lanes_per_thread: float | None = None,
    heavy_bytes: int = HEAVY_BYTES,
    free_bytes: int | None = None,
) -> list[list[Any]]:
    """Configs to compile ahead, one per compile_key (the smallest input of those sharing it, then its stand_in),
    in at most `workers` groups: heavy configs first, over heavy_group_count(free_bytes, ...) groups, then the
    light ones (largest estimated cost first, each to the least loaded group). Configs whose plan fails or that
    the sweep skips (predicted pathological compile) are left out."""
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
    compiled = [stand_in(config, key, gpu_name) for key, config in chosen.items()]
    heavy = [c for c in compiled if _bytes(c) >= heavy_bytes]
    light = [c for c in compiled if _bytes(c) < heavy_bytes]
    if heavy and workers == 1:  # one worker: everything in one group, heavy ones last
        return [[*light, *heavy]]
    room = workers - 1 if light else workers  # light configs keep at least one worker
    heavy_count = max(1, min(room, heavy_group_count(free_bytes, max(map(_bytes, heavy), default=0), workers)))
    groups = _balanced(heavy, heavy_count) if heavy else []
    return groups + _balanced(light, max(1, workers - len(groups)))


def _balanced(configs: list[Any], count: int) -> list[list[Any]]:
    """`configs` in `count` lists of about equal COMPILE_COST (largest first, each to the least loaded list);
    empty lists left out."""
    loads = [(0.0, index) for index in range(count)]
    groups: list[list[Any]] = [[] for _ in range(count)]
    for config in sorted(configs, key=lambda c: -COMPILE_COST.get(c.variant, 1.0)):
        load, index = heapq.heappop(loads)
        groups[index].append(config)
        heapq.heappush(loads, (load + COMPILE_COST.get(config.variant, 1.0), index))
    return [group for group in groups if group]


def _bytes(config: Any) -> int:
    from blockscope.profiling.results import bytes_moved

    return bytes_moved(config.n_rows, config.n_cols, config.dtype)


@dataclass
class PrecompileReport:
    """What the warm-up did: configs compiled (and their compile_keys), failed (config label -> error), compile
    facts for the sweep's cache (key -> facts), wall seconds, and whether the pool broke or timed out (the rest
    compiles in-process)."""

    compiled: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    facts: dict[tuple, dict[str, Any]] = field(default_factory=dict)
    compiled_keys: set[tuple] = field(default_factory=set)  # compile_key of each config compiled
    no_facts: int = 0  # configs compiled whose compile facts the worker could not read
    seconds: float = 0.0
    workers: int = 0
    broken: str = ""

    def failure_reasons(self, limit: int = 3) -> list[tuple[str, int]]:
        """The `limit` most common reasons in `failed` (their first REASON_CHARS characters) with their counts,
        most common first: why configs were left to the in-process JIT."""
        counts = collections.Counter(reason[:REASON_CHARS] for reason in self.failed.values())
        return counts.most_common(limit)


REASON_CHARS = 80


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
    """Worker task: per config, {'label', 'key' (the sweep's compile-facts cache key or None), 'compile_key',
    'facts', 'error', 'seconds'}, plus 'no_facts': True where a config ran but its compile facts could not be read
    (the sweep reads them in-process). mode 'run': run the config once on the GPU, then its compile facts (live);
    'offline': compile facts for `arch` (triton.compile, no GPU)."""
    import torch

    from blockscope.profiling.measure import sweep
    from blockscope.profiling.measure.backends import is_peer

    results = []
    for config in configs:
        start = time.perf_counter()
        entry: dict[str, Any] = {"label": config.label(), "key": None, "facts": None, "error": ""}
        try:
            plan = sweep.resolve_plan(config, gpu_name)
            entry["compile_key"] = compile_key(config, plan)
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
                elif facts.get("n_regs") is None and mode == "run":  # the kernel ran, so it is compiled
                    entry["no_facts"] = True
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
                        if entry.get("compile_key") is not None:
                            report.compiled_keys.add(entry["compile_key"])
                        report.no_facts += bool(entry.get("no_facts"))
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
    free_bytes: int | None = None,
) -> PrecompileReport:
    """plan_precompile + run_precompile (workers default: min(16, CPU cores)); `on_progress(done, total)` as
    run_precompile's; `free_bytes`: the GPU's free memory, which sets how many heavy groups run at once."""
    workers = default_workers() if workers is None else workers
    groups = plan_precompile(
        configs, workers, gpu_name=gpu_name, max_lanes_per_thread=max_lanes_per_thread, free_bytes=free_bytes
    )
    return run_precompile(
        groups, mode=mode, arch=arch, gpu_name=gpu_name, timeout_s=timeout_s, env=env, on_progress=on_progress
    )
