"""`python -m profiling occupancy` and `inspect`: JSON numbers, the table, and one-line exit-2 errors."""

from __future__ import annotations

import json
import re

import pytest

import profiling.__main__ as cli_main
from profiling.occupancy import occupancy


@pytest.fixture
def run(monkeypatch, capsys, tmp_path):
    """main(argv) with only this module's commands registered (others may not exist in this checkout)."""
    monkeypatch.setattr(cli_main, "COMMAND_MODULES", ("profiling.cli_compile",))
    monkeypatch.setenv("BLOCKSCOPE_CACHE_DIR", str(tmp_path))

    def go(*argv: str) -> tuple[int, str, str]:
        try:
            status = cli_main.main(list(argv))
        except SystemExit as exit_:
            status = exit_.code
        out, err = capsys.readouterr()
        return status, out, err

    return go


def test_occupancy_json(run):
    status, out, err = run("occupancy", "--arch", "sm_90", "--regs", "138", "--num-warps", "1", "--shared-bytes", "0",
                           "--json")
    assert status == 0 and err == ""
    data = json.loads(out)
    # 138 regs -> 4608 regs/warp: 3 warps per sub-partition -> 12 one-warp blocks
    assert data["blocks_per_sm"] == 12 and data["warps_per_sm"] == 12 and data["limiter"] == "registers"
    assert data["occupancy"] == pytest.approx(12 / 64)
    assert data["limits"] == {"registers": 12, "shared_memory": 16, "warps": 64, "blocks": 32}


def test_occupancy_table(run):
    status, out, _ = run("occupancy", "--arch", "9.0", "--regs", "64", "--num-warps", "8", "--shared-bytes", "65568")
    assert status == 0
    assert re.search(r"^shared_memory +3  <- limiter$", out, re.M)
    assert re.search(r"^registers +4$", out, re.M)
    assert "blocks/SM 3, warps/SM 24, occupancy 37.5%" in out


@pytest.mark.parametrize("argv, message", [
    (("occupancy", "--arch", "sm_75", "--regs", "32", "--num-warps", "4"),
     "unknown arch 'sm_75'; allowed: sm_80, sm_86, sm_89, sm_90, sm_100, sm_120"),
    (("occupancy", "--regs", "-1", "--num-warps", "4"), "allowed: 0 to 255 registers/thread"),
    (("occupancy", "--regs", "300", "--num-warps", "4"), "allowed: 0 to 255 registers/thread"),
    (("occupancy", "--regs", "32", "--num-warps", "0"), "allowed: 1 to 32 warps"),
    (("occupancy", "--regs", "32", "--num-warps", "4", "--shared-bytes", "99999999999"), "allowed: 0 to"),
    (("occupancy", "--num-warps", "4"), "the following arguments are required: --regs"),
    (("inspect", "--variant", "nope", "--n", "1024"), "allowed: teaching, multirow, online, persistent, splitrow"),
    (("inspect", "--n", "1024", "--dtype", "fp8"), "unknown dtype 'fp8'; allowed: fp16, bf16, fp32"),
    (("inspect", "--n", "1024", "--arch", "sm_70"), "allowed: sm_80"),
    (("inspect", "--n", "70000"), "N=70000 is over this variant's limit; allowed: 1 <= N <= 65536"),
    (("inspect", "--n", "-5"), "allowed: a positive integer"),
    (("inspect", "--n", "1024", "--tile", "256"), "teaching: unknown tunable(s) tile; allowed: num_warps"),
    (("inspect", "--variant", "multirow", "--n", "1024", "--num-stages", "2"),
     "multirow: unknown tunable(s) num_stages; allowed: num_warps, rows_per_program"),
    (("inspect", "--n", "1024", "--num-warps", "3"), "num_warps=3 is not allowed; allowed: 1, 2, 4, 8, 16, 32"),
    (("inspect", "--variant", "online", "--n", "1024", "--tile", "24"), "allowed: a power of two from 16 to 65536"),
])
def test_bad_arguments_exit_2_with_one_line(run, argv, message):
    status, out, err = run(*argv)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert message in err and err.startswith("python -m profiling")


def test_inspect_json_and_ptx(run):
    status, out, err = run("inspect", "--variant", "teaching", "--n", "1000", "--num-warps", "4", "--dtype", "fp16",
                           "--arch", "sm_80", "--json", "--ptx")
    assert status == 0, err
    data = json.loads(out)
    assert (data["variant"], data["arch"], data["source"], data["n_cols"], data["num_warps"]) == (
        "teaching", "sm_80", "offline", 1000, 4)
    assert data["spill_store_bytes"] == data["spill_load_bytes"] == data["stack_bytes"] == 0
    assert data["shared_bytes"] == 16 and data["compile_seconds"] > 0
    expected = occupancy("sm_80", data["n_regs"], 4, 16)
    assert (data["blocks_per_sm"], data["occupancy"], data["limiter"]) == (
        expected.blocks_per_sm, expected.occupancy, expected.limiter)
    assert ".target sm_80" in data["ptx"] and "sass" not in data
    status, out, _ = run("inspect", "--n", "1000", "--num-warps", "4", "--arch", "sm_80")  # from the cache now
    assert status == 0 and "(offline, cached" in out and f"registers/thread {data['n_regs']}," in out


def test_occupancy_over_the_per_block_shared_limit_is_an_error(run):
    status, out, err = run("occupancy", "--regs", "32", "--num-warps", "4", "--shared-bytes", "300000")
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "0.0%" not in err
    assert "--shared-bytes" in err and "over the sm_90 per-block limit of 232448 bytes" in err
    assert "allowed: 0 to 232448" in err
    status, out, err = run("occupancy", "--arch", "sm_86", "--regs", "32", "--num-warps", "4",
                           "--shared-bytes", "101377")
    assert status == 2 and "sm_86 per-block limit of 101376 bytes" in err
    status, out, _ = run("occupancy", "--regs", "32", "--num-warps", "4", "--shared-bytes", "232448")
    assert status == 0 and "blocks/SM 1" in out  # exactly the limit still launches


@pytest.mark.parametrize("argv", [["occupancy", "--regs", "32", "--num-warps", "4", "--json"],
                                  ["occupancy", "--regs", "32", "--num-warps", "4"], ["--help"]])
def test_closed_stdout_ends_quietly(argv, tmp_path):
    """`python -m profiling ... | head -c 10`: the reader is gone before anything is written."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    read, write = os.pipe()
    os.close(read)  # every write to the pipe now fails with EPIPE
    try:
        done = subprocess.run([sys.executable, "-m", "profiling", *argv], stdout=write, stderr=subprocess.PIPE,
                              cwd=Path(__file__).resolve().parents[1], timeout=120, text=True)
    finally:
        os.close(write)
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert done.stderr == ""
    # argparse's help printer swallows the error itself (status 0); a command's output gets 128 + SIGPIPE
    assert done.returncode == (0 if argv == ["--help"] else cli_main.BROKEN_PIPE_STATUS)


def test_output_into_head_is_cut_quietly():
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(f"{sys.executable} -m profiling occupancy --regs 32 --num-warps 4 --json | head -c 10",
                          shell=True, cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and len(done.stdout) == 10 and done.stdout.startswith("{")
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
