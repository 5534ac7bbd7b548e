"""Catalog: DuckDB over the results Parquet files of a folder; foreign files listed with why; SQL; CLI."""

from __future__ import annotations

import pandas as pd
import pytest

pytest.importorskip("duckdb")

from blockscope.demo import synthetic_results  # noqa: E402
from blockscope.profiling.cli.main import main  # noqa: E402
from blockscope.profiling.results import save_results  # noqa: E402
from blockscope.profiling.results.catalog import CATALOG_COLUMNS, CatalogError, catalog, query  # noqa: E402


@pytest.fixture
def folder(tmp_path):
    a = synthetic_results(n_values=(256, 1024), dtypes=("fp16",), variants=("torch", "teaching"), seed=0)
    b = synthetic_results(n_values=(4096,), dtypes=("fp32",), variants=("torch",), seed=1, run_id="run-b")
    b["gpu_uuid"] = "GPU-1"
    save_results(a, tmp_path / "a.parquet")
    (tmp_path / "nested").mkdir()
    save_results(b, tmp_path / "nested" / "b.parquet")
    save_results(a, tmp_path / "a.csv")  # CSV is not catalogued
    pd.DataFrame({"x": [1, 2]}).to_parquet(tmp_path / "foreign.parquet")
    (tmp_path / "truncated.parquet").write_bytes((tmp_path / "a.parquet").read_bytes()[:300])
    outside = tmp_path.parent / f"{tmp_path.name}-outside.parquet"
    save_results(a, outside)
    (tmp_path / "link.parquet").symlink_to(outside)  # leads outside the folder: left out
    return tmp_path, a, b


def test_catalog_lists_results_and_foreign_files(folder) -> None:
    path, a, b = folder
    table = catalog(path).set_index("file")
    assert list(table.reset_index().columns) == list(CATALOG_COLUMNS)
    assert sorted(table.index) == ["a.parquet", "foreign.parquet", "nested/b.parquet", "truncated.parquet"]
    assert table.loc["a.parquet", "status"] == "results" and table.loc["a.parquet", "rows"] == len(a)
    assert table.loc["nested/b.parquet", "rows"] == len(b)
    assert table.loc["nested/b.parquet", "run_ids"] == "run-b" and table.loc["nested/b.parquet", "gpu_uuids"] == "GPU-1"
    assert table.loc["a.parquet", "methods"] == ", ".join(sorted(a["method"].unique()))
    assert table.loc["a.parquet", "torch_versions"] == ", ".join(sorted(a["torch_version"].dropna().unique()))
    assert pd.isna(table.loc["a.parquet", "gpu_uuids"])  # a file without the machine record
    assert table.loc["foreign.parquet", "status"].startswith("not a results file: no variant, dtype")
    assert table.loc["truncated.parquet", "status"].startswith("not a results file: unreadable Parquet")


def test_query_over_every_results_file(folder) -> None:
    path, a, b = folder
    counts = query(path, "SELECT run_id, count(*) AS n FROM results GROUP BY run_id ORDER BY run_id")
    expected = pd.concat([a, b])["run_id"].value_counts().sort_index()
    assert counts["n"].tolist() == expected.tolist()
    files = query(path, "SELECT DISTINCT filename FROM results ORDER BY 1")["filename"].tolist()
    assert [f.rsplit("/", 1)[-1] for f in files] == ["a.parquet", "b.parquet"]


@pytest.mark.parametrize(("sql", "message"), [("SELECT nope FROM results", "--query failed"), ("  ", "empty --query")])
def test_bad_query_is_one_line(folder, sql: str, message: str) -> None:
    with pytest.raises(CatalogError, match=message) as caught:
        query(folder[0], sql)
    assert "\n" not in str(caught.value)


def test_not_a_folder(tmp_path) -> None:
    with pytest.raises(CatalogError, match="not a directory"):
        catalog(tmp_path / "missing")


def test_cli(folder, capsys) -> None:
    path = folder[0]
    assert main(["catalog", str(path), "--csv"], "profiling") == 0
    out = pd.read_csv(__import__("io").StringIO(capsys.readouterr().out))
    assert len(out) == 4 and (out["status"] == "results").sum() == 2
    assert main(["catalog", str(path), "--query", "SELECT count(*) AS n FROM results"], "profiling") == 0
    assert "n" in capsys.readouterr().out
    assert main(["catalog", str(path / "missing")], "profiling") == 2
    err = capsys.readouterr().err
    assert "not a directory" in err and err.count("\n") == 1
