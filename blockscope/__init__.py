"""Blockscope: how GPU softmax kernels map a tensor onto GPU work units, measured and drawn.

One import package. Its subpackages live in the repository's root folders and are mapped into it by
pyproject.toml (`blockscope.kernels` = kernels/, `blockscope.profiling` = profiling/, `blockscope.pages` = pages/,
bundled data = data/); docs/architecture.md says why. In a source checkout that is not installed, the same names
resolve from the checkout's root folders (below), so `python -m profiling ...` works from the repo root.
"""

from __future__ import annotations

from pathlib import Path

__version__ = "0.2.0"

_HERE = Path(__file__).resolve().parent
if not (_HERE / "kernels").is_dir() and (_HERE.parent / "kernels" / "__init__.py").is_file():
    # a checkout: kernels/, profiling/ and pages/ sit beside this folder, not inside it
    __path__.append(str(_HERE.parent))  # noqa: F821 - the package's own search path
