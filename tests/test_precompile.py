"""Compiling ahead of timing: the pure plan (which configs, grouped per worker) and the worker pool (CPU: offline
compiles for sm_90 in 2 spawned workers fill Triton's cache; a crashing worker is reported, never raised)."""

from __future__ import annotations

import os

import pytest

from blockscope.profiling.cli.measure import sweep_report_lines
from blockscope.profiling.measure import precompile, sweep
from blockscope.profiling.measure.precompile import compile_key, plan_precompile, run_precompile
from blockscope.profiling.measure.sweep import make_config


def test_plan_compiles_each_kernel_specialization_once_and_never_torch():
    configs = [
        make_config("torch", "fp16", 4096, 1000),
        make_config("online", "fp16", 4096, 1000),
        make_config("online", "fp16", 4096, 1001),  # one kernel
        make_config("online", "fp16", 4096, 1024),  # N divisible by 16: another specialization
        make_config("online", "fp32", 4096, 1000),  # another dtype
        make_config("teaching", "fp16", 4096, 1000),
        make_config("teaching", "fp16", 4096, 1001),  # N constexpr
        make_config("teaching", "fp16", 4096, 65536, num_warps=1),
    ]  # skipped by the sweep: never compiled
    groups = plan_precompile(configs, 8, max_lanes_per_thread=sweep.DEFAULT_MAX_LANES_PER_THREAD)
    chosen = [c for group in groups for c in group]
    assert sorted((c.variant, c.dtype, c.n_cols) for c in chosen) == [
        ("online", "fp16", 1000),
        ("online", "fp16", 1024),
        ("online", "fp32", 1000),
        ("teaching", "fp16", 1000),
        ("teaching", "fp16", 1001),
    ]
    assert len(groups) == 5 and all(len(g) == 1 for g in groups)  # spread over the workers
    assert compile_key(configs[0], None) is None
    plan = sweep.resolve_plan(configs[1])
    assert compile_key(configs[1], plan) == compile_key(configs[2], sweep.resolve_plan(configs[2]))


def test_plan_groups_are_balanced_and_heavy_inputs_split_by_free_memory():
    light = [make_config("teaching", "fp16", 64, n) for n in (128, 256, 512, 1024, 2048, 4096, 8192, 16384)]
    heavy = [make_config("inductor", "fp32", 4096, n) for n in (65536, 131072, 262144)]  # >= 2 GiB, per shape
    groups = plan_precompile(light + heavy, 4)  # free memory unknown: one heavy group
    assert len(groups) == 4
    assert sorted(groups[0], key=lambda c: c.n_cols) == heavy  # one task: one heavy input on the GPU at a time
    assert sorted(len(g) for g in groups[1:]) == [2, 3, 3]
    assert len(plan_precompile(light + heavy, 1)) == 1 and plan_precompile(light + heavy, 1)[0][-3:] == heavy
    # 141 GB free: heavy groups run side by side, as many as fit beside the light workers (at most 4)
    roomy = plan_precompile(light + heavy, 8, free_bytes=141 * 10**9)
    assert sorted(len(g) for g in roomy if g[0].variant == "inductor") == [1, 1, 1]
    assert precompile.heavy_group_count(141 * 10**9, 8 * 2**30, 16) == 4
    assert precompile.heavy_group_count(24 * 10**9, 8 * 2**30, 4) == 1  # a small GPU: one at a time
    assert precompile.heavy_group_count(None, 8 * 2**30, 16) == 1
    two = plan_precompile(light + heavy, 2, free_bytes=141 * 10**9)  # never more groups than workers
    assert len(two) == 2 and sorted(len(g) for g in two) == [3, 8]
    # of configs sharing a kernel, the one with the smallest input is compiled (less worker memory)
    same = [make_config("online", "fp32", 4096, 262144), make_config("online", "fp32", 64, 262144)]
    assert plan_precompile(same, 2) == [[make_config("online", "fp32", 16, 262144)]]
    with pytest.raises(ValueError, match="allowed: an integer >= 1"):
        plan_precompile(light, 0)


def test_a_triton_config_compiles_on_a_stand_in_with_the_same_kernel():
    """A 4 GiB Triton config compiles on 16 rows (same compile key: the kernel does not depend on R); a config whose
    R specializes differently (4097 is not a multiple of 16, multirow passes n_rows) or a peer keeps its own."""
    for config in (make_config("online", "fp32", 4096, 262144), make_config("teaching", "fp16", 4097, 1000)):
        key = compile_key(config, sweep.resolve_plan(config))
        small = precompile.stand_in(config, key)
        assert small.n_rows == 16 and small.n_cols == config.n_cols
        assert compile_key(small, sweep.resolve_plan(small)) == key
    odd = make_config("multirow", "fp16", 4097, 1000)
    assert precompile.stand_in(odd, compile_key(odd, sweep.resolve_plan(odd))) == odd
    auto = make_config("auto", "fp16", 4096, 65536)  # compiles as its pick, never as auto at 16 rows
    plan = sweep.resolve_plan(auto)
    small = precompile.stand_in(auto, compile_key(auto, plan))
    assert (small.variant, small.n_rows, small.tunables_dict) == (plan.variant, 16, plan.tunables)
    peer = make_config("inductor", "fp32", 4096, 262144)
    assert precompile.stand_in(peer, compile_key(peer, None)) == peer
    assert plan_precompile([make_config("online", "fp32", 4096, 262144)], 4) == [
        [make_config("online", "fp32", 16, 262144)]
    ]


def test_failure_reasons_are_counted_most_common_first():
    report = precompile.PrecompileReport(
        failed={"a": "OutOfMemoryError: CUDA out of memory", "b": "OutOfMemoryError: CUDA out of memory", "c": "x"}
    )
    assert report.failure_reasons() == [("OutOfMemoryError: CUDA out of memory", 2), ("x", 1)]


def fake_task(configs, mode, arch, gpu_name):
    """A worker task for the tests: labels back, or the worker dies at N=666 (as a segfaulting compile would)."""
    if any(c.n_cols == 666 for c in configs):
        os._exit(3)
    return [{"label": c.label(), "key": ("k", c.n_cols), "facts": {"n_regs": 32}, "error": ""} for c in configs]


def test_a_crashing_worker_is_reported_and_the_rest_is_kept():
    groups = [[make_config("teaching", "fp16", 4, 128)], [make_config("teaching", "fp16", 4, 666)]]
    report = run_precompile(groups, mode="offline", task=fake_task, timeout_s=120)
    assert report.broken  # the pool broke; nothing raised
    assert "teaching fp16 R=4 N=666" in report.failed
    assert report.compiled + len(report.failed) == 2
    with pytest.raises(ValueError, match="allowed: 'run'"):
        run_precompile(groups, mode="gpu")


def test_workers_start_when_main_is_a_script_that_must_not_rerun(tmp_path, monkeypatch):
    """Streamlit runs a page as `__main__` (its file set): spawned workers used to re-run it and die, breaking the
    pool (a live sweep from the Run sweep page, or warm after an AppTest in one pytest process)."""
    import sys
    import types

    page = tmp_path / "page.py"
    page.write_text("raise SystemExit('a page script must not run in a compile worker')\n")
    main = types.ModuleType("__main__")
    main.__file__ = str(page)
    monkeypatch.setitem(sys.modules, "__main__", main)
    groups = [[make_config("teaching", "fp16", 4, 128)], [make_config("teaching", "fp16", 4, 256)]]
    report = run_precompile(groups, mode="offline", task=fake_task, timeout_s=120)
    assert not report.broken and not report.failed, (report.broken, report.failed)
    assert report.compiled == 2 and sys.modules["__main__"] is main


def test_offline_compiles_in_two_workers_fill_the_triton_cache(tmp_path):
    triton_cache, facts_cache = tmp_path / "triton", tmp_path / "blockscope"
    configs = [make_config("teaching", "fp16", 64, 128), make_config("multirow", "fp32", 64, 256)]
    groups = plan_precompile(configs, 2)
    assert len(groups) == 2
    report = run_precompile(
        groups,
        mode="offline",
        arch="sm_90",
        timeout_s=240,
        env={"TRITON_CACHE_DIR": str(triton_cache), "BLOCKSCOPE_CACHE_DIR": str(facts_cache)},
    )
    assert not report.broken and not report.failed, (report.broken, report.failed)
    assert report.compiled == 2 and report.workers == 2
    assert any(triton_cache.rglob("*.cubin")) or any(triton_cache.rglob("*.json"))  # Triton's on-disk cache
    assert len(list((facts_cache / "compiled").glob("*.json"))) == 2  # the compile facts' own cache
    for config in configs:  # the facts come back keyed as the sweep's in-process cache
        key = sweep.compile_facts_key(config, sweep.resolve_plan(config), "sm_90")
        assert report.facts[key]["n_regs"] > 0 and report.facts[key]["blocks_per_sm"] >= 1


def test_default_workers_is_at_most_16():
    assert 1 <= precompile.default_workers() <= 16


def test_sweep_with_compile_workers_reports_the_warm_up(tmp_path, monkeypatch):
    from blockscope.profiling.measure.timing import FakeClock
    from tests.test_sweep import ENV, FAST, fake_facts, fake_tracer

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.setenv("BLOCKSCOPE_CACHE_DIR", str(tmp_path / "blockscope"))
    configs = [make_config("teaching", "fp16", 4, 128), make_config("torch", "fp16", 4, 128)]
    table = sweep.run_sweep(
        configs,
        methods=["per_call_events"],
        clock=FakeClock(tick_us=5.0),
        compile_workers=2,
        compile_facts=fake_facts,
        tracer=fake_tracer,
        **FAST,
    )
    info = table.attrs["sweep"]
    assert info["precompile"]["compiled"] == 1 and info["precompile"]["workers"] == 1  # torch compiles nothing
    assert {"precompile", "inputs", "first_call", "check", "timing per_call_events"} <= set(info["phase_s"])
    assert info["first_calls"] == {"first_call": 2}  # the teaching kernel warmed; torch compiles nothing
    assert len(info["slowest_first_calls"]) == 2 and info["slowest_first_calls"][0][1].endswith("[first_call]")
    lines = sweep_report_lines(info)
    assert any(line.startswith("slowest first calls: ") for line in lines), lines
    assert info["precompile"]["failed_reasons"] == [] and info["precompile"]["no_facts"] == 0
    assert (table["error"] == "").all() and len(table) == 2
    assert ENV["run_id"] in set(table["run_id"])


@pytest.mark.gpu
def test_gpu_workers_fill_the_cache_and_the_facts_match_in_process():
    configs = [make_config(v, "fp16", 4096, n) for v in ("teaching", "online", "multirow") for n in (1000, 4096)]
    groups = plan_precompile(configs, 2)
    report = run_precompile(groups, mode="run", timeout_s=300)
    assert not report.broken and not report.failed, (report.broken, report.failed)
    for config in configs:
        plan = sweep.resolve_plan(config)
        key = sweep.compile_facts_key(config, plan, None)
        assert key in report.facts
        sweep._COMPILE_CACHE.pop(key, None)
        here = sweep.default_compile_facts(config, plan, None)
        assert here["n_regs"] == report.facts[key]["n_regs"]
        assert here["blocks_per_sm"] == report.facts[key]["blocks_per_sm"]


@pytest.mark.gpu
def test_gpu_sweep_with_workers_adaptive_reps_and_a_kept_trace(tmp_path):
    from blockscope.profiling.measure.trace import chrome_trace_kernels, read_trace_index

    configs = [make_config("teaching", "fp16", 4096, 1000), make_config("torch", "fp16", 4096, 1000)]
    out = tmp_path / "gpu.parquet"
    table = sweep.run_sweep(configs, out=out, compile_workers=2, trace_configs=configs[:1])
    assert (table["error"] == "").all() and len(table) == 6
    assert table["reps"].between(10, 1000).all()
    assert table["kernel_revision"].str.contains("@triton-").all()
    entries = read_trace_index(tmp_path / "gpu_traces")
    assert len(entries) == 1
    names = [r.name for r in chrome_trace_kernels(entries[0]["path"])]
    assert any("row_softmax" in name for name in names), names
