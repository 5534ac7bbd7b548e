"""Replay of the H200 Nsight Compute capture (data/ncu_validation.csv, made by tools/ncu_validation.py):
the occupancy calculator must give ncu's theoretical occupancy and per-resource block limits on every row."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from blockscope.profiling.inspect.occupancy import occupancy

CAPTURE = Path(__file__).resolve().parents[1] / "data" / "ncu_validation.csv"
LIMITS = {
    "registers": "launch__occupancy_limit_registers",
    "shared_memory": "launch__occupancy_limit_shared_mem",
    "warps": "launch__occupancy_limit_warps",
    "blocks": "launch__occupancy_limit_blocks",
}


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def rows() -> list[dict]:
    with open(CAPTURE) as handle:
        return [r for r in csv.DictReader(handle) if not r["error"]]


def test_capture_covers_every_limiter_and_variant():
    captured = rows()
    assert len(captured) >= 20
    assert {r["variant"] for r in captured} >= {"teaching", "multirow", "online", "persistent"}
    binding = set()
    for r in captured:
        limits = {name: _number(r[column]) for name, column in LIMITS.items()}
        binding |= {name for name, value in limits.items() if value == min(limits.values())}  # ties: all bind
    assert binding == set(LIMITS), binding


@pytest.mark.parametrize("row", rows(), ids=lambda r: f"{r['variant']}-{r['dtype']}-{r['n_cols']}-{r['tunables']}")
def test_calculator_matches_ncu(row):
    regs = int(row["n_regs"])
    assert regs == int(_number(row["launch__registers_per_thread"]))  # the compile facts describe this launch
    result = occupancy("sm_90", regs, int(row["num_warps"]), int(row["shared_bytes"]))
    for name, column in LIMITS.items():
        if name == "shared_memory":
            # the driver picks the shared-memory carveout per launch (and weighs kernels already resident), so
            # ncu may report a larger carveout's limit; it is never below the calculator's
            assert int(_number(row[column])) >= result.limits[name], (name, result)
        else:
            assert result.limits[name] == int(_number(row[column])), (name, result)
    theoretical = _number(row["sm__maximum_warps_per_active_cycle_pct"]) / 100
    assert result.occupancy == pytest.approx(theoretical, abs=1e-3)
    achieved = _number(row["sm__warps_active.avg.pct_of_peak_sustained_active"]) / 100
    assert achieved <= theoretical + 0.02  # achieved never exceeds the theoretical bound
