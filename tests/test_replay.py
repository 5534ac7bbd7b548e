"""Replayed launches (kernels/replay.py) and auto's use of them: the C launch call a replay makes is the one
Triton's own CudaLauncher makes (CPU, with the installed Triton's launcher class and its C function mocked), what
is not replayable falls back, and on a GPU every replayable variant's replay matches its launcher."""

from __future__ import annotations

import pytest
import torch

from blockscope import kernels
from blockscope.kernels import _common, auto, replay
from tests.softmax_checks import assert_softmax_close

FUNCTION, STREAM, PACKED = 0xF00, 0x5EA, (4, 1, 0)


def fake_launcher(calls: list, **overrides):
    """Triton's installed CudaLauncher without its compiled C module: `launch` records its arguments."""
    from triton.backends.nvidia.driver import CudaLauncher

    launcher = object.__new__(CudaLauncher)
    attributes = {
        "num_ctas": 1,
        "global_scratch_size": 0,
        "global_scratch_align": 1,
        "profile_scratch_size": 0,
        "profile_scratch_align": 1,
        "launch_cooperative_grid": False,
        "launch_pdl": False,
        "arg_annotations": ["annotations"],
        "kernel_signature": b"sig",
        "launch": lambda *args: calls.append(args),
    }
    attributes.update(overrides)
    for name, value in attributes.items():
        setattr(launcher, name, value)
    return launcher


def recorded_launch(launcher, rows: torch.Tensor, out: torch.Tensor, grid=(3,)):
    """What _common.run_compiled reports for a launch of a (output, input, stride, stride, N, constexpr) kernel."""
    return (launcher, (tuple(grid) + (1, 1))[:3], FUNCTION, PACKED, [out, rows, 64, 64, rows.shape[-1], 128])


def test_the_installed_triton_launcher_has_a_known_call_form():
    assert replay.call_form(fake_launcher([])) in ("3.6", "3.7")
    assert replay.call_form(fake_launcher([], global_scratch_size=64)) is None  # scratch: allocated per launch
    assert replay.call_form(object()) is None

    class Other:
        launch = launch_cooperative_grid = launch_pdl = None
        global_scratch_size = profile_scratch_size = 0

        def __call__(self, grid, stream, *args):
            pass

    assert replay.call_form(Other()) is None


def test_a_replay_calls_the_c_launch_exactly_as_triton_does_with_this_calls_pointers():
    calls = []
    launcher = fake_launcher(calls)
    x = torch.randn(3, 100)
    y = torch.empty_like(x)
    replayed = replay.build([recorded_launch(launcher, x, y)], x, y, stream=lambda index: STREAM)
    assert replayed is not None
    x2 = torch.randn(3, 100)
    y2 = replayed(x2)
    assert y2.shape == x2.shape and y2.dtype == x2.dtype and y2.is_contiguous() and y2.data_ptr() != y.data_ptr()
    replayed_call = calls.pop()
    # Triton's own path with the same launch: CudaLauncher.__call__ as CompiledKernel.run calls it, no launch
    # metadata or hooks, the pointers as ints
    bound = [y2.data_ptr(), x2.data_ptr(), 64, 64, 100, 128]
    launcher(3, 1, 1, STREAM, FUNCTION, PACKED, None, None, None, *bound)
    assert replayed_call == calls.pop()


def test_replays_decline_what_they_cannot_reproduce():
    calls = []
    launcher = fake_launcher(calls)
    x = torch.randn(3, 100)
    y = torch.empty_like(x)
    launch = recorded_launch(launcher, x, y)
    assert replay.build([launch, launch], x, y) is None  # two launches
    assert replay.build([None], x, y) is None  # launched through JITFunction.run
    workspace = launch[:4] + ([y, x, torch.zeros(4), 64, 100, 128],)
    assert replay.build([workspace], x, y) is None  # a tensor that is neither input nor output
    assert replay.build([launch], x.t(), y) is None  # not contiguous
    base = torch.randn(301)
    unaligned = base[1:].view(3, 100)
    assert replay.build([recorded_launch(launcher, unaligned, y)], unaligned, y) is None
    replayed = replay.build([launch], x, y, stream=lambda index: STREAM)
    assert replayed(unaligned) is None and not calls  # an unaligned input this call: the full path


def test_a_replay_declines_while_a_triton_launch_hook_is_installed():
    from triton import knobs

    calls = []
    x = torch.randn(3, 100)
    y = torch.empty_like(x)
    replayed = replay.build([recorded_launch(fake_launcher(calls), x, y)], x, y, stream=lambda index: STREAM)
    hook = knobs.runtime.launch_enter_hook

    def seen(metadata):
        return None

    if not hasattr(hook, "add"):
        pytest.skip("this Triton's launch hooks are not HookChains")
    hook.add(seen)
    try:
        assert replayed(x) is None and not calls
    finally:
        hook.remove(seen)
    assert replayed(x) is not None and len(calls) == 1
    knobs.runtime.launch_enter_hook, saved = (lambda metadata: None), hook  # a hook object of another kind
    try:
        assert replayed(x) is None and len(calls) == 1
    finally:
        knobs.runtime.launch_enter_hook = saved


def test_run_compiled_reports_to_the_innermost_recording():
    calls = []
    launcher = fake_launcher(calls)

    class Compiled:
        run, function = launcher, FUNCTION

        def launch_metadata(self, grid, stream, *args):
            return None

    x = torch.randn(2, 8)
    with replay.recording() as outer:
        with replay.recording() as inner:
            _common.run_compiled(Compiled(), (2, 1, 1), STREAM, PACKED, [x, x, 8], (None, None))
        assert len(inner) == 1 and not outer
    assert not _common.RECORDERS and len(calls) == 1


def test_auto_records_once_then_replays_and_drops_the_eager_check_where_triton_wins(monkeypatch):
    recorded = []

    def launcher(x, **tunables):
        recorded.append(tunables)
        return torch.softmax(x, -1)

    seen = auto._Seen(launcher, {"num_warps": 4}, ("key",), True)
    x = torch.randn(4, 32)
    replays = []
    monkeypatch.setattr(replay, "build", lambda launches, x, y: lambda t: replays.append(t) or torch.softmax(t, -1))
    assert_softmax_close(seen.launch(x), x)
    assert seen.recorded and len(recorded) == 1
    seen.launch(x)
    assert len(replays) == 1 and len(recorded) == 1  # the replay, not the launcher
    seen.launch(x.t().contiguous().t())  # not contiguous: the launcher
    assert len(recorded) == 2
    monkeypatch.setattr(auto, "eager_prefers_torch", lambda *fns: (False, 8.0, 17.0))
    monkeypatch.setattr(auto, "_EAGER", {})
    assert not auto._eager_prefers_torch(seen, x) and seen.eager_key is None  # Triton as fast: no more checks
    seen.eager_key = ("other",)
    monkeypatch.setattr(auto, "eager_prefers_torch", lambda *fns: (True, 20.0, 9.0))
    assert auto._eager_prefers_torch(seen, x) and seen.eager_key == ("other",)  # torch wins: the check stays


REPLAYED = [
    ("teaching", {}),
    ("multirow", {"rows_per_program": 4}),
    ("online", {}),
    ("persistent", {}),
    ("staged", {}),
    ("warprows", {}),
    ("cluster", {"chunk": 1024}),
]


@pytest.mark.gpu
@pytest.mark.parametrize(
    "dtype, n_rows, n_cols", [(torch.float16, 37, 1000), (torch.bfloat16, 64, 4096), (torch.float32, 5, 3000)]
)
@pytest.mark.parametrize("variant, tunables", REPLAYED)
def test_every_replayable_variant_replays_to_its_launchers_result(variant, tunables, dtype, n_rows, n_cols):
    launcher = kernels.get_variant(variant).launcher
    x = torch.randn(n_rows, n_cols, device="cuda", dtype=dtype) * 4
    with replay.recording() as launches:
        y = launcher(x, **tunables)
    replayed = replay.build(launches, x, y)
    assert replayed is not None, launches
    x2 = torch.randn_like(x) * 4
    y2 = replayed(x2)
    torch.testing.assert_close(y2, launcher(x2, **tunables), rtol=0, atol=0)
    assert_softmax_close(y2, x2)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y3 = replayed(x2)
    graph.replay()
    torch.testing.assert_close(y3, y2, rtol=0, atol=0)


@pytest.mark.gpu
def test_auto_replays_repeated_inputs_and_falls_back_on_views():
    x = torch.randn(4096, 1000, device="cuda", dtype=torch.float16)
    auto.clear_choices()
    first = kernels.softmax(x, variant="auto")
    seen = auto._FAST[(x.shape, x.dtype, x.device)]
    kernels.softmax(x, variant="auto")
    assert (
        seen.recorded
        and (seen.replay is not None)
        == kernels.get_variant(auto.choose(4096, 1000, x.dtype, torch.cuda.get_device_name())[0]).replayable
    )
    torch.testing.assert_close(kernels.softmax(x, variant="auto"), first)
    big = torch.randn(4096 * 1000 + 1, device="cuda", dtype=torch.float16)
    unaligned = big[1:].view(4096, 1000)  # same shape, 2-byte offset: the full path
    assert_softmax_close(kernels.softmax(unaligned, variant="auto"), unaligned)
    strided = torch.randn(1000, 4096, device="cuda", dtype=torch.float16).t()
    assert_softmax_close(kernels.softmax(strided, variant="auto"), strided)
