"""profiling.auto_view: auto's tuning table, its pick for a typed shape (with the entry behind it), the tuner's
candidates for that entry and the comparison with other backends."""

from __future__ import annotations

import gzip
import json
import math

import pytest
import torch

from kernels import auto
from profiling import auto_view
from tests.synthetic import synthetic_results


@pytest.fixture(autouse=True)
def _no_user_tables(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BLOCKSCOPE_CACHE_DIR", str(tmp_path))  # only the shipped tables


def shipped_entries() -> list[dict]:
    return json.loads((auto.SHIPPED_DIR / "nvidia-h200.json").read_text())["entries"]


def test_tuning_table_has_every_entry_with_its_speedup() -> None:
    facts, table = auto_view.tuning_table("NVIDIA H200")
    entries = shipped_entries()
    assert facts["gpu"] == "NVIDIA H200" and len(table) == len(entries)
    first = entries[0]
    row = table[(table["dtype"] == first["dtype"]) & (table["n_cols"] == first["n_cols"])
                & (table["n_rows"] == first["n_rows"])].iloc[0]
    assert row["speedup_vs_torch"] == pytest.approx(first["torch_us"] / first["median_us"])
    assert auto_view.tuning_table("No Such GPU")[1].empty


@pytest.mark.parametrize("n_cols, dtype", [(5000, "fp16"), (129, "fp16"), (1000, "bf16"), (100_000, "fp32")])
def test_pick_is_autos_choice_and_names_the_nearest_entry_of_its_bucket(n_cols: int, dtype: str) -> None:
    chosen = auto_view.pick(4096, n_cols, dtype)
    variant, tunables = auto.choose(4096, n_cols, {"fp16": torch.float16, "bf16": torch.bfloat16,
                                                   "fp32": torch.float32}[dtype], "NVIDIA H200")
    assert (chosen.variant, chosen.tunables) == (variant, tunables)
    bucket = 1 << (n_cols - 1).bit_length()
    same = [e for e in shipped_entries() if e["dtype"] == dtype and 1 << (e["n_cols"] - 1).bit_length() == bucket
            and (e["n_cols"] % 16 == 0) == (n_cols % 16 == 0)]
    assert same, "the shipped table covers these shapes"
    nearest = min(same, key=lambda e: (abs(math.log2(e["n_cols"]) - math.log2(n_cols)),
                                       abs(math.log2(e["n_rows"]) - math.log2(4096))))
    assert (chosen.entry["n_cols"], chosen.entry["n_rows"]) == (nearest["n_cols"], nearest["n_rows"])
    assert f"N={nearest['n_cols']:,}" in chosen.how


def test_pick_without_a_table_is_the_heuristic() -> None:
    chosen = auto_view.pick(4096, 5000, "fp16", gpu_name="No Such GPU")
    assert chosen.entry is None and "heuristic" in chosen.how
    assert (chosen.variant, chosen.tunables) == auto.heuristic_choice(4096, 5000)


def test_pick_rejects_bad_shapes_and_dtypes() -> None:
    with pytest.raises(ValueError, match="N=0; allowed: an integer from 1 to"):
        auto_view.pick(4096, 0, "fp16")
    with pytest.raises(ValueError, match="dtype='fp8'; allowed: fp16, bf16, fp32"):
        auto_view.pick(4096, 1000, "fp8")


def test_candidates_are_the_tuners_log_for_the_entry_fastest_first() -> None:
    log = auto_view.load_tune_log()
    if log is None:
        pytest.skip("no tuner log bundled")
    chosen = auto_view.pick(4096, 129, "fp16")
    table = auto_view.candidates_for(log, chosen)
    with gzip.open(auto_view.TUNE_LOG_PATH, "rt") as handle:
        lines = [json.loads(line) for line in handle]
    here = [line for line in lines if (line["dtype"], line["n_rows"], line["n_cols"])
            == (chosen.entry["dtype"], chosen.entry["n_rows"], chosen.entry["n_cols"])]
    assert len(table) == len(here) > 1
    fastest = min((line for line in here if not line["error"]), key=lambda line: line["median_us"])
    assert table.iloc[0]["median_us"] == pytest.approx(fastest["median_us"]) and table.iloc[0]["vs_best"] == 1.0
    assert table["picked"].sum() == 1
    assert table.loc[table["picked"], "variant"].iloc[0] == chosen.variant
    assert auto_view.candidates_for(None, chosen).empty


def test_backends_at_compares_every_backend_with_auto() -> None:
    df = synthetic_results(n_values=(1024, 4096), variants=("torch", "teaching"))
    df = df.assign(variant=df["variant"].replace({"teaching": "auto"}))
    table = auto_view.backends_at(df, "fp16", 1024, "cuda_graph")
    timed = df[(df["dtype"] == "fp16") & (df["n_cols"] == 1024) & (df["method"] == "cuda_graph")
               & (df["error"].fillna("") == "")]
    auto_us = float(timed[timed["variant"] == "auto"]["median_us"].min())
    torch_us = float(timed[timed["variant"] == "torch"]["median_us"].min())
    row = table.set_index("variant")
    assert row.loc["auto", "vs_auto"] == 1.0
    assert row.loc["torch", "vs_auto"] == pytest.approx(torch_us / auto_us)
    assert auto_view.backends_at(df, "fp16", 5000, "cuda_graph").empty
