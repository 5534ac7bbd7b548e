"""kernels.ragged_softmax: per-segment softmax along dim 0 against torch.softmax per segment in float64, chunked
(multi-item) segments, empty and length-1 segments, int32/int64 offsets, special values, gradients, jagged nested
tensors, bad offsets, torch.compile. Tiny shapes (CPU interpreter); larger ones are GPU-marked."""

from __future__ import annotations

import pytest
import torch

from blockscope import kernels
from blockscope.kernels import ragged
from tests.grad_checks import GRAD_TOLERANCES
from tests.softmax_checks import TOLERANCES, assert_within

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
LENGTHS = {
    "mixed": [0, 1, 5, 17, 0, 3, 40, 2],
    "one_long": [3, 61, 1],
    "all_empty": [0, 0],
    "single": [1],
    "pow2": [16, 32, 8],
    "classes": [70, 200, 1, 65, 300, 0, 257],  # every packed class (64, 256 at 512-lane tiles), and longer ones
}
# default: every segment in items of CHUNK rows; packed: short segments several per program (every class up to
# 1024); items: CHUNK=16 items (long ones span several); mixed: segments up to 64 packed, longer ones in items
PATHS = {
    "default": {},
    "packed": {"packed_max": 1024},
    "items": {"packed_max": 0, "chunk": 16},
    "mixed": {"packed_max": 64, "chunk": 16},
}


def offsets_of(lengths: list[int], dtype=torch.int64) -> torch.Tensor:
    return torch.tensor([0, *torch.tensor(lengths, dtype=torch.int64).cumsum(0).tolist()], dtype=dtype).to(DEVICE)


def reference(values: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    """torch.softmax over dim 0 of each segment, in float64."""
    v = values.to(torch.float64)
    out = torch.empty_like(v)
    bounds = offsets.tolist()
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        out[a:b] = torch.softmax(v[a:b], 0)
    return out


def assert_close(got: torch.Tensor, values: torch.Tensor, offsets: torch.Tensor, label: str) -> None:
    want = reference(values, offsets)
    assert got.shape == values.shape and got.dtype == values.dtype, f"{label}: {got.shape} {got.dtype}"
    rtol, atol = TOLERANCES[values.dtype]
    assert_within(
        got.to(torch.float64), want, atol + rtol * want.abs(), f"{label}: ", "elements", rtol, atol,
        lambda i: f"value {values[i].item():.6g}",
    )  # fmt: skip


def make_values(lengths, dtype, width, seed=0):
    g = torch.Generator().manual_seed(seed)
    shape = (sum(lengths),) if width is None else (sum(lengths), width)
    return (torch.randn(shape, generator=g) * 3).to(dtype).to(DEVICE)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).removeprefix("torch."))
@pytest.mark.parametrize("lengths", list(LENGTHS), ids=str)
@pytest.mark.parametrize("width", [None, 1, 3, 8])
@pytest.mark.parametrize("path", list(PATHS))
def test_matches_per_segment_softmax(dtype, lengths, width, path):
    values = make_values(LENGTHS[lengths], dtype, width)
    offsets = offsets_of(LENGTHS[lengths])
    got = ragged.ragged_softmax_forward(values, offsets, **PATHS[path])
    assert_close(got, values, offsets, f"{lengths} H={width} {path}")


@pytest.mark.parametrize("offset_dtype", [torch.int32, torch.int64])
def test_offset_dtypes_and_public_entry(offset_dtype):
    values = make_values(LENGTHS["mixed"], torch.float32, 2)
    offsets = offsets_of(LENGTHS["mixed"], offset_dtype)
    assert_close(kernels.ragged_softmax(values, offsets), values, offsets, str(offset_dtype))


@pytest.mark.parametrize("path", list(PATHS))
def test_invariants(path):
    lengths = [5, 1, 0, 33, 9]
    values, offsets = make_values(lengths, torch.float32, 3), offsets_of(lengths)
    tunables = PATHS[path]
    y = ragged.ragged_softmax_forward(values, offsets, **tunables)
    bounds = offsets.tolist()
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        if b > a:
            sums = y[a:b].double().sum(0)
            assert torch.allclose(sums, torch.ones_like(sums), atol=1e-5), f"segment {a}:{b} sums {sums}"
    assert (y[offsets[1] : offsets[2]] == 1).all(), "a length-1 segment is exactly 1"
    shifted = values.clone()
    shifted[bounds[3] : bounds[4]] += 50.0  # one segment shifted: its softmax does not change
    y_shift = ragged.ragged_softmax_forward(shifted, offsets, **tunables)
    assert torch.allclose(y, y_shift, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("path", list(PATHS))
def test_special_values(path):
    lengths = [6, 20, 4]
    values = make_values(lengths, torch.float32, 2)
    values[0:6, 0] = -torch.inf  # an all -inf column of a segment: NaN, as torch.softmax
    values[6:10, 1] = -torch.inf  # -inf lanes of a multi-item segment: 0, the rest finite
    values[27, 0] = float("nan")  # NaN: its segment's column is NaN
    values[8, 0] = float("inf")
    offsets = offsets_of(lengths)
    assert_close(ragged.ragged_softmax_forward(values, offsets, **PATHS[path]), values, offsets, f"special {path}")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).removeprefix("torch."))
@pytest.mark.parametrize("path", list(PATHS))
def test_grads(dtype, path):
    lengths = [7, 0, 1, 30, 3, 90]
    values = make_values(lengths, dtype, 3)
    offsets = offsets_of(lengths)
    dy = torch.randn(values.shape, generator=torch.Generator().manual_seed(3)).to(dtype).to(DEVICE)
    if not PATHS[path]:
        values.requires_grad_()
        y = kernels.ragged_softmax(values, offsets)
        (dx,) = torch.autograd.grad(y, values, dy)
    else:
        y = ragged.ragged_softmax_forward(values, offsets, **PATHS[path])
        dx = ragged.ragged_softmax_backward(y, dy, offsets, **PATHS[path])
    v64 = values.detach().double().requires_grad_()
    y64 = reference(v64, offsets)
    (want,) = torch.autograd.grad(y64, v64, dy.double())
    rtol, atol = GRAD_TOLERANCES[dtype]
    dy_max = dy.double().abs().max()
    bound = atol * (1 + dy_max) + rtol * (want.abs() + y64.detach().abs() * dy_max)
    assert dx.dtype == dtype
    assert_within(dx.double(), want, bound, "dx: ", "gradient elements", rtol, atol, lambda i: "")


@pytest.mark.parametrize("width", [None, 4])
def test_jagged_nested_tensor_in_and_out(width):
    parts = [torch.randn(n, *(() if width is None else (width,))) for n in (3, 7, 1, 12)]
    nt = torch.nested.nested_tensor(parts, layout=torch.jagged, device=DEVICE, requires_grad=True)
    out = kernels.ragged_softmax(nt)
    assert out.is_nested and out.layout == torch.jagged
    want = torch.softmax(nt, dim=1)
    assert torch.allclose(out.values(), want.values(), atol=1e-6)
    (grad,) = torch.autograd.grad((out.values() ** 2).sum(), nt)
    v64 = nt.values().detach().double().requires_grad_()  # torch's own NJT softmax backward fails for (B, j)
    (want_grad,) = torch.autograd.grad((reference(v64, nt.offsets()) ** 2).sum(), v64)
    assert torch.allclose(grad.values().double(), want_grad, atol=1e-6)


def test_bad_offsets_and_values():
    values = torch.randn(10, 2, device=DEVICE)
    cases = [
        (torch.tensor([0, 5, 3, 10], device=DEVICE), ValueError, "decrease at index 1"),
        (torch.tensor([0, 5, 12], device=DEVICE), ValueError, "offsets\\[-1\\] == T"),
        (torch.tensor([1, 5, 10], device=DEVICE), ValueError, "offsets\\[0\\] == 0"),
        (torch.tensor([0, 5, 10], dtype=torch.float32, device=DEVICE), TypeError, "int32 or torch.int64"),
        (torch.tensor([[0, 10]], device=DEVICE), ValueError, "allowed: \\(B \\+ 1,\\)"),
        (torch.tensor([0, 10], device="meta"), ValueError, "same device"),
        ([0, 10], TypeError, "offsets must be a torch.Tensor"),
    ]
    for offsets, error, words in cases:
        with pytest.raises(error, match=words):
            kernels.ragged_softmax(values, offsets)
    good = torch.tensor([0, 4, 10], device=DEVICE)
    with pytest.raises(ValueError, match="contiguous rows"):
        kernels.ragged_softmax(torch.randn(2, 10, device=DEVICE).t(), good)
    with pytest.raises(ValueError, match=r"\(T,\) or \(T, H\)"):
        kernels.ragged_softmax(torch.randn(10, 2, 2, device=DEVICE), good)
    with pytest.raises(TypeError, match="float16, bfloat16, float32"):
        kernels.ragged_softmax(torch.randn(10, device=DEVICE).double(), good)
    with pytest.raises(TypeError, match="offsets are missing"):
        kernels.ragged_softmax(values)
    empty_offsets = torch.zeros(1, dtype=torch.int64, device=DEVICE)
    assert kernels.ragged_softmax(torch.randn(0, 3, device=DEVICE), empty_offsets).shape == (0, 3)


def test_torch_compile_fullgraph():
    torch._dynamo.reset()
    values = make_values([4, 0, 9], torch.float32, 2).requires_grad_()
    offsets = offsets_of([4, 0, 9])
    compiled = torch.compile(
        lambda v, o: kernels.ragged_softmax(v * 2, o),
        fullgraph=True,
        backend="aot_eager" if DEVICE == "cpu" else "inductor",
    )
    y = compiled(values, offsets)
    assert_close(y.detach(), values.detach() * 2, offsets, "compiled")
    (g,) = torch.autograd.grad((y**2).sum(), values)
    (want,) = torch.autograd.grad((kernels.ragged_softmax(values * 2, offsets) ** 2).sum(), values)
    assert torch.allclose(g, want, atol=1e-6)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).removeprefix("torch."))
def test_gpu_long_tail_and_cuda_graph(dtype):
    g = torch.Generator().manual_seed(0)
    lengths = [*torch.randint(0, 300, (500,), generator=g).tolist(), 144_000, 1, 0, 20_000]
    values, offsets = make_values(lengths, dtype, None), offsets_of(lengths, torch.int32)
    y = kernels.ragged_softmax(values, offsets)
    assert_close(y, values, offsets, "long tail")
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y_graph = kernels.ragged_softmax(values, offsets)
    values.mul_(0.5)
    graph.replay()
    assert_close(y_graph, values, offsets, "graph replay")


def test_numerics_names_resolve_to_the_fused_ops():
    """`blockscope numerics --variants masked_softmax,ragged_softmax` checks the fused ops (rows as segments)."""
    from blockscope.profiling.inspect import numerics as nm

    assert {"masked_softmax", "ragged_softmax"} <= set(nm.allowed_names())
    x = torch.randn(3, 37, device=DEVICE)
    for name in ("masked_softmax", "ragged_softmax"):
        got = nm.softmax_callable(name)(x)
        assert torch.allclose(got, torch.softmax(x, -1), rtol=1e-5, atol=1e-7), name
