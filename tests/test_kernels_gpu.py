"""The kernel matrix at full sizes on a CUDA GPU (`make test-gpu`): R=4096, N up to 262144 for `online`."""

from __future__ import annotations

import pytest
import torch

from blockscope import kernels
from blockscope.kernels import VARIANTS, softmax
from tests.softmax_checks import assert_softmax_close, variant_takes

pytestmark = pytest.mark.gpu

N_FULL = [128, 1000, 1024, 1025, 4096, 8193, 16384, 32768, 65536, 131072, 262144]
DTYPES = [torch.float16, torch.bfloat16, torch.float32]
CASES = [(v, n, d) for v in VARIANTS for n in N_FULL for d in DTYPES if variant_takes(v, 4096, n, d)]


@pytest.mark.parametrize("variant, n_cols, dtype", CASES, ids=lambda p: kernels.DTYPE_NAMES.get(p, p))
def test_full_size_matches_reference(variant, n_cols, dtype):
    torch.manual_seed(n_cols)
    x = torch.randn(4096, n_cols, device="cuda", dtype=dtype) * 3
    assert_softmax_close(softmax(x, variant), x, f"{variant} N={n_cols}")


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_special_values_match_torch_on_gpu(variant):
    inf, nan = float("inf"), float("nan")
    x = torch.tensor([[1.0, inf, 2.0], [-inf, -inf, -inf], [1.0, nan, 2.0], [-inf, 1.0, 2.0]], device="cuda")
    expected = torch.softmax(x, dim=-1)
    got = softmax(x, variant)
    assert torch.equal(torch.isnan(got), torch.isnan(expected)), f"{variant}: {got} vs {expected}"
    finite = ~torch.isnan(expected)
    assert torch.allclose(got[finite], expected[finite], atol=1e-6)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_strided_rows_and_large_offsets(variant):
    wide = torch.randn(512, 3000, device="cuda", dtype=torch.float16)
    view = wide[:, 7:1007]
    if view.shape[1] > VARIANTS[variant].limit(view.dtype):  # tinyrows: N <= 64 (its own tests take strided rows)
        pytest.skip(f"{variant} takes N <= {VARIANTS[variant].limit(view.dtype)}")
    assert_softmax_close(softmax(view, variant), view, f"{variant} strided")


def test_online_row_offsets_beyond_int32():
    n_rows, n_cols = 2, 2**30 + 4096  # R * N > 2**31 elements (fp16: 4 GiB in, 4 GiB out)
    x = torch.full((n_rows, n_cols), -float("inf"), device="cuda", dtype=torch.float16)
    x[0, :4096] = torch.randn(4096, device="cuda", dtype=torch.float16)
    x[1, -4096:] = torch.randn(4096, device="cuda", dtype=torch.float16)  # the last row's tail: offset > 2**31
    y = softmax(x, "online")
    assert_softmax_close(y[0, :4096].contiguous(), x[0, :4096].contiguous(), "first row head")
    assert_softmax_close(y[1, -4096:].contiguous(), x[1, -4096:].contiguous(), "last row tail")
    assert y[1, :-4096].abs().max().item() == 0


def test_persistent_launches_sm_count_times_blocks_per_sm():
    from blockscope.kernels import persistent

    x = torch.randn(100_000, 128, device="cuda", dtype=torch.float16)
    assert_softmax_close(softmax(x, "persistent"), x, "persistent")
    assert persistent._BLOCKS_PER_SM, "the driver occupancy API was not consulted"
    blocks = next(iter(persistent._BLOCKS_PER_SM.values()))
    assert 1 <= blocks <= 32


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: kernels.DTYPE_NAMES[d])
def test_auto_over_the_default_sweep(dtype):
    from blockscope.profiling.measure.sweep import default_n_values

    for n_cols in default_n_values():
        torch.manual_seed(n_cols)
        x = torch.randn(4096, n_cols, device="cuda", dtype=dtype) * 3
        assert_softmax_close(softmax(x, "auto"), x, f"auto N={n_cols}")
        del x
        torch.cuda.empty_cache()


@pytest.mark.parametrize("prefetch, counter", [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("n_cols", [65536, 65537, 131071])
def test_splitrow_wait_modes_on_gpu(n_cols, prefetch, counter):
    x = torch.randn(1024, n_cols, device="cuda", dtype=torch.float16) * 4
    for _ in range(3):  # epochs advance launch after launch
        out = kernels.softmax(x, "splitrow", chunk=4096, num_warps=4, prefetch=prefetch, counter=counter)
        assert_softmax_close(out, x, f"splitrow N={n_cols} prefetch={prefetch} counter={counter}")


def test_splitrow_cuda_graph_replays_take_fresh_epochs():
    x = torch.randn(512, 65536, device="cuda", dtype=torch.float16)
    kernels.softmax(x, "splitrow", chunk=4096, num_warps=4)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = kernels.softmax(x, "splitrow", chunk=4096, num_warps=4)
    for _ in range(3):
        out.zero_()
        graph.replay()
        assert_softmax_close(out, x, "splitrow graph replay")


def test_direct_launch_matches_the_jit_launch():
    from blockscope.kernels import _common

    x = torch.randn(300, 1000, device="cuda", dtype=torch.bfloat16)
    for variant in ("teaching", "multirow", "persistent", "online", "splitrow"):
        direct = kernels.softmax(x, variant)
        _common.DIRECT_LAUNCH = False
        try:
            through_jit = kernels.softmax(x, variant)
        finally:
            _common.DIRECT_LAUNCH = True
        assert torch.equal(direct, through_jit), variant
    assert any(entry is not None for entry in _common._COMPILED.values()), "the direct path was never taken"


SPIN_WHILE_SPLITROW = r"""
import time

import torch
import triton
import triton.language as tl

from blockscope import kernels
from blockscope.kernels import splitrow


@triton.jit
def spin_kernel(flag_ptr, out_ptr, iters):
    acc = tl.load(flag_ptr, volatile=True)
    for _ in range(iters):
        acc += tl.load(flag_ptr, volatile=True)
    tl.store(out_ptr + tl.program_id(0), acc)


sms = torch.cuda.get_device_properties(0).multi_processor_count
flag = torch.zeros(1, dtype=torch.int32, device="cuda")
sink = torch.zeros(sms, dtype=torch.int32, device="cuda")
x = torch.randn(4096, 65536, device="cuda", dtype=torch.float16) * 4
kernels.softmax(x, "splitrow", chunk=4096, num_warps=4)  # compile outside the timed part
spin_kernel[(sms,)](flag, sink, 32, num_warps=32)  # same specialization as below (divisible by 16)
torch.cuda.synchronize()
other = torch.cuda.Stream()
start = time.perf_counter()
with torch.cuda.stream(other):  # 1024-thread programs on every SM, spinning for a while
    spin_kernel[(sms,)](flag, sink, 3_000_000, num_warps=32)
out = kernels.softmax(x, "splitrow", chunk=4096, num_warps=4)  # default stream: shares the SMs with the spinner
torch.cuda.synchronize()
seconds = time.perf_counter() - start
expected = torch.softmax(x.double(), dim=-1)
error = (out.double() - expected).abs().max().item()
assert error < 2e-3, error
assert not splitrow._FALLBACKS, splitrow._FALLBACKS
print(f"OK {seconds:.3f} s, max abs error {error:.2e}")
"""


def test_splitrow_finishes_while_another_stream_occupies_the_sms(tmp_path):
    """Split-row programs wait on each other: with a spinning kernel holding part of every SM, a grid sized for an
    empty GPU is only safe because the launch is cooperative (all programs resident together). Run in a subprocess:
    a hang fails the test at the timeout instead of blocking the suite."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    script = tmp_path / "spin_while_splitrow.py"  # @triton.jit needs its source in a file, not `python -c`
    script.write_text(SPIN_WHILE_SPLITROW)
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0 and done.stdout.startswith("OK"), done.stdout + done.stderr[-3000:]


def test_splitrow_launches_cooperatively():
    from blockscope.kernels import _common, splitrow

    x = torch.randn(256, 65536, device="cuda", dtype=torch.float16)
    assert_softmax_close(kernels.softmax(x, "splitrow", chunk=4096, num_warps=4), x, "cooperative splitrow")
    kernel_id = id(splitrow.row_softmax_splitrow_kernel)
    cooperative = [entry for key, entry in _common._COMPILED.items() if key[0] == kernel_id and key[5]]
    assert cooperative and all(entry is not None for entry in cooperative)
    assert all(entry[0].metadata.launch_cooperative_grid for entry in cooperative)


def test_splitrow_falls_back_to_online_when_the_cooperative_launch_fails(monkeypatch):
    from blockscope.kernels import splitrow

    monkeypatch.setattr(splitrow, "_FALLBACKS", {})
    calls = []

    def refuse(*args, **kwargs):
        calls.append(kwargs)
        raise RuntimeError("Triton Error [CUDA]: too many blocks in cooperative launch")

    monkeypatch.setattr(splitrow, "launch_kernel", refuse)
    x = torch.randn(64, 20000, device="cuda", dtype=torch.float32)
    with pytest.warns(RuntimeWarning, match="cooperative launch failed .*ran 'online' instead"):
        y = kernels.softmax(x, "splitrow", chunk=4096)
    assert_softmax_close(y, x, "online fallback")
    assert calls == [{"cooperative": True}]
    assert_softmax_close(kernels.softmax(x, "splitrow", chunk=4096), x, "remembered fallback")
    assert len(calls) == 1  # the failure is remembered: no second attempt


@pytest.mark.parametrize("variant, n_cols", [("splitrow", 2**24), ("splitrow", 2**24 - 1), ("auto", 2**23 + 1)])
def test_rows_up_to_the_stated_limit(variant, n_cols):
    """A row wider than the GPU can hold resident runs 'online' (with a warning) instead of failing."""
    import warnings

    x = torch.randn(1, n_cols, device="cuda", dtype=torch.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        y = softmax(x, variant)
    expected = kernels.reference_softmax(x)
    relative = ((y.double() - expected).abs() / expected).max().item()
    assert y.shape == x.shape and relative < 1e-4, relative  # fp32 sums over 2**24 columns: looser than 2e-5


def test_auto_eager_check_sees_a_busy_stream():
    """A launch queued behind work is not eager: the idle-stream check must say busy (it once said idle on a busy
    default stream, so b2b-timed auto took torch.softmax), and a side stream with nothing queued is idle."""
    from blockscope.kernels import auto

    x = torch.randn(2048, 2000, device="cuda", dtype=torch.float16)
    torch.cuda.synchronize()
    assert auto._eager_candidate(x, x) and auto._host_bound(x.device)
    auto._route_to_torch(x)
    torch.cuda.synchronize()
    torch.cuda._sleep(50_000_000)  # ~25 ms of spinning on the current stream, queued after auto's own (done) route
    assert not auto._host_bound(x.device)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        assert auto._host_bound(x.device)
    torch.cuda.synchronize()
    wide = torch.randn(4096, 32768, device="cuda")
    auto._route_to_torch(wide)  # ~400 us of auto's own torch.softmax still running: the loop of calls case
    assert not torch.cuda.current_stream().query() and auto._host_bound(x.device)
    torch.cuda.synchronize()
