"""Native replay of recorded launches: `auto`'s repeated call in one C call (kernels/native_launch.cpp).

kernels/replay.py replays a recorded launch from Python: torch.empty_like plus Triton's C launch function, which
together cost as much host time as torch.softmax's whole call (docs/kernel-changes.md). The native module does
the same work in C++: look up the launch recorded for the input's (device, dtype, sizes), allocate the output with
at::empty, patch the two pointers into the packed kernel parameters, cuLaunchKernelEx on the current stream, and
return the tensor; None wherever it cannot (the caller then takes its Python path).

Built once per (source, torch, Python) into $BLOCKSCOPE_CACHE_DIR/native (default ~/.cache/blockscope/native); it
needs a C++17 compiler and torch's headers, no CUDA toolkit (the driver is opened at run time, cuda.h is Triton's
copy). `load()` never waits for a compiler: on a CUDA machine where no build exists it starts one in a detached
background process (`python -m blockscope.kernels.native`, one per cache at a time, log beside the build) and
`auto` keeps the Python replay until the module is there (checked at most once a second). A failed build leaves a
marker, so later processes do not retry for a day. `python -m profiling native --build` (`make native`) builds in
the foreground; BLOCKSCOPE_NATIVE_AUTOBUILD=0 stops the background build, BLOCKSCOPE_NATIVE=0 the whole path.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import struct
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import torch

SOURCE = Path(__file__).with_name("native_launch.cpp")
MODULE_NAME = "_blockscope_native"
ENV = "BLOCKSCOPE_NATIVE"
AUTOBUILD_ENV = "BLOCKSCOPE_NATIVE_AUTOBUILD"
BUILD_TIMEOUT_S = 600
RECHECK_S = 1.0  # while a background build runs, load() looks for its module at most this often
RETRY_FAILED_S = 86400.0  # a failed background build is not retried before this (s), unless its marker is removed
MAX_PARAMS = 64  # the C++ side's limits (kMaxParams, kMaxParamBytes)
MAX_PARAM_BYTES = 1024

# Triton signature type -> struct format of the kernel parameter (Triton's launcher passes these C types)
_FORMATS = {
    "i1": "b",
    "i8": "b",
    "u1": "B",
    "u8": "B",
    "i16": "h",
    "u16": "H",
    "i32": "i",
    "u32": "I",
    "i64": "q",
    "u64": "Q",
    "fp32": "f",
    "f32": "f",
    "fp64": "d",
}
_SCRATCH_PARAMS = 2  # Triton 3.6 and 3.7 kernels end with two pointers: global and profile scratch (null here)

_loaded: ModuleType | None = None
_load_error: str | None = None
_tried = False
_building = False  # a background build (ours or another process's) is expected to produce module_path()
_next_check = 0.0
_build_process: subprocess.Popen | None = None


def enabled() -> bool:
    """Whether the native path may be used in this process (BLOCKSCOPE_NATIVE is not 0)."""
    return os.environ.get(ENV, "1") != "0"


def cache_dir() -> Path:
    base = os.environ.get("BLOCKSCOPE_CACHE_DIR") or Path.home() / ".cache" / "blockscope"
    return Path(base) / "native"


def _triton_include() -> Path:
    import triton

    return Path(triton.__file__).parent / "backends" / "nvidia" / "include"


def build_tag() -> str:
    """What a build depends on: the source, torch's version and ABI, the Python version."""
    digest = hashlib.sha256(SOURCE.read_bytes())
    digest.update(f"{torch.__version__}|{torch._C._GLIBCXX_USE_CXX11_ABI}|{sys.version}".encode())
    return digest.hexdigest()[:16]


def module_path() -> Path:
    """Where this source's build for this torch and Python lives."""
    return cache_dir() / build_tag() / f"{MODULE_NAME}.so"


def compile_command(output: Path) -> list[str]:
    """The compiler call that builds the module into `output`."""
    from torch.utils.cpp_extension import include_paths, library_paths

    compiler = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++") or "c++"
    libs = library_paths()
    return [
        compiler,
        "-O2",
        "-std=c++17",
        "-shared",
        "-fPIC",
        "-w",
        f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}",
        *(f"-I{path}" for path in include_paths()),
        f"-I{sysconfig.get_paths()['include']}",
        f"-I{_triton_include()}",
        str(SOURCE),
        "-o",
        str(output),
        *(f"-L{path}" for path in libs),
        *(f"-Wl,-rpath,{path}" for path in libs),
        "-lc10",
        "-ltorch",
        "-ltorch_cpu",
        "-ltorch_python",
        "-ldl",
    ]


@dataclass(frozen=True)
class BuildResult:
    path: Path
    seconds: float  # compile wall time (0 when the build existed)
    cached: bool

    def summary(self) -> str:
        """One line for scripts and the CLI: 'cached (path)' or 'N.N s (path)'."""
        return f"{'cached' if self.cached else f'{self.seconds:.1f} s'} ({self.path})"


def build(force: bool = False) -> BuildResult:
    """Compile the module unless this source's build exists (RuntimeError with the compiler's message if it fails).
    Written under a temporary name and renamed, so concurrent builders never load half a file."""
    target = module_path()
    if target.is_file() and not force:
        return BuildResult(target, 0.0, True)
    if not (_triton_include() / "cuda.h").is_file():
        raise RuntimeError(f"native build: Triton's cuda.h not found under {_triton_include()}")
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(suffix=".so", dir=target.parent)
    os.close(handle)
    start = time.perf_counter()
    try:
        try:
            done = subprocess.run(
                compile_command(Path(temporary)), capture_output=True, text=True, timeout=BUILD_TIMEOUT_S
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise RuntimeError(
                f"native build: the C++ compiler could not run ({error}); allowed: set CXX to a C++17 compiler"
            ) from error
        if done.returncode != 0:
            message = (done.stderr or done.stdout).strip().splitlines()
            raise RuntimeError("native build failed: " + " | ".join(message[-6:]))
        os.replace(temporary, target)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return BuildResult(target, time.perf_counter() - start, False)


def _load_module(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(MODULE_NAME, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load() -> ModuleType | None:
    """The built module (loaded once), or None: turned off, not built yet for this source/torch/Python (a build
    may be running in the background: see background_build), or it failed to load (load_error() says why). Never
    waits for a compiler."""
    global _loaded, _load_error, _tried, _building, _next_check
    if _tried and not _building:
        return _loaded
    if _building:
        now = time.monotonic()
        if now < _next_check:
            return None
        _next_check = now + RECHECK_S
    _tried = True
    if not enabled():
        _load_error = f"{ENV}=0"
        return None
    path = module_path()
    if not path.is_file():
        _load_error = _background_state() if _building else background_build()
        return None
    _building = False
    try:
        module = _load_module(path)
    except (ImportError, OSError) as error:
        _load_error = f"{path} did not load: {error}"
        return None
    _loaded, _load_error = module, None
    return module


def build_log() -> Path:
    """The background build's log (compiler output, or why it failed)."""
    return module_path().with_name("build.log")


def _failed_marker() -> Path:
    return module_path().with_name("build.failed")


def _lock() -> Path:
    return module_path().with_name("build.lock")


def _failed_text() -> str:
    return f"not built (the background build failed, see {build_log()}; python -m profiling native --build)"


def _background_argv() -> list[str]:
    return [sys.executable, "-m", "blockscope.kernels.native"]


def background_build() -> str:
    """Start building the module in a detached process unless one runs, a recent one failed, or this is no CUDA
    machine; returns the state in words (what load_error() reports meanwhile)."""
    global _building, _build_process, _next_check
    if os.environ.get(AUTOBUILD_ENV, "1") == "0":
        return f"not built ({AUTOBUILD_ENV}=0; python -m profiling native --build)"
    if not torch.cuda.is_available():
        return "not built (no CUDA here; python -m profiling native --build)"
    failed = _failed_marker()
    if failed.is_file() and time.time() - failed.stat().st_mtime < RETRY_FAILED_S:
        return _failed_text()
    lock = _lock()
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        if lock.is_file() and time.time() - lock.stat().st_mtime > BUILD_TIMEOUT_S + 60:
            lock.unlink(missing_ok=True)  # a builder that died without cleaning up
        descriptor = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        _building, _next_check = True, time.monotonic() + RECHECK_S
        return f"not built yet (another process is building it, log {build_log()})"
    except OSError as error:
        return f"not built (cannot write {lock.parent}: {error.strerror}; python -m profiling native --build)"
    os.close(descriptor)
    try:
        with open(build_log(), "w") as log:
            _build_process = subprocess.Popen(
                _background_argv(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
    except OSError as error:
        lock.unlink(missing_ok=True)
        return f"not built (the background build could not start: {error.strerror})"
    _building, _next_check = True, time.monotonic() + RECHECK_S
    return f"not built yet (building in the background, log {build_log()})"


def _background_state() -> str:
    """While waiting for a background build: still running, or how it ended."""
    global _building
    if _build_process is not None and _build_process.poll() is not None and not module_path().is_file():
        _building = False
        return _failed_text()
    if _build_process is None and not _lock().is_file() and not module_path().is_file():
        _building = False  # the other process's build ended without a module
        return f"not built (the background build did not finish, see {build_log()})"
    return f"not built yet (building in the background, log {build_log()})"


def _main() -> int:
    """The background builder: build, then drop the lock; on failure leave the marker (and the message in the log)."""
    try:
        result = build()
        print(f"native build: {result.summary()}", flush=True)
        _failed_marker().unlink(missing_ok=True)
        return 0
    except Exception as error:  # noqa: BLE001 - the message is the log's last line, the marker stops retries
        print(f"native build failed: {error}", flush=True)
        _failed_marker().touch()
        return 1
    finally:
        _lock().unlink(missing_ok=True)


def loaded() -> ModuleType | None:
    """The module if load() has already loaded it, else None; never tries to load."""
    return _loaded


def load_error() -> str | None:
    """Why load() returned None (None when it has not been tried or succeeded)."""
    return _load_error


def reset() -> None:
    """Forget the loaded module, every registered launch and any background build's state (tests; after a rebuild,
    load() tries again)."""
    global _loaded, _load_error, _tried, _building, _next_check, _build_process
    if _loaded is not None and hasattr(_loaded, "clear"):
        _loaded.clear()
    _loaded, _load_error, _tried, _building, _next_check, _build_process = None, None, False, False, 0.0, None


@dataclass(frozen=True)
class PackedParams:
    blob: bytes  # every parameter at an offset aligned to its size
    offsets: tuple[int, ...]
    sizes: tuple[int, ...]
    x_slots: tuple[int, ...]  # offsets of parameters that take the input pointer
    y_slots: tuple[int, ...]  # ... the output pointer
    named: tuple[tuple[str, int], ...] = ()  # (name, offset) of the workspace pointers given to pack_params


def pack_params(
    signature: list[str], bound: list, x: torch.Tensor, y: torch.Tensor, workspace: dict[int, str] | None = None
) -> PackedParams:
    """The kernel parameters of a recorded launch as Triton's launcher passes them: one per non-constexpr entry of
    the compiled signature (pointers 8 bytes, ints and floats by type), then the two scratch pointers (null). Tensor
    arguments must be x or y (their slots are patched per call), or a pointer named in `workspace` (data pointer ->
    name: slots the caller fills, in `named`). ValueError for anything else (tuples, fp16 scalars, other tensors),
    so the caller keeps the Python replay."""
    if len(signature) != len(bound):
        raise ValueError(f"{len(signature)} signature entries for {len(bound)} bound arguments")
    blob = bytearray()
    offsets, sizes, x_slots, y_slots, named = [], [], [], [], []
    x_ptr, y_ptr = x.data_ptr(), y.data_ptr()

    def put(fmt: str, value: object) -> int:
        size = struct.calcsize(fmt)
        blob.extend(b"\0" * (-len(blob) % size))  # natural alignment
        offset = len(blob)
        blob.extend(struct.pack(fmt, value))
        offsets.append(offset)
        sizes.append(size)
        return offset

    for kind, arg in zip(signature, bound, strict=True):
        if kind == "constexpr":
            continue
        if not isinstance(kind, str):
            raise ValueError(f"parameter type {kind!r} (a tuple) is not packed")
        if kind.startswith("*"):
            if not isinstance(arg, torch.Tensor):
                raise ValueError(f"pointer parameter bound to {type(arg).__name__}")
            pointer = arg.data_ptr()
            if pointer == x_ptr:
                x_slots.append(put("Q", 0))
            elif pointer == y_ptr:
                y_slots.append(put("Q", 0))
            elif workspace and pointer in workspace:
                named.append((workspace[pointer], put("Q", 0)))
            else:
                raise ValueError("a tensor argument other than the input and output rows")
            continue
        fmt = _FORMATS.get(kind)
        if fmt is None or isinstance(arg, torch.Tensor):
            raise ValueError(f"parameter type {kind!r} is not packed")
        put(fmt, float(arg) if fmt in "fd" else int(arg))
    for _ in range(_SCRATCH_PARAMS):
        put("Q", 0)
    if not x_slots or not y_slots:
        raise ValueError("the launch does not take both the input and the output")
    if len(offsets) > MAX_PARAMS or len(blob) > MAX_PARAM_BYTES:
        raise ValueError(f"{len(offsets)} parameters / {len(blob)} bytes; allowed: {MAX_PARAMS} / {MAX_PARAM_BYTES}")
    return PackedParams(bytes(blob), tuple(offsets), tuple(sizes), tuple(x_slots), tuple(y_slots), tuple(named))


def signature_of(compiled: object) -> list[str]:
    """Parameter types of a CompiledKernel in parameter order ('constexpr' for constexprs), from its source."""
    signature = getattr(getattr(compiled, "src", None), "signature", None)
    if not isinstance(signature, dict):
        raise ValueError("the compiled kernel has no source signature")
    return list(signature.values())


def register(module: ModuleType, launch: tuple, x: torch.Tensor, y: torch.Tensor) -> None:
    """Register one recorded launch (kernels._common.run_compiled's record) for inputs like x in `module`.
    ValueError/RuntimeError when the launch cannot be replayed natively."""
    from triton import knobs

    from .replay import _hook_chain_type, _live_calls, call_form

    launcher, grid, function, packed_metadata, bound, compiled = launch
    if call_form(launcher) is None:
        raise ValueError("not a Triton 3.6/3.7 launch without scratch memory")
    if not x.is_contiguous() or not y.is_contiguous() or x.shape != y.shape or (x.data_ptr() | y.data_ptr()) & 15:
        raise ValueError("input and output must be contiguous, 16-byte aligned and of one shape")
    packed = pack_params(signature_of(compiled), list(bound), x, y)
    num_warps, num_ctas, shared = (int(v) for v in packed_metadata)
    grid_x, grid_y, grid_z = (tuple(int(g) for g in grid) + (1, 1))[:3]
    runtime = knobs.runtime
    chain = _hook_chain_type()
    enter, exit_ = runtime.launch_enter_hook, runtime.launch_exit_hook
    module.hooks(runtime, enter, exit_, _live_calls(enter, chain), _live_calls(exit_, chain))
    module.register(
        x,
        int(function),
        (grid_x, grid_y, grid_z),
        32 * num_warps,
        shared,
        num_ctas,
        bool(launcher.launch_cooperative_grid),
        bool(launcher.launch_pdl),
        packed.blob,
        packed.offsets,
        packed.sizes,
        packed.x_slots,
        packed.y_slots,
        compiled,
    )


if __name__ == "__main__":
    sys.exit(_main())
