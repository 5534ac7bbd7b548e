"""Split-row cooperative softmax for wide rows: CHUNKS programs share a row, each keeps CHUNK columns
in registers, so x is read once even when a row is too wide for one program.

Each program publishes its chunk's (max, sum of exp) to a workspace and bumps the row's counter; it
waits until all CHUNKS partial results are in, combines them and writes its chunk. Waiting is safe only
when every program of the grid is resident at once, so the grid is SMs x blocks/SM (driver occupancy
API), rounded down to whole rows, and programs loop over rows like the persistent variant. Under the
CPU interpreter (programs run one after another) the same kernel runs as two launches: publish, then
combine-and-write.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._common import (
    NUM_WARPS_ALLOWED,
    cached_plans,
    check_int_choice,
    check_power_of_2,
    check_tunables,
    driver_blocks_per_sm,
    interpreting,
    next_power_of_2,
    prepare_launch,
)
from .plan import LaunchPlan

NAME = "splitrow"
MAX_N = 2**24
MIN_CHUNK, MAX_CHUNK = 256, 32768
MAX_CHUNKS = 1024
INTERPRETER_ROW_GROUPS = 2
TUNABLES = {
    "num_warps": f"warps per program, one of {NUM_WARPS_ALLOWED}; default 8",
    "chunk": f"columns per program, a power of two from {MIN_CHUNK} to {MAX_CHUNK}; default min(next_pow2(N), 16384)",
}


@triton.jit
def row_softmax_splitrow_kernel(output_ptr, input_ptr, stats_ptr, counter_ptr, input_row_stride, output_row_stride,
                                n_rows, n_cols, CHUNK: tl.constexpr, CHUNKS: tl.constexpr, CHUNKS_POW2: tl.constexpr,
                                PHASE: tl.constexpr):
    # read N + write N per row; + 8 bytes of (max, sum) per chunk through L2
    pid = tl.program_id(axis=0)
    chunk = pid % CHUNKS
    cols = chunk * CHUNK + tl.arange(0, CHUNK)
    mask = cols < n_cols
    partials = tl.arange(0, CHUNKS_POW2)
    partial_mask = partials < CHUNKS
    for row in tl.range(pid // CHUNKS, n_rows, tl.num_programs(axis=0) // CHUNKS):
        row = tl.cast(row, tl.int64)
        values = tl.load(input_ptr + row * input_row_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
        local_max = tl.max(values, axis=0)
        local_shift = tl.where(local_max == -float("inf"), 0.0, local_max)
        numerators = tl.exp(values - local_shift)  # the only exp per element: the output rescales it
        if PHASE != 2:  # publish this chunk's max and sum
            tl.store(stats_ptr + (row * CHUNKS + chunk) * 2, local_max)
            tl.store(stats_ptr + (row * CHUNKS + chunk) * 2 + 1, tl.sum(numerators, axis=0))
            tl.debug_barrier()
            tl.atomic_add(counter_ptr + row, 1, sem="release", scope="gpu")
        if PHASE == 0:  # wait for the row's other chunks (all programs are resident)
            while tl.atomic_add(counter_ptr + row, 0, sem="acquire", scope="gpu") < CHUNKS:
                pass
        if PHASE != 1:  # combine the partials and write this chunk
            maxes = tl.load(stats_ptr + (row * CHUNKS + partials) * 2, mask=partial_mask, other=-float("inf"),
                            volatile=True)
            sums = tl.load(stats_ptr + (row * CHUNKS + partials) * 2 + 1, mask=partial_mask, other=0.0, volatile=True)
            row_max = tl.max(maxes, axis=0)
            row_shift = tl.where(row_max == -float("inf"), 0.0, row_max)
            row_sum = tl.sum(sums * tl.exp(maxes - row_shift), axis=0)
            # exp(local_max - row_max): 0 for an all -inf chunk, NaN for an all -inf row (as torch)
            scale = tl.exp(local_max - row_max) / row_sum
            tl.store(output_ptr + row * output_row_stride + cols, numerators * scale, mask=mask)

def signature(dtype: torch.dtype) -> dict[str, str]:
    """Kernel argument types for offline compilation (Triton type strings)."""
    ptr = "*" + {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}[dtype]
    return {"output_ptr": ptr, "input_ptr": ptr, "stats_ptr": "*fp32", "counter_ptr": "*i32",
            "input_row_stride": "i32", "output_row_stride": "i32", "n_rows": "i32", "n_cols": "i32",
            "CHUNK": "constexpr", "CHUNKS": "constexpr", "CHUNKS_POW2": "constexpr", "PHASE": "constexpr"}


def plan(n_rows: int, n_cols: int, dtype: torch.dtype, **tunables: int) -> LaunchPlan:
    """CHUNKS = cdiv(N, CHUNK) programs per row; grid resolved at launch (resident programs, whole rows)."""
    check_tunables(NAME, tunables, TUNABLES)
    if not 1 <= n_cols <= MAX_N:
        raise ValueError(f"{NAME}: N={n_cols} is outside this variant's range; allowed: 1 <= N <= {MAX_N}")
    chunk = check_power_of_2(NAME, "chunk", tunables.get("chunk", max(MIN_CHUNK, min(next_power_of_2(n_cols),
                                                                                   16384))), MIN_CHUNK, MAX_CHUNK)
    chunks = triton.cdiv(n_cols, chunk)
    if chunks > MAX_CHUNKS:
        raise ValueError(f"{NAME}: N={n_cols} needs {chunks} chunks of {chunk}; allowed: at most {MAX_CHUNKS} "
                         "(raise chunk)")
    num_warps = check_int_choice(NAME, "num_warps", tunables.get("num_warps", 8), NUM_WARPS_ALLOWED)
    return LaunchPlan(
        variant=NAME, kernel_name="row_softmax_splitrow_kernel", n_rows=n_rows, n_cols=n_cols, dtype=dtype,
        grid=(min(n_rows, INTERPRETER_ROW_GROUPS) * chunks,), num_warps=num_warps, num_stages=1,
        tile_width=chunk, rows_per_program=1,
        constexprs={"CHUNK": chunk, "CHUNKS": chunks, "CHUNKS_POW2": next_power_of_2(chunks), "PHASE": 0},
        scalar_args={"input_row_stride": n_cols, "output_row_stride": n_cols, "n_rows": n_rows, "n_cols": n_cols},
        tunables={"num_warps": num_warps, "chunk": chunk}, grid_resolved_at_launch=True,
    )


_plans = cached_plans(plan)
_BLOCKS_PER_SM: dict[tuple, int] = {}
_SM_COUNT: dict[int | None, int] = {}


def resident_row_groups(args: tuple, launch: LaunchPlan, device: torch.device) -> int:
    """Rows in flight: (SM count x blocks per SM) // CHUNKS, from the driver's occupancy of the compiled kernel."""
    chunks = launch.constexprs["CHUNKS"]
    key = (device.index, launch.dtype, launch.num_warps, tuple(launch.constexprs.items()))
    if key not in _BLOCKS_PER_SM:
        compiled = row_softmax_splitrow_kernel.warmup(*args, num_warps=launch.num_warps, num_stages=1, grid=(1,),
                                                      **launch.constexprs)
        compiled._init_handles()
        _BLOCKS_PER_SM[key] = driver_blocks_per_sm(compiled.function, launch.num_warps, compiled.metadata.shared)
        _SM_COUNT[device.index] = torch.cuda.get_device_properties(device).multi_processor_count
    resident = _SM_COUNT[device.index] * _BLOCKS_PER_SM[key]
    if resident < chunks:
        raise ValueError(f"{NAME}: {chunks} chunks per row but only {resident} programs fit on the GPU at once; "
                         "allowed: a larger chunk")
    return resident // chunks


def softmax_splitrow(x: torch.Tensor, **tunables: int) -> torch.Tensor:
    """Softmax over the last dim, CHUNKS cooperating programs per row (tunables: num_warps, chunk)."""
    rows, launch, output = prepare_launch(x, NAME, MAX_N, _plans, tunables)
    n_rows, n_cols = rows.shape
    if rows.numel() == 0:
        return output.view(x.shape)
    chunks = launch.constexprs["CHUNKS"]
    stats = torch.empty(n_rows * chunks * 2, dtype=torch.float32, device=rows.device)
    counters = torch.zeros(n_rows, dtype=torch.int32, device=rows.device)
    args = (output, rows, stats, counters, rows.stride(0), output.stride(0), n_rows, n_cols)
    constexprs = {k: v for k, v in launch.constexprs.items() if k != "PHASE"}
    if interpreting() or rows.device.type != "cuda":
        for phase in (1, 2):  # programs run one after another here: publish all, then combine
            row_softmax_splitrow_kernel[launch.grid](*args, PHASE=phase, **constexprs)
        return output.view(x.shape)
    groups = min(n_rows, resident_row_groups(args, launch, rows.device))
    row_softmax_splitrow_kernel[(groups * chunks,)](*args, num_warps=launch.num_warps, num_stages=1, PHASE=0,
                                                    **constexprs)
    return output.view(x.shape)
