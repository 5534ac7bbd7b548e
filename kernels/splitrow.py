"""Split-row cooperative softmax for wide rows: CHUNKS programs share a row, each keeps CHUNK columns
in registers, so x is read once even when a row is too wide for one program.

Each program publishes its chunk's (max, sum of exp) to a workspace as two 64-bit words tagged with the
launch's epoch, waits until all CHUNKS partials of the row are in, combines them and writes its chunk.
Two ways to wait (`counter`): poll the row's tagged words until every tag is this launch's (a tag travels
in the word it vouches for, so neither side fences and loads in flight, e.g. the prefetched next row,
keep going; each poll reads 16 x CHUNKS bytes), or count chunks into a per-row counter with a release
add and poll that one word with acquire (fences; counters zeroed before each launch).

Waiting is safe only when every program of the grid is resident at once, and CUDA guarantees that only for a
cooperative launch. So on the GPU a launch with CHUNKS > 1 is cooperative (Triton's `launch_cooperative_grid`
option, CU_LAUNCH_ATTRIBUTE_COOPERATIVE through cuLaunchKernelEx; Triton 3.3+): the driver starts all of its
programs together or fails the launch at once ("too many blocks in cooperative launch"), so a grid sharing the
GPU with kernels on other streams never waits on programs that are not running. The grid is SMs x blocks/SM
(driver occupancy API, the cooperative limit), rounded down to whole rows, and programs loop over rows like the
persistent variant. Where that cannot work, splitrow runs `online` instead (looped, one program per row, never
waits) and warns once per config: a row needs more programs than fit on the GPU at once (very wide rows: a
2**24-column fp32 row is more than an H200's register file), this Triton has no cooperative launch, or the
cooperative launch fails. CHUNKS == 1 exchanges nothing and launches normally.
The epoch lives on the GPU (the launch's last program out bumps it), so CUDA-graph replays get fresh
epochs and no launch needs a memset for the tags: stale words carry older epochs.

With `prefetch` a program loads its chunk of the next row before it waits on the current one. Rows whose
start is not 16-byte aligned (N % 16 != 0) are read through a window rounded down to 16 bytes (whole 16-byte
vectors: loads may read past a row's end, never past its last 16-byte segment), so loads and stores stay
vectorized. Under the CPU interpreter (programs run one after another) the same kernel
runs as two launches: publish, then combine-and-write.
The `# scope: NAME` / `# end scope: NAME` comments in the kernel mark regions that
profiling/measure/proton_scopes.py times with Proton (`bench --proton-scopes`); comments, so the code is unchanged.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import Iterator

import torch
import triton
import triton.language as tl

from . import exactexp
from ._common import (
    NUM_WARPS_ALLOWED,
    cached_plans,
    check_int_choice,
    check_power_of_2,
    check_tunables,
    compile_or_load,
    cooperative_launch_supported,
    driver_blocks_per_sm,
    interpreting,
    next_power_of_2,
    prepare_launch,
    specialization_key,
)
from ._common import launch as launch_kernel
from .plan import LaunchPlan

NAME = "splitrow"
MAX_N = 2**24
MIN_CHUNK, MAX_CHUNK = 256, 32768
MAX_CHUNKS = 1024
WINDOW_BYTES = 16  # window starts and ends round to 16 bytes: 8 fp16/bf16 or 4 fp32 elements
INTERPRETER_ROW_GROUPS = 2
TUNABLES = {
    "num_warps": f"warps per program, one of {NUM_WARPS_ALLOWED}; default 8",
    "chunk": f"columns per program, a power of two from {MIN_CHUNK} to {MAX_CHUNK}; default max({MIN_CHUNK}, "
    f"min(next_pow2(N), 16384)), doubled while a row would need over {MAX_CHUNKS} chunks",
    "prefetch": "1: load the next row's chunk before waiting on this one (more registers), 0: no; default 0",
    "counter": "1: chunks count themselves into a per-row counter (release/acquire, memset per launch), 0: programs "
    "poll the row's epoch-tagged partials (no fence); default 1 when CHUNKS > 16",
    "window": "1: read rows through a window starting 16-byte aligned, 0: from the row start; default 1 when "
    "N % 16 != 0",
    "fast_exp": exactexp.FAST_EXP_TUNABLE,
}


@triton.jit
def _row_window(row, row_stride, n_cols, lanes, ALIGN: tl.constexpr):
    """A row's window: its start rounded down to ALIGN elements (Triton can then prove it 16-byte aligned),
    the row's offset in the window, and which lanes hold the row's columns."""
    start = row * row_stride
    base = start // ALIGN * ALIGN
    shift = (start - base).to(tl.int32)
    return base, shift, (lanes >= shift) & (lanes < shift + n_cols)


@triton.jit
def _load_window(input_ptr, base, shift, n_cols, lanes, in_rows, ALIGN: tl.constexpr):
    """The window's lanes in the input dtype. ALIGN > 1 (16 bytes of elements): whole aligned vectors (vectorized
    loads; up to ALIGN - 1 elements past the row's end, never past its 16-byte segment), masked by the caller."""
    if ALIGN > 1:
        limit = (shift + n_cols + ALIGN - 1) // ALIGN * ALIGN
        return tl.load(input_ptr + base + lanes, mask=(lanes < limit) & in_rows, other=-float("inf"))
    return tl.load(input_ptr + base + lanes, mask=(lanes < n_cols) & in_rows, other=-float("inf"))


@triton.jit
def _tagged(epoch, value):
    """One 64-bit word: the epoch's low 32 bits in the high half, the fp32 value's bits in the low half."""
    return (epoch << 32) | (value.to(tl.int32, bitcast=True).to(tl.int64) & 0xFFFFFFFF)


@triton.jit
def _untagged(words):
    return (words & 0xFFFFFFFF).to(tl.int32).to(tl.float32, bitcast=True)


@triton.jit
def _tags_ready(slots, partial_mask, epoch):
    """1 when every chunk's two words of the row carry this launch's tag."""
    tag = epoch & 0xFFFFFFFF
    max_words = tl.load(slots, mask=partial_mask, other=0, volatile=True)
    sum_words = tl.load(slots + 1, mask=partial_mask, other=0, volatile=True)
    ready = (((max_words >> 32) & 0xFFFFFFFF) == tag) & (((sum_words >> 32) & 0xFFFFFFFF) == tag)
    return tl.min((ready | ~partial_mask).to(tl.int32), axis=0)


@triton.jit
def row_softmax_splitrow_kernel(
    output_ptr,
    input_ptr,
    stats_ptr,
    counter_ptr,
    control_ptr,
    input_row_stride,
    output_row_stride,
    n_rows,
    n_cols,
    CHUNK: tl.constexpr,
    CHUNKS: tl.constexpr,
    CHUNKS_POW2: tl.constexpr,
    ALIGN: tl.constexpr,
    PREFETCH: tl.constexpr,
    COUNTER: tl.constexpr,
    PHASE: tl.constexpr,
    EXACT: tl.constexpr,
):
    # read N + write N per row; per chunk + 16 bytes of tagged (max, sum) written and CHUNKS x 16 read (L2)
    # scope: kernel
    pid = tl.program_id(axis=0)
    chunk = pid % CHUNKS
    step = tl.num_programs(axis=0) // CHUNKS
    lanes = chunk * CHUNK + tl.arange(0, CHUNK)
    partials = tl.arange(0, CHUNKS_POW2)
    partial_mask = partials < CHUNKS
    epoch = tl.load(control_ptr)  # this launch's tag (int64); control = [epoch, programs exited]
    first_row = tl.cast(pid // CHUNKS, tl.int64)
    if PREFETCH:
        base, shift, valid = _row_window(first_row, input_row_stride, n_cols, lanes, ALIGN)
        ahead = _load_window(input_ptr, base, shift, n_cols, lanes, first_row < n_rows, ALIGN)
    for row in tl.range(first_row, n_rows, step):
        # scope: load
        base, shift, valid = _row_window(row, input_row_stride, n_cols, lanes, ALIGN)
        if PREFETCH:
            raw = ahead
        else:
            raw = _load_window(input_ptr, base, shift, n_cols, lanes, True, ALIGN)
        values = tl.where(valid, raw.to(tl.float32), -float("inf"))
        local_max = tl.max(values, axis=0)
        # end scope: load
        # scope: local
        local_shift = tl.where(local_max == -float("inf"), 0.0, local_max)
        if EXACT:  # exp to within an ULP (kernels/exactexp.py)
            numerators = exactexp.exp_diff(values, local_shift)  # the only exp per element: the output rescales it
        else:
            numerators = tl.exp(values - local_shift)  # the only exp per element: the output rescales it
        # end scope: local
        # scope: publish
        if CHUNKS > 1 and PHASE != 2:  # publish this chunk's max and sum as tagged words
            slot = stats_ptr + (row * CHUNKS + chunk) * 2
            if COUNTER:  # then count the chunk in (counters zeroed before the launch); the release orders the words
                tl.store(slot, _tagged(epoch, local_max))
                tl.store(slot + 1, _tagged(epoch, tl.sum(numerators, axis=0)))
                tl.debug_barrier()
                tl.atomic_add(counter_ptr + row, 1, sem="release", scope="gpu")
            else:  # relaxed 64-bit exchanges: single-copy atomic, no fence
                tl.atomic_xchg(slot, _tagged(epoch, local_max), sem="relaxed", scope="gpu")
                tl.atomic_xchg(slot + 1, _tagged(epoch, tl.sum(numerators, axis=0)), sem="relaxed", scope="gpu")
        # end scope: publish
        if PREFETCH:  # next row's chunk, in flight while this row waits and writes
            next_base, next_shift, next_valid = _row_window(row + step, input_row_stride, n_cols, lanes, ALIGN)
            ahead = _load_window(input_ptr, next_base, next_shift, n_cols, lanes, row + step < n_rows, ALIGN)
        # scope: exchange
        if CHUNKS == 1:  # the whole row is this program's: no partials to exchange
            row_shift = local_shift
            row_sum = tl.sum(numerators, axis=0)
            if EXACT:
                scale = tl.math.div_rn(1.0, row_sum)
            else:
                scale = 1.0 / row_sum
        else:
            slots = stats_ptr + (row * CHUNKS + partials) * 2
            if PHASE == 0:  # wait for the row's other chunks (all programs are resident)
                if COUNTER:  # one word polled: cheap when CHUNKS is large
                    while tl.atomic_add(counter_ptr + row, 0, sem="acquire", scope="gpu") < CHUNKS:
                        pass
                else:  # every chunk's tagged words polled: no fence, no counter
                    while _tags_ready(slots, partial_mask, epoch) == 0:
                        pass
            max_words = tl.load(slots, mask=partial_mask, other=0, volatile=True)
            sum_words = tl.load(slots + 1, mask=partial_mask, other=0, volatile=True)
            maxes = tl.where(partial_mask, _untagged(max_words), -float("inf"))
            sums = tl.where(partial_mask, _untagged(sum_words), 0.0)
            row_max = tl.max(maxes, axis=0)
            row_shift = tl.where(row_max == -float("inf"), 0.0, row_max)
            # exp(local_max - row_max): 0 for an all -inf chunk, NaN for an all -inf row (as torch)
            if EXACT:
                row_sum = tl.sum(sums * exactexp.exp_diff(maxes, row_shift), axis=0)
                scale = tl.math.div_rn(exactexp.exp_diff(local_max, row_max), row_sum)
            else:
                row_sum = tl.sum(sums * tl.exp(maxes - row_shift), axis=0)
                scale = tl.exp(local_max - row_max) / row_sum
        # end scope: exchange
        # scope: store
        if CHUNKS == 1 or PHASE != 1:
            probabilities = numerators * scale
            if EXACT and CHUNKS == 1:
                probabilities = exactexp.normalize(numerators, row_sum)
            if ALIGN == 1:
                tl.store(output_ptr + row * output_row_stride + lanes, probabilities, mask=valid)
            else:  # output rows have the input's stride: same window; whole vectors inside the row, then its edges
                tail = (shift + n_cols) // ALIGN * ALIGN
                tl.store(output_ptr + base + lanes, probabilities, mask=(lanes >= ALIGN) & (lanes < tail))
                edge = tl.arange(0, 2 * ALIGN)
                edge = tl.where(edge < ALIGN, edge, tail + edge - ALIGN)
                edge_mask = (
                    (edge >= shift) & (edge < shift + n_cols) & (edge >= chunk * CHUNK) & (edge < chunk * CHUNK + CHUNK)
                )  # the row's first and last vector, exact
                edge_values = tl.load(input_ptr + base + edge, mask=edge_mask, other=-float("inf")).to(tl.float32)
                if EXACT:
                    edge_y = tl.math.div_rn(exactexp.exp_diff(edge_values, row_shift), row_sum)
                else:
                    edge_y = tl.exp(edge_values - row_shift) / row_sum
                tl.store(output_ptr + base + edge, edge_y, mask=edge_mask)
        # end scope: store
    if CHUNKS > 1 and PHASE != 1:  # the launch's last program out moves the epoch on (2**39 launches per stream)
        if tl.atomic_add(control_ptr + 1, 1, sem="relaxed", scope="gpu") == tl.num_programs(axis=0) - 1:
            tl.store(control_ptr + 1, 0)
            tl.store(control_ptr, epoch + 1)
    # end scope: kernel


def signature(dtype: torch.dtype) -> dict[str, str]:
    """Kernel argument types for offline compilation (Triton type strings)."""
    ptr = "*" + {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}[dtype]
    return {
        "output_ptr": ptr,
        "input_ptr": ptr,
        "stats_ptr": "*i64",
        "counter_ptr": "*i64",
        "control_ptr": "*i64",
        "input_row_stride": "i32",
        "output_row_stride": "i32",
        "n_rows": "i32",
        "n_cols": "i32",
        "CHUNK": "constexpr",
        "CHUNKS": "constexpr",
        "CHUNKS_POW2": "constexpr",
        "ALIGN": "constexpr",
        "PREFETCH": "constexpr",
        "COUNTER": "constexpr",
        "PHASE": "constexpr",
        "EXACT": "constexpr",
    }


def default_window(n_cols: int) -> int:
    """1 (aligned window) unless contiguous rows already start 16-byte aligned: N % 16 == 0, which Triton's
    argument specialization sees."""
    return 0 if n_cols % 16 == 0 else 1


def default_chunk(n_cols: int, align: int = 1) -> int:
    """Columns per program by default: max(MIN_CHUNK, min(next_pow2(N), 16384)), doubled (up to MAX_CHUNK) while a
    row of N columns plus the window's `align` - 1 elements of slack would need over MAX_CHUNKS chunks."""
    chunk = max(MIN_CHUNK, min(next_power_of_2(n_cols), 16384))
    while chunk < MAX_CHUNK and triton.cdiv(n_cols + align - 1, chunk) > MAX_CHUNKS:
        chunk *= 2
    return chunk


def plan(n_rows: int, n_cols: int, dtype: torch.dtype, **tunables: int) -> LaunchPlan:
    """CHUNKS = cdiv(N + window slack, CHUNK) programs per row; grid resolved at launch (resident programs,
    whole rows)."""
    check_tunables(NAME, tunables, TUNABLES)
    if not 1 <= n_cols <= MAX_N:
        raise ValueError(f"{NAME}: N={n_cols} is outside this variant's range; allowed: 1 <= N <= {MAX_N}")
    window = check_int_choice(NAME, "window", tunables.get("window", default_window(n_cols)), (0, 1))
    align = WINDOW_BYTES // dtype.itemsize if window else 1
    chunk = check_power_of_2(NAME, "chunk", tunables.get("chunk", default_chunk(n_cols, align)), MIN_CHUNK, MAX_CHUNK)
    chunks = triton.cdiv(n_cols + align - 1, chunk)
    if chunks > MAX_CHUNKS:
        raise ValueError(
            f"{NAME}: N={n_cols} needs {chunks} chunks of {chunk}; allowed: at most {MAX_CHUNKS} (raise chunk)"
        )
    num_warps = check_int_choice(NAME, "num_warps", tunables.get("num_warps", 8), NUM_WARPS_ALLOWED)
    prefetch = check_int_choice(NAME, "prefetch", tunables.get("prefetch", 0), (0, 1))
    counter = check_int_choice(NAME, "counter", tunables.get("counter", int(chunks > 16)), (0, 1))
    fast_exp = exactexp.fast_exp_choice(NAME, tunables)
    return LaunchPlan(
        variant=NAME,
        kernel_name="row_softmax_splitrow_kernel",
        n_rows=n_rows,
        n_cols=n_cols,
        dtype=dtype,
        grid=(min(n_rows, INTERPRETER_ROW_GROUPS) * chunks,),
        num_warps=num_warps,
        num_stages=1,
        tile_width=chunk,
        rows_per_program=1,
        constexprs={
            "CHUNK": chunk,
            "CHUNKS": chunks,
            "CHUNKS_POW2": next_power_of_2(chunks),
            "ALIGN": align,
            "PREFETCH": prefetch,
            "COUNTER": counter,
            "PHASE": 0,
            "EXACT": exactexp.exact_constexpr(dtype, fast_exp),
        },
        scalar_args={"input_row_stride": n_cols, "output_row_stride": n_cols, "n_rows": n_rows, "n_cols": n_cols},
        tunables={
            "num_warps": num_warps,
            "chunk": chunk,
            "prefetch": prefetch,
            "counter": counter,
            "window": window,
            **exactexp.fast_exp_tunables(fast_exp),
        },
        grid_resolved_at_launch=True,
    )


_plans = cached_plans(plan)
_BLOCKS_PER_SM: dict[tuple, int] = {}
_SM_COUNT: dict[int | None, int] = {}
_FALLBACKS: dict[tuple, str] = {}  # residency key -> why this config runs 'online' on the GPU


def _cooperative(constexprs: dict[str, int]) -> bool:
    """Launch cooperatively: programs wait on each other (CHUNKS > 1) and this Triton can."""
    return constexprs["CHUNKS"] > 1 and cooperative_launch_supported()


def _residency_key(args: tuple, launch: LaunchPlan, device: torch.device, constexprs: dict[str, int]) -> tuple:
    return (device.index, launch.dtype, launch.num_warps, tuple(constexprs.items()), specialization_key(args))


def resident_programs(
    args: tuple, launch: LaunchPlan, device: torch.device, constexprs: dict[str, int] | None = None
) -> int:
    """SM count x blocks per SM (driver occupancy API) of the kernel compiled for these args, with the options it
    is launched with (`constexprs`: the launch's, default the plan's): the most programs resident at once, which is
    also the largest grid a cooperative launch takes."""
    constexprs = constexprs or launch.constexprs
    key = _residency_key(args, launch, device, constexprs)
    if key not in _BLOCKS_PER_SM:
        options = {"launch_cooperative_grid": True} if _cooperative(constexprs) else {}
        compiled = compile_or_load(row_softmax_splitrow_kernel, args, constexprs, launch.num_warps, 1, options)
        compiled._init_handles()
        _BLOCKS_PER_SM[key] = driver_blocks_per_sm(compiled.function, launch.num_warps, compiled.metadata.shared)
        _SM_COUNT[device.index] = torch.cuda.get_device_properties(device).multi_processor_count
    return _SM_COUNT[device.index] * _BLOCKS_PER_SM[key]


def resident_row_groups(
    args: tuple, launch: LaunchPlan, device: torch.device, constexprs: dict[str, int] | None = None
) -> int:
    """Rows in flight: resident programs // CHUNKS; ValueError when one row's CHUNKS programs do not fit at once."""
    constexprs = constexprs or launch.constexprs
    chunks = constexprs["CHUNKS"]
    resident = resident_programs(args, launch, device, constexprs)
    if resident < chunks:
        raise ValueError(
            f"{NAME}: {chunks} chunks per row but only {resident} programs fit on the GPU at once; "
            "allowed: a larger chunk"
        )
    return resident // chunks


def fallback_reason(
    args: tuple, launch: LaunchPlan, device: torch.device, constexprs: dict[str, int] | None = None
) -> str | None:
    """Why a GPU launch of this config runs 'online' instead (None: splitrow runs): the cooperative launch its
    waiting needs is missing from this Triton or failed before, or one row's programs do not fit on the GPU at once."""
    constexprs = constexprs or launch.constexprs
    if constexprs["CHUNKS"] == 1:
        return None  # nothing is exchanged: no program waits
    known = _FALLBACKS.get(_residency_key(args, launch, device, constexprs))
    if known is not None:
        return known
    if not cooperative_launch_supported():
        return "this Triton has no cooperative launch (launch_cooperative_grid), which waiting programs need"
    resident = resident_programs(args, launch, device, constexprs)
    if resident < constexprs["CHUNKS"]:
        return (
            f"a row needs {constexprs['CHUNKS']} programs of {constexprs['CHUNK']} columns but only {resident} "
            "fit on the GPU at once"
        )
    return None


def _is_cooperative_failure(error: BaseException) -> bool:
    """A launch error from the cooperative attribute ('too many blocks in cooperative launch', not supported)."""
    text = str(error).lower()
    return "cooperative" in text or "not supported" in text


def _run_online(x: torch.Tensor, key: tuple, reason: str, remember: bool = True) -> torch.Tensor:
    if key not in _FALLBACKS:
        warnings.warn(
            f"{NAME}: {reason}; ran 'online' instead (it never waits on other programs)", RuntimeWarning, stacklevel=3
        )
    if remember:
        _FALLBACKS[key] = reason
    from .online import softmax_online

    return softmax_online(x)


_WORKSPACES: dict[tuple, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}
_PRIVATE = threading.local()  # .depth > 0: inside private_workspaces()


@contextlib.contextmanager
def private_workspaces() -> Iterator[None]:
    """Launches inside (this thread) get a workspace of their own instead of the cached per-stream one: for
    callers whose allocations may land in a CUDA-graph memory pool (torch.compile's cudagraph trees warm up
    there and reject blocks outliving the call)."""
    _PRIVATE.depth = getattr(_PRIVATE, "depth", 0) + 1
    try:
        yield
    finally:
        _PRIVATE.depth -= 1


def workspace(device: torch.device, n_rows: int, chunks: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(stats, counters, control) for one launch: two tagged int64 words per row x chunk, an int64 counter per
    row, int64 [epoch, programs exited]. One per device and stream (launches on one stream never overlap), grown
    as needed; new buffers are zeros (epoch 0), which no launch's epoch (>= 1) matches.

    Under CUDA-graph capture (or private_workspaces()) the launch gets fresh zeroed buffers, not cached ones:
    the graph replays their zeroing with the kernel (a memset and a 2-element arange node per launch), so each
    graph owns its workspace (graphs replayed at once on several streams never share one, as they would through
    the capture stream's cached entry) and no cached buffer a graph points to is ever freed or regrown under it."""
    if device.type == "cuda" and (getattr(_PRIVATE, "depth", 0) or torch.cuda.is_current_stream_capturing()):
        zeros = torch.zeros(n_rows * chunks * 2 + n_rows, dtype=torch.int64, device=device)  # stats + counters
        control = torch.arange(1, -1, -1, dtype=torch.int64, device=device)
        return zeros[: n_rows * chunks * 2], zeros[n_rows * chunks * 2 :], control
    stream = torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0
    key = (device.type, device.index, stream)
    stats, counters, control = _WORKSPACES.get(key, (None, None, None))
    if control is None:
        control = torch.arange(1, -1, -1, dtype=torch.int64, device=device)  # [1, 0], no host copy (graph capture)
    if stats is None or stats.numel() < n_rows * chunks * 2:
        stats = torch.zeros(
            max(n_rows * chunks * 2, 2 * (0 if stats is None else stats.numel())), dtype=torch.int64, device=device
        )
    if counters is None or counters.numel() < n_rows:
        counters = torch.zeros(
            max(n_rows, 2 * (0 if counters is None else counters.numel())), dtype=torch.int64, device=device
        )
    _WORKSPACES[key] = (stats, counters, control)
    return stats, counters, control


def _launch_args(rows: torch.Tensor, output: torch.Tensor, launch: LaunchPlan) -> tuple[tuple, dict[str, int]]:
    constexprs = dict(launch.constexprs)
    if rows.stride(0) != output.stride(0):  # the window shift must be the same for input and output rows
        constexprs["ALIGN"] = 1
    n_rows, n_cols = rows.shape
    stats, counters, control = workspace(rows.device, n_rows, constexprs["CHUNKS"])
    return (output, rows, stats, counters, control, rows.stride(0), output.stride(0), n_rows, n_cols), constexprs


def launched_programs(rows: torch.Tensor, launch: LaunchPlan) -> int:
    """Programs a GPU launch of `launch` on these contiguous rows uses (resident row groups x CHUNKS); compiles
    if needed (the output is taken to share the rows' alignment and stride)."""
    args, constexprs = _launch_args(rows, rows, launch)
    return min(rows.shape[0], resident_row_groups(args, launch, rows.device, constexprs)) * constexprs["CHUNKS"]


def softmax_splitrow(x: torch.Tensor, **tunables: int) -> torch.Tensor:
    """Softmax over the last dim, CHUNKS cooperating programs per row (tunables: num_warps, chunk, prefetch, counter,
    window)."""
    rows, launch, output = prepare_launch(x, NAME, MAX_N, _plans, tunables)
    n_rows = rows.shape[0]
    if rows.numel() == 0:
        return output.view(x.shape)
    args, constexprs = _launch_args(rows, output, launch)
    if constexprs["COUNTER"]:  # the counter wait counts up from 0 in every launch
        counters = args[3]  # args: output, rows, stats, counters, control, strides, R, N
        counters[:n_rows].zero_()
    if interpreting() or rows.device.type != "cuda":
        del constexprs["PHASE"]
        phases = (0,) if constexprs["CHUNKS"] == 1 else (1, 2)
        for phase in phases:  # programs run one after another here: publish all, then combine
            row_softmax_splitrow_kernel[launch.grid](*args, PHASE=phase, **constexprs)
        return output.view(x.shape)
    key = _residency_key(args, launch, rows.device, constexprs)
    reason = fallback_reason(args, launch, rows.device, constexprs)
    if reason is not None:
        return _run_online(x, key, reason)
    groups = min(n_rows, resident_row_groups(args, launch, rows.device, constexprs))
    try:
        launch_kernel(
            row_softmax_splitrow_kernel,
            (groups * constexprs["CHUNKS"],),
            args,
            constexprs,
            launch.num_warps,
            cooperative=_cooperative(constexprs),
        )
    except RuntimeError as error:
        if not _is_cooperative_failure(error):
            raise
        capturing = torch.cuda.is_current_stream_capturing()  # a failure while capturing may be the capture's
        return _run_online(
            x,
            key,
            f"the cooperative launch failed ({str(error).strip().splitlines()[0][:200]})",
            remember=not capturing,
        )
    return output.view(x.shape)
