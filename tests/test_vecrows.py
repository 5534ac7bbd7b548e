"""vecrows: rows not 16-byte aligned in whole vectors from the boundary below each row: reference comparisons over
dtype x N (every start mod 8, just under and just over a power of two, aligned N) x R, invariants, the strided
fallback, the tiles and plan errors, and the sm_90 PTX (vector loads and stores of the body, one element per
thread at the ends)."""

from __future__ import annotations

import collections
import re

import pytest
import torch

from blockscope import kernels
from blockscope.kernels import vecrows
from tests.softmax_checks import assert_softmax_close

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
DTYPES = [torch.float16, torch.bfloat16, torch.float32]
IDS = [kernels.DTYPE_NAMES[d] for d in DTYPES]


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("n_cols", [1, 3, 7, 9, 15, 17, 31, 64, 127, 129, 257, 300])
@pytest.mark.parametrize("n_rows", [1, 9])
def test_matches_reference(n_rows, n_cols, dtype):
    torch.manual_seed(n_rows * 1000 + n_cols)
    x = (torch.randn(n_rows, n_cols) * 4).to(dtype).to(DEVICE)
    y = kernels.softmax(x, variant="vecrows")
    assert_softmax_close(y, x, f"vecrows {tuple(x.shape)} {x.dtype}")
    sums = y.double().sum(dim=-1)
    bad = (sums - 1).abs() > 1e-2
    assert not bad.any(), f"row sums off 1 first at row {int(bad.nonzero()[0])}"


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_rest_tile_rows_just_over_a_power_of_two(dtype):
    """N just over a power of two takes [BLOCK] + [REST] lanes (tiles()); R = 8 rows of odd N start at every
    offset mod 8."""
    rests = []
    for n_cols in (65, 66, 70, 129, 131, 257, 260):
        block, rest = vecrows.tiles(n_cols, 16 // torch.empty(0, dtype=dtype).element_size())
        rests.append(rest)
        x = (torch.randn(8, n_cols) * 3).to(dtype).to(DEVICE)
        assert_softmax_close(kernels.softmax(x, variant="vecrows"), x, f"vecrows N={n_cols} tiles {block}+{rest}")
    assert sum(r > 0 for r in rests) >= 2, rests


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_invariants_extremes_and_strided_rows(dtype):
    x = (torch.randn(6, 37) * 3).to(dtype).to(DEVICE)
    y = kernels.softmax(x, variant="vecrows")
    if dtype == torch.float32:  # shift invariance (16-bit inputs round differently once shifted)
        assert torch.allclose(kernels.softmax(x + 2, variant="vecrows"), y, atol=1e-6)
    x[0] = -float("inf")
    x[1, 5] = float("inf")
    x[2, :] = 0.0
    y = kernels.softmax(x, variant="vecrows").float()
    assert torch.isnan(y[0]).all()  # an all -inf row: 0/0, as torch
    assert torch.isnan(y[1, 5])  # +inf: inf - inf, as torch
    assert torch.allclose(y[2], torch.full_like(y[2], 1 / 37), atol=1e-3)
    wide = (torch.randn(5, 48) * 2).to(dtype).to(DEVICE)
    view = wide[:, 3:40]  # row stride 48, output stride 37: element loads (VEC = 1)
    assert_softmax_close(kernels.softmax(view, variant="vecrows"), view, "strided view")


def test_tiles_and_plan_errors():
    assert vecrows.tiles(4095, 8) == (4096, 0)  # the ends take the last partial vector past 4096 lanes
    assert vecrows.tiles(4097, 8) == (4096, 8)
    assert vecrows.tiles(4200, 8) == (4096, 128)
    assert vecrows.tiles(5000, 8) == (4096, 1024)
    assert vecrows.tiles(6000, 8) == (8192, 0)  # past a quarter over: one power of two
    assert vecrows.tiles(65, 4) == (64, 4)
    assert vecrows.tiles(17, 8) == (32, 0)  # too small to split
    plan = vecrows.plan(4096, 4097, torch.float16)
    assert plan.constexprs == {"BLOCK": 4096, "REST": 8, "VEC": 8, "EXACT": 0} and plan.num_warps == 8
    assert vecrows.plan(4096, 4097, torch.float32).constexprs["EXACT"]
    assert not vecrows.plan(4096, 4097, torch.float32, fast_exp=1).constexprs["EXACT"]
    with pytest.raises(ValueError, match=r"allowed: 1 <= N <= 65536"):
        vecrows.plan(4, 65537, torch.float16)
    with pytest.raises(ValueError, match=r"num_warps=3 is not allowed"):
        vecrows.plan(4, 100, torch.float16, num_warps=3)
    with pytest.raises(ValueError, match=r"unknown tunable.*allowed: fast_exp, num_warps"):
        vecrows.plan(4, 100, torch.float16, rows_per_program=2)


@pytest.mark.parametrize(("dtype", "n_cols"), [("fp16", 4095), ("bf16", 4097), ("fp32", 8191), ("fp16", 50257)])
def test_offline_sm90_body_in_vectors_ends_one_element_per_thread(dtype, n_cols):
    from blockscope.profiling.inspect import compiled

    ptx = compiled.inspect_offline("vecrows", n_cols, dtype, n_rows=1024, cache=False).ptx
    loads = collections.Counter(re.findall(r"ld\.global\.(\S+)", ptx))
    stores = collections.Counter(re.findall(r"st\.global\.(\S+)", ptx))
    scalar = "b32" if dtype == "fp32" else "b16"
    _, rest = vecrows.tiles(n_cols, 4 if dtype == "fp32" else 8)
    assert loads["v4.b32"] >= 1 and stores["v4.b32"] >= 1, (loads, stores)
    # the ends (and a REST tile narrower than the threads): one element per thread, not a replicated vector each
    allowed = 2 if rest else 1
    assert loads[scalar] <= allowed and stores[scalar] <= allowed, (loads, stores)
