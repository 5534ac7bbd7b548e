"""`seed` and `sweep` commands: bad arguments and a missing GPU exit 2 with one line on stderr."""

from __future__ import annotations

import argparse
import re

import pytest
import torch

from blockscope.profiling.cli import Parser
from blockscope.profiling.cli import main as entry
from blockscope.profiling.cli import measure as cli_measure

NO_CUDA = not torch.cuda.is_available()


@pytest.fixture(autouse=True)
def only_measure_commands(monkeypatch):
    monkeypatch.setattr(entry, "COMMAND_MODULES", ("blockscope.profiling.cli.measure",))


def fail(capsys, argv: list[str]) -> str:
    try:
        status = entry.main(argv)
    except SystemExit as exit_:
        status = exit_.code
    captured = capsys.readouterr()
    assert status == 2, captured
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err and captured.out == ""
    return lines[0]


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["sweep"], "the following arguments are required: --out"),
        (
            ["sweep", "--out", "x.parquet", "--variants", "teaching,nope"],
            "unknown variant(s) nope; allowed: torch, inductor, liger, quack, teaching, multirow",
        ),
        (["sweep", "--out", "x.parquet", "--dtypes", "fp8"], "unknown dtype(s) fp8; allowed: fp16, bf16, fp32"),
        (
            ["sweep", "--out", "x.parquet", "--methods", "wallclock"],
            "unknown method(s) wallclock; allowed: per_call_events, back_to_back_flushed, cuda_graph",
        ),
        (["sweep", "--out", "x.parquet", "--num-warps", "3"], "--num-warps 3 not allowed; allowed: 1, 2, 4, 8, 16, 32"),
        (["sweep", "--out", "x.parquet", "--n", "0"], "0 is out of range; allowed: integers from 1 to 2,147,483,647"),
        (["sweep", "--out", "x.parquet", "--n", str(10**30)], "is out of range; allowed: integers from 1 to"),
        (["sweep", "--out", "x.parquet", "--rows", "-5"], "-5 is out of range; allowed: integers from 1 to"),
        (["sweep", "--out", "x.parquet", "--n", ",".join(["8"] * 65)], "65 values; allowed: at most 64"),
        (["sweep", "--out", "x.parquet", "--n", "abc"], "'abc' is not an integer"),
        (["sweep", "--out", "x.parquet", "--variants", ""], "--variants is empty"),
        (
            ["sweep", "--out", "x.parquet", "--variants", "teaching", "--n", "70000"],
            "N=70000 is over every selected variant's limit; allowed: N <= 65536",
        ),
        (["sweep", "--out", "x.txt"], "unsupported suffix '.txt'; allowed: .parquet or .csv"),
        (["sweep", "--out", "x.csv", "--tunable", "tile=abc"], "--tunable 'tile=abc'"),
        (["sweep", "--out", "x.csv", "--tunable", "tile"], "malformed; allowed: NAME=V1,V2"),
        (
            ["sweep", "--out", "x.csv", "--variants", "teaching", "--tunable", "tile=64"],
            "--tunable tile: no selected variant takes it; allowed: fast_exp, num_warps, window",
        ),
        (["sweep", "--out", "x.csv", "--tunable", "num_warps=4"], "use --num-warps"),
        (["sweep", "--out", "x.csv", "--reps", "-3"], "-3 is not positive"),
        (["seed", "--rounds", "0"], "0 is not positive"),
        (["nosuch"], "invalid choice: 'nosuch'"),
    ],
)
def test_bad_arguments_exit_2_one_line(capsys, argv, expected):
    line = fail(capsys, argv)
    assert expected in line


def test_foreign_out_file_is_refused(capsys, tmp_path):
    out = tmp_path / "other.csv"
    out.write_text("a,b\n1,2\n")
    line = fail(capsys, ["sweep", "--out", str(out), "--variants", "torch", "--n", "128"])
    assert line.startswith("blockscope sweep: error: --out exists and cannot be resumed: other.csv:")
    assert "header lacks column(s) variant" in line
    assert out.read_text() == "a,b\n1,2\n"


def test_out_directory_is_named_as_such(capsys, tmp_path):
    """`--out DIR` used to answer "unsupported suffix ''"."""
    line = fail(capsys, ["sweep", "--out", str(tmp_path), "--variants", "torch", "--n", "128"])
    assert f"--out {tmp_path} is a directory; allowed: a results file path ending in .parquet or .csv" in line
    line = fail(capsys, ["sweep", "--out", "results/", "--variants", "torch", "--n", "128"])
    assert "--out results/ is a directory" in line


def test_retry_errors_flag():
    assert parse(["sweep", "--out", "x.csv", "--retry-errors"]).retry_errors
    assert not parse(["sweep", "--out", "x.csv"]).retry_errors


@pytest.mark.skipif(not NO_CUDA, reason="checks the no-GPU message")
@pytest.mark.parametrize("argv", [["seed"], ["sweep", "--out", "x.parquet", "--variants", "torch", "--n", "128"]])
def test_without_cuda_says_so(capsys, tmp_path, argv, monkeypatch):
    monkeypatch.chdir(tmp_path)
    line = fail(capsys, argv)
    assert f"blockscope {argv[0]}: error: {argv[0]} needs a CUDA GPU and this machine has none" in line
    assert not (tmp_path / "x.parquet").exists()


def parse(argv: list[str]) -> argparse.Namespace:
    parser = Parser(prog="test")
    cli_measure.register(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)


def test_config_selection_from_arguments():
    args = parse(
        [
            "sweep",
            "--out",
            "x.parquet",
            "--variants",
            "torch,teaching,online",
            "--dtypes",
            "fp16,fp32",
            "--n",
            "100,70000",
            "--rows",
            "8,16",
            "--num-warps",
            "4,8",
            "--tunable",
            "tile=256,1024",
        ]
    )
    configs = cli_measure.sweep_configs_from_args(args)
    count = {}
    for c in configs:
        count[c.variant] = count.get(c.variant, 0) + 1
    # dtypes x rows x (torch: 2 N; teaching: N=100 only x 2 warps; online: 2 N x 2 warps x 2 tiles)
    assert count == {"torch": 2 * 2 * 2, "teaching": 2 * 2 * 2, "online": 2 * 2 * 2 * 2 * 2}
    assert {c.n_rows for c in configs} == {8, 16}
    defaults = cli_measure.sweep_configs_from_args(parse(["sweep", "--out", "x.csv"]))
    assert {c.variant for c in defaults} == {
        "torch",
        "teaching",
        "multirow",
        "online",
        "persistent",
        "splitrow",
        "tinyrows",
        "vecrows",
        "auto",
    }
    assert {c.dtype for c in defaults} == {"fp16", "bf16", "fp32"}
    assert {c.n_rows for c in defaults if c.n_cols > 64} == {4096}  # tiny N: rows moving >= 32 MB (sweep_rows)
    assert {(c.dtype, c.n_rows) for c in defaults if c.n_cols == 8} == {
        ("fp16", 2**20),
        ("bf16", 2**20),
        ("fp32", 2**19),
    }
    assert max(c.n_cols for c in defaults if c.variant == "multirow") == 16384
    assert max(c.n_cols for c in defaults if c.variant == "tinyrows") == 64
    odd = {(c.dtype, c.n_cols) for c in defaults if c.variant == "vecrows"}  # only where rows are not 16-byte aligned
    assert odd and all(n % (4 if dtype == "fp32" else 8) for dtype, n in odd)
    named = cli_measure.sweep_configs_from_args(
        parse(["sweep", "--out", "x.csv", "--variants", "vecrows", "--n", "1024,1025"])
    )
    assert {c.n_cols for c in named} >= {1024, 1025}  # named: every N it takes
    explicit = cli_measure.sweep_configs_from_args(parse(["sweep", "--out", "x.csv", "--rows", "100", "--n", "8"]))
    assert {c.n_rows for c in explicit} == {100}  # rows given: not scaled


def test_progress_reporter_without_tqdm(monkeypatch, capsys):
    import builtins
    import io

    real_import = builtins.__import__

    def no_tqdm(name, *args, **kwargs):
        if name == "tqdm":
            raise ImportError("no tqdm")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tqdm)
    stream = io.StringIO()
    callback, close = cli_measure._progress_reporter(stream)
    from blockscope.profiling.measure.sweep import make_config

    callback(1, 3, make_config("teaching", "fp16", 4096, 1000))
    close()
    assert re.fullmatch(
        r"\[1/3 configs, \d+ s elapsed, about \d+ s left\] teaching fp16 R=4096 N=1000\n", stream.getvalue()
    ), stream.getvalue()


def test_seed_report_lines_in_the_seed_format():
    import re

    from blockscope.profiling.measure.timing import FakeClock

    clock = FakeClock(tick_us=4.0, wall_tick_s=0.5)
    lines = cli_measure.seed_report(
        n_rows=8,
        n_cols=1000,
        device="cpu",
        clock=clock,
        tracer=lambda fn: ["row_softmax_kernel"],
        rounds=3,
        warmup=0,
        graph_calls=2,
    )
    assert re.fullmatch(r"python=\S+ torch=\S+ triton=\S+", lines[0])
    assert lines[1] == "device=cpu capability=none"
    assert lines[2] == "X=(8, 1000) dtype=torch.float16 layout=contiguous row_stride=1000"
    assert lines[3] == "grid=(8,) BLOCK_SIZE=1024 masked_lanes_per_program=24"
    diff = float(lines[4].removeprefix("max_abs_diff="))
    assert lines[4].startswith("max_abs_diff=") and 0 <= diff < 2e-3
    assert re.fullmatch(r"row_sum_max_error=\d\.\d{3}e[-+]\d\d", lines[5])
    assert lines[6] == "torch_softmax_median_us=4.000 triton_softmax_median_us=4.000"
    assert lines[7] == "triton_profiler_cuda_kernels=['row_softmax_kernel']"
    assert lines[8:11] == [
        "method=per_call_events torch_softmax_median_us=4.000 triton_softmax_median_us=4.000",
        "method=back_to_back_flushed torch_softmax_median_us=4.000 triton_softmax_median_us=4.000",
        "method=cuda_graph torch_softmax_median_us=2.000 triton_softmax_median_us=2.000",
    ]
    assert lines[11] == "triton_first_call_s=0.500 (JIT compile + launch, cold)"
