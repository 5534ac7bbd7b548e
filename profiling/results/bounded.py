"""A user's file or bytes with the size bounded before anything is parsed: the readers of imported and sidecar
files (ncu imports, Proton trees, Proton scope traces) treat every file as hostile."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_bounded(source: str | Path | bytes, label: str, max_bytes: int, error: type[Exception], allowed: str) -> bytes:
    """The bytes of `source` (a path or bytes), refusing more than `max_bytes` (checked on the file's size before
    reading); a missing file or too many bytes raise `error` with one line naming `label` and what is `allowed`.
    TypeError for other types."""
    if isinstance(source, bytes | bytearray):
        data = bytes(source)
    elif isinstance(source, str | Path):
        path = Path(source)
        if not path.is_file():
            raise error(f"{label}: no such file; allowed: {allowed}")
        size = path.stat().st_size
        if size > max_bytes:
            raise error(f"{label}: {size} bytes, larger than {max_bytes}; allowed: at most {max_bytes} bytes")
        data = path.read_bytes()
    else:
        raise TypeError(f"source is {type(source).__name__}; allowed: a path (str, Path) or bytes")
    if len(data) > max_bytes:
        raise error(f"{label}: {len(data)} bytes, larger than {max_bytes}; allowed: at most {max_bytes} bytes")
    return data


def load_json(source: str | Path | bytes, label: str, max_bytes: int, error: type[Exception], allowed: str) -> Any:
    """read_bounded, then JSON; a parse failure raises `error` too (one line)."""
    data = read_bounded(source, label, max_bytes, error, allowed)
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as problem:
        raise error(f"{label}: not JSON ({type(problem).__name__}); allowed: {allowed}") from None
