"""warprows (Gluon): plans, errors and the PTX of offline sm_90 compiles here (the CPU interpreter cannot run Gluon);
numbers against the float64 reference over dtype x shape x layout on a CUDA GPU (`make test-gpu`)."""

from __future__ import annotations

import re

import pytest
import torch

from blockscope import kernels
from blockscope.kernels import softmax, warprows
from tests.softmax_checks import assert_softmax_close

DTYPES = [torch.float16, torch.bfloat16, torch.float32]
needs_gpu = pytest.mark.skipif(
    not torch.cuda.is_available() or kernels.interpreting(),
    reason="needs a CUDA GPU without the interpreter (make test-gpu)",
)


@pytest.mark.parametrize(
    "n_cols, lanes, pieces",
    [
        (1536, 256, (1024, 512)),
        (5000, 512, (4096, 1024)),
        (1000, 256, (1024, 0)),
        (1024, 256, (1024, 0)),
        (3000, 256, (2048, 1024)),
        (1100, 256, (2048, 0)),  # rest 76 -> 128 is narrower than a layout row
        (96, 128, (128, 0)),
        (1, 1, (1, 0)),
        (6144, 256, (4096, 2048)),
        (6145, 256, (8192, 0)),
    ],
)
def test_row_pieces(n_cols, lanes, pieces):
    assert warprows.row_pieces(n_cols, lanes) == pieces
    width0, width1 = pieces
    assert width0 + width1 >= n_cols and all(w == 0 or w & (w - 1) == 0 for w in pieces)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: kernels.DTYPE_NAMES[d])
@pytest.mark.parametrize("n_cols", [1, 7, 96, 200, 777, 1000, 1536, 5000, 12345, 16384])
def test_default_plan_layout_covers_the_rows(n_cols, dtype):
    plan = warprows.plan(4099, n_cols, dtype)
    c = plan.constexprs
    threads = plan.tunables["threads_per_row"]
    assert c["ROW_THREADS"] * c["COL_THREADS"] == 32 and c["ROW_WARPS"] * c["COL_WARPS"] == plan.num_warps
    assert c["COL_THREADS"] * c["COL_WARPS"] == threads  # a row's threads
    assert plan.rows_per_program == 32 * plan.num_warps // threads
    assert plan.grid == (-(-4099 // plan.rows_per_program),)
    assert c["WIDTH0"] >= threads * c["VEC"] and n_cols % c["VEC"] == 0 and c["VEC"] * dtype.itemsize <= 16
    assert plan.tile_width // threads <= 64  # the default keeps 64 elements per thread or fewer


def test_plan_errors_name_what_is_allowed():
    with pytest.raises(ValueError, match="allowed: 1 <= N <= 16384"):
        warprows.plan(4, 16385, torch.float16)
    with pytest.raises(ValueError, match="threads_per_row=256 is more than the 128 threads of num_warps=4"):
        warprows.plan(4, 8192, torch.float16, threads_per_row=256, num_warps=4)
    with pytest.raises(ValueError, match="allowed: threads_per_row <= 16"):
        warprows.plan(4, 128, torch.float16, threads_per_row=32)  # 32 threads x 8 elements > 128 lanes
    with pytest.raises(ValueError, match="allowed: threads_per_row >= 64"):
        warprows.plan(4, 8192, torch.float16, threads_per_row=32)  # 256 elements per thread
    with pytest.raises(ValueError, match="threads_per_row=3 is not allowed; allowed: a power of two"):
        warprows.plan(4, 1000, torch.float16, threads_per_row=3)
    with pytest.raises(ValueError, match="num_warps=32 is not allowed"):
        warprows.plan(4, 1000, torch.float16, num_warps=32)
    with pytest.raises(ValueError, match="unknown tunable"):
        warprows.plan(4, 1000, torch.float16, rows_per_program=4)


@pytest.mark.parametrize(
    "dtype, n_cols, tunables, vector, barriers",
    [
        ("fp16", 1536, {}, "v4.b32", False),  # one warp per row: shuffles only
        ("bf16", 1000, {}, "v4.b32", False),
        ("fp32", 200, {}, "v4.b32", False),
        ("fp16", 96, {}, "v4.b32", False),  # 16 threads per row, two rows per warp
        ("fp16", 5000, {"threads_per_row": 64, "num_warps": 8}, "v4.b32", True),  # two warps per row
        ("fp16", 1002, {}, "b32", False),  # N = 2 mod 4: 4-byte loads
        ("fp16", 777, {}, "b16", False),
    ],
)
def test_offline_sm90_compile_loads_vectors_and_reduces_in_warps(dtype, n_cols, tunables, vector, barriers):
    from blockscope.profiling.inspect import compiled

    info = compiled.inspect_offline("warprows", n_cols, dtype, cache=False, **tunables)
    plan = warprows.plan(4096, n_cols, kernels.dtype_from_name(dtype), **tunables)
    loads = re.findall(r"ld\.global\.(\S+)", info.ptx)
    stores = re.findall(r"st\.global\.(\S+)", info.ptx)
    elements_per_load = {"v4.b32": 16, "b32": 4, "b16": 2}[vector] // kernels.dtype_from_name(dtype).itemsize
    threads = plan.tunables["threads_per_row"]
    assert set(loads) == {vector} and set(stores) == {vector}
    assert len(loads) == plan.tile_width // threads // elements_per_load  # every lane loaded once, in vectors
    assert ("bar.sync" in info.ptx) == barriers
    assert info.spill_store_bytes == 0


@needs_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: kernels.DTYPE_NAMES[d])
@pytest.mark.parametrize(
    "n_rows, n_cols",
    [
        (1, 1),
        (5, 7),
        (1000, 96),
        (333, 200),
        (77, 777),
        (4097, 1000),
        (130, 1536),
        (9, 1002),
        (31, 5000),
        (3, 12345),
        (65, 16384),
    ],
)
@pytest.mark.parametrize("threads_per_row", [None, 32, 128])
def test_warprows_matches_reference_on_gpu(n_rows, n_cols, dtype, threads_per_row):
    tunables = {} if threads_per_row is None else {"threads_per_row": threads_per_row}
    try:
        warprows.plan(n_rows, n_cols, dtype, **tunables)
    except ValueError:
        pytest.skip("a layout this N does not take")
    torch.manual_seed(n_cols)
    x = torch.randn(n_rows, n_cols, device="cuda", dtype=dtype) * 4
    assert_softmax_close(softmax(x, "warprows", **tunables), x, f"warprows N={n_cols} {tunables}")


@needs_gpu
@pytest.mark.gpu
def test_warprows_extremes_views_out_and_graph_replay_on_gpu():
    x = torch.full((8, 1536), -float("inf"), device="cuda", dtype=torch.float16)
    x[:, 1535] = 0
    x[1] = 60000.0  # equal huge values: uniform
    y = softmax(x, "warprows")
    assert (y[0, :1535] == 0).all() and y[0, 1535] == 1
    assert torch.allclose(y[1].float(), torch.full((1536,), 1 / 1536, device="cuda"), rtol=2e-3)
    wide = torch.randn(64, 1539, device="cuda", dtype=torch.bfloat16)
    view = wide[:, 3:1539]  # N=1536 rows at a row stride of 1539: copied to whole vectors
    assert_softmax_close(softmax(view, "warprows"), view, "warprows strided view")
    out = torch.empty(64, 1600, device="cuda", dtype=torch.bfloat16)[:, 1:1537]
    softmax(view, "warprows", out=out)
    assert_softmax_close(out, view, "warprows into a strided out")
    x = torch.randn(4096, 1000, device="cuda", dtype=torch.float16)
    softmax(x, "warprows")
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = softmax(x, "warprows")
    for _ in range(3):
        x.copy_(torch.randn_like(x))
        graph.replay()
        assert_softmax_close(y, x, "warprows graph replay")


@needs_gpu
@pytest.mark.gpu
def test_autograd_through_warprows_on_gpu():
    from tests.grad_checks import assert_grad_close, torch_grad

    x = torch.randn(128, 3000, device="cuda", dtype=torch.bfloat16) * 3
    dy = torch.randn_like(x)
    leaf = x.clone().requires_grad_()
    kernels.softmax(leaf, variant="warprows").backward(dy)
    y64, dx64 = torch_grad(x, dy)
    assert_grad_close(leaf.grad, dx64, y64, dy, torch.bfloat16, "warprows backward")
