"""Every number and text input on the pages, driven with huge, negative and non-numeric values (issue 34 item 11):
the page names the allowed range and never raises (docs/trust.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from blockscope.demo import synthetic_results
from blockscope.profiling.results import save_results
from blockscope.profiling.views import dashboard_data as dd
from tests.test_app import (
    _compile_cache,  # noqa: F401 - autouse: one compile cache per session
    load_path,
    new_app,
)
from tests.texts import plain

HOSTILE_NUMBERS = (10**30, 10**18, 2**63, -(10**18), -5, 0)
NUMBER_PAGES = ("occupancy.py", "auto.py", "kernel_evidence.py", "masked_lanes.py")


@pytest.fixture(scope="module")
def results_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("inputs") / "synthetic.parquet"
    save_results(synthetic_results(n_values=(256, 1024, 4096), dtypes=("fp16",)), path)
    return path


def errors(at) -> list[str]:
    return [plain(e.value) for e in at.error]


@pytest.mark.parametrize("page", NUMBER_PAGES)
def test_number_inputs_refuse_out_of_range_values_and_name_the_range(results_file: Path, page: str) -> None:
    at = load_path(new_app(), results_file)
    at.switch_page(f"pages/{page}").run()
    keys = [w.key for w in at.number_input]
    assert keys, f"{page}: no number input"
    for key in keys:
        widget = at.number_input(key=key)
        low, high, initial = widget.min, widget.max, widget.value
        assert f"Allowed: {int(low):,} to {int(high):,}." in widget.help, (key, widget.help)
        for value in HOSTILE_NUMBERS:
            at.number_input(key=key).set_value(value).run()
            assert not at.exception, (key, value, [e.message for e in at.exception])
            shown = at.number_input(key=key).value
            assert low <= shown <= high, (key, value, shown)
        at.number_input(key=key).set_value(initial).run()


@pytest.mark.parametrize(
    ("row", "dtype", "expected"),
    [
        ("1e400", "fp32", "allowed: finite numbers"),
        ("1, nan, 2", "fp32", "allowed: finite numbers"),
        ("-inf 0", "fp32", "allowed: finite numbers"),
        ("70000", "fp16", "outside the fp16 range; allowed: finite numbers from -65504 to 65504"),
        ("1, two", "fp32", "'two' is not a number"),
        (" , ", "fp32", "no numbers"),
        (" ".join(["1"] * 2000), "fp32", "allowed: 1 to 1,024"),
        (str(10**30), "fp16", "outside the fp16 range"),
    ],
)
def test_the_worked_example_refuses_rows_it_cannot_run(row: str, dtype: str, expected: str) -> None:
    at = new_app()
    at.switch_page("pages/masked_lanes.py").run()
    at.selectbox(key="lanes_dtype").set_value(dtype).run()
    at.text_input(key="lanes_row").input(row).run()
    assert not at.exception, [e.message for e in at.exception]
    assert any(expected in e for e in errors(at)), errors(at)


def test_parse_row_accepts_the_seed_row_and_names_the_limit() -> None:
    assert dd.parse_row("[0, 1, 2, 3, 4]", "fp16") == [0.0, 1.0, 2.0, 3.0, 4.0]
    with pytest.raises(ValueError, match="allowed: 1 to 1,024"):
        dd.parse_row("0 " * (dd.ROW_MAX_VALUES + 1))


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch):
    """The Run sweep page as on a GPU machine (it only builds configs here; nothing is run)."""
    from blockscope.pages import _common as ui

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a, **k: "Test GPU")
    ui.cuda_available.clear()
    yield
    ui.cuda_available.clear()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (str(10**30), "is out of range; allowed: integers from 1 to 2,147,483,647"),
        ("256, 1000000000000000000", "is out of range; allowed: integers from 1 to 2,147,483,647"),
        ("-5", "is out of range; allowed: integers from 1 to 2,147,483,647"),
        ("0", "is out of range"),
        ("abc", "'abc' is not an integer; allowed: integers from 1 to 2,147,483,647"),
        ("1.5", "is not an integer"),
        ("9" * 200, "is not an integer"),
        (", ".join(map(str, range(1, 100))), "99 values; allowed: at most 64"),
    ],
)
def test_run_sweep_n_values_name_the_allowed_range(fake_gpu, text: str, expected: str) -> None:
    at = new_app()
    at.switch_page("pages/run_sweep.py").run()
    assert not at.exception, [e.message for e in at.exception]
    at.text_input(key="sw_n").input(text).run()
    assert not at.exception, [e.message for e in at.exception]
    assert any(expected in e for e in errors(at)), errors(at)
    assert not any("configs**" in m.value for m in at.markdown), "a sweep was offered for refused N values"


@pytest.mark.parametrize("text", ["bad\x00name.parquet", "x" * 5000 + ".parquet", "../" * 50 + "etc/passwd", "?*[]"])
def test_typed_paths_that_cannot_name_a_file_are_one_error(text: str) -> None:
    at = new_app()
    at.sidebar.radio(key="data_source").set_value("Path on this machine").run()
    at.sidebar.text_input(key="typed_path").input(text).run()
    assert not at.exception, [e.message for e in at.exception]
    if at.sidebar.text_input(key="typed_path").value == text:  # longer than the widget's max_chars: never set
        assert [plain(e.value) for e in at.sidebar.error], "no error for a path that cannot be read"


@pytest.mark.parametrize("text", ["bad\x00folder", "x" * 5000, "../../.."])
def test_catalog_folders_that_cannot_be_read_are_one_error(text: str) -> None:
    at = new_app()
    at.sidebar.radio(key="data_source").set_value("Catalog folder").run()
    at.sidebar.text_input(key="catalog_dir").input(text).run()
    assert not at.exception, [e.message for e in at.exception]
