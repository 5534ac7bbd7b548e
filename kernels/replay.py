"""Replay of a recorded launch: a repeated call's host path cut to one allocation and Triton's C launch.

A launcher's first call for an input runs its checks, its plan and compiled-kernel lookups and launches one kernel
through Triton's CudaLauncher. `recording()` captures that launch (kernels._common.run_compiled reports each one);
`build()` turns it into a `Replay`: for a contiguous input of the same shape, dtype and device it allocates the
output and calls the C launch function with the recorded grid, kernel metadata and arguments, this call's input and
output pointers put in as ints (so the launcher neither calls data_ptr() nor cuPointerGetAttribute on them). Left
out of the per-call path, and why that is safe:
- argument checks, plan, specialization key: fixed by (shape, dtype, device, contiguous), which the caller keys on;
  the pointers' 16-byte alignment (part of Triton's specialization) is checked per call;
- CudaLauncher.__call__'s scratch allocation: only kernels with no global or profile scratch are replayed;
- CompiledKernel.launch_metadata and the launch hooks: a replay returns None (the caller takes its full path) while
  a Triton launch hook is installed (proton does that); with none, Triton's HookChains are empty calls.
A launch is replayable when it was the call's only launch and its tensor arguments are exactly the input rows and
the output (a workspace, a staging copy or a second launch make build() return None). Triton 3.6 and 3.7 differ in
the C function's argument order (3.6: scratch before the metadata, arguments spread; 3.7: metadata first, then
scratch, annotations, signature and the arguments as one tuple): `call_form` tells them apart by CudaLauncher's
__call__ parameters and anything else is not replayed.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator

import torch

from . import _common

_FORM_36 = ("args",)  # __call__(self, gridX, gridY, gridZ, stream, function, *args)
_FORM_37 = ("kernel_metadata", "launch_metadata", "launch_enter_hook", "launch_exit_hook", "args")


@contextlib.contextmanager
def recording() -> Iterator[list]:
    """Collect the launches made inside the block: (CudaLauncher, grid (x, y, z), CUfunction, packed kernel
    metadata, bound arguments, CompiledKernel) each, None for one made another way (JITFunction.run)."""
    launches: list = []
    _common.RECORDERS.append(launches)
    try:
        yield launches
    finally:
        _common.RECORDERS.remove(launches)


def call_form(launcher: object) -> str | None:
    """'3.6' or '3.7' (the C launch function's argument order behind this CudaLauncher), None for anything else or
    a kernel with scratch memory (its __call__ allocates some per launch)."""
    try:
        names = tuple(inspect.signature(type(launcher).__call__).parameters)
        if getattr(launcher, "global_scratch_size", 1) or getattr(launcher, "profile_scratch_size", 1):
            return None
        for attribute in ("launch", "launch_cooperative_grid", "launch_pdl"):
            getattr(launcher, attribute)
    except (AttributeError, TypeError, ValueError):
        return None
    if names[:6] != ("self", "gridX", "gridY", "gridZ", "stream", "function"):
        return None
    if names[6:] == _FORM_36:
        return "3.6"
    if names[6:] == _FORM_37 and hasattr(launcher, "arg_annotations") and hasattr(launcher, "kernel_signature"):
        return "3.7"
    return None


def _hook_chain_type() -> type | None:
    try:
        from triton.knobs import HookChain
    except ImportError:
        return None
    return HookChain


def _live_calls(hook: object, chain: type | None) -> object:
    """Something falsy exactly while `hook` would call nothing: () for no hook, a HookChain's own (live) list of
    calls, a 1-tuple (always truthy) for any other hook."""
    if hook is None:
        return ()
    if chain is not None and type(hook) is chain:
        return hook.calls
    return (hook,)


class Replay:
    """`replay(x)` -> softmax rows of a contiguous x (the recorded shape, dtype, device) by the recorded launch, or
    None when this call cannot take it (an unaligned pointer, a launch hook installed): then take the full path."""

    __slots__ = (
        "_launch",
        "_grid",
        "_middle",
        "_template",
        "_inputs",
        "_outputs",
        "_nested",
        "_device",
        "_stream",
        "_runtime",
        "_enter",
        "_exit",
        "_enter_calls",
        "_exit_calls",
    )

    def __init__(
        self,
        launch: Callable,
        grid: tuple[int, int, int],
        middle: tuple,
        template: list,
        inputs: tuple[int, ...],
        outputs: tuple[int, ...],
        nested: bool,
        device: int,
        stream: Callable[[int], int],
    ) -> None:
        from triton import knobs

        self._launch, self._grid, self._middle, self._template = launch, grid, middle, template
        self._inputs, self._outputs, self._nested = inputs, outputs, nested
        self._device, self._stream = device, stream
        chain = _hook_chain_type()
        self._runtime = runtime = knobs.runtime
        self._enter, self._exit = runtime.launch_enter_hook, runtime.launch_exit_hook
        self._enter_calls, self._exit_calls = _live_calls(self._enter, chain), _live_calls(self._exit, chain)

    def __call__(self, x: torch.Tensor) -> torch.Tensor | None:
        x_ptr = x.data_ptr()
        runtime = self._runtime
        if (
            x_ptr & 15
            or self._enter_calls
            or self._exit_calls
            or runtime.launch_enter_hook is not self._enter
            or runtime.launch_exit_hook is not self._exit
        ):  # a launch hook now (proton): Triton's own path
            return None
        y = torch.empty_like(x, memory_format=torch.contiguous_format)  # write y (the only allocation)
        y_ptr = y.data_ptr()
        if y_ptr & 15:
            return None
        args = self._template.copy()
        for index in self._inputs:
            args[index] = x_ptr
        for index in self._outputs:
            args[index] = y_ptr
        grid_x, grid_y, grid_z = self._grid
        if self._nested:
            self._launch(grid_x, grid_y, grid_z, self._stream(self._device), *self._middle, tuple(args))
        else:
            self._launch(grid_x, grid_y, grid_z, self._stream(self._device), *self._middle, *args)
        return y


def build(
    launches: list, x: torch.Tensor, y: torch.Tensor, stream: Callable[[int], int] | None = None
) -> Replay | None:
    """The Replay of the one launch recorded while x's softmax y was computed, or None when it is not replayable
    (see the module docstring). `stream`: device index -> current stream handle (default Triton's getter)."""
    if len(launches) != 1 or launches[0] is None:
        return None
    launcher, grid, function, packed_metadata, bound = launches[0][:5]
    form = call_form(launcher)
    if (
        form is None
        or not x.is_contiguous()
        or not y.is_contiguous()
        or y.shape != x.shape
        or y.dtype != x.dtype
        or y.device != x.device
    ):
        return None
    x_ptr, y_ptr = x.data_ptr(), y.data_ptr()
    if x_ptr == y_ptr or (x_ptr | y_ptr) & 15:
        return None
    template, inputs, outputs = [], [], []
    for index, arg in enumerate(bound):
        if isinstance(arg, torch.Tensor):
            pointer = arg.data_ptr()
            if pointer == x_ptr:
                inputs.append(index)
            elif pointer == y_ptr:
                outputs.append(index)
            else:
                return None  # a workspace or a staging copy: state the replay would not reproduce
            template.append(None)
        else:
            template.append(arg)
    if not inputs or not outputs:
        return None
    if stream is None:
        from triton.runtime import driver

        stream = driver.active.get_current_stream
    coop, pdl = launcher.launch_cooperative_grid, launcher.launch_pdl
    if form == "3.6":  # launch(grid, stream, function, coop, pdl, global scratch, profile scratch, metadata, *args)
        middle = (function, coop, pdl, None, None, packed_metadata, None, None, None)
    else:  # launch(grid, stream, function, coop, pdl, metadata, scratch x2, annotations, signature, args)
        middle = (
            function,
            coop,
            pdl,
            packed_metadata,
            None,
            None,
            None,
            None,
            None,
            launcher.arg_annotations,
            launcher.kernel_signature,
        )
    grid_x, grid_y, grid_z = (tuple(grid) + (1, 1))[:3]
    return Replay(
        launcher.launch,
        (grid_x, grid_y, grid_z),
        middle,
        template,
        tuple(inputs),
        tuple(outputs),
        form == "3.7",
        x.device.index if x.device.index is not None else 0,
        stream,
    )
