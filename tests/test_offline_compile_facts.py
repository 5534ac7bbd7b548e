"""tools/offline_compile_facts.py: rows without compile facts get an offline compile's, only where the row ran this
tree's kernel and had no error; timings untouched (CPU, sm_90 compiles)."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from blockscope.profiling.results import load_results, save_results
from tools import offline_compile_facts

SWEEP = Path(__file__).resolve().parents[1] / "data" / "h200_sweep.parquet"


def test_facts_are_filled_only_where_the_row_ran_this_trees_kernel(tmp_path, monkeypatch):
    df = load_results(SWEEP)
    rows = df[(df["variant"] == "splitrow") & (df["dtype"] == "fp16") & (df["n_cols"] == 1024)].copy()
    assert len(rows) == 3 and rows["n_regs"].notna().all()  # filled since the capture
    facts = ["n_regs", "blocks_per_sm", "occupancy", "limiter", "compile_source"]
    rows.loc[:, facts] = None
    stale, failed = rows.iloc[[0]].copy(), rows.iloc[[1]].copy()
    stale["kernel_source_hash"], stale["timing_note"] = "0" * 12, "other"
    failed["error"], failed["timing_note"] = "wrong result: 1 of 4 elements", "failed"
    results = save_results(pd.concat([rows, stale, failed], ignore_index=True), tmp_path / "rows.parquet")
    monkeypatch.setattr(sys, "argv", ["offline_compile_facts.py", str(results), "--variants", "splitrow"])
    assert offline_compile_facts.main() == 0
    out = load_results(results)
    marked = out["timing_note"].isin(["other", "failed"])
    ran = out[~marked]
    assert ran["n_regs"].between(8, 255).all() and (ran["compile_source"] == "offline").all()
    assert (ran["blocks_per_sm"] >= 1).all() and ran["limiter"].notna().all()
    assert out.loc[marked, "n_regs"].isna().all()
    timings = ["median_us", "p20_us", "p80_us", "reps"]
    pd.testing.assert_frame_equal(out[timings].iloc[:3].reset_index(drop=True), rows[timings].reset_index(drop=True))


def test_lanes_are_recomputed_from_each_rows_dtype(tmp_path, monkeypatch):
    df = load_results(SWEEP)
    rows = df[(df["variant"] == "staged") & (df["n_cols"].isin([128, 129])) & (df["error"] == "")].copy()
    assert set(rows["dtype"]) >= {"fp16", "fp32"}
    fp32 = rows["dtype"] == "fp32"
    expected = rows["masked_lane_fraction"].copy()
    rows.loc[fp32, "masked_lane_fraction"] = None  # as the fp16-only model left odd fp32 N
    results = save_results(rows, tmp_path / "rows.parquet")
    monkeypatch.setattr(sys, "argv", ["offline_compile_facts.py", str(results), "--lanes"])
    assert offline_compile_facts.main() == 0
    out = load_results(results)
    pd.testing.assert_series_equal(
        out["masked_lane_fraction"].reset_index(drop=True), expected.reset_index(drop=True), check_dtype=False
    )
    assert (
        out.loc[(out["dtype"] == "fp32").to_numpy() & (out["n_cols"] == 128).to_numpy(), "masked_lane_fraction"]
        .eq(0.875)
        .all()
    )
