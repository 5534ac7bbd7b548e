"""Where files that belong to a results file live beside it, and which of them a dashboard visitor may read."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from blockscope import paths


def proton_dir_for(results_path: str | Path) -> Path:
    """The Proton profiles' folder beside a results file: 'run.parquet' -> 'run_proton/'."""
    results_path = Path(results_path)
    return results_path.with_name(f"{results_path.stem}_proton")


def proton_files(results_paths: Iterable[str | Path | None], pattern: str, limit: int) -> list[Path]:
    """Files matching `pattern` (a glob under '<stem>_proton/') beside each results path (None entries skipped),
    sorted, at most `limit`: only where the results path and each file (symlinks followed) lie inside the folders
    the dashboard may read (blockscope.paths.allowed_roots), since the paths come from what a visitor typed."""
    found: set[Path] = set()
    for path in results_paths:
        inside = paths.confined(path) if path else None
        if inside is None:
            continue
        folder = proton_dir_for(inside)
        if folder.is_dir():
            found.update(f for f in folder.glob(pattern) if f.is_file() and paths.confined(f) is not None)
    return sorted(found)[:limit]
