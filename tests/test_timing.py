"""The timer's statistics and method bookkeeping, on a fake device clock (no GPU)."""

from __future__ import annotations

import math

import pytest

from blockscope.profiling.measure import timing
from blockscope.profiling.measure.timing import FakeClock, benchmark, choose_reps, percentile, summarize


def timed_fn(clock: FakeClock, durations_us: list[float]):
    """A closure whose n-th call takes durations_us[n] of device time (the last one repeats)."""
    calls = []

    def fn() -> None:
        us = durations_us[min(len(calls), len(durations_us) - 1)]
        calls.append(us)
        clock.advance(us)

    return fn, calls


def test_percentiles_and_summary_numbers():
    samples = [float(v) for v in (7, 1, 10, 3, 5, 9, 2, 8, 4, 6)]
    assert percentile(samples, 50) == 5.5
    assert percentile(samples, 20) == pytest.approx(2.8)
    assert percentile(samples, 80) == pytest.approx(8.2)
    stats = summarize("per_call_events", samples, first_call_s=0.25)
    assert (stats.median_us, stats.min_us, stats.max_us, stats.reps, stats.first_call_s) == (5.5, 1.0, 10.0, 10, 0.25)
    assert stats.p20_us == pytest.approx(2.8) and stats.p80_us == pytest.approx(8.2)
    assert summarize("cuda_graph", [4.0], 0.0).p80_us == 4.0
    with pytest.raises(ValueError, match="allowed: per_call_events"):
        summarize("wallclock", [1.0], 0.0)
    with pytest.raises(ValueError, match="no samples"):
        summarize("cuda_graph", [], 0.0)


def test_per_call_events_cold_call_warmup_and_samples():
    clock = FakeClock()
    # cold call 500 us, 2 warmups of 99 us, then 5 timed calls
    fn, calls = timed_fn(clock, [500, 99, 99, 10, 50, 30, 20, 40])
    stats = benchmark(fn, "per_call_events", reps=5, warmup=2, clock=clock)
    assert calls == [500, 99, 99, 10, 50, 30, 20, 40]
    assert stats.method == "per_call_events"
    assert stats.first_call_s == pytest.approx(500e-6)
    assert (stats.median_us, stats.min_us, stats.max_us, stats.reps) == (30.0, 10.0, 50.0, 5)
    assert stats.p20_us == pytest.approx(18.0) and stats.p80_us == pytest.approx(42.0)
    assert clock.records == 10 and clock.event_syncs == 5 and clock.flushes == 0 and clock.captures == 0


def test_back_to_back_flushes_before_every_rep_and_syncs_once():
    clock = FakeClock(tick_us=1.0)  # each event record costs 1 us: inside every sample once
    fn, calls = timed_fn(clock, [12.0])
    stats = benchmark(fn, "back_to_back_flushed", reps=8, warmup=3, clock=clock, first_call_s=0.5)
    assert len(calls) == 3 + 8  # first_call_s given: no cold call
    assert stats.first_call_s == 0.5
    assert stats.median_us == pytest.approx(13.0) and stats.max_us == pytest.approx(13.0)
    assert stats.reps == 8
    assert clock.flushes == 8 and clock.event_syncs == 0 and clock.records == 16
    assert clock.holds == 1 and clock.held_us == pytest.approx(8 * timing.HOLD_US_PER_REP)  # GPU held while queued


def test_back_to_back_queues_at_most_max_queued_reps_behind_each_hold():
    clock = FakeClock()
    fn, _ = timed_fn(clock, [5.0])
    reps = 2 * timing.MAX_QUEUED_REPS + 3
    stats = benchmark(fn, "back_to_back_flushed", reps=reps, warmup=0, clock=clock, first_call_s=0.1)
    assert stats.reps == reps and clock.flushes == reps
    assert clock.holds == 3 and clock.syncs >= 3  # one hold and one synchronize per batch


def test_cuda_graph_divides_replay_time_by_calls_and_rounds_reps_up():
    clock = FakeClock(tick_us=2.0)
    fn, calls = timed_fn(clock, [7.0])
    stats = benchmark(fn, "cuda_graph", reps=10, warmup=0, clock=clock, graph_calls=4)
    assert clock.captures == 1
    assert clock.replays == 1 + 3  # upload replay + ceil(10 / 4) timed replays
    assert stats.reps == 12
    assert stats.median_us == pytest.approx((4 * 7.0 + 2.0) / 4)
    assert len(calls) == 1 + 4 * 4  # cold call + 4 calls per replay (the fake replays the closure)


def test_adaptive_reps_follow_target_and_bounds():
    assert choose_reps(100.0, target_ms=2.0, min_reps=20, max_reps=1000) == 20
    assert choose_reps(50.0, target_ms=2.0, min_reps=20, max_reps=1000) == 40
    assert choose_reps(0.5, target_ms=2.0, min_reps=20, max_reps=1000) == 1000
    assert choose_reps(1000.0, target_ms=2.0, min_reps=20, max_reps=1000) == 20
    assert choose_reps(0.0) == timing.DEFAULT_MAX_REPS
    clock = FakeClock()
    fn, calls = timed_fn(clock, [50.0])
    stats = benchmark(
        fn, "per_call_events", warmup=1, clock=clock, target_ms=2.0, min_reps=5, max_reps=500, rel_ci=None
    )
    assert stats.reps == 40
    assert len(calls) == 1 + 1 + 5 + 40  # cold, warmup, 5 estimate calls, reps
    assert stats.median_us == 50.0


def test_bad_arguments():
    clock = FakeClock()
    with pytest.raises(ValueError, match="allowed: per_call_events, back_to_back_flushed, cuda_graph"):
        benchmark(lambda: None, "do_bench", clock=clock)
    with pytest.raises(ValueError, match="reps=0"):
        benchmark(lambda: None, "per_call_events", reps=0, clock=clock)


def test_measure_copy_counts_read_and_write_bytes():
    clock = FakeClock(tick_us=100.0)  # every copy takes 100 us on the fake clock
    clock.device = "cpu"
    gbps = timing.measure_copy_gbps(bytes=1 << 20, reps=3, clock=clock)
    assert gbps == pytest.approx(2 * (1 << 20) / 100e-6 / 1e9)


def test_median_ci_and_relative_half_width():
    samples = [float(v) for v in range(1, 101)]  # median 50.5; the 95 % interval is the 40th and 61st values
    assert timing.median_ci(samples) == (40.0, 61.0)
    assert timing.relative_ci_half_width(samples) == pytest.approx(10.5 / 50.5)
    assert timing.relative_ci_half_width([5.0] * 7) == 0.0
    assert timing.relative_ci_half_width([5.0]) == math.inf
    with pytest.raises(ValueError, match="no samples"):
        timing.median_ci([])


def test_adaptive_reps_stop_once_the_median_is_stable():
    clock = FakeClock()
    fn, calls = timed_fn(clock, [50.0])  # constant: the CI is 0 after the first batch
    stats = benchmark(fn, "per_call_events", warmup=0, clock=clock, min_reps=10, max_reps=1000)
    assert stats.reps == 10 and len(calls) == 1 + 10
    assert stats.median_us == 50.0


def test_adaptive_reps_grow_while_noisy_and_stop_at_max_reps_or_budget():
    clock = FakeClock()
    noisy = [10.0, 30.0] * 1000  # two values: the median's CI spans both forever
    fn, calls = timed_fn(clock, [1.0] + noisy)
    stats = benchmark(fn, "per_call_events", warmup=0, clock=clock, min_reps=10, max_reps=100, budget_ms=1e9)
    assert stats.reps == 100  # never stable: max_reps
    clock = FakeClock()
    fn, calls = timed_fn(clock, [1.0] + noisy)
    stats = benchmark(fn, "per_call_events", warmup=0, clock=clock, min_reps=10, max_reps=1000, budget_ms=0.5)
    # 20 us per call on average: batches of max(10, n // 2) reach 0.2, 0.4, 0.6 ms; 0.6 >= 0.5 ms stops at 30
    assert stats.reps == 30


def test_adaptive_cuda_graph_counts_calls_and_takes_min_samples_replays():
    clock = FakeClock()
    fn, calls = timed_fn(clock, [4.0])
    stats = benchmark(fn, "cuda_graph", warmup=0, clock=clock, min_reps=10, graph_calls=10, first_call_s=0.0)
    assert stats.reps == timing.MIN_SAMPLES * 10 and stats.median_us == 4.0
    assert clock.replays == 1 + timing.MIN_SAMPLES


def test_warmup_is_cut_short_after_warmup_ms():
    clock = FakeClock()
    fn, calls = timed_fn(clock, [2000.0])  # 2 ms calls: 25 warmups would be 50 ms
    benchmark(fn, "per_call_events", warmup=25, clock=clock, reps=1, first_call_s=0.0, warmup_ms=15.0)
    assert len(calls) == 10 + 1  # two chunks of 5 (10 ms, then 20 ms >= 15 ms), then one rep
    clock = FakeClock()
    fn, calls = timed_fn(clock, [2000.0])
    benchmark(fn, "per_call_events", warmup=25, clock=clock, reps=1, first_call_s=0.0, warmup_ms=None)
    assert len(calls) == 25 + 1
