"""Masked-lane model: hand-counted lanes across power-of-two edges for every variant."""

from __future__ import annotations

import pytest

from blockscope.profiling.inspect.lanes import lane_curve, lane_model, masked_lane_fraction


@pytest.mark.parametrize(
    "n_cols, tile, masked, per_thread",
    [
        (1000, 1024, 24, 8.0),  # 4 warps (BLOCK < 2048): 1024 / 128 lanes per thread
        (1024, 1024, 0, 8.0),
        (1025, 2048, 1023, 8.0),  # 8 warps from BLOCK 2048: 2048 / 256
        (1, 1, 0, 1 / 128),
        (65535, 65536, 1, 256.0),
    ],
)
def test_teaching_edges(n_cols, tile, masked, per_thread):
    model = lane_model("teaching", n_cols, n_rows=4096)
    assert (model.tile_width, model.lanes_per_program, model.masked_lanes_per_program) == (tile, tile, masked)
    assert model.lanes_spanned == 4096 * tile and model.lanes_masked == 4096 * masked
    assert model.masked_lane_fraction == pytest.approx(masked / tile)
    assert model.elements_per_thread == pytest.approx(per_thread)
    assert (model.steps, model.tail_valid_lanes) == (1, n_cols)


def test_n_1000_is_2_34_percent():
    assert round(100 * masked_lane_fraction("teaching", 1000), 2) == 2.34
    assert masked_lane_fraction("teaching", 1000, num_warps=1) == 24 / 1024  # warps do not change lanes


def test_multirow_counts_masked_rows_of_the_last_program():
    model = lane_model("multirow", 100, n_rows=1000)  # BLOCK 128, ROWS 2048 // 128 = 16, 63 programs
    assert (model.tile_width, model.rows_per_program) == (128, 16)
    assert model.lanes_per_program == 16 * 128 and model.masked_lanes_per_program == 16 * 28
    assert model.lanes_spanned == 63 * 16 * 128 == 129024
    assert model.lanes_masked == 129024 - 100 * 1000
    assert model.masked_lane_fraction == pytest.approx(29024 / 129024)
    assert model.elements_per_thread == 2048 / 128
    assert lane_model("multirow", 128, n_rows=1024, rows_per_program=8).masked_lane_fraction == 0.0


def test_online_tail_tile():
    model = lane_model("online", 10000, n_rows=8)  # TILE 4096: 3 steps, tail 10000 - 8192 = 1808 valid
    assert (model.tile_width, model.steps, model.tail_valid_lanes) == (4096, 3, 1808)
    assert (model.lanes_per_program, model.masked_lanes_per_program) == (12288, 2288)
    assert model.masked_lane_fraction == pytest.approx(2288 / 12288)
    assert model.elements_per_thread == 4096 / 256
    small = lane_model("online", 1000, tile=256)  # 4 steps of 256, last has 232 valid
    assert (small.steps, small.tail_valid_lanes, small.masked_lanes_per_program) == (4, 232, 24)


def test_splitrow_and_persistent():
    split = lane_model("splitrow", 100000, n_rows=2)  # CHUNK 16384, 7 chunks, last 1696 valid
    assert (split.tile_width, split.lanes_per_program, split.tail_valid_lanes) == (16384, 16384, 1696)
    assert split.masked_lanes_per_program == 14688 and split.lanes_spanned == 2 * 7 * 16384
    assert split.masked_lane_fraction == pytest.approx(14688 / 114688)
    persistent = lane_model("persistent", 3000, n_rows=10, programs=3)
    assert (persistent.tile_width, persistent.masked_lanes_per_program) == (4096, 1096)
    assert persistent.masked_lane_fraction == pytest.approx(1096 / 4096)


def test_auto_models_the_variant_it_runs():
    model = lane_model("auto", 3000)  # the shipped table picks a Triton kernel here (torch at some small N)
    assert model.variant in {"teaching", "multirow", "online", "persistent", "splitrow"}
    assert model.lanes_masked == model.lanes_spanned - 4096 * 3000
    assert model.masked_lane_fraction == model.lanes_masked / model.lanes_spanned


def test_lane_curve():
    table = lane_curve("teaching", [1000, 1024, 1025, 70000], n_rows=16)
    assert list(table["n_cols"]) == [1000, 1024, 1025]  # 70000 is over teaching's limit: left out
    assert list(table["tile_width"]) == [1024, 1024, 2048]
    assert list(table["masked_lane_fraction"]) == pytest.approx([24 / 1024, 0.0, 1023 / 2048])
    assert list(table["variant"]) == ["teaching"] * 3


def test_errors_name_what_is_allowed():
    with pytest.raises(ValueError, match="allowed: 1 <= N <= 65536"):
        lane_model("teaching", 70000)
    with pytest.raises(ValueError, match="allowed: teaching"):
        lane_model("nope", 100)
    with pytest.raises(ValueError, match="unknown tunable"):
        lane_model("teaching", 100, tile=64)
    with pytest.raises(ValueError, match="n_rows"):
        lane_model("teaching", 100, n_rows=0)


def test_staged_lane_curves_leave_out_only_the_n_they_cannot_stage():
    """Odd N in 16 bits cannot be staged: the curve has every other N (the dashboard used to drop the whole
    variant from the Masked lanes chart because one N raised)."""
    from blockscope.profiling.views import dashboard_data as dd

    n_values = [1000, 1001, 1024, 1025, 4096, 5000]
    for variant in ("staged", "staged_split"):
        curve = lane_curve(variant, n_values)
        assert curve["n_cols"].tolist() == [1000, 1024, 4096, 5000], variant
    drawn = dd.lane_curve(["teaching", "staged", "staged_split"], n_values)
    assert set(drawn["variant"]) == {"teaching", "staged", "staged_split"}


@pytest.mark.parametrize(
    "variant, n_cols, tunables, programs",
    [("staged", 100000, {}, 4), ("cluster", 50000, {"chunk": 16384}, 4), ("staged_split", 262144, {}, 8)],
)
def test_rows_over_several_programs_count_lanes_per_program(variant, n_cols, tunables, programs):
    """A row over several programs (a cluster, cooperating chunks): each program spans one chunk; the last one holds
    the row's tail."""
    model = lane_model(variant, n_cols, 64, **tunables)
    assert model.steps == 1 and model.lanes_per_program == model.tile_width
    assert model.lanes_spanned == 64 * programs * model.tile_width
    assert model.masked_lanes_per_program == model.tile_width - (n_cols - (programs - 1) * model.tile_width)
    assert model.lanes_masked == 64 * (programs * model.tile_width - n_cols)


def test_fp32_rows_are_modelled_with_their_own_plan():
    """Lanes follow the rows' dtype: fp32 has 4-element vectors (warprows at N = 32 takes 8 threads per row, which
    fp16's 8-element vectors refuse) and the staged variants take odd N in fp32 (whole 4-byte words); the sweep
    filled no masked_lane_fraction for those rows while the model planned everything in fp16."""
    assert lane_model("warprows", 32, dtype="fp32", num_warps=4, threads_per_row=8).masked_lane_fraction == 0.0
    with pytest.raises(ValueError, match="threads_per_row <= 4"):
        lane_model("warprows", 32, num_warps=4, threads_per_row=8)  # fp16, the default
    staged = lane_model("staged", 129, dtype="fp32", num_warps=8)
    assert staged.tile_width == 256 and staged.masked_lane_fraction == pytest.approx(127 / 256)
    assert set(lane_curve("staged", [128, 129, 130], dtype="fp32")["n_cols"]) == {128, 129, 130}
    assert set(lane_curve("staged", [128, 129, 130])["n_cols"]) == {128, 130}  # odd 16-bit N left out
    with pytest.raises(ValueError, match="allowed: fp16, bf16, fp32"):
        lane_model("teaching", 100, dtype="fp8")
