"""kernels.masked_softmax: softmax(where(keep, x * scale + bias, -inf)) against the unfused torch expression in
float64, invariants, special values, gradients of x and bias, bad input, torch.compile. Tiny shapes (CPU
interpreter); larger shapes and CUDA graphs are GPU-marked."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from blockscope import kernels
from blockscope.kernels import masked
from tests.grad_checks import GRAD_TOLERANCES
from tests.softmax_checks import TOLERANCES, assert_within

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
SHAPES = [(2, 3, 5, 37), (1, 2, 8, 64), (3, 16), (2, 4, 1), (2, 1, 7, 20)]  # pow2 and not, Lk = 1, Lq > Lk


def keep_of(shape: tuple[int, ...], mask: torch.Tensor | None, causal: bool) -> torch.Tensor:
    keep = torch.ones(shape, dtype=torch.bool, device=DEVICE)
    if mask is not None:
        keep = keep & mask
    if causal:
        lq, lk = shape[-2:]
        keep = keep & torch.ones(lq, lk, dtype=torch.bool, device=DEVICE).tril()
    return keep


def reference(x, scale=1.0, bias=None, mask=None, causal=False, dtype=torch.float64):
    """The unfused torch expression, in `dtype` (float64: the reference; x's values upcast)."""
    z = x.to(dtype) * scale
    if bias is not None:
        z = z + bias.to(dtype)
    return torch.softmax(torch.where(keep_of(tuple(x.shape), mask, causal), z, -torch.inf), -1)


def assert_close(got: torch.Tensor, want: torch.Tensor, x: torch.Tensor, label: str) -> None:
    assert got.shape == x.shape and got.dtype == x.dtype, f"{label}: {got.shape} {got.dtype}"
    rtol, atol = TOLERANCES[x.dtype]
    got64 = got.to(torch.float64)
    bound = atol + rtol * want.abs()
    assert_within(got64, want, bound, f"{label}: ", "elements", rtol, atol, lambda i: f"x {x[i].item():.6g}")


def inputs(shape, dtype, seed=0, bias_shape=None, mask_shape=None, p_keep=0.7):
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(shape, generator=g) * 3).to(dtype).to(DEVICE)
    bias = None if bias_shape is None else torch.randn(bias_shape, generator=g).to(dtype).to(DEVICE)
    mask = None if mask_shape is None else (torch.rand(mask_shape, generator=g) < p_keep).to(DEVICE)
    return x, bias, mask


CONFIGS = {
    "plain": {},
    "scale": {"scale": 0.125},
    "bias_mask": {"scale": 0.5, "bias": "row", "mask": "col"},
    "causal_all": {"scale": 0.3, "bias": "full", "mask": "full", "causal": True},
}


def config_inputs(shape, dtype, config):
    spec = CONFIGS[config]
    if spec.get("causal") and len(shape) < 2:
        pytest.skip("causal needs two dims")
    bias_shape = {"row": (*shape[:-1], 1), "full": shape, None: None}[spec.get("bias")]
    mask_shape = {"col": (shape[-1],), "full": shape, None: None}[spec.get("mask")]
    x, bias, mask = inputs(shape, dtype, bias_shape=bias_shape, mask_shape=mask_shape)
    return x, {"scale": spec.get("scale", 1.0), "bias": bias, "mask": mask, "causal": spec.get("causal", False)}


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).removeprefix("torch."))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("config", list(CONFIGS))
def test_matches_unfused_expression(dtype, shape, config):
    x, kw = config_inputs(shape, dtype, config)
    assert_close(kernels.masked_softmax(x, **kw), reference(x, **kw), x, f"{config} {shape} {dtype}")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).removeprefix("torch."))
@pytest.mark.parametrize("shape", [(2, 3, 5, 37), (2, 9, 40), (1, 1, 3, 64)], ids=lambda s: "x".join(map(str, s)))
def test_looped_path_matches(dtype, shape):
    """The wide-row path (forced by `tile`): online max/sum up to the diagonal, a zero-fill loop past it."""
    x, bias, mask = inputs(shape, dtype, bias_shape=shape[-2:], mask_shape=(shape[0], 1, *shape[-2:])[-len(shape) :])
    for causal in (False, True):
        kw = {"scale": 0.7, "bias": bias, "mask": mask, "causal": causal}
        got = masked.masked_softmax_forward(x, tile=16, **kw)
        assert_close(got, reference(x, **kw), x, f"looped causal={causal}")


@pytest.mark.parametrize(
    "mask_shape",
    [(2, 1, 6, 24), (1, 3, 1, 24), (6, 24), (24,), (), (2, 3, 6, 1)],
    ids=["per_batch", "per_head", "shared_LqLk", "per_column", "scalar", "per_row"],
)
@pytest.mark.parametrize("reorder", [False, True], ids=["c_order", "broadcast_dims_innermost"])
def test_broadcast_masks_and_biases(mask_shape, reorder, monkeypatch):
    """Also with every mask/bias counted as too large for L2: the dims they broadcast over run innermost."""
    if reorder:
        monkeypatch.setattr(masked, "L2_RESIDENT_BYTES", 0)
    x, bias, mask = inputs((2, 3, 6, 24), torch.float32, bias_shape=mask_shape, mask_shape=mask_shape)
    for causal in (False, True):
        kw = {"bias": bias, "mask": mask, "scale": 2.0, "causal": causal}
        assert_close(kernels.masked_softmax(x, **kw), reference(x, **kw), x, f"broadcast {mask_shape} {causal}")
    if reorder and mask_shape == (2, 1, 6, 24):
        sizes, _, coefficients = masked._layout(tuple(x.shape), [x, x, mask, None])
        assert sizes == (1, 2, 6, 3) and coefficients == (0, 0, 1, 0), (sizes, coefficients)
    x.requires_grad_()
    y = kernels.masked_softmax(x, mask=mask, causal=True)
    dy = torch.randn_like(y)
    (gx,) = torch.autograd.grad(y, x, dy)
    x64 = x.detach().double().requires_grad_()
    (want,) = torch.autograd.grad(reference(x64, mask=mask, causal=True), x64, dy.double())
    assert torch.allclose(gx.double(), want, atol=1e-5), f"grad max diff {(gx.double() - want).abs().max()}"


def test_strided_and_many_leading_dims():
    x, _, mask = inputs((2, 3, 4, 5, 9), torch.float16, mask_shape=(2, 1, 4, 1, 9))
    base = torch.randn(4, 6, 9, 5, device=DEVICE)
    strided = base.transpose(-1, -2)[:, ::2]  # non-unit column stride and a strided leading dim
    assert_close(kernels.masked_softmax(strided, causal=True), reference(strided, causal=True), strided, "strided")
    # five leading dims whose broadcasts do not merge into three: the launcher materialises them
    x5 = torch.randn(2, 1, 3, 2, 2, 4, 9, device=DEVICE)
    m5 = torch.rand(2, 1, 1, 2, 1, 4, 9, device=DEVICE) < 0.8
    b5 = torch.randn(1, 1, 3, 1, 2, 1, 9, device=DEVICE)
    kw = {"mask": m5, "bias": b5, "causal": True}
    assert_close(kernels.masked_softmax(x5, **kw), reference(x5, **kw), x5, "7-d")
    assert_close(kernels.masked_softmax(x, mask=mask), reference(x, mask=mask), x, "5-d")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).removeprefix("torch."))
def test_invariants(dtype):
    shape = (2, 2, 8, 33)
    x, bias, mask = inputs(shape, dtype, bias_shape=(2, 1, 1, 33), mask_shape=(2, 1, 8, 33))
    mask[..., 0] = True  # no fully masked row here
    keep = keep_of(shape, mask, True)
    y = kernels.masked_softmax(x, scale=0.5, bias=bias, mask=mask, causal=True)
    assert (y[~keep] == 0).all(), "masked lanes must be exactly 0"
    sums = y.to(torch.float64).sum(-1)
    assert torch.allclose(sums, torch.ones_like(sums), atol=TOLERANCES[dtype][0] * 33), f"row sums {sums}"
    # shift invariance: adding a per-row constant through the bias changes nothing (fp32 math, same output)
    shift = torch.full((*shape[:-1], 1), 7.0, dtype=torch.float32, device=DEVICE)
    y_shift = kernels.masked_softmax(x, scale=0.5, bias=bias.float() + shift, mask=mask, causal=True)
    rtol, atol = TOLERANCES[dtype]
    assert torch.allclose(y.float(), y_shift.float(), rtol=2 * rtol, atol=atol), "not shift invariant"


@pytest.mark.parametrize("tile", [None, 16])
def test_special_values_follow_the_unfused_expression(tile):
    x, _, mask = inputs((2, 2, 4, 20), torch.float32, mask_shape=(2, 2, 4, 20))
    mask[0, 1, 2] = False  # a fully masked row -> NaN (torch.softmax of all -inf)
    bias = torch.zeros(4, 20, device=DEVICE)
    bias[1, 3:9] = -torch.inf  # -inf bias: those lanes are 0
    x[1, 0, 3, 5] = float("nan")  # NaN in a kept lane -> NaN row; NaN in a masked lane -> ignored
    mask[1, 0, 0, 7] = False
    x[1, 0, 0, 7] = float("nan")
    x[1, 1, 2, 2] = float("inf")
    tunables = {} if tile is None else {"tile": tile}
    for causal in (False, True):
        kw = {"mask": mask, "bias": bias, "causal": causal, "scale": 0.9}
        got = masked.masked_softmax_forward(x, **kw, **tunables)
        want = reference(x, **kw)
        assert torch.isnan(want[0, 1, 2]).all()
        assert_close(got, want, x, f"special causal={causal} tile={tile}")


@pytest.mark.parametrize("lq,lk", [(5, 12), (12, 5), (7, 7)])
def test_causal_alignment_matches_sdpa(lq, lk):
    """is_causal=True of torch SDPA's math path (top-left): probabilities = SDPA with v = identity."""
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(2, 3, lq, 8, generator=g).to(DEVICE), torch.randn(2, 3, lk, 8, generator=g).to(DEVICE)
    eye = torch.eye(lk, device=DEVICE).expand(2, 3, lk, lk)
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
        want = F.scaled_dot_product_attention(q, k, eye, is_causal=True, scale=0.25)
    got = kernels.masked_softmax(q @ k.transpose(-1, -2), scale=0.25, causal=True)
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-6), f"max diff {(got - want).abs().max()}"
    if lq < lk:
        assert (got[..., lq:] == 0).all(), "columns past the last row's diagonal are never kept"


def _grads(x, bias, dy, **kw):
    y = kernels.masked_softmax(x, bias=bias, **kw)
    return torch.autograd.grad(y, (x, bias), dy)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).removeprefix("torch."))
@pytest.mark.parametrize("bias_shape", [(3, 1, 37), (2, 3, 5, 37)], ids=["broadcast_bias", "full_bias"])
@pytest.mark.parametrize("causal", [False, True])
def test_grads_of_x_and_bias(dtype, bias_shape, causal):
    shape = (2, 3, 5, 37)
    x, bias, mask = inputs(shape, dtype, bias_shape=bias_shape, mask_shape=(2, 1, 5, 37))
    mask[1, 0, 2] = False  # a fully masked row: torch gives grad 0 there (where's backward)
    dy = torch.randn(shape, generator=torch.Generator().manual_seed(5)).to(dtype).to(DEVICE)
    x.requires_grad_(), bias.requires_grad_()
    gx, gb = _grads(x, bias, dy, scale=0.7, mask=mask, causal=causal)
    x64, b64 = x.detach().double().requires_grad_(), bias.detach().double().requires_grad_()
    y64 = reference(x64, 0.7, b64, mask, causal)
    rx, rb = torch.autograd.grad(y64, (x64, b64), dy.double())
    assert gx.dtype == dtype and gb.dtype == dtype and gb.shape == bias.shape
    rtol, atol = GRAD_TOLERANCES[dtype]
    scale = dy.double().abs().max()
    for name, got, want in (("dx", gx, rx), ("dbias", gb, rb)):
        span = 1 if name == "dx" else shape[0]  # dbias sums over the batch
        bound = span * (atol * (1 + scale) + rtol * (want.abs() + scale))
        assert_within(got.double(), want, bound, f"{name}: ", "gradient elements", rtol, atol, lambda i: "")
    assert (gx[1, :, 2] == 0).all()


def test_looped_backward_matches():
    shape = (2, 2, 6, 40)
    x, _, mask = inputs(shape, torch.float32, mask_shape=(6, 40))
    y = kernels.masked_softmax(x, scale=1.5, mask=mask, causal=True)
    dy = torch.randn(shape, device=DEVICE)
    one = masked.masked_softmax_backward(y, dy, 1.5, mask, True, True)
    looped = masked.masked_softmax_backward(y, dy, 1.5, mask, True, True, tile=16)
    for a, b in zip(one, looped, strict=True):
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-7), f"max diff {(a - b).abs().max()}"


def test_no_grad_for_bias_when_not_needed():
    x, bias, _ = inputs((2, 5, 9), torch.float32, bias_shape=(5, 9))
    x.requires_grad_()
    y = kernels.masked_softmax(x, bias=bias)
    (gx,) = torch.autograd.grad(y.sum(), x)  # dy expanded (stride 0): the backward copies it
    assert gx.abs().max() < 1e-6  # d/dx of sum(softmax) = 0


@pytest.mark.parametrize(
    "kwargs,error,words",
    [
        ({"mask": "float_mask"}, TypeError, "torch.bool"),
        ({"mask": "wrong_shape"}, ValueError, "does not broadcast"),
        ({"bias": "wrong_shape"}, ValueError, "does not broadcast"),
        ({"bias": "int_bias"}, TypeError, "float16/bfloat16/float32"),
        ({"bias": "too_many_dims"}, ValueError, "does not broadcast"),
        ({"bias": "meta"}, ValueError, "x's device"),
        ({"scale": "2"}, TypeError, "Python float"),
        ({"causal": 1}, TypeError, "True or False"),
    ],
)
def test_bad_input_is_one_clear_error(kwargs, error, words):
    x = torch.randn(2, 3, 4, 5, device=DEVICE)
    values = {
        "float_mask": torch.ones(4, 5, device=DEVICE),
        "wrong_shape": torch.ones(3, 1, 3, 5, device=DEVICE).bool(),
        "int_bias": torch.ones(4, 5, dtype=torch.int32, device=DEVICE),
        "too_many_dims": torch.ones(1, 2, 3, 4, 5, device=DEVICE),
        "meta": torch.ones(4, 5, device="meta"),
    }
    if kwargs.get("bias") == "wrong_shape":
        kwargs = {"bias": torch.ones(4, 4, device=DEVICE)}
    kwargs = {k: values.get(v, v) if isinstance(v, str) and k != "scale" else v for k, v in kwargs.items()}
    with pytest.raises(error, match=words):
        kernels.masked_softmax(x, **kwargs)


def test_bad_x():
    with pytest.raises(TypeError, match="float16, torch.bfloat16"):
        kernels.masked_softmax(torch.ones(3, 4, dtype=torch.float64, device=DEVICE))
    with pytest.raises(ValueError, match="causal needs"):
        kernels.masked_softmax(torch.ones(4, device=DEVICE), causal=True)
    with pytest.raises(ValueError, match="0-d"):
        kernels.masked_softmax(torch.ones((), device=DEVICE))
    assert kernels.masked_softmax(torch.ones(0, 3, device=DEVICE)).shape == (0, 3)


def test_torch_compile_fullgraph_with_grad():
    torch._dynamo.reset()
    x, bias, mask = inputs((2, 2, 4, 12), torch.float32, bias_shape=(2, 1, 12), mask_shape=(4, 12))
    x.requires_grad_(), bias.requires_grad_()

    def f(x, bias, mask):
        return kernels.masked_softmax(x * 2, scale=0.5, bias=bias, mask=mask, causal=True).sum(-1)

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager" if DEVICE == "cpu" else "inductor")
    out = compiled(x, bias, mask)
    dy = torch.randn_like(out)
    gx, gb = torch.autograd.grad(out, (x, bias), dy)
    ex, eb = torch.autograd.grad(f(x, bias, mask), (x, bias), dy)
    assert torch.allclose(gx, ex, atol=1e-6) and torch.allclose(gb, eb, atol=1e-6)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).removeprefix("torch."))
@pytest.mark.parametrize("lk", [1000, 2048, 20000])
def test_gpu_attention_shapes_and_cuda_graph(dtype, lk):
    lq = min(lk, 512)
    x, bias, mask = inputs((2, 4, lq, lk), dtype, bias_shape=(4, 1, lk), mask_shape=(2, 1, lq, lk))
    kw = {"scale": 0.088, "bias": bias, "mask": mask, "causal": True}
    y = kernels.masked_softmax(x, **kw)
    assert_close(y, reference(x, **kw), x, f"gpu {lk}")
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y_graph = kernels.masked_softmax(x, **kw)
    x.copy_(x.flip(-1))
    graph.replay()
    assert_close(y_graph, reference(x, **kw), x, f"graph {lk}")


@pytest.mark.parametrize("n_cols", [16, 512, 513, 1000, 2048, 4096, 4097, 20000])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_causal_forward_defaults_to_one_warp_at_513_to_4096(n_cols, dtype):
    """The H200 tuning rows (data/h200_fused.csv) put causal rows at 1 warp ahead at L 1000-4096: the forward's
    default for those blocks (1024-4096); other widths, non-causal rows and a given num_warps keep the plan's rule."""
    from blockscope.kernels import masked

    rows = 2 * 16 * 8
    causal = masked.forward_plan(rows, n_cols, dtype, causal=True)
    plain = masked.forward_plan(rows, n_cols, dtype, causal=False)
    assert plain.num_warps == masked.plan(rows, n_cols, dtype).num_warps
    if masked.CAUSAL_ONE_WARP_N[0] <= n_cols <= masked.CAUSAL_ONE_WARP_N[1]:
        assert causal.num_warps == 1, f"causal N={n_cols}: {causal.num_warps} warps"
    else:
        assert causal.num_warps == plain.num_warps
    assert masked.forward_plan(rows, n_cols, dtype, causal=True, num_warps=4).num_warps == 4
