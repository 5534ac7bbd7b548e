"""The cluster variant (rows split over a thread-block cluster, DSMEM exchange in inline PTX): plans, errors and the
PTX of offline sm_90 compiles here (the CPU interpreter runs no PTX); numbers against the float64 reference, special
values, strided views, out=, graph replay and autograd on a CUDA GPU (`make test-gpu`)."""

from __future__ import annotations

import re

import pytest
import torch

from blockscope import kernels
from blockscope.kernels import VARIANTS, cluster, softmax
from tests.softmax_checks import assert_softmax_close

DTYPES = [torch.float16, torch.bfloat16, torch.float32]
needs_gpu = pytest.mark.skipif(
    not torch.cuda.is_available() or kernels.interpreting(),
    reason="needs a CUDA GPU without the interpreter (make test-gpu)",
)


@pytest.mark.parametrize(
    "n_cols, dtype, chunk, programs",
    [
        (32768, torch.float16, 16384, 2),
        (65536, torch.bfloat16, 16384, 4),
        (262144, torch.float16, 32768, 8),
        (131072, torch.float32, 16384, 8),
        (50000, torch.float16, 16384, 4),
        (1000, torch.float32, 1024, 1),
        (300000, torch.float16, 32768, 10),
    ],
)
def test_plan_splits_a_row_over_a_cluster(n_cols, dtype, chunk, programs):
    plan = cluster.plan(4096, n_cols, dtype)
    assert (plan.tunables["chunk"], plan.cluster_size, plan.constexprs["CLUSTER"]) == (chunk, programs, programs)
    assert plan.grid == (4096 * programs,) and plan.programs == 4096 * programs
    assert (programs - 1) * chunk < n_cols <= programs * chunk  # no program without columns
    assert plan.launch_shared_bytes == cluster.EXCHANGE_BYTES
    assert plan.num_warps == max(4, min(32, chunk // 2048))


def test_plan_vectors_only_where_n_allows_them():
    assert cluster.plan(8, 32768, torch.float16).constexprs["VEC"] == 8
    assert cluster.plan(8, 32768, torch.float32).constexprs["VEC"] == 4
    assert cluster.plan(8, 32767, torch.bfloat16).constexprs["VEC"] == 1
    assert cluster.plan(8, 50002, torch.float32).constexprs["VEC"] == 1


@pytest.mark.parametrize(
    "n_cols, tunables, message",
    [
        (32768, {"chunk": 1000}, "chunk=1000 is not allowed; allowed: a power of two from 1024 to 32768"),
        (65536, {"chunk": 2048}, "over 32 programs; allowed: at most 16 programs per cluster (chunk >= 4096)"),
        (32768, {"num_warps": 2}, "num_warps=2 is not allowed; allowed: 4, 8, 16, 32"),
        (32768, {"maxnreg": 16}, "maxnreg=16 is not allowed; allowed: an integer from 32 to 255"),
        (32768, {"tile": 4}, "unknown tunable(s) tile; allowed: chunk, fast_exp, maxnreg, num_warps"),
        (2**20, {}, "N=1048576 is outside this variant's range; allowed: 1 <= N <= 524288"),
    ],
)
def test_plan_errors_name_what_is_allowed(n_cols, tunables, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        cluster.plan(16, n_cols, torch.float16, **tunables)


def test_maxnreg_goes_to_the_compile_options():
    assert cluster.plan(8, 32768, torch.float16, maxnreg=80).compile_options == {"maxnreg": 80}
    assert cluster.plan(8, 32768, torch.float16, maxnreg=0).compile_options == {}


@pytest.mark.parametrize(
    "n_cols, dtype, vectors", [(32768, "fp16", 8), (65536, "bf16", 8), (131072, "fp32", 16), (50000, "fp16", 8)]
)
def test_offline_sm90_compile_exchanges_through_the_cluster(n_cols, dtype, vectors):
    from blockscope.profiling.inspect import compiled

    info = compiled.inspect_offline("cluster", n_cols, dtype, cache=False)
    ptx = info.ptx
    assert len(re.findall(r"ld\.global\.(?:\w+\.)*v4\.b32", ptx)) == vectors  # whole 16-byte loads, chunk / threads
    assert len(re.findall(r"st\.global\.(?:\w+\.)*v4\.b32", ptx)) == vectors
    assert ptx.count("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32") == 1  # one exchange
    assert ptx.count("barrier.cluster.arrive.relaxed.aligned") == 1 and ptx.count("barrier.cluster.wait") == 1
    assert "atom.global" not in ptx and "ld.global.acquire" not in ptx  # nothing meets in L2
    assert info.shared_bytes >= cluster.EXCHANGE_BYTES  # the launch's exchange buffer counted
    assert info.spill_store_bytes == 0


def test_auto_never_picks_cluster_under_the_interpreter(monkeypatch):
    from blockscope.kernels import auto

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    for dtype in DTYPES:
        for n_cols in (32768, 65536, 262144):
            assert auto.choose(4096, n_cols, dtype, "NVIDIA H200")[0] != "cluster"


@needs_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: kernels.DTYPE_NAMES[d])
@pytest.mark.parametrize(
    "n_rows, n_cols, chunk",
    [
        (1, 2, None),
        (5, 1000, None),
        (3, 4096, 1024),
        (777, 32768, None),
        (33, 50000, 8192),
        (7, 65535, None),
        (3, 100002, 16384),
        (9, 262144, None),
        (2, 300000, None),
        (4, 524288, 32768),
    ],
)
def test_cluster_matches_reference_on_gpu(n_rows, n_cols, chunk, dtype):
    torch.manual_seed(n_cols)
    x = torch.randn(n_rows, n_cols, device="cuda", dtype=dtype) * 4
    tunables = {} if chunk is None else {"chunk": chunk}
    assert_softmax_close(softmax(x, "cluster", **tunables), x, f"cluster N={n_cols} {tunables}")


@needs_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("tunables", [{"num_warps": 4}, {"num_warps": 16}, {"num_warps": 32}, {"maxnreg": 80}])
def test_cluster_tunables_on_gpu(tunables):
    x = torch.randn(129, 65536, device="cuda", dtype=torch.bfloat16) * 4
    assert_softmax_close(softmax(x, "cluster", **tunables), x, f"cluster {tunables}")


@needs_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("variant, tunables", [("cluster", {"chunk": 16384}), ("staged", {"cluster": 4})])
def test_cluster_special_values_per_chunk_on_gpu(variant, tunables):
    """-inf over a whole chunk (its partial max is -inf), an all -inf row (NaN, as torch), +inf and NaN in one chunk."""
    x = torch.randn(5, 65536, device="cuda", dtype=torch.float16)
    x[0, :16384] = -float("inf")
    x[1] = -float("inf")
    x[2, 40000] = float("inf")
    x[3, 60000] = float("nan")
    x[4, 16384:] = -float("inf")
    got = softmax(x, variant, **tunables)
    want = torch.softmax(x.float(), dim=-1).half()
    torch.testing.assert_close(got, want, equal_nan=True, atol=2e-3, rtol=1e-2)
    assert torch.all(got[0, :16384] == 0) and torch.isnan(got[1]).all()


@needs_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: kernels.DTYPE_NAMES[d])
@pytest.mark.parametrize(
    "n_rows, n_cols, programs",
    [(3, 65536, 2), (33, 131072, None), (5, 262144, None), (7, 100002, 3), (2, 524288, None), (9, 32768, 2)],
)
def test_staged_over_a_cluster_matches_reference_on_gpu(n_rows, n_cols, programs, dtype):
    torch.manual_seed(n_cols)
    x = torch.randn(n_rows, n_cols, device="cuda", dtype=dtype) * 4
    tunables = {} if programs is None else {"cluster": programs}
    assert_softmax_close(softmax(x, "staged", **tunables), x, f"staged N={n_cols} {tunables}")


@needs_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("variant, tunables", [("cluster", {}), ("staged", {"cluster": 3})])
def test_cluster_unaligned_views_out_and_graph_replay_on_gpu(variant, tunables):
    wide = torch.randn(64, 70010, device="cuda", dtype=torch.float16)
    view = wide[:, 3:70003]  # start 6 bytes past 16-byte alignment, stride 70010
    assert_softmax_close(softmax(view, variant, **tunables), view, f"{variant} unaligned view")
    out = torch.empty(64, 70010, device="cuda", dtype=torch.float16)[:, 1:70001]
    softmax(view, variant, out=out, **tunables)
    assert_softmax_close(out, view, f"{variant} into an unaligned out")
    x = torch.randn(256, 131072, device="cuda", dtype=torch.bfloat16)
    softmax(x, variant, **tunables)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = softmax(x, variant, **tunables)
    for _ in range(3):
        x.copy_(torch.randn_like(x))
        graph.replay()
        assert_softmax_close(y, x, f"{variant} graph replay")


@needs_gpu
@pytest.mark.gpu
def test_autograd_through_the_cluster_forward_on_gpu():
    from tests.grad_checks import assert_grad_close, torch_grad

    x = torch.randn(128, 40000, device="cuda", dtype=torch.bfloat16) * 3
    dy = torch.randn_like(x)
    leaf = x.clone().requires_grad_()
    kernels.softmax(leaf, variant="cluster").backward(dy)
    y64, dx64 = torch_grad(x, dy)
    assert_grad_close(leaf.grad, dx64, y64, dy, torch.bfloat16, "cluster backward")


def test_registry_marks_cluster_gpu_only():
    assert VARIANTS["cluster"].gpu_only and VARIANTS["cluster"].limit(torch.float32) == cluster.MAX_N
