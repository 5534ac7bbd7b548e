"""tools/restamp_auto_rows.py: auto rows get this tree's hash only when their hash proves the sources and the
given tables give the same picks (CPU)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

from blockscope.kernels import auto
from blockscope.profiling.results import load_results, revision, save_results
from tools import restamp_auto_rows

SWEEP = Path(__file__).resolve().parents[1] / "data" / "h200_sweep.parquet"


def _setup(tmp_path: Path, table: dict) -> tuple[Path, Path, str]:
    used = tmp_path / "table.json"
    used.write_text(json.dumps(table))
    old_hash = restamp_auto_rows.hash_with_table(used)
    df = load_results(SWEEP)
    df = df[df["variant"].isin(["auto", "torch"])].head(60).copy()
    df.loc[df["variant"] == "auto", "kernel_source_hash"] = old_hash
    results = save_results(df, tmp_path / "rows.parquet")
    return results, used, old_hash


def _run(monkeypatch, *args: str) -> int:
    monkeypatch.setattr(sys, "argv", ["restamp_auto_rows.py", *args])
    return restamp_auto_rows.main()


def test_rows_of_a_table_with_the_same_picks_get_this_trees_hash(tmp_path, monkeypatch):
    shipped = auto.load_table("NVIDIA H200")
    extra = {"dtype": "fp16", "n_rows": 3, "n_cols": 3, "variant": "torch", "tunables": {}}  # never a swept shape
    results, used, old_hash = _setup(tmp_path, {**shipped, "entries": [*shipped["entries"], extra]})
    assert old_hash != revision.kernel_source_hash("auto")
    assert _run(monkeypatch, str(results), "--table-used", str(used)) == 0
    df = pd.read_parquet(results)
    assert set(df.loc[df["variant"] == "auto", "kernel_source_hash"]) == {revision.kernel_source_hash("auto")}
    assert not revision.stale_rows(df).any()


def test_a_table_that_picks_otherwise_or_an_unproven_hash_changes_nothing(tmp_path, monkeypatch):
    shipped = auto.load_table("NVIDIA H200")
    other = [{**e, "variant": "torch", "tunables": {}} if e["n_rows"] == 4096 else e for e in shipped["entries"]]
    results, used, old_hash = _setup(tmp_path, {**shipped, "entries": other})
    before = pd.read_parquet(results)
    assert _run(monkeypatch, str(results), "--table-used", str(used)) == 1  # picks differ
    unrelated = tmp_path / "unrelated.json"
    unrelated.write_text(json.dumps({**shipped, "made_at": "elsewhere"}))
    assert _run(monkeypatch, str(results), "--table-used", str(unrelated)) == 1  # the rows' hash is not from it
    pd.testing.assert_frame_equal(pd.read_parquet(results), before)


def test_per_row_restamps_the_unchanged_picks_and_leaves_the_changed_stale(tmp_path, monkeypatch):
    shipped = auto.load_table("NVIDIA H200")
    df = load_results(SWEEP)
    shapes = df[(df["variant"] == "auto")].head(60)[["dtype", "n_rows", "n_cols"]].drop_duplicates()
    first = shapes.iloc[0]  # this shape's entry picks torch in the "used" table: its rows must stay stale
    other = [
        {**e, "variant": "torch", "tunables": {}}
        if (e["dtype"], e["n_rows"], e["n_cols"]) == (first["dtype"], first["n_rows"], first["n_cols"])
        else e
        for e in shipped["entries"]
    ]
    results, used, old_hash = _setup(tmp_path, {**shipped, "entries": other})
    assert _run(monkeypatch, str(results), "--table-used", str(used), "--per-row") == 0
    out = pd.read_parquet(results)
    stale = revision.stale_rows(out)
    changed = (out["n_cols"] == first["n_cols"]) & (out["dtype"] == first["dtype"]) & (out["variant"] == "auto")
    assert changed.any() and stale[changed].all(), "the shape whose pick changed must stay stale"
    assert not stale[~changed].any(), "every other auto row picks the same config: this tree's hash"


def test_same_kernels_restamp_needs_provenance_and_identical_kernels():
    """tools/restamp_same_kernels.py: a row passes only with the measuring tree's hash and the same kernel (or
    the same refusal, or the same auto pick) in both trees."""
    from tools import restamp_same_kernels as same

    ptx = ".visible .entry k()\n{\n\t.loc\t1 10 4\n\tret;\n}\n\t.section\t.debug_info\n{\n.b8 1\n}\n"
    moved = ptx.replace(".loc\t1 10 4", ".loc\t1 99 4").replace(".b8 1", ".b8 7")  # other lines, same code
    assert same.kernel_fingerprint(ptx) == same.kernel_fingerprint(moved)
    assert same.kernel_fingerprint(ptx) != same.kernel_fingerprint(ptx.replace("ret;", "exit;"))
    rows = [
        {
            "variant": "warprows",
            "dtype": d,
            "n_rows": "4096",
            "n_cols": n,
            "tunables": "{}",
            "gpu_name": "NVIDIA H200",
            "kernel_source_hash": h,
        }
        for d, n, h in (
            ("fp16", "1536", "old"),
            ("bf16", "1536", "old"),
            ("fp32", "1536", "other"),
            ("fp32", "2048", "old"),
        )
    ]
    keys = [same.config_key(r) for r in rows]
    old = {"hashes": {"warprows": "old"}, "kernels": {keys[0]: "aa", keys[1]: "bb", keys[2]: "cc"}}
    new = {"hashes": {"warprows": "new"}, "kernels": {keys[0]: "aa", keys[1]: "b2", keys[2]: "cc"}}
    # fp16: same kernel; bf16: changed; fp32 'other': not measured by the old tree; fp32 N=2048: no fingerprint
    assert same.restampable(rows, old, new) == [True, False, False, False]


def test_rows_left_stale_by_an_earlier_restamp_keep_their_hash(tmp_path, monkeypatch):
    """A file whose auto rows carry two hashes (the given table's, and an older one an earlier --per-row left
    stale): the first get this tree's hash, the others are kept as they were."""
    shipped = auto.load_table("NVIDIA H200")
    extra = {"dtype": "fp16", "n_rows": 3, "n_cols": 3, "variant": "torch", "tunables": {}}
    results, used, _ = _setup(tmp_path, {**shipped, "entries": [*shipped["entries"], extra]})
    df = pd.read_parquet(results)
    older = df.index[df["variant"] == "auto"][:3]
    df.loc[older, "kernel_source_hash"] = "0123456789ab"
    save_results(df, results)
    assert _run(monkeypatch, str(results), "--table-used", str(used), "--per-row") == 0
    after = pd.read_parquet(results)
    assert set(after.loc[older, "kernel_source_hash"]) == {"0123456789ab"}
    rest = after.index[(after["variant"] == "auto") & ~after.index.isin(older)]
    assert set(after.loc[rest, "kernel_source_hash"]) == {revision.kernel_source_hash("auto")}


def test_restamp_same_launch_proves_each_row_or_leaves_it_stale(tmp_path, monkeypatch):
    """tools/restamp_same_launch.py: a stale auto row whose launch this tree repeats (same pick, same plan fields,
    the picked variant's code unchanged since its run) gets this tree's hash; a changed plan, a changed variant or a
    run without the variant's own rows leave it stale."""
    from tools import restamp_same_launch

    df = load_results(SWEEP)
    run = df.loc[df["variant"] == "auto", "run_id"].iloc[0]
    auto_rows = df[(df["variant"] == "auto") & (df["run_id"] == run) & (df["dtype"] == "fp16")]
    auto_rows = auto_rows[auto_rows["n_cols"].isin([1024, 4096])].copy()
    own = df[(df["run_id"] == run) & df["variant"].isin(["warprows", "stagedrows"])].head(4).copy()
    own["kernel_source_hash"] = [revision.kernel_source_hash(v) for v in own["variant"]]
    auto_rows["kernel_source_hash"] = "0" * 12  # stale: auto's host path changed since
    rows = pd.concat([auto_rows, own], ignore_index=True)
    first = rows.index[rows["variant"] == "auto"][0]
    rows.loc[first, "num_warps"] = int(rows.loc[first, "num_warps"]) * 2  # a launch this tree does not make
    path = save_results(rows, tmp_path / "rows.parquet")
    monkeypatch.setattr(sys, "argv", ["restamp_same_launch.py", str(path)])
    assert restamp_same_launch.main() == 0
    after = load_results(path)
    status = revision.kernel_status(after)
    is_auto = after["variant"] == "auto"
    assert status[first] == "stale"
    assert (status[is_auto].drop(first) == "current").all() and is_auto.sum() >= 4
    # the picked variant's code changed since the run: nothing proven
    rows["kernel_source_hash"] = rows["kernel_source_hash"].where(rows["variant"] == "auto", "1" * 12)
    path = save_results(rows, tmp_path / "rows2.parquet")
    proven, lines = restamp_same_launch.restamp(load_results(path))
    assert not proven.any() and any("code changed since the run" in line for line in lines)
