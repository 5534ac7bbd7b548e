"""Test setup: without CUDA, run Triton kernels on the CPU interpreter (must be set before `import triton`)."""

import os
import tempfile

import pytest

if "TRITON_INTERPRET" not in os.environ:
    import torch

    if not torch.cuda.is_available():
        os.environ["TRITON_INTERPRET"] = "1"

# The dashboard reads typed paths only under allowed folders (blockscope.paths.allowed_roots): the tests load files
# from pytest's temporary folders, and the dashboards they start (AppTest, the browser test's server) inherit this.
os.environ.setdefault("BLOCKSCOPE_ALLOWED_ROOTS", tempfile.gettempdir())


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


# The GPU machine has torch + triton but no streamlit/plotly: `make test-gpu` there skips the dashboard and export
# test modules instead of failing to import them. Here (`make test`) everything is installed and collected.
collect_ignore = [
    name
    for name, needs in {
        "test_app.py": ("streamlit", "plotly"),
        "test_browser.py": ("streamlit", "plotly", "playwright"),
        "test_app_controls.py": ("streamlit", "plotly"),
        "test_export.py": ("plotly", "kaleido"),
        "test_figures.py": ("plotly",),
        "test_backends_page.py": ("streamlit", "plotly"),
        "test_app_views.py": ("streamlit", "plotly"),
        "test_app_coldstart.py": ("streamlit", "plotly"),
    }.items()
    if not all(_importable(m) for m in needs)
]


def pytest_collection_modifyitems(config, items):
    import torch

    if torch.cuda.is_available():
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU (make test-gpu on the GPU machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)
