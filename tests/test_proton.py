"""Proton: the sweep's --proton pass (fake profiler on CPU), the hatchet tree table, hostile tree files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from blockscope.profiling.measure.proton import ProtonError, profile_configs, proton_dir_for
from blockscope.profiling.measure.sweep import make_config
from blockscope.profiling.views.hatchet import HatchetError, device_info, hatchet_table
from tests.test_sweep import run

FIXTURE = Path(__file__).parent / "fixtures" / "sweep.hatchet"


def test_tree_table_times_paths_and_shares() -> None:
    table = hatchet_table(FIXTURE)
    assert table["depth"].tolist() == [0, 1, 2, 1, 2, 1, 2]
    assert table.loc[2, "path"] == "ROOT/teaching fp16 R4096 N1000 num_warps=4/row_softmax_kernel"
    assert table.loc[2, "avg_time_ns"] == 7104.0 and table.loc[4, "avg_time_ns"] == 712800.0
    assert table.loc[1, "inclusive_time_ns"] == table.loc[2, "time_ns"]  # a scope: the sum of its kernels
    assert table.loc[0, "inclusive_time_ns"] == 71040.0 + 7128000.0 + 62720.0
    assert table["pct_of_root"].iloc[0] == 100.0
    assert abs(table.loc[table["depth"] == 1, "pct_of_root"].sum() - 100.0) < 1e-9
    assert table.loc[4, "bytes"] == 21474836480
    assert device_info(FIXTURE)["CUDA"]["0"]["num_sms"] == 132


def _deep(levels: int) -> bytes:
    node: dict = {"frame": {"name": "k"}, "metrics": {"count": 1, "time (ns)": 5}, "children": []}
    for _ in range(levels):
        node = {"frame": {"name": "s"}, "metrics": {}, "children": [node]}
    return json.dumps([node]).encode()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"not json", "not JSON"),
        (b'{"traceEvents": []}', "no tree"),
        (b"[]", "no tree"),
        (b'[{"frame": {"name": "ROOT"}, "children": {"a": 1}}]', "'children' of ROOT is not a list"),
        (b'[{"frame": {"name": "ROOT"}, "children": [5]}]', "is not an object"),
        (_deep(300), "deeper than 256"),
    ],
)
def test_hostile_tree_files_are_one_line(data: bytes, message: str) -> None:
    with pytest.raises(HatchetError, match=message) as caught:
        hatchet_table(data, "upload.hatchet")
    assert "\n" not in str(caught.value)


def test_deep_but_allowed_tree_is_read_without_recursion() -> None:
    table = hatchet_table(_deep(200))
    assert len(table) == 201 and table["inclusive_time_ns"].iloc[0] == 5


def test_sweep_proton_pass_profiles_each_config_that_ran(tmp_path) -> None:
    seen = {}

    def fake_profiler(calls, target):
        seen["labels"] = [label for label, _ in calls]
        for _, make in calls:
            make()()  # the callables really launch (CPU interpreter here)
        path = Path(f"{target}.hatchet")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(FIXTURE.read_bytes())
        seen["target"] = target
        return path

    configs = [make_config("torch", "fp32", 4, 8), make_config("teaching", "fp32", 4, 8)]
    table = run(configs, methods=["per_call_events"], out=tmp_path / "s.parquet", proton=True,
                proton_profiler=fake_profiler)  # fmt: skip
    assert seen["labels"] == [c.label() for c in configs]
    assert Path(seen["target"]).parent == proton_dir_for(tmp_path / "s.parquet") == tmp_path / "s_proton"
    assert table.attrs["sweep"]["proton"] == str(tmp_path / "s_proton" / "test-run.hatchet")
    assert "proton" in table.attrs["sweep"]["phase_s"]


def test_sweep_without_proton_writes_nothing(tmp_path) -> None:
    table = run([make_config("torch", "fp32", 4, 8)], methods=["per_call_events"], out=tmp_path / "s.parquet")
    assert table.attrs["sweep"]["proton"] == "" and not (tmp_path / "s_proton").exists()


def test_proton_on_cpu_says_it_needs_a_gpu(tmp_path) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(ProtonError, match="need a CUDA GPU"):
        profile_configs([("x", lambda: lambda: None)], tmp_path / "p")
    with pytest.raises(ValueError, match="repeats=0"):
        profile_configs([("x", lambda: lambda: None)], tmp_path / "p", repeats=0)


@pytest.mark.gpu
def test_proton_profiles_a_real_kernel(tmp_path) -> None:
    import torch

    from blockscope import kernels

    x = torch.randn(256, 1000, device="cuda", dtype=torch.float16)
    path = profile_configs([("teaching", lambda: lambda: kernels.softmax(x, "teaching"))], tmp_path / "p", repeats=3)
    table = hatchet_table(path)
    kernel = table[table["name"].str.contains("row_softmax_kernel")]
    assert len(kernel) == 1 and kernel["count"].iloc[0] == 3 and kernel["time_ns"].iloc[0] > 0


def test_bench_proton_calls_cover_torch_and_auto_per_forward_shape() -> None:
    import pandas as pd

    from blockscope.profiling.measure.bench import proton_calls

    table = pd.DataFrame(
        {
            "dtype": ["fp16", "fp16", "fp32", "fp16"],
            "n_rows": [4096, 4096, 8, 4096],
            "n_cols": [1000, 1000, 65536, 1000],
            "direction": ["forward", "forward", "forward", "backward"],
            "method": ["back_to_back_flushed", "cuda_graph", "back_to_back_flushed", "back_to_back_flushed"],
        }
    )
    assert [label for label, _ in proton_calls(table)] == [
        "torch fp16 R=4096 N=1000",
        "auto fp16 R=4096 N=1000",
        "torch fp32 R=8 N=65536",
        "auto fp32 R=8 N=65536",
    ]
