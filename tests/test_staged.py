"""The Gluon variants (staged, staged_split): plans, errors and the PTX of offline sm_90 compiles here (the CPU
interpreter cannot run Gluon); numbers against the float64 reference on a CUDA GPU (`make test-gpu`)."""

from __future__ import annotations

import re

import pytest
import torch

from blockscope import kernels
from blockscope.kernels import VARIANTS, auto, softmax, staged, staged_split
from tests.softmax_checks import assert_softmax_close

DTYPES = [torch.float16, torch.bfloat16, torch.float32]
needs_gpu = pytest.mark.skipif(
    not torch.cuda.is_available() or kernels.interpreting(),
    reason="needs a CUDA GPU without the interpreter (make test-gpu)",
)


@pytest.mark.parametrize(
    "slices, parts",
    [
        (1, (1, 0, 0)),
        (16, (16, 0, 0)),
        (25, (16, 8, 1)),
        (23, (16, 8, 0)),
        (15, (16, 0, 0)),
        (29, (32, 0, 0)),
        (56, (32, 16, 8)),
    ],
)
def test_slice_parts_round_up_to_three_powers_of_two(slices, parts):
    assert staged.slice_parts(slices) == parts
    assert sum(parts) >= slices and all(p == 0 or p & (p - 1) == 0 for p in parts)


def test_copy_elements_takes_the_widest_whole_copy():
    assert staged.copy_elements(2, 32768) == 8  # 16 bytes of fp16
    assert staged.copy_elements(2, 65534) == 2  # 4 bytes
    assert staged.copy_elements(2, 1001) == 0  # no 4-byte word: cp.async cannot copy it
    assert staged.copy_elements(4, 1001) == 1  # one fp32 is a 4-byte copy
    assert staged.copy_elements(2, 4096, 3000, 3002) == 2


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: kernels.DTYPE_NAMES[d])
def test_staged_plan_holds_the_row_in_shared_memory(dtype):
    plan = staged.plan(4096, 28000, dtype) if dtype != torch.float32 else staged.plan(4096, 14000, dtype)
    c = plan.constexprs
    slices = c["PART0"] + c["PART1"] + c["PART2"]
    assert c["SLICE"] == c["VEC"] * 32 * plan.num_warps and c["VEC"] * dtype.itemsize == 16
    assert plan.tile_width == slices * c["SLICE"] >= plan.n_cols > (slices - 1) * c["SLICE"]
    assert plan.grid == (4096,)


@pytest.mark.parametrize(
    "n_cols, dtype, programs, chunk",
    [
        (32768, torch.float16, 1, 32768),
        (32770, torch.bfloat16, 2, 16896),
        (65536, torch.float16, 2, 32768),
        (100000, torch.float16, 4, 26624),
        (262144, torch.bfloat16, 8, 32768),
        (131072, torch.float32, 8, 16384),
        (300000, torch.float32, 16, 19456),
        (16384, torch.float32, 1, 16384),
    ],
)
def test_staged_plan_splits_rows_over_64_kb_over_a_cluster(n_cols, dtype, programs, chunk):
    plan = staged.plan(512, n_cols, dtype)
    assert (plan.cluster_size, plan.constexprs["CLUSTER"], plan.tile_width) == (programs, programs, chunk)
    assert plan.grid == (512 * programs,) and (programs - 1) * chunk < n_cols <= programs * chunk
    assert plan.launch_shared_bytes == (0 if programs == 1 else kernels.cluster.EXCHANGE_BYTES)
    assert plan.tunables == ({"num_warps": 8} if programs == 1 else {"num_warps": 8, "cluster": programs})
    if n_cols * dtype.itemsize <= 224 * 1024:  # one program still takes the row when asked
        assert staged.plan(512, n_cols, dtype, cluster=1).grid == (512,)


def test_staged_plan_errors_name_what_is_allowed():
    with pytest.raises(ValueError, match="N even for 16-bit"):
        staged.plan(4, 1001, torch.float16)
    with pytest.raises(ValueError, match=r"N <= 57344 per program; raise cluster, up to 16"):
        staged.plan(4, 60000, torch.float32, cluster=1)
    with pytest.raises(ValueError, match=r"cluster=17 is not allowed; allowed: an integer from 1 to 16"):
        staged.plan(4, 60000, torch.float32, cluster=17)
    with pytest.raises(ValueError, match=r"cluster=5 leaves programs without columns at N=4096 .*cluster <= 2"):
        staged.plan(4, 4096, torch.float16, cluster=5)
    with pytest.raises(ValueError, match="num_warps=2 is not allowed; allowed: 4, 8, 16, 32"):
        staged.plan(4, 4096, torch.float16, num_warps=2)
    with pytest.raises(ValueError, match="unknown tunable"):
        staged.plan(4, 4096, torch.float16, chunk=4)
    assert VARIANTS["staged"].limit(torch.float32) == 16 * 57344 and VARIANTS["staged"].limit(torch.float16) == 2**20


def test_staged_split_plan_chunks():
    plan = staged_split.plan(1024, 262144, torch.float16)
    assert plan.tunables["chunks"] == 8 and plan.tile_width * 8 >= 262144  # 64 KB of fp16 per program
    assert plan.grid_resolved_at_launch
    uneven = staged_split.plan(7, 100000, torch.bfloat16, chunks=3)
    assert (uneven.constexprs["CHUNKS"] - 1) * uneven.tile_width < 100000 <= 3 * uneven.tile_width
    with pytest.raises(ValueError, match="raise chunks"):
        staged_split.plan(4, 262144, torch.float32, chunks=1)
    with pytest.raises(ValueError, match="chunks <= "):
        staged_split.plan(4, 3000, torch.float16, chunks=8)
    with pytest.raises(ValueError, match="chunks=0 is not allowed"):
        staged_split.plan(4, 3000, torch.float16, chunks=0)


@pytest.mark.parametrize("variant", [name for name, spec in VARIANTS.items() if spec.gpu_only])
def test_cpu_tensors_get_a_clear_error(variant):
    """Every GPU-only variant (Gluon: staged, staged_split, warprows; inline PTX: cluster) names the variants that run
    on the CPU."""
    if torch.cuda.is_available() and not kernels.interpreting():
        pytest.skip("a CUDA machine runs the kernel")
    x = torch.randn(3, 64)
    with pytest.raises(ValueError, match=r"which the Triton CPU interpreter cannot run; allowed: a CUDA tensor.*'"):
        softmax(x, variant)
    assert not VARIANTS[variant].runs_here()


def test_auto_never_picks_a_gluon_variant_under_the_interpreter(monkeypatch):
    table = {
        "format": auto.TABLE_FORMAT,
        "entries": [
            {"dtype": "fp16", "n_rows": 4096, "n_cols": 32768, "variant": "staged", "tunables": {"num_warps": 8}}
        ],
    }
    monkeypatch.setattr(auto, "load_table", lambda gpu_name: table)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert auto.choose(4096, 32768, torch.float16) == auto.heuristic_choice(4096, 32768)
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    assert auto.choose(4096, 32768, torch.float16, "NVIDIA H200") == ("staged", {"num_warps": 8})


@pytest.mark.parametrize(
    "variant, n_cols, dtype, copies",
    [
        ("staged", 32768, "fp16", 16),
        ("staged", 28000, "bf16", 14),
        ("staged", 14000, "fp32", 14),
        ("staged", 65536, "fp16", 16),
        ("staged", 262144, "bf16", 16),
        ("staged_split", 262144, "fp16", 16),
        ("staged_split", 131072, "fp32", 16),
    ],
)
def test_offline_sm90_compile_copies_whole_16_byte_vectors(variant, n_cols, dtype, copies):
    from blockscope.profiling.inspect import compiled

    info = compiled.inspect_offline(variant, n_cols, dtype, cache=False)
    plan = VARIANTS[variant].plan(4096, n_cols, kernels.dtype_from_name(dtype))
    assert info.shared_bytes >= plan.tile_width * kernels.dtype_from_name(dtype).itemsize  # the row (chunk) staged
    assert info.spill_store_bytes <= 8
    assert len(re.findall(r"cp\.async\.cg\.shared\.global .*, 0x10, ", info.ptx)) == copies  # 16-byte copies


@needs_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: kernels.DTYPE_NAMES[d])
@pytest.mark.parametrize("n_rows, n_cols", [(1, 2), (5, 1000), (777, 4096), (33, 24576), (7, 50000), (3, 100002)])
@pytest.mark.parametrize("num_warps", [4, 8, 16])
def test_staged_matches_reference_on_gpu(n_rows, n_cols, dtype, num_warps):
    if n_cols > VARIANTS["staged"].limit(dtype):
        pytest.skip("over the shared memory of one program")
    torch.manual_seed(n_cols)
    x = torch.randn(n_rows, n_cols, device="cuda", dtype=dtype) * 4
    assert_softmax_close(softmax(x, "staged", num_warps=num_warps), x, f"staged N={n_cols} w={num_warps}")


@needs_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: kernels.DTYPE_NAMES[d])
@pytest.mark.parametrize(
    "n_rows, n_cols, chunks",
    [(3, 32768, None), (133, 262144, None), (300, 100002, 3), (5000, 70000, None), (1, 65536, 5), (64, 4096, 1)],
)
def test_staged_split_matches_reference_on_gpu(n_rows, n_cols, chunks, dtype):
    torch.manual_seed(n_cols)
    x = torch.randn(n_rows, n_cols, device="cuda", dtype=dtype) * 4
    tunables = {} if chunks is None else {"chunks": chunks}
    assert_softmax_close(softmax(x, "staged_split", **tunables), x, f"staged_split N={n_cols} {tunables}")


@needs_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("variant", ["staged", "staged_split"])
def test_unaligned_views_out_and_graph_replay_on_gpu(variant):
    wide = torch.randn(64, 70010, device="cuda", dtype=torch.float16)
    view = wide[:, 3:70003]  # start 6 bytes past 16-byte alignment, stride 70010
    assert_softmax_close(softmax(view, variant), view, f"{variant} unaligned view")
    out = torch.empty(64, 70010, device="cuda", dtype=torch.float16)[:, 1:70001]
    softmax(view, variant, out=out)
    assert_softmax_close(out, view, f"{variant} into an unaligned out")
    x = torch.randn(256, 65536, device="cuda", dtype=torch.bfloat16)
    softmax(x, variant)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = softmax(x, variant)
    for _ in range(3):
        x.copy_(torch.randn_like(x))
        graph.replay()
        assert_softmax_close(y, x, f"{variant} graph replay")


@needs_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("variant", ["staged", "staged_split"])
def test_autograd_through_the_gluon_forward_on_gpu(variant):
    from tests.grad_checks import assert_grad_close, torch_grad

    x = torch.randn(128, 8192, device="cuda", dtype=torch.bfloat16) * 3
    dy = torch.randn_like(x)
    leaf = x.clone().requires_grad_()
    kernels.softmax(leaf, variant=variant).backward(dy)
    y64, dx64 = torch_grad(x, dy)
    assert_grad_close(leaf.grad, dx64, y64, dy, torch.bfloat16, f"{variant} backward")


def test_auto_keeps_columns_per_program_when_an_entry_moves_to_another_n(monkeypatch):
    assert auto.scaled_chunks(16, 524288, 300000) == 10  # 16 chunks of 32768 -> 10 (16 would leave some empty)
    assert auto.scaled_chunks(8, 262144, 262144) == 8 and auto.scaled_chunks(4, 131072, 1000) == 1
    table = {
        "format": auto.TABLE_FORMAT,
        "entries": [
            {
                "dtype": "fp16",
                "n_rows": 512,
                "n_cols": 524288,
                "variant": "staged_split",
                "tunables": {"num_warps": 8, "chunks": 16},
            }
        ],
    }
    monkeypatch.setattr(auto, "load_table", lambda gpu_name: table)
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    variant, tunables = auto.choose(300, 300000, torch.float16, "NVIDIA H200")
    assert (variant, tunables["chunks"]) == ("staged_split", 10)
    staged_split.plan(300, 300000, torch.float16, **tunables)  # a plan the launch accepts


def test_relabel_rewrites_only_unmeasured_rows_a_variant_rule_leaves_out():
    import importlib.util
    from pathlib import Path

    import pandas as pd

    path = Path(__file__).resolve().parents[1] / "tools" / "relabel_unsupported.py"
    spec = importlib.util.spec_from_file_location("relabel_unsupported", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = pd.DataFrame(
        [
            {
                "variant": "staged",
                "dtype": "bf16",
                "n_rows": 4,
                "n_cols": 129,
                "median_us": float("nan"),
                "direction": "forward",
                "error": "ValueError: staged: N=129 torch.bfloat16 rows are not whole 4-byte words",
            },
            {
                "variant": "staged",
                "dtype": "fp32",
                "n_rows": 4,
                "n_cols": 129,
                "median_us": float("nan"),
                "direction": "forward",
                "error": "RuntimeError: something else",
            },  # fp32 N=129 stages: a real failure
            {
                "variant": "staged",
                "dtype": "bf16",
                "n_rows": 4,
                "n_cols": 128,
                "median_us": 5.0,
                "direction": "forward",
                "error": "",
            },
        ]
    )
    table, changed = module.relabel(rows)
    assert changed == {"staged": 1}
    assert table.loc[0, "error"].startswith("unsupported: staged: N = 129 is odd")
    assert table.loc[1, "error"] == rows.loc[1, "error"] and table.loc[2, "error"] == ""


def test_offline_sm90_compile_fp32_has_both_exp_forms_and_16_bit_only_the_ftz_one():
    """fp32 with fast_exp=1: a per-program branch between ex2.approx.ftz (every finite value within FTZ_SAFE_RANGE of
    the max) and gl.exp's ex2.approx.f32; fp32 by default: no ex2 at all (kernels/exactexp.py's polynomial, the row
    sum's reciprocal div.rn); 16-bit: ftz only (warprows.exp_rows; in one program: over a cluster the few exps that
    combine the partial sums are gl.exp's)."""
    from blockscope.profiling.inspect import compiled

    fp32 = compiled.inspect_offline("staged", 300000, "fp32", n_rows=300, cache=False, cluster=16, fast_exp=1).ptx
    assert "ex2.approx.ftz.f32" in fp32 and re.search(r"ex2\.approx\.f32\s", fp32)
    exact = compiled.inspect_offline("staged", 300000, "fp32", n_rows=300, cache=False, cluster=16).ptx
    assert "ex2." not in exact and "div.rn.f32" in exact and "div.full" not in exact
    for dtype in ("fp16", "bf16"):
        ptx = compiled.inspect_offline("staged", 50000, dtype, n_rows=777, cache=False, cluster=1).ptx
        assert "ex2.approx.ftz.f32" in ptx and not re.search(r"ex2\.approx\.f32\s", ptx), dtype


def test_register_cap_matches_shared_memory_residency_only_where_it_binds():
    assert staged.register_cap(53280, 8) == 64  # 4 programs of 256 threads by shared memory
    assert staged.register_cap(65568, 8) == 80  # 3
    assert staged.register_cap(28704, 8) == 0  # 7 programs: a cap of 32 would serialize the loads
    assert staged.register_cap(131136, 16) == 0  # one program of 512 threads: registers bind nothing
    plan = staged.plan(777, 100000, torch.bfloat16)
    assert plan.compile_options == {"maxnreg": 64}


@needs_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("cluster", [1, 4])
def test_fp32_rows_both_sides_of_the_ftz_range_on_gpu(cluster):
    """Rows whose values span less than FTZ_SAFE_RANGE take ex2.approx.ftz, wider ones gl.exp: the subnormal
    outputs of the wide rows must survive (ftz would flush them to 0), -inf and a chunk of -inf take either."""
    from blockscope.profiling.inspect.numerics.ulp import round_to_dtype, ulp_distance

    torch.manual_seed(cluster)
    n_cols = 40000
    x = torch.randn(6, n_cols, device="cuda", dtype=torch.float32)
    x[1, ::7] = -90.0  # range ~94 > 87: gl.exp; exp(-94) / sum (~1e3) is an fp32 subnormal
    x[2, 5] = -float("inf")  # -inf among normals: ftz
    x[3, : n_cols // 2] = -float("inf")  # the first chunks all -inf
    x[4] *= 20  # range ~ 180
    x[5, 3] = 80.0  # a range of ~85 from the max: ftz, every exp a normal number
    y = softmax(x, "staged", cluster=cluster)
    assert_softmax_close(y, x, f"staged fp32 cluster={cluster}")
    expected = round_to_dtype(torch.softmax(x.double(), -1), torch.float32)
    subnormal = (expected != 0) & (expected.abs() < torch.finfo(torch.float32).tiny)
    assert subnormal[1].any() and subnormal[4].any()
    assert (y[subnormal] != 0).all(), "a subnormal output was flushed to 0"
    normal = [0, 2, 3]  # standard-normal rows: the GPU budget of test_numerics; the others (outputs down to 1e-35)
    # carry the approximate exp's larger error on far-from-max values (docs/kernel-changes.md 7), gl.exp's as well
    assert ulp_distance(y[normal], expected[normal]).max().item() <= 64
