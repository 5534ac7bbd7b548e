"""The fused ops' sweep (`sweep --op`): configs, rows tagged with op and case, schema v2 (v1 files load as softmax),
softmax pages never see op rows, the CLI's bad-input lines, and the Fused ops section built from op rows. CPU only:
tiny shapes on the Triton interpreter, a fake clock."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from pathlib import Path

import pandas as pd
import pytest
import torch

from blockscope.demo import synthetic_results
from blockscope.profiling.cli import main as entry
from blockscope.profiling.measure import op_sweep, sweep
from blockscope.profiling.measure.backends import fused
from blockscope.profiling.measure.timing import FakeClock
from blockscope.profiling.results import (
    PARQUET_VERSION_KEY,
    ResultsError,
    load_results,
    normalize,
    save_results,
    validate,
)
from blockscope.profiling.results.fused import NO_OP_ROWS, fused_from_results, load_fused_any
from blockscope.profiling.views import dashboard_data as dd
from blockscope.profiling.views import fused as fv

ROOT = Path(__file__).resolve().parents[1]
ENV = {
    "run_id": "op-run",
    "gpu_name": "none",
    "compute_capability": "none",
    "torch_version": torch.__version__,
    "triton_version": "3.x",
    "copy_gbps": 100.0,
    "measured_at": "2026-12-04T08:00:00+00:00",
}
TINY = dict(batch=1, heads=2, segments=5, length_scale=0.002)  # masked (1, 2, L, L); ragged 5 segments, T < 400
FAST = dict(device="cpu", env=ENV, reps=2, warmup=0, graph_calls=2, methods=["per_call_events", "cuda_graph"])
CHEAP = {"masked_softmax": ["blockscope", "eager"], "ragged_softmax": ["blockscope", "pad_unpad"]}


def first_mismatch(got: list, want: list) -> str:
    """'' when equal, else the first differing position and both values."""
    for index, (a, b) in enumerate(zip(got, want, strict=False)):
        if a != b:
            return f"first mismatch at {index}: got {a!r}, expected {b!r}"
    return "" if len(got) == len(want) else f"lengths differ: got {len(got)}, expected {len(want)}"


def run_ops(ops, out=None, lengths=(8,), dtypes=("fp32",), backends=None, **kw):
    names = backends or [b for op in ops for b in CHEAP[op]]
    configs = op_sweep.build_op_configs(ops, list(dtypes), list(lengths), names, **TINY)
    options = {**FAST, **kw}
    return op_sweep.run_op_sweep(configs, out=out, clock=FakeClock(tick_us=5.0), **options)


# ---- configs ----


@pytest.mark.parametrize(
    "ops, expected",
    [
        (["masked_softmax"], 2 * 3 * 5 * 4),  # cases x dtypes x L x backends
        (["ragged_softmax"], 2 * 3 * 4),  # cases x dtypes x backends
        (["masked_softmax", "ragged_softmax"], 2 * 3 * 5 * 4 + 2 * 3 * 4),
    ],
)
def test_default_configs_count_and_order(ops, expected):
    configs = op_sweep.build_op_configs(ops)
    assert len(configs) == expected
    want = [
        (op, case, dtype, length, backend)
        for op in ops
        for case in fused.CASES[op]
        for dtype in ("fp16", "bf16", "fp32")
        for length in (fused.MASKED_LENGTHS if op == "masked_softmax" else (0,))
        for backend in fused.backend_names(op)
    ]
    got = [(c.op, c.case, c.dtype, c.length, c.backend) for c in configs]
    assert not first_mismatch(got, want), first_mismatch(got, want)


def test_backends_registered_per_op():
    assert fused.backend_names("masked_softmax") == ("blockscope", "eager", "inductor", "sdpa_math_softmax")
    assert fused.backend_names("ragged_softmax") == ("blockscope", "nested", "pad_unpad", "segment_reduce")


@pytest.mark.parametrize(
    "op, length, expected_rows_cols, expected_shape",
    [
        ("masked_softmax", 1000, (2 * 16 * 1000, 1000), {"batch": 2, "heads": 16, "length": 1000}),
        ("masked_softmax", 4096, (2 * 16 * 4096, 4096), {"batch": 2, "heads": 16, "length": 4096}),
    ],
)
def test_masked_shape_maps_to_rows_and_cols(op, length, expected_rows_cols, expected_shape):
    config = op_sweep.OpConfig(op, "causal", "blockscope", "fp16", length)
    assert config.rows_cols() == expected_rows_cols
    assert config.op_shape() == expected_shape


@pytest.mark.parametrize("case", ["uniform", "long_tail"])
def test_ragged_shape_is_segments_by_longest(case):
    lengths = fused.ragged_lengths(case)
    config = op_sweep.OpConfig("ragged_softmax", case, "nested", "fp32")
    assert config.rows_cols() == (16384, int(lengths.max()))
    assert config.op_shape() == {"segments": 16384, "total": int(lengths.sum()), "max_len": int(lengths.max())}
    assert config.elements() == int(lengths.sum())


def test_ragged_lengths_are_bench_fuseds():
    uniform, tail = fused.ragged_lengths("uniform"), fused.ragged_lengths("long_tail")
    assert uniform.numel() == 16384 and int(uniform.min()) >= 1 and int(uniform.max()) <= 8192
    assert tail.numel() == 16384 and int(tail[8000]) == 147_456 and int(tail.max()) == 147_456
    assert int(torch.cat([tail[:8000], tail[8001:]]).max()) <= 100_000


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"ops": ["softmax"]}, "softmax runs alone"),
        ({"ops": ["foo"]}, "unknown op(s) foo; allowed: softmax (alone) or a comma list of masked_softmax"),
        ({"ops": ["masked_softmax"], "backends": ["nested"]}, "unknown backend(s) nested for masked_softmax"),
        ({"ops": ["ragged_softmax"], "cases": ["causal"]}, "unknown case(s) causal for ragged_softmax"),
        ({"ops": ["masked_softmax"], "lengths": [0]}, "L 0; allowed: integers >= 1"),
        ({"ops": ["masked_softmax"], "dtypes": ["fp8"]}, "fp8"),
    ],
)
def test_build_op_configs_refuses_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=None) as error:
        op_sweep.build_op_configs(**kwargs)
    assert message in str(error.value)


def test_tools_bench_fused_uses_the_library():
    spec = importlib.util.spec_from_file_location("bench_fused_tool", ROOT / "tools" / "bench_fused.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.fb is fused
    assert module.MASKED_LENGTHS == fused.MASKED_LENGTHS and (module.BATCH, module.HEADS) == (2, 16)
    assert torch.equal(module._lengths("long_tail"), fused.ragged_lengths("long_tail"))
    source = (ROOT / "tools" / "bench_fused.py").read_text()
    for copied in ("def pad_unpad", "def segment_reduce", "nested_tensor_from_jagged(", "ops.aten._safe_softmax("):
        assert copied not in source, f"tools/bench_fused.py still builds {copied} itself"


# ---- rows ----


@pytest.mark.parametrize("op", ["masked_softmax", "ragged_softmax"])
def test_rows_are_tagged_with_op_and_case(op):
    table = run_ops([op], lengths=(8, 16))
    assert len(table) and set(table["op"]) == {op}
    assert set(table["case"]) == set(fused.CASES[op])
    assert set(table["variant"]) == set(CHEAP[op])
    assert (table["error"] == "").all(), table.loc[table["error"] != "", "error"].tolist()[:1]
    validate(table)
    for _, row in table.iterrows():
        shape = json.loads(row["op_shape"])
        if op == "masked_softmax":
            assert shape["batch"] == 1 and shape["heads"] == 2
            want = (2 * shape["length"], shape["length"], 2 * 2 * shape["length"] ** 2 * 4)
        else:
            want = (shape["segments"], shape["max_len"], 2 * shape["total"] * 4)
        got = (int(row["n_rows"]), int(row["n_cols"]), int(row["bytes_moved"]))
        assert got == want, f"{row['case']} {row['variant']}: (n_rows, n_cols, bytes_moved) {got} != {want}"
        assert row["median_us"] > 0 and row["max_abs_error"] <= fused.TOLERANCES[torch.float32]
        assert row["direction"] == "forward" and row["run_id"] == "op-run"
    ours = table[table["variant"] == "blockscope"]
    assert ours["num_warps"].notna().all() and ours["kernel_source_hash"].str.fullmatch(r"[0-9a-f]{12}").all()
    assert table.loc[table["variant"] != "blockscope", "kernel_source_hash"].str.startswith("torch==").all()


def test_unsupported_combo_is_a_row_that_says_why(monkeypatch):
    monkeypatch.setattr(fused, "INT32_MAX", 100)  # tiny long_tail pads 5 x 295 elements, uniform 5 x 16
    table = run_ops(["ragged_softmax"], backends=["blockscope", "nested"])
    nested = table[table["variant"] == "nested"].set_index(["case", "method"])["error"]
    assert nested[("long_tail", "cuda_graph")].startswith("unsupported: nested: B x max_len = 5 x ")
    assert "over int32 max" in nested[("long_tail", "per_call_events")]
    assert (nested.xs("uniform", level="case") == "").all()  # 5 x 16 fits
    assert table.loc[table["error"] != "", "median_us"].isna().all()


def test_blockscope_without_triton_device_is_unsupported(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    inputs = fused.masked_inputs("causal", 8, torch.float32, "cpu", batch=1, heads=1)
    assert fused.unsupported_reason("masked_softmax", "blockscope", inputs).startswith(
        "unsupported: blockscope: Triton kernels need a CUDA device"
    )
    assert fused.unsupported_reason("masked_softmax", "eager", inputs) is None


def test_wrong_result_is_never_timed(monkeypatch):
    entry_ = fused.get_backend("masked_softmax", "eager")
    broken = dataclasses.replace(entry_, build=lambda inputs: lambda: torch.zeros_like(inputs.x))
    monkeypatch.setitem(fused._REGISTRY["masked_softmax"], "eager", broken)
    table = run_ops(["masked_softmax"])
    eager = table[table["variant"] == "eager"]
    assert eager["error"].str.startswith("wrong result: max_abs=").all(), eager["error"].tolist()
    assert eager["median_us"].isna().all()
    assert (table.loc[table["variant"] == "blockscope", "error"] == "").all()


def test_resume_skips_done_rows_and_keeps_softmax_rows(tmp_path):
    out = tmp_path / "mixed.parquet"
    plain = sweep.run_sweep(
        [sweep.make_config("torch", "fp32", 4, 8)],
        clock=FakeClock(tick_us=5.0),
        tracer=lambda fn: ["k"],
        out=out,
        **{k: v for k, v in FAST.items() if k != "methods"},
        methods=["per_call_events"],
    )
    assert set(plain["op"]) == {"softmax"}
    first = run_ops(["masked_softmax"], out=out)
    assert first.attrs["sweep"]["done"] == 4 and len(first) == 1 + 8
    again = run_ops(["masked_softmax"], out=out)
    assert again.attrs["sweep"]["done"] == 0 and again.attrs["sweep"]["skipped_existing"] == 4
    assert len(load_results(out)) == 9
    # the plain sweep resumes past op rows: a torch softmax at the masked rows' (R, N) is still measured
    keys = sweep.existing_keys(load_results(out), ENV)
    assert keys == {sweep.row_key("torch", "fp32", 4, 8, "{}", "per_call_events")}


# ---- schema ----


def _v1_frame() -> pd.DataFrame:
    table = synthetic_results(n_values=(128, 1024), dtypes=("fp16",), num_warps=(4,))
    return table.drop(columns=["op", "case", "op_shape"])


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_v1_file_without_op_loads_as_softmax(tmp_path, suffix):
    old = _v1_frame()
    path = tmp_path / f"old{suffix}"
    if suffix == ".csv":
        old.to_csv(path, index=False)
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        arrow = pa.Table.from_pandas(old, preserve_index=False)
        pq.write_table(arrow.replace_schema_metadata({PARQUET_VERSION_KEY: b"1"}), path)
    loaded = load_results(path)
    assert len(loaded) == len(old)
    assert (loaded["op"] == "softmax").all() and loaded["case"].isna().all() and loaded["op_shape"].isna().all()
    assert len(dd.split_ops(loaded)[1]) == 0


def test_newer_schema_is_refused(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrow = pa.Table.from_pandas(_v1_frame(), preserve_index=False)
    pq.write_table(arrow.replace_schema_metadata({PARQUET_VERSION_KEY: b"3"}), tmp_path / "new.parquet")
    with pytest.raises(ResultsError, match="schema v3, newer than this Blockscope"):
        load_results(tmp_path / "new.parquet")


@pytest.mark.parametrize(
    "op, case, message",
    [
        ("conv", None, "with op outside softmax, masked_softmax, ragged_softmax"),
        ("masked_softmax", "uniform", "of op masked_softmax with case outside causal, scale_mask_bias"),
        ("ragged_softmax", None, "of op ragged_softmax with case outside uniform, long_tail"),
    ],
)
def test_validate_refuses_bad_op_or_case(op, case, message):
    table = normalize(_v1_frame().head(2)).assign(op=op, case=case)
    with pytest.raises(ResultsError, match=None) as error:
        validate(normalize(table))
    assert message in str(error.value)


# ---- pages never mix ops ----


def _op_copy(table: pd.DataFrame) -> pd.DataFrame:
    """Rows that would change every softmax view if they leaked: the same variants, 1000x faster, at other N."""
    fake = table.copy()
    fake["n_cols"] = fake["n_cols"] + 3
    fake["op"], fake["case"] = "masked_softmax", "causal"
    fake["op_shape"] = '{"batch": 1, "heads": 1, "length": 128}'
    fake["median_us"] = fake["median_us"] / 1000
    return fake


def test_pages_data_excludes_op_rows():
    plain = normalize(synthetic_results(n_values=(128, 1024, 4096), dtypes=("fp16", "fp32"), num_warps=(4, 8)))
    mixed = normalize(pd.concat([_op_copy(plain), plain, _op_copy(plain)], ignore_index=True))
    shown, ops = dd.split_ops(mixed)
    assert len(ops) == 2 * len(plain)
    pd.testing.assert_frame_equal(shown, plain)
    filters = dd.Filters(method="back_to_back_flushed")
    views = {
        "best_per_n": lambda df: dd.best_per_n(dd.apply_filters(dd.ran(df), filters)),
        "speedup_vs_torch": lambda df: dd.speedup_vs_torch(dd.apply_filters(dd.ran(df), filters)),
        "options": lambda df: pd.DataFrame({k: [str(v)] for k, v in dd.options(df).items()}),
    }
    for name, view in views.items():
        pd.testing.assert_frame_equal(view(shown), view(plain), obj=name)
        with pytest.raises(AssertionError):  # the same view of the unsplit table differs: the split matters
            pd.testing.assert_frame_equal(view(mixed), view(plain), obj=name)
    assert "Fused-op rows (" in dd.op_rows_note(ops) and dd.op_rows_note(shown.iloc[0:0]) is None


def test_sidebar_splits_ops_before_every_page():
    source = (ROOT / "pages" / "_common.py").read_text()
    sidebar = source[source.index("def sidebar()") : source.index("def context(")]
    assert sidebar.index("dd.split_ops(df)") < sidebar.index("context.df = df")


# ---- the Fused ops section from op rows ----


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_fused_section_builds_from_op_rows(tmp_path, suffix):
    out = tmp_path / f"ops{suffix}"
    run_ops(["masked_softmax", "ragged_softmax"], out=out, lengths=(8, 16))
    frame = load_fused_any(out)
    assert set(frame["op"]) == {"masked_softmax", "ragged_softmax"}
    assert set(frame["dtype"]) == {"float32"} and set(frame["check"]) == {"ok"}
    masked = frame[(frame["op"] == "masked_softmax") & (frame["method"] == "cuda_graph")]
    assert sorted(set(masked["shape"])) == ["1x2x16x16", "1x2x8x8"] and sorted(set(masked["length"])) == [8, 16]
    ideal = 2 * 1 * 2 * 16 * 16 * 4 / 100e9 * 1e6  # bytes at copy_gbps 100, us
    row = masked[(masked["length"] == 16) & (masked["backend"] == "eager")].iloc[0]
    assert row["ideal_us"] == pytest.approx(ideal) and row["pct_of_ideal"] == pytest.approx(100 * ideal / 2.5)
    assert row["vs_blockscope"] == pytest.approx(1.0)
    table = fv.fused_table(frame[frame["op"] == "masked_softmax"], "cuda_graph")
    assert {"blockscope µs", "eager µs", "eager / blockscope"} <= set(table.columns) and len(table) == 4
    summary = fv.speedup_summary(frame, "cuda_graph")
    assert sorted(zip(summary["op"], summary["backend"], strict=True)) == [
        ("masked_softmax", "eager"),
        ("ragged_softmax", "pad_unpad"),
    ]
    loaded = fv.from_op_rows(dd.split_ops(load_results(out))[1])
    pd.testing.assert_frame_equal(loaded, frame)


def test_fused_section_refuses_results_without_op_rows_and_still_reads_the_bench_csv(tmp_path):
    path = save_results(_v1_frame(), tmp_path / "plain.parquet")
    with pytest.raises(ResultsError, match=None) as error:
        load_fused_any(path)
    assert NO_OP_ROWS in str(error.value)
    bench = load_fused_any(ROOT / "tests" / "fixtures" / "bench_fused_synthetic.csv")
    assert len(bench) and "length" in bench.columns
    assert fv.from_op_rows(None) is None and fused_from_results(normalize(_v1_frame())).empty


# ---- CLI ----


def _fail(capsys, argv: list[str]) -> str:
    try:
        status = entry.main(argv)
    except SystemExit as exit_:
        status = exit_.code
    captured = capsys.readouterr()
    assert status == 2, captured
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    return lines[0]


OPTIONS = "--variants, --dtypes, --n, --methods, --reps, --warmup, --max-minutes, --retry-errors, --no-trace"


@pytest.mark.parametrize(
    "extra, expected",
    [
        (["--op", "foo"], "--op foo: unknown op(s) foo; allowed: softmax (alone) or a comma list of masked_softmax, "),
        (["--op", "softmax,masked_softmax"], "softmax runs alone; allowed: softmax or a comma list of masked_softmax"),
        (
            ["--op", "masked_softmax", "--num-warps", "4"],
            f"does not take --num-warps; allowed with --op masked_softmax: {OPTIONS}",
        ),
        (["--op", "ragged_softmax", "--rows", "8"], "--op ragged_softmax does not take --rows"),
        (["--op", "masked_softmax", "--directions", "backward"], "does not take --directions"),
        (["--op", "masked_softmax", "--tunable", "tile=8"], "does not take --tunable"),
        (["--op", "masked_softmax", "--shard", "0/2"], "does not take --shard"),
        (["--op", "ragged_softmax", "--n", "512"], "--op ragged_softmax does not take --n; allowed: --n (L) with --op"),
        (["--op", "masked_softmax", "--variants", "nested"], "unknown backend(s) nested for masked_softmax; allowed: "),
        (["--op", "masked_softmax", "--dtypes", "fp8"], "unknown dtype(s) fp8; allowed: fp16, bf16, fp32"),
        (["--op", "ragged_softmax", "--methods", "wall"], "unknown method(s) wall; allowed: per_call_events"),
        (["--op", "masked_softmax", "--variants", ""], "--variants is empty"),
    ],
)
def test_cli_op_bad_input_is_one_line(capsys, monkeypatch, tmp_path, extra, expected):
    monkeypatch.setattr(entry, "COMMAND_MODULES", ("blockscope.profiling.cli.measure",))
    line = _fail(capsys, ["sweep", "--out", str(tmp_path / "x.parquet"), *extra])
    assert expected in line, line


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message of a machine without CUDA")
def test_cli_op_sweep_needs_cuda(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(entry, "COMMAND_MODULES", ("blockscope.profiling.cli.measure",))
    line = _fail(capsys, ["sweep", "--op", "masked_softmax,ragged_softmax", "--out", str(tmp_path / "x.parquet")])
    assert "sweep needs a CUDA GPU" in line


def test_cli_op_sweep_max_minutes_cancels_through_the_shared_poll(capsys, monkeypatch, tmp_path):
    """sweep --op hands run_op_sweep the sweep_cancel poll (one helper for both sweep commands): past --max-minutes
    it stops before the first config and says so."""
    from blockscope.profiling.cli import measure as cli_measure

    made: list[float | None] = []
    real_cancel, real_sweep = cli_measure.sweep_cancel, op_sweep.run_op_sweep

    def spy(signalled, deadline):
        made.append(deadline)
        return real_cancel(signalled, None if deadline is None else deadline - 3600)  # already past

    monkeypatch.setattr(entry, "COMMAND_MODULES", ("blockscope.profiling.cli.measure",))
    monkeypatch.setattr(cli_measure, "require_cuda", lambda command: None)
    monkeypatch.setattr(cli_measure, "sweep_cancel", spy)
    monkeypatch.setattr(
        op_sweep,
        "run_op_sweep",
        lambda configs, **kw: real_sweep(
            configs, out=kw["out"], cancel=kw["cancel"], clock=FakeClock(tick_us=5.0), **FAST
        ),
    )
    out = tmp_path / "ops.parquet"
    argv = ["sweep", "--op", "masked_softmax", "--out", str(out), "--variants", "blockscope", "--dtypes", "fp32"]
    assert entry.main([*argv, "--n", "8", "--max-minutes", "60"]) == 0
    assert len(made) == 1 and made[0] is not None
    assert capsys.readouterr().out.startswith("stopped at --max-minutes"), "cancelled before the first config"


# ---- the dashboard with a mixed file ----


def test_dashboard_with_op_rows_shows_softmax_pages_and_the_fused_section(tmp_path):
    pytest.importorskip("streamlit")
    from tests.test_app import load_path, new_app
    from tests.texts import plain

    out = tmp_path / "mixed.parquet"
    save_results(normalize(synthetic_results(n_values=(128, 1024), dtypes=("fp16",), num_warps=(4,))), out)
    run_ops(["masked_softmax"], out=out, lengths=(8, 16), dtypes=("fp16",))
    at = load_path(new_app(), out)
    assert not at.exception, [e.message for e in at.exception]
    notes = [plain(c.value) for c in at.sidebar.caption]
    assert any("Fused-op rows (16 masked_softmax)" in n for n in notes), notes  # 2 cases x 2 L x 2 backends x 2
    at.switch_page("pages/backends.py").run()
    assert not at.exception, [e.message for e in at.exception]
    assert at.radio(key="fo_source_loaded").value == "loaded"
    summary = next(d.value for d in at.dataframe if "geomean_speedup" in d.value.columns)
    assert summary[["op", "backend"]].values.tolist() == [["masked_softmax", "eager"]]


def test_drift_pairs_op_rows_by_case():
    from blockscope.profiling.results import drift

    first = run_ops(["masked_softmax"])
    second = first.copy()
    second["median_us"] = second["median_us"] * 1.1
    result = drift.repeat_drift(first, second, min_us=0)
    assert len(result) == len(first) == 8  # 2 cases x 2 backends x 2 methods: causal and scale_mask_bias apart
    assert sorted(set(result["case"])) == ["causal", "scale_mask_bias"]
    assert result["drift"].astype(float).round(6).eq(0.1).all()
