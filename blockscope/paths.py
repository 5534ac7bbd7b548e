"""Where the files that Blockscope ships live, in a checkout and in an installed package alike.

Every bundled path is named here and nowhere else: the H200 dataset the dashboard opens by default, its Chrome
traces, the tuning logs behind `auto`'s table, and the compile-validation captures.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


def _beside_or_inside(name: str) -> Path:
    """`name` inside the installed package, else the checkout's root folder of that name."""
    inside = PACKAGE_DIR / name
    return inside if inside.is_dir() else PACKAGE_DIR.parent / name


DATA_DIR = _beside_or_inside("data")
KERNELS_DIR = _beside_or_inside("kernels")
PAGES_DIR = _beside_or_inside("pages")
IMPORT_ROOT = PACKAGE_DIR.parent  # the folder holding the `blockscope` package: PYTHONPATH for worker processes

ALLOWED_ROOTS_ENV = "BLOCKSCOPE_ALLOWED_ROOTS"  # more folders a typed path may name (os.pathsep-separated)


def allowed_roots() -> list[Path]:
    """The folders a path typed into the dashboard may point into: the working directory, the bundled data, and
    the folders listed in $BLOCKSCOPE_ALLOWED_ROOTS (resolved; missing ones left out)."""
    import os

    listed = [p for p in os.environ.get(ALLOWED_ROOTS_ENV, "").split(os.pathsep) if p.strip()]
    roots = []
    for folder in [Path.cwd(), DATA_DIR, *map(Path, listed)]:
        try:
            roots.append(folder.expanduser().resolve(strict=True))
        except OSError:
            continue
    return list(dict.fromkeys(roots))


def confined(path: str | Path, roots: list[Path] | None = None) -> Path | None:
    """`path` resolved (symlinks followed) when it lies inside one of `roots` (default allowed_roots()), else None."""
    try:
        resolved = Path(path).expanduser().resolve()
    except (OSError, RuntimeError, ValueError):  # ValueError: a NUL byte in the name
        return None
    for root in allowed_roots() if roots is None else roots:
        if resolved == root or root in resolved.parents:
            return resolved
    return None


BUNDLED_SWEEP = DATA_DIR / "h200_sweep.parquet"
BUNDLED_SWEEP_REPEAT = DATA_DIR / "h200_sweep_repeat.parquet"
BUNDLED_BACKENDS = DATA_DIR / "h200_backends.parquet"
BUNDLED_WARPS_GRID = DATA_DIR / "h200_warps_grid.parquet"
BUNDLED_NUMERICS = DATA_DIR / "numerics_h200.parquet"
BUNDLED_COLDSTART = DATA_DIR / "h200_coldstart.parquet"  # `python -m profiling coldstart` rows of an H200
BUNDLED_FUSED = DATA_DIR / "h200_fused.csv"  # tools/bench_fused.py on an H200; may be absent
BUNDLED_TRACES = DATA_DIR / "traces"
NCU_VALIDATION = DATA_DIR / "ncu_validation.csv"
DRIVER_OCCUPANCY = DATA_DIR / "occupancy_h200.csv"
OFFLINE_VS_LIVE = DATA_DIR / "offline_vs_live.csv"
TUNING_LOG_DIR = DATA_DIR / "tuning"
TUNED_TABLE_DIR = KERNELS_DIR / "tuned"
