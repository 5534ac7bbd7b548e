"""`sweep --ray` on a local Ray instance (issue 38 item 5): the Ray-run sweep equals the in-process one.

The CPU test run: `run_on_ray(num_gpus=0, worker_code=tests.ray_cpu_worker.CODE)`, i.e. each shard is a Ray task that
runs the real `sweep` CLI in a subprocess on the CPU interpreter with tests/test_sweep.py's fakes (FakeClock, fake
compile facts and kernel names); the in-process `sweep` applies the same fakes. One local instance (2 CPUs, no
GPUs, no dashboard) serves the module. Without Ray installed these tests skip (requirements-test.txt installs it).
"""

from __future__ import annotations

import ast
import functools
import math
import os
import signal
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest

from blockscope.profiling.cli.main import main
from blockscope.profiling.measure import shard
from blockscope.profiling.measure.sweep import make_config
from blockscope.profiling.results import COLUMNS, ENV_COLUMNS, load_results, save_results
from tests import ray_cpu_worker
from tests.test_sweep import run

ROOT = Path(__file__).resolve().parents[1]
# a few configs: Triton and torch rows, an 'unsupported:' row (staged, odd N in 16 bits) and error rows (cluster
# and staged cannot run on the interpreter); two timing methods, fixed reps, no compile workers
SWEEP = [
    "sweep", "--variants", "torch,teaching,staged,cluster", "--dtypes", "fp32,fp16", "--n", "8,13", "--rows", "4",
    "--num-warps", "4", "--methods", "per_call_events,back_to_back_flushed", "--reps", "2", "--warmup", "0",
    "--compile-workers", "0",
]  # fmt: skip
MEASURED = ("median_us", "p20_us", "p80_us", "min_us", "max_us", "first_call_s", "gbps", "copy_fraction")
MEASURED += ("timing_note", "pruned")  # what a GPU measures differently on each run: present, not compared
DETERMINISTIC = [c for c in COLUMNS if c not in MEASURED and c not in ENV_COLUMNS]  # config, checks, errors, facts
SHARDS = 2


@pytest.fixture(scope="module")
def ray_local() -> Iterator[Any]:
    """One local Ray instance for the module: 2 CPUs, no GPUs, no dashboard, a 100 MiB object store; shut down after,
    and what ray.init leaves in this process (a SIGTERM handler, RAY_* and PYTHONBREAKPOINT variables, a sys.path
    entry) put back, so the modules after this one run as without it."""
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    environ, path = dict(os.environ), list(sys.path)
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, num_gpus=0, include_dashboard=False, log_to_driver=False, object_store_memory=100 * 2**20)
    try:
        yield ray
    finally:
        ray.shutdown()
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        os.environ.clear()
        os.environ.update(environ)
        sys.path[:] = path


def label(row: Any) -> str:
    return f"{row.variant} {row.dtype} R={row.n_rows} N={row.n_cols} {row.tunables} {row.method}"


def first_mismatch(expected: pd.DataFrame, got: pd.DataFrame, columns: list[str]) -> str | None:
    """The first config (canonical order) whose `columns` differ, 'config: column expected != got'; None if equal."""
    keys_expected = [label(r) for r in expected.itertuples()]
    keys_got = [label(r) for r in got.itertuples()]
    if keys_expected != keys_got:
        missing = [k for k in keys_expected if k not in keys_got]
        extra = [k for k in keys_got if k not in keys_expected]
        return f"config sets differ: first missing {missing[:1]}, first extra {extra[:1]}"
    for i, key in enumerate(keys_expected):
        for column in columns:
            a, b = expected.at[i, column], got.at[i, column]
            if not ((pd.isna(a) and pd.isna(b)) or (not pd.isna(a) and not pd.isna(b) and a == b)):
                return f"{key}: {column} {a!r} (in-process) != {b!r} (Ray)"
    return None


def cpu_sweep(monkeypatch: pytest.MonkeyPatch) -> None:
    """The in-process `sweep` on the CPU interpreter (tests.ray_cpu_worker's patches, undone after the test)."""
    for owner, name, value in ray_cpu_worker.cpu_patches():
        monkeypatch.setattr(owner, name, value)


def test_ray_sweep_equals_the_in_process_sweep(tmp_path, monkeypatch, capsys, ray_local) -> None:
    cpu_sweep(monkeypatch)
    whole, merged_path = tmp_path / "whole.parquet", tmp_path / "ray.parquet"
    assert main([*SWEEP, "--out", str(whole)], "profiling") == 0, capsys.readouterr().err
    capsys.readouterr()
    monkeypatch.setattr(
        shard, "run_on_ray", functools.partial(shard.run_on_ray, num_gpus=0, worker_code=ray_cpu_worker.CODE)
    )
    started = time.monotonic()
    status = main([*SWEEP, "--ray", "local", "--ray-shards", str(SHARDS), "--out", str(merged_path)], "profiling")
    seconds = time.monotonic() - started
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert f"merged {SHARDS} parts into {merged_path}: 32 rows, 0 GPU(s) by gpu_uuid" in captured.out
    expected, merged = shard.canonical(load_results(whole)), load_results(merged_path)
    assert len(expected) == 32 and len(merged) == len(expected), f"{len(merged)} Ray rows, {len(expected)} in-process"
    mismatch = first_mismatch(expected, merged, DETERMINISTIC)
    assert mismatch is None, mismatch
    # the sweep's own content: passing checks, an unsupported row, error rows, kernel names, compile facts
    assert merged["error"].fillna("").str.startswith("unsupported: staged").sum() == 2
    assert merged["error"].fillna("").str.contains("cannot run").sum() == 14
    ok = merged[merged["error"].fillna("") == ""]
    assert len(ok) == 16 and (ok["kernel_names"] == "row_softmax_fake; second_kernel").all()
    assert ok[ok["variant"] == "teaching"]["n_regs"].eq(40).all()
    for column in ("median_us", "p20_us", "p80_us", "min_us", "max_us", "first_call_s"):  # timings present
        bad = ok[~ok[column].map(lambda v: not pd.isna(v) and math.isfinite(v) and v > 0)]
        assert bad.empty, f"{label(next(bad.itertuples()))}: {column} {bad[column].iloc[0]!r}"
    # provenance: one run id from the driver for every worker, this host, no GPU record on the CPU
    assert merged["run_id"].nunique() == 1 and merged["run_id"].iloc[0] != expected["run_id"].iloc[0]
    assert (merged["host_name"] == socket.gethostname()).all() and merged["gpu_uuid"].isna().all()
    assert (merged["nvml_status"] == "no CUDA device").all()
    # each worker's part holds exactly its shard's configs (index mod N), beside --out
    from blockscope.profiling.cli.measure import sweep_configs_from_args

    configs = sweep_configs_from_args(_parse([*SWEEP, "--out", str(whole)]))
    for j in range(SHARDS):
        part = load_results(shard.part_path(merged_path, j, SHARDS))
        want = {(c.variant, c.dtype, c.n_rows, c.n_cols) for c in shard.shard(configs, j, SHARDS)}
        got = set(part[["variant", "dtype", "n_rows", "n_cols"]].itertuples(index=False, name=None))
        assert got == want, f"part {j}/{SHARDS}: first unexpected {sorted(got ^ want)[:1]}"
    assert seconds < 60, f"the Ray sweep took {seconds:.0f} s"


def _parse(argv: list[str]) -> Any:
    from blockscope.profiling.cli import Parser
    from blockscope.profiling.cli import measure as cli_measure

    parser = Parser(prog="test")
    cli_measure.register(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)


def test_a_failed_shard_is_named_and_the_other_parts_stay(tmp_path, ray_local) -> None:
    code = (
        "import sys, pathlib; args = sys.argv[1:]; out = pathlib.Path(args[args.index('--out') + 1]); "
        "sys.exit(3) if '1/2' in args else out.write_text('part')"
    )
    with pytest.raises(RuntimeError, match=r"shard 1/2 exited 3"):
        shard.run_on_ray(None, ["sweep"], 2, tmp_path / "o.parquet", "r", num_gpus=0, worker_code=code)
    assert (tmp_path / "o.shard0of2.parquet").read_text() == "part"


@pytest.mark.parametrize("shards", [None, 2])
def test_a_cluster_without_gpus_is_refused_not_waited_on(tmp_path, ray_local, shards: int | None) -> None:
    with pytest.raises(ValueError, match="the Ray cluster has no GPUs; allowed"):  # GPU tasks would never start
        shard.run_on_ray(None, ["sweep"], shards, tmp_path / "o.parquet", "r")


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_unreachable_address_is_one_line_and_keeps_what_was_measured(tmp_path, capsys) -> None:
    pytest.importorskip("ray")
    out = tmp_path / "sweep.parquet"
    save_results(run([make_config("torch", "fp32", 4, 8)], methods=["per_call_events"]), out)  # measured earlier
    part = shard.part_path(out, 0, 2)
    part.write_bytes(b"measured before")
    before = out.read_bytes()
    started = time.monotonic()
    status = main([*SWEEP, "--ray", f"127.0.0.1:{_closed_port()}", "--ray-shards", "2", "--out", str(out)], "profiling")
    captured = capsys.readouterr()
    assert status == 2 and time.monotonic() - started < 10
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "unreachable" in lines[0] and "allowed:" in lines[0], captured.err
    assert out.read_bytes() == before and part.read_bytes() == b"measured before"


def test_unroutable_address_fails_within_the_connect_timeout(tmp_path, monkeypatch) -> None:
    pytest.importorskip("ray")
    started = time.monotonic()
    with pytest.raises(ConnectionError, match=r"192\.0\.2\.1:6379 unreachable"):  # TEST-NET-1: never answers
        shard.run_on_ray("192.0.2.1:6379", ["sweep"], 1, tmp_path / "o.parquet", "r", connect_timeout_s=0.5)
    assert time.monotonic() - started < 5

    def silent(endpoint: tuple[str, int], timeout: float) -> None:
        raise TimeoutError("timed out")  # what a host that drops the packets gives after `timeout`

    monkeypatch.setattr(socket, "create_connection", silent)
    with pytest.raises(ConnectionError, match=r"head:6379 unreachable \(no answer within 0\.5 s\); allowed"):
        shard.run_on_ray("head:6379", ["sweep"], 1, tmp_path / "o.parquet", "r", connect_timeout_s=0.5)


@pytest.mark.parametrize(
    ("address", "endpoint"),
    [
        (None, None),
        ("auto", None),
        ("local", None),
        ("head:6379", ("head", 6379)),
        ("ray://head:10001", ("head", 10001)),
        ("[::1]:6379", ("::1", 6379)),
        ("10.0.0.2:x", None),
    ],
)
def test_ray_endpoint(address: str | None, endpoint: tuple[str, int] | None) -> None:
    assert shard.ray_endpoint(address) == endpoint


class FakeRay:
    """The bits of `ray` run_on_ray uses: records the remote options, runs nothing (each shard 'exits 0')."""

    def __init__(self, gpus: int) -> None:
        self.gpus, self.options, self.commands = gpus, {}, []

    def is_initialized(self) -> bool:
        return True

    def cluster_resources(self) -> dict[str, float]:
        return {"CPU": 64.0, "GPU": float(self.gpus)}

    def remote(self, **options: Any) -> Any:
        self.options = options

        def wrap(fn: Any) -> Any:
            return SimpleNamespace(remote=lambda command: self.commands.append(command) or (0, ""))

        return wrap

    def get(self, refs: list[Any], timeout: float | None = None) -> list[Any]:
        return refs


def test_on_a_gpu_cluster_each_shard_takes_one_gpu(tmp_path, monkeypatch) -> None:
    fake = FakeRay(gpus=3)
    monkeypatch.setitem(sys.modules, "ray", fake)
    parts = shard.run_on_ray("auto", ["sweep", "--n", "1024", "--ray"], None, tmp_path / "s.parquet", "run-1")
    assert fake.options == {"num_gpus": 1.0, "max_retries": 0}  # the default: one whole GPU per task
    assert [p.name for p in parts] == [f"s.shard{j}of3.parquet" for j in range(3)]
    assert [c[2] for c in fake.commands] == [shard.WORKER_CODE] * 3
    assert fake.commands[2][3:] == [
        "sweep", "--n", "1024", "--shard", "2/3", "--out", str(tmp_path / "s.shard2of3.parquet"), "--run-id", "run-1",
    ]  # fmt: skip


def test_only_the_shard_module_imports_ray_and_only_when_called() -> None:
    """The dashboard (and everything else shipped) never imports Ray: it is the optional `cluster` extra."""
    found = []
    shipped = [
        ROOT / "app.py",
        *(p for folder in ("blockscope", "kernels", "profiling", "pages") for p in (ROOT / folder).rglob("*.py")),
    ]
    for path in sorted(shipped):
        tree = ast.parse(path.read_text(), str(path))
        top_level = {id(node) for node in tree.body}
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(n == "ray" or n.startswith("ray.") for n in names):
                found.append((path.relative_to(ROOT).as_posix(), id(node) in top_level))
    assert found == [("profiling/measure/shard.py", False)], found
