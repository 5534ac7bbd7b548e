"""stagedrows (Gluon): plans, errors and the PTX of offline sm_90 compiles here (the CPU interpreter cannot run
Gluon); numbers against the float64 reference over dtype x shape x layout on a CUDA GPU (`make test-gpu`)."""

from __future__ import annotations

import re

import pytest
import torch

from blockscope import kernels
from blockscope.kernels import softmax, stagedrows
from tests.softmax_checks import assert_softmax_close

DTYPES = [torch.float16, torch.bfloat16, torch.float32]
needs_gpu = pytest.mark.skipif(
    not torch.cuda.is_available() or kernels.interpreting(),
    reason="needs a CUDA GPU without the interpreter (make test-gpu)",
)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: kernels.DTYPE_NAMES[d])
@pytest.mark.parametrize("n_cols", [2, 96, 200, 778, 1000, 1536, 3000, 5000, 12346, 16384])
def test_default_plan_stages_whole_slices_of_the_rows(n_cols, dtype):
    plan = stagedrows.plan(4099, n_cols, dtype)
    c = plan.constexprs
    threads = plan.tunables["threads_per_row"]
    slices = c["PART0"] + c["PART1"] + c["PART2"]
    assert c["ROW_THREADS"] * c["COL_THREADS"] == 32 and c["ROW_WARPS"] * c["COL_WARPS"] == plan.num_warps
    assert c["COL_THREADS"] * c["COL_WARPS"] == threads and c["SLICE"] == c["VEC"] * threads
    assert plan.tile_width == slices * c["SLICE"] >= n_cols
    assert plan.rows_per_program == 32 * plan.num_warps // threads
    assert plan.grid == (-(-4099 // plan.rows_per_program),)
    assert n_cols % c["VEC"] == 0 and c["VEC"] * dtype.itemsize <= 16
    assert plan.rows_per_program * plan.tile_width * dtype.itemsize <= stagedrows.MAX_PROGRAM_BYTES


def test_plan_errors_name_what_is_allowed():
    with pytest.raises(ValueError, match="allowed: 1 <= N <= 16384"):
        stagedrows.plan(4, 16386, torch.float16)
    with pytest.raises(ValueError, match="allowed: N even for 16-bit dtypes"):
        stagedrows.plan(4, 1001, torch.bfloat16)
    with pytest.raises(ValueError, match="threads_per_row=256 is more than the 128 threads of num_warps=4"):
        stagedrows.plan(4, 8192, torch.float16, threads_per_row=256, num_warps=4)
    with pytest.raises(ValueError, match="allowed: threads_per_row <= 16"):
        stagedrows.plan(4, 128, torch.float16, threads_per_row=32)  # 32 threads x 8 elements > 128 lanes
    with pytest.raises(ValueError, match="allowed: at most 98304"):
        stagedrows.plan(4, 16384, torch.float32, threads_per_row=32, num_warps=16)  # 16 rows of 64 KB
    with pytest.raises(ValueError, match="threads_per_row=3 is not allowed; allowed: a power of two"):
        stagedrows.plan(4, 1000, torch.float16, threads_per_row=3)
    with pytest.raises(ValueError, match="num_warps=32 is not allowed"):
        stagedrows.plan(4, 1000, torch.float16, num_warps=32)
    with pytest.raises(ValueError, match="unknown tunable"):
        stagedrows.plan(4, 1000, torch.float16, rows_per_program=4)


def test_odd_16_bit_rows_are_out_of_the_variant_and_named():
    rule = kernels.VARIANTS["stagedrows"].shape_rule
    assert "odd" in rule(1001, torch.float16) and rule(1001, torch.float32) is None


@pytest.mark.parametrize(
    "dtype, n_cols, tunables, copy, max_registers",
    [
        ("fp16", 1536, {}, "cg", 40),  # one warp per row: the row in shared memory, one slice in registers
        ("fp32", 1536, {}, "cg", 40),
        ("bf16", 1000, {}, "cg", 40),
        ("fp16", 200, {}, "cg", 40),  # 16 threads per row, two rows per warp
        ("fp16", 5000, {"threads_per_row": 64, "num_warps": 8}, "cg", 64),  # two warps per row
        ("fp16", 1002, {}, "ca", 40),
    ],
)  # N = 2 mod 4: 4-byte copies
def test_offline_sm90_compile_stages_rows_and_reads_each_slice_three_times(
    dtype, n_cols, tunables, copy, max_registers
):
    from blockscope.profiling.inspect import compiled

    torch_dtype = kernels.dtype_from_name(dtype)
    info = compiled.inspect_offline("stagedrows", n_cols, torch_dtype, cache=False, **tunables)
    plan = stagedrows.plan(4096, n_cols, torch_dtype, **tunables)
    c = plan.constexprs
    slices = c["PART0"] + c["PART1"] + c["PART2"]
    copies = re.findall(r"cp\.async\.(c[ag])\.shared\.global", info.ptx)
    assert set(copies) == {copy} and len(copies) == slices  # one copy per thread per slice: 16 (cg) or 4 (ca) bytes
    assert set(re.findall(r"st\.global\.(\S+)", info.ptx)) == {
        "cs.v4.b32" if c["VEC"] * torch_dtype.itemsize == 16 else "cs.b32"
    }  # streaming stores only
    assert info.shared_bytes >= plan.rows_per_program * plan.tile_width * torch_dtype.itemsize
    assert info.n_regs <= max_registers and info.spill_store_bytes == 0  # the passes re-read shared memory


@needs_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: kernels.DTYPE_NAMES[d])
@pytest.mark.parametrize(
    "n_rows, n_cols",
    [
        (1, 2),
        (5, 8),
        (1000, 96),
        (333, 200),
        (77, 778),
        (4097, 1000),
        (130, 1536),
        (9, 1002),
        (31, 5000),
        (3, 12346),
        (65, 16384),
    ],
)
@pytest.mark.parametrize("threads_per_row", [None, 32, 128])
def test_stagedrows_matches_reference_on_gpu(n_rows, n_cols, dtype, threads_per_row):
    tunables = {} if threads_per_row is None else {"threads_per_row": threads_per_row}
    try:
        stagedrows.plan(n_rows, n_cols, dtype, **tunables)
    except ValueError:
        pytest.skip("a layout this N does not take")
    torch.manual_seed(n_cols)
    x = torch.randn(n_rows, n_cols, device="cuda", dtype=dtype) * 4
    assert_softmax_close(softmax(x, "stagedrows", **tunables), x, f"stagedrows N={n_cols} {tunables}")


@needs_gpu
@pytest.mark.gpu
def test_stagedrows_extremes_views_out_and_graph_replay_on_gpu():
    x = torch.full((8, 1536), -float("inf"), device="cuda", dtype=torch.float16)
    x[:, 1535] = 0
    x[1] = 60000.0  # equal huge values: uniform
    y = softmax(x, "stagedrows")
    assert (y[0, :1535] == 0).all() and y[0, 1535] == 1
    assert torch.allclose(y[1].float(), torch.full((1536,), 1 / 1536, device="cuda"), rtol=2e-3)
    wide = torch.randn(64, 1539, device="cuda", dtype=torch.bfloat16)
    view = wide[:, 3:1539]  # N=1536 rows at a row stride of 1539, not 16-byte aligned: staged from a copy
    assert_softmax_close(softmax(view, "stagedrows"), view, "stagedrows strided view")
    out = torch.empty(64, 1600, device="cuda", dtype=torch.bfloat16)[:, 1:1537]
    softmax(view, "stagedrows", out=out)
    assert_softmax_close(out, view, "stagedrows into a strided out")
    x = torch.randn(5000, 1536, device="cuda", dtype=torch.float16)
    softmax(x, "stagedrows")
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = softmax(x, "stagedrows")
    for _ in range(3):
        x.copy_(torch.randn_like(x))
        graph.replay()
        assert_softmax_close(y, x, "stagedrows graph replay")


@needs_gpu
@pytest.mark.gpu
def test_autograd_through_stagedrows_on_gpu():
    from tests.grad_checks import assert_grad_close, torch_grad

    x = torch.randn(128, 3000, device="cuda", dtype=torch.bfloat16) * 3
    dy = torch.randn_like(x)
    leaf = x.clone().requires_grad_()
    kernels.softmax(leaf, variant="stagedrows").backward(dy)
    y64, dx64 = torch_grad(x, dy)
    assert_grad_close(leaf.grad, dx64, y64, dy, torch.bfloat16, "stagedrows backward")
