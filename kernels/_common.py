"""Input validation, row reshaping and launch helpers shared by every variant.

Nothing here imports streamlit or plotly; it must run on Triton 3.6 and 3.7.
"""

from __future__ import annotations

import ctypes
import functools
import os
import time
import warnings
from collections.abc import Callable

import torch

from . import aot
from .plan import LaunchPlan

SUPPORTED_DTYPES: tuple[torch.dtype, ...] = (torch.float16, torch.bfloat16, torch.float32)
DTYPE_NAMES: dict[torch.dtype, str] = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}
DTYPES_BY_NAME: dict[str, torch.dtype] = {name: dtype for dtype, name in DTYPE_NAMES.items()}
NUM_WARPS_ALLOWED: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
INT32_MAX = 2**31 - 1
VECTOR_BYTES = 16  # one ld/st.global.v4: 8 fp16/bf16 or 4 fp32 elements


def interpreting() -> bool:
    """True when Triton runs kernels on the CPU interpreter (TRITON_INTERPRET=1 before import)."""
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")


@functools.cache
def triton_interprets() -> bool:
    """Whether Triton itself was imported with TRITON_INTERPRET=1: it decides once, at import, when it decorates its
    own helpers (tl.max, ...) as interpreter functions; setting the variable later leaves them GPU-only."""
    try:
        from triton.language import standard
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:  # another Triton layout: trust the variable
        return interpreting()
    return isinstance(standard.max, InterpretedFunction)


def next_power_of_2(n: int) -> int:
    """Smallest power of two >= n (1 for n <= 1), the seed's BLOCK_SIZE rule."""
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def is_power_of_2(n: int) -> bool:
    return isinstance(n, int) and n > 0 and n & (n - 1) == 0


def dtype_from_name(name: str | torch.dtype) -> torch.dtype:
    """'fp16' / 'bf16' / 'fp32' (or a torch dtype) -> torch dtype; ValueError names the allowed values."""
    if isinstance(name, torch.dtype):
        if name not in SUPPORTED_DTYPES:
            raise TypeError(f"unsupported dtype {name}; allowed: {', '.join(DTYPE_NAMES.values())}")
        return name
    aliases = {"float16": "fp16", "half": "fp16", "bfloat16": "bf16", "float32": "fp32", "float": "fp32"}
    key = aliases.get(str(name).lower(), str(name).lower())
    if key not in DTYPES_BY_NAME:
        raise ValueError(f"unknown dtype {name!r}; allowed: {', '.join(DTYPES_BY_NAME)}")
    return DTYPES_BY_NAME[key]


def check_input(x: object, variant: str, max_n: int) -> torch.Tensor:
    """Validate a softmax input and return it viewed as rows [R, N] with unit column stride.

    Raises TypeError for a non-tensor or unsupported dtype, ValueError for a wrong device (a CPU tensor needs
    TRITON_INTERPRET=1 set before triton was imported), a 0-d tensor or N over the variant's limit (unless the
    tensor is empty). Cheap on the common path (2-D, unit column stride):
    it runs on every launch.
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{variant}: expected a torch.Tensor, got {type(x).__name__}")
    if x.requires_grad and torch.is_grad_enabled():  # raw launchers record no graph: never drop gradients silently
        raise RuntimeError(
            f"{variant}: x requires grad and raw launchers have no autograd; allowed: "
            "kernels.softmax(x, variant=...) (autograd) or a call under torch.no_grad()"
        )
    if x.dtype not in SUPPORTED_DTYPES:
        raise TypeError(
            f"{variant}: unsupported dtype {x.dtype}; allowed: {', '.join(str(d) for d in SUPPORTED_DTYPES)}"
        )
    if not x.is_cuda:
        if not interpreting():
            raise ValueError(
                f"{variant}: tensor on {x.device}; allowed: a cuda tensor "
                "(or set TRITON_INTERPRET=1 before importing triton to run on the CPU)"
            )
        if x.device.type != "cpu":
            raise ValueError(f"{variant}: tensor on {x.device}; allowed with TRITON_INTERPRET=1: cpu or cuda")
        if not triton_interprets():
            raise ValueError(
                f"{variant}: tensor on cpu, but TRITON_INTERPRET=1 was set after triton was imported "
                "(its kernels are GPU-only now); allowed: set TRITON_INTERPRET=1 before importing "
                "triton, or a cuda tensor"
            )
    shape = x.shape
    if not shape:
        raise ValueError(f"{variant}: softmax needs at least one dimension, got a 0-d tensor")
    n_cols = shape[-1]
    if n_cols > max_n and x.numel() > 0:  # an empty tensor has nothing to compute at any N
        raise ValueError(f"{variant}: N={n_cols} is over this variant's limit; allowed: 1 <= N <= {max_n}")
    if x.stride(-1) != 1 and x.numel() > 0:
        x = x.contiguous()  # kernels address columns with unit stride: copy a strided last dim
    if len(shape) == 2:
        return x
    n_rows = 1
    for size in shape[:-1]:
        n_rows *= size
    return x.reshape(n_rows, n_cols)


def vector_elements(dtype: torch.dtype, n_cols: int) -> int:
    """Elements per 16-byte vector when N is a multiple of it, else 1: the VEC constexpr of row kernels.

    Triton proves a row start 16-byte aligned only from integer arguments divisible by 16 (its launch
    specialization), so at N=1000 fp16 (row stride 2000 bytes, a multiple of 16) it issues 2-byte loads. A
    kernel given VEC rounds the row stride and N down to multiples of VEC (exact: the launcher checks them), which
    Triton can see, and loads and stores whole vectors.
    """
    vec = VECTOR_BYTES // dtype.itemsize
    return vec if n_cols % vec == 0 else 1


def launch_constexprs(constexprs: dict[str, int], *row_tensors: torch.Tensor) -> dict[str, int]:
    """The plan's constexprs, with VEC dropped to 1 when a tensor's row stride is not a multiple of it."""
    vec = constexprs.get("VEC", 1)
    if vec == 1 or all(t.stride(0) % vec == 0 for t in row_tensors):
        return constexprs
    return {**constexprs, "VEC": 1}


def cached_plans(plan: Callable[..., LaunchPlan]) -> Callable[[int, int, torch.dtype, dict], LaunchPlan]:
    """Memoize a variant's plan() per (R, N, dtype, tunables) so a launch does not rebuild it.

    Invalid tunables are never cached: plan() raises on every call.
    """
    cache: dict[tuple, LaunchPlan] = {}

    def get(n_rows: int, n_cols: int, dtype: torch.dtype, tunables: dict) -> LaunchPlan:
        try:
            key = (n_rows, n_cols, dtype, *sorted(tunables.items()))
            found = cache.get(key)
        except TypeError:  # unhashable or unorderable tunable values: let plan() name the problem
            return plan(n_rows, n_cols, dtype, **tunables)
        if found is None:
            if len(cache) >= 4096:
                cache.clear()
            found = cache[key] = plan(n_rows, n_cols, dtype, **tunables)
        return found

    return get


def prepare_launch(
    x: object, variant: str, max_n: int, plans: Callable[[int, int, torch.dtype, dict], LaunchPlan], tunables: dict
) -> tuple[torch.Tensor, LaunchPlan, torch.Tensor]:
    """The launcher prologue every variant shares: validated rows [R, N], the memoized plan, the output rows
    (tunable `out`, from kernels.softmax only: a checked output viewable as rows [R, N], written in place)."""
    out = tunables.pop("out", None)
    rows = check_input(x, variant, max_n)
    n_rows, n_cols = rows.shape
    plan_n = n_cols if 1 <= n_cols <= max_n else 1  # empty rows of any N: the plan only validates the tunables
    output = empty_like_rows(rows) if out is None else out.view(rows.shape)
    return rows, plans(n_rows, plan_n, rows.dtype, tunables), output


def empty_like_rows(rows: torch.Tensor) -> torch.Tensor:
    """Contiguous output rows [R, N] in the input dtype."""
    return torch.empty(rows.shape, dtype=rows.dtype, device=rows.device)


def check_tunables(variant: str, given: dict, allowed: dict[str, str]) -> None:
    """Reject tunables this variant does not take; `allowed` maps name -> description."""
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        names = ", ".join(sorted(allowed)) or "none"
        raise ValueError(f"{variant}: unknown tunable(s) {', '.join(unknown)}; allowed: {names}")


def check_int_choice(variant: str, name: str, value: object, choices: tuple[int, ...]) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value not in choices:
        raise ValueError(f"{variant}: {name}={value!r} is not allowed; allowed: {', '.join(map(str, choices))}")
    return value


def check_power_of_2(variant: str, name: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not is_power_of_2(value) or not low <= value <= high:
        raise ValueError(f"{variant}: {name}={value!r} is not allowed; allowed: a power of two from {low} to {high}")
    return value


def check_int_range(variant: str, name: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{variant}: {name}={value!r} is not allowed; allowed: an integer from {low} to {high}")
    return value


def specialization_key(args: tuple) -> tuple:
    """What Triton specializes a launch on besides constexprs: pointer dtypes and 16-byte alignment, integers
    divisible by 16, equal to 1 or needing 64 bits. Kernels compiled for the same constexprs differ across these
    (vector widths, registers, hence occupancy), so anything cached per compiled kernel keys on this too."""
    key = []
    for arg in args:
        if isinstance(arg, torch.Tensor):
            key.append((arg.dtype, arg.data_ptr() % 16 == 0))
        elif isinstance(arg, int) and not isinstance(arg, bool):
            key.append((arg % 16 == 0, arg == 1, -(2**31) <= arg < 2**31))
        else:
            key.append(None)
    return tuple(key)


_COMPILED: dict[tuple, tuple | None] = {}
DIRECT_LAUNCH = os.environ.get("BLOCKSCOPE_DIRECT_LAUNCH", "1") != "0"  # 0: always through JITFunction.run


def launch(
    kernel,
    grid: tuple[int, ...],
    args: tuple,
    constexprs: dict[str, int],
    num_warps: int,
    num_stages: int = 1,
    cooperative: bool = False,
    options: dict[str, int] | None = None,
) -> None:
    """Launch a @triton.jit kernel: `args` are its runtime arguments in order, `constexprs` the rest by name.

    On a GPU the compiled kernel is cached here per (device, constexprs, options, Triton's specialization of
    `args`) and launched directly, skipping JITFunction.run's per-call argument binding and cache key (host
    time that decides launch-bound shapes). Under the interpreter, or if this Triton's CompiledKernel lacks
    what the direct path needs, the kernel is launched the usual way. `cooperative` compiles with Triton's
    `launch_cooperative_grid` option: the launch carries CU_LAUNCH_ATTRIBUTE_COOPERATIVE, so all its programs are
    resident together or the launch fails (RuntimeError); callers check `cooperative_launch_supported()` first.
    `options`: more Triton compile options (the plan's compile_options: maxnreg).
    """
    options = {**(options or {}), **({"launch_cooperative_grid": True} if cooperative and not interpreting() else {})}
    direct = None
    if DIRECT_LAUNCH and not interpreting() and args[0].is_cuda:
        direct = _direct(kernel, grid, args, constexprs, num_warps, num_stages, options)
    if direct is None:  # the interpreter, a CPU tensor, or no direct path on this Triton
        kernel[grid](*args, num_warps=num_warps, num_stages=num_stages, **options, **constexprs)
        if RECORDERS:
            RECORDERS[-1].append(None)  # not replayable (kernels/replay.py)
        return
    compiled, bound, stream, hooks = direct
    run_compiled(compiled, (tuple(grid) + (1, 1))[:3], stream, compiled.packed_metadata, bound, hooks)


RECORDERS: list[list] = []  # open kernels.replay.recording() blocks, innermost last


def run_compiled(
    compiled, grid: tuple[int, int, int], stream: int, packed_metadata: tuple, bound: list, hooks: tuple
) -> None:
    """CompiledKernel.run of one launch (grid in programs x, y, z; packed_metadata (num_warps, num_ctas, shared
    bytes)), reported to an open replay recording as (CudaLauncher, grid, CUfunction, packed metadata, bound
    arguments, CompiledKernel)."""
    compiled.run(
        grid[0],
        grid[1],
        grid[2],
        stream,
        compiled.function,
        packed_metadata,
        compiled.launch_metadata(grid, stream, *bound),
        *hooks,
        *bound,
    )
    if RECORDERS:
        RECORDERS[-1].append((compiled.run, grid, compiled.function, packed_metadata, bound, compiled))


def compiled_kernel(
    kernel,
    grid: tuple[int, ...],
    args: tuple,
    constexprs: dict[str, int],
    num_warps: int,
    num_stages: int = 1,
    options: dict | None = None,
) -> tuple:
    """(CompiledKernel, its bound arguments, current stream, (launch enter hook, exit hook)) of a GPU launch, for
    launchers that call CompiledKernel.run with launch metadata of their own (a cluster, more shared memory).
    `options`: more Triton compile options (maxnreg). Compiled once per key as in launch(); RuntimeError when this
    Triton's CompiledKernel lacks that path."""
    direct = _direct(kernel, grid, args, constexprs, num_warps, num_stages, options or {})
    if direct is None:
        import triton

        raise RuntimeError(
            f"{kernel.__name__}: Triton {triton.__version__} has no CompiledKernel.run launch path "
            "(Triton 3.6 and 3.7 do); allowed: another variant"
        )
    return direct


def _direct(kernel, grid, args, constexprs, num_warps, num_stages, options) -> tuple | None:
    """The cached compiled kernel of a launch with its bound arguments, stream and hooks; None without the path."""
    device = args[0].device.index
    key = (
        id(kernel),
        device,
        tuple(constexprs.items()),
        num_warps,
        num_stages,
        tuple(options.items()),
        specialization_key(args),
    )
    entry = _COMPILED.get(key, False)
    if entry is False:
        entry = _COMPILED[key] = _compiled_entry(kernel, grid, args, constexprs, num_warps, num_stages, options)
    if entry is None:
        return None
    compiled, slots, current_stream, knobs = entry
    values = iter(args)
    bound = [next(values) if name is None else name for name in slots]
    return compiled, bound, current_stream(device), (knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook)


def _compiled_entry(kernel, grid, args, constexprs, num_warps, num_stages, options=None) -> tuple | None:
    """(CompiledKernel, per-parameter slot: None for the next runtime arg or the constexpr's value, stream getter,
    triton.knobs), or None when this Triton version lacks one of them."""
    try:
        from triton import knobs
        from triton.runtime import driver

        compiled = compile_or_load(kernel, args, constexprs, num_warps, num_stages, options, grid)
        compiled._init_handles()
        slots = [constexprs[p.name] if p.is_constexpr else None for p in kernel.params]
        if sum(slot is None for slot in slots) != len(args):
            return None
        return compiled, slots, driver.active.get_current_stream, knobs
    except (AttributeError, ImportError, KeyError, TypeError):
        return None


def compile_or_load(
    kernel,
    args: tuple,
    constexprs: dict[str, int],
    num_warps: int,
    num_stages: int = 1,
    options: dict | None = None,
    grid: tuple[int, ...] = (1,),
):
    """The CompiledKernel of a GPU launch of `kernel` on `args`: the ahead-of-time store's (kernels/aot.py:
    `python -m profiling warm`) when it holds this specialization, else Triton's JIT (kernel.warmup). The first JIT
    compile of the process that takes over SLOW_COMPILE_S says so once (RuntimeWarning), naming the ahead-of-time
    route."""
    global _SLOW_COMPILE_SAID
    compiled = aot.load(kernel, args, constexprs, num_warps, num_stages, options, args[0].device.index)
    if compiled is None:
        start = _clock()
        compiled = kernel.warmup(
            *args, grid=grid, num_warps=num_warps, num_stages=num_stages, **(options or {}), **constexprs
        )
        seconds = _clock() - start
        if seconds > SLOW_COMPILE_S and not _SLOW_COMPILE_SAID:
            _SLOW_COMPILE_SAID = True
            name = getattr(kernel, "__name__", None) or getattr(getattr(kernel, "fn", None), "__name__", "a kernel")
            warnings.warn(
                f"blockscope: compiling {name} for this GPU took {seconds:.1f} s (once per shape class; Triton "
                "caches it on disk). `blockscope warm --arch sm_XX` compiles auto's kernels ahead of time "
                "(docs/deploy.md); said once per process",
                RuntimeWarning,
                stacklevel=3,
            )
    return compiled


SLOW_COMPILE_S = 1.0  # a JIT compile longer than this is reported (once per process)
_SLOW_COMPILE_SAID = False
_clock = time.perf_counter


@functools.cache
def cooperative_launch_supported() -> bool:
    """Whether this Triton's CUDA backend takes the `launch_cooperative_grid` option (Triton >= 3.3; 3.6 and 3.7 do),
    which launches through cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_COOPERATIVE."""
    try:
        from triton.backends.nvidia.compiler import CUDAOptions
    except ImportError:
        return False
    return "launch_cooperative_grid" in getattr(CUDAOptions, "__dataclass_fields__", {})


@functools.cache
def _libcuda() -> ctypes.CDLL:
    return ctypes.CDLL("libcuda.so.1")


def driver_blocks_per_sm(function_handle: int, num_warps: int, shared_bytes: int) -> int:
    """Blocks per SM from the CUDA driver (cuOccupancyMaxActiveBlocksPerMultiprocessor) for a loaded kernel."""
    blocks = ctypes.c_int(0)
    status = _libcuda().cuOccupancyMaxActiveBlocksPerMultiprocessor(
        ctypes.byref(blocks),
        ctypes.c_void_p(function_handle),
        ctypes.c_int(32 * num_warps),
        ctypes.c_size_t(shared_bytes),
    )
    if status != 0:
        raise RuntimeError(f"cuOccupancyMaxActiveBlocksPerMultiprocessor failed with CUresult {status}")
    return blocks.value
