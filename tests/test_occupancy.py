"""Occupancy calculator: hand-worked cases per arch and limiter, zero-block edges, waves, and replays of H200
captures (ncu's per-launch view and the driver's occupancy API)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from blockscope import kernels
from blockscope.profiling.inspect.occupancy import ARCHS, arch_from_name, occupancy, waves
from tools import gpu_occupancy_validation as validation

ROOT = Path(__file__).resolve().parents[1]
H200_CAPTURE = ROOT / "data" / "occupancy_h200.csv"
NCU_CAPTURE = ROOT / "data" / "ncu_validation.csv"


@pytest.mark.parametrize(
    "arch, regs, warps, shared, blocks, limiter, limits",
    [
        # 138 regs -> 4416 -> 4608 regs/warp; 16384 // 4608 = 3 warps per sub-partition -> 12 warps -> 12 blocks
        ("sm_90", 138, 1, 0, 12, "registers", {"registers": 12, "shared_memory": 16, "warps": 64, "blocks": 32}),
        # 24 regs -> 768/warp: 21 per sub-partition -> 84 warps -> 21 blocks; 64 warps / 4 = 16; 16 x 1152 B -> 32 KB
        ("sm_90", 24, 4, 16, 16, "warps", {"registers": 21, "shared_memory": 28, "warps": 16, "blocks": 32}),
        # 1-warp programs: the 32-block limit binds; 32 x 1 KB reserved -> 32 KB carveout
        ("sm_90", 16, 1, 0, 32, "blocks", {"registers": 128, "shared_memory": 32, "warps": 64, "blocks": 32}),
        # 65568 B > 48 KB: max carveout 228 KB; (65568 + 1024 -> 66688 B) -> 3 blocks
        ("sm_90", 64, 8, 65568, 3, "shared_memory", {"registers": 4, "shared_memory": 3, "warps": 8, "blocks": 32}),
        # A100: 255 regs -> 8192 regs/warp -> 2 warps per sub-partition -> 8 warps -> 2 blocks of 4
        ("sm_80", 255, 4, 0, 2, "registers", {"registers": 2, "shared_memory": 8, "warps": 16, "blocks": 32}),
        # A100, 100000 B: 101024 -> 101120 B per block; 164 KB / 101120 = 1
        ("sm_80", 32, 4, 100000, 1, "shared_memory", {"registers": 16, "shared_memory": 1, "warps": 16, "blocks": 32}),
        # sm_86: 48 warps per SM -> 12 blocks of 4 warps; block limit 16
        ("sm_86", 32, 4, 0, 12, "warps", {"registers": 16, "shared_memory": 16, "warps": 12, "blocks": 16}),
        ("sm_86", 16, 1, 0, 16, "blocks", {"registers": 128, "shared_memory": 16, "warps": 48, "blocks": 16}),
        # sm_89: 24 blocks; 24 x 1 KB -> 32 KB carveout
        ("sm_89", 16, 1, 0, 24, "blocks", {"registers": 128, "shared_memory": 32, "warps": 48, "blocks": 24}),
        # sm_89, 60000 B > 48 KB: 100 KB carveout, 61056 B per block -> 1
        ("sm_89", 40, 4, 60000, 1, "shared_memory", {"registers": 12, "shared_memory": 1, "warps": 12, "blocks": 24}),
        # B200: 200 regs -> 6400 regs/warp -> 2 per sub-partition -> 8 warps -> 2 blocks of 4
        ("sm_100", 200, 4, 0, 2, "registers", {"registers": 2, "shared_memory": 8, "warps": 16, "blocks": 32}),
        ("sm_100", 32, 2, 8, 32, "warps", {"registers": 32, "shared_memory": 56, "warps": 32, "blocks": 32}),
        # RTX 5090: 48 warps, 24 blocks; 72 regs -> 2304 regs/warp -> 7 per sub-partition -> 28 warps -> 7 blocks
        ("sm_120", 72, 4, 0, 7, "registers", {"registers": 7, "shared_memory": 8, "warps": 12, "blocks": 24}),
        ("sm_120", 16, 1, 0, 24, "blocks", {"registers": 128, "shared_memory": 32, "warps": 48, "blocks": 24}),
    ],
)
def test_hand_worked_cases(arch, regs, warps, shared, blocks, limiter, limits):
    result = occupancy(arch, regs, warps, shared)
    assert result.limits == limits
    assert (result.blocks_per_sm, result.limiter) == (blocks, limiter)
    assert result.warps_per_sm == blocks * warps
    assert result.occupancy == pytest.approx(blocks * warps / ARCHS[result.arch].max_warps_per_sm)
    assert result.to_dict()["limits"] == limits


def test_zero_blocks_edges():
    assert occupancy("sm_90", 256, 1, 0).blocks_per_sm == 0  # over 255 registers per thread
    assert occupancy("sm_90", 255, 1, 0).blocks_per_sm == 8  # 8192 regs/warp -> 2 per sub-partition, x4 -> 8
    assert occupancy("sm_90", 64, 32, 0).blocks_per_sm == 1  # 2048 x 32 warps = 65536 registers fit
    assert occupancy("sm_90", 65, 32, 0).limits["registers"] == 0  # 2304 x 32 > 64 K registers per block
    assert occupancy("sm_90", 32, 4, 227 * 1024).blocks_per_sm == 1  # exactly the 227 KB opt-in
    over = occupancy("sm_90", 32, 4, 227 * 1024 + 1)
    assert (over.blocks_per_sm, over.limiter, over.limits["shared_memory"]) == (0, "shared_memory", 0)
    assert occupancy("sm_86", 32, 4, 99 * 1024).blocks_per_sm == 1
    assert occupancy("sm_86", 32, 4, 99 * 1024 + 1).blocks_per_sm == 0
    assert occupancy("sm_80", 32, 4, 163 * 1024 + 1).blocks_per_sm == 0


def test_pinned_carveout_is_the_occupancy_api_default():
    # cuda_occupancy.h with the default carveout preference uses all 228 KB: 233472 // 1152 = 202
    result = occupancy("sm_90", 24, 4, 16, carveout_bytes=ARCHS["sm_90"].shared_per_sm)
    assert result.limits["shared_memory"] == 202 and result.blocks_per_sm == 16
    assert occupancy("sm_90", 24, 4, 16).carveout_bytes == 32 * 1024


def test_bad_inputs_name_what_is_allowed():
    with pytest.raises(ValueError, match="allowed: sm_80, sm_86, sm_89, sm_90, sm_100, sm_120"):
        occupancy("sm_75", 32, 4, 0)
    with pytest.raises(ValueError, match="allowed: 1 to 32"):
        occupancy("sm_90", 32, 33, 0)
    with pytest.raises(ValueError, match=">= 0"):
        occupancy("sm_90", -1, 4, 0)


@pytest.mark.parametrize("name", ["sm_90", "90", "9.0", "sm_90a", 90, "SM_90"])
def test_arch_names(name):
    assert arch_from_name(name).name == "sm_90"
    assert arch_from_name("12.0").sm_count == 170 and arch_from_name("sm_80").sm_count == 108


def test_arch_table_entries():
    assert {a.registers_per_sm for a in ARCHS.values()} == {65536}
    assert ARCHS["sm_90"].carveout_steps[-1] == ARCHS["sm_90"].shared_per_sm == 228 * 1024
    assert ARCHS["sm_80"].max_shared_per_block == 163 * 1024 and ARCHS["sm_90"].sm_count == 132
    assert [ARCHS[a].max_warps_per_sm for a in ARCHS] == [64, 48, 48, 64, 64, 48]
    assert [ARCHS[a].max_blocks_per_sm for a in ARCHS] == [32, 16, 24, 32, 32, 24]


def test_waves():
    assert waves(264, 132, 1) == (2.0, 1.0)
    count, tail = waves(133, 132, 1)
    assert count == pytest.approx(133 / 132) and tail == pytest.approx(1 / 132)
    count, tail = waves(4096, 132, 12)  # 1584 per wave: 2 full waves + 928 programs
    assert count == pytest.approx(4096 / 1584) and tail == pytest.approx(928 / 1584)
    assert waves(0, 132, 4) == (0.0, 0.0)
    with pytest.raises(ValueError):
        waves(10, 0, 1)


def _ncu_rows() -> list[dict]:
    with open(NCU_CAPTURE) as handle:
        return [r for r in csv.DictReader(handle) if not r["error"]]


@pytest.mark.skipif(not NCU_CAPTURE.exists(), reason="no data/ncu_validation.csv")
def test_blocks_per_sm_match_ncu_capture():
    """ncu's register/warp/block limits and the resulting blocks per SM and theoretical occupancy, every row."""
    number = lambda text: float(text.replace(",", ""))  # noqa: E731
    for row in _ncu_rows():
        result = occupancy("sm_90", int(row["n_regs"]), int(row["num_warps"]), int(row["shared_bytes"]))
        ncu = {
            "registers": number(row["launch__occupancy_limit_registers"]),
            "shared_memory": number(row["launch__occupancy_limit_shared_mem"]),
            "warps": number(row["launch__occupancy_limit_warps"]),
            "blocks": number(row["launch__occupancy_limit_blocks"]),
        }
        for name in ("registers", "warps", "blocks"):
            assert result.limits[name] == ncu[name], (name, row)
        assert result.blocks_per_sm == min(ncu.values()), row
        # ncu's carveout (chosen for that launch) is never smaller than the modeled one
        assert result.limits["shared_memory"] <= ncu["shared_memory"], row
        assert result.occupancy == pytest.approx(number(row["sm__maximum_warps_per_active_cycle_pct"]) / 100, abs=1e-3)


def replay(path: Path) -> list[dict]:
    """Rows of a gpu_occupancy_validation.py capture whose calculator answer differs from the driver's."""
    with open(path) as handle:
        rows = [r for r in csv.DictReader(handle) if not r["error"]]
    assert rows, f"{path} has no successful rows"
    bad = []
    for row in rows:
        result = occupancy(row["arch"], int(row["n_regs"]), int(row["num_warps"]), int(row["shared_bytes"]))
        if result.blocks_per_sm != int(row["driver_blocks_per_sm"]):
            bad.append({**row, "replayed": result.blocks_per_sm})
    return bad


def test_replays_h200_capture():
    if not H200_CAPTURE.exists():
        pytest.skip("data/occupancy_h200.csv not captured yet (run tools/gpu_occupancy_validation.py on the H200)")
    with open(H200_CAPTURE) as handle:
        rows = [r for r in csv.DictReader(handle) if not r["error"]]
    assert len(rows) >= 40
    assert {r["calculator_limiter"] for r in rows} == {"registers", "shared_memory", "warps", "blocks"}
    assert replay(H200_CAPTURE) == []


def test_validation_configs_are_valid_and_cover_every_variant_and_dtype():
    assert len(validation.CONFIGS) >= 40
    assert len({(v, d, n, json.dumps(t, sort_keys=True)) for v, d, n, t in validation.CONFIGS}) == len(
        validation.CONFIGS
    )
    assert {v for v, *_ in validation.CONFIGS} == {"teaching", "multirow", "online", "persistent", "splitrow"}
    assert {d for _, d, *_ in validation.CONFIGS} == {"fp16", "bf16", "fp32"}
    for variant, dtype, n_cols, tunables in validation.CONFIGS:
        plan = kernels.get_variant(variant).plan(validation.N_ROWS, n_cols, kernels.dtype_from_name(dtype), **tunables)
        assert plan.num_warps == tunables["num_warps"]
    assert {t.get("num_stages", 1) for v, _, _, t in validation.CONFIGS if v == "persistent"} >= {2, 3, 4}


def test_validation_rows_and_replay(tmp_path):
    """measure() with a fake compile and driver; a failing config keeps its row; replay() finds a mismatch."""

    def fake_inspect(variant, n_cols, dtype, n_rows, **tunables):
        if n_cols == 999:
            raise RuntimeError("ptxas exploded\nsecond line")
        return SimpleNamespace(
            num_warps=tunables["num_warps"],
            num_stages=tunables.get("num_stages", 1),
            arch="sm_90",
            n_regs=24,
            shared_bytes=16,
            spill_store_bytes=0,
            stack_bytes=0,
            compile_seconds=0.5,
            function_handle=1234,
        )

    calls = []

    def fake_driver(handle, num_warps, shared):
        calls.append((handle, num_warps, shared))
        return (16 if num_warps == 4 else 5), "fake"

    rows = [
        validation.measure(c, fake_inspect, fake_driver, occupancy)
        for c in (
            ("teaching", "fp16", 1000, {"num_warps": 4}),
            ("teaching", "fp16", 999, {"num_warps": 4}),
            ("teaching", "fp16", 1000, {"num_warps": 2}),
        )
    ]
    assert calls == [(1234, 4, 16), (1234, 2, 16)]
    assert rows[0]["calculator_blocks_per_sm"] == 16 and rows[0]["calculator_limiter"] == "warps"
    assert rows[0]["limit_registers"] == 21 and rows[0]["driver_api"] == "fake"
    assert rows[1]["error"] == "RuntimeError: ptxas exploded"
    out = tmp_path / "capture.csv"
    validation.write_csv(rows, out, {"gpu_name": "NVIDIA H200", "triton_version": "3.6.0", "torch_version": "2.11"})
    with open(out) as handle:
        header = next(csv.reader(handle))
    assert header[:6] == ["variant", "dtype", "n_cols", "n_rows", "num_warps", "num_stages"]
    bad = replay(out)  # 2 warps: the calculator says 32 (warp limit), the fake driver 5
    assert [(b["n_cols"], b["num_warps"], b["replayed"]) for b in bad] == [("1000", "2", 32)]


def test_validation_main_writes_the_capture(tmp_path, monkeypatch):
    """The script's main() end to end with a fake GPU, compile and driver: CSV rows the replay accepts."""
    import torch

    from blockscope.profiling.inspect import compiled

    def fake_live(variant, n_cols, dtype, n_rows, **tunables):
        regs = {128: 16, 8192: 80}[n_cols]
        return SimpleNamespace(
            num_warps=tunables["num_warps"],
            num_stages=3,
            arch="sm_90",
            n_regs=regs,
            shared_bytes=16,
            spill_store_bytes=0,
            stack_bytes=0,
            compile_seconds=0.25,
            function_handle=7,
        )

    def fake_driver(handle, num_warps, shared):  # what H200's driver answered for these two kernels
        return {1: 32, 4: 6}[num_warps], "fake"

    monkeypatch.setattr(
        validation,
        "CONFIGS",
        (
            ("teaching", "fp16", 128, {"num_warps": 1}),
            ("teaching", "fp32", 8192, {"num_warps": 4}),
            ("teaching", "fp32", 8192, {"num_warps": 3}),
        ),
    )
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "NVIDIA H200")
    monkeypatch.setattr(compiled, "inspect_live", fake_live)
    monkeypatch.setattr(validation, "driver_blocks_per_sm", fake_driver)
    out = tmp_path / "occupancy.csv"
    assert validation.main(["--out", str(out)]) == 0
    with open(out) as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["calculator_blocks_per_sm"], r["calculator_limiter"], r["gpu_name"]) for r in rows[:2]] == [
        ("32", "blocks", "NVIDIA H200"),
        ("6", "registers", "NVIDIA H200"),
    ]
    assert rows[2]["error"].startswith("KeyError")  # fake_driver knows no 3-warp kernel: recorded, not fatal
    assert replay(out) == []


def test_check_shared_bytes_names_the_per_block_limit() -> None:
    from blockscope.profiling.inspect.occupancy import check_shared_bytes

    check_shared_bytes("sm_90", 227 * 1024)  # the opt-in maximum itself is fine
    with pytest.raises(
        ValueError,
        match=r"300000 bytes .* over the sm_90 per-block limit of 232448 bytes "
        r"\(227 KB opt-in maximum\); allowed: 0 to 232448",
    ):
        check_shared_bytes("sm_90", 300_000)
    with pytest.raises(ValueError, match="sm_80 per-block limit of 166912 bytes"):
        check_shared_bytes("8.0", 166_913)
