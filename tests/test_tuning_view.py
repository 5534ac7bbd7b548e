"""auto's tuning view (views/tuning_view.py): the explained pick agrees with kernels.auto.choose, the tuner's log
and candidates, and the comparison with other backends."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest
import torch

from blockscope import kernels
from blockscope.demo import synthetic_backends
from blockscope.kernels import auto
from blockscope.profiling.views import tuning_view as tv

H200 = "NVIDIA H200"


@pytest.fixture(autouse=True)
def _no_user_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BLOCKSCOPE_CACHE_DIR", str(tmp_path))
    auto.clear_choices()
    return tmp_path


@pytest.mark.parametrize("dtype", ["fp16", "bf16", "fp32"])
def test_explained_pick_is_what_auto_chooses(dtype: str) -> None:
    gpu_only_seen: list[bool] = []
    for n_rows in (1, 4096, 65536):
        for n_cols in (3, 100, 128, 129, 200, 1000, 1024, 3000, 5000, 8193, 50000, 65536, 100000, 262144, 1048576):
            torch_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[dtype]
            pick = tv.explain(dtype, n_rows, n_cols, H200)  # what a process on the H200 picks, also here
            expected = auto.choose(n_rows, n_cols, torch_dtype, H200, on_that_gpu=True)
            assert (pick.variant, pick.tunables) == (expected[0], dict(expected[1])), (dtype, n_rows, n_cols)
            assert pick.agrees and pick.rule
            here = auto.choose(n_rows, n_cols, torch_dtype, H200)  # this process (the CPU interpreter in CI)
            assert (pick.here_variant, pick.here_tunables) == (here[0], dict(here[1]))
            gpu_only_seen.append(pick.variant != "torch" and kernels.get_variant(pick.variant).gpu_only)
            local = tv.explain(dtype, n_rows, n_cols, H200, on_that_gpu=False)
            assert (local.variant, local.tunables) == (here[0], dict(here[1])) and local.agrees
            if pick.entry is not None:
                assert f"N={pick.entry['n_cols']:,}" in pick.rule
                assert auto.next_power_of_2(int(pick.entry["n_cols"])) == auto.next_power_of_2(n_cols)
                assert pick.considered["chosen"].sum() == 1
    assert any(gpu_only_seen), "the H200 table picks Gluon kernels somewhere: the explanation must show them"


def test_rules_for_borrowed_torch_unfit_and_missing_entries(_no_user_tables: Path) -> None:
    directory = _no_user_tables / "autotune"
    directory.mkdir()
    entries = [
        {
            "dtype": "fp16",
            "n_rows": 4096,
            "n_cols": 1000,
            "variant": "teaching",
            "tunables": {"num_warps": 4},
            "median_us": 5.0,
            "torch_us": 6.0,
        },
        {
            "dtype": "fp16",
            "n_rows": 4096,
            "n_cols": 256,
            "variant": "torch",
            "tunables": {},
            "median_us": 4.0,
            "torch_us": 4.0,
        },
        {
            "dtype": "fp16",
            "n_rows": 4096,
            "n_cols": 4096,
            "variant": "multirow",
            "tunables": {"rows_per_program": 100000, "num_warps": 4},
            "median_us": 9.0,
            "torch_us": 9.5,
        },
    ]
    (directory / "test-gpu.json").write_text(json.dumps({"format": 1, "gpu": "Test GPU", "entries": entries}))
    assert tv.table_path("Test GPU") == directory / "test-gpu.json"
    borrowed = tv.explain("bf16", 4096, 1000, "Test GPU")
    assert borrowed.variant == "teaching" and "borrowed from fp16" in borrowed.rule and borrowed.agrees
    torch_pick = tv.explain("fp16", 4096, 250, "Test GPU")
    assert torch_pick.variant == "torch" and "torch.softmax faster" in torch_pick.rule and torch_pick.agrees
    unfit = tv.explain("fp16", 4096, 4000, "Test GPU")
    assert unfit.entry is not None and "does not fit" in unfit.rule and unfit.agrees
    assert (unfit.variant, unfit.tunables) == ("multirow", {"num_warps": 4})  # its num_warps, default rows
    missing = tv.explain("fp32", 4096, 70000, "Test GPU")
    assert missing.entry is None and "no entry with BLOCK_SIZE 131,072" in missing.rule and missing.agrees
    none = tv.explain("fp16", 4096, 1000, "Unknown GPU")
    assert "No tuning table for Unknown GPU" in none.rule and none.agrees


def test_bad_shapes_name_what_is_allowed() -> None:
    with pytest.raises(ValueError, match="allowed: fp16, bf16, fp32"):
        tv.explain("int8", 1, 1, H200)
    with pytest.raises(ValueError, match="at least 1"):
        tv.explain("fp16", 0, 128, H200)
    with pytest.raises(ValueError, match="columns must be from 1 to"):
        tv.explain("fp16", 1, auto.MAX_N + 1, H200)


def test_tune_log_candidates_match_the_table_entries() -> None:
    by_shape: dict[tuple, list[dict]] = {}
    for path in tv.TUNE_LOG_PATHS:  # a later log's records of a shape replace an earlier log's
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt") as handle:
            found_here: dict[tuple, list[dict]] = {}
            for line in handle:
                if line.strip():
                    record = json.loads(line)
                    found_here.setdefault((record["dtype"], record["n_rows"], record["n_cols"]), []).append(record)
        by_shape.update(found_here)
    lines = [record for records in by_shape.values() for record in records]
    log = tv.read_tune_logs()
    assert len(log) == len(lines)
    assert tv.log_sources(log, "fp16", 4096, 32768) == ["h200_challenge_staged_lean16.jsonl"]
    assert tv.log_sources(log, "fp16", 4096, 1000) == ["h200_challenge_tiebreak16.jsonl"]
    assert tv.log_sources(log, "fp32", 4096, 3000) == ["h200_retune_from_capture.jsonl"]  # the capture reversed it
    assert tv.log_sources(log, "fp32", 4096, 65536) == ["h200_retune_fp32_hi_2026-12-04.jsonl"]  # every variant
    assert tv.log_sources(log, "fp32", 4096, 131072) == ["h200_retune_from_resume.jsonl"]  # the resume reversed it
    assert tv.log_sources(log, "fp32", 4096, 12000) == ["h200_retune_2026-12-04.jsonl"]  # the exact-exp retune
    assert tv.log_sources(log, "fp16", 4096, 12000) == ["h200_challenge_stagedrows_cs.jsonl"]
    assert tv.log_sources(log, "bf16", 4096, 1024) == ["h200_challenge_bf16_exp.jsonl"]
    assert tv.log_sources(log, "fp16", 4096, 32769) == ["h200_challenge_vecrows.jsonl"]  # odd N against vecrows
    assert tv.log_sources(log, "fp32", 4096, 6001) == ["h200_odd_grid_fp32.jsonl"]  # the odd grid's fp32 part
    table = tv.entries_table(auto.load_table(H200))
    assert len(tv.measured_shapes(log)) == len(table)
    for entry in table.itertuples():
        found = tv.candidates(log, entry.dtype, entry.n_rows, entry.n_cols)
        ran = [
            r
            for r in lines
            if (r["dtype"], r["n_rows"], r["n_cols"]) == (entry.dtype, entry.n_rows, entry.n_cols)
            and not r["error"]
            and math.isfinite(r["median_us"])
        ]
        fastest = min(ran, key=lambda r: r["median_us"])
        kept = found[found["chosen"]] if found["chosen"].any() else found.iloc[:1]  # a tie-break's choice, or rank 1
        assert (kept.iloc[0]["variant"], kept.iloc[0]["tunables"]) == (entry.variant, entry.tunables)
        assert kept.iloc[0]["median_us"] == pytest.approx(entry.median_us)
        assert found.iloc[0]["median_us"] == pytest.approx(fastest["median_us"])
        assert found.iloc[0]["vs_fastest"] == 1.0 and found["rank"].tolist() == list(range(1, len(found) + 1))
    pick = tv.explain("fp32", 4096, 1024, H200)  # a Triton (not Gluon) pick: the interpreter runs it here
    assert pick.variant == "teaching"
    found = tv.candidates(log, "fp32", 4096, 1024, pick)
    assert found["picked"].sum() == 1 and found.loc[found["picked"], "variant"].item() == pick.variant


def test_a_tie_break_is_shown_and_its_choice_kept(tmp_path: Path) -> None:
    """A log written with autotune.break_ties: the tied configs' replay us and the one kept are columns, ranks stay
    by the flushed median, and the figure labels both."""
    from blockscope.profiling.views import figures

    base = {"dtype": "fp16", "n_rows": 4096, "n_cols": 2048, "torch_us": 14.0, "error": "", "seconds": 0.1}
    records = [
        {**base, "variant": "torch", "tunables": {}, "median_us": 14.0},
        {**base, "variant": "teaching", "tunables": {"num_warps": 4}, "median_us": 12.74, "tiebreak_us": 8.3},
        {
            **base,
            "variant": "warprows",
            "tunables": {"num_warps": 4, "threads_per_row": 32},
            "median_us": 12.88,
            "tiebreak_us": 6.6,
            "chosen": True,
        },
    ]
    path = tmp_path / "tie.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    found = tv.candidates(tv.read_tune_log(path), "fp16", 4096, 2048)
    assert found["variant"].tolist() == ["teaching", "warprows", "torch"]
    assert found["chosen"].tolist() == [False, True, False]
    assert found["tiebreak_us"].iloc[:2].tolist() == [8.3, 6.6] and math.isnan(found["tiebreak_us"].iloc[2])
    text = figures.candidates_figure(found.assign(picked=found["chosen"]), "t").data[0].text
    assert "replay 6.60 µs: kept" in text[1] and "replay 8.30 µs" in text[2] and "replay" not in text[0]


def test_bad_tune_log_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no such file"):
        tv.read_tune_log(tmp_path / "missing.jsonl")
    bad = tmp_path / "log.jsonl"
    bad.write_text('{"variant": "torch"}\n')
    with pytest.raises(ValueError, match="not a tuning log.*lacks"):
        tv.read_tune_log(bad)
    bad.write_text("not json\n")
    with pytest.raises(ValueError, match="not a tuning log"):
        tv.read_tune_log(bad)


def test_backend_comparison_is_relative_to_auto() -> None:
    table = synthetic_backends()
    compared = tv.backend_comparison(table, "fp16", 4096, 1000, "cuda_graph")
    rows = table[
        (table["dtype"] == "fp16")
        & (table["n_cols"] == 1000)
        & (table["method"] == "cuda_graph")
        & (table["error"] == "")
    ]
    times = rows.groupby("variant")["median_us"].min()
    assert set(compared["variant"]) == set(times.index)
    for row in compared.itertuples():
        assert row.vs_auto == pytest.approx(times[row.variant] / times["auto"])
    assert compared["median_us"].is_monotonic_increasing
    assert tv.backend_comparison(table, "fp16", 4096, 5000, "cuda_graph").empty
    assert tv.nearest_measured_n(table, "fp16", 4096, 5000) == [1001, 4096]  # measured: 128, 1000, 1001, 4096, ...


def test_native_replay_status_names_why_it_is_not_in_use(monkeypatch) -> None:
    from blockscope.kernels import native

    state, text = tv.native_replay_status()
    if not torch.cuda.is_available():
        assert state == "no GPU" and "no CUDA GPU" in text
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(native, "load", lambda: None)
    monkeypatch.setattr(native, "load_error", lambda: "not built (python -m profiling native --build)")
    state, text = tv.native_replay_status()
    assert state == "not in use" and "not built" in text and "make native" in text
    monkeypatch.setattr(native, "load", lambda: object())
    state, text = tv.native_replay_status()
    assert state == "in use" and "loaded" in text
