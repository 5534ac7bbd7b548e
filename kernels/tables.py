"""Where `auto`'s tuning tables live (no Triton import: kernels/launches.py reads this before any variant loads).

Shipped tables are kernels/tuned/<gpu key>.json; a user's own (`python -m profiling tune`) live in
$BLOCKSCOPE_CACHE_DIR/autotune (default ~/.cache/blockscope/autotune) and take precedence; a package in use
(kernels.aot.use_package) puts its tuned/ folder first.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

SHIPPED_DIR = Path(__file__).parent / "tuned"


def user_table_dir() -> Path:
    """$BLOCKSCOPE_CACHE_DIR/autotune, default ~/.cache/blockscope/autotune."""
    base = os.environ.get("BLOCKSCOPE_CACHE_DIR") or Path.home() / ".cache" / "blockscope"
    return Path(base) / "autotune"


def gpu_key(gpu_name: str) -> str:
    """'NVIDIA H200' -> 'nvidia-h200' (table file stem)."""
    return "-".join(gpu_name.lower().replace("_", " ").split())


def candidates(gpu_name: str | None, package_dirs: Sequence[Path] = ()) -> list[Path]:
    """The table files `auto` tries for a GPU name, first to last (packages', the user's, shipped); for None (no
    GPU) the first shipped table."""
    if gpu_name is None:
        return sorted(SHIPPED_DIR.glob("*.json"))[:1]
    stem = gpu_key(gpu_name) + ".json"
    return [*(Path(folder) / stem for folder in package_dirs), user_table_dir() / stem, SHIPPED_DIR / stem]


def table_path(gpu_name: str | None, package_dirs: Sequence[Path] = ()) -> Path | None:
    """The table file `auto` reads for a GPU name, or None (no table: the heuristic picks)."""
    return next((path for path in candidates(gpu_name, package_dirs) if path.is_file()), None)
