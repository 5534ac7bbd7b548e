"""Hostile files and names (issue 34): each test fails on the code before its fix."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pandas as pd
import pytest

from blockscope.demo import synthetic_results
from blockscope.profiling.measure.trace import read_trace_index
from blockscope.profiling.results import MAX_EXPANDED_MB, ResultsError, load_results, save_results
from blockscope.profiling.views import dashboard_data as dd
from blockscope.profiling.views import figures
from blockscope.profiling.views.export import safe_csv
from tests.texts import plain


def _trace(path: Path) -> Path:
    path.write_text(json.dumps({"traceEvents": []}), encoding="utf-8")
    return path


def test_a_trace_index_cannot_offer_a_file_outside_its_folder(tmp_path: Path) -> None:
    folder = tmp_path / "run_traces"
    folder.mkdir()
    secret = _trace(tmp_path / "secret.json")
    _trace(folder / "ok.json")
    (folder / "link.json").symlink_to(secret)  # a symlink out of the folder
    index = [{"file": "../secret.json"}, {"file": str(secret)}, {"file": "link.json"}, {"file": "ok.json"}]
    (folder / "index.json").write_text(json.dumps(index), encoding="utf-8")
    offered = read_trace_index(folder)
    assert [e["file"] for e in offered] == ["ok.json"]
    assert all(Path(e["path"]).resolve().parent == folder.resolve() for e in offered)


def test_a_dictionary_encoded_parquet_that_would_expand_to_gigabytes_is_refused_unexpanded(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = synthetic_results()
    rows = 200_000
    big = table.iloc[[0] * rows].reset_index(drop=True)
    frame = pa.Table.from_pandas(big, preserve_index=False)
    long_text = "x" * 2**20  # one 1 MB name, 200k rows: 200 GB as Python strings
    column = pa.DictionaryArray.from_arrays(pa.array([0] * rows, pa.int32()), pa.array([long_text]))
    frame = frame.set_column(frame.schema.get_field_index("variant"), "variant", column)
    path = tmp_path / "bomb.parquet"
    pq.write_table(frame, path, use_dictionary=True, compression="zstd")
    assert path.stat().st_size < 20 * 2**20
    with pytest.raises(ResultsError, match=f"expand|{MAX_EXPANDED_MB}|at most"):
        load_results(path)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "results.parquet"
    os.mkfifo(fifo)
    result: list[BaseException | None] = []

    def load() -> None:
        try:
            load_results(fifo)
            result.append(None)
        except BaseException as error:  # noqa: BLE001 - the test looks at what was raised
            result.append(error)

    worker = threading.Thread(target=load, daemon=True)
    worker.start()
    worker.join(5)
    if worker.is_alive():  # unblock the reader so the test process can end
        with open(fifo, "wb"):
            pass
        pytest.fail("loading a FIFO blocked")
    assert isinstance(result[0], ResultsError) and "not a regular file" in str(result[0])


def test_exported_csv_cells_never_start_a_formula() -> None:
    variants = ['=HYPERLINK("http://x")', "+1", "@sum", "-2", "ok"]
    data = pd.DataFrame({"variant": variants, "median_us": [1.0, -2.0, 3, 4, 5]})
    text = safe_csv(data)
    lines = text.splitlines()[1:]
    assert all(not line.startswith(("=", "+", "@", "-")) for line in lines)
    assert "'=HYPERLINK" in text and ",-2.0" in text  # numbers keep their sign


def test_long_names_make_short_deterministic_file_names() -> None:
    name = figures.safe_name("heatmap", "v" * 400, "fp16")
    assert len(name) <= figures.MAX_NAME_CHARS and name == figures.safe_name("heatmap", "v" * 400, "fp16")
    assert name != figures.safe_name("heatmap", "v" * 399 + "w", "fp16")


def test_control_characters_in_a_gpu_name_never_reach_a_title() -> None:
    df = synthetic_results().assign(gpu_name="NVIDIA\x00H200\x1b[31m")
    assert not any(ord(c) < 32 for c in figures.gpu_label(df))


def test_markdown_from_a_file_is_shown_as_text() -> None:
    hostile = "![x](http://host/p.png) [click](http://e)"
    shown = dd.md(hostile)
    assert "](" not in shown.replace("\\]\\(", "") and shown.count("\\") >= 8


def test_a_hostile_gpu_name_is_escaped_on_the_overview(tmp_path: Path) -> None:
    from streamlit.testing.v1 import AppTest

    path = tmp_path / "hostile.parquet"
    save_results(synthetic_results().assign(gpu_name="![x](http://host/p.png)"), path)
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=120)
    at.run()
    at.sidebar.radio(key="data_source").set_value("Path on this machine").run()
    at.sidebar.text_input(key="typed_path").set_value(str(path)).run()
    assert not at.exception, [e.message for e in at.exception]
    texts = [m.value for m in at.markdown] + [h.value for h in at.subheader]
    assert any("http" in t for t in texts)
    assert not any("](http://host" in t for t in texts), "a file's GPU name rendered as a markdown image"


def test_a_typed_path_outside_the_allowed_folders_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from streamlit.testing.v1 import AppTest

    from blockscope import paths

    outside = tmp_path / "elsewhere.parquet"
    save_results(synthetic_results(), outside)
    monkeypatch.delenv(paths.ALLOWED_ROOTS_ENV, raising=False)  # only the working directory and the bundled data
    assert paths.confined(outside) is None and paths.confined(paths.BUNDLED_SWEEP) is not None
    assert paths.confined("/etc/passwd") is None
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=120)
    at.run()
    at.sidebar.radio(key="data_source").set_value("Path on this machine").run()
    at.sidebar.text_input(key="typed_path").set_value(str(outside)).run()
    assert not at.exception
    assert any("outside the folders this dashboard reads" in plain(e.value) for e in at.sidebar.error)
    monkeypatch.setenv(paths.ALLOWED_ROOTS_ENV, str(tmp_path))  # a setting widens it
    assert paths.confined(outside) == outside.resolve()


def test_a_traces_folder_linking_out_of_the_allowed_folders_is_not_offered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A results file inside the allowed folders whose `<stem>_traces/` is a link to a folder outside them: the
    Kernel evidence page offers the bundled traces, none from behind the link."""
    import json

    from streamlit.testing.v1 import AppTest

    from blockscope import paths

    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    allowed.mkdir()
    (outside / "run_traces").mkdir(parents=True)
    (outside / "run_traces" / "secret.json").write_text(json.dumps({"traceEvents": []}))
    results = allowed / "run.parquet"
    save_results(synthetic_results(), results)
    (allowed / "run_traces").symlink_to(outside / "run_traces", target_is_directory=True)
    monkeypatch.setenv(paths.ALLOWED_ROOTS_ENV, str(allowed))
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=120)
    at.run()
    at.sidebar.radio(key="data_source").set_value("Path on this machine").run()
    at.sidebar.text_input(key="typed_path").set_value(str(results)).run()
    at.switch_page(str(paths.PAGES_DIR / "kernel_evidence.py")).run()
    assert not at.exception, [e.message for e in at.exception]
    offered = [str(o) for box in at.selectbox if box.key == "ev_trace" for o in box.options]
    assert offered and not any("secret" in o for o in offered), offered


@pytest.mark.parametrize("capability", ["7.5", "7.0", "12.1"])
def test_pages_survive_data_from_an_arch_the_calculator_does_not_know(tmp_path: Path, capability: str) -> None:
    from streamlit.testing.v1 import AppTest

    from blockscope import paths

    path = tmp_path / "other_gpu.parquet"
    save_results(synthetic_results().assign(compute_capability=capability, gpu_name="Other GPU"), path)
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=120)
    at.run()
    at.sidebar.radio(key="data_source").set_value("Path on this machine").run()
    at.sidebar.text_input(key="typed_path").set_value(str(path)).run()
    for page in ("occupancy.py", "masked_lanes.py", "overview.py"):
        at.switch_page(str(paths.PAGES_DIR / page)).run()
        assert not at.exception, (page, [e.message for e in at.exception])


def test_drift_out_where_nothing_can_be_written_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """--out under a regular file (as unwritable as a read-only folder, for root too): one line, no traceback."""
    from blockscope.profiling.cli.main import main

    first, second = tmp_path / "a.parquet", tmp_path / "b.parquet"
    save_results(synthetic_results(), first)
    save_results(synthetic_results(seed=1), second)
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder", encoding="utf-8")
    assert main(["drift", str(first), str(second), "--out", str(blocker / "d.csv")]) == 2
    err = capsys.readouterr().err
    assert "cannot write" in err and "Traceback" not in err and err.count("\n") == 1


def test_a_csv_cut_at_a_line_boundary_is_refused(tmp_path: Path) -> None:
    path = save_results(synthetic_results(), tmp_path / "run.csv")
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    assert len(load_results(path)) == len(lines) - 2  # the row-count line and the header
    path.write_text("".join(lines[:-5]), encoding="utf-8")  # five rows lost, cut cleanly after a newline
    with pytest.raises(ResultsError, match="truncated"):
        load_results(path)
    legacy = tmp_path / "legacy.csv"  # a CSV without the count (older files, other tools) still loads
    legacy.write_text("".join(lines[1:]), encoding="utf-8")
    assert len(load_results(legacy)) == len(lines) - 2


def test_save_refuses_what_load_would_refuse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from blockscope.profiling import results

    table = synthetic_results()
    monkeypatch.setattr(results, "MAX_ROWS", len(table) - 1)
    for suffix in (".csv", ".parquet"):
        with pytest.raises(ResultsError, match="row limit"):
            save_results(table, tmp_path / f"over{suffix}")
        assert not (tmp_path / f"over{suffix}").exists()
