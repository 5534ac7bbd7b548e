"""Kernel revision per row: source hashes of the variants' modules, stale rows, the sweep's stamping and resume."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from blockscope.profiling.measure.sweep import make_config, run_sweep
from blockscope.profiling.measure.timing import FakeClock
from blockscope.profiling.results import load_results, normalize, revision, save_results
from tests.test_sweep import ENV, FAST, fake_facts, fake_tracer


def test_module_files_follow_the_kernels_imports():
    names = {p.name for p in revision.module_files("teaching")}
    assert names == {"teaching.py", "exactexp.py", "_common.py", "plan.py"}
    assert "online.py" in {p.name for p in revision.module_files("splitrow")}  # splitrow imports online's helpers
    auto = {p.name for p in revision.module_files("auto")}
    assert {"registry.py", "teaching.py", "splitrow.py", "nvidia-h200.json"} <= auto  # every pick + the table
    with pytest.raises(ValueError, match="allowed: .*teaching"):
        revision.module_files("nope")


def test_files_hash_changes_with_any_file_and_is_short(tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("x = 1\n")
    b.write_text("y = 2\n")
    first = revision.files_hash([a, b], root=tmp_path)
    assert len(first) == revision.HASH_DIGITS and first == revision.files_hash([b, a], root=tmp_path)
    b.write_text("y = 3\n")
    assert revision.files_hash([a, b], root=tmp_path) != first


def test_hashes_differ_between_variants_and_peers_record_versions():
    hashes = {v: revision.kernel_source_hash(v) for v in ("teaching", "multirow", "online", "auto")}
    assert len(set(hashes.values())) == 4
    assert revision.kernel_source_hash("torch") == f"torch=={torch.__version__}"
    assert revision.kernel_source_hash("liger").startswith("liger-kernel==")
    assert revision.kernel_revision("abc", "3.6.0") == "abc@triton-3.6.0"
    assert revision.kernel_revision(None, None) == "unknown@triton-unknown"


def rows(**columns) -> pd.DataFrame:
    n = len(next(iter(columns.values())))
    base = {
        "dtype": ["fp16"] * n,
        "n_rows": [4] * n,
        "n_cols": [128] * n,
        "method": ["per_call_events"] * n,
        "median_us": [5.0] * n,
        "error": [""] * n,
    }
    return normalize(pd.DataFrame({**base, **columns}))


def test_stale_rows_differ_in_source_not_in_triton_version():
    current = {"teaching": "aaaa", "online": "bbbb", "torch": "torch==2.11.0"}
    df = rows(
        variant=["teaching", "teaching", "online", "online", "torch"],
        kernel_source_hash=["aaaa", "old0", None, "bbbb", "torch==2.10.0"],
        triton_version=["3.6.0", "3.6.0", "3.6.0", "3.7.0", "3.6.0"],
    )
    status = revision.kernel_status(df, current)
    assert list(status) == ["current", "stale", "unknown", "current", "other_version"]
    assert list(revision.stale_rows(df, current)) == [False, True, False, False, False]
    assert list(revision.other_triton_rows(df, "3.7.0")) == [True, True, True, False, True]
    notice = revision.revision_notice(df, current, triton_version="3.7.0")
    assert notice.stale and "1 row(s) (teaching)" in notice.text and "Triton 3.6.0" in notice.text
    assert "1 row(s) record no kernel revision" in notice.text
    table = revision.with_revision_columns(df, current)
    assert list(table.columns[:2]) == ["variant", "kernel"] and table["kernel_revision"].eq("unknown").all()


def test_other_triton_alone_is_reported_but_not_stale():
    current = {"teaching": "aaaa"}
    df = rows(variant=["teaching"] * 3, kernel_source_hash=["aaaa"] * 3, triton_version=["3.6.0"] * 3)
    assert not revision.stale_rows(df, current).any()
    notice = revision.revision_notice(df, current, triton_version="3.7.0")
    assert not notice.stale and "Triton 3.6.0 (here: 3.7.0)" in notice.text
    assert revision.revision_notice(df, current, triton_version="3.6.0") is None


def sweep_once(configs, out, **kw):
    options = {**FAST, "compile_facts": fake_facts, "tracer": fake_tracer, **kw}
    return run_sweep(configs, clock=FakeClock(tick_us=5.0, wall_tick_s=0.25), out=out, **options)


def test_sweep_stamps_revision_and_remeasures_a_changed_kernel(tmp_path):
    out = tmp_path / "s.parquet"
    configs = [make_config("teaching", "fp32", 4, 100), make_config("torch", "fp32", 4, 100)]
    table = sweep_once(configs, out, methods=["per_call_events"])
    teaching = table[table["variant"] == "teaching"].iloc[0]
    assert teaching["kernel_source_hash"] == revision.kernel_source_hash("teaching")
    assert teaching["kernel_revision"] == f"{teaching['kernel_source_hash']}@triton-{ENV['triton_version']}"
    assert table[table["variant"] == "torch"].iloc[0]["kernel_source_hash"].startswith("torch==")
    # the same tree: nothing to do; a row of an older teaching source: measured again, the old row kept
    assert sweep_once(configs, out, methods=["per_call_events"]).attrs["sweep"]["done"] == 0
    old = load_results(out)
    old.loc[old["variant"] == "teaching", "kernel_source_hash"] = "0123456789ab"
    save_results(old, out)
    again = sweep_once(configs, out, methods=["per_call_events"])
    assert again.attrs["sweep"]["done"] == 1 and len(again) == 3
    assert set(again[again["variant"] == "teaching"]["kernel_source_hash"]) == {
        "0123456789ab",
        revision.kernel_source_hash("teaching"),
    }
