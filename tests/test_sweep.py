"""Sweep runner on tiny CPU tensors (Triton interpreter) with a fake clock, tracer and compile facts."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest
import torch

from blockscope import kernels
from blockscope.profiling.measure import sweep
from blockscope.profiling.measure.sweep import Config, build_configs, make_config, run_sweep
from blockscope.profiling.measure.timing import FakeClock
from blockscope.profiling.results import ResultsError, bytes_moved, load_results, save_results, validate

ENV = {
    "run_id": "test-run",
    "gpu_name": "none",
    "compute_capability": "none",
    "sm_count": None,
    "driver_version": "none",
    "torch_version": torch.__version__,
    "triton_version": "3.x",
    "copy_gbps": 100.0,
    "measured_at": "2026-11-30T21:00:00+00:00",
}
FAST = dict(device="cpu", env=ENV, warmup=0, reps=2, graph_calls=2)


def fake_facts(config, plan, arch):
    return {
        "n_regs": 40,
        "spill_store_bytes": 0,
        "spill_load_bytes": 0,
        "shared_bytes": 128,
        "blocks_per_sm": 8,
        "occupancy": 0.5,
        "limiter": "registers",
        "compile_source": "offline",
        "masked_lane_fraction": 1 - config.n_cols / plan.tile_width,
    }


def fake_tracer(fn):
    return ["row_softmax_fake", "second_kernel"]


def run(configs, clock=None, **kw):
    options = {**FAST, "compile_facts": fake_facts, "tracer": fake_tracer, **kw}
    return run_sweep(configs, clock=clock or FakeClock(tick_us=5.0, wall_tick_s=0.25), **options)


def test_default_n_values():
    values = sweep.default_n_values()
    assert values[:9] == [8, 16, 32, 64, 128, 129, 255, 256, 257]
    assert values[-4:] == [131072, 131073, 262143, 262144]
    assert {1000, 3000, 6000, 12000, 50000} <= set(values)
    assert 127 not in values and 262145 not in values
    assert len(values) == 4 + 12 * 3 - 2 + 5
    assert sweep.default_n_values(tiny=()) == values[4:]


@pytest.mark.parametrize("dtype", ["fp16", "bf16", "fp32"])
@pytest.mark.parametrize("n_cols", [8, 16, 32, 64, 128, 1000])
def test_sweep_rows_move_32_mb_at_tiny_n_only(n_cols, dtype):
    rows = sweep.sweep_rows(n_cols, dtype)
    itemsize = 4 if dtype == "fp32" else 2
    if n_cols <= 64:
        assert 2 * rows * n_cols * itemsize >= sweep.TINY_MIN_BYTES > 2 * (rows - 1) * n_cols * itemsize
    else:
        assert rows == sweep.DEFAULT_ROWS
    assert sweep.sweep_rows(8, "fp16") == 1048576 and sweep.sweep_rows(64, "fp32") == 65536
    assert sweep.sweep_rows(8, "fp16", 2**21) == 2**21  # more rows than the rule asks stay


def test_build_configs_scales_tiny_rows_only_when_asked():
    scaled = build_configs(["torch"], ["fp32", "fp16"], [16, 256], n_rows=4096, scale_tiny_rows=True)
    assert [(c.dtype, c.n_rows, c.n_cols) for c in scaled] == [
        ("fp32", 262144, 16),
        ("fp32", 4096, 256),
        ("fp16", 524288, 16),
        ("fp16", 4096, 256),
    ]
    plain = build_configs(["torch"], ["fp32"], [16], n_rows=4096)
    assert [c.n_rows for c in plain] == [4096]


def test_build_configs_respects_limits_and_axes():
    configs = build_configs(
        ["torch", "teaching", "multirow", "online"],
        ["fp16"],
        [100, 20000, 70000],
        n_rows=8,
        num_warps=[4, 8],
        tunable_grid={"tile": [64, 128]},
    )
    by = {}
    for c in configs:
        by.setdefault(c.variant, []).append(c)
    assert [c.n_cols for c in by["torch"]] == [100, 20000, 70000]
    assert sorted({c.n_cols for c in by["teaching"]}) == [100, 20000]  # max_n 65536
    assert sorted({c.n_cols for c in by["multirow"]}) == [100]  # max_n 16384
    assert len(by["teaching"]) == 2 * 2 and len(by["online"]) == 3 * 2 * 2
    assert {c.tunables for c in by["online"]} == {(("num_warps", w), ("tile", t)) for w in (4, 8) for t in (64, 128)}
    assert all(c.tunables == () for c in by["torch"])
    with pytest.raises(ValueError, match="unknown variant"):
        build_configs(["nope"], ["fp16"], [8])
    with pytest.raises(ValueError, match="unknown dtype"):
        build_configs(["torch"], ["fp8"], [8])


def test_predicted_compile_problem():
    bad = sweep.resolve_plan(make_config("teaching", "fp16", 4, 65536, num_warps=1))
    assert sweep.lanes_per_thread(bad) == 2048
    assert "2048 lanes per thread" in sweep.predicted_compile_problem(bad, 256)
    good = sweep.resolve_plan(make_config("teaching", "fp16", 4, 65536))
    assert sweep.lanes_per_thread(good) == 256 and sweep.predicted_compile_problem(good, 256) is None
    assert sweep.predicted_compile_problem(bad, None) is None


def test_rows_numbers_and_bookkeeping(tmp_path):
    configs = [
        make_config("torch", "fp32", 4, 100),
        make_config("teaching", "fp32", 4, 100),
        make_config("multirow", "fp16", 4, 8, num_warps=2),
    ]
    calls = []
    table = run(
        configs,
        methods=["per_call_events", "cuda_graph"],
        out=tmp_path / "s.parquet",
        progress=lambda done, total, config: calls.append((done, total, config)),
    )
    assert [(d, t) for d, t, _ in calls] == [(1, 3), (2, 3), (3, 3)]
    assert {c for _, _, c in calls} == set(configs)
    assert len(table) == 6 and (table["error"] == "").all()
    validate(table)
    per_call = table[table["method"] == "per_call_events"]
    graph = table[table["method"] == "cuda_graph"]
    assert (per_call["median_us"] == 5.0).all() and (per_call["reps"] == 2).all()
    assert (graph["median_us"] == 2.5).all() and (graph["reps"] == 2).all()  # one 5 us tick over 2 calls
    assert (table["first_call_s"] == 0.25).all()
    teaching = table[(table["variant"] == "teaching") & (table["method"] == "per_call_events")].iloc[0]
    assert teaching["bytes_moved"] == bytes_moved(4, 100, "fp32") == 3200
    assert teaching["gbps"] == pytest.approx(3200 / 5e-6 / 1e9)
    assert teaching["copy_fraction"] == pytest.approx(teaching["gbps"] / 100.0)
    assert (teaching["num_warps"], teaching["tile_width"], teaching["programs"]) == (4, 128, 4)
    assert teaching["tunables"] == '{"num_warps": 4}'
    assert teaching["masked_lane_fraction"] == pytest.approx(28 / 128) and teaching["n_regs"] == 40
    assert teaching["kernel_names"] == "row_softmax_fake; second_kernel"
    torch_row = table[table["variant"] == "torch"].iloc[0]
    assert pd.isna(torch_row["num_warps"]) and pd.isna(torch_row["n_regs"]) and torch_row["tunables"] == "{}"
    multirow = table[table["variant"] == "multirow"].iloc[0]
    assert multirow["tunables"] == '{"num_warps": 2, "rows_per_program": 256}' and multirow["programs"] == 1
    assert (table["run_id"] == "test-run").all() and (table["measured_at"] == ENV["measured_at"]).all()
    pd.testing.assert_frame_equal(load_results(tmp_path / "s.parquet"), table)
    assert table.attrs["sweep"]["done"] == 3 and not table.attrs["sweep"]["cancelled"]


def test_error_rows_and_the_sweep_goes_on(monkeypatch):
    def exploding(x, **tunables):
        raise RuntimeError("out of resource: shared memory, Required: 300000, Hardware limit: 232448\nmore")

    monkeypatch.setitem(kernels.VARIANTS, "online", dataclasses.replace(kernels.VARIANTS["online"], launcher=exploding))
    monkeypatch.setattr(kernels, "torch_softmax", lambda x: torch.zeros_like(x))  # a wrong baseline
    configs = [
        make_config("online", "fp32", 4, 8),
        make_config("torch", "fp32", 4, 8),
        make_config("multirow", "fp32", 4, 1000, rows_per_program=256),  # plan rejects the tile
        make_config("teaching", "fp32", 4, 65536, num_warps=1),  # predicted pathological compile
        make_config("teaching", "fp32", 4, 8),
    ]
    table = run(configs, methods=["per_call_events", "back_to_back_flushed"])
    validate(table)
    assert len(table) == 10
    error = {(r.variant, r.n_cols): r.error for r in table[table["method"] == "per_call_events"].itertuples()}
    assert (
        error[("online", 8)] == "RuntimeError: out of resource: shared memory, Required: 300000, Hardware limit: 232448"
    )
    assert error[("torch", 8)].startswith("wrong result: 32 of 32 elements off")
    assert error[("multirow", 1000)].startswith("ValueError: multirow: rows_per_program=256 x BLOCK_SIZE=1024")
    assert error[("teaching", 65536)].startswith("skipped: predicted pathological compile time: 2048 lanes")
    assert error[("teaching", 8)] == ""
    ok = table[table["error"] == ""]
    assert len(ok) == 2 and (ok["median_us"] == 5.0).all()
    assert table[table["error"] != ""]["median_us"].isna().all()
    assert table.attrs["sweep"]["errors"] == 8


def test_failing_method_and_compile_facts_only_touch_their_own_columns():
    class NoGraphClock(FakeClock):
        def capture_graph(self, fn, calls):
            raise RuntimeError("operation not permitted when stream is capturing")

    def broken_facts(config, plan, arch):
        raise ImportError("blockscope.profiling.inspect.compiled is not there yet")

    table = run([make_config("teaching", "fp16", 4, 8)], clock=NoGraphClock(tick_us=3.0), compile_facts=broken_facts)
    by_method = table.set_index("method")
    assert by_method.loc["cuda_graph", "error"].startswith("RuntimeError: operation not permitted")
    assert by_method.loc["per_call_events", "error"] == "" and by_method.loc["per_call_events", "median_us"] == 3.0
    assert by_method.loc["back_to_back_flushed", "median_us"] == 3.0
    assert table["n_regs"].isna().all() and table["limiter"].isna().all()


def test_default_compile_facts_without_the_modules_is_na():
    config = make_config("teaching", "fp16", 4, 8)
    facts = sweep.default_compile_facts(config, sweep.resolve_plan(config), None)
    assert set(facts) == set(sweep.COMPILE_COLUMNS)
    assert sweep.default_compile_facts(make_config("torch", "fp16", 4, 8), None, None)["n_regs"] is None


def test_cancel_then_resume_from_the_output_file(tmp_path):
    out = tmp_path / "resume.csv"
    configs = [make_config(v, "fp32", 4, n) for n in (8, 16) for v in ("torch", "teaching")]
    done = []
    first = run(
        configs,
        methods=["per_call_events"],
        out=out,
        progress=lambda d, t, c: done.append(c),
        cancel=lambda: len(done) >= 2,
    )
    assert first.attrs["sweep"]["cancelled"] and len(first) == 2
    assert len(load_results(out)) == 2
    seen = []
    second = run(
        configs,
        methods=["per_call_events", "cuda_graph"],
        out=out,
        progress=lambda d, t, c: seen.append((d, t, c)),
        env={**ENV, "run_id": "second"},
    )
    info = second.attrs["sweep"]
    assert info["skipped_existing"] == 0 and info["total"] == 4  # cuda_graph missing everywhere
    assert len(second) == 2 + 2 + 4  # first run's rows kept, their missing method added, 2 new configs x 2
    keys = second[["variant", "n_cols", "method"]].apply(tuple, axis=1)
    assert not keys.duplicated().any()
    assert (second["run_id"] == "second").sum() == 6
    third = run(configs, methods=["per_call_events", "cuda_graph"], out=out, progress=lambda *a: seen.append(a))
    assert third.attrs["sweep"]["skipped_existing"] == 4 and third.attrs["sweep"]["total"] == 0
    assert len(third) == 8 and len(seen) == 4


def test_interrupt_saves_rows_already_measured(tmp_path):
    out = tmp_path / "interrupted.parquet"
    configs = [make_config("teaching", "fp32", 4, n) for n in (8, 16, 32)]

    def interrupt(done, total, config):
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(configs, methods=["per_call_events"], out=out, progress=interrupt)
    assert sorted(load_results(out)["n_cols"]) == [8, 16]
    resumed = run(configs, methods=["per_call_events"], out=out)
    assert resumed.attrs["sweep"]["skipped_existing"] == 2 and sorted(resumed["n_cols"]) == [8, 16, 32]


def test_slow_first_call_skips_heavier_configs_of_that_variant():
    configs = [
        make_config("teaching", "fp32", 4, 64),
        make_config("teaching", "fp32", 4, 128),
        make_config("teaching", "fp32", 4, 32),
        make_config("torch", "fp32", 4, 128),
    ]
    table = run(
        configs, clock=FakeClock(tick_us=1.0, wall_tick_s=40.0), methods=["per_call_events"], compile_cap_s=30.0
    )
    error = dict(zip(zip(table["variant"], table["n_cols"], strict=True), table["error"], strict=True))
    assert error[("teaching", 32)] == ""  # first (sorted by N): 0.25 lanes/thread, took 40 s
    assert error[("teaching", 64)].startswith("skipped: a config of teaching with 0.25 lanes per thread took over 30")
    assert error[("teaching", 128)].startswith("skipped")
    assert error[("torch", 128)] == ""


def test_foreign_output_file_is_not_overwritten(tmp_path):
    out = tmp_path / "notes.csv"
    out.write_text("name,score\nalice,3\n")
    with pytest.raises(ResultsError, match="header lacks column"):
        run([make_config("torch", "fp32", 4, 8)], out=out)
    assert out.read_text() == "name,score\nalice,3\n"


def test_bad_method_and_missing_clock():
    with pytest.raises(ValueError, match="unknown timing method 'wall'"):
        run([make_config("torch", "fp32", 4, 8)], methods=["wall"])
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="needs an injected clock"):
            run_sweep([make_config("torch", "fp32", 4, 8)], device="cpu", env=ENV)


def test_estimate_seconds_grows_with_work():
    small = [make_config("teaching", "fp16", 4096, 1000)]
    assert 0 < sweep.estimate_seconds(small) < 5
    big = build_configs(["teaching", "torch"], ["fp16", "fp32"], [1000, 4096, 65536])
    assert sweep.estimate_seconds(big) > sweep.estimate_seconds(small)
    skipped = [make_config("teaching", "fp16", 4096, 65536, num_warps=1)]
    assert sweep.estimate_seconds(skipped) == 0


def test_save_results_of_sweep_table_round_trips_csv(tmp_path):
    table = run(
        [make_config("persistent", "bf16", 4, 8), make_config("splitrow", "fp16", 4, 300)],
        methods=["back_to_back_flushed"],
    )
    assert (table["error"] == "").all()
    path = save_results(table, tmp_path / "t.csv")
    pd.testing.assert_frame_equal(load_results(path), table)
    assert isinstance(Config("torch", "fp16", 1, 1).label(), str)


def test_auto_that_picks_torch_runs_without_a_plan(monkeypatch):
    from blockscope.kernels import auto

    monkeypatch.setattr(auto, "choose", lambda n_rows, n_cols, dtype, gpu_name=None: ("torch", {}))
    monkeypatch.setattr(auto, "_CHOICES", {})
    config = make_config("auto", "fp32", 4, 8)
    assert sweep.resolve_plan(config) is None
    table = run([config], methods=["per_call_events"])
    row = table.iloc[0]
    assert row["error"] == "" and row["median_us"] == 5.0 and pd.isna(row["num_warps"]) and row["tunables"] == "{}"


def test_default_compile_facts_uses_the_colleague_modules(monkeypatch):
    import sys
    import types

    from blockscope.profiling import inspect as inspect_layer

    calls = {"n_inspect": 0}
    monkeypatch.setattr(sweep, "_COMPILE_CACHE", {})

    def inspect(variant, n_cols, dtype, arch=None, n_rows=None, **tunables):
        calls["n_inspect"] += 1
        calls["inspect"] = (variant, n_cols, dtype, arch, n_rows, tunables)
        return types.SimpleNamespace(
            n_regs=38, spill_store_bytes=4, spill_load_bytes=8, shared_bytes=256, source="offline", arch="sm_90"
        )

    def occupancy(arch, regs_per_thread, num_warps, shared_bytes):
        calls["occupancy"] = (arch, regs_per_thread, num_warps, shared_bytes)
        return types.SimpleNamespace(blocks_per_sm=6, occupancy=0.75, limiter="registers")

    def lane_model(variant, n_cols, n_rows=None, dtype="fp16", **tunables):
        calls["lanes"] = (variant, n_cols, n_rows, dtype, tunables)
        return types.SimpleNamespace(masked_lane_fraction=0.25)

    for name, attr, fn in (
        ("compiled", "inspect", inspect),
        ("occupancy", "occupancy", occupancy),
        ("lanes", "lane_model", lane_model),
    ):
        module = types.ModuleType(f"blockscope.profiling.inspect.{name}")
        setattr(module, attr, fn)
        monkeypatch.setitem(sys.modules, f"blockscope.profiling.inspect.{name}", module)
        monkeypatch.setattr(inspect_layer, name, module, raising=False)
    config = make_config("online", "bf16", 8, 3000, tile=1024)
    plan = sweep.resolve_plan(config)
    facts = sweep.default_compile_facts(config, plan, "sm_90")
    assert facts == {
        "n_regs": 38,
        "spill_store_bytes": 4,
        "spill_load_bytes": 8,
        "shared_bytes": 256,
        "blocks_per_sm": 6,
        "occupancy": 0.75,
        "limiter": "registers",
        "compile_source": "offline",
        "masked_lane_fraction": 0.25,
    }
    assert calls["inspect"] == (
        "online",
        3000,
        torch.bfloat16,
        "sm_90",
        8,
        {"num_warps": 4, "tile": 1024, "num_stages": 1},
    )
    assert calls["occupancy"] == ("sm_90", 38, 4, 256)
    assert calls["lanes"] == ("online", 3000, 8, torch.bfloat16, {"num_warps": 4, "tile": 1024, "num_stages": 1})
    wider = make_config("online", "bf16", 8, 3001, tile=1024)  # same kernel (N is a runtime argument)
    again = sweep.default_compile_facts(wider, sweep.resolve_plan(wider), "sm_90")
    assert again == facts and calls["n_inspect"] == 1 and calls["lanes"][1] == 3001


def test_trace_pass_runs_after_all_timing_and_fills_earlier_rows(tmp_path):
    out = tmp_path / "names.parquet"
    configs = [make_config("torch", "fp32", 4, 8), make_config("teaching", "fp32", 4, 8, num_warps=2)]

    def broken(fn):
        raise RuntimeError("CUPTI unavailable")

    first = run(configs, methods=["per_call_events"], out=out, tracer=broken)
    assert (first["error"] == "").all() and first["kernel_names"].isna().all()
    progress, traced = [], []

    def tracer(fn):
        traced.append(len(progress))
        y = fn()  # the real launcher on the regenerated input
        assert y.shape == (4, 8)
        return [f"kernel_{len(traced)}"]

    second = run(
        configs + [make_config("online", "fp32", 4, 8)],
        methods=["per_call_events"],
        out=out,
        tracer=tracer,
        progress=lambda *a: progress.append(a),
    )
    assert traced == [1, 1, 1]  # every trace after the one config timed in this run
    names = dict(zip(second["variant"], second["kernel_names"], strict=True))
    assert sorted(names.values()) == ["kernel_1", "kernel_2", "kernel_3"]
    pd.testing.assert_frame_equal(load_results(out), second)
    third = run(configs, methods=["per_call_events"], out=out, tracer=tracer)
    assert len(traced) == 3 and len(third) == 3  # nothing left to name


def test_a_signal_in_the_trace_pass_keeps_the_names_already_found(tmp_path):
    """The trace pass fills rows of the file shape by shape; a signal (SIGTERM's Stopped) in the second shape
    still saves the first shape's names, and a rerun names the rest."""
    out = tmp_path / "names.parquet"
    configs = [make_config("torch", "fp32", 4, 8), make_config("torch", "fp32", 4, 16)]
    run(configs, methods=["per_call_events"], out=out, tracer=lambda fn: (_ for _ in ()).throw(RuntimeError("no")))

    class Stopped(BaseException):
        pass

    def tracer(fn):
        fn()
        if traced:
            raise Stopped
        traced.append(1)
        return ["softmax_kernel"]

    traced: list[int] = []
    with pytest.raises(Stopped):
        run(configs, methods=["per_call_events"], out=out, tracer=tracer, save_every_s=0.0)
    saved = load_results(out).sort_values("n_cols")
    assert saved["kernel_names"].isna().tolist() == [False, True]
    assert saved["kernel_names"].iloc[0] == "softmax_kernel"
    table = run(configs, methods=["per_call_events"], out=out, tracer=lambda fn: ["softmax_kernel"])
    assert table["kernel_names"].notna().all()


def test_a_cancel_in_the_trace_pass_says_stopped_and_keeps_the_names():
    """--max-minutes passing during the trace pass: the run reports cancelled (rerun to resume), not done."""
    checks: list[int] = []

    def cancel() -> bool:  # timing (2 configs) and the first shape's names, then stop
        checks.append(1)
        return len(checks) > 4

    table = run(
        [make_config("torch", "fp32", 4, 8), make_config("torch", "fp32", 4, 16)],
        methods=["per_call_events"],
        tracer=lambda fn: ["softmax_kernel"],
        cancel=cancel,
    )
    assert table.attrs["sweep"]["cancelled"]
    assert table.sort_values("n_cols")["kernel_names"].notna().tolist() == [True, False]


def test_cancelled_sweep_skips_the_trace_pass():
    traced, checks = [], []

    def cancel() -> bool:  # let the first config run, then stop
        checks.append(1)
        return len(checks) > 1

    table = run(
        [make_config("torch", "fp32", 4, 8), make_config("torch", "fp32", 4, 16)],
        methods=["per_call_events"],
        tracer=lambda fn: traced.append(1) or ["k"],
        cancel=cancel,
    )
    assert traced == [] and len(table) == 1 and table.attrs["sweep"]["cancelled"]


def _capture_module():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "tools" / "capture_h200.py"
    spec = importlib.util.spec_from_file_location("capture_h200", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_capture_parts_and_merge(tmp_path, capsys):
    capture = _capture_module()
    part1, part2, part3 = capture.part1_configs(), capture.part2_configs(), capture.part3_configs()
    assert {c.variant for c in part1} == set(sweep.all_variants()) and {c.dtype for c in part1} == {
        "fp16",
        "bf16",
        "fp32",
    }
    assert all(c.tunables == () and c.n_rows == 4096 for c in part1)
    warps = {dict(c.tunables).get("num_warps") for c in part2 if c.variant == "teaching"}
    assert warps == {1, 2, 4, 8, 16, 32} and {c.n_cols for c in part2} == {256, 1024, 4096, 16384, 65536}
    assert {c.variant for c in part3} == {"multirow", "online", "persistent", "splitrow"}
    assert [p.name for p, _ in capture.plan_part(3, tmp_path)] == ["part1.parquet", "part3.parquet"]
    assert capture.main(["--part", "2", "--dry-run", "--out", str(tmp_path)]) == 0
    assert "part2.parquet 149 configs to run" in capsys.readouterr().out

    a = run([make_config("torch", "fp32", 4, 8), make_config("teaching", "fp32", 4, 8)], out=tmp_path / "part1.parquet")
    b = run(
        [make_config("teaching", "fp32", 4, 8), make_config("teaching", "fp32", 4, 8, num_warps=1)],
        methods=["per_call_events"],
        out=tmp_path / "part2.parquet",
        env={**ENV, "run_id": "part2"},
    )
    assert len(a) == 6 and len(b) == 2
    assert [
        c.label() for c in capture.pending(part1[:1] + [make_config("torch", "fp32", 4, 8)], tmp_path / "part1.parquet")
    ] == [part1[0].label()]
    capture.merge_parts(tmp_path, tmp_path / "merged.parquet")
    merged = load_results(tmp_path / "merged.parquet")
    assert len(merged) == 7  # teaching num_warps=4 per_call_events measured by both parts: part 1's row kept
    assert sorted(merged["run_id"]) == ["part2"] + ["test-run"] * 6
    assert "source" not in merged.columns


def test_resume_counts_only_rows_of_the_same_gpu_and_versions(tmp_path):
    """Resuming an --out file on another GPU used to skip the configs measured there and append nothing new."""
    out = tmp_path / "two_gpus.parquet"
    configs = [make_config("torch", "fp32", 4, n) for n in (8, 16)]
    gpu_a = {**ENV, "gpu_name": "GPU A", "run_id": "a"}
    first = run(configs, methods=["per_call_events"], out=out, env=gpu_a)
    assert len(first) == 2
    other_gpu = run(configs, methods=["per_call_events"], out=out, env={**gpu_a, "gpu_name": "GPU B", "run_id": "b"})
    assert other_gpu.attrs["sweep"]["skipped_existing"] == 0 and other_gpu.attrs["sweep"]["done"] == 2
    assert sorted(other_gpu["gpu_name"]) == ["GPU A", "GPU A", "GPU B", "GPU B"]  # A's rows kept
    for changed in ({"torch_version": "9.9.9"}, {"triton_version": "9.9.9"}):
        again = run(configs, methods=["per_call_events"], out=out, env={**gpu_a, **changed})
        assert again.attrs["sweep"]["done"] == 2, changed
    same = run(configs, methods=["per_call_events"], out=out, env=gpu_a)
    assert same.attrs["sweep"]["skipped_existing"] == 2 and same.attrs["sweep"]["done"] == 0
    assert len(load_results(out)) == 8
    assert len(sweep.existing_keys(load_results(out), gpu_a)) == 2
    assert len(sweep.existing_keys(load_results(out), {**gpu_a, "gpu_name": "GPU C"})) == 0


@pytest.mark.parametrize(
    "error, kind",
    [
        ("", ""),
        ("OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "transient"),
        ("RuntimeError: Triton Error [CUDA]: unspecified launch failure", "transient"),
        ("AcceleratorError: CUDA error: an illegal memory access was encountered", "transient"),
        ("RuntimeError: operation not permitted when stream is capturing", "transient"),
        ("RuntimeError: out of resource: shared memory, Required: 300000, Hardware limit: 232448", "deterministic"),
        ("OutOfResources: out of resource: shared memory", "deterministic"),
        ("ValueError: teaching: N=70000 is over this variant's limit; allowed: 1 <= N <= 65536", "deterministic"),
        ("ValueError: multirow: rows_per_program=256 x BLOCK_SIZE=1024 is over 65536 lanes", "deterministic"),
        ("skipped: predicted pathological compile time: 2048 lanes per thread", "deterministic"),
        ("wrong result: 32 of 32 elements off the float64 reference", "deterministic"),
        ("CompilationError: at 12:4: unsupported", "deterministic"),
    ],
)
def test_error_kind(error, kind):
    assert sweep.error_kind(error) == kind


def test_transient_errors_are_retried_on_resume_and_replaced(tmp_path, monkeypatch):
    """Error rows used to count as done forever, a CUDA out of memory included."""
    out = tmp_path / "retry.csv"

    def out_of_memory(x, **tunables):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    configs = [
        make_config("online", "fp32", 4, 8),
        make_config("torch", "fp32", 4, 8),
        make_config("multirow", "fp32", 4, 1000, rows_per_program=256),
    ]  # plan rejects the tile
    with monkeypatch.context() as patch:
        patch.setitem(
            kernels.VARIANTS, "online", dataclasses.replace(kernels.VARIANTS["online"], launcher=out_of_memory)
        )
        patch.setattr(kernels, "torch_softmax", lambda x: torch.zeros_like(x))  # a wrong result
        first = run(configs, methods=["per_call_events", "cuda_graph"], out=out)
    kinds = {v: sweep.error_kind(e) for v, e in zip(first["variant"], first["error"], strict=True)}
    assert kinds == {"online": "transient", "torch": "deterministic", "multirow": "deterministic"}

    second = run(configs, methods=["per_call_events", "cuda_graph"], out=out, env={**ENV, "run_id": "second"})
    info = second.attrs["sweep"]
    assert info["done"] == 1 and info["skipped_existing"] == 2  # only the out-of-memory config ran again
    online = second[second["variant"] == "online"]
    assert len(online) == 2 and (online["error"] == "").all() and (online["run_id"] == "second").all()
    assert second[second["variant"] == "torch"]["error"].str.startswith("wrong result").all()
    assert len(second) == 6 and len(load_results(out)) == 6

    third = run(
        configs, methods=["per_call_events", "cuda_graph"], out=out, env={**ENV, "run_id": "third"}, retry_errors=True
    )
    assert third.attrs["sweep"]["done"] == 2 and len(third) == 6  # torch and multirow measured again, replaced
    by_variant = third.groupby("variant")
    assert (by_variant.get_group("torch")["error"] == "").all()
    assert by_variant.get_group("multirow")["error"].str.startswith("ValueError").all()
    assert (by_variant.get_group("online")["run_id"] == "second").all()  # its good rows stay


def test_progress_text_and_eta():
    assert sweep.format_duration(45.4) == "45 s" and sweep.format_duration(185) == "3 min 05 s"
    assert sweep.format_duration(3725) == "1 h 02 min"
    assert sweep.eta_seconds(0, 10, 5.0) is None
    assert sweep.eta_seconds(4, 10, 8.0) == 12.0
    assert sweep.format_progress(4, 10, 8.0) == "4/10 configs, 8 s elapsed, about 12 s left"
    assert sweep.format_progress(0, 10, 1.0).endswith("estimating time left")
    assert sweep.format_progress(10, 10, 70.0) == "10/10 configs, 1 min 10 s elapsed, done"
    now = [100.0]
    clock = sweep.ProgressClock(lambda: now[0])
    now[0] = 130.0  # a 30 s compile warm-up, then timing starts
    clock.start()
    now[0] = 140.0
    assert clock.text(5, 20) == "5/20 configs, 10 s elapsed, about 30 s left"


def test_timing_started_is_called_once_before_the_first_config(tmp_path):
    events = []
    run(
        [make_config("torch", "fp32", 4, 100), make_config("teaching", "fp32", 4, 100)],
        methods=["per_call_events"],
        timing_started=lambda: events.append("start"),
        progress=lambda d, t, c: events.append(d),
    )
    assert events == ["start", 1, 2]


def test_chosen_configs_keep_a_chrome_trace_with_an_index(tmp_path):
    import json

    from blockscope.profiling.measure.trace import read_trace_index

    def fake_chrome(fn, path):
        fn()
        path.write_text(
            json.dumps({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "row_softmax_kernel", "ts": 1, "dur": 5}]})
        )
        return ["row_softmax_kernel"]

    configs = [make_config("teaching", "fp32", 4, 100), make_config("torch", "fp32", 4, 100)]
    chosen = sweep.pick_trace_configs(configs, ["teaching:fp32:100"])
    assert chosen == [configs[0]]
    out = tmp_path / "s.parquet"
    table = run(configs, methods=["per_call_events"], out=out, trace_configs=chosen, chrome_tracer=fake_chrome)
    assert table.attrs["sweep"]["traces"] == ["teaching_fp32_R4_N100_num_warps4.json"]
    entries = read_trace_index(tmp_path / "s_traces")
    assert [(e["variant"], e["n_cols"], e["kernels"]) for e in entries] == [("teaching", 100, ["row_softmax_kernel"])]
    with pytest.raises(ValueError, match="allowed: VARIANT:DTYPE:N"):
        sweep.pick_trace_configs(configs, ["teaching-fp32"])
    with pytest.raises(ValueError, match="names no config"):
        sweep.pick_trace_configs(configs, ["online:fp32:100"])
    assert sweep.pick_trace_configs(configs, ["online:fp32:100"], strict=False) == []


def test_a_resumed_sweep_keeps_the_chrome_trace_of_a_config_an_earlier_part_measured(tmp_path):
    """Part 1 stopped before its trace phase; part 2 (same --out) measures only what was left, and still keeps the
    trace of a chosen config whose rows part 1 wrote."""
    import json

    from blockscope.profiling.measure.trace import read_trace_index

    def fake_chrome(fn, path):
        fn()
        path.write_text(json.dumps({"traceEvents": []}))
        return ["row_softmax_kernel"]

    first, second = make_config("teaching", "fp32", 4, 100), make_config("torch", "fp32", 4, 100)
    out = tmp_path / "s.parquet"
    run([first], methods=["per_call_events"], out=out)
    table = run([first, second], methods=["per_call_events"], out=out, trace_configs=[first], chrome_tracer=fake_chrome)
    assert table.attrs["sweep"]["skipped_existing"] == 1
    assert table.attrs["sweep"]["traces"] == ["teaching_fp32_R4_N100_num_warps4.json"]
    assert [e["variant"] for e in read_trace_index(tmp_path / "s_traces")] == ["teaching"]


def test_traces_are_of_the_forward_config_when_backward_rows_ran_too(tmp_path):
    """A spec names the forward config, and its trace is named from the forward row's tunables, not from the
    backward row of the same shape (whose tunables describe the backward kernel)."""
    import json

    def fake_chrome(fn, path):
        fn()
        path.write_text(json.dumps({"traceEvents": []}))
        return []

    forward = make_config("teaching", "fp32", 4, 100)
    backward = make_config("teaching", "fp32", 4, 100, direction="backward")
    assert sweep.pick_trace_configs([backward, forward], ["teaching:fp32:100"]) == [forward]
    table = run(
        [forward, backward],
        methods=["per_call_events"],
        out=tmp_path / "s.parquet",
        trace_configs=[forward],
        chrome_tracer=fake_chrome,
    )
    assert set(table["direction"]) == {"forward", "backward"}
    assert table.attrs["sweep"]["traces"] == ["teaching_fp32_R4_N100_num_warps4.json"]


def test_a_shape_a_variant_rule_leaves_out_is_an_unsupported_row_not_a_plan_error():
    """Odd N in 16 bits cannot be staged (cp.async copies whole 4-byte words): the sweep writes the rule's text,
    as for a peer's unsupported shape, without planning or launching (this runs on the CPU, where staged cannot)."""
    table = run(
        [make_config("staged", "bf16", 4, 129), make_config("torch", "bf16", 4, 129)], methods=["per_call_events"]
    )
    staged_row = table[table["variant"] == "staged"].iloc[0]
    assert staged_row["error"].startswith("unsupported: staged: N = 129 is odd: cp.async copies whole 4-byte words")
    assert pd.isna(staged_row["median_us"]) and (table[table["variant"] == "torch"]["error"] == "").all()
