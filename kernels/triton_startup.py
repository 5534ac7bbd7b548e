"""Triton's one-time start-up on a thread, while `auto`'s first call imports its variant modules.

A process's first Triton launch pays, besides the compile: importing Triton (~0.3 s on the H200 host), Triton's
cache key (`triton_key()`: a sha256 of libtriton.so and Triton's own sources, ~0.4 s, before any compile or cache
lookup) and the driver with its C host module (`driver.active`: a gcc build of cuda_utils, ~0.35 s, where Triton's
cache has none) (experiments/2026-12-04-first-call). None of that depends on the kernel. So when `auto`'s first call
of a shape finds no launch record (kernels/launches.py: a JIT or store launch follows), `begin()` starts those
three on threads (hashing, file reads and the compiler subprocess release the GIL) and the caller goes on
importing and choosing. kernels/aot.py's load, which every GPU launch asks before it would compile, waits for the
driver (`wait_driver()`) and, where the store has no kernel and the JIT compiles, for the key (`wait_key()`): the
launch path finds both made and never makes the driver a second time. A store load (no compile) does not wait for
the key, which it never needs.

Nothing here changes what is compiled or launched. BLOCKSCOPE_TRITON_STARTUP=0 turns it off. Errors on the thread
are kept (`error()`) and otherwise ignored: the launch path then does the same work itself, as before.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable

ENV = "BLOCKSCOPE_TRITON_STARTUP"
WAIT_LIMIT_S = 120.0  # the longest wait() blocks (a driver build that hangs must not hang the caller)

_LOCK = threading.Lock()
_ASKED = False  # begin() was called in this process (it starts at most once, and is asked once)
_THREAD: threading.Thread | None = None  # imports Triton, starts _HASHING, makes the driver
_HASHING: list[threading.Thread] = []  # computes triton_key()
_ERROR: list[str] = []


def enabled() -> bool:
    """Whether begin() may start anything: not turned off, not the CPU interpreter."""
    return os.environ.get(ENV, "1") != "0" and os.environ.get("TRITON_INTERPRET", "0") in ("", "0")


def driver_ready() -> bool:
    """Whether Triton's driver is already made in this process (nothing left to start)."""
    module = sys.modules.get("triton.runtime.driver")
    config = getattr(module, "driver", None)
    return getattr(config, "_active", None) is not None


def begin() -> bool:
    """Start Triton's import, cache key and driver on threads; whether it started now. Only the process's first
    call decides (later calls return False at once: callers on a hot path may call it every time)."""
    global _ASKED, _THREAD
    if _ASKED:
        return False
    _ASKED = True
    if not enabled():
        return False
    with _LOCK:
        if _THREAD is not None or driver_ready():
            return False
        _THREAD = threading.Thread(target=_start, name="blockscope-triton-startup", daemon=True)
        _THREAD.start()
    return True


def started() -> bool:
    """Whether begin() started the start-up in this process."""
    return _THREAD is not None


def _start() -> None:
    _keep(_start_up)


def _start_up() -> None:
    from triton.runtime.cache import triton_key  # imports triton

    hashing = threading.Thread(target=_keep, args=(triton_key,), name="blockscope-triton-key", daemon=True)
    _HASHING.append(hashing)
    hashing.start()  # functools.lru_cache keeps the key for the compile's cache lookup
    from triton.runtime import driver

    driver.active  # noqa: B018 - makes the driver (and builds its host module where Triton's cache has none)


def _keep(step: Callable[[], object]) -> None:
    """Run `step`, keeping its error (one line) instead of raising: the launch path redoes what failed."""
    try:
        step()
    except Exception as error:
        _ERROR.append(f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}")


def _join(thread: threading.Thread | None) -> None:
    if thread is not None and thread.is_alive() and thread is not threading.current_thread():
        thread.join(WAIT_LIMIT_S)


def wait_driver() -> None:
    """Block until the start-up's import and driver are done (at most WAIT_LIMIT_S); at once when none runs. A load
    from the kernel store needs only these."""
    _join(_THREAD)


def wait_key() -> None:
    """wait_driver(), then until Triton's cache key is computed (at most WAIT_LIMIT_S more): a compile needs it."""
    _join(_THREAD)
    _join(_HASHING[0] if _HASHING else None)


def error() -> str | None:
    """What failed on a start-up thread, if anything (the launch path did that work itself)."""
    return _ERROR[0] if _ERROR else None
