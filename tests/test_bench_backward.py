"""bench's backward directions on CPU tensors (Triton interpreter) with a fake timer, and the --directions option."""

from __future__ import annotations

import math
import sys
import types

import pandas as pd
import pytest
import torch

from blockscope.profiling.measure import bench
from blockscope.profiling.measure.backends.liger import LigerBackend
from blockscope.profiling.measure.backends.quack import QuackBackend
from tests.test_bench import _timed_by_order

ENV = {
    "gpu_name": "NVIDIA H200",
    "compute_capability": "9.0",
    "sm_count": 132,
    "driver_version": "580",
    "torch_version": "2.11",
    "triton_version": "3.6.0",
    "measured_at": "2026-12-02",
    "copy_gbps": 4000.0,
}


@pytest.fixture
def fake_quack(monkeypatch):
    """quack.softmax with a backward (softmax_bwd, softmax) made of torch ops; liger unavailable."""
    module = types.ModuleType("quack.softmax")
    module.softmax_fwd = lambda rows: torch.softmax(rows, dim=-1)
    module.softmax_bwd = lambda dy, y: torch._softmax_backward_data(dy, y, -1, y.dtype)
    module.softmax = lambda rows: torch.softmax(rows, dim=-1)
    monkeypatch.setitem(sys.modules, "quack", types.ModuleType("quack"))
    monkeypatch.setitem(sys.modules, "quack.softmax", module)
    monkeypatch.setattr(QuackBackend, "available", lambda self: None)
    monkeypatch.setattr(LigerBackend, "available", lambda self: "liger-kernel is not installed")
    return module


@pytest.mark.parametrize("direction, passes", [("backward", 3), ("forward_backward", 5)])
def test_backward_shape_times_torch_auto_and_peers_after_a_dx_check(fake_quack, direction, passes):
    row = bench.bench_shape(
        "offgrid",
        3,
        1024,
        torch.float32,
        copy_gbps=100.0,
        device="cpu",
        direction=direction,
        benchmark=_timed_by_order([12.0, 20.0, 10.0]),
        peers=("liger", "quack"),
    )
    assert row["direction"] == direction and row["error"] == ""
    assert (row["quack_us"], row["torch_us"], row["auto_us"]) == (12.0, 20.0, 10.0)
    assert row["speedup"] == pytest.approx(2.0) and row["auto_vs_quack"] == pytest.approx(1.2)
    assert row["bytes_moved"] == passes * 3 * 1024 * 4
    assert row["auto_gbps"] == pytest.approx(row["bytes_moved"] / 10e3)
    assert row["auto_variant"] == "backward multirow" and row["copy_target"] is None
    assert row["liger_error"] == "unavailable: liger: liger-kernel is not installed" and math.isnan(row["liger_us"])


def test_wrong_or_missing_backward_is_reported_not_timed(fake_quack):
    fake_quack.softmax_bwd = lambda dy, y: torch.zeros_like(dy)
    wrong = bench.bench_shape(
        "offgrid",
        3,
        256,
        torch.float16,
        copy_gbps=100.0,
        device="cpu",
        direction="backward",
        benchmark=_timed_by_order([20.0, 10.0]),
        peers=("quack",),
    )
    assert wrong["quack_error"].startswith("wrong result: ") and math.isnan(wrong["quack_us"])
    del fake_quack.softmax_bwd
    missing = bench.bench_shape(
        "offgrid",
        3,
        256,
        torch.float16,
        copy_gbps=100.0,
        device="cpu",
        direction="backward",
        benchmark=_timed_by_order([20.0, 10.0]),
        peers=("quack",),
    )
    assert missing["quack_error"] == (
        "unsupported: quack: quack.softmax has no softmax_bwd in this version (no backward to time)"
    )
    assert missing["error"] == "" and missing["auto_us"] == 10.0


def test_markdown_sections_per_direction(fake_quack):
    rows = [
        bench.bench_shape(
            "offgrid",
            3,
            1024,
            torch.float32,
            copy_gbps=100.0,
            device="cpu",
            direction=way,
            benchmark=_timed_by_order([12.0, 20.0, 10.0]),
            peers=("quack",),
        )
        for way in ("forward", "backward")
    ]
    table = pd.DataFrame(rows).assign(method="cuda_graph")
    assert [(d, m) for d, m, _ in bench.sections(table)] == [("forward", "cuda_graph"), ("backward", "cuda_graph")]
    assert [(d, m) for d, m, _ in bench.sections(table.drop(columns="direction"))] == [("forward", "cuda_graph")]
    summary = bench.peer_summary(table)
    assert list(summary["direction"]) == ["forward", "backward"] and (summary["shapes"] == 1).all()
    text = bench.to_markdown(table, ENV, "python -m profiling bench --directions forward,backward")
    assert "## `cuda_graph`" in text and "## `cuda_graph, backward`" in text
    assert "| cuda_graph, backward | quack | 1 | 1.20x |" in text and "`backward` dx from a saved y and dy" in text


def test_cli_rejects_unknown_direction(capsys):
    from blockscope.profiling.cli.main import main

    assert main(["bench", "--directions", "forward,sideways"]) == 2
    assert "unknown direction(s) sideways; allowed: forward, backward, forward_backward" in capsys.readouterr().err
