"""tinyrows: back-to-back tiny rows (N <= 64) as flat spans: reference comparisons over dtype x N (powers of two and
not) x R, invariants, the strided fallback, plan errors, and the sm_90 PTX (whole-vector loads and stores at any N)."""

from __future__ import annotations

import collections
import math
import re

import pytest
import torch

from blockscope import kernels
from blockscope.kernels import tinyrows
from tests.softmax_checks import assert_softmax_close

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
DTYPES = [torch.float16, torch.bfloat16, torch.float32]
IDS = [kernels.DTYPE_NAMES[d] for d in DTYPES]


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("n_cols", [1, 3, 8, 10, 16, 24, 33, 60, 64])
@pytest.mark.parametrize("n_rows", [1, 37, 300])
def test_matches_reference(n_rows, n_cols, dtype):
    torch.manual_seed(n_rows * 100 + n_cols)
    x = (torch.randn(n_rows, n_cols) * 4).to(dtype).to(DEVICE)
    y = kernels.softmax(x, variant="tinyrows", rows_per_program=16)
    assert_softmax_close(y, x, f"tinyrows {tuple(x.shape)} {x.dtype}")
    sums = y.double().sum(dim=-1)
    bad = (sums - 1).abs() > 1e-2
    assert not bad.any(), f"row sums off 1 first at row {int(bad.nonzero()[0])}"


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_shift_invariance_extremes_and_three_dims(dtype):
    x = (torch.randn(4, 9, 24) * 3).to(dtype).to(DEVICE)
    y = kernels.softmax(x, variant="tinyrows")
    shifted = kernels.softmax(x + 2, variant="tinyrows") if dtype == torch.float32 else y
    assert torch.allclose(y.float(), shifted.float(), atol=1e-6)
    assert_softmax_close(y, x, "3-d")
    special = torch.zeros(3, 12, dtype=dtype, device=DEVICE)
    special[0] = -math.inf  # an all -inf row: NaN, as torch
    special[1, 5] = math.inf
    special[2, :6] = -math.inf
    out = kernels.softmax(special, variant="tinyrows")
    assert torch.isnan(out[0]).all() and torch.isnan(out[1]).all()
    assert (out[2, :6] == 0).all()
    assert_softmax_close(out[2:], special[2:], "half -inf row")


def test_rows_not_back_to_back_take_multirow():
    x = (torch.randn(40, 64) * 3).to(DEVICE)[:, :20]
    assert x.stride(0) != x.shape[1]
    assert_softmax_close(kernels.softmax(x, variant="tinyrows"), x, "strided")


def test_plan_defaults_and_errors_name_what_is_allowed():
    plan = tinyrows.plan(100000, 8, torch.float16)
    assert plan.rows_per_program == 512 and plan.grid == (196,) and plan.constexprs["VEC"] == 8
    assert tinyrows.plan(100000, 64, torch.float32).rows_per_program == 64
    with pytest.raises(ValueError, match=r"allowed: 1 <= N <= 64"):
        tinyrows.plan(4, 65, torch.float16)
    with pytest.raises(ValueError, match=r"allowed: a power of two from 16 to 1024"):
        tinyrows.plan(4, 8, torch.float16, rows_per_program=8)
    with pytest.raises(ValueError, match=r"allowed: rows_per_program <= 256"):
        tinyrows.plan(4, 64, torch.float16, rows_per_program=512)
    with pytest.raises(ValueError, match=r"unknown tunable.*allowed: fast_exp, num_warps, rows_per_program"):
        tinyrows.plan(4, 8, torch.float16, tile=4)


@pytest.mark.parametrize("dtype", ["fp16", "bf16", "fp32"])
@pytest.mark.parametrize("n_cols", [8, 10, 60, 64])
def test_offline_sm90_loads_and_stores_whole_vectors(n_cols, dtype):
    from blockscope.profiling.inspect import compiled

    ptx = compiled.inspect_offline("tinyrows", n_cols, dtype, n_rows=100003, cache=False).ptx
    loads = collections.Counter(re.findall(r"ld\.global\.(\S+)", ptx))
    stores = collections.Counter(re.findall(r"st\.global\.(\S+)", ptx))
    assert set(loads) == {"v4.b32"}, loads  # every load a 16-byte vector, at any N
    assert stores["v4.b32"] >= 1, stores  # the body; the last program's rest may be scalar (R x N % vector != 0)
