"""`auto`: picks a variant and tunables per (GPU, dtype, N, R) from a tuning table made on that GPU.

Tables are JSON files written by `python -m profiling tune` (profiling/measure/autotune.py): the shipped ones in
kernels/tuned/, then the user's own in $BLOCKSCOPE_CACHE_DIR/autotune (default ~/.cache/blockscope/autotune),
which take precedence. An entry may name 'torch': the tuner found torch.softmax faster than every Triton
config there (launch-bound shapes, where Triton's host launch path costs more than torch's).
An entry is used for N in the same power-of-two bucket (its BLOCK_SIZE) and row alignment, nearest N then
nearest R; with no table for the GPU (or, under the CPU interpreter, an entry naming a GPU-only Gluon variant) a
heuristic picks (multirow for small N, one program per row for mid N, cooperating split-row programs for wide
rows). Under the CPU interpreter the first shipped table is used.

Eager mode: the table ranks GPU time; a plain Python loop of small calls is bound by the host path instead. A
repeated input (same shape, dtype, device) skips the checks, the table lookup and Triton's launch wrapper: its first
call records the launch and later contiguous calls replay it (kernels/replay.py: one allocation and the C launch).
When a small shape is called on an idle stream (nothing queued: the GPU waits for the host), the first such call
times auto's two eager paths from the idle stream (3 rounds of 8 calls each, well under 1 ms): the Triton path
(the replay) and the torch route (the stream check and torch.softmax). Where the Triton path is at least as fast,
later calls of that input take it without any stream check; where torch.softmax wins, idle calls take it and a
busy stream (work queued ahead, so the launch overlaps it) or a CUDA graph being captured takes the tuned Triton
choice. BLOCKSCOPE_AUTO_EAGER=0 turns the eager check off.

Native replay (kernels/native.py, once built by `python -m profiling native --build`): the recorded launch is also
registered in a C++ module whose one call does a repeated input's whole host path (lookup, allocation, launch); it is
the first thing softmax_auto tries. Its host path is shorter than torch.softmax's own, so an input it takes skips the
idle-stream check: the Triton kernel is the faster choice on an idle stream too.
"""

from __future__ import annotations

import functools
import json
import math
import os
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import torch

from . import launches as launch_records
from . import native, splitrow
from ._common import DTYPE_NAMES, check_input, check_tunables, empty_like_rows, interpreting, next_power_of_2
from .plan import LaunchPlan
from .reference import torch_softmax
from .tables import SHIPPED_DIR, gpu_key, table_path, user_table_dir  # noqa: F401 - auto.SHIPPED_DIR etc. stay

NAME = "auto"
TUNABLES: dict[str, str] = {}
TABLE_FORMAT = 1
MAX_N = splitrow.MAX_N  # the widest rows any choice takes (split-row programs; 'online' when a row cannot be resident)
EAGER_ENV = "BLOCKSCOPE_AUTO_EAGER"
EAGER_MAX_BYTES = 64 * 2**20  # read x + write y above this (~16 us at 4 TB/s) is never host-bound: no eager check
EAGER_CALLS, EAGER_ROUNDS = 8, 3
TORCH_REACH = 4  # a 'torch' entry stands for inputs up to this many times its elements; beyond, the bucket's nearest
# Triton entry (torch wins where the launch is the cost: bf16 4096x255 took it, and at 30000x200 torch.softmax took
# 12.5 us where fp16's multirow pick took 6.6, experiments/2026-12-01-bench-offgrid/bench_offgrid_h200.md)


@functools.cache
def _read_table(path: str, mtime: float) -> dict:
    with open(path) as handle:
        table = json.load(handle)
    if table.get("format") != TABLE_FORMAT or not isinstance(table.get("entries"), list):
        raise ValueError(f"{path}: not a Blockscope tuning table (format {TABLE_FORMAT})")
    return table


PACKAGE_TABLE_DIRS: list[Path] = []  # tuned/ folders of packages in use (kernels.aot.use_package), first to last


def load_table(gpu_name: str | None) -> dict | None:
    """The tuning table for a GPU name (a package's in use, then the user's, then shipped); for None (no GPU) the
    first shipped table."""
    path = table_path(gpu_name, PACKAGE_TABLE_DIRS)
    return None if path is None else _read_table(str(path), path.stat().st_mtime)


def heuristic_choice(n_rows: int, n_cols: int) -> tuple[str, dict[str, int]]:
    """Variant and tunables when no tuning table covers the shape."""
    block = next_power_of_2(n_cols)
    if block <= 1024:
        return "multirow", {}
    if block <= 16384:
        return "teaching", {"num_warps": min(32, max(4, block // 512))}
    # chunk 8192 unless a row of N would need more chunks than splitrow takes (8: the widest window slack)
    return "splitrow", {"chunk": max(8192, splitrow.default_chunk(n_cols, align=8)), "num_warps": 8}


def _nearest(entries: list[dict], n_rows: int, n_cols: int) -> dict:
    """The entry closest in log2 N, then in log2 R."""

    def distance(entry: dict) -> tuple[float, float]:
        return (
            abs(math.log2(int(entry["n_cols"])) - math.log2(n_cols)),
            abs(math.log2(max(1, int(entry["n_rows"]))) - math.log2(max(1, n_rows))),
        )

    return min(entries, key=distance)


WIDEST_BLOCK = 65536  # the widest BLOCK_SIZE = next_pow2(N) of any one-tile kernel (teaching, persistent)


def entry_group(n_cols: int) -> int:
    """The group of table entries that stand for rows of N: its BLOCK_SIZE bucket up to WIDEST_BLOCK; past it one group
    of all wider rows (no kernel there tiles by next_pow2(N), so a bucket boundary means nothing: 300000 columns are
    nearer 262144 than 524288, and fp32 300x300000 measured staged over 16 programs at 85% of copy where the 524288
    entry's splitrow took 75%, experiments/2026-12-01-staged-cluster). 0 stands for that wide group."""
    block = next_power_of_2(n_cols)
    return block if block <= WIDEST_BLOCK else 0


def choose(
    n_rows: int, n_cols: int, dtype: torch.dtype, gpu_name: str | None = None, on_that_gpu: bool = False
) -> tuple[str, dict[str, int]]:
    """(variant, tunables) for this shape from the table: among entries of the same group (entry_group: the BLOCK_SIZE
    bucket, or all rows wider than WIDEST_BLOCK) and the same
    row alignment (row_alignment: the widest load a row allows, 16, 8, 4 or 2 bytes), the nearest N, then the
    nearest R (an entry tuned on 16-byte rows says little about odd N, where every kernel loads 2 bytes at a time). A
    'torch' entry covers inputs up to TORCH_REACH times its size; past that the bucket's nearest Triton entry.
    A dtype without entries borrows those of another (bf16 <-> fp16 first: same bytes per element). Under the CPU
    interpreter a GPU-only pick falls back to the heuristic, unless `on_that_gpu` asks what the table's GPU runs."""
    from .registry import get_variant

    table = load_table(gpu_name)
    if table is not None:
        dtype_name = DTYPE_NAMES[dtype]
        group = entry_group(n_cols)
        same_bucket = [e for e in table["entries"] if entry_group(int(e["n_cols"])) == group]
        order = {"fp16": ("fp16", "bf16", "fp32"), "bf16": ("bf16", "fp16", "fp32"), "fp32": ("fp32", "fp16", "bf16")}
        for wanted in order[dtype_name]:
            entries = [e for e in same_bucket if e["dtype"] == wanted]
            if entries:
                alignment = row_alignment(n_cols, dtype.itemsize)
                aligned = [e for e in entries if row_alignment(int(e["n_cols"]), _ITEMSIZE[e["dtype"]]) == alignment]
                best = _nearest(aligned or entries, n_rows, n_cols)
                if best["variant"] == "torch" and n_rows * n_cols > TORCH_REACH * int(best["n_rows"]) * int(
                    best["n_cols"]
                ):  # torch won a launch-bound size; this input is far larger
                    triton_entries = [e for e in entries if e["variant"] != "torch"]
                    if not triton_entries:
                        break
                    best = _nearest(triton_entries, n_rows, n_cols)
                variant, tunables = best["variant"], dict(best.get("tunables", {}))
                if variant == "torch":  # the tuner measured torch.softmax fastest here (launch-bound shapes)
                    return variant, {}
                if get_variant(variant).gpu_only and interpreting() and not on_that_gpu:  # not on the interpreter
                    break
                if int(best["n_cols"]) != n_cols:  # keep the entry's columns per program
                    tunables = scaled_programs(tunables, int(best["n_cols"]), n_cols)
                fitted = fitted_tunables(variant, tunables, n_rows, n_cols, dtype)
                if fitted is None:
                    break
                return variant, fitted
    return heuristic_choice(n_rows, n_cols)


def fitted_tunables(
    variant: str, tunables: dict[str, int], n_rows: int, n_cols: int, dtype: torch.dtype
) -> dict[str, int] | None:
    """Tunables of a table entry that the variant's plan takes at this shape: the entry's own, else its num_warps
    with the rest at the variant's defaults for this N (an entry's threads_per_row at N=2048 can be too wide for
    N=1536's 1024-lane piece), else all defaults; None when none fits."""
    from .registry import get_variant

    spec = get_variant(variant)
    tried: list[dict[str, int]] = []
    for option in (tunables, {k: v for k, v in tunables.items() if k == "num_warps"}, {}):
        if option in tried:
            continue
        tried.append(option)
        try:
            spec.plan(n_rows, n_cols, dtype, **option)
        except ValueError:
            continue
        return option
    return None


_ITEMSIZE = {"fp16": 2, "bf16": 2, "fp32": 4}


def row_alignment(n_cols: int, itemsize: int) -> int:
    """Bytes of the widest load a row of N elements allows: the largest power of two up to 16 dividing N x itemsize
    (fp16 N=1000: 16; N=1002: 4; odd N: 2)."""
    row_bytes = n_cols * itemsize
    return min(16, row_bytes & -row_bytes) if row_bytes else 16


def scaled_chunks(chunks: int, tuned_n: int, n_cols: int, most: int | None = None) -> int:
    """Programs per row at N = n_cols for a table entry tuned with `chunks` at N = tuned_n: the same columns per
    program (cdiv(tuned_n, chunks)), 1 to `most` (default staged_split.MAX_CHUNKS). 300000 columns from an entry of 16
    chunks at 524288 take 10, where 16 would leave chunks empty (the plan refuses that)."""
    from .staged_split import MAX_CHUNKS

    per_program = -(-tuned_n // chunks)
    return max(1, min(MAX_CHUNKS if most is None else most, -(-n_cols // per_program)))


def scaled_programs(tunables: dict[str, int], tuned_n: int, n_cols: int) -> dict[str, int]:
    """An entry's tunables at another N: those that count programs per row (staged_split's `chunks`, staged's
    `cluster`) scaled by scaled_chunks to keep the entry's columns per program; the rest as they are."""
    from .cluster import MAX_CLUSTER
    from .staged_split import MAX_CHUNKS

    most = {"chunks": MAX_CHUNKS, "cluster": MAX_CLUSTER}
    return {
        name: scaled_chunks(int(value), tuned_n, n_cols, most[name]) if name in most else value
        for name, value in tunables.items()
    }


_DEVICE_NAMES: dict[int | None, str] = {}
_CHOICES: dict[tuple, tuple] = {}  # (R, N, dtype, gpu) -> (launcher, tunables, the variant is replayable)


def _device_name(x: torch.Tensor) -> str | None:
    if not x.is_cuda:
        return None
    index = x.device.index
    if index not in _DEVICE_NAMES:
        _DEVICE_NAMES[index] = torch.cuda.get_device_name(x.device)
    return _DEVICE_NAMES[index]


def clear_choices() -> None:
    """Forget memoized choices (after a new tuning table is written), eager timings, the eager setting and the
    launches registered for native replay."""
    global _NATIVE_RUN
    _CHOICES.clear()
    _EAGER.clear()
    _FAST.clear()
    launch_records.clear()
    module = native.loaded()
    if module is not None:
        module.clear()
    _NATIVE_RUN = None


def plan(n_rows: int, n_cols: int, dtype: torch.dtype, gpu_name: str | None = None, **tunables: int) -> LaunchPlan:
    """The chosen variant's plan (its `variant` field names the variant that runs)."""
    from .registry import get_variant

    check_tunables(NAME, tunables, TUNABLES)
    variant, chosen = choose(n_rows, n_cols, dtype, gpu_name)
    if variant == "torch":
        raise ValueError(
            f"{NAME}: for R={n_rows}, N={n_cols} the tuning table picks torch.softmax "
            "(faster than every Triton config measured): no Triton kernel to plan"
        )
    return get_variant(variant).plan(n_rows, n_cols, dtype, **chosen)


def signature(dtype: torch.dtype) -> dict[str, str]:
    raise ValueError("auto has no kernel of its own; inspect the variant its plan names")


_EAGER: dict[tuple, bool] = {}  # (R, N, dtype, gpu) -> torch.softmax is faster from an idle stream


def eager_wall_us(fn: Callable[[], object], calls: int, synchronize: Callable[[], None]) -> float:
    """Wall microseconds per call of `calls` back-to-back calls from an idle stream, host path included."""
    synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def eager_prefers_torch(
    triton_call: Callable[[], object],
    torch_call: Callable[[], object],
    synchronize: Callable[[], None],
    rounds: int = EAGER_ROUNDS,
    calls: int = EAGER_CALLS,
) -> tuple[bool, float, float]:
    """(torch faster?, best Triton us/call, best torch us/call) over `rounds` alternating rounds."""
    best_triton = best_torch = math.inf
    for _ in range(rounds):
        best_triton = min(best_triton, eager_wall_us(triton_call, calls, synchronize))
        best_torch = min(best_torch, eager_wall_us(torch_call, calls, synchronize))
    return best_torch < best_triton, best_triton, best_torch


def _eager_candidate(x: torch.Tensor, rows: torch.Tensor) -> bool:
    """Whether a launch of this input may be host-bound: a small CUDA input, not under the interpreter, the check on
    (decided once per shape and cached with the choice: clear_choices() reads BLOCKSCOPE_AUTO_EAGER again)."""
    if not x.is_cuda or interpreting() or os.environ.get(EAGER_ENV, "1") == "0":
        return False
    return 2 * rows.numel() * rows.element_size() <= EAGER_MAX_BYTES


_capturing = getattr(torch._C, "_cuda_isCurrentStreamCapturing", None) or torch.cuda.is_current_stream_capturing


def _host_bound(device: torch.device) -> bool:
    """Whether a launch now waits for the host: no CUDA graph being captured (querying a capturing stream would
    invalidate the capture, so that check comes first) and nothing queued on the current stream but, at most, this
    module's own last torch.softmax route on it (a plain loop of small calls: the kernel of the previous call is still
    running when the next one is checked; with work of others queued the launch overlaps it, GPU time decides)."""
    if _capturing():
        return False
    key, stream = _current_stream(device)
    if stream.query():
        return True
    own = _OWN_LAUNCHES.get(key)
    return own is not None and not own.query()


def _route_to_torch(x: torch.Tensor) -> torch.Tensor:
    """torch.softmax from a host-bound call, marked on the stream by an event (what _host_bound recognizes as its
    own)."""
    y = torch_softmax(x)
    key, stream = _current_stream(x.device)
    event = _OWN_LAUNCHES.get(key)
    if event is None:
        if len(_OWN_LAUNCHES) >= 256:
            _OWN_LAUNCHES.clear()
        event = _OWN_LAUNCHES[key] = torch.cuda.Event()
    event.record(stream)
    return y


_STREAMS: dict[tuple[int, int, int], torch.cuda.Stream] = {}
_OWN_LAUNCHES: dict[tuple[int, int, int], torch.cuda.Event] = {}  # stream -> event after auto's last torch route


def _current_stream(device: torch.device) -> tuple[tuple[int, int, int], torch.cuda.Stream]:
    """(torch's (stream id, device, type) triple, Stream) of the current CUDA stream of `device`, cached by the
    triple: building the Stream
    object is most of torch.cuda.current_stream()'s cost (6.8 us on the H200 host, as long as torch.softmax's whole
    host path). Not an ExternalStream of the raw handle: on the H200 that one's query() said idle on a busy default
    stream, so queued launches took the eager route (`scripts/_eagerdbg.py`, kernel-changes section 8)."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    getter = getattr(torch._C, "_cuda_getCurrentStream", None)
    if getter is None:
        stream = torch.cuda.current_stream(device)
        return (stream.stream_id, stream.device_index, stream.device_type), stream
    key = tuple(getter(index))
    stream = _STREAMS.get(key)
    if stream is None:
        if len(_STREAMS) >= 256:
            _STREAMS.clear()
        stream = _STREAMS[key] = torch.cuda.Stream(stream_id=key[0], device_index=key[1], device_type=key[2])
    return key, stream


class _Seen:
    """What softmax_auto keeps for a CUDA input seen before (shape, dtype, device): the chosen launcher and
    tunables, the eager key while idle calls still weigh torch.softmax (None once the Triton path is the faster
    one from an idle stream too, or for inputs never host-bound), and the replay of the launch (kernels/replay.py),
    recorded at the first contiguous Triton call of a replayable variant."""

    __slots__ = ("launcher", "variant", "chosen", "eager_key", "replayable", "recorded", "replay", "native")

    def __init__(
        self, launcher: Callable, chosen: dict, eager_key: tuple | None, replayable: bool, variant: str = ""
    ) -> None:
        self.launcher, self.variant, self.chosen, self.eager_key = launcher, variant, chosen, eager_key
        self.replayable, self.recorded, self.replay, self.native = replayable, False, None, False

    def launch(self, x: torch.Tensor) -> torch.Tensor:
        """The Triton path of a call: the replay when there is one and it takes x, else the launcher (recording
        its launch the first time a contiguous x comes)."""
        if self.replay is not None and x.is_contiguous():
            y = self.replay(x)
            if y is not None:
                return y
        recordable = self.replayable or self.variant in launch_records.WORKSPACE_VARIANTS
        if self.recorded or not recordable or not x.is_contiguous():
            return self.launcher(x, **self.chosen)
        from .replay import build, recording

        with recording() as launches:
            y = self.launcher(x, **self.chosen)
        self.recorded, self.replay = True, build(launches, x, y) if self.replayable else None
        if self.variant and len(launches) == 1 and launches[0] is not None:
            launch_records.save(self.variant, self.chosen, launches[0], x, y)  # a later process's first call
        if self.replay is not None and len(launches) == 1 and _register_native(launches[0], x, y):
            self.native, self.eager_key = True, None  # its host path is shorter than torch.softmax's: no check
        return y


_NATIVE_RUN: Callable[[torch.Tensor], torch.Tensor | None] | None = None  # native module's run, once it has a launch
NATIVE_FAILURES: list[str] = []  # why launches could not be registered for native replay (first 16)
_NATIVE_WARNED = False


def _register_native(launch: tuple, x: torch.Tensor, y: torch.Tensor) -> bool:
    """Register a replayable launch in the native module where one is built; whether it was."""
    global _NATIVE_RUN, _NATIVE_WARNED
    module = native.load()
    if module is None:
        if not _NATIVE_WARNED and native.enabled():
            _NATIVE_WARNED = True
            warnings.warn(
                f"blockscope auto: native replay not in use ({native.load_error()}); repeated calls take "
                "the Python replay, a few us more host time per call than torch.softmax. Build it once "
                "with `python -m profiling native --build` (BLOCKSCOPE_NATIVE=0 silences this)",
                RuntimeWarning,
                stacklevel=4,
            )
        return False
    try:
        native.register(module, launch, x, y)
    except (ValueError, RuntimeError, TypeError) as error:
        if len(NATIVE_FAILURES) < 16:
            NATIVE_FAILURES.append(f"{tuple(x.shape)} {x.dtype}: {error}")
        return False
    _NATIVE_RUN = module.run
    return True


_FAST: dict[tuple, _Seen] = {}  # (shape, dtype, device) of a CUDA input seen before -> what its calls take


def softmax_auto(x: torch.Tensor, **tunables: int) -> torch.Tensor:
    """Softmax over the last dim with the variant and tunables tuned for this GPU, dtype and shape."""
    if not tunables and _NATIVE_RUN is not None:
        y = _NATIVE_RUN(x)  # a repeated input's whole call in C++, or None
        if y is not None:
            return y
    return softmax_auto_after_native(x, tunables)


def softmax_auto_after_native(x: torch.Tensor, tunables: dict) -> torch.Tensor:
    """softmax_auto once the native replay has declined x (or was not tried): the Python replay of a repeated
    input, the eager route, or the checked first call. kernels.softmax(variant="auto") calls it after its own native
    try, so a miss looks the input up once."""
    if not tunables and type(x) is torch.Tensor and not (x.requires_grad and torch.is_grad_enabled()):
        seen = _FAST.get((x.shape, x.dtype, x.device))  # the choice made for this input before: no re-validation
        if seen is None and x.is_cuda:
            y = launch_records.run(x)  # a launch recorded by an earlier process (kernels/launches.py)
            if y is not None:
                return y
        if seen is not None:
            replayed = seen.replay
            if replayed is not None and seen.eager_key is None and x.is_contiguous():  # the common repeat call
                y = replayed(x)
                if y is not None:
                    return y
            if seen.eager_key is not None and _host_bound(x.device) and _eager_prefers_torch(seen, x):
                return _route_to_torch(x)
            return seen.launch(x)
    return _softmax_auto_checked(x, tunables)


def _softmax_auto_checked(x: torch.Tensor, tunables: dict) -> torch.Tensor:
    """softmax_auto's first call for an input (validation, choice, the fast path's entry) and calls with `out`."""
    from .registry import get_variant

    out = tunables.pop("out", None)  # from kernels.softmax: Triton launchers write into it, torch's route does not
    check_tunables(NAME, tunables, TUNABLES)
    rows = check_input(x, NAME, MAX_N)
    n_rows, n_cols = rows.shape
    if rows.numel() == 0:
        return empty_like_rows(rows).view(x.shape)
    key = (n_rows, n_cols, x.dtype, _device_name(x))
    if key not in _CHOICES:
        if len(_CHOICES) >= 4096:
            _CHOICES.clear()
        variant, chosen = choose(*key)
        entry = None if variant == "torch" else get_variant(variant)
        _CHOICES[key] = (
            torch_softmax if entry is None else entry.launcher,
            variant,
            chosen,
            entry is not None and entry.replayable,
        )
        if entry is None and out is None and x.is_cuda and x.is_contiguous():
            launch_records.save(variant, chosen, None, x, x)  # the table hands this shape to torch.softmax
    launcher, variant, chosen, replayable = _CHOICES[key]
    eager_key = key if launcher is not torch_softmax and _eager_candidate(x, rows) else None
    seen = _Seen(launcher, chosen, eager_key, replayable, variant)
    if x.is_cuda and not interpreting() and type(x) is torch.Tensor:
        if len(_FAST) >= 4096:
            _FAST.clear()
        _FAST[(x.shape, x.dtype, x.device)] = seen
    if eager_key is not None and _host_bound(x.device) and _eager_prefers_torch(seen, x):
        return _route_to_torch(x)  # kernels.softmax copies it into `out` where one was given, as on torch's route
    if out is None and launcher is not torch_softmax and x.is_cuda and not interpreting():
        return seen.launch(x)
    return launcher(x, **chosen) if out is None or launcher is torch_softmax else launcher(x, out=out, **chosen)


def _eager_prefers_torch(seen: _Seen, x: torch.Tensor) -> bool:
    """From an idle stream: whether auto's torch route (this check and torch.softmax) beats its Triton path (the
    replay where there is one) for this shape, timed once per (R, N, dtype, GPU). Where Triton is at least as fast,
    the input's later calls skip the check: no stream query, no event."""
    found = _EAGER.get(seen.eager_key)
    if found is None:
        if len(_EAGER) >= 4096:
            _EAGER.clear()
        device = x.device
        seen.launch(x)  # records the replay (the path timed) if there is one
        if seen.native:  # registered for native replay: shorter than torch.softmax's host path, no check
            return False
        found = _EAGER[seen.eager_key] = eager_prefers_torch(
            lambda: seen.launch(x),
            lambda: _host_bound(device) and _route_to_torch(x),
            lambda: torch.cuda.synchronize(device),
        )[0]
    if not found:
        seen.eager_key = None
    return found
