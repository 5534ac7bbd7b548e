"""The results table: one long-format pandas DataFrame, one row per (config, timing method).

Schema (column: pandas dtype - meaning; units in the name):

Config
  variant: string - 'torch' (torch.softmax baseline) or a registered Triton variant name
  dtype: string - 'fp16' | 'bf16' | 'fp32'
  n_rows: Int64 - R, rows
  n_cols: Int64 - N, softmax width
  num_warps: Int64 - warps per program (<NA> for torch)
  num_stages: Int64 - software-pipelining stages (<NA> for torch)
  tile_width: Int64 - lanes per row per program step: BLOCK_SIZE, or TILE for 'online' (<NA> for torch)
  rows_per_program: Int64 - rows in one program's tile (<NA> for torch)
  programs: Int64 - programs (CTAs) launched (<NA> for torch)
  tunables: string - JSON object of the variant's resolved tunables ('{}' for torch)
Timing (one row per method)
  method: string - 'per_call_events' | 'back_to_back_flushed' | 'cuda_graph' | 'none' (compile-only rows)
  median_us, p20_us, p80_us, min_us, max_us: Float64 - steady-state time per call, microseconds
  reps: Int64 - timed repetitions behind the statistics
  first_call_s: Float64 - first call (JIT compile + launch), seconds
  bytes_moved: Int64 - read x + write y = 2 * R * N * element size, bytes
  gbps: Float64 - bytes_moved / median time, GB/s (1e9 bytes/s)
  copy_fraction: Float64 - gbps / copy_gbps (same GPU, same run)
Compile facts (Triton variants; <NA> for torch)
  n_regs: Int64 - registers per thread
  spill_store_bytes, spill_load_bytes: Int64 - local-memory spill traffic per thread, bytes
  shared_bytes: Int64 - Triton shared memory per program, bytes
  blocks_per_sm: Int64 - resident programs per SM (occupancy calculator)
  occupancy: Float64 - active warps / max warps per SM, 0..1
  limiter: string - 'registers' | 'shared_memory' | 'warps' | 'blocks'
  compile_source: string - 'live' | 'offline'
  masked_lane_fraction: Float64 - lanes masked off / lanes spanned, 0..1 (lanes model)
Evidence
  kernel_names: string - CUDA kernels seen by torch.profiler, '; '-joined
  error: string - '' when the config ran; otherwise why it failed (the row is kept)
Environment (same on every row of one run)
  run_id: string - unique id of the sweep run
  gpu_name: string, compute_capability: string ('9.0'), sm_count: Int64, driver_version: string,
  torch_version: string, triton_version: string, copy_gbps: Float64 (device copy measured in this run, GB/s),
  measured_at: string (ISO-8601 UTC timestamp)
"""

from __future__ import annotations

SCHEMA_VERSION = 1

CONFIG_COLUMNS: dict[str, str] = {
    "variant": "string", "dtype": "string", "n_rows": "Int64", "n_cols": "Int64", "num_warps": "Int64",
    "num_stages": "Int64", "tile_width": "Int64", "rows_per_program": "Int64", "programs": "Int64",
    "tunables": "string",
}
TIMING_COLUMNS: dict[str, str] = {
    "method": "string", "median_us": "Float64", "p20_us": "Float64", "p80_us": "Float64", "min_us": "Float64",
    "max_us": "Float64", "reps": "Int64", "first_call_s": "Float64", "bytes_moved": "Int64", "gbps": "Float64",
    "copy_fraction": "Float64",
}
COMPILE_COLUMNS: dict[str, str] = {
    "n_regs": "Int64", "spill_store_bytes": "Int64", "spill_load_bytes": "Int64", "shared_bytes": "Int64",
    "blocks_per_sm": "Int64", "occupancy": "Float64", "limiter": "string", "compile_source": "string",
    "masked_lane_fraction": "Float64",
}
EVIDENCE_COLUMNS: dict[str, str] = {"kernel_names": "string", "error": "string"}
ENV_COLUMNS: dict[str, str] = {
    "run_id": "string", "gpu_name": "string", "compute_capability": "string", "sm_count": "Int64",
    "driver_version": "string", "torch_version": "string", "triton_version": "string", "copy_gbps": "Float64",
    "measured_at": "string",
}
COLUMNS: dict[str, str] = {**CONFIG_COLUMNS, **TIMING_COLUMNS, **COMPILE_COLUMNS, **EVIDENCE_COLUMNS, **ENV_COLUMNS}
TIMING_METHODS: tuple[str, ...] = ("per_call_events", "back_to_back_flushed", "cuda_graph")
