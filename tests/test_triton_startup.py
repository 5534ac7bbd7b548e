"""kernels/triton_startup.py: Triton's start-up on a thread, begun once, awaited before compiles and store loads."""

from __future__ import annotations

import threading
import time

import pytest
import torch
import triton.runtime
import triton.runtime.cache  # imported here, under the test session's TRITON_INTERPRET=1 (tests/conftest.py)
from triton.backends.nvidia import driver as nvidia

from blockscope.kernels import aot, teaching, triton_startup


@pytest.fixture
def fresh(monkeypatch):
    """A process state in which begin() has not run yet, the interpreter off."""
    monkeypatch.setattr(triton_startup, "_ASKED", False)
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
    fresh.delenv(variable)
    assert not triton_startup.begin()  # only the first call decides: the launch path asks on every record miss
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
    monkeypatch.setattr(aot, "launch_material", lambda *args: {"arch": "sm_90"})
    monkeypatch.setattr(aot, "_load_stored", lambda *args: order.append("store") or None)
    monkeypatch.setattr(aot, "prebuild_launcher", lambda *args: order.append("launcher"))
    assert aot.load(None, (), {}, 4, 1, None, 0) is None
    assert order == ["driver", "store", "launcher", "key"]
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


def launch_of_teaching():
    """The arguments of a teaching launch on contiguous fp32 rows, as kernels/_common.py hands them to aot.load."""
    rows = torch.randn(4, 256)
    plan = teaching.plan(4, 256, torch.float32)
    args = (torch.empty_like(rows), rows, 256, 256)
    return teaching.row_softmax_kernel, args, dict(plan.constexprs), plan.num_warps


def test_a_launcher_build_starts_on_a_thread_where_triton_builds_one_per_signature(fresh, monkeypatch):
    """Triton 3.6's per-signature launcher (make_launcher + compile_module_from_src, as CudaLauncher does) is built
    from the launch's source on a thread, once per launcher source."""
    from triton.backends.nvidia import driver as nvidia

    made, built = [], []

    def make_launcher(constants, signature, tensordesc_meta):
        made.append((constants, signature, tensordesc_meta))
        return "launcher source for " + ",".join(signature.values())

    monkeypatch.setattr(nvidia, "make_launcher", make_launcher, raising=False)
    monkeypatch.setattr(nvidia, "compile_module_from_src", lambda **kw: built.append(kw), raising=False)
    monkeypatch.setattr(nvidia, "library_dirs", lambda: ["/usr/lib"])  # no libcuda here to look up
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    monkeypatch.setattr(aot, "_LAUNCHERS", {})
    kernel, args, constexprs, num_warps = launch_of_teaching()
    material = aot.launch_material(kernel, args, constexprs, num_warps, 1, None, 0)
    thread = aot.prebuild_launcher(kernel, material)
    thread.join(10)
    constants, signature, meta = made[0]
    assert meta is None and signature["output_ptr"] == "*fp32" and signature["BLOCK_SIZE"] == "constexpr"
    assert all(isinstance(key, tuple) for key in constants) and built[0]["name"] == "__triton_launcher"
    assert built[0]["src"] == "launcher source for " + ",".join(signature.values())
    assert aot.prebuild_launcher(kernel, material) is None  # once per source
    assert len(built) == 1


def test_no_launcher_build_on_a_triton_without_per_signature_launchers_or_when_off(fresh, monkeypatch):
    kernel, args, constexprs, num_warps = launch_of_teaching()
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    material = aot.launch_material(kernel, args, constexprs, num_warps, 1, None, 0)
    monkeypatch.setattr(aot, "_LAUNCHERS", {})
    monkeypatch.delattr(nvidia, "make_launcher", raising=False)  # Triton 3.7: one generic launcher
    assert aot.prebuild_launcher(kernel, material) is None
    monkeypatch.setattr(nvidia, "make_launcher", lambda constants, signature, tensordesc_meta: "", raising=False)
    monkeypatch.setattr(nvidia, "compile_module_from_src", lambda **kw: None, raising=False)
    fresh.setenv(triton_startup.ENV, "0")
    assert aot.prebuild_launcher(kernel, material) is None


def test_launch_material_is_none_for_arguments_warm_never_stores(monkeypatch):
    kernel, args, constexprs, num_warps = launch_of_teaching()
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    assert aot.launch_material(kernel, args, constexprs, num_warps, 1, None, 0)["arch"] == "sm_90"
    assert aot.launch_material(kernel, (*args[:3], 0.5), constexprs, num_warps, 1, None, 0) is None
