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

BUNDLED_SWEEP = DATA_DIR / "h200_sweep.parquet"
BUNDLED_SWEEP_REPEAT = DATA_DIR / "h200_sweep_repeat.parquet"
BUNDLED_BACKENDS = DATA_DIR / "h200_backends.parquet"
BUNDLED_WARPS_GRID = DATA_DIR / "h200_warps_grid.parquet"
BUNDLED_NUMERICS = DATA_DIR / "numerics_h200.parquet"
BUNDLED_TRACES = DATA_DIR / "traces"
NCU_VALIDATION = DATA_DIR / "ncu_validation.csv"
DRIVER_OCCUPANCY = DATA_DIR / "occupancy_h200.csv"
OFFLINE_VS_LIVE = DATA_DIR / "offline_vs_live.csv"
TUNING_LOG_DIR = DATA_DIR / "tuning"
TUNED_TABLE_DIR = KERNELS_DIR / "tuned"
