"""Kernel correctness under the CPU interpreter (TRITON_INTERPRET=1 from conftest) against the float64 reference."""

from __future__ import annotations

import pytest
import torch

from blockscope import kernels
from blockscope.kernels import VARIANTS, softmax
from tests.softmax_checks import assert_softmax_close, runnable_variants

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
EDGE_N = [1, 5, 127, 128, 129, 1000, 1024, 1025]
ODD_R = 3
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
RUNNABLE = runnable_variants()  # the GPU-only Gluon variants have their own tests (test_staged.py)


def fit(variant: str, n_cols: int) -> int:
    """n_cols, or the variant's limit where that is smaller (tinyrows: N <= 64; its own tests cover its range)."""
    return min(n_cols, VARIANTS[variant].max_n)


def make_input(n_rows: int, n_cols: int, dtype: torch.dtype, seed: int = 0, scale: float = 3.0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(n_rows, n_cols, generator=generator) * scale).to(dtype).to(DEVICE)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: kernels.DTYPE_NAMES[d])
@pytest.mark.parametrize("n_cols", EDGE_N)
@pytest.mark.parametrize("variant", RUNNABLE)
def test_matches_reference_across_power_of_two_edges(variant, n_cols, dtype):
    if n_cols > VARIANTS[variant].max_n:
        pytest.skip(f"{variant} takes N <= {VARIANTS[variant].max_n}")
    x = make_input(ODD_R, n_cols, dtype, seed=n_cols)
    assert_softmax_close(softmax(x, variant), x, f"{variant} N={n_cols}")


@pytest.mark.parametrize("variant", RUNNABLE)
def test_direct_launcher_equals_registry_entry(variant):
    x = make_input(5, fit(variant, 129), torch.float16, seed=1)
    direct = VARIANTS[variant].launcher(x)
    assert torch.equal(direct, softmax(x, variant))
    assert_softmax_close(direct, x, variant)


@pytest.mark.parametrize(
    "variant, tunables",
    [
        ("teaching", {"num_warps": 1}),
        ("multirow", {"rows_per_program": 4, "num_warps": 2}),  # 7 rows: the last program masks one row
        ("multirow", {"rows_per_program": 1}),
        ("online", {"tile": 16}),  # 63 steps with a tail tile of 8 lanes
        ("online", {"tile": 128, "num_stages": 2}),
        ("persistent", {"programs": 2}),  # each program loops over 3-4 rows
        ("persistent", {"programs": 64, "num_stages": 2}),
    ],
)
def test_tunables_keep_results_exact(variant, tunables):
    x = make_input(7, 1000, torch.float32, seed=2)
    assert_softmax_close(softmax(x, variant, **tunables), x, f"{variant} {tunables}")


def test_online_handles_rows_wider_than_one_program():
    n_cols = 70_001  # over the teaching limit (65536), not a multiple of the tile
    x = make_input(2, n_cols, torch.float32, seed=3)
    assert_softmax_close(softmax(x, "online", tile=4096), x, "online wide")
    with pytest.raises(ValueError, match="N=70001"):
        softmax(x, "teaching")


def test_seed_worked_example():
    x = torch.tensor([[0.0, 1.0, 2.0, 3.0, 4.0]], device=DEVICE)
    assert VARIANTS["teaching"].plan(1, 5, x.dtype).tile_width == 8
    expected = torch.tensor([0.0117, 0.0317, 0.0861, 0.2341, 0.6364])
    for variant in RUNNABLE:
        got = softmax(x, variant).cpu()
        assert torch.allclose(got.round(decimals=4), expected, atol=0), f"{variant}: {got}"


@pytest.mark.parametrize("variant", RUNNABLE)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: kernels.DTYPE_NAMES[d])
def test_invariants_row_sum_and_shift(variant, dtype):
    x = make_input(5, fit(variant, 300), dtype, seed=4)
    y = softmax(x, variant).to(torch.float64)
    rtol, _ = {torch.float32: (1e-5, 0), torch.float16: (2e-3, 0), torch.bfloat16: (1e-2, 0)}[dtype]
    assert (y.sum(-1) - 1).abs().max().item() < rtol * 5
    shifted = softmax((x.float() + 50.0).to(dtype), variant).to(torch.float64)
    if dtype == torch.float32:  # exact shift in fp32 input; fp16/bf16 re-round x + 50
        assert (shifted - y).abs().max().item() < 1e-6


@pytest.mark.parametrize("variant", RUNNABLE)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: kernels.DTYPE_NAMES[d])
def test_special_values_match_torch(variant, dtype):
    inf, nan = float("inf"), float("nan")
    big = 60000.0 if dtype == torch.float16 else 3e38
    rows = [
        [1.0, inf, 2.0, 0.0],  # +inf -> NaN row in torch
        [-inf, -inf, -inf, -inf],  # all -inf -> NaN row
        [1.0, nan, 2.0, 0.0],  # NaN propagates
        [-inf, 1.0, -inf, 2.0],  # -inf lanes -> exact 0
        [big, -big, big, 0.0],  # extreme finite values: no overflow
        [-big, -big, -big, -big + 1],
    ]
    x = torch.tensor(rows, dtype=torch.float32).to(dtype).to(DEVICE)
    expected = torch.softmax(x.cpu().to(torch.float64), dim=-1)
    got = softmax(x, variant).cpu().to(torch.float64)
    assert torch.equal(torch.isnan(got), torch.isnan(expected)), f"{variant}: {got}"
    finite = ~torch.isnan(expected)
    assert torch.allclose(got[finite], expected[finite], atol=1e-2)
    assert_softmax_close(softmax(x[3:], variant), x[3:], f"{variant} finite rows")


@pytest.mark.parametrize("variant", RUNNABLE)
@pytest.mark.parametrize("shape", [(0, 5), (3, 0), (2, 0, 4), (0,)])
def test_empty_inputs_behave_like_torch(variant, shape):
    x = torch.empty(shape, device=DEVICE)
    y = softmax(x, variant)
    assert y.shape == torch.softmax(x, -1).shape and y.dtype == x.dtype


@pytest.mark.parametrize("width", [204, 208, 210])
@pytest.mark.parametrize("variant", RUNNABLE)
def test_row_strides_that_are_and_are_not_whole_16_byte_vectors(variant, width):
    """N=200 fp16 is whole 16-byte vectors; a row stride of 204 or 210 elements is not (VEC must drop to 1)."""
    rows = make_input(5, width, torch.float16, seed=width)[:, : fit(variant, 200)]
    assert rows.stride(0) == width
    assert_softmax_close(softmax(rows, variant), rows, f"{variant} N=200 row stride {width}")


def test_launch_constexprs_keep_vec_only_for_whole_vector_strides():
    from blockscope.kernels._common import launch_constexprs, vector_elements

    assert vector_elements(torch.float16, 1000) == 8 and vector_elements(torch.float16, 1004) == 1
    assert vector_elements(torch.float32, 1004) == 4 and vector_elements(torch.bfloat16, 3) == 1
    plan = {"BLOCK_SIZE": 256, "VEC": 8}
    assert launch_constexprs(plan, torch.empty(2, 208)[:, :200]) is plan
    assert launch_constexprs(plan, torch.empty(2, 208), torch.empty(2, 204)[:, :200]) == {"BLOCK_SIZE": 256, "VEC": 1}


@pytest.mark.parametrize("variant", RUNNABLE)
def test_non_contiguous_inputs(variant):
    wide = make_input(6, 200, torch.float16, seed=5)
    sliced = wide[::2, 10 : 10 + fit(variant, 140)]  # row stride 400, unit column stride: used in place
    assert sliced.stride() == (400, 1)
    assert_softmax_close(softmax(sliced, variant), sliced, f"{variant} row-strided")
    transposed = make_input(33, 4, torch.float32, seed=6).t()  # last-dim stride 4: copied
    assert transposed.stride(-1) != 1
    assert_softmax_close(softmax(transposed, variant), transposed, f"{variant} transposed")
    rank3 = make_input(4, 6, torch.float32, seed=7).reshape(2, 2, 6).permute(1, 0, 2)
    assert not rank3.is_contiguous()
    assert_softmax_close(softmax(rank3, variant), rank3, f"{variant} rank-3 permuted")


@pytest.mark.parametrize("variant", RUNNABLE)
def test_bad_dtype_and_type(variant):
    with pytest.raises(TypeError, match="allowed: torch.float16, torch.bfloat16, torch.float32"):
        softmax(torch.ones(2, 4, dtype=torch.int32, device=DEVICE), variant)
    with pytest.raises(TypeError, match="allowed"):
        softmax(torch.ones(2, 4, dtype=torch.float64, device=DEVICE), variant)
    with pytest.raises(TypeError, match="expected a torch.Tensor"):
        softmax([[1.0, 2.0]], variant)
    with pytest.raises(ValueError, match="0-d"):
        softmax(torch.tensor(1.0, device=DEVICE), variant)


def test_wrong_device_is_rejected(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")  # read at call time: now a CPU tensor is not allowed
    with pytest.raises(ValueError, match="allowed: a cuda tensor"):
        softmax(torch.ones(2, 4), "teaching")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    with pytest.raises(ValueError, match="allowed with TRITON_INTERPRET=1: cpu or cuda"):
        softmax(torch.ones(2, 4, device="meta"), "online")


@pytest.mark.parametrize("variant, n_cols", [("teaching", 65537), ("multirow", 16385), ("persistent", 65537)])
def test_n_over_limit(variant, n_cols):
    limit = VARIANTS[variant].max_n
    with pytest.raises(ValueError, match=f"allowed: 1 <= N <= {limit}"):
        softmax(torch.empty(1, n_cols, device=DEVICE), variant)


@pytest.mark.parametrize(
    "variant, tunables, message",
    [
        ("teaching", {"num_warps": 3}, "num_warps=3 is not allowed; allowed: 1, 2, 4, 8, 16, 32"),
        ("teaching", {"tile": 64}, "unknown tunable.*tile; allowed: fast_exp, num_warps, window"),
        ("online", {"tile": 100}, "tile=100 is not allowed; allowed: a power of two from 16 to 65536"),
        ("online", {"tile": True}, "tile=True is not allowed"),
        ("online", {"num_stages": 9}, "num_stages=9 is not allowed; allowed: an integer from 1 to 4"),
        ("multirow", {"rows_per_program": 3}, "rows_per_program=3 is not allowed; allowed: a power of two"),
        ("multirow", {"rows_per_program": 128}, "over 65536 lanes; allowed: rows_per_program <= 64"),
        ("persistent", {"programs": 0}, "programs=0 is not allowed"),
    ],
)
def test_bad_tunables(variant, tunables, message):
    x = torch.ones(2, 1000, device=DEVICE)
    with pytest.raises(ValueError, match=message):
        softmax(x, variant, **tunables)


def test_unknown_variant():
    with pytest.raises(ValueError, match="unknown variant 'fast'; allowed: teaching, multirow, online, persistent"):
        softmax(torch.ones(2, 4, device=DEVICE), "fast")


def test_plans_state_the_seed_rules():
    plan = VARIANTS["teaching"].plan(4096, 1000, torch.float16)
    assert (plan.grid, plan.tile_width, plan.num_warps) == ((4096,), 1024, 4)
    assert VARIANTS["teaching"].plan(4096, 1025, torch.float16).num_warps == 8  # BLOCK_SIZE 2048
    multirow = VARIANTS["multirow"].plan(4096, 128, torch.float16)
    assert (multirow.rows_per_program, multirow.grid) == (16, (256,))
    online = VARIANTS["online"].plan(3, 70_001, torch.float32)
    assert (online.tile_width, online.grid) == (4096, (3,))
    persistent = VARIANTS["persistent"].plan(4096, 1000, torch.float16)
    assert persistent.grid_resolved_at_launch and persistent.constexprs["BLOCK_SIZE"] == 1024


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: kernels.DTYPE_NAMES[d])
@pytest.mark.parametrize("variant", RUNNABLE)
def test_every_variant_plans_every_n_up_to_its_limit(variant, dtype):
    """Plans only (CPU): each variant's stated limit and the unaligned N below it take the default tunables."""
    spec = VARIANTS[variant]
    for n_cols in (spec.max_n, spec.max_n - 1, 2**23 + 1):
        if n_cols <= spec.max_n:
            plan = spec.plan(1, n_cols, dtype)
            assert plan.n_cols == n_cols and plan.tile_width >= 1, (variant, n_cols)


@pytest.mark.parametrize("variant, n_cols", [("teaching", 65536), ("multirow", 16384), ("persistent", 65536)])
def test_one_row_at_the_limit_runs(variant, n_cols):
    """The interpreter where it is cheap: one program holds the whole row."""
    x = make_input(1, n_cols, torch.float32, seed=8)
    assert_softmax_close(softmax(x, variant), x, f"{variant} N={n_cols}")


@pytest.mark.parametrize("variant", RUNNABLE)
def test_empty_input_over_the_limit_returns_empty(variant):
    """Nothing to compute: no N-limit error (the limit is about what one launch can hold)."""
    n_cols = VARIANTS[variant].max_n + 1
    x = torch.empty(0, n_cols, device=DEVICE, dtype=torch.float16)
    y = softmax(x, variant)
    assert y.shape == (0, n_cols) and y.dtype == x.dtype
    with pytest.raises(ValueError, match="unknown tunable"):  # tunables are still checked
        softmax(x, variant, nope=1)


def test_interpret_set_after_triton_import_says_what_to_do():
    """TRITON_INTERPRET=1 set once triton is imported used to end in '0 active drivers' (or an interpreter error)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = (
        "import os, torch, triton\n"
        "os.environ['TRITON_INTERPRET'] = '1'\n"
        "from blockscope import kernels\n"
        "try:\n"
        "    kernels.softmax(torch.ones(2, 4), 'online')\n"
        "except ValueError as error:\n"
        "    print('ValueError:', error)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith(
        "ValueError: online: tensor on cpu, but TRITON_INTERPRET=1 was set after triton was imported"
    ), done.stdout
    assert "allowed: set TRITON_INTERPRET=1 before importing triton" in done.stdout
