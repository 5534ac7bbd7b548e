"""Traffic and padding models of the fused ops (profiling/inspect/fusion.py): hand-counted bytes on small shapes,
and the Masked lanes page's two sections under AppTest (inputs out of range are errors, never exceptions)."""

from __future__ import annotations

import numpy as np
import pytest

from blockscope.profiling.inspect import fusion
from tests.test_app import charts, new_app
from tests.texts import plain


def test_plain_chain_is_two_kernels_against_one() -> None:
    t = fusion.fusion_traffic((1, 1, 2, 4), "fp32")  # 8 elements x 4 bytes = 32 bytes per tensor
    assert [s.kernel for s in t.eager] == ["x * scale", "softmax"]
    assert [(s.read_bytes, s.write_bytes) for s in t.eager] == [(32, 32), (32, 32)]
    assert (t.eager_bytes, t.fused_bytes, t.ratio) == (128, 64, 2.0)


def test_mask_and_bias_are_read_once_per_distinct_element() -> None:
    shape = (2, 3, 4, 8)  # 192 elements, fp16: 384 bytes per tensor
    mask = fusion.parse_broadcast("B,1,Lq,Lk", shape)  # 2*4*8 = 64 bools
    bias = fusion.parse_broadcast("1,H,1,Lk", shape)  # 3*8 = 24 fp16 = 48 bytes
    assert (mask, bias) == ((2, 1, 4, 8), (1, 3, 1, 8))
    t = fusion.fusion_traffic(shape, "fp16", mask, bias)
    table = {s.kernel: (s.read_bytes, s.write_bytes) for s in t.eager}
    assert table == {
        "x * scale": (384, 384),
        "+ bias": (384 + 48, 384),
        "where(keep, t, -inf)": (384 + 64, 384),
        "softmax": (384, 384),
    }
    assert t.eager_bytes == 8 * 384 + 48 + 64
    assert (t.fused[0].read_bytes, t.fused[0].write_bytes) == (384 + 64 + 48, 384)
    assert t.ratio == pytest.approx((8 * 384 + 112) / (2 * 384 + 112))


def test_causal_reads_only_the_kept_part() -> None:
    assert fusion.causal_kept(2, 4) == 1 + 2
    assert fusion.causal_kept(4, 4) == 10
    assert fusion.causal_kept(5, 3) == 1 + 2 + 3 + 3 + 3
    t = fusion.fusion_traffic((1, 1, 2, 4), "fp32", causal=True)
    # eager: where() reads a (2, 4) keep of bools (8 bytes); fused: 3 kept elements read, all 8 written
    assert [s.kernel for s in t.eager] == ["x * scale", "where(keep, t, -inf)", "softmax"]
    assert t.eager[1].read_bytes == 32 + 8
    assert (t.fused_bytes, t.eager_bytes) == (3 * 4 + 32, 64 + 72 + 64)
    shape = (1, 2, 4, 4)
    row_bias = fusion.fusion_traffic(shape, "fp32", None, (1, 2, 1, 4), causal=True)
    assert row_bias.fused[0].read_bytes == 2 * 10 * 4 + 2 * 4 * 4  # x: 10 kept per head; bias: 4 columns per head
    full_mask = fusion.fusion_traffic(shape, "fp32", (1, 1, 4, 4), None, causal=True)
    assert full_mask.fused[0].read_bytes == 2 * 10 * 4 + 10  # the mask's kept triangle, once


def test_rows_past_the_onepass_width_read_x_twice() -> None:
    from blockscope.kernels import masked

    assert fusion.ONEPASS_MAX_N == masked.ONEPASS_MAX_N
    wide = fusion.fusion_traffic((1, 1, 2, masked.ONEPASS_MAX_N + 1), "fp32", causal=True)
    n = 2 * (masked.ONEPASS_MAX_N + 1)
    assert wide.fused[0].read_bytes == 2 * 3 * 4 and wide.fused[0].write_bytes == n * 4
    assert "looped" in wide.fused[0].kernel
    assert "looped" not in fusion.fusion_traffic((1, 1, 2, masked.ONEPASS_MAX_N), "fp32").fused[0].kernel


@pytest.mark.parametrize(
    "text, match",
    [
        ("3,1,Lq,Lk", "dim 0 is 3; allowed: 1 or B = 2"),
        ("1,1,1,1,1", "allowed: 1 to 4"),
        ("B,x,Lq,Lk", "'x' is not a dim"),
        ("9" * 200, "at most 100"),
    ],
)
def test_bad_broadcast_shapes_name_what_is_allowed(text: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        fusion.parse_broadcast(text, (2, 16, 128, 128))


def test_shapes_and_dtypes_out_of_range() -> None:
    assert fusion.parse_broadcast("none", (2, 2, 2, 2)) is None
    assert fusion.parse_broadcast("Lq,Lk", (2, 2, 3, 5)) == (1, 1, 3, 5)
    with pytest.raises(ValueError, match="allowed: an integer from 1 to"):
        fusion.fusion_traffic((0, 1, 1, 1), "fp16")
    with pytest.raises(ValueError, match="allowed: an integer from 1 to"):
        fusion.fusion_traffic((10**30, 1, 1, 1), "fp16")
    with pytest.raises(ValueError, match="allowed: at most"):
        fusion.fusion_traffic((fusion.MAX_DIM,) * 4, "fp16")
    with pytest.raises(ValueError, match="allowed: fp16, bf16, fp32"):
        fusion.fusion_traffic((1, 1, 1, 1), "int8")


def test_waste_factor_is_max_len_times_rows_over_the_sum() -> None:
    lengths = [3, 17, 200, 5, 1024, 64]
    model = fusion.padding_model(lengths, "fp16")
    assert (model.segments, model.max_len, model.packed_lanes, model.padded_lanes) == (6, 1024, 1313, 6 * 1024)
    assert model.waste_factor == pytest.approx(1024 * 6 / 1313)
    assert model.wasted_fraction == pytest.approx(1 - 1313 / 6144)
    assert (model.packed_bytes, model.padded_bytes) == (2 * 1313 * 2, 2 * 6144 * 2)
    assert fusion.padding_model([7, 7, 7]).waste_factor == 1.0


def test_length_distributions_are_seeded_and_bounded() -> None:
    uniform = fusion.uniform_lengths(1000, 50)
    assert uniform.min() >= 1 and uniform.max() <= 50 and len(uniform) == 1000
    assert np.array_equal(uniform, fusion.uniform_lengths(1000, 50))
    tail = fusion.long_tail_lengths(5000, 400, 2000, sigma=1.0)
    assert tail.max() <= 2000 and tail.min() >= 1
    assert 300 <= np.median(tail) <= 500
    with pytest.raises(ValueError, match="median=3000; allowed: an integer from 1 to 2,000"):
        fusion.long_tail_lengths(10, 3000, 2000)
    with pytest.raises(ValueError, match="segments"):
        fusion.uniform_lengths(fusion.MAX_SEGMENTS + 1, 5)


@pytest.mark.parametrize(
    "text, match",
    [
        ("1, -2, 3", "length -2; allowed: integers from 1"),
        ("1, 0", "length 0; allowed"),
        ("99999999999999999999999", "allowed: integers from 1"),
        ("1, two", "'two' is not an integer"),
        (", ".join(["1"] * (fusion.MAX_TYPED_LENGTHS + 1)), "allowed: at most 10,000"),
        ("", "no lengths"),
    ],
)
def test_typed_lengths_are_validated(text: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        fusion.parse_lengths(text)
    assert fusion.parse_lengths("1, 2 3,4") == [1, 2, 3, 4]


def _lanes_page():
    at = new_app()
    at.switch_page("pages/masked_lanes.py").run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def test_the_masked_lanes_page_shows_fusion_traffic_and_padding() -> None:
    at = _lanes_page()
    assert {"Traffic saved by fusion", "Padded vs packed lanes for ragged rows"} <= {s.value for s in at.subheader}
    metrics = {m.label: m.value for m in at.metric}
    expected = fusion.fusion_traffic((2, 16, 1024, 1024), "fp16", (2, 1, 1024, 1024), (1, 16, 1, 1024))
    assert metrics["traffic ratio"] == f"{expected.ratio:.2f}x"
    assert metrics["waste factor"].endswith("x") and float(metrics["waste factor"][:-1]) > 1.5
    titles = [c["layout"]["title"]["text"] for c in charts(at)]
    assert any(t.startswith("Bytes moved") for t in titles) and any("row lengths" in t for t in titles)
    at.radio(key="rag_kind").set_value("typed").run()
    at.text_area(key="rag_lengths").input("4, 4, 8").run()
    assert not at.exception
    assert {m.label: m.value for m in at.metric}["waste factor"] == f"{8 * 3 / 16:.2f}x"


def test_bad_inputs_on_the_masked_lanes_page_are_errors_not_exceptions() -> None:
    at = _lanes_page()
    at.text_input(key="fuse_mask").input("3,1,Lq,Lk").run()
    assert not at.exception
    assert any("allowed: 1 or B = 2" in plain(e.value) for e in at.error)
    for name in ("b", "h", "lq", "lk"):
        at.number_input(key=f"fuse_{name}").set_value(fusion.MAX_DIM)
    at.text_input(key="fuse_mask").input("none").run()
    assert not at.exception
    assert any("allowed: at most" in plain(e.value) for e in at.error)
    at.radio(key="rag_kind").set_value("typed").run()
    at.text_area(key="rag_lengths").input("5, -1, 99999999999999999999").run()
    assert not at.exception
    assert any("length -1; allowed: integers from 1" in plain(e.value) for e in at.error)
    at.radio(key="rag_kind").set_value("long_tail").run()
    at.number_input(key="rag_median").set_value(5000)
    at.number_input(key="rag_clip").set_value(100).run()
    assert not at.exception
    assert any("median=5000; allowed: an integer from 1 to 100" in plain(e.value) for e in at.error)
