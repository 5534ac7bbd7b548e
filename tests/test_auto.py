"""`auto`'s table lookup and the autotuner's bookkeeping (CPU)."""

from __future__ import annotations

import json

import pytest
import torch

from blockscope import kernels
from blockscope.kernels import VARIANTS, auto, softmax
from blockscope.profiling.measure import autotune
from tests.softmax_checks import assert_softmax_close


def test_shipped_h200_table_has_provenance_and_valid_entries():
    table = auto.load_table("NVIDIA H200")
    assert table["gpu"] == "NVIDIA H200" and table["compute_capability"] == "9.0"
    made_by = ("python3 -m tools.tune_h200", "python3 scripts/tune_h200.py")  # the second: before tools/
    assert table["command"].startswith(made_by)
    dtypes = {e["dtype"] for e in table["entries"]}
    assert dtypes == {"fp16", "bf16", "fp32"}
    for entry in table["entries"]:
        if entry["variant"] != "torch":
            VARIANTS[entry["variant"]].plan(
                entry["n_rows"], entry["n_cols"], kernels.dtype_from_name(entry["dtype"]), **entry["tunables"]
            )
            assert entry["median_us"] <= entry["torch_us"] * 1.0001  # the tuner keeps torch where it is faster


def expected_choice(entry: dict, n_rows: int, n_cols: int) -> tuple[str, dict]:
    """What choose() makes of a table entry at (R, N): the heuristic for a GPU-only (Gluon) entry under the CPU
    interpreter, programs per row (staged_split's chunks, staged's cluster) scaled to N, else the entry's own."""
    if entry["variant"] == "torch":
        return "torch", {}
    if VARIANTS[entry["variant"]].gpu_only and kernels.interpreting():
        return auto.heuristic_choice(n_rows, n_cols)
    tunables = dict(entry["tunables"])
    for name, most in (("chunks", 64), ("cluster", 16)):
        if name in tunables:
            tunables[name] = max(1, min(most, -(-n_cols // -(-entry["n_cols"] // tunables[name]))))
    return entry["variant"], tunables


def test_choice_follows_the_table_bucket_alignment_and_nearest_shape(monkeypatch):
    table = auto.load_table("NVIDIA H200")
    entries = {(e["dtype"], e["n_rows"], e["n_cols"]): e for e in table["entries"]}
    wide = entries[("fp32", 512, 262144)]
    # N=200000 (a multiple of 16) lies in the 262144 bucket; R=600 is nearest to the 512-row entry
    assert auto.choose(600, 200_000, torch.float32, "NVIDIA H200") == expected_choice(wide, 600, 200_000)
    # fp16 N=5000 rows allow 16-byte loads: of the 8192 bucket's 16-byte entries (6000, 8192), 6000 is nearest
    sixteen = entries[("fp16", 4096, 6000)]
    monkeypatch.setenv("TRITON_INTERPRET", "0")  # choices only, nothing launched: Gluon entries count as on a GPU
    assert auto.choose(4096, 5000, torch.float16, "NVIDIA H200") == (sixteen["variant"], sixteen["tunables"])
    # odd N=5001 loads 2 bytes at a time: of the bucket's odd entries (4097, 8191), 4097 is nearest
    odd = entries[("fp16", 4096, 4097)]
    assert auto.choose(4096, 5001, torch.float16, "NVIDIA H200") == (odd["variant"], odd["tunables"])
    aligned = entries[("fp16", 4096, 8192)]
    assert auto.choose(4096, 8000, torch.float16, "NVIDIA H200") == (aligned["variant"], aligned["tunables"])


@pytest.mark.parametrize(
    "n_cols, itemsize, alignment",
    [(1000, 2, 16), (1002, 2, 4), (777, 2, 2), (1001, 4, 4), (1002, 4, 8), (4096, 4, 16), (0, 2, 16)],
)
def test_row_alignment_is_the_widest_load_a_row_allows(n_cols, itemsize, alignment):
    assert auto.row_alignment(n_cols, itemsize) == alignment


def test_an_entry_that_does_not_fit_the_shape_falls_back_to_its_num_warps_then_defaults(monkeypatch):
    """An fp32 warprows entry at N=128 with 32 threads per row (one 4-element vector each), borrowed for fp16,
    would lay 32 x 8 lanes over a 128-lane row: auto keeps warprows with its num_warps and the default
    threads_per_row for fp16, not the heuristic."""
    table = {
        "format": auto.TABLE_FORMAT,
        "entries": [
            {
                "dtype": "fp32",
                "n_rows": 4096,
                "n_cols": 128,
                "variant": "warprows",
                "tunables": {"num_warps": 8, "threads_per_row": 32},
            }
        ],
    }
    monkeypatch.setattr(auto, "load_table", lambda gpu_name: table)
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    assert auto.choose(4096, 128, torch.float16, "NVIDIA H200") == ("warprows", {"num_warps": 8})
    assert auto.fitted_tunables("warprows", {"num_warps": 8, "threads_per_row": 256}, 4, 2048, torch.float16) == {
        "num_warps": 8,
        "threads_per_row": 256,
    }
    assert auto.fitted_tunables("multirow", {"rows_per_program": 256, "num_warps": 2}, 4, 16384, torch.float16) == {
        "num_warps": 2
    }
    assert auto.fitted_tunables("teaching", {"num_warps": 4}, 4, 10**6, torch.float16) is None  # over its limit


def test_exact_shapes_of_the_table_get_their_own_entry():
    table = auto.load_table("NVIDIA H200")
    for entry in table["entries"]:
        dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[entry["dtype"]]
        expected = expected_choice(entry, entry["n_rows"], entry["n_cols"])
        assert auto.choose(entry["n_rows"], entry["n_cols"], dtype, "NVIDIA H200") == expected, entry


def test_a_dtype_without_entries_borrows_the_nearest_in_bytes(tmp_path, monkeypatch):
    monkeypatch.setenv("BLOCKSCOPE_CACHE_DIR", str(tmp_path))
    table = {
        "format": auto.TABLE_FORMAT,
        "gpu": "Test GPU",
        "entries": [
            {"dtype": "fp16", "n_rows": 4096, "n_cols": 1024, "variant": "teaching", "tunables": {"num_warps": 2}},
            {"dtype": "fp32", "n_rows": 4096, "n_cols": 1024, "variant": "teaching", "tunables": {"num_warps": 8}},
        ],
    }
    (tmp_path / "autotune").mkdir()
    (tmp_path / "autotune" / "test-gpu.json").write_text(json.dumps(table))
    assert auto.choose(4096, 1024, torch.bfloat16, "Test GPU") == ("teaching", {"num_warps": 2})


def test_torch_entries_route_to_torch_softmax(monkeypatch):
    """Where the tuner measured torch.softmax fastest (launch-bound shapes; the H200 table has none since warprows),
    auto calls it."""
    entry = {
        "dtype": "bf16",
        "n_rows": 4096,
        "n_cols": 129,
        "variant": "torch",
        "tunables": {},
        "median_us": 6.1,
        "torch_us": 6.1,
    }
    monkeypatch.setattr(auto, "load_table", lambda gpu_name: {"format": auto.TABLE_FORMAT, "entries": [entry]})
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[entry["dtype"]]
    assert auto.choose(entry["n_rows"], entry["n_cols"], dtype, "NVIDIA H200") == ("torch", {})
    with pytest.raises(ValueError, match="picks torch.softmax"):
        auto.plan(entry["n_rows"], entry["n_cols"], dtype, gpu_name="NVIDIA H200")


def test_unknown_gpu_uses_the_heuristic():
    assert auto.choose(4096, 100, torch.float16, "Some Future GPU") == ("multirow", {})
    assert auto.choose(4096, 5000, torch.float16, "Some Future GPU") == ("teaching", {"num_warps": 16})
    assert auto.choose(64, 300_000, torch.float16, "Some Future GPU")[0] == "splitrow"


@pytest.mark.parametrize("n_cols", [5, 129, 1000, 3000, 20_000])
def test_auto_matches_reference(n_cols):
    x = torch.randn(3, n_cols, dtype=torch.float16, device="cuda" if torch.cuda.is_available() else "cpu")
    assert_softmax_close(softmax(x, "auto"), x, f"auto N={n_cols}")


def test_user_table_takes_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv("BLOCKSCOPE_CACHE_DIR", str(tmp_path))
    records = [
        {
            "dtype": "fp16",
            "n_rows": 64,
            "n_cols": 1024,
            "variant": "torch",
            "tunables": {},
            "median_us": 9.0,
            "torch_us": 9.0,
            "error": "",
        },
        {
            "dtype": "fp16",
            "n_rows": 64,
            "n_cols": 1024,
            "variant": "online",
            "tunables": {"tile": 256},
            "median_us": 5.0,
            "torch_us": 9.0,
            "error": "",
        },
        {
            "dtype": "fp16",
            "n_rows": 64,
            "n_cols": 1024,
            "variant": "teaching",
            "tunables": {"num_warps": 2},
            "median_us": 4.0,
            "torch_us": 9.0,
            "error": "max abs error 1 over tolerance",
        },
    ]
    table = autotune.make_table(records, 1.5, "test")
    table["gpu"] = "Test GPU 9000"
    path = autotune.save_table(table)
    assert path == tmp_path / "autotune" / "test-gpu-9000.json"
    assert json.loads(path.read_text())["entries"][0]["variant"] == "online"  # failing configs never win
    assert auto.choose(64, 1000, torch.float16, "Test GPU 9000") == ("online", {"tile": 256})


def test_candidates_are_valid_plans():
    for n_cols in (128, 1000, 4096, 8192, 32768, 65536, 262144, 2**20):
        found = autotune.candidates(4096, n_cols)
        assert len(found) >= 3
        for variant, tunables in found:
            VARIANTS[variant].plan(4096, n_cols, torch.float16, **tunables)


def test_tune_shape_records_errors_and_keeps_going():
    calls = []

    def fake_timer(fn):
        calls.append(fn)
        fn()
        return 10.0 + len(calls)

    device = "cuda" if torch.cuda.is_available() else "cpu"
    records = autotune.tune_shape(
        3,
        100,
        torch.float32,
        fake_timer,
        device=device,
        candidate_list=[("teaching", {"num_warps": 4}), ("online", {"tile": 3})],
    )
    assert [r["variant"] for r in records] == ["torch", "teaching", "online"]
    assert records[1]["error"] == "" and records[1]["first_us"] == 12.0 and records[0]["first_us"] == 11.0
    assert "tile=3 is not allowed" in records[2]["error"]
    # recheck, rotating the order: torch 13, teaching 14 | teaching 15, torch 16 | torch 17, teaching 18
    assert records[0]["recheck_us"] == [13.0, 16.0, 17.0] and records[1]["recheck_us"] == [14.0, 15.0, 18.0]
    assert records[0]["median_us"] == 14.5 and records[1]["median_us"] == 14.5  # medians of first pass + rounds
    assert records[0]["torch_us"] == 14.5


def test_recheck_drops_a_first_pass_winner_that_a_re_measurement_reverses():
    """teaching measured 5 us once (a lucky first pass) but 20 us on every recheck: torch (10 us) is kept."""
    first_pass = {"torch": [10.0], "teaching": [5.0], "online": [30.0]}
    rechecks = {"torch": 10.0, "teaching": 20.0, "online": 30.0}

    records = [
        {"variant": name, "tunables": {}, "median_us": first_pass[name][0], "error": ""}
        for name in ("torch", "teaching", "online")
    ]
    calls = {i: (lambda name=r["variant"]: name) for i, r in enumerate(records)}
    autotune.recheck(records, calls, lambda fn: rechecks[fn()], top=2, rounds=3)
    assert records[1]["reversed"] is True and records[1]["median_us"] == 20.0
    assert records[0]["median_us"] == 10.0 and "recheck_us" not in records[2]  # online: not in the top 2
    entries = autotune.best_entries(
        [{**r, "dtype": "fp16", "n_rows": 1, "n_cols": 8, "torch_us": 10.0} for r in records]
    )
    assert entries[0]["variant"] == "torch"


def test_a_tie_under_the_flushed_timer_is_broken_by_graph_replay():
    """teaching 10.0 us and warprows 10.2 us flushed (2%: a tie), warprows faster under replay: warprows is the
    entry; multirow at 11 us (10% slower) is not tied, however fast its replay; no tie, no tie-break."""
    flushed = {"torch": 20.0, "teaching": 10.0, "warprows": 10.2, "multirow": 11.0}
    replay = {"torch": 15.0, "teaching": 8.0, "warprows": 6.5, "multirow": 1.0}
    records = [
        {"variant": name, "tunables": {}, "median_us": us, "error": "", "recheck_us": [us]}
        for name, us in flushed.items()
    ]
    calls = {i: (lambda name=r["variant"]: name) for i, r in enumerate(records)}
    autotune.break_ties(records, calls, lambda fn: replay[fn()])
    assert [r.get("tiebreak_us") for r in records] == [None, 8.0, 6.5, None]
    assert records[2]["tiebreak_rounds_us"] == [6.5] * autotune.TIEBREAK_ROUNDS
    assert [bool(r.get("chosen")) for r in records] == [False, False, True, False]
    entries = autotune.best_entries(
        [{**r, "dtype": "fp16", "n_rows": 1, "n_cols": 8, "torch_us": 20.0} for r in records]
    )
    assert entries[0]["variant"] == "warprows" and entries[0]["median_us"] == 10.2
    alone = [
        {"variant": "teaching", "tunables": {}, "median_us": 10.0, "error": "", "recheck_us": [10.0]},
        {"variant": "multirow", "tunables": {}, "median_us": 12.0, "error": "", "recheck_us": [12.0]},
    ]
    autotune.break_ties(alone, {0: lambda: "teaching", 1: lambda: "multirow"}, lambda fn: pytest.fail("timed"))
    assert not any("chosen" in r or "tiebreak_us" in r for r in alone)


def test_the_tie_break_takes_the_median_of_interleaved_rounds():
    """One replay timing is noisy: warprows' lucky 5 us round does not beat teaching's steady 7 us; the rounds
    rotate the order (teaching, warprows | warprows, teaching | teaching, warprows)."""
    replay = {"teaching": iter([7.0, 7.0, 7.0]), "warprows": iter([5.0, 9.0, 9.0])}
    order = []
    records = [
        {"variant": name, "tunables": {}, "median_us": 10.0, "error": "", "recheck_us": [10.0]}
        for name in ("teaching", "warprows")
    ]
    calls = {i: (lambda name=r["variant"]: name) for i, r in enumerate(records)}

    def timer(fn):
        order.append(fn())
        return next(replay[order[-1]])

    autotune.break_ties(records, calls, timer, rounds=3)
    assert order == ["teaching", "warprows", "warprows", "teaching", "teaching", "warprows"]
    assert records[1]["tiebreak_rounds_us"] == [5.0, 9.0, 9.0] and records[1]["tiebreak_us"] == 9.0
    assert records[0].get("chosen") and not records[1].get("chosen")


def test_a_challenged_pick_is_always_rechecked_side_by_side():
    """The table's pick was 4th in the first pass (within noise of the top three): it is rechecked anyway and, the
    fastest there, stays; without `always` it would have been dropped unseen."""
    first_pass = {"torch": 20.0, "incumbent": 10.4, "a": 10.0, "b": 10.1, "c": 10.2}
    rechecks = {"torch": 20.0, "incumbent": 9.0, "a": 10.0, "b": 10.1, "c": 10.2}

    def records_and_calls():
        records = [{"variant": name, "tunables": {}, "median_us": us, "error": ""} for name, us in first_pass.items()]
        return records, {i: (lambda name=r["variant"]: name) for i, r in enumerate(records)}

    records, calls = records_and_calls()
    autotune.recheck(records, calls, lambda fn: rechecks[fn()], top=3, rounds=3, always=(1,))
    assert records[1]["recheck_us"] == [9.0, 9.0, 9.0] and records[1]["median_us"] == 9.0
    assert records[2]["reversed"] is True
    entries = autotune.best_entries(
        [{**r, "dtype": "fp16", "n_rows": 1, "n_cols": 8, "torch_us": 20.0} for r in records]
    )
    assert entries[0]["variant"] == "incumbent"
    records, calls = records_and_calls()
    autotune.recheck(records, calls, lambda fn: rechecks[fn()], top=3, rounds=3)
    assert "recheck_us" not in records[1]


def test_a_config_timed_once_does_not_win_against_rechecked_medians():
    """The top three drifted up on their recheck (10.0 -> 10.6); d, never rechecked, kept its first-pass 10.3: the
    entry comes from the rechecked configs."""
    first_pass = {"torch": 20.0, "a": 10.0, "b": 10.1, "c": 10.2, "d": 10.3}
    records = [{"variant": name, "tunables": {}, "median_us": us, "error": ""} for name, us in first_pass.items()]
    calls = {i: (lambda name=r["variant"]: name) for i, r in enumerate(records)}
    autotune.recheck(records, calls, lambda fn: {"torch": 20.0}.get(fn(), 10.6), top=3, rounds=3)
    assert "recheck_us" not in records[4] and records[4]["median_us"] < records[1]["median_us"]
    entries = autotune.best_entries(
        [{**r, "dtype": "fp16", "n_rows": 1, "n_cols": 8, "torch_us": 20.0} for r in records]
    )
    assert entries[0]["variant"] in {"a", "b", "c"}


def test_tune_grid_reports_each_shape_and_default_rows():
    assert autotune.default_rows(1024, torch.float16) == [4096, 8192, 262144]  # 4096, the ~16 MB and ~512 MB tiers
    assert autotune.default_rows(2048, torch.float16) == [4096, 131072]  # ~16 MB is R=4096 itself: no mid tier
    assert autotune.default_rows(2**20, torch.float32) == [128]  # wide rows: only the ~512 MB shape
    mid = autotune.mid_tier_shapes(torch.float32)
    assert (32768, 128) in mid and all(r >= autotune.MID_TIER_MIN_ROWS and r * n * 4 <= 16 * 2**20 for r, n in mid)
    assert set(mid) <= set(autotune.bench_shapes(torch.float32))
    seen = []

    def fake_timer(fn):
        fn()
        return 7.0

    device = "cuda" if torch.cuda.is_available() else "cpu"
    records, seconds = autotune.tune(["fp32"], [8, 16], fake_timer, rows=[3], on_shape=seen.append, device=device)
    assert [s[0]["n_cols"] for s in seen] == [8, 16] and seconds >= 0
    assert sum(len(s) for s in seen) == len(records)
    assert autotune.describe(seen[0]).startswith("fp32 R=3 N=8: torch 7.0 us, best ")


def test_the_grid_mid_points_are_aligned_rows_in_buckets_without_one_and_never_the_benchs_off_grid_n():
    from blockscope.profiling.measure.bench import OFFGRID
    from blockscope.profiling.measure.sweep import default_n_values

    default = default_n_values()
    for n_cols in autotune.GRID_MID_N:
        assert n_cols not in {n for _, n in OFFGRID}  # off-grid shapes stay off the grid
        assert all(auto.row_alignment(n_cols, size) == 16 for size in (2, 4))
        group = auto.entry_group(n_cols)
        assert not [n for n in default if auto.entry_group(n) == group and n & (n - 1) and n % 8 == 0], n_cols
        for dtype in (torch.float16, torch.float32):
            assert (4096, n_cols) in autotune.bench_shapes(dtype)
    assert autotune.grid_mid_shapes(torch.float16)[:2] == [(4096, 1504), (178481, 1504)]


def test_challenge_retunes_part_of_a_table_and_merges_with_provenance():
    """The --challenge path: torch, the entry's pick and the challengers' candidates are timed on the table's shapes
    with N >= min_n; winners replace those entries, the rest stand, provenance goes under `retuned`."""
    table = {
        "format": auto.TABLE_FORMAT,
        "gpu": "Test GPU",
        "entries": [
            {
                "dtype": "fp32",
                "n_rows": 3,
                "n_cols": 8,
                "variant": "teaching",
                "tunables": {"num_warps": 4},
                "median_us": 9.0,
                "torch_us": 9.5,
            },
            {
                "dtype": "fp32",
                "n_rows": 3,
                "n_cols": 100,
                "variant": "teaching",
                "tunables": {"num_warps": 4},
                "median_us": 9.0,
                "torch_us": 9.5,
            },
        ],
    }
    timed = []

    def fake_timer(fn):  # multirow is the fastest: every call of it reports 1 us
        fn()
        timed.append(fn)
        return 1.0 if "multirow" in repr(getattr(fn, "__defaults__", None)) else 5.0

    device = "cuda" if torch.cuda.is_available() else "cpu"
    records, seconds = autotune.challenge(table, ["fp32"], ["multirow"], fake_timer, min_n=64, device=device)
    assert {(r["n_cols"]) for r in records} == {100}  # N=8 is under min_n: not retimed
    variants = {r["variant"] for r in records}
    assert variants == {"torch", "teaching", "multirow"}  # torch, the incumbent and the challengers only
    incumbent = [r for r in records if r.get("incumbent")]
    assert len(incumbent) == 1 and incumbent[0]["variant"] == "teaching" and "recheck_us" in incumbent[0]
    merged = autotune.merge_table(table, records, seconds, "tune --challenge")
    by_n = {e["n_cols"]: e for e in merged["entries"]}
    assert by_n[8] == table["entries"][0] and by_n[100]["variant"] == "multirow"
    assert merged["retuned"][-1]["command"] == "tune --challenge" and merged["retuned"][-1]["shapes"] == 1


@pytest.mark.parametrize("n_cols", [2**23 + 1, 2**24 - 1, 2**24])
@pytest.mark.parametrize("gpu_name", [None, "NVIDIA H200", "Some Future GPU"])
def test_auto_plans_every_n_up_to_its_limit(n_cols, gpu_name):
    """N = 2**23 + 1 used to pick split-row with chunk 8192 (1025 chunks) and fail asking to raise `chunk`."""
    for dtype in (torch.float16, torch.float32):
        variant, tunables = auto.choose(1, n_cols, dtype, gpu_name)
        plan = VARIANTS[variant].plan(1, n_cols, dtype, **tunables)
        assert plan.n_cols == n_cols
        assert auto.plan(1, n_cols, dtype, gpu_name=gpu_name).variant == variant


def test_eager_check_times_both_paths_and_keeps_the_faster(monkeypatch):
    from blockscope.kernels import auto as auto_module

    now = [0.0]
    monkeypatch.setattr(auto_module.time, "perf_counter", lambda: now[0])

    def call(us):
        def run():
            now[0] += us * 1e-6

        return run

    syncs = []
    faster, triton_us, torch_us = auto_module.eager_prefers_torch(call(24.0), call(9.0), lambda: syncs.append(1))
    assert faster and triton_us == pytest.approx(24.0) and torch_us == pytest.approx(9.0)
    assert len(syncs) == 2 * 2 * auto_module.EAGER_ROUNDS  # each timed block starts and ends synchronized
    faster, _, _ = auto_module.eager_prefers_torch(call(5.0), call(9.0), lambda: None)
    assert not faster


def test_eager_check_never_applies_off_the_gpu_or_when_disabled(monkeypatch):
    from blockscope.kernels import auto as auto_module

    x = torch.randn(4, 64)
    assert not auto_module._eager_candidate(x, x)
    monkeypatch.setenv(auto_module.EAGER_ENV, "0")
    assert not auto_module._eager_candidate(x, x)
    torch.testing.assert_close(softmax(x, variant="auto"), torch.softmax(x, -1))


def test_a_torch_entry_does_not_reach_inputs_far_larger_than_its_own(monkeypatch):
    table = {
        "format": auto.TABLE_FORMAT,
        "entries": [
            {"dtype": "bf16", "n_rows": 4096, "n_cols": 248, "variant": "torch", "tunables": {}},
            {
                "dtype": "bf16",
                "n_rows": 4096,
                "n_cols": 256,
                "variant": "multirow",
                "tunables": {"num_warps": 4, "rows_per_program": 4},
            },
        ],
    }
    monkeypatch.setattr(auto, "load_table", lambda gpu_name: table)
    assert auto.choose(4096, 200, torch.bfloat16, "GPU") == ("torch", {})  # launch-bound, as tuned
    assert auto.choose(4 * 4096, 248, torch.bfloat16, "GPU") == ("torch", {})  # within TORCH_REACH
    assert auto.choose(30000, 200, torch.bfloat16, "GPU") == ("multirow", {"num_warps": 4, "rows_per_program": 4})
    table["entries"] = table["entries"][:1]  # no Triton entry in the bucket: the heuristic, not torch
    assert auto.choose(30000, 200, torch.bfloat16, "GPU") == auto.heuristic_choice(30000, 200)


def test_repeat_calls_take_the_cached_choice_and_keep_every_check_that_matters(monkeypatch):
    """softmax_auto's fast path: an input seen before (shape, dtype, device) goes to the cached launcher without
    re-validation; tunables, a tensor subclass or an input that requires grad take the checked path."""
    from blockscope.kernels import auto as auto_module

    x = torch.randn(3, 64)
    calls = []

    def launcher(t, **tunables):
        calls.append(tunables)
        return torch.softmax(t, -1)

    monkeypatch.setitem(
        auto_module._FAST, (x.shape, x.dtype, x.device), auto_module._Seen(launcher, {"num_warps": 4}, None, False)
    )
    torch.testing.assert_close(auto_module.softmax_auto(x), torch.softmax(x, -1))
    assert calls == [{"num_warps": 4}]
    with pytest.raises(ValueError, match="unknown tunable"):
        auto_module.softmax_auto(x, num_warps=4)  # tunables: checked (auto takes none)
    with pytest.raises(RuntimeError, match="requires grad"):
        auto_module.softmax_auto(x.clone().requires_grad_())
    monkeypatch.setattr(auto_module, "_host_bound", lambda device: pytest.fail("no eager check without an eager key"))
    auto_module.softmax_auto(x)
    assert len(calls) == 2
    auto_module.clear_choices()
    assert not auto_module._FAST
