"""Values from a loaded results file (GPU, variant, run, host names) never render as markdown or HTML on any page
(docs/trust.md, issue 34 item 8): every markdown-rendered field of every element, and every text of every figure,
is checked for live image/link syntax and raw HTML tags."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from blockscope import paths
from blockscope.demo import synthetic_results
from blockscope.profiling.results import save_results
from tests.test_app import (
    _compile_cache,  # noqa: F401 - autouse: one compile cache per session
    load_path,
    new_app,
)

IMAGE = "![x](http://evil/p.png)"
HTML = "<img src=x onerror=alert(1)>"
LINK = "[a](javascript:alert(1))"
PAGES = sorted(p.name for p in paths.PAGES_DIR.glob("*.py") if not p.name.startswith("_"))
# fields that Streamlit renders as markdown: element bodies, labels, tooltips, radio/pills options and captions
MARKDOWN_FIELDS = {"body", "label", "help", "captions"}
MARKDOWN_OPTIONS = {"radio", "button_group"}
_CODE = re.compile(r"(?<!\\)(`+)(.+?)(?<!\\)\1", re.S)
_LIVE = re.compile(r"(?<!\\)\]\s*(?<!\\)\(|(?<!\\)<\s*(img|a|script|iframe)\b|(?<!\\)\]\s*\\\(", re.I)


def hostile_file(folder: Path) -> Path:
    """A small synthetic results file of two runs on two GPUs whose names are markdown/HTML payloads."""
    table = synthetic_results(n_values=(256, 1024, 1025, 4096), dtypes=("fp16",))
    table["variant"] = table["variant"].replace({"online": IMAGE, "persistent": HTML, "multirow": LINK})
    first = table.assign(gpu_name=f"H200 {IMAGE} {HTML}", run_id=f"run {LINK}", host_name=HTML, driver_version=IMAGE)
    second = table.assign(gpu_name=f"B200 {LINK}", run_id=f"run {IMAGE}", triton_version=HTML, limiter=IMAGE)
    path = folder / "hostile.parquet"
    save_results(pd.concat([first, second], ignore_index=True), path)
    return path


def live_markup(text: str) -> str | None:
    """The first live image/link syntax or raw HTML tag in markdown `text` (code spans show text literally)."""
    found = _LIVE.search(_CODE.sub("", text))
    return None if found is None else text[max(0, found.start() - 40) : found.end() + 40]


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def rendered(node: object) -> Iterator[tuple[str, str]]:
    """(element type, text) for every markdown-rendered text under `node` and every string of every figure."""
    proto = getattr(node, "proto", None)
    kind = str(getattr(node, "type", ""))
    if kind == "plotly_chart" and proto is not None:
        for text in _strings(json.loads(proto.spec)):
            yield "plotly", text.replace("](", "")  # figures render HTML tags, not markdown
    elif proto is not None and hasattr(proto, "ListFields"):
        for block in ("expandable", "tab"):
            if block in proto.DESCRIPTOR.fields_by_name and proto.HasField(block):
                yield block, getattr(proto, block).label
        if kind not in ("dataframe", "arrow_data_frame", "code", "text", "json"):
            for field, value in proto.ListFields():
                if field.name in MARKDOWN_FIELDS or (field.name == "options" and kind in MARKDOWN_OPTIONS):
                    repeated = not isinstance(value, (str, bool, int, float)) and not hasattr(value, "DESCRIPTOR")
                    for item in value if repeated else [value]:
                        text = item if isinstance(item, str) else getattr(item, "content", None)
                        if isinstance(text, str):
                            yield f"{kind}.{field.name}", text
    for child in getattr(node, "children", {}).values():
        yield from rendered(child)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return hostile_file(tmp_path_factory.mktemp("hostile"))


@pytest.mark.parametrize("page", PAGES)
def test_no_file_value_renders_as_markdown_or_html(hostile: Path, page: str) -> None:
    at = load_path(new_app(), hostile)
    at.switch_page(f"pages/{page}").run()
    assert not at.exception, [e.message for e in at.exception]
    texts = list(rendered(at._tree))
    live = [(kind, hit) for kind, text in texts if (hit := live_markup(text))]
    assert not live, live
    if page == "overview.py":
        assert any("evil" in text for _, text in texts), "the hostile GPU name is shown (as text)"


def test_figure_text_keeps_its_own_tags_and_escapes_the_rest() -> None:
    from blockscope.profiling.views.figures import escape_text

    assert escape_text("a<br>b <b>c</b> <sup>2</sup>") == "a<br>b <b>c</b> <sup>2</sup>"
    assert escape_text(HTML) == "&lt;img src=x onerror=alert(1)&gt;"
    assert escape_text("<a href='http://evil'>x</a>") == "&lt;a href='http://evil'&gt;x&lt;/a&gt;"
