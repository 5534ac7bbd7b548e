"""The kernel matrix at full sizes on a CUDA GPU (`make test-gpu`): R=4096, N up to 262144 for `online`."""

from __future__ import annotations

import pytest
import torch

import kernels
from kernels import VARIANTS, softmax
from tests.softmax_checks import assert_softmax_close

pytestmark = pytest.mark.gpu

N_FULL = [128, 1000, 1024, 1025, 4096, 8193, 16384, 32768, 65536, 131072, 262144]
DTYPES = [torch.float16, torch.bfloat16, torch.float32]
CASES = [(v, n) for v in VARIANTS for n in N_FULL if n <= VARIANTS[v].max_n]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: kernels.DTYPE_NAMES[d])
@pytest.mark.parametrize("variant, n_cols", CASES)
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
    from kernels import persistent

    x = torch.randn(100_000, 128, device="cuda", dtype=torch.float16)
    assert_softmax_close(softmax(x, "persistent"), x, "persistent")
    assert persistent._BLOCKS_PER_SM, "the driver occupancy API was not consulted"
    blocks = next(iter(persistent._BLOCKS_PER_SM.values()))
    assert 1 <= blocks <= 32


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: kernels.DTYPE_NAMES[d])
def test_auto_over_the_default_sweep(dtype):
    from profiling.sweep import default_n_values

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
    from kernels import _common

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
