"""kernels.softmax in a model, under the CPU interpreter: autograd for every variant, `dim`, out=/inplace, the
Softmax module, the blockscope::softmax custom op and torch.compile(fullgraph=True)."""

from __future__ import annotations

import pytest
import torch
import torch._dynamo.testing

from blockscope import kernels
from blockscope.kernels import VARIANTS, Softmax, auto, ops, softmax
from tests.grad_checks import assert_grad_close, torch_grad
from tests.softmax_checks import TOLERANCES, assert_softmax_close, runnable_variants

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# every variant at the widths it takes (tinyrows stops at N = 64: its rows run at 5 and 64 instead)
GRAD_CASES = [
    (v, n, {}) for v in runnable_variants() for n in (5, 128, 1025) if n <= VARIANTS[v].max_n or v == "auto"
] + [("tinyrows", 64, {}), ("splitrow", 1000, {"chunk": 256})]


def make_input(shape: tuple[int, ...], dtype: torch.dtype, seed: int = 0, scale: float = 3.0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=generator) * scale).to(dtype).to(DEVICE)


def assert_matches_torch(actual: torch.Tensor, x: torch.Tensor, dim: int, label: str) -> None:
    """Forward values vs torch.softmax over `dim` in float64 (softmax_checks' tolerances)."""
    assert_softmax_close(actual.movedim(dim, -1), x.movedim(dim, -1), label)


def check_grad(x: torch.Tensor, label: str, dim: int = -1, seed: int = 1, **kwargs) -> torch.Tensor:
    """blockscope.kernels.softmax(x, dim, **kwargs) has our grad_fn, and x's gradient matches torch's float64 one."""
    leaf = x.detach().requires_grad_()
    y = softmax(leaf, dim, **kwargs)
    node = y.grad_fn if dim % x.dim() == x.dim() - 1 else y.grad_fn.next_functions[0][0]  # under movedim's
    assert node is not None and "SoftmaxFunction" in type(node).__name__, f"{label}: grad_fn {y.grad_fn}"
    dy = make_input(tuple(x.shape), x.dtype, seed=seed, scale=1.0)
    y.backward(dy)
    y64, dx64 = torch_grad(x, dy, dim)
    assert_grad_close(leaf.grad, dx64, y64, dy, x.dtype, label, dim)
    return y


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: kernels.DTYPE_NAMES[d])
@pytest.mark.parametrize("variant, n_cols, tunables", GRAD_CASES)
def test_every_variant_has_a_grad_fn_and_torchs_gradient(variant, n_cols, tunables, dtype):
    x = make_input((3, n_cols), dtype, seed=n_cols)
    y = check_grad(x, f"{variant} N={n_cols} {tunables}", variant=variant, **tunables)
    assert_matches_torch(y.detach(), x, -1, f"{variant} forward")


def test_auto_keeps_the_gradient_on_the_torch_route_and_the_triton_route(monkeypatch):
    table = {
        "format": auto.TABLE_FORMAT,
        "entries": [  # a table where torch.softmax won the small shape
            {"dtype": "fp32", "n_rows": 4096, "n_cols": 129, "variant": "torch", "tunables": {}},
            {"dtype": "fp32", "n_rows": 4096, "n_cols": 1000, "variant": "teaching", "tunables": {"num_warps": 4}},
        ],
    }
    monkeypatch.setattr(auto, "load_table", lambda gpu_name: table)
    auto.clear_choices()
    assert auto.choose(3, 129, torch.float32)[0] == "torch"
    assert auto.choose(3, 1000, torch.float32)[0] == "teaching"
    for n_cols in (129, 1000):
        check_grad(make_input((3, n_cols), torch.float32, seed=n_cols), f"auto N={n_cols}", variant="auto")
    auto.clear_choices()  # the memoized choices came from this test's table


@pytest.mark.parametrize("variant", runnable_variants())
def test_raw_launchers_refuse_tensors_that_require_grad(variant):
    x = make_input((2, 40), torch.float32).requires_grad_()
    with pytest.raises(RuntimeError, match=f"{variant}: x requires grad .* allowed: kernels.softmax"):
        VARIANTS[variant].launcher(x)
    with torch.no_grad():
        assert_softmax_close(VARIANTS[variant].launcher(x), x.detach(), f"{variant} under no_grad")
    assert softmax(x.detach(), variant=variant).grad_fn is None  # no grad wanted: the raw launch, no graph


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -2])
@pytest.mark.parametrize("variant", ["teaching", "online", "auto"])
def test_dim_matches_torch_on_rank3_and_non_contiguous_inputs(variant, dim):
    x = make_input((3, 5, 21), torch.float32, seed=dim % 3)
    assert_matches_torch(softmax(x, dim, variant), x, dim, f"{variant} dim={dim}")
    strided = make_input((5, 3, 42), torch.float16, seed=7)[:, :, ::2].transpose(0, 1)  # (3, 5, 21), no unit dim
    assert_matches_torch(softmax(strided, dim=dim, variant=variant), strided, dim, f"{variant} strided dim={dim}")
    check_grad(strided, f"{variant} strided dim={dim}", dim=dim, variant=variant)


def test_positional_variant_and_dim_errors():
    x = make_input((3, 100), torch.float32)
    assert torch.equal(softmax(x, "online", tile=16), softmax(x, variant="online", tile=16))
    assert torch.equal(softmax(x, -1, "online"), softmax(x, dim=1, variant="online"))
    with pytest.raises(TypeError, match="variant given twice"):
        softmax(x, "online", "teaching")
    with pytest.raises(IndexError, match="dim=2 is out of range for a rank-2 tensor; allowed: -2..1"):
        softmax(x, 2)
    with pytest.raises(ValueError, match="unknown variant 'fast'"):
        softmax(x, 0, "fast")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: kernels.DTYPE_NAMES[d])
@pytest.mark.parametrize("variant, tunables", [(v, {}) for v in runnable_variants()] + [("splitrow", {"chunk": 256})])
def test_out_and_inplace_write_the_given_memory(variant, tunables, dtype):
    n_cols = 1000 if variant == "auto" or VARIANTS[variant].max_n >= 1000 else VARIANTS[variant].max_n
    x = make_input((3, n_cols), dtype, seed=8)
    out = torch.full_like(x, float("nan"))
    assert softmax(x, variant=variant, out=out, **tunables) is out
    assert_softmax_close(out, x, f"{variant} out=")
    inplace = x.clone()
    assert softmax(inplace, variant=variant, inplace=True, **tunables) is inplace
    assert torch.equal(inplace, out), f"{variant}: inplace differs from out="


def test_out_with_dim_and_strided_out():
    x = make_input((5, 3, 40), torch.float32, seed=9)
    for dim in (0, 1, -1):
        out = torch.empty_like(x)  # contiguous: for dim != -1 the result is copied into it
        assert softmax(x, dim, "multirow", out=out) is out
        assert_matches_torch(out, x, dim, f"out dim={dim}")
        strided = torch.empty(3, 5, 40, device=DEVICE).transpose(0, 1)
        softmax(x, dim, "online", out=strided)
        assert_matches_torch(strided, x, dim, f"transposed out dim={dim}")
    rows = torch.empty(5, 64, device=DEVICE)[:, :40]  # 2-D row-strided out: written in place
    x2 = x[:, 0]
    assert softmax(x2, variant="splitrow", out=rows) is rows
    assert_matches_torch(rows, x2, -1, "row-strided out")
    inplace = x.clone()
    softmax(inplace, 0, "teaching", inplace=True)
    assert_matches_torch(inplace, x, 0, "inplace dim=0")


def test_out_and_inplace_errors_name_what_is_allowed():
    x = make_input((4, 16), torch.float32)
    cases = [
        (dict(out=torch.empty(4, 8, device=DEVICE)), ValueError, r"out is \(4, 8\) torch.float32 .* allowed: x's"),
        (dict(out=torch.empty(4, 16, dtype=torch.float16, device=DEVICE)), ValueError, "allowed: x's"),
        (dict(out=torch.empty(4, 16, device="meta")), ValueError, "on meta; allowed"),
        (dict(out=[0.0] * 64), TypeError, "out must be a torch.Tensor"),
        (dict(out=x), ValueError, "out overlaps x's memory; allowed: a separate tensor, or inplace=True"),
        (
            dict(out=torch.empty(1, 16, device=DEVICE).expand(4, 16)),
            RuntimeError,
            "more than one element of the written-to tensor",
        ),
        (dict(inplace=True, out=torch.empty_like(x)), ValueError, "inplace=True writes into x; allowed: out=None"),
    ]
    for kwargs, error, match in cases:
        with pytest.raises(error, match=match):
            softmax(x, **kwargs)
    meta = torch.empty(4, 16, device="meta")
    with pytest.raises(ValueError, match="teaching: tensor on meta"):  # the launcher's check, not a false overlap
        softmax(meta, out=torch.empty_like(meta))
    shifted = torch.empty(5, 16, device=DEVICE)
    with pytest.raises(ValueError, match="out overlaps x's memory"):
        softmax(shifted[:4], out=shifted[1:])
    assert softmax(shifted[:2], out=shifted[2:4]) is not None  # same storage, disjoint bytes: allowed
    leaf = x.clone().requires_grad_()
    for kwargs in (dict(out=torch.empty_like(x)), dict(inplace=True)):
        with pytest.raises(RuntimeError, match="do not support autograd and x requires grad"):
            softmax(leaf, **kwargs)
    with torch.no_grad():
        softmax(leaf, inplace=True)  # as torch's in-place ops on leaves: allowed without grad
    assert_softmax_close(leaf.detach(), x, "inplace under no_grad")


def test_softmax_module():
    module = Softmax(dim=1, variant="online", tile=16)
    assert repr(module) == "Softmax(dim=1, variant='online', tile=16)"
    assert not list(module.parameters()) and not module.state_dict()
    x = make_input((2, 50, 3), torch.float32, seed=10)
    assert torch.equal(module(x), softmax(x, 1, "online", tile=16))
    assert Softmax().variant == "auto" and Softmax().dim == -1
    check_grad(x, "module dim=1", dim=1, variant="online", tile=16)
    with pytest.raises(ValueError, match="unknown variant 'fast'"):
        Softmax(variant="fast")


def test_tunables_encoding_round_trips():
    assert ops.encode_tunables({"tile": 2048, "num_warps": 8}) == "num_warps=8,tile=2048"
    assert ops.decode_tunables("num_warps=8,tile=2048") == {"num_warps": 8, "tile": 2048}
    assert ops.decode_tunables("") == {}
    for bad in ("tile", "tile=x", "=4"):
        with pytest.raises(ValueError, match="allowed: 'name=int,...'"):
            ops.decode_tunables(bad)


def test_custom_ops_pass_opcheck():
    x = make_input((3, 40), torch.float32, seed=11)
    opcheck = torch.library.opcheck
    opcheck(torch.ops.blockscope.softmax.default, (x.requires_grad_(), "online", "tile=16"))
    y = softmax(x.detach(), variant="online")
    opcheck(torch.ops.blockscope.softmax_backward.default, (y, torch.randn_like(y)))
    assert_softmax_close(torch.ops.blockscope.softmax(x.detach(), "auto", ""), x.detach(), "op auto")


@pytest.mark.parametrize("variant, tunables", [("online", {"tile": 64}), ("splitrow", {"chunk": 256})])
def test_torch_compile_fullgraph_forward_and_backward(variant, tunables):
    torch._dynamo.reset()
    block = Softmax(variant=variant, **tunables)

    def attention_like(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5  # [B, Sq, Sk]
        return block(scores) @ v + kernels.softmax(q, 1, variant, **tunables)  # and a softmax over Sq

    backend = torch._dynamo.testing.CompileCounterWithBackend("aot_eager")
    compiled = torch.compile(attention_like, fullgraph=True, backend=backend)  # a graph break raises here
    shapes = [(1, 8, 16), (1, 300, 16), (1, 300, 16)]  # Sk = 300: two split-row chunks of 256 per row
    inputs = [make_input(shape, torch.float32, seed=s, scale=1.0) for s, shape in enumerate(shapes)]
    leaves_c = [t.clone().requires_grad_() for t in inputs]
    leaves_e = [t.clone().requires_grad_() for t in inputs]
    out_c, out_e = compiled(*leaves_c), attention_like(*leaves_e)
    rtol, atol = TOLERANCES[torch.float32]
    torch.testing.assert_close(out_c, out_e, rtol=rtol, atol=atol)
    assert backend.frame_count == 1
    calls = [str(node.target) for node in backend.graphs[0].graph.nodes if node.op == "call_function"]
    assert calls.count("blockscope.softmax") == 2, calls
    dy = torch.randn_like(out_e)
    out_c.backward(dy)
    out_e.backward(dy)
    for name, got, want in zip("qkv", leaves_c, leaves_e, strict=True):
        torch.testing.assert_close(got.grad, want.grad, rtol=1e-5, atol=1e-6, msg=lambda m, n=name: f"d{n}: {m}")
