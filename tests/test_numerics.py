"""profiling.inspect.numerics: ULP distance, correct rounding, row sums, summaries, inputs, resolver, probe, sweep."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
import torch

from blockscope import kernels
from blockscope.profiling.inspect import numerics as nm
from blockscope.profiling.inspect.numerics import inputs as inp
from blockscope.profiling.results import COLUMNS, load_results, save_results

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
MANTISSA_BITS = {torch.float16: 10, torch.bfloat16: 7, torch.float32: 23}
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # Triton kernels: GPU, or the CPU interpreter
# largest ULP error accepted for the teaching kernel on standard-normal rows (N <= 1000), per output dtype
TEACHING_MAX_ULP = {"fp16": 2, "bf16": 2, "fp32": 32}


def t(values, dtype) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype)


def first_bad(mask: torch.Tensor) -> str:
    index = torch.nonzero(mask.reshape(-1))
    return "none" if index.numel() == 0 else str(int(index[0]))


# --- ULP distance -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES.keys())
def test_ulp_hand_cases(dtype):
    info = torch.finfo(dtype)
    tiny = float(info.smallest_normal) * 2.0 ** -MANTISSA_BITS[dtype]  # smallest subnormal
    cases = [  # (a, b, ULPs apart)
        (1.0, 1.0, 0),
        (0.0, -0.0, 0),
        (tiny, -tiny, 2),
        (-tiny, tiny, 2),
        (0.0, tiny, 1),
        (-0.0, -tiny, 1),
        (1.0, 2.0, 2 ** MANTISSA_BITS[dtype]),
        (float(info.smallest_normal), float(info.smallest_normal) - tiny, 1),
        (float(info.max), math.inf, 1),
        (math.inf, math.inf, 0),
        (-math.inf, -math.inf, 0),
        (math.nan, math.nan, 0),
        (math.nan, 1.0, math.inf),
        (0.0, math.nan, math.inf),
        (math.inf, math.nan, math.inf),
        (0.5, -0.5, 2 * nm.ordered_int(t([0.5], dtype)).item()),
    ]
    a = t([c[0] for c in cases], dtype)
    b = t([c[1] for c in cases], dtype)
    got = nm.ulp_distance(a, b)
    want = torch.tensor([float(c[2]) for c in cases], dtype=torch.float64)
    bad = ~((got == want) | (torch.isinf(got) & torch.isinf(want)))
    assert not bad.any(), f"{dtype}: first bad case {first_bad(bad)}: {cases[int(first_bad(bad))]} -> {got.tolist()}"
    assert torch.equal(nm.ulp_distance(b, a), got), "ULP distance must be symmetric"
    assert nm.NAN_MISMATCH == math.inf


@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES.keys())
def test_next_representable_is_one_ulp(dtype):
    gen = torch.Generator().manual_seed(1)
    x = (torch.randn(4096, generator=gen) * torch.exp(4 * torch.randn(4096, generator=gen))).to(dtype)
    x = torch.cat([x, t([0.0, -0.0, float(torch.finfo(dtype).smallest_normal)], dtype)])
    x = x[torch.isfinite(x)]
    for direction in (math.inf, -math.inf):
        y = torch.nextafter(x, torch.full_like(x, direction))
        distance = nm.ulp_distance(x, y)
        bad = distance != 1
        assert not bad.any(), f"{dtype} index {first_bad(bad)}: {x[bad][:3].tolist()} -> {y[bad][:3].tolist()}"


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_every_16_bit_pattern_orders_like_its_float(dtype):
    """Exhaustive: sorted by value, the non-NaN floats get consecutive integers, +0 and -0 sharing 0."""
    floats = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(dtype)
    floats = floats[~torch.isnan(floats)]
    ordered = nm.ordered_int(floats)
    by_value = torch.sort(floats.to(torch.float64), stable=True).indices
    steps = torch.diff(ordered[by_value])
    zeros = (floats[by_value][1:] == 0) & (floats[by_value][:-1] == 0)
    bad = ~(((steps == 1) & ~zeros) | ((steps == 0) & zeros))
    assert not bad.any(), f"{dtype}: first bad step at sorted index {first_bad(bad)}"
    assert torch.equal(
        nm.from_ordered(ordered, dtype).view(torch.int16)[floats != 0], floats.view(torch.int16)[floats != 0]
    ), "from_ordered must invert ordered_int"


def test_ulp_distance_rejects_mixed_inputs():
    with pytest.raises(TypeError, match="one dtype"):
        nm.ulp_distance(t([1.0], torch.float16), t([1.0], torch.float32))
    with pytest.raises(ValueError, match="one shape"):
        nm.ulp_distance(t([1.0], torch.float16), t([1.0, 2.0], torch.float16))
    with pytest.raises(TypeError, match="allowed: float16, bfloat16, float32"):
        nm.ordered_int(t([1.0], torch.float64))


# --- correct rounding -------------------------------------------------------------------------------------------


def test_round_to_dtype_avoids_torchs_double_rounding():
    above_tie = torch.tensor([1 + 2**-11 + 2**-30], dtype=torch.float64)  # just above the fp16 tie 1 + 2**-11
    assert nm.round_to_dtype(above_tie, torch.float16).item() == 1 + 2**-10
    assert above_tie.to(torch.float16).item() == 1.0, "torch no longer double-rounds: this check can go"
    assert (
        nm.round_to_dtype(torch.tensor([1 + 2**-8 + 2**-30], dtype=torch.float64), torch.bfloat16).item() == 1 + 2**-7
    )


@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES.keys())
def test_round_to_dtype_at_midpoints(dtype):
    gen = torch.Generator().manual_seed(2)
    low = torch.rand(2048, generator=gen).to(dtype)
    low = torch.cat([low, t([0.0, float(torch.finfo(dtype).smallest_normal)], dtype)])
    high = torch.nextafter(low, torch.full_like(low, math.inf))
    mid = (low.double() + high.double()) / 2  # exact in float64
    eps = (high.double() - low.double()) * 2.0**-20
    even = torch.where(nm.ordered_int(low) % 2 == 0, low, high)
    for reference, want in ((mid - eps, low), (mid + eps, high), (mid, even)):
        got = nm.round_to_dtype(reference, dtype)
        bad = got.double() != want.double()
        assert not bad.any(), f"{dtype} index {first_bad(bad)}: {reference[bad][:2].tolist()} -> {got[bad][:2]}"


def test_round_to_dtype_matches_numpy_half_and_keeps_specials():
    gen = torch.Generator().manual_seed(3)
    values = torch.randn(20000, generator=gen, dtype=torch.float64) * torch.exp(
        3 * torch.randn(20000, generator=gen, dtype=torch.float64)
    )
    want = torch.from_numpy(values.numpy().astype(np.float16))  # numpy rounds float64 -> half once
    got = nm.round_to_dtype(values, torch.float16)
    bad = got.view(torch.int16) != want.view(torch.int16)
    assert not bad.any(), f"index {first_bad(bad)}: {values[bad][:2].tolist()}"
    special = torch.tensor([math.nan, math.inf, -math.inf, -0.0], dtype=torch.float64)
    out = nm.round_to_dtype(special, torch.bfloat16)
    assert math.isnan(out[0]) and out[1] == math.inf and out[2] == -math.inf and str(out[3].item()) == "-0.0"


# --- row sums and summaries -------------------------------------------------------------------------------------


def test_row_sum_error():
    out = torch.tensor([[0.5, 0.5], [0.25, 0.25], [0.5, 0.5]], dtype=torch.float16)
    ref = torch.tensor([[0.5, 0.5], [0.5, 0.5], [math.nan, math.nan]], dtype=torch.float64)
    err = nm.row_sum_error(out, ref)
    assert err[:2].tolist() == [0.0, -0.5] and math.isnan(err[2])
    assert nm.row_sum_error(out)[2] == 0.0


def _exact(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    reference = nm.reference_softmax(x)
    return nm.round_to_dtype(reference, x.dtype), reference


@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES.keys())
def test_summary_of_the_exact_answer_and_of_a_planted_error(dtype):
    x = nm.make_input("normal", 6, 50, dtype, seed=4)
    exact, reference = _exact(x)
    s = nm.summarize(exact, reference, x)
    assert (s.ulp_max, s.ulp_mean, s.frac_0, s.frac_1, s.frac_gt1, s.nan_mismatches) == (0, 0, 1, 0, 0, 0)
    assert s.n_elements == 300 and s.rowsum_err_max < 2 * torch.finfo(dtype).eps * 50

    planted = exact.clone()
    planted[4, 17] = nm.from_ordered(nm.ordered_int(exact[4, 17:18]) + 3, dtype)[0]
    planted[1, 2] = nm.from_ordered(nm.ordered_int(exact[1, 2:3]) - 1, dtype)[0]
    s = nm.summarize(planted, reference, x)
    assert s.ulp_max == 3 and (s.worst_row, s.worst_col) == (4, 17), s
    assert s.worst_input == float(x[4, 17]) and s.worst_output == float(planted[4, 17])
    assert s.worst_expected == pytest.approx(float(reference[4, 17]))
    assert s.ulp_mean == pytest.approx(4 / 300) and s.frac_1 == pytest.approx(1 / 300)
    assert s.frac_gt1 == pytest.approx(1 / 300) and s.frac_0 + s.frac_1 + s.frac_gt1 == pytest.approx(1)
    chunked = nm.summarize(planted, reference, x, chunk_elements=50)
    assert chunked == s, "chunking must not change the summary"
    columns = s.columns("normal")
    assert set(columns) == set(nm.NUMERICS_COLUMNS) and columns["numerics_input"] == "normal"


def test_summary_nan_handling():
    x = nm.make_input("special", 7, 16, torch.float32, seed=5)  # rows 0-2 have a NaN reference
    exact, reference = _exact(x)
    assert torch.isnan(reference[:3]).all() and not torch.isnan(reference[3:]).any()
    s = nm.summarize(exact, reference, x)
    assert s.ulp_max == 0 and s.nan_mismatches == 0 and s.frac_0 == 1, "NaN vs NaN must count as 0 ULP"
    broken = exact.clone()
    broken[0] = 0.0  # a number where the reference is NaN
    broken[4, 3] = math.nan  # NaN where the reference is a number
    s = nm.summarize(broken, reference, x)
    assert s.ulp_max == math.inf and s.nan_mismatches == 17 and (s.worst_row, s.worst_col) == (0, 0)
    assert s.ulp_mean == 0 and s.frac_gt1 == pytest.approx(17 / 112)
    assert s.rowsum_err_max == math.inf, "a defined row summing to NaN is an infinite row-sum error"
    all_nan = nm.summarize(exact[:3], reference[:3])
    assert math.isnan(all_nan.rowsum_err_max) and all_nan.ulp_max == 0


def test_summary_rejects_bad_shapes():
    with pytest.raises(ValueError, match="differs from the reference"):
        nm.summarize(torch.zeros(2, 3), torch.zeros(2, 4, dtype=torch.float64))
    with pytest.raises(ValueError, match="empty output"):
        nm.summarize(torch.zeros(0, 3), torch.zeros(0, 3, dtype=torch.float64))


def test_ulp_counts_histogram():
    x = nm.make_input("normal", 3, 10, torch.float16, seed=6)
    exact, reference = _exact(x)
    exact[0, 0] = nm.from_ordered(nm.ordered_int(exact[0, :1]) + 2, torch.float16)[0]
    assert nm.ulp_counts(exact, reference) == {0.0: 29, 2.0: 1}


# --- inputs -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(nm.INPUTS))
def test_inputs_are_deterministic(name):
    a = nm.make_input(name, 9, 33, torch.bfloat16, seed=7)
    b = nm.make_input(name, 9, 33, torch.bfloat16, seed=7)
    c = nm.make_input(name, 9, 33, torch.bfloat16, seed=8)
    assert a.shape == (9, 33) and a.dtype == torch.bfloat16
    assert torch.equal(a.view(torch.int16), b.view(torch.int16)), f"{name}: same seed, different values"
    assert not torch.equal(a.view(torch.int16), c.view(torch.int16)), f"{name}: the seed changes nothing"


def test_inputs_have_their_promised_properties():
    normal = nm.make_input("normal", 64, 512, torch.float32)
    assert abs(float(normal.std()) - 1) < 0.05 and abs(float(normal.mean())) < 0.05
    for name, scale in (("scale10", 10), ("scale30", 30)):
        assert abs(float(nm.make_input(name, 64, 512, torch.float32).std()) / scale - 1) < 0.05, name
    dominant = nm.make_input("dominant", 32, 100, torch.float16).float()
    top2 = dominant.topk(2, dim=-1).values
    gap = top2[:, 0] - top2[:, 1]
    assert (gap >= inp.DOMINANT_GAP - 0.5).all(), f"dominant gap {gap.min()} at row {int(gap.argmin())}"
    assert (nm.reference_softmax(dominant).max(dim=-1).values > 1 - 1e-9).all()
    near = nm.make_input("near_uniform", 16, 256, torch.float32)
    assert float(near.abs().max()) < 0.01 and float(near.std()) > 1e-4
    with pytest.raises(ValueError, match="allowed: normal, scale10"):
        nm.make_input("gaussian", 2, 2, torch.float32)
    with pytest.raises(ValueError, match="n_rows >= 1"):
        nm.make_input("normal", 0, 4, torch.float32)


@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES.keys())
def test_special_matrix_rows(dtype):
    kinds, x = nm.special_matrix(12, dtype, seed=9)
    assert kinds == list(nm.SPECIAL_ROWS) and x.shape == (len(kinds), 12)
    row = dict(zip(kinds, x.float(), strict=True))
    assert (row["all -inf"] == -math.inf).all()
    assert int((row["+inf present"] == math.inf).sum()) == 1
    assert int(torch.isnan(row["NaN present"]).sum()) == 1
    assert 0 < int((row["-inf present"] == -math.inf).sum()) < 12
    assert (row["all equal"] == 3.0).all()
    denormal = row["denormal inputs"].abs()
    assert (denormal < torch.finfo(dtype).smallest_normal).all() and (denormal > 0).any()
    assert float(row["+-finite max"].max()) == float(torch.finfo(dtype).max)
    assert float(row["+-finite max"].min()) == -float(torch.finfo(dtype).max)


# --- differences from torch and the special-values table ---------------------------------------------------------


def test_describe_difference():
    expected = torch.tensor([0.0, 0.25, math.nan, 0.75])
    assert nm.describe_difference(expected.clone(), expected) == "same as torch"
    nan_for_zero = torch.tensor([math.nan, 0.25, math.nan, 0.75])
    assert nm.describe_difference(nan_for_zero, expected) == "NaN where torch gives 0 (1 elements)"
    zero_for_nan = torch.tensor([0.0, 0.25, 0.0, 0.75])
    assert nm.describe_difference(zero_for_nan, expected) == "0 where torch gives NaN (1 elements)"
    off = torch.tensor([0.0, 0.25, math.nan, float(torch.nextafter(torch.tensor(0.75), torch.tensor(1.0)))])
    assert nm.describe_difference(off, expected, "ref") == "1 elements differ from ref by up to 1 ULP"


def test_special_values_table_names_how_a_backend_differs():
    same = nm.special_values_table(lambda x: torch.softmax(x, dim=-1), "mine", "fp32", 8)
    assert [r["case"] for r in same] == list(nm.SPECIAL_ROWS)
    assert {r["difference"] for r in same} == {"same as torch"}
    assert same[0]["input"].split() == ["-inf"] * 8 and same[0]["mine"].split() == ["nan"] * 8

    def nan_to_zero(x: torch.Tensor) -> torch.Tensor:
        return torch.nan_to_num(torch.softmax(x, dim=-1), nan=0.0)

    zero = {r["case"]: r["difference"] for r in nm.special_values_table(nan_to_zero, "z", "fp16", 8)}
    assert zero["all -inf"] == "0 where torch gives NaN (8 elements)" and zero["all equal"] == "same as torch"

    def broken(x: torch.Tensor) -> torch.Tensor:
        raise RuntimeError("kaput")

    failed = nm.special_values_table(broken, "b", "bf16", 8)
    assert all(r["difference"] == "RuntimeError: kaput" for r in failed)


# --- resolver ---------------------------------------------------------------------------------------------------


def test_softmax_callable_resolves_torch_variants_and_probes():
    x = torch.randn(3, 20)
    assert torch.equal(nm.softmax_callable("torch")(x), torch.softmax(x, dim=-1))
    assert torch.equal(nm.softmax_callable("teaching")(x), kernels.softmax(x, variant="teaching"))
    assert nm.allowed_names()[:5] == ("torch", "inductor", "liger", "quack", "teaching")
    assert "probe_exp2" in nm.allowed_names()
    with pytest.raises(ValueError, match=r"unknown softmax 'nope'; allowed: torch, inductor, .*probe_exp"):
        nm.softmax_callable("nope")


def test_softmax_callable_uses_peer_backends(monkeypatch):
    from blockscope.profiling.measure import backends
    from blockscope.profiling.measure.backends.inductor import InductorBackend
    from blockscope.profiling.measure.backends.liger import LigerBackend
    from blockscope.profiling.measure.backends.quack import QuackBackend

    monkeypatch.setattr(LigerBackend, "available", lambda self: None)
    monkeypatch.setattr(LigerBackend, "prepare", lambda self, x: lambda: torch.softmax(x, dim=-1) * 1)
    monkeypatch.setattr(QuackBackend, "available", lambda self: "needs sm_90+")
    monkeypatch.setattr(InductorBackend, "supports", lambda self, r, n, d: "N > 4" if n > 4 else None)
    x = torch.randn(2, 4)
    assert torch.equal(nm.softmax_callable("liger")(x), torch.softmax(x, dim=-1))
    with pytest.raises(ValueError, match="'quack' is unavailable here: needs sm_90"):
        nm.softmax_callable("quack")
    with pytest.raises(ValueError, match="inductor does not support .*N > 4"):
        nm.softmax_callable("inductor")(torch.randn(2, 8))
    assert nm.allowed_names()[:4] == backends.PEERS
    assert nm.allowed_names()[-3:] == ("probe_exp", "probe_exp2", "probe_fp64")


# --- kernels through the measurement ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_teaching_kernel_is_within_its_ulp_budget(dtype):
    s, versus = nm.measure(nm.softmax_callable("teaching"), dtype, 4, 100, "normal", device=DEVICE)
    assert s.ulp_max <= TEACHING_MAX_ULP[dtype], f"{dtype}: {s.ulp_max} ULP at ({s.worst_row}, {s.worst_col})"
    assert s.nan_mismatches == 0 and versus == ""
    assert s.rowsum_err_max < 100 * torch.finfo(DTYPES[dtype]).eps


def test_special_input_compares_with_torch():
    s, versus = nm.measure(nm.softmax_callable("teaching"), "fp32", 7, 16, "special", device=DEVICE)
    assert s.nan_mismatches == 0, "the teaching kernel's NaN rows must match the float64 reference's"
    assert versus.startswith("same as torch") or "differ from torch by up to" in versus, versus


def test_probe_exp_is_the_teaching_kernel_and_exp2_differs_slightly():
    x = nm.make_input("scale10", 4, 200, torch.float32, seed=10, device=DEVICE)
    teaching = kernels.softmax(x, variant="teaching", fast_exp=1)  # fp32 teaching before issue 37's exact exp
    exp = nm.softmax_callable("probe_exp")(x)
    exp2 = nm.softmax_callable("probe_exp2")(x)
    assert torch.equal(exp, teaching), "probe_exp must be the teaching kernel's math with fast_exp=1"
    distance = nm.ulp_distance(exp2, exp)
    assert float(distance.max()) < 256, f"exp2 is {distance.max()} ULP off exp"
    from blockscope.profiling.inspect.numerics.probe import probe_softmax

    with pytest.raises(ValueError, match="allowed: 2-d fp16, bf16 or fp32"):
        probe_softmax(torch.zeros(2, 2, 2), False)
    with pytest.raises(ValueError, match="allowed: 1 <= N <= 65536"):
        probe_softmax(torch.zeros(1, 70000), True)


def test_probe_ptx_uses_the_documented_exp_instructions():
    """The page's claim: on NVIDIA GPUs tl.exp is mul by log2(e) + ex2.approx.f32; exp2 flushes subnormals."""
    from blockscope.profiling.inspect.numerics.probe import exp_instructions

    found = exp_instructions("sm_90")
    assert "ex2.approx.f32" in found["probe_exp"] and "mul.f32" in found["probe_exp"], found
    assert "ex2.approx.ftz.f32" in found["probe_exp2"], found
    assert found["bf16 store"] == ["cvt.rn.bf16.f32"], "a GPU rounds float32 -> bf16 to nearest"
    with pytest.raises(ValueError, match="allowed: sm_XY"):
        exp_instructions("hopper")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU interpreter")
def test_interpreter_bf16_store_truncates():
    """INTERPRETER_BF16_NOTE: the interpreter stores float32 -> bf16 rounding toward zero (the GPU rounds)."""
    x = torch.tensor([[0.0, -1.0, -2.0, -3.0, 0.5, -0.25, 1.5, -4.0]])
    y32 = nm.softmax_callable("teaching")(x)
    y16 = nm.softmax_callable("teaching")(x.to(torch.bfloat16))
    truncated = ((y32.view(torch.int32) >> 16) << 16).view(torch.float32).to(torch.bfloat16)
    assert torch.equal(y16, truncated), "the interpreter's bf16 store changed: update INTERPRETER_BF16_NOTE"
    assert not torch.equal(y16, y32.to(torch.bfloat16)), "round-to-nearest would differ on these values"


def test_run_numerics_rows_and_failures():
    def resolve(name):
        if name == "boom":
            return lambda x: (_ for _ in ()).throw(RuntimeError("kernel exploded"))
        return nm.softmax_callable(name)

    results = nm.run_numerics(
        ["torch", "boom", "missing"],
        ["fp32"],
        [16],
        3,
        ["normal"],
        resolve=resolve,
        env={"gpu_name": "none", "run_id": "r1"},
    )
    by = {r.row["variant"]: r for r in results}
    assert by["torch"].error == "" and by["torch"].summary is not None and by["torch"].row["run_id"] == "r1"
    assert by["boom"].error == "RuntimeError: kernel exploded" and by["boom"].summary is None
    assert by["missing"].error.startswith("ValueError: unknown softmax 'missing'")
    frame = nm.results_frame(results)
    assert list(frame["method"]) == ["none"] * 3 and frame["ulp_max"].isna().tolist() == [False, True, True]
    skipped = nm.run_numerics(
        ["torch"], ["fp32"], [16], 3, ["normal", "special"], skip={nm.result_key("torch", "fp32", 3, 16, "special")}
    )
    assert [r.row["numerics_input"] for r in skipped] == ["normal"]


# --- results schema and sweep hook ------------------------------------------------------------------------------


def test_schema_has_the_numerics_columns(tmp_path):
    expected = {
        "ulp_max": "Float64",
        "ulp_mean": "Float64",
        "ulp_frac_0": "Float64",
        "ulp_frac_1": "Float64",
        "ulp_frac_gt1": "Float64",
        "rowsum_err_max": "Float64",
        "numerics_input": "string",
    }
    assert {k: COLUMNS[k] for k in expected} == expected and set(nm.NUMERICS_COLUMNS) == set(expected)
    results = nm.run_numerics(["torch"], ["fp16"], [8], 2, ["special"])
    frame = nm.results_frame(results)
    frame.loc[0, "ulp_max"] = math.inf
    path = save_results(frame, tmp_path / "n.parquet")
    back = load_results(path)
    assert back.loc[0, "ulp_max"] == math.inf and back.loc[0, "numerics_input"] == "special"
    csv = load_results(save_results(frame, tmp_path / "n.csv"))
    assert csv.loc[0, "ulp_max"] == math.inf


def test_sweep_hook_fills_the_numerics_columns():
    from blockscope.profiling.measure.sweep import make_config, run_sweep
    from blockscope.profiling.measure.timing import FakeClock

    env = {
        "run_id": "t",
        "gpu_name": "none",
        "compute_capability": "none",
        "sm_count": None,
        "driver_version": "none",
        "torch_version": torch.__version__,
        "triton_version": "3.x",
        "copy_gbps": 100.0,
        "measured_at": "2026-12-01T00:00:00+00:00",
    }
    table = run_sweep(
        [make_config("torch", "fp16", 4, 64), make_config("teaching", "fp32", 4, 64)],
        methods=["per_call_events"],
        device=DEVICE,
        env=env,
        warmup=0,
        reps=2,
        trace=False,
        compile_facts=lambda *a: {},
        clock=FakeClock(tick_us=5.0, wall_tick_s=0.1),
    )
    assert table["error"].tolist() == ["", ""]
    assert table["numerics_input"].tolist() == ["normal", "normal"]
    assert (
        table["ulp_max"].notna().all()
        and (table["ulp_frac_0"] + table["ulp_frac_1"] + table["ulp_frac_gt1"]).round(9).eq(1).all()
    )
    assert nm.sweep_columns(torch.zeros(2, 3), torch.zeros(2, 4, dtype=torch.float64)) == {}


def test_numerics_package_imports_without_streamlit_or_plotly():
    import subprocess

    code = (
        "import sys; import blockscope.profiling.inspect.numerics, blockscope.profiling.cli.numerics; "
        "bad = [m for m in ('streamlit', 'plotly') if m in sys.modules]; assert not bad, bad"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-500:]


# --- on the GPU (`make test-gpu`) --------------------------------------------------------------------------------

GPU_MAX_ULP = {"fp16": 2, "bf16": 2, "fp32": 64}  # budget on standard-normal rows, N <= 4096, per output dtype


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_gpu_variants_within_budget_and_nan_semantics(dtype):
    from blockscope import kernels

    names = ["torch", *kernels.VARIANTS, "probe_exp", "probe_exp2"]
    results = nm.run_numerics(
        names, [dtype], [128, 1000, 4096], 64, ["normal", "special"], device="cuda", within_limits=True
    )
    failed = [f"{r.row['variant']} N={r.row['n_cols']}: {r.error}" for r in results if r.error]
    assert not failed, failed[:3]
    for r in results:
        s, label = r.summary, f"{r.row['variant']} {dtype} N={r.row['n_cols']} {r.row['numerics_input']}"
        if r.row["numerics_input"] == "normal":
            assert s.ulp_max <= GPU_MAX_ULP[dtype], f"{label}: {s.ulp_max} ULP at ({s.worst_row}, {s.worst_col})"
        else:
            assert s.nan_mismatches == 0, f"{label}: {s.nan_mismatches} NaN mismatches; vs torch: {r.versus_torch}"


@pytest.mark.gpu
def test_gpu_exp_and_exp2_probes_agree_without_subnormal_results():
    """The page's claim: on the GPU tl.exp already is mul by log2(e) + ex2.approx; only ftz can differ."""
    x = nm.make_input("normal", 64, 4096, torch.float32, device="cuda")
    assert torch.equal(nm.softmax_callable("probe_exp")(x), nm.softmax_callable("probe_exp2")(x))


def test_fp64_probe_is_the_exact_end_of_the_scale():
    from blockscope.profiling.inspect.numerics.probe import EXP, FP64, probe_softmax

    for dtype in ("fp32", "fp16"):
        summary, _ = nm.measure(nm.softmax_callable("probe_fp64"), dtype, 4, 1000, "scale30")
        assert summary.ulp_max <= 1, (dtype, summary)  # float64 math, one rounding at the store
    x = torch.randn(3, 100)
    torch.testing.assert_close(probe_softmax(x, FP64), probe_softmax(x, EXP), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="allowed: 0 \\(tl.exp\\), 1 \\(tl.exp2\\), 2 \\(float64\\)"):
        probe_softmax(x, 7)
