"""Native replay (kernels/native.py + native_launch.cpp): how a recorded launch's parameters are packed, the build
and its errors (the module compiles against this torch on the CPU too), auto's use of it, and on a GPU that every
replayable variant's native replay writes exactly what its launcher writes."""

from __future__ import annotations

import struct

import pytest
import torch

from blockscope import kernels
from blockscope.kernels import _common, auto, native, replay
from tests.softmax_checks import assert_softmax_close

SIGNATURE = ["*fp16", "*fp16", "i32", "i32", "constexpr", "i32", "constexpr"]


def test_pack_params_lays_out_each_runtime_parameter_as_tritons_launcher_passes_it():
    x, y = torch.randn(3, 100), torch.empty(3, 100)
    packed = native.pack_params(SIGNATURE, [y, x, 64, 70000, 128, 100, 4], x, y)
    # y, x, two i32, the i32 after the constexpr, two null scratch pointers; constexprs are not parameters
    assert packed.sizes == (8, 8, 4, 4, 4, 8, 8)
    assert packed.offsets == (0, 8, 16, 20, 24, 32, 40)  # the pointer after three i32 is aligned to 8
    assert packed.y_slots == (0,) and packed.x_slots == (8,)
    assert struct.unpack_from("iii", packed.blob, 16) == (64, 70000, 100)
    assert struct.unpack_from("QQQQ", packed.blob, 0)[:2] == (0, 0)  # pointers are patched per call
    assert struct.unpack_from("QQ", packed.blob, 32) == (0, 0) and len(packed.blob) == 48


@pytest.mark.parametrize(
    "kind, value, fmt",
    [("i64", 2**40, "q"), ("u32", 2**31 + 5, "I"), ("i1", True, "b"), ("fp32", 0.5, "f"), ("i8", -3, "b")],
)
def test_pack_params_packs_scalars_by_type(kind, value, fmt):
    x, y = torch.randn(2, 8), torch.empty(2, 8)
    packed = native.pack_params(["*fp32", "*fp32", kind], [y, x, value], x, y)
    assert packed.sizes[2] == struct.calcsize(fmt)
    assert struct.unpack_from(fmt, packed.blob, packed.offsets[2])[0] == pytest.approx(float(value))


@pytest.mark.parametrize(
    "signature, bound, message",
    [
        (["*fp16", "*fp16", "*fp16"], "workspace", "other than the input and output"),
        (["*fp16", "*fp16", "fp16"], [1.0], "'fp16' is not packed"),
        (["*fp16", "*fp16", ("i32", "i32")], [(1, 2)], "a tuple"),
        (["*fp16", "*fp16"], "short", "3 bound arguments"),
        (["*fp16", "i32"], "no output", "both the input and the output"),
        (["*fp16", "*fp16", "i32"], ["a pointer for an int"], "'i32' is not packed"),
    ],
)
def test_pack_params_refuses_what_a_replay_would_not_reproduce(signature, bound, message):
    x, y = torch.randn(2, 8), torch.empty(2, 8)
    if bound == "workspace":
        bound = [y, x, torch.zeros(4)]
    elif bound == "short":
        bound = [y, x, 3]
    elif bound == "no output":
        bound = [x, 8]
    else:
        bound = [y, x, *(torch.zeros(1) if item == "a pointer for an int" else item for item in bound)]
    with pytest.raises(ValueError, match=message):
        native.pack_params(signature, bound, x, y)


def test_load_needs_a_build_and_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv("BLOCKSCOPE_CACHE_DIR", str(tmp_path))
    native.reset()
    try:
        assert native.load() is None and "not built" in native.load_error()
        native.reset()
        monkeypatch.setenv(native.ENV, "0")
        assert native.load() is None and native.load_error() == f"{native.ENV}=0"
    finally:
        native.reset()


def _wait_for(condition, seconds: float = 60.0) -> None:
    import time

    end = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < end, "timed out waiting for the background build"
        time.sleep(0.05)


def _background_test_setup(tmp_path, monkeypatch, argv: list[str]) -> list[int]:
    """A CUDA-looking process whose background build runs `argv`; returns a list that counts the starts."""
    monkeypatch.setenv("BLOCKSCOPE_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv(native.AUTOBUILD_ENV, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(native, "RECHECK_S", 0.05)
    starts: list[int] = []

    def background_argv() -> list[str]:
        starts.append(1)
        return argv

    monkeypatch.setattr(native, "_background_argv", background_argv)
    native.reset()
    return starts


def test_a_missing_build_starts_once_in_the_background_and_loads_when_done(tmp_path, monkeypatch):
    import sys

    monkeypatch.setenv("BLOCKSCOPE_CACHE_DIR", str(tmp_path))
    target = native.module_path()
    child = f"import pathlib, time; time.sleep(0.5); pathlib.Path({str(target)!r}).write_bytes(b'built')"
    starts = _background_test_setup(tmp_path, monkeypatch, [sys.executable, "-c", child])
    sentinel = object()
    monkeypatch.setattr(native, "_load_module", lambda path: sentinel if path.read_bytes() == b"built" else None)
    try:
        assert native.load() is None and "building in the background" in native.load_error()
        assert native.load() is None  # still building: no second builder
        _wait_for(lambda: native.load() is sentinel)
        assert starts == [1] and native.load_error() is None and native.load() is sentinel
    finally:
        native.reset()


def test_a_failed_background_build_is_reported_and_not_retried(tmp_path, monkeypatch):
    import sys

    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))  # the child builds with the real _main and fails
    child = "import sys; from blockscope.kernels import native; sys.exit(native._main())"
    starts = _background_test_setup(tmp_path, monkeypatch, [sys.executable, "-c", child])
    try:
        assert native.load() is None and "building in the background" in native.load_error()
        _wait_for(lambda: native.load() is None and "background build failed" in native.load_error())
        assert "no-such-compiler" in native.build_log().read_text() and not native._lock().exists()
        native.reset()  # a later process: the marker stops a new build for a day
        assert native.load() is None and "background build failed" in native.load_error() and starts == [1]
    finally:
        native.reset()


def test_the_background_build_can_be_turned_off_and_another_builders_lock_is_respected(tmp_path, monkeypatch):
    starts = _background_test_setup(tmp_path, monkeypatch, ["false"])
    try:
        monkeypatch.setenv(native.AUTOBUILD_ENV, "0")
        assert native.load() is None and native.AUTOBUILD_ENV in native.load_error()
        native.reset()
        monkeypatch.delenv(native.AUTOBUILD_ENV)
        native._lock().parent.mkdir(parents=True)
        native._lock().write_text("another process")
        assert native.load() is None and "another process is building" in native.load_error()
        assert starts == []
    finally:
        native.reset()


def test_a_build_that_cannot_run_the_compiler_names_the_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("BLOCKSCOPE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))
    with pytest.raises(RuntimeError, match="could not run.*allowed: set CXX"):
        native.build()
    assert not native.module_path().exists() and not list(native.module_path().parent.glob("*.so"))


def test_the_build_tag_follows_the_source_and_torch(monkeypatch):
    tag = native.build_tag()
    monkeypatch.setattr(torch, "__version__", "0.0.0")
    assert native.build_tag() != tag


@pytest.mark.slow
def test_the_module_builds_against_this_torch_and_declines_what_it_cannot_take(tmp_path, monkeypatch):
    import shutil

    if not (shutil.which("c++") or shutil.which("g++")):
        pytest.skip("no C++ compiler here: the native module cannot be built (auto keeps the Python replay)")
    monkeypatch.setenv("BLOCKSCOPE_CACHE_DIR", str(tmp_path))
    native.reset()
    try:
        result = native.build()
        assert not result.cached and result.path == native.module_path() and result.path.is_file()
        assert native.build().cached
        module = native.load()
        assert module is not None, native.load_error()
        assert module.size() == 0
        for value in (torch.randn(3, 8), torch.randn(()), "not a tensor", torch.nn.Parameter(torch.randn(2))):
            assert module.run(value) is None  # nothing registered, CPU tensors, subclasses, other objects
        x, y = torch.randn(3, 16), torch.empty(3, 16)
        packed = native.pack_params(["*fp32", "*fp32", "i32"], [y, x, 16], x, y)
        args = (
            x,
            1,
            (3, 1, 1),
            128,
            0,
            1,
            False,
            False,
            packed.blob,
            packed.offsets,
            packed.sizes,
            packed.x_slots,
            packed.y_slots,
            None,
        )
        with pytest.raises((ValueError, RuntimeError), match="CUDA|libcuda|driver"):
            module.register(*args)  # a CPU tensor, or (no driver here) no libcuda
        with pytest.raises(TypeError):
            module.register(x)
        module.clear()
        assert module.size() == 0
    finally:
        native.reset()


def test_auto_registers_replayable_launches_natively_and_tries_native_first(monkeypatch):
    registered, runs = [], []

    class Module:
        def run(self, x):
            runs.append(x)
            return torch.softmax(x, -1) if x.shape == (4, 32) else None

        def clear(self):
            registered.clear()

    module = Module()
    monkeypatch.setattr(native, "load", lambda: module)
    monkeypatch.setattr(native, "register", lambda mod, launch, x, y: registered.append((mod, launch)))
    monkeypatch.setattr(replay, "build", lambda launches, x, y: lambda t: torch.softmax(t, -1))
    monkeypatch.setattr(auto, "_NATIVE_RUN", None)
    launched = []

    def launcher(x, **tunables):
        launched.append(x)
        _common.RECORDERS[-1].append("launch")  # what run_compiled reports
        return torch.softmax(x, -1)

    seen = auto._Seen(launcher, {}, ("eager key",), True)
    x = torch.randn(4, 32)
    seen.launch(x)
    assert seen.native and seen.eager_key is None and registered == [(module, "launch")]  # no idle-stream check
    assert auto._NATIVE_RUN == module.run
    assert_softmax_close(auto.softmax_auto(x), x)
    assert len(runs) == 1 and len(launched) == 1  # native took it
    monkeypatch.setattr(native, "register", lambda *args: (_ for _ in ()).throw(ValueError("no tuples")))
    other = auto._Seen(launcher, {}, ("eager key",), True)
    failures = len(auto.NATIVE_FAILURES)
    other.launch(torch.randn(2, 32))
    assert not other.native and other.eager_key == ("eager key",)  # the Python replay and the check stay
    assert len(auto.NATIVE_FAILURES) == min(16, failures + 1)
    auto.clear_choices()
    assert auto._NATIVE_RUN is None


def test_auto_without_a_native_build_keeps_the_python_replay_and_says_so_once(monkeypatch):
    monkeypatch.setattr(native, "load", lambda: None)
    monkeypatch.setattr(native, "load_error", lambda: "not built (python -m profiling native --build)")
    monkeypatch.setattr(replay, "build", lambda launches, x, y: lambda t: torch.softmax(t, -1))
    monkeypatch.setattr(auto, "_NATIVE_WARNED", False)

    def launcher(x):
        _common.RECORDERS[-1].append("launch")
        return torch.softmax(x, -1)

    seen = auto._Seen(launcher, {}, ("eager key",), True)
    with pytest.warns(RuntimeWarning, match="native replay not in use.*profiling native --build"):
        seen.launch(torch.randn(4, 8))
    assert seen.replay is not None and not seen.native and seen.eager_key == ("eager key",)
    again = auto._Seen(launcher, {}, None, True)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again.launch(torch.randn(2, 8))  # said once per process


@pytest.fixture(scope="module")
def built():
    """The native module built for this torch (cached across runs) and loaded."""
    native.reset()
    result = native.build()
    print(f"native build: {result.seconds:.1f} s (cached: {result.cached})")
    module = native.load()
    assert module is not None, native.load_error()
    yield module
    auto.clear_choices()


REPLAYED = [
    ("teaching", {}),
    ("multirow", {"rows_per_program": 4}),
    ("online", {}),
    ("persistent", {}),
    ("staged", {}),
    ("warprows", {}),
    ("stagedrows", {}),
    ("cluster", {"chunk": 1024}),
]


@pytest.mark.gpu
@pytest.mark.parametrize(
    "dtype, n_rows, n_cols", [(torch.float16, 37, 1000), (torch.bfloat16, 64, 4096), (torch.float32, 5, 3000)]
)
@pytest.mark.parametrize("variant, tunables", REPLAYED)
def test_every_replayable_variant_replays_natively_to_its_launchers_result(
    built, variant, tunables, dtype, n_rows, n_cols
):
    launcher = kernels.get_variant(variant).launcher
    x = torch.randn(n_rows, n_cols, device="cuda", dtype=dtype) * 4
    with replay.recording() as launches:
        y = launcher(x, **tunables)
    assert len(launches) == 1 and launches[0] is not None
    built.clear()
    native.register(built, launches[0], x, y)
    x2 = torch.randn_like(x) * 4
    y2 = built.run(x2)
    assert y2 is not None and y2.shape == x2.shape and y2.dtype == dtype and y2.data_ptr() != y.data_ptr()
    torch.testing.assert_close(y2, launcher(x2, **tunables), rtol=0, atol=0)
    assert_softmax_close(y2, x2)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y3 = built.run(x2)
    graph.replay()
    torch.testing.assert_close(y3, y2, rtol=0, atol=0)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):  # the current stream, not the default one
        y4 = built.run(x2)
    side.synchronize()
    torch.testing.assert_close(y4, y2, rtol=0, atol=0)


@pytest.mark.gpu
def test_native_run_declines_inputs_its_launch_does_not_fit(built):
    x = torch.randn(64, 1000, device="cuda", dtype=torch.float16)
    with replay.recording() as launches:
        y = kernels.get_variant("warprows").launcher(x)
    built.clear()
    native.register(built, launches[0], x, y)
    assert built.run(x) is not None
    big = torch.randn(64 * 1000 + 1, device="cuda", dtype=torch.float16)
    assert built.run(big[1:].view(64, 1000)) is None  # unaligned
    assert built.run(torch.randn(1000, 64, device="cuda", dtype=torch.float16).t()) is None  # not contiguous
    assert built.run(torch.randn(64, 1001, device="cuda", dtype=torch.float16)) is None  # another shape
    assert built.run(x.float()) is None and built.run(x.cpu()) is None  # another dtype, another device
    assert built.run(x.view(8, 8, 1000)) is None  # another rank: registered per sizes
    assert built.run(x.clone().requires_grad_()) is None  # autograd: kernels.softmax's Function path
    with torch.no_grad():
        assert built.run(x.clone().requires_grad_()) is not None
    from triton import knobs

    hook = knobs.runtime.launch_enter_hook
    if hasattr(hook, "add"):

        def seen(metadata):
            return None

        hook.add(seen)
        try:
            assert built.run(x) is None  # a Triton launch hook (proton): Triton's own path
        finally:
            hook.remove(seen)
        assert built.run(x) is not None


@pytest.mark.gpu
def test_auto_takes_the_native_path_for_repeated_inputs(built):
    auto.clear_choices()
    x = torch.randn(4096, 1000, device="cuda", dtype=torch.float16)
    first = kernels.softmax(x, variant="auto")
    seen = auto._FAST[(x.shape, x.dtype, x.device)]
    variant = auto.choose(4096, 1000, x.dtype, torch.cuda.get_device_name())[0]
    assert seen.native == kernels.get_variant(variant).replayable, auto.NATIVE_FAILURES
    if seen.native:
        assert auto._NATIVE_RUN is not None and built.size() >= 1 and seen.eager_key is None
    torch.testing.assert_close(kernels.softmax(x, variant="auto"), first, rtol=0, atol=0)
    strided = torch.randn(1000, 4096, device="cuda", dtype=torch.float16).t()
    assert_softmax_close(kernels.softmax(strided, variant="auto"), strided)


def test_the_public_entry_tries_the_native_run_first_for_auto(monkeypatch):
    taken = []
    answer = torch.full((2, 4), 0.25)

    def run(x):
        taken.append(x)
        return answer if x.shape == (2, 4) else None

    monkeypatch.setattr(auto, "_NATIVE_RUN", run)
    x = torch.randn(2, 4)
    assert kernels.softmax(x, variant="auto") is answer and len(taken) == 1
    other = torch.randn(3, 4)  # the run declines: the usual path
    assert_softmax_close(kernels.softmax(other, variant="auto"), other)
    assert len(taken) == 2  # a miss is looked up once: kernels.softmax goes on to softmax_auto_after_native
    for call in (
        lambda: kernels.softmax(x, 0, variant="auto"),
        lambda: kernels.softmax(x, variant="teaching"),
        lambda: kernels.softmax(x, variant="auto", out=torch.empty(2, 4)),
    ):
        call()
    assert all(t.shape != (2, 4) for t in taken[2:])  # other dims, variants and out= skip the first try


@pytest.mark.slow
def test_compiled_callers_never_read_the_native_run_so_setting_it_does_not_recompile(monkeypatch):
    compiles = []

    def backend(graph_module, example_inputs):
        compiles.append(graph_module)
        return graph_module.forward

    monkeypatch.setattr(auto, "_NATIVE_RUN", None)
    compiled = torch.compile(lambda x: kernels.softmax(x * 2, variant="auto") + 1, fullgraph=True, backend=backend)
    x = torch.randn(8, 32)
    compiled(x)
    monkeypatch.setattr(auto, "_NATIVE_RUN", lambda t: None)  # what auto's first recorded launch does
    y = compiled(x)
    assert len(compiles) == 1  # the graph traced before it was set still serves
    assert_softmax_close(y - 1, x * 2)
