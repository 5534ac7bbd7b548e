"""views.typed_config: lanes, launcher grids, carveout notes and SM counts for a typed config (any N)."""

from __future__ import annotations

import pandas as pd
import pytest

from blockscope.demo import synthetic_results
from blockscope.profiling.inspect import occupancy
from blockscope.profiling.views import typed_config


def next_pow2(n: int) -> int:
    return 1 << (n - 1).bit_length()


@pytest.mark.parametrize("n_cols", [5000, 1000, 4096, 4097])
def test_lane_facts_of_the_teaching_kernel_for_any_n(n_cols: int) -> None:
    row = typed_config.lane_facts(["teaching"], n_cols).iloc[0]
    block = next_pow2(n_cols)
    assert (row["tile_width"], row["tiles_per_row"], row["masked_lanes_per_row"]) == (block, 1, block - n_cols)
    assert row["wasted_fraction"] == pytest.approx((block - n_cols) / block)
    assert row["runs"] == "teaching" and row["error"] == ""


def test_lane_facts_name_variants_that_do_not_take_this_n() -> None:
    table = typed_config.lane_facts(["teaching", "online"], 300_000).set_index("variant")
    assert "allowed: 1 <= N <= 65536" in table.loc["teaching", "error"]
    assert pd.isna(table.loc["teaching", "tile_width"])
    online = table.loc["online"]
    tiles = -(-300_000 // int(online["tile_width"]))
    assert online["tiles_per_row"] == tiles and online["masked_lanes_per_row"] == tiles * online["tile_width"] - 300_000
    with pytest.raises(ValueError, match="allowed: an integer >= 1"):
        typed_config.lane_facts(["teaching"], 0)


def test_launch_grid_of_one_program_per_row_variants_is_the_plan() -> None:
    grid = typed_config.launch_grid("teaching", 4096, 5000, "fp16", 4, sm_count=132, blocks_per_sm=9)
    assert grid.programs == 4096 and grid.fallback is None


@pytest.mark.parametrize("n_rows, sm_count, blocks", [(4096, 132, 2), (100, 132, 2), (4096, 170, 0)])
def test_persistent_grid_is_sms_times_blocks_at_most_r(n_rows: int, sm_count: int, blocks: int) -> None:
    grid = typed_config.launch_grid("persistent", n_rows, 5000, "fp16", 4, sm_count, blocks)
    assert grid.programs == min(n_rows, sm_count * max(1, blocks))


@pytest.mark.parametrize("n_rows, sm_count, blocks", [(4096, 132, 2), (10, 132, 2), (4096, 170, 1)])
def test_splitrow_grid_is_resident_row_groups_times_chunks(n_rows: int, sm_count: int, blocks: int) -> None:
    # N = 100000 (a multiple of 16: no window slack) in chunks of 16384 columns: 7 programs per row
    chunks = -(-100_000 // 16_384)
    grid = typed_config.launch_grid("splitrow", n_rows, 100_000, "fp16", 8, sm_count, blocks)
    assert grid.programs == min(n_rows, sm_count * blocks // chunks) * chunks
    assert grid.programs != 32  # not the CPU interpreter's placeholder grid


def test_splitrow_that_cannot_hold_a_row_runs_online_and_says_why() -> None:
    grid = typed_config.launch_grid("splitrow", 4096, 100_000, "fp16", 8, sm_count=3, blocks_per_sm=2)
    assert grid.programs == 0 and "7 programs" in grid.fallback and "only 6 fit" in grid.fallback


def test_launch_grid_rejects_bad_counts() -> None:
    with pytest.raises(ValueError, match="sm_count=0; allowed: an integer >= 1"):
        typed_config.launch_grid("teaching", 4096, 1000, "fp16", 4, 0, 1)
    with pytest.raises(ValueError, match="allowed"):
        typed_config.launch_grid("teaching", 4096, 100_000, "fp16", 4, 132, 1)  # over the teaching kernel's range


def test_shared_memory_note_explains_the_carveout_of_a_small_kernel() -> None:
    result = occupancy.occupancy("sm_90", 30, 4, 32).to_dict()
    alloc = -(-(32 + 1024) // 128) * 128
    note = typed_config.shared_memory_note(result, "sm_90")
    assert f"{alloc:,} B" in note and "1,024 B the driver reserves" in note
    assert f"{result['carveout_bytes'] // 1024} KB" in note
    assert f"= {result['carveout_bytes'] // alloc} block(s)" in note and "does not bind" in note


def test_shared_memory_note_says_when_shared_memory_binds() -> None:
    result = occupancy.occupancy("sm_90", 30, 4, 100_000).to_dict()
    assert result["limiter"] == "shared_memory"
    note = typed_config.shared_memory_note(result, "sm_90")
    assert "largest carveout, 228 KB" in note and "binding limit" in note
    assert f"= {228 * 1024 // (-(-(100_000 + 1024) // 128) * 128)} block(s)" in note


def test_default_sm_count_follows_the_arch() -> None:
    assert typed_config.default_sm_count("sm_120", "sm_90", 132) == occupancy.ARCHS["sm_120"].sm_count
    assert typed_config.default_sm_count("sm_90", "sm_90", 130) == 130  # the loaded GPU's own count
    assert typed_config.default_sm_count("sm_80") == occupancy.ARCHS["sm_80"].sm_count
    with pytest.raises(ValueError, match="allowed: sm_80"):
        typed_config.default_sm_count("sm_7")


def test_measured_at_finds_only_swept_n() -> None:
    df = synthetic_results(n_values=(256, 1024))
    assert (
        len(typed_config.measured_at(df, "teaching", "fp16", 1024))
        == len(df[(df["variant"] == "teaching") & (df["dtype"] == "fp16") & (df["n_cols"] == 1024)])
        > 0
    )
    assert typed_config.measured_at(df, "teaching", "fp16", 5000).empty
    assert typed_config.measured_at(None, "teaching", "fp16", 5000).empty


def test_launcher_num_warps_is_the_plan_s_own_choice() -> None:
    # teaching: 8 warps from BLOCK_SIZE 2048 on, 4 below (the seed's rule)
    assert typed_config.launcher_num_warps("teaching", 50257, "fp16") == 8
    assert typed_config.launcher_num_warps("teaching", 1000, "fp16") == 4
    assert typed_config.launcher_num_warps("teaching", 10**7, "fp16") is None  # past its limit: no plan
