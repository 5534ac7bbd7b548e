"""Run vs run (profiling/views/compare.py): ratios B / A with their spread, summaries and ranking changes."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from blockscope.demo import synthetic_results
from blockscope.profiling.views import compare
from blockscope.profiling.views import dashboard_data as dd

SMALL = {"n_values": (256, 1024, 4096), "dtypes": ("fp16",), "variants": ("torch", "teaching", "online")}


@pytest.fixture(scope="module")
def two_runs() -> tuple[pd.DataFrame, pd.DataFrame]:
    a = synthetic_results(seed=0, **SMALL)
    b = synthetic_results(seed=3, run_id="synthetic-b", **SMALL)
    return a, b


def test_runs_are_the_loaded_setups(two_runs) -> None:
    a, b = two_runs
    found = compare.runs(pd.concat([a, b], ignore_index=True))
    assert [run.label for run in found] == ["run synthetic-0", "run synthetic-b"]  # one GPU: its runs
    assert len(compare.runs(a)) == 1 and compare.runs(a)[0].label == "loaded data"
    stacked = compare.runs(dd.load_many({"a.parquet": a, "b.csv": b}))
    assert [run.label for run in stacked] == ["a.parquet", "b.csv"]
    info = compare.run_info(stacked)
    assert info["run_id"].tolist() == ["synthetic-0", "synthetic-b"] and info["rows"].tolist() == [len(a), len(b)]
    assert info["triton_version"].tolist() == ["3.7.1", "3.7.1"]


def test_same_config_ratio_is_b_over_a_with_the_spread(two_runs) -> None:
    a, b = two_runs
    table = compare.ratio_table(a, b, method="cuda_graph", dtype="fp16")
    ran_a = a[(a["method"] == "cuda_graph") & (a["error"] == "")]
    ran_b = b[(b["method"] == "cuda_graph") & (b["error"] == "")]
    assert len(table) == len(ran_a) == len(ran_b)
    for _, row in table.iterrows():
        match = (
            (ran_a["variant"] == row["variant"])
            & (ran_a["n_cols"] == row["n_cols"])
            & (ran_a["tunables"] == row["tunables"])
        )
        ra = ran_a[match].iloc[0]
        rb = ran_b[
            (ran_b["variant"] == row["variant"])
            & (ran_b["n_cols"] == row["n_cols"])
            & (ran_b["tunables"] == row["tunables"])
        ].iloc[0]
        assert row["ratio"] == pytest.approx(rb["median_us"] / ra["median_us"])
        assert row["ratio_low"] == pytest.approx(rb["p20_us"] / ra["p80_us"])
        assert row["ratio_high"] == pytest.approx(rb["p80_us"] / ra["p20_us"])
        expected = "B slower" if row["ratio_low"] > 1 else "B faster" if row["ratio_high"] < 1 else "within spread"
        assert row["change"] == expected


def test_a_change_beyond_the_spread_is_named_and_summarised(two_runs) -> None:
    a, _ = two_runs
    b = a.copy()
    slow = b["variant"] == "online"
    for column in ("median_us", "p20_us", "p80_us", "min_us", "max_us"):
        b.loc[slow, column] = b.loc[slow, column] * 1.5
    table = compare.ratio_table(a, b, method="per_call_events")
    assert set(table.loc[table["variant"] == "online", "change"]) == {"B slower"}
    assert set(table.loc[table["variant"] != "online", "change"]) == {"within spread"}
    assert table.loc[table["variant"] == "online", "ratio"].to_numpy() == pytest.approx(1.5)
    summary = compare.ratio_summary(table)
    online = int((table["variant"] == "online").sum())
    assert summary["points"] == len(table) and summary["b_slower"] == online and summary["b_faster"] == 0
    assert summary["geomean"] == pytest.approx(1.5 ** (online / len(table)))
    assert summary["max"] == pytest.approx(1.5) and summary["min"] == pytest.approx(1.0)


def test_fastest_config_per_variant_mode_and_bad_mode(two_runs) -> None:
    a, b = two_runs
    table = compare.ratio_table(a, b, method="cuda_graph", mode="fastest config per variant")
    assert not table.duplicated(["variant", "dtype", "n_rows", "n_cols"]).any()
    best_a = dd.best_per_n(a[a["method"] == "cuda_graph"]).set_index(["variant", "n_cols"])["median_us"]
    best_b = dd.best_per_n(b[b["method"] == "cuda_graph"]).set_index(["variant", "n_cols"])["median_us"]
    for _, row in table.iterrows():
        key = (row["variant"], row["n_cols"])
        assert row["ratio"] == pytest.approx(best_b[key] / best_a[key])
    with pytest.raises(ValueError, match="allowed: same config, fastest config per variant"):
        compare.ratio_table(a, b, mode="median")
    assert compare.ratio_table(a, b.assign(dtype="bf16")).empty


def test_ranking_changes_where_the_fastest_variant_differs(two_runs) -> None:
    a, _ = two_runs
    b = a.copy()
    hit = (b["variant"] == "torch") & (b["n_cols"] == 4096)
    b.loc[hit, "median_us"] = b.loc[hit, "median_us"] / 100  # torch becomes fastest at N=4096 in B
    changes, compared = compare.ranking_changes(a, b, method="cuda_graph")
    assert compared == 3
    best_a = dd.best_per_n(a[a["method"] == "cuda_graph"])
    winner_a = best_a.loc[best_a[best_a["n_cols"] == 4096]["median_us"].idxmin(), "variant"]
    assert winner_a != "torch"  # the synthetic model: a Triton variant is fastest there in A
    assert changes["n_cols"].tolist() == [4096] and changes["b_fastest"].item() == "torch"
    assert changes["a_fastest"].item() == winner_a
    assert changes["b_us"].item() == pytest.approx(b.loc[hit & (b["method"] == "cuda_graph"), "median_us"].item())
    unchanged, _ = compare.ranking_changes(a, a, method="cuda_graph")
    assert unchanged.empty
    only_b = compare.ranking_changes(a[a["variant"] != "online"], b, method="cuda_graph")[0]
    assert "online" not in set(only_b.get("b_fastest", []))  # a variant one run lacks never flips a ranking
    assert math.isnan(compare.ratio_summary(compare.ratio_table(a, a.assign(dtype="bf16")))["geomean"])
