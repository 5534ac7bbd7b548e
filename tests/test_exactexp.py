"""kernels/exactexp.py: exp(x - m) within an ULP and the division, on the CPU interpreter (or a GPU), the fp32 paths of
every variant against torch.softmax in ULPs, the fast_exp tunable, and the sm_90 PTX of both forms (offline)."""

from __future__ import annotations

import math
import re

import pytest
import torch
import triton
import triton.language as tl

from blockscope import kernels
from blockscope.kernels import exactexp
from blockscope.profiling.inspect import numerics as nm

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
TRITON_FP32 = ("teaching", "multirow", "online", "persistent", "splitrow")  # run on the CPU interpreter
FAST_EXP_VARIANTS = ("teaching", "multirow", "splitrow", "cluster", "warprows", "stagedrows", "staged")
# distributions where the interpreter's numbers hold both ULP max and mean to torch's: on near_uniform (outputs ~1/N)
# the residual step of `normalize` needs a fused FMA, which the interpreter's tl.fma is not (an unfused a*b+c), so
# there only the max is held to torch's on the CPU
MEAN_HELD = ("normal", "scale10", "scale30", "dominant", "special")


@triton.jit
def _exp_kernel(out_ptr, x_ptr, m_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    m = tl.load(m_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, exactexp.exp_diff(x, m), mask=mask)


def _exp_diff(x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    x, m = x.to(DEVICE), m.to(DEVICE)
    out = torch.empty_like(x)
    _exp_kernel[(triton.cdiv(x.numel(), 1024),)](out, x, m, x.numel(), BLOCK=1024)
    return out.cpu()


def _first_bad(mask: torch.Tensor) -> str:
    index = torch.nonzero(mask.reshape(-1))
    return "none" if index.numel() == 0 else str(int(index[0]))


@pytest.mark.parametrize("scale", [1.0, 10.0, 50.0], ids=["gaps-to-1", "gaps-to-10", "gaps-to-110"])
def test_exp_diff_within_one_ulp_of_the_correctly_rounded_exp(scale):
    gen = torch.Generator().manual_seed(1)
    n = 1 << 16
    m = torch.randn(n, generator=gen) * 40.0
    gap = torch.rand(n, generator=gen) * scale * (2.2 if scale == 50.0 else 1.0)
    x = (m - gap).float()
    got = _exp_diff(x, m)
    expected = nm.round_to_dtype(torch.exp(x.double() - m.double()), torch.float32)
    ulps = nm.ulp_distance(got, expected)
    bad = ulps > 1
    assert not bad.any(), f"first bad index {_first_bad(bad)}: {ulps.max().item()} ULP"
    assert ulps.mean().item() < 0.25


def test_exp_diff_subnormal_results_zero_below_and_specials():
    m = torch.zeros(8)
    x = torch.tensor([-88.0, -95.5, -103.0, -103.9, -106.0, -math.inf, math.nan, 0.0])
    got = _exp_diff(x, m)
    expected = nm.round_to_dtype(torch.exp(x.double()), torch.float32)
    finite = ~torch.isnan(expected)
    ulps = nm.ulp_distance(got[finite], expected[finite])
    assert ulps.max().item() <= 1, f"first bad index {_first_bad(ulps > 1)}"
    assert got[4] == 0 and got[5] == 0  # below 2**-151 and -inf: exactly 0
    assert math.isnan(got[6]) and got[7] == 1.0
    both_inf = _exp_diff(torch.tensor([-math.inf]), torch.tensor([-math.inf]))
    assert math.isnan(both_inf[0])  # an all -inf row stays NaN (as torch)


@pytest.mark.parametrize("n_cols", [128, 1000])
@pytest.mark.parametrize("variant", TRITON_FP32)
def test_fp32_variants_at_least_as_exact_as_torch(variant, n_cols):
    torch_fn = nm.softmax_callable("torch")
    ours = nm.softmax_callable(variant)
    for input_name in nm.INPUTS:
        prepared = nm.prepare_input(input_name, "fp32", 8, n_cols, device=DEVICE)
        mine, _ = nm.measure_prepared(ours, prepared)
        theirs, _ = nm.measure_prepared(torch_fn, prepared)
        label = f"{variant} N={n_cols} {input_name}"
        assert mine.nan_mismatches == 0, label
        assert mine.ulp_max <= max(theirs.ulp_max, 1), f"{label}: max {mine.ulp_max} vs torch {theirs.ulp_max}"
        if input_name in MEAN_HELD:
            assert mine.ulp_mean <= theirs.ulp_mean, f"{label}: mean {mine.ulp_mean} vs torch {theirs.ulp_mean}"
    wide = nm.prepare_input("scale30", "fp32", 8, n_cols, device=DEVICE)
    assert nm.measure_prepared(ours, wide)[0].ulp_max <= 4  # torch: ~64 there (x - max rounded)


@pytest.mark.parametrize("variant", ["teaching", "multirow", "splitrow"])
def test_fast_exp_runs_and_is_recorded(variant):
    x = torch.randn(6, 300, device=DEVICE) * 30
    expected = torch.softmax(x.double(), dim=-1)
    for fast in (0, 1):
        y = kernels.softmax(x, variant=variant, fast_exp=fast)
        err = (y.double() - expected).abs()
        assert err.max().item() < 1e-6, f"{variant} fast_exp={fast}: first bad index {_first_bad(err >= 1e-6)}"
        sums = y.double().sum(dim=-1)
        assert torch.allclose(sums, torch.ones_like(sums), atol=1e-5)
    spec = kernels.get_variant(variant)
    assert "fast_exp" not in spec.plan(6, 300, torch.float32).tunables
    assert spec.plan(6, 300, torch.float32, fast_exp=1).tunables["fast_exp"] == 1


@pytest.mark.parametrize("variant", FAST_EXP_VARIANTS)
@pytest.mark.parametrize("value", [2, -1, True, "1"])
def test_fast_exp_errors_name_what_is_allowed(variant, value):
    spec = kernels.get_variant(variant)
    n_cols = 65536 if variant in ("staged", "cluster") else 1024
    with pytest.raises(ValueError, match=r"fast_exp=.*allowed: 0, 1"):
        spec.plan(4, n_cols, torch.float32, fast_exp=value)


def test_exact_constexpr_is_fp32_only():
    assert exactexp.exact_constexpr(torch.float32, 0) == 1
    assert exactexp.exact_constexpr(torch.float32, 1) == 0
    assert exactexp.exact_constexpr(torch.float16, 0) == 0 and exactexp.exact_constexpr(torch.bfloat16, 0) == 0


OFFLINE = [
    ("teaching", 1000, {}),
    ("multirow", 1000, {}),
    ("warprows", 1000, {}),
    ("stagedrows", 2048, {}),
    ("cluster", 65536, {}),
    ("splitrow", 32767, {}),
]


def _strip(ptx: str) -> str:
    """PTX without debug lines (.loc, labels, DWARF bytes): what a source edit elsewhere moves."""
    return "\n".join(
        line for line in ptx.splitlines() if not re.match(r"\s*(\.loc|\.file|\$L__|\.b8|\.b32|\.b64)", line)
    )


@pytest.mark.parametrize("variant, n_cols, tunables", OFFLINE, ids=[case[0] for case in OFFLINE])
def test_offline_sm90_fp32_exact_has_no_ex2_and_fast_exp_restores_it(variant, n_cols, tunables):
    """fp32 by default: no ex2 (the polynomial) and no approximate division; fast_exp=1: ex2.approx as before; fp16:
    the same PTX with and without fast_exp (16-bit paths unchanged)."""
    from blockscope.profiling.inspect import compiled

    exact = compiled.inspect_offline(variant, n_cols, "fp32", cache=False, **tunables).ptx
    assert "ex2." not in exact and "div.full" not in exact, variant
    assert "div.rn.f32" in exact and "fma.rn.f32" in exact, variant
    fast = compiled.inspect_offline(variant, n_cols, "fp32", cache=False, fast_exp=1, **tunables).ptx
    assert "ex2.approx" in fast, variant
    half = compiled.inspect_offline(variant, n_cols, "fp16", cache=False, **tunables).ptx
    half_fast = compiled.inspect_offline(variant, n_cols, "fp16", cache=False, fast_exp=1, **tunables).ptx
    assert _strip(half) == _strip(half_fast), variant
