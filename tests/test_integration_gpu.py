"""kernels.softmax in a model on a CUDA GPU (`make test-gpu`): torch.compile with CUDA graphs, split-row graphs on
two streams, and the backward at full sizes."""

from __future__ import annotations

import time

import pytest
import torch

from blockscope import kernels
from blockscope.kernels import VARIANTS, backward
from tests.grad_checks import assert_grad_close, backward_reference, torch_grad
from tests.softmax_checks import assert_softmax_close

pytestmark = pytest.mark.gpu

DTYPES = [torch.float16, torch.bfloat16, torch.float32]
N_BACKWARD = [128, 1000, 1025, 4096, 8193, 16384, 65536, 131072, 262144]
PATH_LIMITS = {"row": backward.ROW_MAX_N, "multirow": backward.MULTIROW_MAX_N, "looped": backward.MAX_N}
ATTENTION_TOLERANCE = {torch.float16: 1e-2, torch.bfloat16: 5e-2}  # max |ours - torch| / max |torch|


def relative_max_error(got: torch.Tensor, want: torch.Tensor) -> float:
    return (got.float() - want.float()).abs().max().item() / max(want.float().abs().max().item(), 1e-30)


def wait_or_exit(label: str, seconds: float = 60.0) -> None:
    """Synchronize with a deadline: split-row programs spin on each other, so a bug hangs the GPU instead of failing;
    stop the session then (this process's CUDA context is unusable)."""
    done = torch.cuda.Event()
    done.record()
    deadline = time.monotonic() + seconds
    while not done.query():
        if time.monotonic() > deadline:
            pytest.exit(
                f"{label}: GPU work not done after {seconds:.0f} s (split-row programs waiting forever)", returncode=1
            )
        time.sleep(0.01)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=lambda d: kernels.DTYPE_NAMES[d])
@pytest.mark.parametrize(
    "variant, tunables, seq",
    [("auto", {}, 1024), ("splitrow", {"chunk": 1024}, 4096), ("online", {}, 2048)],
    ids=["auto", "splitrow", "online"],
)
def test_compiled_attention_block_with_cuda_graphs_matches_torch(variant, tunables, seq, dtype):
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    torch.manual_seed(0)
    block = kernels.Softmax(dim=-1, variant=variant, **tunables)

    def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, softmax) -> torch.Tensor:
        return softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5) @ v

    compiled = torch.compile(lambda q, k, v: attention(q, k, v, block), fullgraph=True, mode="reduce-overhead")
    tolerance = ATTENTION_TOLERANCE[dtype]
    for step in range(4):  # warm-up, record, then replays of the CUDA graphs (forward and backward)
        q, k, v = (torch.randn(2, 4, seq, 64, device="cuda", dtype=dtype) for _ in range(3))
        dy = torch.randn(2, 4, seq, 64, device="cuda", dtype=dtype)
        ours = [t.clone().requires_grad_() for t in (q, k, v)]
        theirs = [t.clone().requires_grad_() for t in (q, k, v)]
        torch.compiler.cudagraph_mark_step_begin()
        out = compiled(*ours)
        out.backward(dy)
        expected = attention(*theirs, lambda s: torch.softmax(s, -1))
        expected.backward(dy)
        error = relative_max_error(out, expected)
        assert error <= tolerance, f"{variant} step {step}: forward max error {error:.3g} of max|out|"
        for name, got, want in zip("qkv", ours, theirs, strict=True):
            error = relative_max_error(got.grad, want.grad)
            assert error <= tolerance, f"{variant} step {step}: d{name} max error {error:.3g} of max|d{name}|"
    assert not counters["inductor"]["cudagraph_skips"], "inductor skipped CUDA graphs (see its log for the reason)"


@pytest.mark.parametrize("counter", [0, 1])
def test_splitrow_cuda_graphs_replayed_on_two_streams(counter):
    tunables = {"chunk": 4096, "num_warps": 4, "counter": counter}  # 16-17 chunks per row wait on each other
    xs = [torch.randn(512, 65536 + 3 * i, device="cuda", dtype=torch.float16) * 4 for i in range(2)]
    for x in xs:
        kernels.softmax(x, "splitrow", **tunables)  # compile and query occupancy outside capture
    torch.cuda.synchronize()
    graphs, outs = [], []
    for x in xs:  # both captured on torch.cuda.graph's default capture stream: each owns its workspace
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            outs.append(kernels.softmax(x, "splitrow", **tunables))
        graphs.append(graph)
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    for replay in range(20):
        for out in outs:
            out.zero_()
        for graph, stream in zip(graphs, streams, strict=True):
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                graph.replay()
        for stream in streams:
            torch.cuda.current_stream().wait_stream(stream)
        if replay % 5 == 4:
            wait_or_exit(f"two-stream replay {replay}")
            for i, (out, x) in enumerate(zip(outs, xs, strict=True)):
                assert_softmax_close(out, x, f"graph {i} replay {replay} counter={counter}")


def test_splitrow_eager_on_two_streams_uses_one_workspace_per_stream():
    from blockscope.kernels import splitrow

    xs = [torch.randn(256, 131072, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    outs = [[], []]
    for _ in range(5):
        for x, stream, results in zip(xs, streams, outs, strict=True):
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                results.append(kernels.softmax(x, "splitrow", chunk=8192))
    for stream in streams:
        torch.cuda.current_stream().wait_stream(stream)
    wait_or_exit("eager two-stream split-row")
    for x, results in zip(xs, outs, strict=True):
        for out in results:
            assert_softmax_close(out, x, "eager split-row on a side stream")
    keys = {key for key in splitrow._WORKSPACES if key[0] == "cuda"}
    assert {stream.cuda_stream for stream in streams} <= {key[2] for key in keys}


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: kernels.DTYPE_NAMES[d])
@pytest.mark.parametrize("n_cols", N_BACKWARD)
def test_backward_paths_and_autograd_match_torch_at_full_size(n_cols, dtype):
    torch.manual_seed(n_cols)
    n_rows = max(16, 2**22 // n_cols)
    x = torch.randn(n_rows, n_cols, device="cuda", dtype=dtype) * 3
    dy = torch.randn_like(x)
    y = torch.softmax(x.float(), -1).to(dtype)
    for path, limit in PATH_LIMITS.items():
        if n_cols <= limit:
            dx = kernels.softmax_backward(y, dy, path)
            assert_grad_close(dx, backward_reference(y, dy), y, dy, dtype, f"{path} N={n_cols}")
    y64, dx64 = torch_grad(x, dy)
    for variant in ("auto", "online"):
        leaf = x.clone().requires_grad_()
        kernels.softmax(leaf, variant=variant).backward(dy)
        assert_grad_close(leaf.grad, dx64, y64, dy, dtype, f"{variant} autograd N={n_cols}")


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_variant_backward_on_gpu(variant):
    for n_cols in (1000, 4096, 65536):
        if n_cols > VARIANTS[variant].max_n:
            continue
        x = torch.randn(256, n_cols, device="cuda", dtype=torch.bfloat16) * 3
        dy = torch.randn_like(x)
        leaf = x.clone().requires_grad_()
        kernels.softmax(leaf, variant=variant).backward(dy)
        y64, dx64 = torch_grad(x, dy)
        assert_grad_close(leaf.grad, dx64, y64, dy, torch.bfloat16, f"{variant} N={n_cols}")
