"""Launch records: `auto`'s first call at a known shape in a fresh process, through the CUDA driver, with no Triton.

When `auto` launches one Triton kernel for a new contiguous input (no PDL, no scratch memory), `save` writes a record
of it into the kernel store (kernels/aot.py's root): the cubin, the function name, grid, block, shared memory,
cluster size, cooperative flag and the packed kernel parameters with the slots of the input and output pointers
(kernels/native.py's pack_params); a split-row launch (splitrow, staged_split) also names its workspace slots (each
replay gets new zeroed buffers, as under CUDA-graph capture); a shape the table hands to torch.softmax is recorded as
such. A later process's `kernels.softmax(x, variant="auto")` (or `softmax_auto(x)`) at the same (GPU, dtype, rows R,
columns N) takes `run`: it loads the cubin with cuModuleLoadData (shared-memory and cluster limits raised where
recorded) and launches it with cuLaunchKernel, or cuLaunchKernelEx for clusters and cooperative grids, on torch's
current stream: no Triton import, no compile, no host module build (the first call's cost is the file reads and the
module load).
`python -m profiling warm` also plans a record for every shape of auto's tuning table without a GPU
(profiling/measure/warm.py's plan_records: no SM count; split-row grids are marked 'resident' and resolved at load
from the driver's occupancy, as their launchers do); `warm --record` (on a GPU) records them by launching.

Layout: <root>/launches/<gpu key>/<dtype>-<R>x<N>.json and <root>/launches/<gpu key>/cubin/<sha256>.cubin, <root>
being $BLOCKSCOPE_KERNEL_CACHE (0 or off: no records), default ${XDG_CACHE_HOME:-~/.cache}/blockscope/kernels.

A record is used only when every check passes: its format; the GPU name, compute capability and (where the record
names one) SM count of x's device; the digest of the kernel sources (kernels/*.py) and of the tuning table auto
would read now; the cubin's sha256; the kernel's parameter sizes as the driver reports them (CUDA 12.4+). A record
made by other sources or another table is skipped silently (auto records the shape again); a corrupt or refused one
is reported once as a one-line RuntimeWarning. Either way the call takes auto's own path: never a crash, never
another shape's launch. Repeated calls of a recorded shape stay here (the native module's replay once that is built,
kernels/native.py).
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import struct
import sys
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from . import aot, native, tables, triton_startup
from ._common import DTYPE_NAMES, DTYPES_BY_NAME

FORMAT = 1
FOLDER = "launches"
MAX_RECORD_BYTES = 64 * 1024  # a record is about 1 KB; anything larger is not one
MAX_CUBIN_BYTES = 64 * 2**20
MAX_RECORDS = 4096  # per GPU folder: past this no new records are written
WORKSPACE_PARAMS = ("stats_ptr", "counter_ptr", "control_ptr")  # splitrow's workspace (_split_row_workspace)
WORKSPACE_NEEDED = ("stats_ptr", "control_ptr")  # staged_split takes these two of it (no counters)
WORKSPACE_MAX_CHUNKS = 1024  # splitrow.MAX_CHUNKS (a test checks they agree)
WORKSPACE_VARIANTS = ("splitrow", "staged_split")  # not replayable in-process (a workspace), but recorded
_DYNAMIC_SHARED_LIMIT = 49152  # bytes of dynamic shared memory a launch may take without opting in
_ATTR_MAX_DYNAMIC_SHARED = 8  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
_ATTR_NON_PORTABLE_CLUSTER = 14  # CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED
_LAUNCH_COOPERATIVE = 2  # CU_LAUNCH_ATTRIBUTE_COOPERATIVE
_LAUNCH_CLUSTER_DIMENSION = 4  # CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
_LAUNCH_CLUSTER_POLICY = 5  # CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE
_CLUSTER_POLICY_SPREAD = 1  # CU_CLUSTER_SCHEDULING_POLICY_SPREAD, as Triton's launcher asks

_REPORTED: set[str] = set()
_LOCK = threading.Lock()
_ENTRIES: dict[tuple, Any] = {}  # (sizes, dtype, device index) -> _Entry, "torch", or False (no usable record)
_DIGESTS: dict[str, str] = {}
NATIVE_RUN: Callable[[torch.Tensor], torch.Tensor | None] | None = None  # native run, once an entry is registered


def enabled() -> bool:
    """Whether records are read and written (the kernel store is not turned off)."""
    return aot.store_root() is not None


def records_dir(gpu_name: str) -> Path | None:
    """<store root>/launches/<gpu key>, or None when the store is off."""
    root = aot.store_root()
    return None if root is None else root / FOLDER / tables.gpu_key(gpu_name)


def record_name(dtype: torch.dtype, n_rows: int, n_cols: int) -> str:
    return f"{DTYPE_NAMES[dtype]}-{n_rows}x{n_cols}.json"


def report(problem: str) -> None:
    """One RuntimeWarning per distinct problem, saying that auto's own path runs instead."""
    if problem in _REPORTED:
        return
    _REPORTED.add(problem)
    warnings.warn(f"blockscope launch record: {problem}; taking auto's own path", RuntimeWarning, stacklevel=3)


def sources_digest() -> str:
    """sha256 of the kernel sources (every kernels/*.py, by name): a record of other sources is never used."""
    if "sources" not in _DIGESTS:
        digest = hashlib.sha256()
        for path in sorted(Path(__file__).parent.glob("*.py")):
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
        _DIGESTS["sources"] = digest.hexdigest()
    return _DIGESTS["sources"]


def table_digest(gpu_name: str) -> str:
    """sha256 of the tuning table auto reads for this GPU now ('none' without one)."""
    auto = sys.modules.get(f"{__package__}.auto")  # a package in use puts its table first (imports auto)
    path = tables.table_path(gpu_name, auto.PACKAGE_TABLE_DIRS if auto is not None else ())
    if path is None:
        return "none"
    stat = path.stat()
    key = f"table:{path}:{stat.st_mtime_ns}:{stat.st_size}"
    if key not in _DIGESTS:
        _DIGESTS[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return _DIGESTS[key]


@dataclass(frozen=True)
class Device:
    """What a record must match of the GPU it runs on."""

    name: str
    capability: int  # 90 for sm_90
    sm_count: int

    @staticmethod
    def of(index: int) -> Device:
        props = torch.cuda.get_device_properties(index)
        return Device(props.name, 10 * props.major + props.minor, props.multi_processor_count)


# ---------------------------------------------------------------- writing (auto's first call at a shape)


def record_of(variant: str, tunables: dict, launch: tuple | None, x: torch.Tensor, y: torch.Tensor) -> dict:
    """The record of auto's launch for x (launch: kernels._common.run_compiled's tuple; None for a torch choice)
    without the cubin bytes (key 'cubin_bytes' holds them). ValueError when the launch cannot be recorded."""
    rows_n = x.shape[-1] if x.dim() else 1
    record: dict[str, Any] = {
        "format": FORMAT,
        "dtype": DTYPE_NAMES[x.dtype],
        "n_rows": x.numel() // max(1, rows_n),
        "n_cols": int(rows_n),
        "variant": variant,
        "tunables": dict(tunables),
    }
    if launch is None:
        return record
    from .replay import call_form

    launcher, grid, _function, packed_metadata, bound, compiled = launch
    if call_form(launcher) is None:
        raise ValueError("not a Triton 3.6/3.7 launch without scratch memory")
    if launcher.launch_pdl:
        raise ValueError("a PDL launch")
    num_warps, num_ctas, shared = (int(v) for v in packed_metadata)
    if not 1 <= num_ctas <= 16:
        raise ValueError(f"a cluster of {num_ctas} programs")
    if not x.is_contiguous() or not y.is_contiguous() or x.shape != y.shape:
        raise ValueError("input and output must be contiguous and of one shape")
    names = list(compiled.src.signature)
    pointers = {arg.data_ptr(): name for name, arg in zip(names, bound, strict=True) if name in WORKSPACE_PARAMS}
    packed = native.pack_params(native.signature_of(compiled), list(bound), x, y, workspace=pointers)
    if packed.named:  # split-row programs: each replay gets new zeroed buffers (_split_row_workspace)
        if variant not in WORKSPACE_VARIANTS:
            raise ValueError(f"{variant}: a launch with a workspace")
        from .registry import get_variant

        plan = get_variant(variant).plan(record["n_rows"], record["n_cols"], x.dtype, **tunables)
        record["workspace"] = {
            "chunks": int(plan.constexprs["CHUNKS"]),
            "slots": dict(packed.named),
        }
    cubin = compiled.asm.get("cubin")
    if not isinstance(cubin, bytes) or not cubin.startswith(aot.ELF_MAGIC):
        raise ValueError("the compiled kernel has no cubin")
    grid_xyz = [int(g) for g in (tuple(grid) + (1, 1))[:3]]
    cooperative = bool(launcher.launch_cooperative_grid)
    record.update(launch_fields(str(compiled.metadata.name), grid_xyz, 32 * num_warps, shared, num_ctas, cooperative))
    record.update(packed_fields(packed, cubin))
    return record


def launch_fields(function: str, grid: list[int], block: int, shared: int, num_ctas: int, cooperative: bool) -> dict:
    """A record's launch configuration: function name, grid (programs x, y, z; clusters along x where num_ctas >
    1), threads per program, dynamic shared memory per program (bytes), programs per cluster, cooperative flag."""
    return {
        "function": function,
        "grid": grid,
        "block": block,
        "shared": shared,
        "num_ctas": num_ctas,
        "cooperative": cooperative,
    }


def packed_fields(packed: native.PackedParams, cubin: bytes) -> dict:
    """A record's parameters (the blob, each parameter's offset and size, the input and output pointer slots) and
    kernel (the cubin's sha256, the Triton version, and the cubin itself under 'cubin_bytes', which write() stores
    apart)."""
    return {
        "blob": packed.blob.hex(),
        "offsets": list(packed.offsets),
        "sizes": list(packed.sizes),
        "x_slots": list(packed.x_slots),
        "y_slots": list(packed.y_slots),
        "cubin": hashlib.sha256(cubin).hexdigest(),
        "triton": aot.triton_version(),
        "cubin_bytes": cubin,
    }


def save(variant: str, tunables: dict, launch: tuple | None, x: torch.Tensor, y: torch.Tensor) -> Path | None:
    """Write the record of auto's first launch for x (see the module doc); the record's path, or None where none is
    written (store off, not recordable, folder full or not writable). Never raises."""
    try:
        if not x.is_cuda or not enabled():
            return None
        device = Device.of(x.device.index if x.device.index is not None else torch.cuda.current_device())
        folder = records_dir(device.name)
        record = record_of(variant, tunables, launch, x, y)
        record.update(
            gpu=device.name,
            capability=device.capability,
            sm_count=device.sm_count,
            sources=sources_digest(),
            table=table_digest(device.name),
        )
        return write(folder, record, record.pop("cubin_bytes", None))
    except (ValueError, TypeError, KeyError, AttributeError, OSError, RuntimeError):
        return None


def write(folder: Path, record: dict, cubin: bytes | None) -> Path | None:
    """Write a record (and its cubin, by sha256) into `folder`, each file atomically (a temporary file renamed:
    concurrent writers and kills leave the old file or the new one); nothing is rewritten when the same record is
    there. None when the folder already holds MAX_RECORDS other records. OSError when it is not writable."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / record_name(DTYPES_BY_NAME[record["dtype"]], record["n_rows"], record["n_cols"])
    if not path.exists() and sum(1 for _ in folder.glob("*.json")) >= MAX_RECORDS:
        return None
    if cubin is not None:
        cubin_path = folder / "cubin" / f"{record['cubin']}.cubin"
        if not cubin_path.is_file():
            cubin_path.parent.mkdir(exist_ok=True)
            aot.write_atomic(cubin_path, cubin)
    data = json.dumps(record, sort_keys=True).encode()
    try:
        same = path.stat().st_size == len(data) and path.read_bytes() == data
    except OSError:
        same = False
    if not same:  # another process of these sources recorded the same launch: nothing to write
        aot.write_atomic(path, data)
    return path


# ---------------------------------------------------------------- reading


_INT_FIELDS = ("n_rows", "n_cols", "capability")
_LAUNCH_INT_FIELDS = ("block", "shared")
_LAUNCH_LIST_FIELDS = ("grid", "offsets", "sizes", "x_slots", "y_slots")


def check_record(record: object, device: Device, dtype: torch.dtype, n_rows: int, n_cols: int) -> str | None:
    """Why a parsed record may not be used for this device and input (None: it may). Problems that mean 'made by
    other sources or another table' start with 'stale:'."""
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        return f"not a Blockscope launch record (format {FORMAT})"
    for name in _INT_FIELDS:
        if type(record.get(name)) is not int:
            return f"field {name!r} is not an integer"
    if record.get("dtype") not in DTYPES_BY_NAME or DTYPES_BY_NAME[record["dtype"]] != dtype:
        return f"made for dtype {record.get('dtype')!r}, not {DTYPE_NAMES[dtype]}"
    if (record["n_rows"], record["n_cols"]) != (n_rows, n_cols):
        return f"made for {record['n_rows']}x{record['n_cols']} rows, not {n_rows}x{n_cols}"
    sm_count = record.get("sm_count")  # null: a planned record, whose grid does not depend on the SM count
    if "sm_count" not in record or (sm_count is not None and type(sm_count) is not int):
        return "field 'sm_count' is not an integer or null"
    made_on = (record.get("gpu"), record["capability"], device.sm_count if sm_count is None else sm_count)
    if made_on != (device.name, device.capability, device.sm_count):
        return (
            f"made on {record.get('gpu')} (sm_{record['capability']}, {sm_count} SMs), not on "
            f"{device.name} (sm_{device.capability}, {device.sm_count} SMs)"
        )
    if record.get("sources") != sources_digest():
        return "stale: made by other kernel sources"
    if record.get("table") != table_digest(device.name):
        return "stale: made with another tuning table"
    if not isinstance(record.get("variant"), str):
        return "field 'variant' is not a name"
    if record["variant"] == "torch":
        return None
    for name in _LAUNCH_INT_FIELDS:
        if type(record.get(name)) is not int or record[name] < 0:
            return f"field {name!r} is not a non-negative integer"
    for name in _LAUNCH_LIST_FIELDS:
        value = record.get(name)
        if not isinstance(value, list) or not all(type(v) is int and v >= 0 for v in value):
            return f"field {name!r} is not a list of non-negative integers"
    if len(record["grid"]) != 3 or 0 in record["grid"] or not 1 <= record["block"] <= 1024:
        return "grid or block out of range"
    if type(record.get("num_ctas", 1)) is not int or not 1 <= record.get("num_ctas", 1) <= 16:
        return "field 'num_ctas' is not a cluster size of 1 to 16"
    if type(record.get("cooperative", False)) is not bool:
        return "field 'cooperative' is not true or false"
    resident = record.get("resident")
    chunks = resident.get("chunks") if isinstance(resident, dict) else None
    if resident is not None and (type(chunks) is not int or not 1 <= chunks <= WORKSPACE_MAX_CHUNKS):
        return f"field 'resident' has no chunk count of 1 to {WORKSPACE_MAX_CHUNKS}"
    problem = _workspace_problem(record.get("workspace"), record["offsets"], record["sizes"])
    if problem is not None:
        return problem
    try:
        blob = bytes.fromhex(str(record.get("blob")))
    except ValueError:
        return "field 'blob' is not hex"
    offsets, sizes = record["offsets"], record["sizes"]
    if not 16 <= len(blob) <= native.MAX_PARAM_BYTES or len(offsets) != len(sizes) or len(offsets) > native.MAX_PARAMS:
        return "parameter blob out of range"
    if any(o + s > len(blob) for o, s in zip(offsets, sizes, strict=True)):
        return "a parameter ends past the blob"
    slots = record["x_slots"] + record["y_slots"]
    if not record["x_slots"] or not record["y_slots"] or any(s not in offsets or s + 8 > len(blob) for s in slots):
        return "pointer slots are not 8-byte parameters of the blob"
    if any(sizes[offsets.index(s)] != 8 for s in slots):
        return "pointer slots are not 8-byte parameters of the blob"
    name, cubin = record.get("function"), record.get("cubin")
    if not isinstance(name, str) or not name.isidentifier() or not isinstance(cubin, str) or len(cubin) != 64:
        return "function name or cubin digest missing"
    return None


def _workspace_problem(workspace: object, offsets: list, sizes: list) -> str | None:
    """Why a record's 'workspace' field is malformed (None: absent or well formed)."""
    if workspace is None:
        return None
    chunks = workspace.get("chunks") if isinstance(workspace, dict) else None
    if type(chunks) is not int or not 1 <= chunks <= WORKSPACE_MAX_CHUNKS:
        return f"field 'workspace' has no chunk count of 1 to {WORKSPACE_MAX_CHUNKS}"
    slots = workspace.get("slots")
    if not isinstance(slots, dict) or not set(WORKSPACE_NEEDED) <= set(slots) <= set(WORKSPACE_PARAMS):
        return (
            f"field 'workspace' does not name the slots {', '.join(WORKSPACE_NEEDED)} (and at most "
            f"{', '.join(sorted(set(WORKSPACE_PARAMS) - set(WORKSPACE_NEEDED)))})"
        )
    if any(type(v) is not int or v not in offsets or sizes[offsets.index(v)] != 8 for v in slots.values()):
        return "workspace slots are not 8-byte parameters of the blob"
    return None


def read_record(path: Path) -> object:
    """The parsed record at `path` (at most MAX_RECORD_BYTES read), or None when there is none; ValueError when it is
    not JSON or too large."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_RECORD_BYTES + 1)
    except FileNotFoundError:
        return None
    if len(data) > MAX_RECORD_BYTES:
        raise ValueError(f"larger than {MAX_RECORD_BYTES} bytes")
    return json.loads(data)


def read_cubin(folder: Path, digest: str) -> bytes:
    """The cubin of a record, checked against its sha256; ValueError when missing, too large or changed."""
    path = folder / "cubin" / f"{digest}.cubin"
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_CUBIN_BYTES + 1)
    except OSError as error:
        raise ValueError(f"{path}: cannot read ({error.strerror})") from None
    if len(data) > MAX_CUBIN_BYTES or not data.startswith(aot.ELF_MAGIC) or hashlib.sha256(data).hexdigest() != digest:
        raise ValueError(f"{path}: truncated, changed or not a cubin (sha256 differs)")
    return data


# ---------------------------------------------------------------- the CUDA driver (ctypes; torch already loaded it)


class _LaunchAttribute(ctypes.Structure):  # CUlaunchAttribute: an id, padding to 8 bytes, a 64-byte value union
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_uint * 16)]


class _LaunchConfig(ctypes.Structure):  # CUlaunchConfig
    _fields_ = [
        ("grid", ctypes.c_uint * 3),
        ("block", ctypes.c_uint * 3),
        ("shared", ctypes.c_uint),
        ("stream", ctypes.c_void_p),
        ("attrs", ctypes.POINTER(_LaunchAttribute)),
        ("count", ctypes.c_uint),
    ]


class _Driver:
    def __init__(self) -> None:
        lib = ctypes.CDLL("libcuda.so.1")
        vp, u, i = ctypes.c_void_p, ctypes.c_uint, ctypes.c_int
        self.module_load_data = lib.cuModuleLoadData
        self.module_load_data.argtypes = [ctypes.POINTER(vp), ctypes.c_char_p]
        self.module_unload = lib.cuModuleUnload
        self.module_unload.argtypes = [vp]
        self.module_get_function = lib.cuModuleGetFunction
        self.module_get_function.argtypes = [ctypes.POINTER(vp), vp, ctypes.c_char_p]
        self.func_set_attribute = lib.cuFuncSetAttribute
        self.func_set_attribute.argtypes = [vp, i, i]
        self.ctx_get_current = lib.cuCtxGetCurrent
        self.ctx_get_current.argtypes = [ctypes.POINTER(vp)]
        self.launch_kernel = lib.cuLaunchKernel
        self.launch_kernel.argtypes = [vp, u, u, u, u, u, u, u, vp, ctypes.POINTER(vp), ctypes.POINTER(vp)]
        self.launch_kernel_ex = lib.cuLaunchKernelEx  # CUDA 11.8+
        self.launch_kernel_ex.argtypes = [ctypes.POINTER(_LaunchConfig), vp, ctypes.POINTER(vp), ctypes.POINTER(vp)]
        self.launch_kernel_ex.restype = i
        self.get_error_name = lib.cuGetErrorName
        self.get_error_name.argtypes = [i, ctypes.POINTER(ctypes.c_char_p)]
        self.occupancy = lib.cuOccupancyMaxActiveBlocksPerMultiprocessor
        self.occupancy.argtypes = [ctypes.POINTER(i), vp, i, ctypes.c_size_t]
        self.occupancy.restype = i
        self.func_get_param_info = getattr(lib, "cuFuncGetParamInfo", None)  # CUDA 12.4+
        if self.func_get_param_info is not None:
            size_p = ctypes.POINTER(ctypes.c_size_t)
            self.func_get_param_info.argtypes = [vp, ctypes.c_size_t, size_p, size_p]
        for function in (self.module_load_data, self.module_unload, self.module_get_function, self.func_set_attribute):
            function.restype = i
        for function in (self.ctx_get_current, self.launch_kernel, self.get_error_name):
            function.restype = i
        if self.func_get_param_info is not None:
            self.func_get_param_info.restype = i

    def error(self, status: int) -> str:
        name = ctypes.c_char_p()
        if self.get_error_name(status, ctypes.byref(name)) != 0 or not name.value:
            return f"CUresult {status}"
        return name.value.decode()

    def current_context(self) -> int:
        context = ctypes.c_void_p()
        return context.value or 0 if self.ctx_get_current(ctypes.byref(context)) == 0 else 0


_DRIVER: _Driver | None = None


def driver() -> _Driver:
    global _DRIVER
    if _DRIVER is None:
        _DRIVER = _Driver()
    return _DRIVER


class _Entry:
    """A loaded record: its function in the context of one device and a launch ready to go: the parameter storage
    (the recorded blob; each call writes its pointers in, under a lock: the driver copies the parameters before
    the launch call returns) and the pointer array to it; for a cluster or a cooperative grid, cuLaunchKernelEx's
    configuration; for a split-row launch, a new zeroed workspace (_split_row_workspace)."""

    def __init__(self, record: dict, function: int, module: int, device: int, context: int) -> None:
        self.function, self.module, self.device, self.context = function, module, device, context
        self.n_rows = record["n_rows"]
        self.grid = tuple(record["grid"])
        self.block, self.shared = record["block"], record["shared"]
        self.num_ctas = record.get("num_ctas", 1)
        self.cooperative = record.get("cooperative", False)
        self.blob = bytes.fromhex(record["blob"])
        self.pointers, self.sizes = tuple(record["offsets"]), tuple(record["sizes"])
        self.x_slots, self.y_slots = tuple(record["x_slots"]), tuple(record["y_slots"])
        self.workspace = record.get("workspace")
        self.storage = ctypes.create_string_buffer(self.blob, len(self.blob))
        base = ctypes.addressof(self.storage)
        self.params = (ctypes.c_void_p * len(self.pointers))(*(base + offset for offset in self.pointers))
        self.lock = threading.Lock()
        self.native = self.workspace is not None  # registered in the native module, tried, or not for it
        self.calls = 0
        settings: list[tuple[int, tuple[int, ...]]] = []
        if self.cooperative:  # every program resident at once, as Triton's launcher asks
            settings.append((_LAUNCH_COOPERATIVE, (1,)))
        if self.num_ctas > 1:  # clusters of num_ctas programs along x, as Triton's launcher forms them
            settings.append((_LAUNCH_CLUSTER_DIMENSION, (self.num_ctas, 1, 1)))
            settings.append((_LAUNCH_CLUSTER_POLICY, (_CLUSTER_POLICY_SPREAD,)))
        self.config = None
        if settings:
            self.attributes = (_LaunchAttribute * len(settings))()
            for attribute, (identifier, values) in zip(self.attributes, settings, strict=True):
                attribute.id = identifier
                attribute.value[: len(values)] = values
            self.config = _LaunchConfig()
            self.config.grid[:] = (self.grid[0] * self.num_ctas, self.grid[1], self.grid[2])
            self.config.block[:] = (self.block, 1, 1)
            self.config.shared = self.shared
            self.config.attrs = self.attributes
            self.config.count = len(settings)

    def launch(self, x: torch.Tensor, x_pointer: int, y_pointer: int, stream: int) -> int:
        """Enqueue the kernel on `stream` for these pointers; the driver's status (0: launched)."""
        cu = driver()
        with self.lock:
            for offset in self.x_slots:
                struct.pack_into("Q", self.storage, offset, x_pointer)
            for offset in self.y_slots:
                struct.pack_into("Q", self.storage, offset, y_pointer)
            if self.workspace is not None:
                stats, counters, control = _split_row_workspace(x.device, self.n_rows, self.workspace["chunks"])
                slots = self.workspace["slots"]
                for name, tensor in (("stats_ptr", stats), ("counter_ptr", counters), ("control_ptr", control)):
                    if name in slots:  # staged_split takes no counters
                        struct.pack_into("Q", self.storage, slots[name], tensor.data_ptr())
            if self.config is None:
                return cu.launch_kernel(
                    self.function, *self.grid, self.block, 1, 1, self.shared, stream, self.params, None
                )
            self.config.stream = stream
            return cu.launch_kernel_ex(ctypes.byref(self.config), self.function, self.params, None)


def _split_row_workspace(device: torch.device, n_rows: int, chunks: int) -> tuple[torch.Tensor, ...]:
    """(stats, counters, control) of one split-row launch, new and zeroed (control [epoch 1, 0 programs exited]):
    the buffers kernels/splitrow.py's workspace() gives a splitrow or staged_split launch under CUDA-graph capture,
    so every replay is
    independent of earlier launches (two small kernels fill them: a memset of 16 x R x chunks + 8 x R bytes and a
    2-element arange, against a launch that reads and writes R x N elements). A copy of those three lines, not a call:
    importing kernels/splitrow.py imports Triton, which a replay from records never does."""
    zeros = torch.zeros(n_rows * chunks * 2 + n_rows, dtype=torch.int64, device=device)
    control = torch.arange(1, -1, -1, dtype=torch.int64, device=device)
    return zeros[: n_rows * chunks * 2], zeros[n_rows * chunks * 2 :], control


def _load_module(record: dict, cubin: bytes, device: int) -> _Entry:
    """cuModuleLoadData + cuModuleGetFunction in the current context (the shared-memory limit raised where the
    launch needs more than 48 KB, clusters over 8 allowed where recorded, parameter sizes checked where the driver
    reports them); RuntimeError naming the driver's error."""
    cu = driver()
    context = cu.current_context()
    if not context:
        raise RuntimeError("no current CUDA context")
    module = ctypes.c_void_p()
    status = cu.module_load_data(ctypes.byref(module), cubin)
    if status != 0:
        raise RuntimeError(f"the driver refused the cubin ({cu.error(status)})")
    try:
        function = ctypes.c_void_p()
        status = cu.module_get_function(ctypes.byref(function), module, record["function"].encode())
        if status != 0:
            raise RuntimeError(f"no function {record['function']} in the cubin ({cu.error(status)})")
        settings = []
        if record["shared"] > _DYNAMIC_SHARED_LIMIT:
            settings.append((_ATTR_MAX_DYNAMIC_SHARED, record["shared"], f"{record['shared']} bytes of shared memory"))
        if record.get("num_ctas", 1) > 8:
            settings.append((_ATTR_NON_PORTABLE_CLUSTER, 1, f"clusters of {record['num_ctas']} programs"))
        for attribute, value, what in settings:
            status = cu.func_set_attribute(function, attribute, value)
            if status != 0:
                raise RuntimeError(f"{what} refused ({cu.error(status)})")
        if cu.func_get_param_info is not None:
            sizes = record["sizes"]
            for index in range(len(sizes) + 1):
                offset, size = ctypes.c_size_t(), ctypes.c_size_t()
                status = cu.func_get_param_info(function, index, ctypes.byref(offset), ctypes.byref(size))
                if index == len(sizes):
                    if status == 0:
                        raise RuntimeError(f"the kernel takes more than the {len(sizes)} recorded parameters")
                elif status != 0 or size.value != sizes[index]:
                    raise RuntimeError(f"kernel parameter {index} is {size.value} bytes, recorded {sizes[index]}")
        if record.get("resident") is not None:
            record = {**record, "grid": _resident_grid(function, record, device)}
    except RuntimeError:
        cu.module_unload(module)
        raise
    return _Entry(record, function.value, module.value, device, context)


def _resident_grid(function: ctypes.c_void_p, record: dict, device: int) -> list[int]:
    """The grid of a planned split-row record, as its launcher resolves it: rows in flight = SMs x blocks per SM
    (the driver's occupancy of this function at the record's block and shared memory) // chunks, at most R, times
    chunks programs. RuntimeError when one row's programs do not fit at once (the launcher runs 'online' then)."""
    cu = driver()
    blocks = ctypes.c_int(0)
    status = cu.occupancy(ctypes.byref(blocks), function, record["block"], record["shared"])
    if status != 0:
        raise RuntimeError(f"the occupancy query failed ({cu.error(status)})")
    resident = blocks.value * torch.cuda.get_device_properties(device).multi_processor_count
    chunks = record["resident"]["chunks"]
    if resident < chunks:
        raise RuntimeError(f"a row's {chunks} programs do not fit on this GPU at once ({resident} resident)")
    return [min(record["n_rows"], resident // chunks) * chunks, 1, 1]


def lookup(x: torch.Tensor) -> Any:
    """The loaded record for a contiguous CUDA input like x: an _Entry, 'torch', or False (none usable)."""
    key = (tuple(x.shape), x.dtype, x.device.index)
    found = _ENTRIES.get(key)
    if found is not None:
        return found
    with _LOCK:
        found = _ENTRIES.get(key)
        if found is None:
            found = _ENTRIES[key] = _load(x)
            if len(_ENTRIES) > 4096:
                _ENTRIES.clear()
                _ENTRIES[key] = found
    return found


def _load(x: torch.Tensor) -> Any:
    if not enabled() or x.dim() == 0 or x.dtype not in DTYPE_NAMES:
        return False
    n_cols = x.shape[-1]
    if n_cols == 0:
        return False
    n_rows = x.numel() // n_cols
    where = f"{DTYPE_NAMES[x.dtype]} {n_rows}x{n_cols}"
    try:
        device = Device.of(x.device.index)
        folder = records_dir(device.name)
        path = folder / record_name(x.dtype, n_rows, n_cols)
        where = str(path)
        record = read_record(path)
        if record is None:
            return False
        problem = check_record(record, device, x.dtype, n_rows, n_cols)
        if problem is not None:
            if not problem.startswith("stale:"):
                report(f"{path}: {problem}")
            return False
        if record["variant"] == "torch":
            return "torch"
        return _load_module(record, read_cubin(folder, record["cubin"]), x.device.index)
    except (ValueError, RuntimeError, OSError, KeyError, TypeError) as error:
        report(f"{where}: {str(error).splitlines()[0] if str(error) else type(error).__name__}")
        return False


_NATIVE_STARTED: list[threading.Thread] = []  # the thread of the first native.load() of this process


def _register_native(entry: _Entry, x: torch.Tensor) -> None:
    """Hand a loaded record to the native module (built in the background on first use), so repeated calls take
    its C++ path. The process's first try runs native.load() on a thread: where no module is built it starts the
    compiler (a subprocess, 1-2 ms on the H200 host, which the second call paid before)."""
    global NATIVE_RUN
    if not _NATIVE_STARTED:
        thread = threading.Thread(target=native.load, name="blockscope-native-load", daemon=True)
        _NATIVE_STARTED.append(thread)
        thread.start()
        return
    if _NATIVE_STARTED[0].is_alive():
        return
    module = native.load()  # once loaded or given up: the module at once; while a build runs: a file check a second
    if module is None:
        return
    try:
        module.register(
            x,
            entry.function,
            entry.grid,
            entry.block,
            entry.shared,
            entry.num_ctas,
            entry.cooperative,
            False,
            entry.blob,
            entry.pointers,
            entry.sizes,
            entry.x_slots,
            entry.y_slots,
            entry,
        )
    except (ValueError, RuntimeError, TypeError):
        entry.native = True  # do not retry: this process keeps the Python launch
        return
    entry.native = True
    NATIVE_RUN = module.run


_current_device = getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or (
    lambda index: torch.cuda.current_stream(index).cuda_stream
)


def run(x: torch.Tensor) -> torch.Tensor | None:
    """softmax over the last dim of x by its launch record (or torch.softmax where the record says so); None where
    there is no usable record or x does not fit one (not a plain contiguous CUDA tensor, autograd, unaligned, not
    on the current device, another current CUDA context than the one the record's module was loaded in). A CUDA
    input that gets None begins Triton's start-up on a thread (kernels/triton_startup.py): auto's own path follows."""
    if type(x) is not torch.Tensor or not x.is_cuda:
        return None
    y = _run(x)
    if y is None:
        triton_startup.begin()  # the process's first miss only
    return y


def _run(x: torch.Tensor) -> torch.Tensor | None:
    if x.requires_grad and torch.is_grad_enabled():
        return None
    if not x.is_contiguous() or _current_device() != x.device.index:  # a module loads into the current context
        return None
    entry = lookup(x)
    if entry is False:
        return None
    if isinstance(entry, str):  # the table hands this shape to torch.softmax
        return torch.softmax(x, -1)
    x_pointer = x.data_ptr()
    if x_pointer & 15 or driver().current_context() != entry.context:  # the module lives in that context
        return None
    y = torch.empty_like(x)
    y_pointer = y.data_ptr()
    if y_pointer & 15:
        return None
    status = entry.launch(x, x_pointer, y_pointer, _raw_stream(entry.device))
    if status != 0:  # nothing was launched (a cooperative grid that does not fit now, ...): auto's own path
        with _LOCK:
            _ENTRIES[(tuple(x.shape), x.dtype, x.device.index)] = False
        report(f"{DTYPE_NAMES[x.dtype]} {tuple(x.shape)}: the launch failed ({driver().error(status)})")
        return None
    if not entry.native and entry.calls and native.enabled():  # from the second call: the first starts nothing
        _register_native(entry, x)
    entry.calls += 1
    return y


def clear() -> None:
    """Forget loaded records (after a new table or store); their modules stay loaded until the process ends."""
    global NATIVE_RUN
    with _LOCK:
        _ENTRIES.clear()
        _DIGESTS.clear()
    NATIVE_RUN = None
