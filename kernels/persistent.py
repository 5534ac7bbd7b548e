"""Persistent row loop: grid = SMs x blocks-per-SM, each program strides over rows with tl.range.

Blocks per SM come from the CUDA driver's occupancy API for the compiled kernel (its registers and
shared memory); under the CPU interpreter the program count is fixed (INTERPRETER_PROGRAMS).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from . import exactexp
from ._common import (
    NUM_WARPS_ALLOWED,
    cached_plans,
    check_int_choice,
    check_int_range,
    check_tunables,
    compile_or_load,
    driver_blocks_per_sm,
    interpreting,
    launch_constexprs,
    next_power_of_2,
    prepare_launch,
    specialization_key,
    vector_elements,
)
from ._common import launch as launch_kernel
from .plan import LaunchPlan

NAME = "persistent"
MAX_N = 65536
INTERPRETER_PROGRAMS = 4
TUNABLES = {
    "num_warps": f"warps per program, one of {NUM_WARPS_ALLOWED}; default 8 if BLOCK_SIZE >= 2048 else 4",
    "num_stages": "software-pipelining stages of the row loop, 1 to 4 (more stages: more shared memory); default 1",
    "programs": "programs launched, 1 to 2**20; default SM count x blocks per SM (capped at R)",
}


@triton.jit
def row_softmax_persistent_kernel(
    output_ptr,
    input_ptr,
    input_row_stride,
    output_row_stride,
    n_rows,
    n_cols,
    BLOCK_SIZE: tl.constexpr,
    NUM_STAGES: tl.constexpr,
    VEC: tl.constexpr,
):
    # each program owns rows pid, pid + P, ...: read N + write N elements per row
    if VEC > 1:  # strides and N are multiples of VEC (16 bytes): rounding shows Triton the loads are whole vectors
        input_row_stride = input_row_stride // VEC * VEC
        output_row_stride = output_row_stride // VEC * VEC
        n_cols = n_cols // VEC * VEC
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    for row in tl.range(tl.program_id(axis=0), n_rows, tl.num_programs(axis=0), num_stages=NUM_STAGES):
        row = tl.cast(row, tl.int64)
        values = tl.load(input_ptr + row * input_row_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
        if input_ptr.dtype.element_ty == tl.float32:  # exp and reciprocal to within an ULP (kernels/exactexp.py)
            numerators = exactexp.exp_diff(values, tl.max(values, axis=0))
            probabilities = exactexp.normalize(numerators, tl.sum(numerators, axis=0))
        else:
            numerators = tl.exp(values - tl.max(values, axis=0))
            probabilities = numerators * (1.0 / tl.sum(numerators, axis=0))  # one reciprocal per row
        tl.store(output_ptr + row * output_row_stride + cols, probabilities, mask=mask)


def signature(dtype: torch.dtype) -> dict[str, str]:
    """Kernel argument types for offline compilation (Triton type strings)."""
    ptr = "*" + {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}[dtype]
    return {
        "output_ptr": ptr,
        "input_ptr": ptr,
        "input_row_stride": "i32",
        "output_row_stride": "i32",
        "n_rows": "i32",
        "n_cols": "i32",
        "BLOCK_SIZE": "constexpr",
        "NUM_STAGES": "constexpr",
        "VEC": "constexpr",
    }


def plan(n_rows: int, n_cols: int, dtype: torch.dtype, **tunables: int) -> LaunchPlan:
    """Grid (programs,); `programs` defaults to INTERPRETER_PROGRAMS here and is resolved on the GPU at launch."""
    check_tunables(NAME, tunables, TUNABLES)
    if not 1 <= n_cols <= MAX_N:
        raise ValueError(
            f"{NAME}: N={n_cols} is outside this variant's range; allowed: 1 <= N <= {MAX_N} "
            "(whole row per program; use 'online' for wider rows)"
        )
    block_size = next_power_of_2(n_cols)
    num_warps = check_int_choice(
        NAME, "num_warps", tunables.get("num_warps", 8 if block_size >= 2048 else 4), NUM_WARPS_ALLOWED
    )
    num_stages = check_int_range(NAME, "num_stages", tunables.get("num_stages", 1), 1, 4)
    programs = check_int_range(NAME, "programs", tunables.get("programs", INTERPRETER_PROGRAMS), 1, 2**20)
    programs = max(1, min(programs, n_rows))
    resolved = {"num_warps": num_warps, "num_stages": num_stages}
    if "programs" in tunables:
        resolved["programs"] = tunables["programs"]
    return LaunchPlan(
        variant=NAME,
        kernel_name="row_softmax_persistent_kernel",
        n_rows=n_rows,
        n_cols=n_cols,
        dtype=dtype,
        grid=(programs,),
        num_warps=num_warps,
        num_stages=num_stages,
        tile_width=block_size,
        rows_per_program=1,
        constexprs={"BLOCK_SIZE": block_size, "NUM_STAGES": num_stages, "VEC": vector_elements(dtype, n_cols)},
        scalar_args={"input_row_stride": n_cols, "output_row_stride": n_cols, "n_rows": n_rows, "n_cols": n_cols},
        tunables=resolved,
        grid_resolved_at_launch="programs" not in tunables,
    )


_BLOCKS_PER_SM: dict[tuple, int] = {}
_RESIDENT: dict[tuple, int] = {}  # same key: SM count x blocks per SM


def resident_programs(output: torch.Tensor, rows: torch.Tensor, launch: LaunchPlan) -> int:
    """SM count x blocks per SM of the compiled kernel (driver occupancy API), cached per config."""
    if interpreting() or rows.device.type != "cuda":
        return INTERPRETER_PROGRAMS
    args = (output, rows, rows.stride(0), output.stride(0), launch.n_rows, launch.n_cols)
    constexprs = launch_constexprs(launch.constexprs, rows, output)
    key = (
        rows.device.index,
        rows.dtype,
        launch.num_warps,
        launch.num_stages,
        tuple(constexprs.items()),
        specialization_key(args),
    )
    if key not in _BLOCKS_PER_SM:
        compiled = compile_or_load(row_softmax_persistent_kernel, args, constexprs, launch.num_warps, launch.num_stages)
        compiled._init_handles()
        _BLOCKS_PER_SM[key] = max(
            1, driver_blocks_per_sm(compiled.function, launch.num_warps, compiled.metadata.shared)
        )
        _RESIDENT[key] = torch.cuda.get_device_properties(rows.device).multi_processor_count * _BLOCKS_PER_SM[key]
    return _RESIDENT[key]


_plans = cached_plans(plan)


def softmax_persistent(x: torch.Tensor, **tunables: int) -> torch.Tensor:
    """Softmax over the last dim with a persistent row loop (tunables: num_warps, num_stages, programs)."""
    rows, launch, output = prepare_launch(x, NAME, MAX_N, _plans, tunables)
    n_rows, n_cols = rows.shape
    if rows.numel() == 0:
        return output.view(x.shape)
    programs = tunables.get("programs") or resident_programs(output, rows, launch)
    launch_kernel(
        row_softmax_persistent_kernel,
        (min(programs, n_rows),),
        (output, rows, rows.stride(0), output.stride(0), n_rows, n_cols),
        launch_constexprs(launch.constexprs, rows, output),
        launch.num_warps,
        launch.num_stages,
    )
    return output.view(x.shape)
