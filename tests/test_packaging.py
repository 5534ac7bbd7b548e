"""The wheel `pip install .` builds: one top-level package, the data the app loads, and a working command.

Builds offline (`pip wheel --no-deps --no-build-isolation --no-index`) from a copy of the checkout in a temporary
folder, so the checkout gets no build/ or egg-info and no stale build output leaks into the wheel. Then runs the
unpacked wheel from a folder outside the repository, so nothing resolves from the checkout's root folders.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from blockscope import paths

ROOT = Path(__file__).resolve().parent.parent
# what a build reads: pyproject.toml, the readme and license it names, and the mapped package folders
BUILD_INPUTS = ("pyproject.toml", "README.md", "LICENSE", "blockscope", "kernels", "profiling", "pages", "data")
# checkout-only folders that must never become packages of their own in site-packages
NOT_SHIPPED = ("kernels", "profiling", "pages", "data", "tests", "tools", "experiments", "docs")


def _setuptools_ok() -> bool:
    try:
        import setuptools
    except ImportError:
        return False
    return int(setuptools.__version__.split(".")[0]) >= 77


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not _setuptools_ok():
        pytest.skip("building offline needs setuptools>=77 in this environment (requirements-test.txt)")
    src = tmp_path_factory.mktemp("src")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "build", "*.egg-info")
    for name in BUILD_INPUTS:
        p = ROOT / name
        if p.is_dir():
            shutil.copytree(p, src / name, ignore=ignore)
        else:
            shutil.copy2(p, src / name)
    out = tmp_path_factory.mktemp("wheel")
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q"]
    proc = subprocess.run([*cmd, str(src), "-w", str(out)], capture_output=True, text=True, cwd=src, timeout=300)
    assert proc.returncode == 0, f"pip wheel failed:\n{proc.stdout}\n{proc.stderr}"
    wheels = list(out.glob("blockscope-*.whl"))
    assert len(wheels) == 1, f"expected one blockscope wheel in {out}, found {[w.name for w in out.iterdir()]}"
    return wheels[0]


@pytest.fixture(scope="module")
def names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as z:
        return set(z.namelist())


def _shipped_data() -> dict[str, Path]:
    """Every bundled file blockscope.paths names (files, and each file in the folders it names), by wheel path."""
    wanted: dict[str, Path] = {}
    for attr in dir(paths):
        value = getattr(paths, attr)
        if not attr.isupper() or not isinstance(value, Path):
            continue
        for base, prefix in ((paths.DATA_DIR, "blockscope/data"), (paths.TUNED_TABLE_DIR, "blockscope/kernels/tuned")):
            if value == base or not value.is_relative_to(base):
                continue
            files = [value] if value.is_file() else sorted(f for f in value.rglob("*") if f.is_file())
            for f in files:
                if "__pycache__" not in f.parts:
                    wanted[f"{prefix}/{f.relative_to(base).as_posix()}"] = f
    return wanted


def test_only_the_blockscope_package_at_top_level(names: set[str], wheel: Path) -> None:
    tops = {n.split("/", 1)[0] for n in names}
    dist_info = {t for t in tops if t.endswith(".dist-info")}
    assert tops - dist_info == {"blockscope"}, f"top-level entries in {wheel.name}: {sorted(tops)}"
    assert len(dist_info) == 1, f"expected one .dist-info, found {sorted(dist_info)}"
    bad = sorted(n for n in names if n.split("/", 1)[0] in NOT_SHIPPED)
    assert not bad, f"checkout-only folders at the top of the wheel, first: {bad[0]}"
    leaked = sorted(n for n in names if "/tests/" in n or "/tools/" in n or "/experiments/" in n)
    assert not leaked, f"tests/tools/experiments inside the package, first: {leaked[0]}"


def test_package_data_present(names: set[str]) -> None:
    required = {
        "blockscope/kernels/native_launch.cpp",
        "blockscope/kernels/tuned/nvidia-h200.json",
        "blockscope/data/h200_sweep.parquet",
        "blockscope/data/traces/index.json",
        "blockscope/data/README.md",
    }
    wanted = _shipped_data()
    assert any(w.startswith("blockscope/data/tuning/") for w in wanted), "paths.TUNING_LOG_DIR holds no tuning logs"
    missing = sorted((required | set(wanted)) - names)
    assert not missing, f"{len(missing)} shipped files missing from the wheel, first: {missing[0]}"
    for sub in ("kernels", "profiling", "profiling/measure", "profiling/views", "profiling/cli", "dashboard"):
        assert f"blockscope/{sub}/__init__.py" in names, f"blockscope/{sub}/__init__.py missing from the wheel"
    page_files = sorted(p.name for p in paths.PAGES_DIR.glob("*.py"))
    missing_pages = [f for f in page_files if f"blockscope/pages/{f}" not in names]
    assert page_files and not missing_pages, f"pages missing from the wheel: {missing_pages or 'pages/ is empty'}"


def test_data_holds_only_what_the_app_loads(names: set[str]) -> None:
    shipped = set(_shipped_data()) | {"blockscope/data/README.md", "blockscope/data/__init__.py"}
    data = {n for n in names if n.startswith("blockscope/data/") and "/__pycache__/" not in n}
    extra = sorted(n for n in data - shipped if not n.endswith("/__init__.py"))
    assert not extra, (
        f"{len(extra)} files in the wheel's data/ that no blockscope.paths name loads, first: {extra[0]} "
        "(one-off results belong in experiments/)"
    )


@pytest.mark.slow
def test_unpacked_wheel_runs_outside_the_checkout(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    env["PYTHONPATH"] = str(site)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300)

    where = run(
        "-c",
        "import blockscope, blockscope.kernels, blockscope.paths as p; "
        "print(blockscope.__file__); print(blockscope.kernels.__file__); print(p.BUNDLED_SWEEP)",
    )
    assert where.returncode == 0, where.stderr
    for line in where.stdout.split():
        assert Path(line).resolve().is_relative_to(site.resolve()), f"resolved from outside the wheel: {line}"

    helped = run("-m", "blockscope", "--help")
    assert helped.returncode == 0, f"`python -m blockscope --help` failed:\n{helped.stderr}"
    assert "occupancy" in helped.stdout, f"--help does not list the occupancy command:\n{helped.stdout}"

    occ = run("-m", "blockscope", "occupancy", "--regs", "32", "--num-warps", "4")
    assert occ.returncode == 0, f"`python -m blockscope occupancy` failed:\n{occ.stderr}"
    assert occ.stdout.strip(), "occupancy printed nothing"
    assert "Traceback" not in occ.stderr, occ.stderr
