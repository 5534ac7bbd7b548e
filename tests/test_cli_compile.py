"""`python -m profiling occupancy` and `inspect`: JSON numbers, the table, and one-line exit-2 errors."""

from __future__ import annotations

import json
import re

import pytest

from blockscope.profiling.cli import main as cli_main
from blockscope.profiling.inspect.occupancy import occupancy


@pytest.fixture
def run(monkeypatch, capsys, tmp_path):
    """main(argv) with only this module's commands registered (others may not exist in this checkout)."""
    monkeypatch.setattr(cli_main, "COMMAND_MODULES", ("blockscope.profiling.cli.compile",))
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
    status, out, err = run(
        "occupancy", "--arch", "sm_90", "--regs", "138", "--num-warps", "1", "--shared-bytes", "0", "--json"
    )
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


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ("occupancy", "--arch", "sm_75", "--regs", "32", "--num-warps", "4"),
            "unknown arch 'sm_75'; allowed: sm_80, sm_86, sm_89, sm_90, sm_100, sm_120",
        ),
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
        (
            ("inspect", "--n", "1024", "--tile", "256"),
            "teaching: unknown tunable(s) tile; allowed: fast_exp, num_warps, window",
        ),
        (
            ("inspect", "--variant", "multirow", "--n", "1024", "--num-stages", "2"),
            "multirow: unknown tunable(s) num_stages; allowed: fast_exp, num_warps, rows_per_program",
        ),
        (("inspect", "--n", "1024", "--num-warps", "3"), "num_warps=3 is not allowed; allowed: 1, 2, 4, 8, 16, 32"),
        (("inspect", "--variant", "online", "--n", "1024", "--tile", "24"), "allowed: a power of two from 16 to 65536"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(run, argv, message):
    status, out, err = run(*argv)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert message in err and err.startswith("blockscope")


def test_inspect_json_and_ptx(run):
    status, out, err = run(
        "inspect",
        "--variant",
        "teaching",
        "--n",
        "1000",
        "--num-warps",
        "4",
        "--dtype",
        "fp16",
        "--arch",
        "sm_80",
        "--json",
        "--ptx",
    )
    assert status == 0, err
    data = json.loads(out)
    assert (data["variant"], data["arch"], data["source"], data["n_cols"], data["num_warps"]) == (
        "teaching",
        "sm_80",
        "offline",
        1000,
        4,
    )
    assert data["spill_store_bytes"] == data["spill_load_bytes"] == data["stack_bytes"] == 0
    assert data["shared_bytes"] == 16 and data["compile_seconds"] > 0
    expected = occupancy("sm_80", data["n_regs"], 4, 16)
    assert (data["blocks_per_sm"], data["occupancy"], data["limiter"]) == (
        expected.blocks_per_sm,
        expected.occupancy,
        expected.limiter,
    )
    assert ".target sm_80" in data["ptx"] and "sass" not in data
    status, out, _ = run("inspect", "--n", "1000", "--num-warps", "4", "--arch", "sm_80")  # from the cache now
    assert status == 0 and "(offline, cached" in out and f"registers/thread {data['n_regs']}," in out


def test_occupancy_over_the_per_block_shared_limit_is_an_error(run):
    status, out, err = run("occupancy", "--regs", "32", "--num-warps", "4", "--shared-bytes", "300000")
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "0.0%" not in err
    assert "--shared-bytes" in err and "over the sm_90 per-block limit of 232448 bytes" in err
    assert "allowed: 0 to 232448" in err
    status, out, err = run(
        "occupancy", "--arch", "sm_86", "--regs", "32", "--num-warps", "4", "--shared-bytes", "101377"
    )
    assert status == 2 and "sm_86 per-block limit of 101376 bytes" in err
    status, out, _ = run("occupancy", "--regs", "32", "--num-warps", "4", "--shared-bytes", "232448")
    assert status == 0 and "blocks/SM 1" in out  # exactly the limit still launches


@pytest.mark.parametrize(
    "argv",
    [
        ["occupancy", "--regs", "32", "--num-warps", "4", "--json"],
        ["occupancy", "--regs", "32", "--num-warps", "4"],
        ["--help"],
    ],
)
def test_closed_stdout_ends_quietly(argv, tmp_path):
    """`python -m profiling ... | head -c 10`: the reader is gone before anything is written."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    read, write = os.pipe()
    os.close(read)  # every write to the pipe now fails with EPIPE
    try:
        done = subprocess.run(
            [sys.executable, "-m", "profiling", *argv],
            stdout=write,
            stderr=subprocess.PIPE,
            cwd=Path(__file__).resolve().parents[1],
            timeout=120,
            text=True,
        )
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
    done = subprocess.run(
        f"{sys.executable} -m profiling occupancy --regs 32 --num-warps 4 --json | head -c 10",
        shell=True,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and len(done.stdout) == 10 and done.stdout.startswith("{")
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr


def fake_info(**overrides):
    from blockscope.profiling.inspect.compiled import CompileInfo

    facts = dict(
        variant="teaching",
        arch="sm_90",
        dtype="fp16",
        n_cols=65536,
        n_rows=4096,
        tunables={"num_warps": 1},
        num_warps=1,
        num_stages=3,
        n_regs=255,
        spill_store_bytes=4096,
        spill_load_bytes=4096,
        stack_bytes=4096,
        shared_bytes=4,
        compile_seconds=71.0,
        source="offline",
        cached=False,
    )
    return CompileInfo(**{**facts, **overrides})


class FakeJob:
    """A CompileJob stand-in: done after `after_s` seconds with `outcome` (a CompileInfo or an exception)."""

    def __init__(self, outcome, after_s: float = 0.0) -> None:
        import time

        self.outcome, self.ready_at, self.started_at = outcome, time.monotonic() + after_s, time.monotonic()
        self.label = "teaching N=65536 fp16 for sm_90 (offline)"

    def done(self) -> bool:
        import time

        return time.monotonic() >= self.ready_at

    def result(self, timeout=None):
        import time
        from concurrent.futures import TimeoutError as WaitTimeout

        wait = self.ready_at - time.monotonic()
        if wait > 0:
            time.sleep(min(wait, timeout or wait))
            if not self.done():
                raise WaitTimeout()
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome


def test_inspect_refuses_a_predicted_pathological_config_at_once(run, monkeypatch):
    """`inspect --variant teaching --n 65536 --num-warps 1` compiled for 4 min 36 s with no output."""
    import time

    from blockscope.profiling.inspect import compiled

    def no_compile(*args, **kwargs):
        raise AssertionError("a refused config must not compile")

    monkeypatch.setattr(compiled, "inspect_async", no_compile)
    started = time.monotonic()
    status, out, err = run("inspect", "--variant", "teaching", "--n", "65536", "--num-warps", "1")
    assert status == 2 and out == "" and err.count("\n") == 1
    assert "refused: predicted pathological compile time: 2048 lanes per thread" in err
    assert "allowed: --force to compile anyway (killed after --timeout 120 s)" in err
    assert time.monotonic() - started < 30


def test_inspect_force_compiles_in_a_worker_with_timeout_and_progress(run, monkeypatch):
    from blockscope.profiling.cli import compile as cli_compile
    from blockscope.profiling.inspect import compiled

    calls = []

    def start(*args, **kwargs):
        calls.append((args, kwargs))
        return FakeJob(fake_info(), after_s=0.5)

    monkeypatch.setattr(compiled, "inspect_async", start)
    monkeypatch.setattr(cli_compile, "PROGRESS_EVERY_S", 0.1)
    status, out, err = run(
        "inspect", "--variant", "teaching", "--n", "65536", "--num-warps", "1", "--force", "--timeout", "5", "--json"
    )
    assert status == 0, err
    assert calls == [(("teaching", 65536, "fp16"), {"arch": None, "n_rows": 4096, "timeout_s": 5.0, "num_warps": 1})]
    lines = err.splitlines()
    assert lines[0] == "compiling teaching N=65536 fp16 for sm_90 (offline) in a worker (killed after 5 s)..."
    assert any(
        line.startswith("  still compiling teaching N=65536") and line.endswith("of at most 5 s") for line in lines[1:]
    )
    assert json.loads(out)["spill_store_bytes"] == 4096


def test_inspect_timeout_is_one_line(run, monkeypatch):
    from blockscope.profiling.inspect import compiled

    monkeypatch.setattr(compiled, "inspect_async", lambda *a, **k: FakeJob(compiled.CompileTimeout("timed out")))
    status, out, err = run("inspect", "--n", "1024", "--timeout", "5")
    assert status == 2 and out == "" and err.count("\n") == 1
    assert "compile timed out after 5 s (worker killed); allowed: --timeout SECONDS to wait longer" in err
    status, _, err = run("inspect", "--n", "1024", "--timeout", "0")
    assert status == 2 and "allowed: seconds > 0" in err
