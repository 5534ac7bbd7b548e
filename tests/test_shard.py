"""Sharded sweeps: the split, the merge equal to the unsharded run (CPU interpreter, fake clock), workers, errors."""

from __future__ import annotations

import sys

import pandas as pd
import pytest

from blockscope.profiling.cli.main import main
from blockscope.profiling.measure import shard
from blockscope.profiling.measure.sweep import make_config
from blockscope.profiling.results import load_results, save_results
from tests.test_sweep import run

CONFIGS = [
    make_config("torch", "fp32", 4, 8),
    make_config("teaching", "fp32", 4, 8),
    make_config("teaching", "fp16", 4, 8),
    make_config("teaching", "fp32", 4, 8, num_warps=1),
    make_config("teaching", "fp32", 3, 13),
    make_config("torch", "fp16", 3, 13),
    make_config("teaching", "bf16", 2, 16),
]
DETERMINISTIC = ["first_call_s"]  # wall time of the first call: the fake wall clock counts reads across configs


@pytest.mark.parametrize("count", [1, 2, 3, 4, 7, 9])
def test_shards_cover_every_config_once_in_order(count: int) -> None:
    parts = [shard.shard(CONFIGS, i, count) for i in range(count)]
    assert sorted(c.label() for p in parts for c in p) == sorted(c.label() for c in CONFIGS)
    for i, part in enumerate(parts):
        assert part == CONFIGS[i::count]  # index mod N == i, stable order


@pytest.mark.parametrize("text", ["3/2", "-1/4", "2/2", "1/0", "a/b", "1", "1/2/3", ""])
def test_bad_shard_specs(text: str) -> None:
    with pytest.raises(ValueError, match="allowed: I/N"):
        shard.parse_shard(text)


def test_parse_shard_accepts_slurm_style() -> None:
    assert shard.parse_shard("0/1") == (0, 1) and shard.parse_shard("5/8") == (5, 8)


@pytest.mark.parametrize("count", [2, 3])
def test_merged_shards_equal_the_unsharded_sweep(tmp_path, count: int) -> None:
    whole = run(CONFIGS, methods=["per_call_events", "back_to_back_flushed"], out=tmp_path / "whole.parquet")
    parts = []
    for i in range(count):
        path = tmp_path / f"part{i}.parquet"
        run(shard.shard(CONFIGS, i, count), methods=["per_call_events", "back_to_back_flushed"], out=path)
        parts.append(path)
    merged = shard.merge_parts(parts)
    expected = shard.canonical(load_results(tmp_path / "whole.parquet"))
    assert len(merged) == len(whole) == len(CONFIGS) * 2
    pd.testing.assert_frame_equal(merged.drop(columns=DETERMINISTIC), expected.drop(columns=DETERMINISTIC))


def test_merge_refuses_overlapping_parts_and_no_parts(tmp_path) -> None:
    a = run(CONFIGS[:2], methods=["per_call_events"])
    b = run(CONFIGS[1:3], methods=["per_call_events"])
    with pytest.raises(ValueError, match="both hold teaching fp32 4 8"):
        shard.merge_parts([a, b])
    with pytest.raises(ValueError, match="no parts"):
        shard.merge_parts([])


def test_merge_cli(tmp_path, capsys: pytest.CaptureFixture) -> None:
    for i in range(2):
        save_results(run(shard.shard(CONFIGS, i, 2), methods=["per_call_events"]), tmp_path / f"p{i}.csv")
    out = tmp_path / "merged.parquet"
    assert main(["merge", str(tmp_path / "p0.csv"), str(tmp_path / "p1.csv"), "--out", str(out)], "profiling") == 0
    assert f"merged 2 parts into {out}: {len(CONFIGS)} rows" in capsys.readouterr().out
    assert main(["merge", str(tmp_path / "p0.csv"), str(tmp_path / "p0.csv"), "--out", str(out)], "profiling") == 2
    err = capsys.readouterr().err
    assert "both hold" in err and err.count("\n") == 1
    assert main(["merge", str(tmp_path / "missing.csv"), "--out", str(out)], "profiling") == 2
    assert capsys.readouterr().err.count("\n") == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--shard", "3/2"], "allowed: I/N"),
        (["--shard=-1/4"], "allowed: I/N"),
        (["--shard", "5/6"], "no configs in this shard"),
        (["--shard", "0/2", "--gpus", "all"], "choose one"),
    ],
)
def test_sweep_cli_bad_split_is_one_line(tmp_path, argv: list[str], message: str, capsys) -> None:
    base = ["sweep", "--variants", "teaching", "--dtypes", "fp32", "--n", "8", "--rows", "4", "--num-warps", "4"]
    assert main([*base, *argv, "--out", str(tmp_path / "o.parquet")], "profiling") == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize(("text", "visible", "expected"), [("all", 4, [0, 1, 2, 3]), ("0,2", 4, [0, 2]), ("1", 2, [1])])
def test_parse_gpus(text: str, visible: int, expected: list[int]) -> None:
    assert shard.parse_gpus(text, visible) == expected


@pytest.mark.parametrize(("text", "visible"), [("all", 0), ("0,0", 2), ("2", 2), ("x", 2), ("-1", 2), (",", 2)])
def test_parse_gpus_errors(text: str, visible: int) -> None:
    with pytest.raises(ValueError, match="allowed"):
        shard.parse_gpus(text, visible)


def test_gpu_workers_get_a_shard_a_gpu_and_one_run_id(tmp_path) -> None:
    argv = ["sweep", "--gpus", "all", "--n", "1024", "--out", str(tmp_path / "s.parquet"), "--ray-shards", "2"]
    workers = shard.gpu_worker_commands(argv, [0, 3], tmp_path / "s.parquet", "run-1")
    assert [env["CUDA_VISIBLE_DEVICES"] for _, env, _ in workers] == ["0", "3"]
    assert [p.name for _, _, p in workers] == ["s.shard0of2.parquet", "s.shard1of2.parquet"]
    command = workers[1][0]
    assert command[:2] == [sys.executable, "-c"] and command[3:] == [
        "sweep", "--n", "1024", "--shard", "1/2", "--out", str(tmp_path / "s.shard1of2.parquet"), "--run-id", "run-1",
    ]  # fmt: skip


def test_ray_missing_is_one_line(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError, as when it is not installed
    argv = ["sweep", "--variants", "teaching", "--dtypes", "fp32", "--n", "8", "--rows", "4", "--ray"]
    assert main([*argv, "--out", str(tmp_path / "o.parquet")], "profiling") == 2
    err = capsys.readouterr().err
    assert "pip install 'blockscope[cluster]'" in err and err.count("\n") == 1
