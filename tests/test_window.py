"""teaching's aligned window for rows that do not start 16-byte aligned (N x itemsize % 16 != 0): reference
comparisons over dtype x odd N x R with and without the window, strided inputs, plan errors, and the sm_90 PTX
(vector loads and stores of the body, one scalar step for the edges)."""

from __future__ import annotations

import collections
import re

import pytest
import torch

from blockscope import kernels
from blockscope.kernels import teaching
from tests.softmax_checks import assert_softmax_close

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
DTYPES = [torch.float16, torch.bfloat16, torch.float32]
IDS = [kernels.DTYPE_NAMES[d] for d in DTYPES]


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("n_cols", [1, 3, 7, 9, 100, 257, 1001, 2047, 2049])
@pytest.mark.parametrize("window", [0, 1])
def test_window_matches_reference(window, n_cols, dtype):
    torch.manual_seed(n_cols)
    x = (torch.randn(5, n_cols) * 3).to(dtype).to(DEVICE)
    y = kernels.softmax(x, variant="teaching", window=window)
    assert_softmax_close(y, x, f"teaching window={window} N={n_cols} {x.dtype}")
    sums = y.double().sum(dim=-1)
    bad = (sums - 1).abs() > 1e-2
    assert not bad.any(), f"row sums off 1 first at row {int(bad.nonzero()[0])}"


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_window_on_views_and_extremes(dtype):
    base = (torch.randn(6, 40) * 3).to(dtype).to(DEVICE)
    view = base[:, 1:34]  # rows of stride 40, starting 1 element past a boundary: input and output shifts differ
    assert_softmax_close(kernels.softmax(view, variant="teaching"), view, "view")
    x = torch.zeros(2, 13, dtype=dtype, device=DEVICE)
    x[0, :12] = -float("inf")
    x[1] = -float("inf")
    y = kernels.softmax(x, variant="teaching")
    assert y[0, 12] == 1 and (y[0, :12] == 0).all() and torch.isnan(y[1]).all()


def test_window_defaults_and_errors():
    assert teaching.plan(4, 2047, torch.float16).tunables == {"num_warps": 8}  # opt-in: slower on the H200
    assert teaching.plan(4, 2047, torch.float16, window=1).tunables == {"num_warps": 8, "window": 1}
    assert teaching.plan(4, 2047, torch.float16, window=1).constexprs["ALIGN"] == 8
    assert teaching.plan(4, 2047, torch.float32, window=1).constexprs["BLOCK_SIZE"] == 4096  # N + 3 lanes
    assert teaching.plan(4, 2048, torch.float16, window=1).constexprs["ALIGN"] == 1  # aligned rows: no window
    with pytest.raises(ValueError, match=r"allowed: window=0"):
        teaching.plan(4, 65535, torch.float16, window=1)
    with pytest.raises(ValueError, match=r"window=2 is not allowed; allowed: 0, 1"):
        teaching.plan(4, 2047, torch.float16, window=2)


@pytest.mark.parametrize("dtype", ["fp16", "fp32"])
@pytest.mark.parametrize("n_cols", [1001, 2047, 4097])
def test_offline_sm90_window_loads_vectors(n_cols, dtype):
    from blockscope.profiling.inspect import compiled

    def counts(window: int) -> tuple[collections.Counter, collections.Counter]:
        ptx = compiled.inspect_offline("teaching", n_cols, dtype, n_rows=4096, cache=False, window=window).ptx
        return (
            collections.Counter(re.findall(r"ld\.global\.(\S+)", ptx)),
            collections.Counter(re.findall(r"st\.global\.(\S+)", ptx)),
        )

    scalar = "b16" if dtype == "fp16" else "b32"
    loads, stores = counts(1)
    assert loads["v4.b32"] >= 1 and loads[scalar] == 1, loads  # the body in vectors, the edges in one step
    assert stores["v4.b32"] >= 1 and stores[scalar] == 1, stores
    loads, stores = counts(0)
    assert "v4.b32" not in loads and "v4.b32" not in stores  # from the row start: element by element
