"""Shared CLI plumbing: one-line errors with exit status 2, never a traceback."""

from __future__ import annotations

import argparse
import os
import stat
import sys
from typing import NoReturn


class CLIError(Exception):
    """A user-facing CLI error; the message names the problem and what is allowed."""


class Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line on stderr and exit status 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)


_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def check_writable_file(text: str, flag: str = "--out") -> None:
    """CLIError when `text` names something other than a regular file or a new path (a FIFO would block the write
    until a reader came, a device would take the bytes elsewhere); checked by name, never opened. Directories are
    left to the caller, which says what it wants instead."""
    try:
        mode = os.stat(text).st_mode  # follows a symlink: what the write would reach
    except (OSError, ValueError):  # missing (to be created), or a name the OS refuses: the write says so
        return
    for test, kind in _KINDS:
        if test(mode):
            raise CLIError(f"{flag} {text} is {kind}; allowed: a regular file (or a new path)")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer; allowed: a positive integer") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value} is not positive; allowed: a positive integer")
    return value


MAX_SWEEP_N = 2**31 - 1  # the widest N any backend takes (the looped kernels' 32-bit column index)


def int_within(text: str, low: int, high: int) -> int:
    """`text` as an integer from `low` to `high`; ArgumentTypeError naming the range otherwise."""
    allowed = f"allowed: integers from {low:,} to {high:,}"
    stripped = text.strip()
    shown = stripped if len(stripped) <= 40 else stripped[:40] + "…"
    try:
        value = int(stripped) if len(stripped) <= 40 else None
    except ValueError:
        value = None
    if value is None:
        raise argparse.ArgumentTypeError(f"{shown!r} is not an integer; {allowed}")
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(f"{shown} is out of range; {allowed}")
    return value


def int_list_within(text: str, low: int, high: int, most: int | None = None) -> list[int]:
    """'128,256,1000' -> [128, 256, 1000], each from `low` to `high`, at most `most` of them."""
    parts = [part for part in text.split(",") if part.strip()]
    if most is not None and len(parts) > most:
        raise argparse.ArgumentTypeError(f"{len(parts):,} values; allowed: at most {most}")
    return [int_within(part, low, high) for part in parts]


MAX_LIST_VALUES = 64  # values in one --n / --rows list (and the Run sweep page's N list)
MAX_ROWS = 2**31 - 1  # the widest 1-D launch grid


def n_list(text: str) -> list[int]:
    """--n: up to MAX_LIST_VALUES integers from 1 to MAX_SWEEP_N (the same rule as the Run sweep page's N list)."""
    return int_list_within(text, 1, MAX_SWEEP_N, most=MAX_LIST_VALUES)


def rows_list(text: str) -> list[int]:
    """--rows: up to MAX_LIST_VALUES integers from 1 to MAX_ROWS."""
    return int_list_within(text, 1, MAX_ROWS, most=MAX_LIST_VALUES)


def int_list(text: str) -> list[int]:
    """'128,256,1000' -> [128, 256, 1000] (positive integers)."""
    return [positive_int(part) for part in text.split(",") if part.strip()]


def str_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]
