"""Sweep speed (issue 37 item 5): pruning of clearly slower configs, phase progress with an ETA from measured
per-phase cost, `--no-prune`, and the `pruned` results column (old files load with it False). No wall-clock
assertions: clocks are fake, the workloads synthetic."""

from __future__ import annotations

import io
import random

import pandas as pd
import pytest
import torch

from blockscope.profiling.cli import measure as cli_measure
from blockscope.profiling.measure import precompile, sweep, timing
from blockscope.profiling.measure.progress import EtaEstimator, SweepStatus
from blockscope.profiling.measure.sweep import PruneBoard, make_config
from blockscope.profiling.measure.timing import FakeClock, clearly_slower
from blockscope.profiling.results import empty_results, load_results, normalize, save_results
from tests.test_sweep import ENV, fake_facts, fake_tracer


def noisy(center_us: float, n: int, spread: float = 0.03, seed: int = 1) -> list[float]:
    rng = random.Random(seed)
    return [center_us * (1 + rng.uniform(-spread, spread)) for _ in range(n)]


# ------------------------------------------------------------------ the pruning rule (pure)


def test_a_clearly_slower_config_is_pruned_and_an_overlapping_one_is_not():
    best = timing.median_ci(noisy(100.0, 200))
    assert clearly_slower(noisy(150.0, 10), best)  # 1.5x the best: separated at once
    assert not clearly_slower(noisy(105.0, 200), best)  # within the margin: sampled in full
    assert not clearly_slower(noisy(150.0, 4), best)  # too few samples yet
    assert not clearly_slower(noisy(150.0, 10), None)  # no best yet
    assert not clearly_slower(noisy(150.0, 10), best, margin=0.6)  # a wider margin keeps it


def test_wide_samples_are_not_pruned_even_with_a_slower_median():
    best = timing.median_ci(noisy(100.0, 200))
    wide = noisy(130.0, 10, spread=0.5)  # median above, but the CI reaches below the best's upper bound x 1.1
    assert not clearly_slower(wide, best)


def test_the_best_is_never_pruned():
    rng = random.Random(7)
    board = PruneBoard()
    configs = [make_config(v, "fp16", 4096, 1000) for v in ("online", "teaching", "multirow", "splitrow")]
    centers = {"online": 160.0, "teaching": 100.0, "multirow": 101.0, "splitrow": 300.0}
    pruned = {}
    for config in configs:  # a later config that is faster than the best so far is never stopped
        stop = board.stop_for(config, "per_call_events")
        samples: list[float] = []
        while len(samples) < 400:
            samples += [centers[config.variant] * (1 + rng.uniform(-0.02, 0.02)) for _ in range(10)]
            if stop(samples):
                break
        stats = timing.summarize("per_call_events", samples, 0.0, pruned=stop(samples))
        pruned[config.variant] = stats.pruned
        board.record(config, "per_call_events", stats)
    assert pruned == {"online": False, "teaching": False, "multirow": False, "splitrow": True}
    assert board.best(configs[0], "per_call_events")[0] == pytest.approx(100.0, rel=0.03)


def test_groups_keep_peers_and_methods_apart():
    ours, torch_row = make_config("online", "fp16", 64, 128), make_config("torch", "fp16", 64, 128)
    assert sweep.prune_group("online") == sweep.prune_group("teaching") == "blockscope"
    assert sweep.prune_group("torch") == "torch"
    assert PruneBoard.group(ours, "cuda_graph") != PruneBoard.group(ours, "per_call_events")
    assert PruneBoard.group(ours, "cuda_graph") != PruneBoard.group(torch_row, "cuda_graph")
    with pytest.raises(ValueError, match="allowed: a number >= 0"):
        PruneBoard(margin=-1)


def test_benchmark_stops_and_marks_the_stats_pruned():
    clock = FakeClock()
    rng = random.Random(3)

    def fn():
        clock.advance(200.0 * (1 + rng.uniform(-0.05, 0.05)))

    best = (100.0, 99.0, 101.0)
    stats = timing.benchmark(
        fn, "per_call_events", warmup=0, clock=clock, first_call_s=0.0, stop=lambda s: clearly_slower(s, best[1:])
    )
    assert stats.pruned and stats.reps == timing.DEFAULT_MIN_REPS
    assert stats.ci_lo_us <= stats.median_us <= stats.ci_hi_us
    full = timing.benchmark(fn, "per_call_events", warmup=0, clock=clock, first_call_s=0.0)
    assert not full.pruned and full.reps > stats.reps


# ------------------------------------------------------------------ pruning in a sweep (CPU, synthetic costs)


COST_US = {"teaching": 100.0, "online": 400.0, "torch": 600.0}


def cost_sweep(monkeypatch, **kw):
    clock = FakeClock()
    rng = random.Random(11)

    def fake_callable(config, x):
        def fn():
            clock.advance(COST_US[config.variant] * (1 + rng.uniform(-0.05, 0.05)))
            return torch.softmax(x.float(), dim=-1).to(x.dtype)

        return fn

    monkeypatch.setattr(sweep, "backend_callable", fake_callable)
    configs = [make_config(v, "fp32", 4, 100) for v in ("teaching", "online", "torch")]
    return sweep.run_sweep(
        configs,
        methods=["per_call_events", "cuda_graph"],
        clock=clock,
        device="cpu",
        env=ENV,
        warmup=0,
        graph_calls=2,
        compile_facts=fake_facts,
        tracer=fake_tracer,
        **kw,
    )


def test_a_sweep_prunes_the_slower_variant_and_never_the_best_or_a_peer(monkeypatch):
    table = cost_sweep(monkeypatch)
    assert (table["error"] == "").all() and len(table) == 6
    pruned = table.groupby("variant")["pruned"].all()
    assert pruned.to_dict() == {"online": True, "teaching": False, "torch": False}
    online = table[table["variant"] == "online"]
    teaching = table[table["variant"] == "teaching"]
    assert (online["reps"].to_numpy() < teaching["reps"].to_numpy()).all()
    assert online["median_us"].gt(300).all()  # statistics from the samples it has
    assert table.attrs["sweep"]["pruned_rows"] == 2


def test_prune_false_samples_every_config_in_full(monkeypatch):
    table = cost_sweep(monkeypatch, prune=False)
    assert not table["pruned"].any()
    assert table.attrs["sweep"]["pruned_rows"] == 0


# ------------------------------------------------------------------ ETA


def test_eta_is_within_25_percent_on_a_steady_synthetic_workload():
    now = [0.0]
    compile_s, config_s, n = 0.05, 0.12, 400  # 16 workers' throughput per config; timing per config
    eta = EtaEstimator({"precompile": n, "timing": n}, prior_s={"precompile": 0.5, "timing": 1.0}, now=lambda: now[0])
    truth_total = n * compile_s + n * config_s
    eta.begin("precompile")
    for done in range(1, n + 1):
        now[0] += compile_s * (1 + 0.3 * ((done % 7) - 3) / 3)  # jitter, mean compile_s
        eta.advance("precompile", done)
        if done >= n // 10:
            true_left = truth_total - now[0]
            left = eta.eta_s()
            # compile left is measured; timing still on its prior (1 s/config) until it starts
            assert left is not None and abs(eta.phase_left_s()["precompile"] - (n - done) * compile_s) <= max(
                0.25 * (n - done) * compile_s, 0.5
            ), (done, left, true_left)
    eta.begin("timing")
    for done in range(1, n + 1):
        now[0] += config_s * (1 + 0.3 * ((done % 5) - 2) / 2)
        eta.advance("timing", done)
        if n // 20 <= done <= n - n // 10:  # a few configs left: one config's jitter is the whole truth
            true_left = truth_total - now[0]
            assert abs(eta.eta_s() - true_left) <= 0.25 * true_left, (done, eta.eta_s(), true_left)
    assert eta.phase_left_s()["precompile"] == 0.0


def test_a_backends_one_off_start_up_does_not_inflate_the_time_left():
    """The sweep reports each backend's first call (imports, torch.compile's start-up: 3 s for Inductor on the H200,
    2026-12-04 sweep-speed log, where the time left jumped to 26-36 min) as one-off: the rate leaves it out."""
    now = [0.0]
    n, config_s = 400, 0.12
    plain = EtaEstimator({"timing": n}, prior_s={"timing": 1.0}, now=lambda: now[0])
    told = EtaEstimator({"timing": n}, prior_s={"timing": 1.0}, now=lambda: now[0])
    for eta in (plain, told):
        eta.begin("timing")
    for done in range(1, n // 10 + 1):
        now[0] += config_s + (3.0 if done == 2 else 0.0)
        plain.advance("timing", done)
        told.advance("timing", done)
        if done == 2:
            told.add_one_off("timing", 3.0)
        true_left = (n - done) * config_s
        if done >= n // 20:
            assert abs(told.eta_s() - true_left) <= 0.05 * true_left, (done, told.eta_s(), true_left)
    assert plain.eta_s() > 1.5 * told.eta_s()  # unreported, the start-up still inflates it at 10 %
    told.add_one_off("timing", -5.0)  # never negative
    assert told.rate_s("timing") == pytest.approx(config_s)


def test_eta_is_none_until_a_phase_without_prior_has_measured():
    now = [0.0]
    eta = EtaEstimator({"timing": 10}, prior_s={"timing": None}, now=lambda: now[0])
    assert eta.eta_s() is None
    eta.begin("timing")
    now[0] = 2.0
    eta.advance("timing", 4)
    assert eta.eta_s() == pytest.approx(3.0)
    status = eta.status("timing", 4, 10, "teaching fp16 R=4096 N=1000")
    assert status.text() == "timing configs: 4/10, 2 s elapsed, about 3 s left"
    assert status.fraction() == 0.4


def test_status_text_names_the_phase_and_splits_time_left():
    status = SweepStatus("precompile", 37, 1602, 12.0, 130.0, {"precompile": 90.0, "timing": 40.0}, workers=16)
    assert status.text() == (
        "compiling 1602 configs in parallel (16 workers): 37/1602, 12 s elapsed, about 2 min 10 s left "
        "(compile 1 min 30 s, timing 40 s)"
    )
    assert SweepStatus("timing", 3, 9, 1.0, None).text().endswith("estimating time left")


def test_predicted_weights_grow_with_bytes_and_cap():
    small = sweep.predicted_config_weight(make_config("teaching", "fp16", 4096, 128), 3)
    big = sweep.predicted_config_weight(make_config("teaching", "fp32", 4096, 262144), 3)
    assert 0 < small < big <= 0.06 + 3 * (timing.DEFAULT_BUDGET_MS + timing.DEFAULT_WARMUP_MS) / 1000
    assert sweep.predicted_seconds([make_config("teaching", "fp16", 4096, 128)] * 10) > 10 * small


# ------------------------------------------------------------------ progress before the first config finishes


def test_phases_are_reported_before_the_first_config_finishes(monkeypatch):
    events: list = []

    def fake_precompile(configs, workers, *, on_progress=None, **kw):
        events.append("compile started")
        for done in range(len(configs) + 1):
            on_progress(done, len(configs))
        return precompile.PrecompileReport(compiled=len(configs), workers=workers)

    monkeypatch.setattr(precompile, "precompile", fake_precompile)
    configs = [make_config("teaching", "fp32", 4, 100), make_config("online", "fp32", 4, 100)]
    sweep.run_sweep(
        configs,
        methods=["per_call_events"],
        clock=FakeClock(tick_us=5.0),
        device="cpu",
        env=ENV,
        warmup=0,
        reps=2,
        compile_workers=2,
        compile_facts=fake_facts,
        tracer=fake_tracer,
        status=lambda s: events.append((s.phase, s.done, s.total)),
        progress=lambda done, total, config: events.append(("config done", done)),
    )
    first_done = events.index(("config done", 1))
    before = events[:first_done]
    assert before[0] == ("precompile", 0, 2)  # at once, before any compile finished
    assert ("precompile", 2, 2) in before and ("timing", 0, 2) in before
    assert ("trace", 0, 2) in events and events.index(("trace", 0, 2)) > events.index(("config done", 2))


def test_precompile_reports_progress_per_task():
    from tests.test_precompile import fake_task

    groups = [[make_config("teaching", "fp16", 4, n) for n in (128, 256, 512)], [make_config("online", "fp16", 4, 128)]]
    seen: list[tuple[int, int]] = []
    report = precompile.run_precompile(
        groups, mode="offline", task=fake_task, timeout_s=120, chunk=1, on_progress=lambda d, t: seen.append((d, t))
    )
    assert report.compiled == 4 and report.workers == 2
    assert seen[0] == (0, 4) and seen[-1] == (4, 4)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    with pytest.raises(ValueError, match="allowed: an integer >= 1"):
        precompile.run_precompile(groups, chunk=0)


# ------------------------------------------------------------------ CLI


def parse(argv):
    from blockscope.profiling.cli import Parser

    parser = Parser(prog="test")
    cli_measure.register(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)


@pytest.mark.parametrize(("flag", "prune"), [([], True), (["--no-prune"], False)])
def test_cli_prunes_by_default_and_no_prune_is_honoured(tmp_path, monkeypatch, flag, prune):
    seen = {}

    def fake_run_sweep(configs, **kw):
        seen.update(kw)
        kw["status"](SweepStatus("precompile", 0, len(configs), 0.0, None, workers=2))
        return empty_results()

    monkeypatch.setattr(cli_measure, "require_cuda", lambda command: None)
    monkeypatch.setattr(sweep, "run_sweep", fake_run_sweep)
    args = parse(["sweep", "--out", str(tmp_path / "x.parquet"), "--variants", "torch", "--n", "128", *flag])
    assert cli_measure.run_sweep_command(args) == 0
    assert seen["prune"] is prune and callable(seen["status"])
    assert "--no-prune" in cli_measure_help()


def cli_measure_help() -> str:
    from blockscope.profiling.cli import Parser

    parser = Parser(prog="test")
    subparsers = parser.add_subparsers(dest="command")
    cli_measure.register(subparsers)
    return subparsers.choices["sweep"].format_help()


def test_cli_reporter_prints_phases_and_the_timing_eta(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_tqdm(name, *args, **kwargs):
        if name == "tqdm":
            raise ImportError("no tqdm")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tqdm)
    stream = io.StringIO()
    callback, close = cli_measure._progress_reporter(stream, every_s=1e9)
    callback.status(SweepStatus("precompile", 0, 10, 0.5, None, workers=4))
    callback.status(SweepStatus("precompile", 5, 10, 3.0, None, workers=4))  # throttled
    callback.status(SweepStatus("precompile", 10, 10, 6.0, 20.0, {"timing": 20.0}, workers=4))
    callback.status(SweepStatus("timing", 0, 3, 6.0, 20.0, {"timing": 20.0}))
    callback.status(SweepStatus("timing", 1, 3, 9.0, 14.0, {"timing": 14.0}))
    callback(1, 3, make_config("teaching", "fp16", 4096, 1000))
    close()
    lines = stream.getvalue().splitlines()
    assert lines == [
        "[compiling 10 configs in parallel (4 workers): 0/10, 0 s elapsed, estimating time left]",
        "[compiling 10 configs in parallel (4 workers): 10/10, 6 s elapsed, about 20 s left]",
        "[timing configs: 0/3, 6 s elapsed, about 20 s left]",
        "[timing configs: 1/3, 9 s elapsed, about 14 s left] teaching fp16 R=4096 N=1000",
    ]


# ------------------------------------------------------------------ schema


def test_old_files_without_the_pruned_column_load_with_it_false(tmp_path):
    row = {
        "variant": "torch",
        "dtype": "fp16",
        "n_rows": 4,
        "n_cols": 8,
        "method": "per_call_events",
        "median_us": 5.0,
        "error": "",
    }
    old = pd.DataFrame([row])
    for suffix in (".csv", ".parquet"):
        path = tmp_path / f"old{suffix}"
        if suffix == ".csv":
            old.to_csv(path, index=False)
        else:
            old.to_parquet(path, index=False)
        loaded = load_results(path)
        assert str(loaded["pruned"].dtype) == "boolean" and loaded["pruned"].tolist() == [False]
    table = normalize(pd.DataFrame([{**row, "pruned": True}, {**row, "n_cols": 16, "pruned": None}]))
    for suffix in (".csv", ".parquet"):
        back = load_results(save_results(table, tmp_path / f"new{suffix}"))
        assert back["pruned"].tolist() == [True, False]


# ------------------------------------------------------------------ trace pass: one profiler session per shape


def test_split_at_markers_gives_each_call_its_kernels():
    from blockscope.profiling.measure.trace import MARKER, split_at_markers

    m = f"void at::native::{MARKER}(long)"
    events = [(m, 0.0), (m, 1.0), ("a_kernel", 5.0), ("b_kernel", 6.0), (m, 7.0), ("c_kernel", 9.0), (m, 10.0)]
    shuffled = events[::-1]  # the profiler's event order does not matter, start times do
    assert split_at_markers(shuffled, calls=2, pad=2) == [["a_kernel", "b_kernel"], ["c_kernel"]]
    assert split_at_markers(events, calls=3, pad=2) is None  # marker count off
    assert split_at_markers([(m, 0.0), (m, 1.0), (m, 2.0)], calls=2, pad=1) is None  # a call with no kernel
    assert split_at_markers([("x", 0.0), (m, 1.0), ("a", 2.0), (m, 3.0)], calls=1, pad=1) is None  # kernel in the pad


def test_trace_pass_names_a_shapes_configs_in_one_batch_and_falls_back_one_by_one():
    configs = [make_config(v, "fp32", 4, n) for n in (100, 200) for v in ("teaching", "torch")]
    batches, single = [], []

    def batch_tracer(fns):
        batches.append(len(fns))
        if len(batches) == 2:
            return None  # the second shape's trace is not separable: traced one by one
        return [[f"kernel_{i}"] for i in range(len(fns))]

    def tracer(fn):
        single.append(fn)
        return ["one_by_one"]

    table = sweep.run_sweep(
        configs,
        methods=["per_call_events"],
        clock=FakeClock(tick_us=5.0),
        device="cpu",
        env=ENV,
        warmup=0,
        reps=2,
        compile_facts=fake_facts,
        tracer=tracer,
        batch_tracer=batch_tracer,
    )
    assert batches == [2, 2] and len(single) == 2
    names = dict(zip(zip(table["variant"], table["n_cols"], strict=True), table["kernel_names"], strict=True))
    assert {names[("teaching", 100)], names[("torch", 100)]} == {"kernel_0", "kernel_1"}
    assert names[("teaching", 200)] == names[("torch", 200)] == "one_by_one"


def test_later_methods_of_a_config_warm_up_with_one_chunk(monkeypatch):
    calls = []

    def fake_callable(config, x):
        def fn():
            calls.append(1)
            return torch.softmax(x.float(), dim=-1).to(x.dtype)

        return fn

    monkeypatch.setattr(sweep, "backend_callable", fake_callable)
    sweep.run_sweep(
        [make_config("torch", "fp32", 4, 100)],
        methods=["per_call_events", "back_to_back_flushed"],
        clock=FakeClock(tick_us=5.0),
        device="cpu",
        env=ENV,
        warmup=25,
        reps=2,
        compile_facts=fake_facts,
        tracer=None,
        trace=False,
    )
    assert len(calls) == 1 + 25 + 2 + timing.WARMUP_CHUNK + 2  # first call, warmup + reps, one chunk + reps


# ------------------------------------------------------------------ back_to_back_flushed: the hold adapts


def test_later_batches_hold_for_the_measured_queueing_time_and_a_starved_batch_is_redone():
    clock = FakeClock()
    cost = [1.0]

    def fn():
        clock.advance(cost[0])  # the fake clock's wall moves with it: the host's queueing time

    hold = timing.HoldState()
    first = timing._back_to_back(fn, clock, 10, hold)
    assert len(first) == 10 and clock.held_us == pytest.approx(10 * timing.HOLD_US_PER_REP)
    assert timing.MIN_HOLD_US_PER_REP <= hold.us_per_rep < timing.HOLD_US_PER_REP  # ~2.5 x 1 us, at least the floor
    held = clock.held_us
    timing._back_to_back(fn, clock, 10, hold)
    assert clock.held_us - held == pytest.approx(10 * timing.MIN_HOLD_US_PER_REP)  # a short hold now
    cost[0] = 100.0  # the host slows down: queueing outlasts the short hold, so the batch is taken again
    holds = clock.holds
    again = timing._back_to_back(fn, clock, 10, hold)
    assert len(again) == 10 and hold.redone == 1 and clock.holds == holds + 2
    assert hold.us_per_rep == timing.HOLD_US_PER_REP


def test_cli_report_counts_pruned_rows():
    lines = cli_measure.sweep_report_lines({"pruned_rows": 7})
    assert lines == [
        "pruned: 7 rows stopped sampling early, clearly slower than their group's best (pruned=True; --no-prune "
        "samples every config in full)"
    ]
    assert cli_measure.sweep_report_lines({"pruned_rows": 0}) == []


def test_cli_reporter_prints_a_phase_end_once():
    stream = io.StringIO()
    callback, close = cli_measure._progress_reporter(stream, every_s=1e9)
    for _ in range(3):
        callback.status(SweepStatus("trace", 6, 6, 4.0, 0.0))
    close()
    assert stream.getvalue().count("naming kernels") == 1
