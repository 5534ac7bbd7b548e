"""Temporary files and folders that a killed run leaves behind, reclaimed by the next run that makes its own.

Every temporary path Blockscope writes carries its writer's pid right after a fixed prefix: files
`.<name>.<pid>.<random>.tmp` beside the file they replace, folders `<prefix><pid>-<random>`. `reclaim_stale(parent,
prefix)` deletes those whose pid no longer runs on this machine (a live writer's, e.g. a concurrent sweep's, stay;
a reused pid only delays the cleanup). Symlinks are removed, never followed. Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["make_dir", "pid_alive", "reclaim_stale", "temp_path", "temporary_dir"]


def pid_alive(pid: int) -> bool:
    """True when a process with this pid exists on this machine (or cannot be told: counted as alive)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def reclaim_stale(parent: str | os.PathLike, prefix: str) -> list[Path]:
    """Delete the entries of `parent` named `<prefix><pid><. or ->...` whose pid is not running; the removed paths."""
    pattern = re.compile(re.escape(prefix) + r"(\d+)[.-]")
    removed: list[Path] = []
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return removed
    for entry in entries:
        match = pattern.match(entry.name)
        if not match or pid_alive(int(match.group(1))):
            continue
        path = Path(entry.path)
        with contextlib.suppress(OSError):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(path)
            else:
                path.unlink()
            removed.append(path)
    return removed


def make_dir(parent: str | os.PathLike, prefix: str) -> Path:
    """A new private (0700) folder `<parent>/<prefix><pid>-<random>`, after reclaiming dead runs' folders."""
    Path(parent).mkdir(parents=True, exist_ok=True)
    reclaim_stale(parent, prefix)
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=parent))


def temp_path(path: str | os.PathLike) -> Path:
    """`.<name>.<pid>.<random>.tmp` beside `path` (one per writer and call), after reclaiming dead writers' ones."""
    path = Path(path)
    reclaim_stale(path.parent, f".{path.name}.")
    return path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")


@contextlib.contextmanager
def temporary_dir(prefix: str, parent: str | os.PathLike | None = None) -> Iterator[Path]:
    """make_dir under `parent` (default: the system temp folder) for the block, deleted after it; a killed
    process's folder is reclaimed by the next temporary_dir of the same prefix."""
    path = make_dir(parent if parent is not None else tempfile.gettempdir(), prefix)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
