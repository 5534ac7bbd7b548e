"""Shared CLI plumbing: one-line errors with exit status 2, never a traceback."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn


class CLIError(Exception):
    """A user-facing CLI error; the message names the problem and what is allowed."""


class Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line on stderr and exit status 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer; allowed: a positive integer") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value} is not positive; allowed: a positive integer")
    return value


def int_list(text: str) -> list[int]:
    """'128,256,1000' -> [128, 256, 1000] (positive integers)."""
    return [positive_int(part) for part in text.split(",") if part.strip()]


def str_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]
