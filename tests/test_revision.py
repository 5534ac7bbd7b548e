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


SOURCE = '''"""module docstring"""
import triton


@triton.jit
def kernel(x_ptr, n: int, BLOCK: tl.constexpr) -> None:
    """kernel docstring"""
    x = tl.load(x_ptr + tl.arange(0, BLOCK), mask=tl.arange(0, BLOCK) < n, other=float("-inf"))  # a comment


class Plan:
    rows: int = 1
'''


def test_code_hash_is_the_same_on_every_python_and_moves_with_the_code(tmp_path):
    """The GPU machine runs Python 3.12, whose ast.dump prints `type_params=[]` on every def and class (3.13 drops
    empty fields): the canonical form must not depend on that, but must on any code change."""
    import ast

    tree = ast.parse(SOURCE)
    base = revision.canonical_dump(tree)
    for node in ast.walk(tree):  # what 3.12's parser adds
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            node.type_params = []
            node._fields = (*type(node)._fields, "type_params")
    assert revision.canonical_dump(tree) == base
    assert "docstring" not in revision.code_bytes(_write(tmp_path, SOURCE)).decode()
    assert "comment" not in revision.code_bytes(_write(tmp_path, SOURCE)).decode()
    for edit in ('float("-inf")', "BLOCK: tl.constexpr", "rows: int = 1"):
        changed = SOURCE.replace(edit, edit.replace("inf", "nan").replace("BLOCK:", "BLOCK2:").replace("1", "2"))
        assert changed != SOURCE
        assert revision.code_bytes(_write(tmp_path, changed)) != revision.code_bytes(_write(tmp_path, SOURCE)), edit


def _write(folder, text: str):
    path = folder / "k.py"
    path.write_text(text)
    return path


def test_rehash_tool_recognises_python_312_hashes_of_the_capture(tmp_path):
    """tools.rehash_rows' emulation of 3.12's ast.dump reproduces, from the kernels of commit 436562d, the hashes the
    GPU machine (Python 3.12) wrote into the 2026-12-04 capture; the canonical scheme gives other ones."""
    import io
    import subprocess
    import tarfile

    from blockscope import paths
    from tools import rehash_rows

    command = ["git", "-C", str(paths.IMPORT_ROOT), "archive", "436562d", "kernels"]
    archive = subprocess.run(command, capture_output=True, check=False)
    if archive.returncode:
        pytest.skip("commit 436562d is not in this clone's history (a shallow clone)")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(tmp_path, filter="data")
    hashes = rehash_rows.hashes_at(tmp_path / "kernels", "ast-dump-py312")
    recorded = {
        "teaching": "bf1659d97c41",
        "warprows": "6ba2bd13d45a",
        "tinyrows": "73e902c60bd7",
        "auto": "a17234595482",
    }
    assert {v: hashes[v][0] for v in recorded} == recorded
    assert all(hashes[v][1] != recorded[v] for v in recorded)
    assert "type_params" not in revision.canonical_dump(__import__("ast").parse("def f(): pass"))


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


def test_fused_op_rows_compare_with_their_kernels_module():
    """An op sweep's Blockscope rows (variant 'blockscope') carry kernels/masked.py's or ragged.py's hash: current
    when it is this tree's, stale when not (they were 'other_version' before, whatever their hash)."""
    import pandas as pd

    masked, ragged = revision.op_source_hash("masked_softmax"), revision.op_source_hash("ragged_softmax")
    assert masked != ragged
    df = pd.DataFrame(
        {
            "op": ["masked_softmax", "ragged_softmax", "ragged_softmax", "softmax"],
            "variant": ["blockscope", "blockscope", "nested", "teaching"],
            "kernel_source_hash": [masked, "0123456789ab", "torch==0.0", revision.kernel_source_hash("teaching")],
        }
    )
    assert list(revision.kernel_status(df)) == ["current", "stale", "other_version", "current"]
