"""The occupancy calculator against the CUDA driver, on the GPU (writes a CSV for tests/test_occupancy.py).

python3 -m tools.gpu_occupancy_validation --out data/occupancy_h200.csv

For each config: compile live (profiling.inspect.compiled.inspect_live: n_regs, shared bytes and the CUfunction),
ask the driver cuOccupancyMaxActiveBlocksPerMultiprocessor(function, 32 * num_warps, shared) and the
calculator for the same numbers. The configs cover register-, warp-, block- and shared-memory-limited kernels
of every variant. A failing config is recorded with its error; the rest still run. About a minute on an H200.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

N_ROWS = 4096
# (variant, dtype, n_cols, tunables); the comment is the limiter expected on sm_90
CONFIGS: tuple[tuple[str, str, int, dict], ...] = (
    # blocks: one-warp programs with few registers
    ("teaching", "fp16", 128, {"num_warps": 1}),
    ("teaching", "fp32", 256, {"num_warps": 1}),
    ("teaching", "bf16", 512, {"num_warps": 1}),
    ("teaching", "fp16", 1000, {"num_warps": 1}),
    ("multirow", "fp16", 128, {"rows_per_program": 1, "num_warps": 1}),
    ("multirow", "bf16", 64, {"rows_per_program": 2, "num_warps": 1}),
    ("online", "fp16", 128, {"tile": 128, "num_warps": 1}),
    ("persistent", "fp16", 256, {"num_warps": 1}),
    ("persistent", "fp32", 1024, {"num_warps": 2, "num_stages": 1}),
    # warps: 2-8 warps with few registers
    ("teaching", "fp16", 1000, {"num_warps": 4}),
    ("teaching", "fp32", 1024, {"num_warps": 2}),
    ("teaching", "fp16", 2048, {"num_warps": 8}),
    ("teaching", "bf16", 4096, {"num_warps": 8}),
    ("multirow", "fp16", 128, {"rows_per_program": 16, "num_warps": 4}),
    ("multirow", "fp16", 512, {"rows_per_program": 4, "num_warps": 2}),
    ("online", "fp16", 8192, {"tile": 1024, "num_warps": 4}),
    ("online", "bf16", 3000, {"tile": 512, "num_warps": 2}),
    ("persistent", "fp16", 1024, {"num_warps": 4}),
    ("splitrow", "fp16", 4096, {"chunk": 1024, "num_warps": 4}),
    # registers: big tiles per thread
    ("teaching", "fp16", 8192, {"num_warps": 4}),
    ("teaching", "fp32", 8192, {"num_warps": 4}),
    ("teaching", "fp16", 16384, {"num_warps": 4}),
    ("teaching", "fp32", 16384, {"num_warps": 8}),
    ("teaching", "fp16", 32768, {"num_warps": 16}),
    ("teaching", "fp32", 65536, {"num_warps": 32}),
    ("multirow", "fp32", 2048, {"rows_per_program": 8, "num_warps": 4}),
    ("multirow", "bf16", 256, {"rows_per_program": 32, "num_warps": 8}),
    ("multirow", "fp32", 1024, {"rows_per_program": 8, "num_warps": 8}),
    ("online", "fp16", 65536, {"tile": 4096, "num_warps": 8}),
    ("online", "fp32", 131072, {"tile": 8192, "num_warps": 16, "num_stages": 1}),
    ("splitrow", "fp16", 65536, {"chunk": 16384, "num_warps": 8}),
    ("splitrow", "fp32", 32768, {"chunk": 8192, "num_warps": 4}),
    ("splitrow", "bf16", 262144, {"chunk": 16384, "num_warps": 8}),
    ("splitrow", "fp16", 100000, {"chunk": 32768, "num_warps": 16}),
    # shared memory: pipelined loops over wide rows keep stages of tiles in shared memory
    ("persistent", "fp32", 4096, {"num_warps": 8, "num_stages": 2}),
    ("persistent", "fp32", 8192, {"num_warps": 8, "num_stages": 3}),
    ("persistent", "fp32", 16384, {"num_warps": 16, "num_stages": 3}),
    ("persistent", "fp16", 32768, {"num_warps": 16, "num_stages": 4}),
    ("persistent", "bf16", 2048, {"num_warps": 2, "num_stages": 4}),
    ("persistent", "fp16", 16384, {"num_warps": 8, "num_stages": 3}),
    ("persistent", "fp32", 2048, {"num_warps": 4, "num_stages": 4}),
    ("online", "fp32", 32768, {"tile": 8192, "num_warps": 8, "num_stages": 3}),
    ("online", "fp32", 65536, {"tile": 16384, "num_warps": 8, "num_stages": 4}),
    ("online", "fp16", 8192, {"tile": 1024, "num_warps": 2, "num_stages": 2}),
    ("online", "fp16", 65536, {"tile": 8192, "num_warps": 8, "num_stages": 4}),
    ("online", "bf16", 16384, {"tile": 4096, "num_warps": 4, "num_stages": 3}),
)
COLUMNS = (
    "variant",
    "dtype",
    "n_cols",
    "n_rows",
    "num_warps",
    "num_stages",
    "tunables",
    "arch",
    "n_regs",
    "shared_bytes",
    "spill_store_bytes",
    "stack_bytes",
    "driver_blocks_per_sm",
    "calculator_blocks_per_sm",
    "calculator_limiter",
    "limit_registers",
    "limit_shared_memory",
    "limit_warps",
    "limit_blocks",
    "calculator_occupancy",
    "driver_api",
    "compile_seconds",
    "gpu_name",
    "triton_version",
    "torch_version",
    "error",
)


def driver_blocks_per_sm(function_handle: int, num_warps: int, shared_bytes: int) -> tuple[int, str]:
    """(blocks per SM, which API) from cuOccupancyMaxActiveBlocksPerMultiprocessor: cuda.bindings, else ctypes."""
    try:
        from cuda.bindings import driver

        status, blocks = driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(
            driver.CUfunction(function_handle), 32 * num_warps, shared_bytes
        )
        if status != driver.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"cuOccupancyMaxActiveBlocksPerMultiprocessor: {status}")
        return int(blocks), "cuda.bindings"
    except Exception as error:  # no cuda-python, or an API difference: the same driver call through ctypes
        from blockscope.kernels._common import driver_blocks_per_sm as ctypes_blocks

        reason = "no cuda.bindings" if isinstance(error, ImportError) else f"cuda.bindings: {type(error).__name__}"
        return ctypes_blocks(function_handle, num_warps, shared_bytes), f"ctypes libcuda ({reason})"


def measure(config: tuple[str, str, int, dict], inspect: Callable, driver: Callable, occupancy: Callable) -> dict:
    """One CSV row: compile facts, the driver's and the calculator's blocks per SM (error text on failure)."""
    variant, dtype, n_cols, tunables = config
    row: dict = {
        "variant": variant,
        "dtype": dtype,
        "n_cols": n_cols,
        "n_rows": N_ROWS,
        "tunables": json.dumps(tunables, sort_keys=True),
        "error": "",
    }
    try:
        info = inspect(variant, n_cols, dtype, n_rows=N_ROWS, **tunables)
        row.update(
            num_warps=info.num_warps,
            num_stages=info.num_stages,
            arch=info.arch,
            n_regs=info.n_regs,
            shared_bytes=info.shared_bytes,
            spill_store_bytes=info.spill_store_bytes,
            stack_bytes=info.stack_bytes,
            compile_seconds=round(info.compile_seconds, 3),
        )
        blocks, api = driver(info.function_handle, info.num_warps, info.shared_bytes)
        row.update(driver_blocks_per_sm=blocks, driver_api=api)
        result = occupancy(info.arch, info.n_regs, info.num_warps, info.shared_bytes)
        row.update(
            calculator_blocks_per_sm=result.blocks_per_sm,
            calculator_limiter=result.limiter,
            calculator_occupancy=round(result.occupancy, 6),
            **{f"limit_{name}": value for name, value in result.limits.items()},
        )
    except Exception as error:  # recorded; the other configs still run
        row["error"] = f"{type(error).__name__}: {str(error).strip().splitlines()[0][:300] if str(error) else ''}"
    return row


def write_csv(rows: list[dict], out: Path, environment: dict) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({**environment, **row})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="CSV to write (e.g. data/occupancy_h200.csv)")
    args = parser.parse_args(argv)
    import torch
    import triton

    from blockscope.profiling.inspect import compiled, occupancy

    if not torch.cuda.is_available():
        sys.exit("needs a CUDA GPU")
    environment = {
        "gpu_name": torch.cuda.get_device_name(),
        "triton_version": triton.__version__,
        "torch_version": torch.__version__,
    }
    rows = []
    start = time.perf_counter()
    for config in CONFIGS:
        row = measure(config, compiled.inspect_live, driver_blocks_per_sm, occupancy.occupancy)
        rows.append(row)
        verdict = row["error"] or (
            "match" if row["driver_blocks_per_sm"] == row["calculator_blocks_per_sm"] else "MISMATCH"
        )
        print(
            f"{config[0]:>10} {config[1]} N={config[2]:<7} {json.dumps(config[3], sort_keys=True):<55} "
            f"regs={row.get('n_regs')} shared={row.get('shared_bytes')} driver={row.get('driver_blocks_per_sm')} "
            f"calc={row.get('calculator_blocks_per_sm')} ({row.get('calculator_limiter')}): {verdict}",
            flush=True,
        )
        write_csv(rows, Path(args.out), environment)  # rewritten each time: a crash keeps what ran
    ok = [r for r in rows if not r["error"]]
    mismatches = [r for r in ok if r["driver_blocks_per_sm"] != r["calculator_blocks_per_sm"]]
    print(
        f"wrote {args.out}: {len(ok)} configs, {len(rows) - len(ok)} failed, {len(mismatches)} mismatches, "
        f"{time.perf_counter() - start:.0f} s",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
