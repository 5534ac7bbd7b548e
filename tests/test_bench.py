"""bench bookkeeping with a fake timer on CPU tensors, and the bench/tune CLI errors."""

from __future__ import annotations

import pytest
import torch

from blockscope.profiling.cli.main import main
from blockscope.profiling.measure import bench
from blockscope.profiling.measure.timing import TimingStats


def fake_benchmark(times: dict[str, float]):
    def run(fn, method):
        fn()
        name = "torch" if "torch.softmax" in fn.__code__.co_names or "softmax" in fn.__code__.co_names else "auto"
        us = times[name]
        return TimingStats(
            method=method,
            median_us=us,
            p20_us=us * 0.9,
            p80_us=us * 1.1,
            min_us=us * 0.8,
            max_us=us * 1.3,
            reps=20,
            first_call_s=0.01,
        )

    return run


def test_bench_shape_fractions_and_targets():
    row = bench.bench_shape(
        "large",
        3,
        1024,
        torch.float16,
        copy_gbps=100.0,
        device="cpu",
        benchmark=fake_benchmark({"torch": 20.0, "auto": 10.0}),
    )
    moved = 2 * 3 * 1024 * 2
    assert row["error"] == "" and row["speedup"] == pytest.approx(2.0)
    assert row["auto_gbps"] == pytest.approx(moved / 10e3) and row["torch_gbps"] == pytest.approx(moved / 20e3)
    assert row["auto_copy_fraction"] == pytest.approx(moved / 10e3 / 100.0)
    assert row["copy_target"] == 0.85 and bench.copy_target("large", 65536) == 0.75
    assert bench.copy_target("large", 2**20) is None and bench.copy_target("default", 1024) is None


def test_summary_and_markdown_name_losses_and_missed_targets():
    import pandas as pd

    rows = [
        {
            "set": "default",
            "dtype": "fp16",
            "n_rows": 4096,
            "n_cols": 128,
            "auto_variant": "torch",
            "auto_tunables": "{}",
            "method": "back_to_back_flushed",
            "error": "",
            "torch_us": 5.0,
            "auto_us": 5.5,
            "speedup": 5 / 5.5,
            "auto_gbps": 380.0,
            "auto_copy_fraction": 0.09,
            "copy_target": None,
            "torch_p80_us": 5.6,
            "auto_p20_us": 5.2,
        },  # within the spread
        {
            "set": "default",
            "dtype": "fp32",
            "n_rows": 4096,
            "n_cols": 512,
            "auto_variant": "multirow",
            "auto_tunables": "{}",
            "method": "back_to_back_flushed",
            "error": "",
            "torch_us": 9.0,
            "auto_us": 18.0,
            "speedup": 0.5,
            "auto_gbps": 900.0,
            "auto_copy_fraction": 0.2,
            "copy_target": None,
            "torch_p80_us": 9.2,
            "auto_p20_us": 14.0,
        },  # beyond it
        {
            "set": "large",
            "dtype": "fp16",
            "n_rows": 1024,
            "n_cols": 262144,
            "auto_variant": "splitrow",
            "auto_tunables": '{"chunk": 8192}',
            "method": "back_to_back_flushed",
            "error": "",
            "torch_us": 600.0,
            "auto_us": 400.0,
            "speedup": 1.5,
            "auto_gbps": 2700.0,
            "auto_copy_fraction": 0.63,
            "copy_target": 0.75,
            "torch_p80_us": 601.0,
            "auto_p20_us": 399.0,
        },
    ]
    table = pd.DataFrame(rows)
    info = bench.summary(table)
    assert info["geomean_speedup_large"] == pytest.approx(1.5)
    assert len(info["losses_to_torch"]) == 2 and len(info["missed_targets"]) == 1
    assert list(info["losses_beyond_spread"]["n_cols"]) == [512]
    env = {
        "gpu_name": "NVIDIA H200",
        "compute_capability": "9.0",
        "sm_count": 132,
        "driver_version": "580",
        "torch_version": "2.11",
        "triton_version": "3.6.0",
        "measured_at": "2026-11-30",
        "copy_gbps": 4270.0,
    }
    text = bench.to_markdown(table, env, "python -m profiling bench")
    assert "4270 GB/s" in text and "fp16 N=262144: 63% < 75%" in text and "fp16 R=4096 N=128: 0.91x" in text
    assert "beyond the run-to-run spread (auto's p20 above torch's p80): 1 (fp32 R=4096 N=512: 0.50x" in text
    assert text.count("\n| ") == 4  # header + 3 shapes


def test_shape_sets():
    assert bench.shapes("large", torch.float16)[0] == (262144, 1024)
    assert bench.shapes("large", torch.float32)[-1] == (128, 2**20)
    default = bench.shapes("default", torch.float16)
    assert (4096, 129) in default and (4096, 262144) in default
    assert (1048576, 8) in default and (131072, 64) in default  # tiny N: rows moving >= 32 MB
    assert bench.shapes("offgrid", torch.float32)[0] == (65536, 96)
    with pytest.raises(ValueError, match="allowed: default, large, offgrid"):
        bench.shapes("huge", torch.float16)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["bench", "--dtypes", "fp64"], "unknown dtype(s) fp64; allowed: fp16, bf16, fp32"),
        (["bench", "--sets", "huge"], "unknown shape set(s) huge; allowed: default, large, offgrid"),
        (["bench", "--peers", "triton"], "unknown peer(s) triton; allowed: inductor, liger, quack or none"),
        (["bench", "--methods", "wall"], "unknown method(s) wall; allowed: per_call_events"),
        (["tune", "--dtypes", "int8"], "unknown dtype(s) int8"),
    ],
)
def test_cli_errors(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU message")
def test_cli_needs_cuda(capsys):
    assert main(["bench"]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err


@pytest.mark.parametrize(
    "command", [[], ["occupancy"], ["inspect"], ["seed"], ["sweep"], ["bench"], ["tune"], ["export"]]
)
def test_every_help_text_renders(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([*command, "--help"])
    assert exit_info.value.code == 0
    assert "usage: blockscope" in capsys.readouterr().out


def _timed_by_order(times: list[float]):
    """A fake benchmark returning `times` in call order (peers first, then torch, then auto)."""
    calls = iter(times)

    def run(fn, method):
        fn()
        us = next(calls)
        return TimingStats(
            method=method,
            median_us=us,
            p20_us=us * 0.9,
            p80_us=us * 1.1,
            min_us=us * 0.8,
            max_us=us * 1.3,
            reps=20,
            first_call_s=0.01,
        )

    return run


def test_peers_side_by_side_with_reasons(monkeypatch):
    import sys
    import types

    from blockscope.profiling.measure.backends.liger import LigerBackend
    from blockscope.profiling.measure.backends.quack import QuackBackend

    module = types.ModuleType("quack.softmax")
    module.softmax_fwd = lambda rows: torch.softmax(rows, dim=-1)
    monkeypatch.setitem(sys.modules, "quack", types.ModuleType("quack"))
    monkeypatch.setitem(sys.modules, "quack.softmax", module)
    monkeypatch.setattr(QuackBackend, "available", lambda self: None)
    monkeypatch.setattr(LigerBackend, "available", lambda self: "liger-kernel is not installed")
    row = bench.bench_shape(
        "offgrid",
        3,
        1024,
        torch.float32,
        copy_gbps=100.0,
        device="cpu",
        benchmark=_timed_by_order([12.0, 20.0, 10.0]),
        peers=("liger", "quack"),
    )
    assert row["quack_us"] == 12.0 and row["auto_vs_quack"] == pytest.approx(1.2) and row["quack_error"] == ""
    assert row["liger_error"] == "unavailable: liger: liger-kernel is not installed"
    assert row["liger_us"] != row["liger_us"]  # NaN: never timed

    module.softmax_fwd = lambda rows: torch.full_like(rows, float("nan"))
    wrong = bench.bench_shape(
        "offgrid",
        3,
        1024,
        torch.float32,
        copy_gbps=100.0,
        device="cpu",
        benchmark=_timed_by_order([20.0, 10.0]),
        peers=("quack",),
    )
    assert wrong["quack_error"].startswith("wrong result: max abs error inf")
    unaligned = bench.bench_shape(
        "offgrid",
        3,
        1001,
        torch.float32,
        copy_gbps=100.0,
        device="cpu",
        benchmark=_timed_by_order([20.0, 10.0]),
        peers=("quack",),
    )
    assert "not a multiple of 4" in unaligned["quack_error"]

    import pandas as pd

    table = pd.DataFrame([row, wrong, unaligned]).assign(method="cuda_graph")
    summary = bench.peer_summary(table)
    quack = summary[summary["peer"] == "quack"].iloc[0]
    assert quack["shapes"] == 1 and quack["wrong"] == 1 and quack["unsupported"] == 1
    env = {
        "gpu_name": "NVIDIA H200",
        "compute_capability": "9.0",
        "sm_count": 132,
        "driver_version": "580",
        "torch_version": "2.11",
        "triton_version": "3.6.0",
        "measured_at": "2026-12-01",
        "copy_gbps": 4200.0,
    }
    text = bench.to_markdown(table, env, "python -m profiling bench --sets offgrid")
    assert "# Benchmarks: `auto` vs torch.softmax and liger, quack" in text and "## `cuda_graph`" in text
    assert "| cuda_graph | quack | 1 | 1.20x | 1.20x | fp32 3x1024 | 0 | 1 | 1 | 0 |" in text
    assert "- quack: unsupported: quack: N = 1001 is not a multiple of 4" in text
    assert "| 12.0 | 1.20 |" in text and "| - | wrong |" in text
