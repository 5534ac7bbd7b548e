"""The one timer: three named methods over zero-argument closures (setup is not timed).

Methods (named in every results row):
  per_call_events       the seed's: CUDA events recorded around one call, synchronize, one sample per call
  back_to_back_flushed  triton.testing.do_bench style: L2 flushed (256 MB buffer written) before each rep,
                        events around each call, reps queued back to back, one synchronize at the end; the GPU
                        is first held by a spin kernel while the host queues the reps (at most MAX_QUEUED_REPS),
                        so host launch gaps cannot enter a sample even when the host path is slower than
                        flush + kernel (launch-bound shapes on a slow host); the first batch holds 250 us per rep,
                        later ones 2.5 x the host's measured queueing time (HoldState; a batch whose queueing
                        outlasted 80 % of its hold is taken again at the full hold)
  cuda_graph            `graph_calls` calls captured in a CUDA graph; a sample is replay time / graph_calls

Warmup calls are separate (default 25, as the seed, cut short after `warmup_ms` of wall time for long kernels);
the first call (JIT compile + launch) is timed on the wall clock, cold, separately. Reps are adaptive by default:
samples are taken in growing batches until the 95 % order-statistics confidence interval of the median is within
`rel_ci` (1 %) of it either side, with `min_reps`..`max_reps` and a per-method wall budget (`budget_ms`); the
row's `reps` says how many were used. Pruning (`stop`, see `clearly_slower`): the sweep may stop sampling a config
whose median's CI lies clearly above the best config's of its group; its stats come from the samples it has
(`pruned=True`). The device clock is injectable (`Clock` protocol) so CPU tests use a fake
one.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Protocol

TIMING_METHODS: tuple[str, ...] = ("per_call_events", "back_to_back_flushed", "cuda_graph")
DEFAULT_WARMUP = 25
DEFAULT_TARGET_MS = 2.0  # adaptive reps: aim at this much timed device work per method
DEFAULT_MIN_REPS = 10
DEFAULT_MAX_REPS = 1000
DEFAULT_REL_CI = 0.01  # adaptive reps stop once the median's 95 % CI half-width is within 1 % of it
DEFAULT_BUDGET_MS = 60.0  # adaptive reps: wall time per method after which sampling stops (min_reps still taken)
DEFAULT_WARMUP_MS = 15.0  # warmup stops early (at least WARMUP_CHUNK calls) once this much wall time is spent
WARMUP_CHUNK = 5
MIN_SAMPLES = 5  # adaptive: a confidence interval needs a few samples (cuda_graph: replays)
CI_Z = 1.959964  # two-sided 95 %
DEFAULT_GRAPH_CALLS = 10
FLUSH_BYTES = 256 * 2**20  # > H200 L2 (60 MB)
MAX_QUEUED_REPS = 200  # back_to_back_flushed: reps queued behind the spin kernel (launch queue stays shallow)
HOLD_US_PER_REP = 250.0  # spin time per queued rep: more than the host needs to queue flush + 2 events + a call
# later batches of one benchmark hold HOLD_FACTOR x the host's measured queueing time per rep (at least
# MIN_HOLD_US_PER_REP); a batch queued in over HOLD_SAFE of its hold is taken again at HOLD_US_PER_REP
HOLD_FACTOR = 2.5
MIN_HOLD_US_PER_REP = 20.0
HOLD_SAFE = 0.8
DEFAULT_PRUNE_MARGIN = 0.10  # pruned only when the CI's lower bound is > 1.10 x the best's CI upper bound
DEFAULT_PRUNE_MIN_SAMPLES = MIN_SAMPLES  # samples before a config may be pruned


class Event(Protocol):
    def record(self) -> None: ...
    def synchronize(self) -> None: ...
    def elapsed_ms(self, end: Event) -> float: ...


class Clock(Protocol):
    """Device timing backend: events, synchronize, L2 flush, graph capture, and a wall clock (seconds)."""

    def event(self) -> Event: ...
    def synchronize(self) -> None: ...
    def flush_l2(self) -> None: ...
    def hold(self, us: float) -> None: ...
    def capture_graph(self, fn: Callable[[], Any], calls: int) -> Callable[[], None]: ...
    def wall_s(self) -> float: ...


@dataclass(frozen=True)
class TimingStats:
    """Steady-state time per call (us) under one method; reps = calls timed; first_call_s = cold call (s)."""

    method: str
    median_us: float
    p20_us: float
    p80_us: float
    min_us: float
    max_us: float
    reps: int
    first_call_s: float
    pruned: bool = False  # sampling stopped early: clearly slower than the best config of its group
    ci_lo_us: float | None = None  # 95 % confidence interval of the median (median_ci), microseconds
    ci_hi_us: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class _CudaEvent:
    def __init__(self) -> None:
        import torch

        self._event = torch.cuda.Event(enable_timing=True)

    def record(self) -> None:
        self._event.record()

    def synchronize(self) -> None:
        self._event.synchronize()

    def elapsed_ms(self, end: _CudaEvent) -> float:
        return self._event.elapsed_time(end._event)


class CudaClock:
    """The real clock: torch.cuda events on the current stream of `device`."""

    def __init__(self, device: Any = None, flush_bytes: int = FLUSH_BYTES) -> None:
        import torch

        self.device = torch.device(device) if device is not None else torch.device("cuda", torch.cuda.current_device())
        self.flush_bytes = flush_bytes
        self._flush_buffer = None

    def event(self) -> Event:
        return _CudaEvent()

    def synchronize(self) -> None:
        import torch

        torch.cuda.synchronize(self.device)

    def flush_l2(self) -> None:
        import torch

        if self._flush_buffer is None:
            self._flush_buffer = torch.empty(self.flush_bytes // 4, dtype=torch.int32, device=self.device)
        self._flush_buffer.zero_()

    def hold(self, us: float) -> None:
        """Keep the GPU busy for about `us` microseconds (a spin kernel; at most longer on a slower clock)."""
        import torch

        torch.cuda._sleep(int(us * 2000))  # cycles at 2 GHz: the H200's top SM clock is 1.98 GHz

    def capture_graph(self, fn: Callable[[], Any], calls: int) -> Callable[[], None]:
        import torch

        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):  # warm up on a side stream before capture, as torch's docs ask
            for _ in range(2):
                fn()
        torch.cuda.current_stream(self.device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(calls):
                fn()
        self.synchronize()
        return graph.replay

    def wall_s(self) -> float:
        return time.perf_counter()


def percentile(samples: list[float], q: float) -> float:
    """Linear-interpolated percentile, q in 0..100 (numpy's default)."""
    ordered = sorted(samples)
    if not ordered:
        raise ValueError("no samples")
    pos = (len(ordered) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def summarize(
    method: str, samples_us: list[float], first_call_s: float, reps: int | None = None, pruned: bool = False
) -> TimingStats:
    """TimingStats from per-call samples in microseconds (with the median's 95 % CI)."""
    if method not in TIMING_METHODS:
        raise ValueError(f"unknown timing method {method!r}; allowed: {', '.join(TIMING_METHODS)}")
    if not samples_us:
        raise ValueError(f"{method}: no samples")
    lo, hi = median_ci(samples_us)
    return TimingStats(
        method=method,
        median_us=float(statistics.median(samples_us)),
        p20_us=percentile(samples_us, 20),
        p80_us=percentile(samples_us, 80),
        min_us=float(min(samples_us)),
        max_us=float(max(samples_us)),
        reps=len(samples_us) if reps is None else reps,
        first_call_s=float(first_call_s),
        pruned=bool(pruned),
        ci_lo_us=float(lo),
        ci_hi_us=float(hi),
    )


def first_call_seconds(fn: Callable[[], Any], clock: Clock) -> float:
    """Wall time of one call plus synchronize, in seconds (cold on the first use of `fn`: JIT + launch)."""
    clock.synchronize()
    start = clock.wall_s()
    fn()
    clock.synchronize()
    return clock.wall_s() - start


def choose_reps(
    estimate_us: float,
    target_ms: float = DEFAULT_TARGET_MS,
    min_reps: int = DEFAULT_MIN_REPS,
    max_reps: int = DEFAULT_MAX_REPS,
) -> int:
    """Reps so that reps x estimate_us ~ target_ms, clamped to [min_reps, max_reps]."""
    if estimate_us <= 0 or not math.isfinite(estimate_us):
        return max_reps
    return int(min(max_reps, max(min_reps, math.ceil(target_ms * 1000.0 / estimate_us))))


def median_ci(samples: list[float], z: float = CI_Z) -> tuple[float, float]:
    """Distribution-free confidence interval of the median (order statistics, normal approximation of the
    binomial: ranks n/2 - z*sqrt(n)/2 and 1 + n/2 + z*sqrt(n)/2, e.g. the 40th and 61st of 100 for the default
    95 %), in the samples' unit."""
    ordered = sorted(samples)
    n = len(ordered)
    if not n:
        raise ValueError("no samples")
    half = z * math.sqrt(n) / 2.0
    lo = max(0, math.floor(n / 2.0 - half) - 1)  # ranks are 1-based
    hi = min(n - 1, math.ceil(1 + n / 2.0 + half) - 1)
    return ordered[lo], ordered[hi]


def relative_ci_half_width(samples: list[float], z: float = CI_Z) -> float:
    """Half the width of median_ci relative to the median (0.01 = +-1 %); inf for fewer than 2 samples or a
    median <= 0."""
    if len(samples) < 2:
        return math.inf
    median = statistics.median(samples)
    if not median > 0:
        return math.inf
    lo, hi = median_ci(samples, z)
    return (hi - lo) / 2.0 / median


def clearly_slower(
    samples: list[float],
    best_ci: tuple[float, float] | None,
    *,
    min_samples: int = DEFAULT_PRUNE_MIN_SAMPLES,
    margin: float = DEFAULT_PRUNE_MARGIN,
) -> bool:
    """True when a config's `samples` (us) separate it clearly from the best config's: at least `min_samples`,
    and the lower bound of their median's 95 % CI (median_ci) is above the best's CI upper bound x (1 + margin).
    `best_ci` None (no best yet) is never clearly slower; a config whose CI overlaps the best's never is either, so
    the best itself is never pruned."""
    if best_ci is None or len(samples) < max(2, min_samples):
        return False
    lo, _ = median_ci(samples)
    return lo > best_ci[1] * (1.0 + margin)


def sample_until_stable(
    take: Callable[[int], list[float]],
    *,
    min_samples: int,
    max_samples: int,
    rel_ci: float,
    budget_s: float,
    wall_s: Callable[[], float],
    stop: Callable[[list[float]], bool] | None = None,
) -> list[float]:
    """Call `take(k)` (k new samples) in growing batches until the median's relative CI half-width is <= rel_ci
    (with >= min_samples), max_samples are taken, `budget_s` wall seconds have passed (min_samples always), or
    `stop(samples)` says so after a batch (pruning: a clearly slower config)."""
    start = wall_s()
    samples = take(min_samples)
    while len(samples) < max_samples:
        if relative_ci_half_width(samples) <= rel_ci or wall_s() - start >= budget_s:
            break
        if stop is not None and stop(samples):
            break
        batch = min(max_samples - len(samples), max(min_samples, len(samples) // 2))
        samples += take(batch)
    return samples


def _per_call(fn: Callable[[], Any], clock: Clock, reps: int) -> list[float]:
    samples = []
    for _ in range(reps):
        start, end = clock.event(), clock.event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_ms(end) * 1000.0)
    return samples


@dataclass
class HoldState:
    """The spin time per queued rep of back_to_back_flushed (us), adapted batch to batch: the first batch holds
    HOLD_US_PER_REP; later ones HOLD_FACTOR x the host's measured queueing time per rep (within MIN_HOLD_US_PER_REP
    .. HOLD_US_PER_REP). A batch whose queueing took over HOLD_SAFE of its hold (the GPU may have run dry and a host
    gap entered a sample) is thrown away and taken again at the full hold."""

    us_per_rep: float = HOLD_US_PER_REP
    redone: int = 0  # batches taken again at the full hold


def _back_to_back(fn: Callable[[], Any], clock: Clock, reps: int, hold: HoldState | None = None) -> list[float]:
    hold = hold if hold is not None else HoldState()
    samples: list[float] = []
    while len(samples) < reps:  # batches of at most MAX_QUEUED_REPS, each queued behind a spin kernel
        batch = min(MAX_QUEUED_REPS, reps - len(samples))
        held_us = hold.us_per_rep * batch
        taken, queued_us = _queued_batch(fn, clock, batch, held_us)
        if queued_us > HOLD_SAFE * held_us and hold.us_per_rep < HOLD_US_PER_REP:
            hold.us_per_rep, hold.redone = HOLD_US_PER_REP, hold.redone + 1  # possibly starved: again, held in full
            continue
        samples += taken
        if not hold.redone:  # after a redo the full hold stays for the rest of the benchmark
            hold.us_per_rep = min(HOLD_US_PER_REP, max(MIN_HOLD_US_PER_REP, HOLD_FACTOR * queued_us / batch))
    return samples


def _queued_batch(
    fn: Callable[[], Any], clock: Clock, reps: int, hold_us: float = HOLD_US_PER_REP * 1.0
) -> tuple[list[float], float]:
    """(samples in us, wall us the host took to queue the reps after launching the `hold_us` spin)."""
    starts = [clock.event() for _ in range(reps)]
    ends = [clock.event() for _ in range(reps)]
    clock.hold(hold_us)
    queue_start = clock.wall_s()
    for start, end in zip(starts, ends, strict=True):
        clock.flush_l2()
        start.record()
        fn()
        end.record()
    queued_us = (clock.wall_s() - queue_start) * 1e6
    clock.synchronize()
    return [start.elapsed_ms(end) * 1000.0 for start, end in zip(starts, ends, strict=True)], queued_us


def _replay(fn: Callable[[], Any], clock: Clock, calls: int, capture: bool) -> Callable[[], None]:
    """A CUDA graph of `calls` calls of fn, or with capture=False the same calls run eagerly (no graph)."""
    if capture:
        return clock.capture_graph(fn, calls)

    def eager() -> None:
        for _ in range(calls):
            fn()

    return eager


def _graph(
    fn: Callable[[], Any], clock: Clock, reps: int, graph_calls: int, capture: bool = True
) -> tuple[list[float], int]:
    replay = _replay(fn, clock, graph_calls, capture)
    replay()  # first replay uploads the graph
    clock.synchronize()
    replays = max(1, math.ceil(reps / graph_calls))
    samples = [us / graph_calls for us in _per_call(replay, clock, replays)]  # events around each replay
    return samples, replays * graph_calls


def benchmark(
    fn: Callable[[], Any],
    method: str = "per_call_events",
    *,
    reps: int | None = None,
    warmup: int = DEFAULT_WARMUP,
    clock: Clock | None = None,
    first_call_s: float | None = None,
    target_ms: float = DEFAULT_TARGET_MS,
    min_reps: int = DEFAULT_MIN_REPS,
    max_reps: int = DEFAULT_MAX_REPS,
    graph_calls: int = DEFAULT_GRAPH_CALLS,
    rel_ci: float | None = DEFAULT_REL_CI,
    budget_ms: float = DEFAULT_BUDGET_MS,
    warmup_ms: float | None = DEFAULT_WARMUP_MS,
    capture: bool = True,
    stop: Callable[[list[float]], bool] | None = None,
) -> TimingStats:
    """Time `fn` (a zero-arg closure) under `method`; microseconds per call.

    `reps=None` is adaptive: with `rel_ci` (default 0.01) samples are taken until the median's 95 % CI half-width
    is within rel_ci of it (min_reps..max_reps calls; stop after `budget_ms` of wall time once min_reps are in);
    with rel_ci=None reps come from 5 estimate calls (target_ms of timed work, min_reps..max_reps). Warmup is
    `warmup` calls, cut short (whole chunks of WARMUP_CHUNK) after `warmup_ms` of wall time (None: no cut).
    `first_call_s=None` times this function's first call of `fn` as the cold call (seconds); pass it in when
    `fn` has already run. For cuda_graph, `reps` is rounded up to whole replays of `graph_calls` calls;
    `capture=False` (a callable that cannot be captured) times each sample as `graph_calls` eager calls between
    two events instead of a graph replay. `stop(samples_us)` (adaptive reps only): checked after each batch of
    samples; True stops sampling there and marks the stats `pruned` (the sweep's pruning, `clearly_slower`).
    """
    if method not in TIMING_METHODS:
        raise ValueError(f"unknown timing method {method!r}; allowed: {', '.join(TIMING_METHODS)}")
    if reps is not None and reps < 1:
        raise ValueError(f"reps={reps}; allowed: a positive integer or None (adaptive)")
    clock = clock if clock is not None else CudaClock()
    if first_call_s is None:
        first_call_s = first_call_seconds(fn, clock)
    _warm_up(fn, clock, warmup, warmup_ms)
    if reps is None and rel_ci is not None:
        return _adaptive(
            fn,
            method,
            clock,
            first_call_s,
            min_reps=min_reps,
            max_reps=max_reps,
            rel_ci=rel_ci,
            budget_ms=budget_ms,
            graph_calls=graph_calls,
            capture=capture,
            stop=stop,
        )
    if reps is None:
        estimate = _back_to_back(fn, clock, 5) if method == "back_to_back_flushed" else _per_call(fn, clock, 5)
        reps = choose_reps(statistics.median(estimate), target_ms, min_reps, max_reps)
        if method == "cuda_graph":
            reps = max(reps, graph_calls)
    if method == "per_call_events":
        samples = _per_call(fn, clock, reps)
        total = reps
    elif method == "back_to_back_flushed":
        samples = _back_to_back(fn, clock, reps)
        total = reps
    else:
        samples, total = _graph(fn, clock, reps, graph_calls, capture)
    return summarize(method, samples, first_call_s, total)


def _warm_up(fn: Callable[[], Any], clock: Clock, calls: int, budget_ms: float | None) -> None:
    """`calls` warmup calls; with `budget_ms`, stop after a chunk once that much wall time has passed."""
    start = clock.wall_s()
    done = 0
    while done < calls:
        chunk = min(WARMUP_CHUNK, calls - done) if budget_ms is not None else calls - done
        for _ in range(chunk):
            fn()
        done += chunk
        clock.synchronize()
        if budget_ms is not None and (clock.wall_s() - start) * 1000.0 >= budget_ms:
            break
    clock.synchronize()


def _adaptive(
    fn: Callable[[], Any],
    method: str,
    clock: Clock,
    first_call_s: float,
    *,
    min_reps: int,
    max_reps: int,
    rel_ci: float,
    budget_ms: float,
    graph_calls: int,
    capture: bool = True,
    stop: Callable[[list[float]], bool] | None = None,
) -> TimingStats:
    """Samples under `method` until the median is stable or `stop` prunes it (sample_until_stable); reps = calls
    timed."""
    if method == "cuda_graph":
        replay = _replay(fn, clock, graph_calls, capture)
        replay()  # first replay uploads the graph
        clock.synchronize()

        def take(k: int) -> list[float]:
            return [us / graph_calls for us in _per_call(replay, clock, k)]

        per_sample = graph_calls
    else:
        hold = HoldState()

        def take(k: int) -> list[float]:
            return _back_to_back(fn, clock, k, hold) if method == "back_to_back_flushed" else _per_call(fn, clock, k)

        per_sample = 1
    pruned: list[bool] = []

    def stopped(samples: list[float]) -> bool:
        if stop is not None and stop(samples):
            pruned.append(True)
            return True
        return False

    samples = sample_until_stable(
        take,
        min_samples=max(MIN_SAMPLES, math.ceil(min_reps / per_sample)),
        max_samples=max(MIN_SAMPLES, math.ceil(max_reps / per_sample)),
        rel_ci=rel_ci,
        budget_s=budget_ms / 1000.0,
        wall_s=clock.wall_s,
        stop=stopped,
    )
    return summarize(method, samples, first_call_s, len(samples) * per_sample, pruned=bool(pruned))


def measure_copy_gbps(device: Any = None, bytes: int = 1 << 30, reps: int = 20, clock: Clock | None = None) -> float:
    """Device-to-device copy bandwidth in GB/s (1e9 B/s), counting read + write bytes (the roofline)."""
    import torch

    clock = clock if clock is not None else CudaClock(device)
    device = getattr(clock, "device", device)
    src = torch.empty(bytes, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    stats = benchmark(lambda: dst.copy_(src), "back_to_back_flushed", reps=reps, warmup=3, clock=clock)
    return 2.0 * bytes / (stats.median_us * 1e-6) / 1e9


class FakeEvent:
    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.stamp_us: float | None = None

    def record(self) -> None:
        self.stamp_us = self.clock.now_us
        self.clock.now_us += self.clock.tick_us
        self.clock.records += 1

    def synchronize(self) -> None:
        self.clock.event_syncs += 1

    def elapsed_ms(self, end: FakeEvent) -> float:
        if self.stamp_us is None or end.stamp_us is None:
            raise RuntimeError("event not recorded")
        return (end.stamp_us - self.stamp_us) / 1000.0


class FakeClock:
    """Deterministic clock for tests: device time advances only through `advance(us)` (which also moves the wall
    clock) and `tick_us` per event record; `wall_s()` adds `wall_tick_s` per read. Counts what the timer did."""

    def __init__(self, tick_us: float = 0.0, wall_tick_s: float = 0.0) -> None:
        self.tick_us, self.wall_tick_s = tick_us, wall_tick_s
        self.now_us = 0.0
        self.wall = 0.0
        self.records = self.event_syncs = self.syncs = self.flushes = self.captures = self.replays = self.holds = 0
        self.held_us = 0.0

    def advance(self, us: float) -> None:
        self.now_us += us
        self.wall += us * 1e-6

    def event(self) -> FakeEvent:
        return FakeEvent(self)

    def synchronize(self) -> None:
        self.syncs += 1

    def flush_l2(self) -> None:
        self.flushes += 1

    def hold(self, us: float) -> None:
        self.holds += 1
        self.held_us += us

    def capture_graph(self, fn: Callable[[], Any], calls: int) -> Callable[[], None]:
        self.captures += 1

        def replay() -> None:
            self.replays += 1
            for _ in range(calls):
                fn()

        return replay

    def wall_s(self) -> float:
        value = self.wall
        self.wall += self.wall_tick_s
        return value
