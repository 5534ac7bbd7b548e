"""Backward directions of the sweep on tiny CPU tensors (Triton interpreter): rows, dx checks, resume, schema."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
import torch

from blockscope import kernels
from blockscope.kernels import backward
from blockscope.profiling.measure import backends, directions, sweep
from blockscope.profiling.measure.backends import Backend
from blockscope.profiling.measure.sweep import build_configs, make_config
from blockscope.profiling.measure.timing import FakeClock
from blockscope.profiling.results import ResultsError, bytes_moved, load_results, normalize, save_results, validate
from tests.test_sweep import ENV, run

ALL = ["forward", "backward", "forward_backward"]


def by_key(table: pd.DataFrame, method: str = "per_call_events") -> dict[tuple[str, str, str], pd.Series]:
    part = table[table["method"] == method]
    return {(r["variant"], r["dtype"], r["direction"]): r for _, r in part.iterrows()}


def test_build_configs_adds_directions_and_backward_takes_no_forward_tunables():
    configs = build_configs(["torch", "teaching"], ["fp16"], [100], n_rows=4, num_warps=[4, 8], directions=ALL)
    count = {}
    for c in configs:
        count[(c.variant, c.direction)] = count.get((c.variant, c.direction), 0) + 1
    assert count == {
        ("torch", "forward"): 1,
        ("torch", "backward"): 1,
        ("torch", "forward_backward"): 1,
        ("teaching", "forward"): 2,
        ("teaching", "backward"): 1,
        ("teaching", "forward_backward"): 2,
    }
    assert all(c.direction == "forward" for c in build_configs(["torch"], ["fp16"], [100], n_rows=4))
    assert "[backward]" in make_config("torch", "fp16", 4, 8, direction="backward").label()
    with pytest.raises(ValueError, match="unknown direction.*allowed: forward, backward, forward_backward"):
        build_configs(["torch"], ["fp16"], [8], directions=["sideways"])


def test_sweep_times_backward_rows_with_dx_checked():
    configs = build_configs(
        ["torch", "teaching", "multirow", "auto"], ["fp32", "fp16"], [100], n_rows=5, directions=ALL
    )
    table = run(configs, methods=["per_call_events", "cuda_graph"])
    validate(table)
    assert len(table) == 4 * 2 * 3 * 2 and (table["error"] == "").all(), table[table["error"] != ""]["error"]
    assert set(table["direction"]) == set(ALL)
    rows = by_key(table)
    for (variant, dtype, direction), row in rows.items():
        passes = {"forward": 2, "backward": 3, "forward_backward": 5}[direction]
        assert (
            row["bytes_moved"]
            == bytes_moved(5, 100, dtype, direction)
            == passes * 5 * 100 * (4 if dtype == "fp32" else 2)
        )
        assert row["max_abs_error"] < (1e-6 if dtype == "fp32" else 1e-3), (variant, dtype, direction)
        assert row["kernel_names"] == "row_softmax_fake; second_kernel"
        assert pd.isna(row["ulp_max"]) == (direction != "forward")
    triton_backward = rows[("teaching", "fp16", "backward")]
    expected = backward.plan(5, 100, torch.float16)  # choose_backward: multirow for N <= 1024
    assert (
        triton_backward["num_warps"],
        triton_backward["tile_width"],
        triton_backward["rows_per_program"],
        triton_backward["programs"],
    ) == (expected.num_warps, 128, expected.rows_per_program, expected.programs)
    assert json.loads(triton_backward["tunables"]) == expected.tunables
    assert rows[("auto", "fp16", "backward")]["tunables"] == triton_backward["tunables"]
    assert pd.isna(triton_backward["n_regs"])  # compile facts describe forward kernels only
    assert rows[("teaching", "fp16", "forward_backward")]["n_regs"] == 40  # its forward kernel's (fake) facts
    assert rows[("teaching", "fp16", "forward_backward")]["tunables"] == '{"num_warps": 4}'
    assert pd.isna(rows[("torch", "fp32", "backward")]["num_warps"])


def test_wrong_dx_is_an_error_row_never_timed(monkeypatch):
    def halved(y, dy, **kw):
        return (y * (dy - (y * dy).sum(-1, keepdim=True)) * 0.5).to(y.dtype)

    monkeypatch.setattr(kernels, "softmax_backward", halved)  # backward_call looks it up per call
    monkeypatch.setattr(kernels.autograd, "softmax_backward", halved)  # what SoftmaxFunction.backward calls
    configs = build_configs(["torch", "teaching"], ["fp32"], [64], n_rows=3, directions=ALL)
    table = run(configs, methods=["per_call_events"])
    error = {(r.variant, r.direction): r.error for r in table.itertuples()}
    assert error[("teaching", "backward")].startswith("wrong result: ")
    assert "dx elements off the float64 gradient" in error[("teaching", "backward")]
    assert error[("teaching", "forward_backward")].startswith("wrong result: ")
    assert error[("teaching", "forward")] == ""
    assert all(error[("torch", d)] == "" for d in ALL)
    wrong = table[table["error"].str.startswith("wrong result")]
    assert wrong["median_us"].isna().all() and (wrong["max_abs_error"] > 0).all()


class NoBackward(Backend):
    name = "inductor"

    def prepare(self, x):
        return lambda: torch.softmax(x, -1)


def test_backend_without_backward_gives_unsupported_rows(monkeypatch):
    assert NoBackward().supports_backward(4, 8, torch.float32) == "inductor has no softmax backward"
    monkeypatch.setitem(backends._instances, "inductor", NoBackward())
    table = run(build_configs(["inductor"], ["fp32"], [16], n_rows=2, directions=ALL), methods=["per_call_events"])
    error = dict(zip(table["direction"], table["error"], strict=True))
    assert error["forward"] == ""
    assert error["backward"] == error["forward_backward"] == "unsupported: inductor: inductor has no softmax backward"
    assert sweep.error_kind(error["backward"]) == "deterministic"
    with pytest.raises(ValueError, match="unknown direction"):
        backends.unsupported_reason("torch", 4, 8, torch.float32, "sideways")


def test_resume_adds_backward_rows_beside_forward_ones(tmp_path):
    out = tmp_path / "resume.parquet"
    forward = build_configs(["torch", "teaching"], ["fp32"], [32], n_rows=2)
    first = run(forward, methods=["per_call_events"], out=out)
    assert len(first) == 2 and set(first["direction"]) == {"forward"}
    both = build_configs(["torch", "teaching"], ["fp32"], [32], n_rows=2, directions=["forward", "backward"])
    second = run(both, methods=["per_call_events"], out=out, env={**ENV, "run_id": "second"})
    info = second.attrs["sweep"]
    assert info["skipped_existing"] == 2 and info["total"] == 2
    assert sorted(second["direction"]) == ["backward", "backward", "forward", "forward"]
    pd.testing.assert_frame_equal(load_results(out), second)


def test_check_gradient_bounds_and_nans():
    x = torch.randn(3, 50, dtype=torch.float32, generator=torch.Generator().manual_seed(1))
    inputs = directions.gradient_inputs(x, seed=0)
    reference = kernels.reference_softmax(x)
    exact = directions.reference_dx("backward", inputs, reference)
    assert directions.check_direction("backward", exact.to(torch.float32), inputs, reference, "fp32") == (
        "",
        pytest.approx(0.0, abs=1e-7),
    )
    off = exact.to(torch.float32).clone()
    off[1, 7] += 1e-3
    message, worst = directions.check_direction("backward", off, inputs, reference, "fp32")
    assert message.startswith("wrong result: 1 of 150 dx elements") and worst == pytest.approx(1e-3, rel=1e-3)
    nan = exact.to(torch.float32).clone()
    nan[0, 0] = math.nan
    assert directions.check_gradient(nan, exact, inputs.y, inputs.dy, "fp32")[1] == math.inf
    both = exact.clone()
    both[2, 3] = math.nan
    assert directions.check_gradient(both.to(torch.float32), both, inputs.y, inputs.dy, "fp32")[0] == ""
    shape, _ = directions.check_gradient(exact[:2], exact, inputs.y, inputs.dy, "fp32")
    assert shape.startswith("wrong result: dx shape (2, 50)")
    # forward_backward's reference is the exact gradient of x: the float64 y, not the rounded one
    fb = directions.reference_dx("forward_backward", inputs, reference)
    x64 = x.double().requires_grad_()
    (want,) = torch.autograd.grad(torch.softmax(x64, -1), x64, inputs.dy.double())
    torch.testing.assert_close(fb, want, rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="allowed: backward, forward_backward"):
        directions.reference_dx("forward", inputs, reference)


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_direction_round_trips_and_old_files_load_as_forward(tmp_path, suffix):
    table = run(build_configs(["torch"], ["fp32"], [16], n_rows=2, directions=ALL), methods=["per_call_events"])
    path = save_results(table, tmp_path / f"new{suffix}")
    pd.testing.assert_frame_equal(load_results(path), table)
    old = table[table["direction"] == "forward"].drop(columns=["direction"])
    old_path = tmp_path / f"old{suffix}"
    if suffix == ".csv":
        old.to_csv(old_path, index=False)
    else:
        old.to_parquet(old_path, index=False)
    loaded = load_results(old_path)
    assert list(loaded["direction"]) == ["forward"] and str(loaded["direction"].dtype) == "string"
    blank = normalize(table.assign(direction=["", "backward", None]))
    assert list(blank["direction"]) == ["forward", "backward", "forward"]
    with pytest.raises(ResultsError, match="direction outside forward, backward, forward_backward"):
        validate(normalize(table.assign(direction="sideways")))


def test_bytes_moved_per_direction_and_unknown_direction():
    assert [bytes_moved(4, 10, "bf16", d) for d in ALL] == [160, 240, 400]
    with pytest.raises(ValueError, match="unknown direction 'up'"):
        bytes_moved(4, 10, "bf16", "up")


def test_estimate_counts_backward_bytes():
    fwd = sweep.estimate_seconds([make_config("torch", "fp32", 4096, 65536)], ["cuda_graph"], reps=100)
    bwd = sweep.estimate_seconds(
        [make_config("torch", "fp32", 4096, 65536, direction="backward")], ["cuda_graph"], reps=100
    )
    assert bwd > fwd


def test_fake_clock_first_call_holds_the_backward_setup():
    table = run(
        [make_config("teaching", "fp32", 2, 16, direction="backward")],
        clock=FakeClock(tick_us=2.0, wall_tick_s=0.5),
        methods=["back_to_back_flushed"],
    )
    row = table.iloc[0]
    assert row["error"] == "" and row["first_call_s"] == 0.5 and row["median_us"] == 2.0
    assert row["gbps"] == pytest.approx(bytes_moved(2, 16, "fp32", "backward") / 2e-6 / 1e9)


def test_cli_directions_option(capsys):
    from blockscope.profiling.cli import measure as cli_measure
    from tests.test_cli_measure import fail, parse

    args = parse(
        [
            "sweep",
            "--out",
            "x.parquet",
            "--variants",
            "torch,teaching",
            "--n",
            "100",
            "--dtypes",
            "fp16",
            "--num-warps",
            "4,8",
            "--directions",
            "backward,forward_backward",
        ]
    )
    configs = cli_measure.sweep_configs_from_args(args)
    assert sorted((c.variant, c.direction) for c in configs) == [
        ("teaching", "backward"),
        ("teaching", "forward_backward"),
        ("teaching", "forward_backward"),
        ("torch", "backward"),
        ("torch", "forward_backward"),
    ]
    default = cli_measure.sweep_configs_from_args(parse(["sweep", "--out", "x.csv", "--variants", "torch"]))
    assert {c.direction for c in default} == {"forward"}
    line = fail(capsys, ["sweep", "--out", "x.csv", "--directions", "forward,up"])
    assert "unknown direction(s) up; allowed: forward, backward, forward_backward" in line
    assert "--directions is empty" in fail(capsys, ["sweep", "--out", "x.csv", "--directions", ""])
