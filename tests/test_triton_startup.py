"""kernels/triton_startup.py: Triton's start-up on a thread, begun once, awaited before compiles and store loads."""

from __future__ import annotations

import threading
import time

import pytest
import triton.runtime
import triton.runtime.cache  # imported here, under the test session's TRITON_INTERPRET=1 (tests/conftest.py)

from blockscope.kernels import aot, triton_startup


@pytest.fixture
def fresh(monkeypatch):
    """A process state in which begin() has not run yet, the interpreter off."""
    monkeypatch.setattr(triton_startup, "_THREAD", None)
    monkeypatch.setattr(triton_startup, "_HASHING", [])
    monkeypatch.setattr(triton_startup, "_ERROR", [])
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    monkeypatch.delenv(triton_startup.ENV, raising=False)
    return monkeypatch


def test_it_starts_once_and_wait_joins_it(fresh):
    calls = []
    release = threading.Event()
    fresh.setattr(triton_startup, "_start", lambda: (calls.append(1), release.wait(5)))
    fresh.setattr(triton_startup, "driver_ready", lambda: False)
    assert triton_startup.begin() and triton_startup.started()
    assert not triton_startup.begin()  # once per process
    release.set()
    triton_startup.wait_driver()
    assert calls == [1] and not triton_startup._THREAD.is_alive()


def test_wait_is_bounded(fresh):
    fresh.setattr(triton_startup, "WAIT_LIMIT_S", 0.2)
    fresh.setattr(triton_startup, "_start", lambda: time.sleep(3))
    fresh.setattr(triton_startup, "driver_ready", lambda: False)
    triton_startup.begin()
    started = time.perf_counter()
    triton_startup.wait_key()
    assert time.perf_counter() - started < 2


@pytest.mark.parametrize(("variable", "value"), [("TRITON_INTERPRET", "1"), (triton_startup.ENV, "0")])
def test_nothing_starts_under_the_interpreter_or_when_turned_off(fresh, variable, value):
    fresh.setenv(variable, value)
    assert not triton_startup.begin() and not triton_startup.started()
    triton_startup.wait_key()  # nothing to wait for


def test_nothing_starts_once_the_driver_is_made(fresh):
    fresh.setattr(triton_startup, "driver_ready", lambda: True)
    assert not triton_startup.begin()


def test_a_failed_start_up_is_kept_not_raised(fresh):
    """Without a GPU Triton has no active driver: the thread keeps the error, the caller's path reports its own."""

    def fail():
        raise RuntimeError("0 active drivers ([]). There should only be one.")

    fresh.setattr(triton_startup, "driver_ready", lambda: False)
    fresh.setattr(triton_startup, "_start", lambda: triton_startup._keep(fail))
    triton_startup.begin()
    triton_startup.wait_key()
    assert triton_startup.error() == "RuntimeError: 0 active drivers ([]). There should only be one."


def test_a_store_load_waits_for_the_driver_and_a_compile_also_for_the_key(fresh, monkeypatch):
    """kernels/aot.py's load: the driver before anything; the cache key only where it returns None (a JIT compile
    follows), never for a kernel the store holds."""
    order = []
    monkeypatch.setattr(triton_startup, "wait_driver", lambda: order.append("driver"))
    monkeypatch.setattr(triton_startup, "wait_key", lambda: order.append("key"))
    monkeypatch.setattr(aot, "_load_stored", lambda *args: order.append("store") or None)
    assert aot.load(None, (), {}, 4, 1, None, 0) is None
    assert order == ["driver", "store", "key"]
    order.clear()
    monkeypatch.setattr(aot, "_load_stored", lambda *args: order.append("store") or "compiled")
    assert aot.load(None, (), {}, 4, 1, None, 0) == "compiled"
    assert order == ["driver", "store"]


def test_the_start_up_imports_triton_hashes_and_makes_the_driver_in_that_order(fresh, monkeypatch):
    """The real _start_up with Triton's key and driver replaced: the key on its own thread (joined by wait_key),
    the driver on the start-up thread (joined by wait_driver)."""
    cache = triton.runtime.cache
    made, hashed = threading.Event(), threading.Event()

    class Config:
        @property
        def active(self):
            made.set()
            return object()

    monkeypatch.setattr(cache, "triton_key", lambda: (time.sleep(0.3), hashed.set()))
    monkeypatch.setattr(triton.runtime, "driver", Config())  # what `from triton.runtime import driver` gets
    monkeypatch.setattr(triton_startup, "driver_ready", lambda: False)
    assert triton_startup.begin()
    triton_startup.wait_driver()
    assert made.is_set()
    triton_startup.wait_key()
    assert hashed.is_set() and triton_startup.error() is None
