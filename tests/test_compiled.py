"""Offline compile facts with the wheel's real ptxas (sm_80, sm_90, sm_120), the JSON cache and specialization.

One inspect_many call compiles everything in two worker processes (about 20 s on 2 cores, most of it the
65536-lane fp32 kernel); its cache lives in a temporary directory.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

from blockscope import kernels
from blockscope.profiling.inspect import compiled
from blockscope.profiling.inspect.compiled import CompileInfo, inspect, inspect_many, inspect_offline

CONFIGS = [
    {"variant": "teaching", "n_cols": 65536, "dtype": "fp32", "arch": "sm_90", "num_warps": 4},
    {"variant": "teaching", "n_cols": 1024, "dtype": "fp32", "arch": "sm_90", "num_warps": 4},
    {"variant": "teaching", "n_cols": 1000, "dtype": "fp16", "arch": "sm_80", "num_warps": 4},
    {"variant": "teaching", "n_cols": 1000, "dtype": "fp16", "arch": "sm_120", "num_warps": 4},
    {"variant": "teaching", "n_cols": 70000, "dtype": "fp16", "arch": "sm_90"},  # over the limit: error entry
    {
        "variant": "persistent",
        "n_cols": 8192,
        "dtype": "fp32",
        "arch": "sm_90",
        "tunables": {"num_warps": 8, "num_stages": 3},
    },
    {"variant": "teaching", "n_cols": 16384, "dtype": "fp16", "arch": "sm_90", "num_warps": 4},
]


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory):
    return tmp_path_factory.mktemp("compiled-cache")


@pytest.fixture(scope="module")
def results(cache_root):
    return inspect_many(CONFIGS, workers=2, cache_root=cache_root)


def test_big_block_spills_small_does_not(results):
    big, small = results[0], results[1]
    assert isinstance(big, CompileInfo) and isinstance(small, CompileInfo)
    # BLOCK 65536 fp32 on 128 threads: 512 values per thread cannot stay in registers
    assert big.spill_store_bytes > 0 and big.spill_load_bytes > 0 and big.stack_bytes > 0
    assert small.spill_store_bytes == small.spill_load_bytes == small.stack_bytes == 0
    assert 16 <= small.n_regs <= 64 and 1 <= big.n_regs <= 255
    assert (big.source, big.cached, big.arch, big.dtype) == ("offline", False, "sm_90", "fp32")
    assert big.constexprs == {"n_cols": 65536, "BLOCK_SIZE": 65536, "EXACT": 1, "ALIGN": 1} and big.num_stages == 3
    assert big.shared_bytes == small.shared_bytes == 16  # the cross-warp reduction scratch (4 warps x 4 B)


def test_each_arch_gets_its_own_code(results):
    sm90, sm80, sm120 = results[1], results[2], results[3]
    assert ".target sm_90a" in sm90.ptx and "sm_90a" in sm90.sass
    assert ".target sm_80" in sm80.ptx and "code for sm_80" in sm80.sass
    assert ".target sm_120a" in sm120.ptx and "sm_120" in sm120.sass
    for info in (sm80, sm120):
        assert info.spill_store_bytes == 0 and 8 <= info.n_regs <= 64 and info.shared_bytes == 16
        assert "row_softmax_kernel" in info.sass and "EXIT" in info.sass
    assert "ptx" not in sm80.to_dict() and sm80.to_dict()["n_regs"] == sm80.n_regs


def test_error_entry_keeps_the_others(results):
    assert len(results) == len(CONFIGS)
    assert results[4]["error"] == "ValueError: teaching: N=70000 is over this variant's limit; allowed: 1 <= N <= 65536"
    assert results[4]["config"]["n_cols"] == 70000
    assert all(isinstance(r, CompileInfo) for i, r in enumerate(results) if i != 4)
    assert results[6].n_cols == 16384 and results[6].tunables == {"num_warps": 4}


def test_pipelined_persistent_matches_h200_shared_bytes(results):
    info = results[5]
    # 3 stages of a 8192-lane fp32 row in shared memory + reduction scratch: the H200 ncu capture's 65568 B
    assert info.shared_bytes == 65568 and info.num_stages == 3 and info.num_warps == 8
    assert info.tunables == {"num_warps": 8, "num_stages": 3}


def test_offline_matches_live_h200_compile(results):
    """data/ncu_validation.csv recorded this kernel's live H200 compile: 148 registers/thread, 16 B shared."""
    info = results[6]
    assert (info.n_regs, info.shared_bytes, info.spill_store_bytes) == (148, 16, 0)


def test_second_call_is_a_cache_hit(results, cache_root):
    again = inspect_offline("teaching", 65536, "fp32", "sm_90", cache_root=cache_root, num_warps=4)
    first = results[0]
    assert again.cached and again.source == "offline"
    assert (again.n_regs, again.spill_store_bytes, again.shared_bytes) == (
        first.n_regs,
        first.spill_store_bytes,
        first.shared_bytes,
    )
    assert again.ptx == first.ptx
    files = list(cache_root.glob("teaching-fp32-sm_90-*.json"))
    assert len(files) == 2 and all(json.loads(f.read_text())["format"] == compiled.CACHE_FORMAT for f in files)
    # n_rows is not a compile input of the teaching kernel: same cache entry, the request's own n_rows
    other_rows = inspect_offline("teaching", 1024, torch.float32, "9.0", n_rows=48, cache_root=cache_root, num_warps=4)
    assert other_rows.cached and other_rows.n_rows == 48 and other_rows.n_regs == results[1].n_regs


def test_env_cache_dir_and_inspect_default_arch(results, cache_root, monkeypatch):
    monkeypatch.setenv("BLOCKSCOPE_CACHE_DIR", str(cache_root.parent))
    assert compiled.cache_dir() == cache_root.parent / "compiled"
    monkeypatch.setattr(compiled, "cache_dir", lambda: cache_root)
    info = inspect("teaching", 1024, "fp32", num_warps=4)  # no GPU here: offline for sm_90
    assert (info.source, info.arch, info.cached, info.n_regs) == ("offline", "sm_90", True, results[1].n_regs)


def test_corrupt_cache_entry_is_ignored(cache_root):
    path = next(cache_root.glob("teaching-fp16-sm_80-*.json"))
    path.write_text("{not json")
    assert compiled._read_cache(path) is None


def test_specialization_matches_a_live_launch():
    spec = kernels.get_variant("persistent")
    plan = spec.plan(4096, 1000, torch.float16)
    signature, constexprs, attrs = compiled._specialization(spec, plan, torch.float16)
    divisible = [["tt.divisibility", 16]]
    # pointers aligned; n_rows 4096 divisible by 16; strides and n_cols 1000 are not
    assert attrs == {(0,): divisible, (1,): divisible, (4,): divisible}
    assert signature["n_cols"] == "i32" and signature["BLOCK_SIZE"] == "constexpr"
    one_row = spec.plan(1, 1024, torch.float16)
    signature, constexprs, attrs = compiled._specialization(spec, one_row, torch.float16)
    assert signature["n_rows"] == "constexpr" and constexprs["n_rows"] == 1  # Triton specializes 1
    assert attrs[(2,)] == attrs[(5,)] == divisible  # stride 1024 and n_cols 1024


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: inspect_offline("teaching", 1024, "fp16", "sm_75"), "allowed: sm_80, sm_86"),
        (lambda: inspect_offline("nope", 1024, "fp16"), "allowed: teaching, multirow"),
        (lambda: inspect_offline("teaching", 1024, "fp8"), "allowed: fp16, bf16, fp32"),
        (lambda: inspect_offline("teaching", 1024, torch.float64), "allowed: fp16, bf16, fp32"),
        (lambda: inspect_offline("teaching", 65537, "fp16"), "allowed: 1 <= N <= 65536"),
        (lambda: inspect_offline("multirow", 20000, "fp16"), "allowed: 1 <= N <= 16384"),
        (lambda: inspect_offline("teaching", 0, "fp16"), "allowed: a positive integer"),
        (lambda: inspect_offline("teaching", 1024, "fp16", tile=64), "unknown tunable.*allowed: fast_exp, num_warps"),
        (lambda: inspect_offline("online", 1024, "fp16", tile=8), "allowed: a power of two from 16"),
    ],
)
def test_errors_name_what_is_allowed(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_a_crashing_worker_fails_only_its_config(monkeypatch):
    """Worker 1 answers config 0 then dies on config 1; config 2 goes to a fresh worker."""
    calls = []

    def fake_process(payload, timeout_s):
        requests = json.loads(payload)
        calls.append(([r["n_cols"] for r in requests], timeout_s))
        line = compiled.RESULT_PREFIX + json.dumps({"error": "fake", "config": requests[0]})
        noise = "{\n.visible .entry row_softmax_kernel(\n"  # PTX printed by Triton never counts as a result
        if len(calls) == 1:
            return -11, noise + line + "\n", "Segmentation fault"
        return 0, line + "\n", ""

    monkeypatch.setattr(compiled, "_run_worker_process", fake_process)
    requests = [{"n_cols": n} for n in (10, 20, 30)]
    out = compiled._run_workers(requests, workers=1, timeout_s=5)
    assert calls == [([10, 20, 30], 15), ([30], 5)]  # timeout_s per config still to compile
    assert out[0]["config"] == {"n_cols": 10} and out[2]["config"] == {"n_cols": 30}
    assert out[1]["error"] == "worker exited -11: Segmentation fault (while compiling this config)"


def test_result_lines_skip_noise_and_torn_lines():
    prefix = compiled.RESULT_PREFIX
    text = f'{{\nptxas info\n{prefix}{{"a": 1}}\n{prefix}{{"b": 2}}\n{prefix}{{"c"'
    assert compiled._result_lines(text) == [{"a": 1}, {"b": 2}]
    assert compiled._result_lines(text.encode()) == [{"a": 1}, {"b": 2}]
    assert compiled._result_lines(None) == []


@pytest.mark.parametrize("variant", ["teaching", "splitrow", "staged_split", "cluster", "vecrows"])
def test_live_args_cover_every_pointer_type_and_options_match_the_launch(variant):
    """The bundled H200 sweep had no compile facts for splitrow and staged_split: their workspace pointers are *i64,
    which the live compile's stand-in arguments did not know (KeyError). Every pointer now gets a tensor of its
    dtype; the live compile also takes the launch's cooperative option, so it compiles the kernel the launch runs."""
    from types import SimpleNamespace

    from blockscope.kernels._common import cooperative_launch_supported

    spec = kernels.get_variant(variant)
    tunables = {"chunk": 4096} if variant == "splitrow" else {"chunks": 4} if variant == "staged_split" else {}
    plan = spec.plan(4096, 65536, torch.float16, **tunables)
    declared = spec.signature(torch.float16)
    args = compiled._live_args(spec, plan, torch.float16, torch.device("cpu"))
    runtime = [name for name in declared if declared[name] != "constexpr"]
    assert len(args) == len(runtime)
    for name, arg in zip(runtime, args, strict=True):
        if declared[name].startswith("*"):
            assert compiled.POINTER_DTYPES[declared[name]] == arg.dtype, name
    cooperative = variant in ("splitrow", "staged_split") and cooperative_launch_supported()
    assert compiled.launch_options(variant, plan).get("launch_cooperative_grid", False) is cooperative
    with pytest.raises(ValueError, match="allowed: \\*fp16"):
        fake = SimpleNamespace(
            name=variant, kernel_function=spec.kernel_function, signature=lambda dtype: {**declared, runtime[0]: "*fp8"}
        )
        compiled._live_args(fake, plan, torch.float16, torch.device("cpu"))


@pytest.mark.gpu
@pytest.mark.parametrize("variant, tunables", [("splitrow", {"chunk": 4096}), ("staged_split", {"chunks": 4})])
def test_live_inspect_reads_the_workspace_variants(variant, tunables):
    info = inspect(variant, 65536, "fp16", **tunables)
    assert info.source == "live" and 8 <= info.n_regs <= 255 and info.function_handle


@pytest.mark.gpu
def test_live_inspect_matches_the_driver():
    from blockscope.kernels._common import driver_blocks_per_sm
    from blockscope.profiling.inspect.occupancy import occupancy

    info = inspect("teaching", 1000, "fp16", num_warps=4)
    assert info.source == "live" and info.arch == compiled.live_arch() and info.function_handle
    assert 8 <= info.n_regs <= 255 and info.shared_bytes == 16 and info.warm_seconds < info.compile_seconds + 1
    expected = occupancy(info.arch, info.n_regs, 4, info.shared_bytes).blocks_per_sm
    assert driver_blocks_per_sm(info.function_handle, 4, info.shared_bytes) == expected


PTXAS_COUNT = r"""
import json, subprocess, sys
from pathlib import Path

calls = []
real_run = subprocess.run


def counting(cmd, *args, **kwargs):
    if isinstance(cmd, (list, tuple)) and Path(str(cmd[0])).name.startswith("ptxas") and "--version" not in cmd:
        calls.append(cmd)  # a compile (Triton also asks `ptxas --version`, which costs nothing)
    return real_run(cmd, *args, **kwargs)


subprocess.run = counting
from blockscope.profiling.inspect import compiled

info = compiled.inspect_offline("teaching", 1024, "fp32", "sm_90", cache=False, num_warps=4)
print(json.dumps({"ptxas_runs": len(calls), "n_regs": info.n_regs, "stack": info.stack_bytes,
                  "spills": info.spill_store_bytes, "again": compiled.ptxas_usage(info.ptx, 90)}))
"""


def test_ptxas_runs_once_per_compile(tmp_path, results):
    """Triton's cubin step already runs `ptxas -v`; a second run just to read registers and spills doubled every
    compile (4 min 36 s for the teaching kernel at N=65536 with 1 warp)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(
        PYTHONPATH=str(Path(__file__).resolve().parents[1]),
        TRITON_CACHE_DIR=str(tmp_path / "triton"),
        BLOCKSCOPE_CACHE_DIR=str(tmp_path / "blockscope"),
    )
    done = subprocess.run([sys.executable, "-c", PTXAS_COUNT], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    facts = json.loads(done.stdout.strip().splitlines()[-1])
    assert facts["ptxas_runs"] == 1  # Triton's own; the `again` check below is this test's second
    assert facts["n_regs"] == results[1].n_regs and facts["stack"] == facts["spills"] == 0
    assert (facts["again"]["stack_bytes"], facts["again"]["spill_store_bytes"]) == (0, 0)


def test_parse_ptxas_log():
    log = (
        "ptxas info    : Compiling entry function 'row_softmax_kernel' for 'sm_90a'\n"
        "ptxas info    : Function properties for row_softmax_kernel\n"
        "    2048 bytes stack frame, 2044 bytes spill stores, 2040 bytes spill loads\n"
        "ptxas info    : Used 255 registers, used 1 barriers, 16 bytes smem\n"
    )
    assert compiled.parse_ptxas_log(log) == {
        "n_regs": 255,
        "stack_bytes": 2048,
        "spill_store_bytes": 2044,
        "spill_load_bytes": 2040,
    }
    assert compiled.parse_ptxas_log("") is None


SLEEPY_WORKER = r"""
import subprocess, sys, time
child = subprocess.Popen(["sleep", "300"])
open(sys.argv[1], "w").write(str(child.pid))
time.sleep(300)
"""


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as status:
            return "\nState:\tZ" in status.read()  # a zombie waiting for init: killed
    except FileNotFoundError:
        return True


def test_timeout_kills_the_worker_and_what_it_started(tmp_path, monkeypatch):
    pid_file = tmp_path / "grandchild.pid"
    monkeypatch.setattr(compiled, "_worker_command", lambda: [sys.executable, "-c", SLEEPY_WORKER, str(pid_file)])
    started = time.monotonic()
    with pytest.raises(compiled.CompileTimeout, match=r"timed out after 2 s \(worker killed\)"):
        inspect_offline("teaching", 1024, "fp16", "sm_90", cache_root=tmp_path, timeout_s=2, num_warps=4)
    assert time.monotonic() - started < 30
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while not _gone(grandchild) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _gone(grandchild), "the compile the worker started (ptxas) is still running"


def test_inspect_async_hit_is_done_at_once(results, cache_root):
    job = compiled.inspect_async("teaching", 1024, "fp32", "sm_90", cache_root=cache_root, num_warps=4)
    assert job.done() and job.result().cached and job.result().n_regs == results[1].n_regs


def test_inspect_async_returns_at_once_and_joins_the_running_job(tmp_path, monkeypatch, results):
    monkeypatch.setattr(compiled, "_JOBS", {})
    release, requests = threading.Event(), []

    def slow_workers(batch, workers, timeout_s=None):
        requests.append((batch, timeout_s))
        assert release.wait(30)
        return [results[1]]

    monkeypatch.setattr(compiled, "_run_workers", slow_workers)
    started = time.monotonic()
    job = compiled.inspect_async("teaching", 1000, "fp32", "sm_90", cache_root=tmp_path, timeout_s=7, num_warps=4)
    again = compiled.inspect_async("teaching", 1000, "fp32", "sm_90", cache_root=tmp_path, timeout_s=7, num_warps=4)
    assert again is job and not job.done() and time.monotonic() - started < 5
    assert job.label == "teaching N=1000 fp32 for sm_90 (offline)" and job.deadline > job.started_at + 7
    release.set()
    assert job.result(timeout=30) is results[1]
    assert len(requests) == 1 and requests[0][1] == 7 and requests[0][0][0]["n_cols"] == 1000
    with pytest.raises(ValueError, match="allowed: 1 <= N <= 65536"):  # bad configs fail at once
        compiled.inspect_async("teaching", 70000, "fp32", "sm_90", cache_root=tmp_path)


def test_a_queued_job_gets_its_deadline_when_a_worker_takes_it(tmp_path, monkeypatch, results):
    """Two workers busy: a third compile waits with no deadline (a page polling it keeps polling) and its timeout
    counts from when it runs. (Its deadline used to start at submission, so a page stopped polling a job still
    queued behind other compiles and showed no compile facts.)"""
    monkeypatch.setattr(compiled, "_JOBS", {})
    monkeypatch.setattr(compiled, "_EXECUTOR", [])
    release = threading.Event()

    def blocked_workers(batch, workers, timeout_s=None):
        assert release.wait(30)
        return [results[1]]

    monkeypatch.setattr(compiled, "_run_workers", blocked_workers)
    jobs = [
        compiled.inspect_async("teaching", n, "fp32", "sm_90", cache_root=tmp_path, timeout_s=5, num_warps=4)
        for n in (1000, 1001, 1002)
    ]
    deadline = time.monotonic() + 10
    while not (jobs[0].running() and jobs[1].running()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert jobs[0].deadline <= time.monotonic() + 35 and jobs[1].deadline < math.inf
    assert not jobs[2].running() and jobs[2].deadline == math.inf  # queued: no clock yet
    time.sleep(0.2)
    release.set()
    assert jobs[2].result(timeout=30) is results[1]
    assert jobs[2].started_at >= jobs[2].submitted_at + 0.2 and jobs[2].deadline == jobs[2].started_at + 35


def test_a_failed_background_job_is_kept_for_a_while(tmp_path, monkeypatch):
    monkeypatch.setattr(compiled, "_JOBS", {})
    monkeypatch.setattr(
        compiled,
        "_run_workers",
        lambda batch, workers, timeout_s=None: [
            {"error": "timed out after 1 s (worker killed) (while compiling this config)", "timed_out": True}
        ],
    )
    job = compiled.inspect_async("teaching", 1000, "fp16", "sm_90", cache_root=tmp_path, num_warps=4)
    with pytest.raises(compiled.CompileTimeout, match="offline compile timed out after 1 s"):
        job.result(timeout=30)
    assert compiled.inspect_async("teaching", 1000, "fp16", "sm_90", cache_root=tmp_path, num_warps=4) is job
    monkeypatch.setattr(compiled, "JOB_ERROR_TTL_S", 0.0)
    retry = compiled.inspect_async("teaching", 1000, "fp16", "sm_90", cache_root=tmp_path, num_warps=4)
    assert retry is not job
    with pytest.raises(compiled.CompileTimeout):
        retry.result(timeout=30)


@pytest.mark.gpu
def test_live_inspect_in_a_worker_matches_in_process():
    """The CLI's path on a GPU (--timeout): the live JIT runs in a killable worker; same facts, no handle."""
    here = inspect("teaching", 1000, "fp16", num_warps=4)
    worker = inspect("teaching", 1000, "fp16", num_warps=4, timeout_s=120)
    assert worker.source == "live" and worker.function_handle is None and worker.arch == here.arch
    assert (worker.n_regs, worker.shared_bytes, worker.spill_store_bytes) == (
        here.n_regs,
        here.shared_bytes,
        here.spill_store_bytes,
    )
