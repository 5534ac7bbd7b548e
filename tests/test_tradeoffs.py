"""Pure logic behind the Tradeoffs heatmaps and the line charts: edge points, gaps, per-N normalisation, empty cells."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from blockscope.demo import synthetic_results
from blockscope.profiling.views import curves, tradeoffs

N_VALUES = (128, 256, 257, 1000, 1024, 1025, 4096, 16384, 65536)


@pytest.fixture(scope="module")
def df() -> pd.DataFrame:
    return synthetic_results(n_values=N_VALUES)


def test_edge_points_are_neighbours_of_a_measured_power_of_two() -> None:
    assert curves.edge_points((128, 255, 256, 257, 511, 1000, 1023)) == {255, 257}  # no 512 / 1024 measured
    assert curves.edge_points((127, 128, 129, 4095, 4096, 4097)) == {127, 129, 4095, 4097}
    assert curves.edge_points((1, 2, 4, 1000)) == set()  # powers of two are never edges
    assert curves.curve_grid((1000, 1023, 1024, 1025, 3000)) == [1000, 1024, 3000]


def test_edge_point_three_next_to_two() -> None:
    assert curves.edge_points((2, 3)) == {3}


def test_split_series_breaks_at_unmeasured_grid_n_and_keeps_edges_apart() -> None:
    grid = [256, 257, 1000, 1024, 1025, 4096]
    rows = pd.DataFrame({"n_cols": [256, 257, 1024, 4096], "median_us": [1.0, 2.0, 3.0, 4.0]})
    curve, edges = curves.split_series(rows, grid)
    assert curve["n_cols"].tolist() == [256, 1000, 1024, 4096]
    assert math.isnan(curve["median_us"].iloc[1]) and curve["median_us"].iloc[2] == 3.0
    assert edges["n_cols"].tolist() == [257] and edges["median_us"].tolist() == [2.0]
    with pytest.raises(ValueError, match="one row per n_cols"):
        curves.split_series(pd.concat([rows, rows]), grid)


def test_warps_grid_normalises_per_n_and_labels_empty_cells(df: pd.DataFrame) -> None:
    rows = df[(df["variant"] == "teaching") & (df["dtype"] == "fp16") & (df["method"] == "cuda_graph")]
    grid = tradeoffs.warps_grid(rows, "median_us")
    assert grid.values.index.tolist() == list(N_VALUES) and grid.values.columns.tolist() == [4, 8]
    # teaching at N=65536 with 4 warps is a 'skipped: ...' error row in the synthetic table
    assert grid.status.at[65536, 4] == "skipped" and grid.reason.at[65536, 4].startswith("skipped")
    assert math.isnan(grid.values.at[65536, 4]) and grid.status.at[65536, 8] == tradeoffs.MEASURED
    ran = rows[rows["error"] == ""]
    expected = ran.groupby(["n_cols", "num_warps"])["median_us"].min().unstack()
    relative = tradeoffs.relative_to_best(grid.values)
    for n in N_VALUES:
        fastest = expected.loc[n].astype(float).idxmin()
        assert relative.at[n, fastest] == 1.0
        assert tradeoffs.best_per_n(grid.values)[n] == fastest
        for w in expected.columns:
            if pd.notna(expected.at[n, w]):
                assert relative.at[n, w] == pytest.approx(expected.at[n, w] / expected.loc[n].min())
    dense = tradeoffs.keep_dense(grid)
    assert 65536 not in dense.values.index and 4096 in dense.values.index  # one column measured there
    table = tradeoffs.grid_table(grid, "µs", relative=True)
    assert table.loc[table["best"], "vs best at N (x)"].eq(1.0).all() and len(table) == len(N_VALUES) * 2
    assert table.loc[(table["n_cols"] == 65536) & (table["num_warps"] == 4), "status"].item() == "skipped"


def test_warps_grid_says_not_measured_and_error() -> None:
    rows = synthetic_results(
        n_values=(1024, 4096), variants=("teaching",), dtypes=("fp16",), num_warps=(2, 4, 8), methods=("cuda_graph",)
    )
    rows = rows[~((rows["n_cols"] == 1024) & (rows["num_warps"] == 2))].copy()  # never measured
    hit = (rows["n_cols"] == 4096) & (rows["num_warps"] == 8)
    rows["error"] = rows["error"].astype(object)
    rows.loc[hit, "error"] = "OutOfResources: shared memory"
    rows.loc[hit, "median_us"] = float("nan")
    grid = tradeoffs.warps_grid(rows, "median_us")
    assert grid.status.at[1024, 2] == tradeoffs.NOT_MEASURED
    assert grid.status.at[4096, 8] == "error" and "OutOfResources" in grid.reason.at[4096, 8]
    assert tradeoffs.error_label("unsupported: liger: N too wide") == "unsupported"
    assert tradeoffs.error_label("wrong result: max abs error 1") == "wrong result"
    with pytest.raises(ValueError, match="allowed"):
        tradeoffs.warps_grid(rows, "no_such_column")
