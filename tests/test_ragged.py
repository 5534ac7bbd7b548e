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
# default: design 1 (length classes) at its default sizes (these lengths: the small classes); classes: design 1
# with 256-lane small tiles and 512-lane big ones (rows: classes up to 4, 16, 64, 256, big up to 512, longer ones
# split into 512-row chunks); design 0 (items): packed: short segments several per program (every class up to
# 1024); items: CHUNK=16 items (long ones span several); mixed: segments up to 64 packed, longer ones in items
PATHS = {
    "default": {},
    "classes": {"tile": 256, "max_lanes": 512},
    "packed": {"packed_max": 1024},
    "items": {"packed_max": 0, "chunk": 16},
    "mixed": {"packed_max": 64, "chunk": 16},
}
SMALL_DESIGN = {"tile": 256, "max_lanes": 512}  # design 1 at sizes where a few hundred rows reach every path


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


# every design-1 path at SMALL_DESIGN: each small class (1-4, 5-16, 17-64, 65-256 rows), the big class (257-512),
# long segments split into 512-row chunks (513, 1100: 2 and 3 chunks), bounds (4, 16, 64, 256, 512, 513), odd
# starts (the vector loads' partial ends), empty and length-1 segments
DESIGN_LENGTHS = [3, 0, 1, 4, 5, 16, 17, 64, 65, 256, 257, 512, 513, 1100, 1, 2, 0, 7]


LOAD_SCHEMES = {"vec": {}, "element": {"vec": 0}}  # design 1's loads of 1-D values


def poisoned_tail(values: torch.Tensor) -> torch.Tensor:
    """values as the head of a buffer 16 rows longer, the rows past T NaN (a kernel that read them into a segment
    would show it)."""
    buffer = torch.full((values.shape[0] + 16, *values.shape[1:]), float("nan"), dtype=values.dtype)
    buffer = buffer.to(values.device)
    buffer[: values.shape[0]] = values
    return buffer[: values.shape[0]]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).removeprefix("torch."))
@pytest.mark.parametrize("width", [None, 3])
@pytest.mark.parametrize("loads", list(LOAD_SCHEMES))
@pytest.mark.parametrize("fused", [0, 1])
def test_design1_every_class_and_long_split(dtype, width, loads, fused):
    if loads != "vec" and width is not None:
        pytest.skip("vector and element loads are told apart for 1-D values only")
    values = poisoned_tail(make_values(DESIGN_LENGTHS, dtype, width, seed=5))
    offsets = offsets_of(DESIGN_LENGTHS, torch.int32)
    got = ragged.ragged_softmax_forward(values, offsets, fused=fused, **LOAD_SCHEMES[loads], **SMALL_DESIGN)
    assert_close(got, values, offsets, f"design 1 H={width} loads={loads} fused={fused}")
    align = {"vec": 16 // values.element_size(), "element": 1}[loads] if width is None else 1
    assert ragged.vector_rows((values, got)) == 16 // values.element_size()
    layout = ragged.class_layout(values.shape[0], len(DESIGN_LENGTHS), width or 1, 256, 512, align)
    assert layout["TILE_ROWS"] == 256 // (4 if width else 1) and layout["entries"] >= 5  # 1100 and 513 split


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).removeprefix("torch."))
def test_design1_vector_loads_at_every_start_and_backward(dtype):
    """Whole-vector loads: segments starting at every row mod 8, ends inside one vector and across several, a
    long segment's chunks from an unaligned start; the values past T (NaN) never reach y or dx."""
    lengths = [1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 0, 23, 250, 255, 257, 600, 1300, 3, 1]
    values = make_values(lengths, dtype, None, seed=8)  # T = 2749: T's last vector is partial
    offsets = offsets_of(lengths, torch.int32)
    got = ragged.ragged_softmax_forward(values, offsets, **SMALL_DESIGN)
    assert_close(got, values, offsets, "vec forward")
    dy = torch.randn(values.shape, generator=torch.Generator().manual_seed(9)).to(dtype).to(DEVICE)
    assert ragged.vector_rows((values, dy, got)) == 16 // values.element_size()
    dx = ragged.ragged_softmax_backward(got, dy, offsets, **SMALL_DESIGN)
    y = got.double()
    seg = torch.repeat_interleave(torch.arange(len(lengths)), torch.tensor(lengths)).to(DEVICE)
    dots = torch.zeros(len(lengths), dtype=torch.float64, device=DEVICE).index_add_(0, seg, y * dy.double())
    want = y * (dy.double() - dots[seg])
    rtol, atol = TOLERANCES[dtype]
    assert_within(dx.double(), want, atol + rtol * want.abs(), "vec backward: ", "elements", rtol, atol, str)
    element = ragged.ragged_softmax_backward(got, dy, offsets, vec=0, **SMALL_DESIGN)
    assert_within(dx.double(), element.double(), atol + rtol * element.double().abs(), "vec vs element dx: ",
                  "elements", rtol, atol, str)  # fmt: skip


def test_vector_rows_needs_16_byte_aligned_tensors():
    values = make_values([20], torch.float16, None)
    assert ragged.vector_rows((values, torch.empty_like(values))) == 8
    assert ragged.vector_rows((values[1:],)) == 1  # a 2-byte aligned view: element loads
    assert ragged.vector_rows((values.float(),)) == 4
    with pytest.raises(ValueError, match="vec=2 is not allowed"):
        ragged.ragged_softmax_forward(values, offsets_of([20]), vec=2)


def test_design1_misaligned_16bit_view_and_wide_rows():
    """A 16-bit view at an odd element offset (no word loads) and H > 256 (two column blocks) on design 1."""
    lengths = [5, 300, 1, 0, 40]
    base = make_values([sum(lengths) + 1], torch.float16, None, seed=2)
    values = base[1:]  # 2-byte aligned: element loads
    offsets = offsets_of(lengths)
    assert_close(ragged.ragged_softmax_forward(values, offsets, **SMALL_DESIGN), values, offsets, "odd view")
    wide = make_values([3, 9, 0, 2], torch.float32, 300, seed=4)
    offsets = offsets_of([3, 9, 0, 2])
    assert_close(ragged.ragged_softmax_forward(wide, offsets, tile=256, max_lanes=512), wide, offsets, "H=300")


def test_design1_backward_every_path():
    lengths = [1, 0, 3, 20, 100, 300, 700, 2]
    dtype = torch.float32
    values = make_values(lengths, dtype, 2, seed=6)
    offsets = offsets_of(lengths, torch.int32)
    dy = torch.randn(values.shape, generator=torch.Generator().manual_seed(7)).to(DEVICE)
    y = ragged.ragged_softmax_forward(values, offsets, **SMALL_DESIGN)
    v64 = values.double().requires_grad_()
    (want,) = torch.autograd.grad(reference(v64, offsets), v64, dy.double())
    for fused in (0, 1):
        dx = ragged.ragged_softmax_backward(y, dy, offsets, fused=fused, **SMALL_DESIGN)
        assert torch.allclose(dx.double(), want, atol=1e-6), (fused, (dx.double() - want).abs().max())


def test_design_tunables():
    values, offsets = make_values([4, 9], torch.float32, None), offsets_of([4, 9])
    with pytest.raises(ValueError, match="do not apply to design=0"):
        ragged.ragged_softmax_forward(values, offsets, design=0, tile=256)
    with pytest.raises(ValueError, match="do not apply to design=1"):
        ragged.ragged_softmax_forward(values, offsets, design=1, chunk=16)
    with pytest.raises(ValueError, match="maxnreg=7"):
        ragged.ragged_softmax_forward(values, offsets, maxnreg=7)
    assert ragged.design_of({}) == 1 and ragged.design_of({"chunk": 16}) == 0
    old = ragged.ragged_softmax_forward(values, offsets, design=0)
    new = ragged.ragged_softmax_forward(values, offsets, design=1, maxnreg=80, big_maxnreg=64, big_warps=4)
    assert torch.allclose(old, new, atol=1e-6)
    assert ragged.plan(13, 1, torch.float32).tunables["design"] == 1
    assert ragged.plan(13, 1, torch.float32, design=0).constexprs["CHUNK"] == 512


def test_bench_script_non_cuda_parts(tmp_path, monkeypatch):
    """experiments/2026-12-04-ragged-redesign/bench_ragged.py without CUDA: arguments, lengths, the float64
    reference and check, ratios, CSV and table; main() says it needs a GPU (exit 2) and still writes nothing."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "experiments/2026-12-04-ragged-redesign/bench_ragged.py"
    spec = importlib.util.spec_from_file_location("bench_ragged", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    args = bench.parse(["--out", str(tmp_path / "b.csv"), "--dtypes", "fp16,fp32", "--tune", "--cases", "uniform"])
    assert args.dtype_names == ["fp16", "fp32"] and args.tune and args.case_names == ["uniform"]
    with pytest.raises(SystemExit):
        bench.parse(["--out", "x.csv", "--dtypes", "fp8"])
    assert bench.lengths_of("uniform").numel() == 16384 and int(bench.lengths_of("uniform", 8).min()) >= 1
    assert int(bench.lengths_of("long_tail").max()) == 147_456
    for width in (None, 3):
        lengths = torch.tensor([3, 1, 7])
        values = make_values(lengths.tolist(), torch.float32, width)
        offsets = offsets_of(lengths.tolist())
        want = bench.reference(values, offsets, lengths.to(DEVICE))
        assert torch.allclose(want, reference(values, offsets))
        assert bench.compare(ragged.ragged_softmax_forward(values, offsets), want, 1e-5) == "ok"
        assert bench.compare(want + 1e-3, want, 1e-5).startswith("MISMATCH")
    rows = [
        {"case": "uniform", "dtype": "fp16", "backend": b, "method": "cuda_graph", "median_us": us, "pct_of_ideal": p}
        for b, us, p in (("new", 80.0, 80.0), ("old", 300.0, 21.0), ("nested", 4400.0, 1.4))
    ]
    rows.append({"case": "long_tail", "dtype": "fp16", "backend": "nested", "method": "cuda_graph", "error": "E"})
    bench.add_ratios(rows)
    assert rows[0]["x_vs_nested"] == pytest.approx(55.0) and rows[0]["x_vs_old"] == pytest.approx(3.75)
    bench.write_csv(rows, tmp_path / "out" / "b.csv")
    text = (tmp_path / "out" / "b.csv").read_text()
    assert text.splitlines()[0] == ",".join(bench.FIELDS) and "55" in text
    md = bench.table(rows, "# t")
    assert "| uniform | fp16 |  | new | cuda_graph | 80.0 | 80 | 55.0 | 3.75 |" in md and "failed: E" in md
    if not torch.cuda.is_available():
        assert bench.main(["--out", str(tmp_path / "none.csv")]) == 2 and not (tmp_path / "none.csv").exists()

    # the whole timing loop on this device with tiny lengths and a fake clock: every backend, method and --tune row
    import types

    from blockscope.profiling.measure import timing

    def fake_benchmark(fn, method, **kw):
        fn()
        return types.SimpleNamespace(median_us=10.0, p20_us=9.0, p80_us=11.0, reps=3)

    tiny = {"uniform": [3, 1, 0, 40, 7], "long_tail": [2, 70, 1]}
    monkeypatch.setattr(bench, "DEVICE", DEVICE)
    monkeypatch.setattr(
        bench, "lengths_of", lambda kind, divisor=1: torch.tensor(tiny[kind]).div(divisor).ceil().long()
    )
    monkeypatch.setattr(bench, "TUNE", [{"fused": 1, "tile": 256, "max_lanes": 512}])
    monkeypatch.setattr(timing, "benchmark", fake_benchmark)
    monkeypatch.setattr(timing, "measure_copy_gbps", lambda **kw: 4000.0)
    rows = []
    bench.run(bench.parse(["--out", str(tmp_path / "r.csv"), "--tune", "--dtypes", "fp16,fp32"]), rows)
    bench.add_ratios(rows)
    timed = [r for r in rows if r.get("median_us")]
    assert {r["case"] for r in timed} == {"uniform", "long_tail", "uniform_h8"}
    assert {r["backend"] for r in timed} >= {"new", "old", "new[fused=1,tile=256,max_lanes=512]"}
    assert all(r["check"] == "ok" for r in timed if r["backend"] != "nested"), [r for r in timed if r["check"] != "ok"]
    assert all(r["x_vs_old"] == 1.0 for r in timed if r["backend"] == "old")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).removeprefix("torch."))
@pytest.mark.parametrize(
    "tunables",
    [{}, {"vec": 0}, {"fused": 1}, {"fused": 1, "vec": 0}, {"maxnreg": 0, "big_maxnreg": 0}, {"design": 0}],
    ids=["design1", "element_loads", "fused", "fused_element_loads", "no_cap", "design0"],
)
def test_gpu_bench_lengths_both_designs(dtype, tunables):
    """bench_fused's full-size lengths (uniform 1..8192 over 16384 segments; the long tail with a 144k segment)."""
    from tools.bench_fused import _lengths

    for kind in ("uniform", "long_tail"):
        lengths = _lengths(kind)
        offsets = offsets_of(lengths.tolist(), torch.int32)
        values = (torch.randn(int(lengths.sum()), device=DEVICE) * 3).to(dtype)
        got = ragged.ragged_softmax_forward(values, offsets, **tunables).double()
        v = values.double()
        seg = torch.repeat_interleave(torch.arange(lengths.numel(), device=DEVICE), lengths.to(DEVICE))
        m = torch.full((lengths.numel(),), -torch.inf, dtype=v.dtype, device=DEVICE).scatter_reduce(0, seg, v, "amax")
        e = torch.exp(v - m[seg])
        want = e / torch.zeros_like(m).index_add_(0, seg, e)[seg]
        rtol, atol = TOLERANCES[dtype]
        assert ((got - want).abs() <= atol + rtol * want.abs()).all(), f"{kind} {tunables}"


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


@pytest.mark.parametrize(
    ("width", "backward", "fused", "big_regs"),
    [
        (None, False, False, 64),
        (4, False, True, 80),
        (8, False, True, 80),
        (16, False, False, 64),
        (4, True, False, 0),
        (None, True, False, 80),
    ],
)
def test_design_one_defaults_per_width(monkeypatch, width, backward, fused, big_regs):
    """The launcher's defaults (experiments/2026-12-04-ragged-h, -ragged-vec): one fused launch at big_maxnreg 80 for
    the forward of 2-8 columns, two launches at 64 for 1-D values and wider rows; the backward: 80 for 1-D values, no
    cap for 2-D ones."""
    launched = []
    real = ragged.launch_kernel

    def spy(kernel, grid, args, constexprs, num_warps, num_stages=1, options=None, **kw):
        launched.append((kernel.fn.__name__ if hasattr(kernel, "fn") else str(kernel), (options or {}).get("maxnreg")))
        return real(kernel, grid, args, constexprs, num_warps, num_stages, options=options, **kw)

    monkeypatch.setattr(ragged, "launch_kernel", spy)
    lengths = [3, 3000, 40]  # 3000 rows: past the small classes' tile at every width
    values, offsets = make_values(lengths, torch.float32, width), offsets_of(lengths)
    y = ragged.ragged_softmax_forward(values, offsets)
    if backward:
        launched.clear()
        ragged.ragged_softmax_backward(y, torch.randn_like(y), offsets)
    names = [name for name, _ in launched]
    assert ("_ragged_fused_kernel" in names) == fused, names
    big = [regs for name, regs in launched if name in ("_ragged_fused_kernel", "_ragged_big_kernel")]
    assert big and all((regs or 0) == big_regs for regs in big), launched
    small = [regs or 0 for name, regs in launched if name == "_ragged_small_kernel"]
    assert small == ([] if fused else [80 if width is None else 0]), launched
