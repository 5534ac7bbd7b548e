"""Folders of evidence kept beside a results file (files that are not rows): Proton profiles."""

from __future__ import annotations

from pathlib import Path


def proton_dir_for(results_path: str | Path) -> Path:
    """The Proton profiles' folder beside a results file: 'run.parquet' -> 'run_proton/'."""
    results_path = Path(results_path)
    return results_path.with_name(f"{results_path.stem}_proton")
