"""A small, realistic synthetic results table (profiling/results/__init__.py schema) for tests and the demo data source.

The numbers follow a simple H200-like model (132 SMs, 4000 GB/s copy bandwidth, 64K registers and 64 warps
per SM): time = max(launch floor, bytes / effective bandwidth), slowed by masked lanes, spills and low
occupancy; registers grow with the lanes each thread holds and spill past 255. It is NOT a measurement.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from blockscope.profiling.results import BYTES_PER_ELEMENT_PASS, ELEMENT_BYTES, TIMING_METHODS, normalize

SM_COUNT = 132
COPY_GBPS = 4000.0
N_ROWS = 4096
REG_FILE = 65536
MAX_WARPS = 64
MAX_BLOCKS = 32
SHARED_PER_SM = 228 * 1024
KERNEL_NAMES = {
    "teaching": "row_softmax_kernel",
    "multirow": "row_softmax_multirow_kernel",
    "online": "row_softmax_online_kernel",
    "persistent": "row_softmax_persistent_kernel",
}
EFFICIENCY = {"teaching": 0.80, "multirow": 0.86, "online": 0.74, "persistent": 0.84}
LAUNCH_US = {"per_call_events": 7.5, "back_to_back_flushed": 5.0, "cuda_graph": 2.6}
DEFAULT_N = (128, 255, 256, 257, 512, 1000, 1024, 1025, 2048, 4096, 8192, 16384, 32768, 65536)


def _pow2(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def _tile(variant: str, n: int) -> tuple[int, int]:
    """(tile width, rows per program) as the kernels' plans choose them."""
    if variant == "online":
        return min(_pow2(n), 4096), 1
    if variant == "multirow":
        block = _pow2(n)
        return block, max(1, min(16, 4096 // block))
    return _pow2(n), 1


def _compile_facts(variant: str, dtype: str, n: int, num_warps: int) -> dict:
    tile, rows = _tile(variant, n)
    lanes_per_thread = tile * rows / (32 * num_warps)
    wanted = 26 + 1.3 * lanes_per_thread * (2 if dtype == "fp32" else 1.5)
    n_regs = int(min(255, 8 * math.ceil(wanted / 8)))
    spill = int(max(0.0, wanted - 255) * 4)
    shared = 32 * num_warps if variant != "online" else 64 * num_warps
    limits = {
        "registers": REG_FILE // (256 * math.ceil(n_regs * 32 / 256) * num_warps),
        "shared_memory": SHARED_PER_SM // max(shared, 1),
        "warps": MAX_WARPS // num_warps,
        "blocks": MAX_BLOCKS,
    }
    limiter = min(limits, key=limits.get)
    blocks = max(0, min(limits.values()))
    spanned = math.ceil(n / tile) * tile
    return {
        "n_regs": n_regs,
        "spill_store_bytes": spill,
        "spill_load_bytes": spill,
        "shared_bytes": shared,
        "blocks_per_sm": blocks,
        "occupancy": blocks * num_warps / MAX_WARPS,
        "limiter": limiter,
        "compile_source": "offline",
        "masked_lane_fraction": (spanned - n) / spanned,
        "tile_width": tile,
        "rows_per_program": rows,
    }


def _torch_kernel(dtype: str, n: int) -> str:
    scalar = {"fp16": "c10::Half", "bf16": "c10::BFloat16", "fp32": "float"}[dtype]
    if n <= 1024:
        log2 = _pow2(n).bit_length() - 1
        return f"void (anonymous namespace)::softmax_warp_forward<{scalar}, {scalar}, float, {log2}, false, false>"
    if n * ELEMENT_BYTES[dtype] <= 48 * 1024:
        return f"void at::native::(anonymous namespace)::cunn_SoftMaxForwardSmem<8, {scalar}, float, {scalar}>"
    return f"void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, {scalar}, float, {scalar}>"


def synthetic_results(
    seed: int = 0,
    n_values: tuple[int, ...] = DEFAULT_N,
    variants: tuple[str, ...] = ("torch", "teaching", "multirow", "online", "persistent"),
    dtypes: tuple[str, ...] = ("fp16", "fp32"),
    num_warps: tuple[int, ...] = (4, 8),
    methods: tuple[str, ...] = TIMING_METHODS,
    gpu_name: str = "NVIDIA H200 (synthetic)",
    run_id: str = "synthetic-0",
    directions: tuple[str, ...] = ("forward",),
) -> pd.DataFrame:
    """One row per (config, timing method, direction), normalized to the results schema. Deterministic for a seed.
    `directions` other than forward are the same model with their bytes (3 or 5 x R x N, profiling.results)."""
    rng = np.random.default_rng(seed)
    rows: list[dict] = []
    for dtype in dtypes:
        for n in n_values:
            for variant in variants:
                if variant == "multirow" and n > 16384:
                    continue
                warps_axis = (None,) if variant == "torch" else num_warps
                for warps in warps_axis:
                    for direction in directions:
                        moved = BYTES_PER_ELEMENT_PASS[direction] * N_ROWS * n * ELEMENT_BYTES[dtype]
                        rows.extend(
                            row | {"direction": direction}
                            for row in _config_rows(rng, variant, dtype, n, warps, moved, methods)
                        )
    table = pd.DataFrame(rows)
    env = {
        "run_id": run_id,
        "gpu_name": gpu_name,
        "compute_capability": "9.0",
        "sm_count": SM_COUNT,
        "driver_version": "580.95.05",
        "torch_version": "2.13.0+cu130",
        "triton_version": "3.7.1",
        "copy_gbps": COPY_GBPS,
        "measured_at": "2026-11-30T18:00:00+00:00",
    }
    for name, value in env.items():
        table[name] = value
    table["copy_fraction"] = table["gbps"] / COPY_GBPS
    return normalize(table)


def _config_rows(
    rng: np.random.Generator, variant: str, dtype: str, n: int, warps: int | None, moved: int, methods: tuple[str, ...]
) -> list[dict]:
    base = {"variant": variant, "dtype": dtype, "n_rows": N_ROWS, "n_cols": n, "bytes_moved": moved, "error": ""}
    if variant == "torch":
        base.update(tunables="{}", kernel_names=_torch_kernel(dtype, n), first_call_s=0.004)
        efficiency, slowdown = (0.83 if n <= 1024 else 0.78), 1.0
    else:
        facts = _compile_facts(variant, dtype, n, warps)
        tile, per_program = facts.pop("tile_width"), facts.pop("rows_per_program")
        programs = (
            SM_COUNT * max(facts["blocks_per_sm"], 1) if variant == "persistent" else math.ceil(N_ROWS / per_program)
        )
        tunables = (
            {"num_warps": warps}
            | ({"rows_per_program": per_program} if variant == "multirow" else {})
            | ({"tile": tile} if variant == "online" else {})
        )
        base.update(
            facts,
            num_warps=warps,
            num_stages=1 if variant == "persistent" else 3,
            tile_width=tile,
            rows_per_program=per_program,
            programs=programs,
            tunables=json.dumps(tunables, sort_keys=True),
            kernel_names=KERNEL_NAMES[variant],
            first_call_s=0.25 + tile / 40000 + 0.02 * warps,
        )
        efficiency = EFFICIENCY[variant] * (0.6 + 0.4 * min(1.0, facts["occupancy"] * 2))
        slowdown = (1 + 0.35 * facts["masked_lane_fraction"]) * (1 + facts["spill_store_bytes"] / 1500)
        if variant == "teaching" and n >= 65536 and warps < 8:
            return [
                base | {"method": m, "error": "skipped: 512 lanes per thread (predicted compile > 30 s)"}
                for m in methods
            ]
    rows = []
    for method in methods:
        floor = LAUNCH_US[method] * (0.8 if variant == "torch" and method == "per_call_events" else 1.0)
        flushed = 1.08 if method == "back_to_back_flushed" else 1.0
        median = max(floor, moved / (efficiency * COPY_GBPS * 1e3) * flushed) * slowdown
        median *= float(rng.lognormal(0.0, 0.03))
        spread = 0.02 + 0.05 * rng.random()
        rows.append(
            base
            | {
                "method": method,
                "median_us": median,
                "p20_us": median * (1 - spread),
                "p80_us": median * (1 + spread),
                "min_us": median * (1 - 2 * spread),
                "max_us": median * (1 + 6 * spread),
                "reps": 200,
                "gbps": moved / (median * 1e3),
            }
        )
    return rows


PEER_SPEED = {"inductor": 1.08, "liger": 0.95, "quack": 0.80, "auto": 0.78}  # time relative to torch (model)


def synthetic_backends(
    seed: int = 1, n_values: tuple[int, ...] = (128, 1000, 1001, 4096, 65536, 131072)
) -> pd.DataFrame:
    """torch rows of synthetic_results plus peer backends (inductor, liger, quack) and auto derived from them by a
    fixed speed factor, with their support rules applied: Liger refuses N > 65536, Quack N not a multiple of 8
    (16-bit) or 4 (fp32); Quack gets N = 131072 fp16 wrong (as measured once on the H200). NOT a measurement."""
    torch_rows = synthetic_results(seed, n_values)
    torch_rows = torch_rows[torch_rows["variant"] == "torch"]
    frames = [torch_rows]
    rng = np.random.default_rng(seed)
    for peer, factor in PEER_SPEED.items():
        rows = torch_rows.copy()
        rows["variant"] = peer
        scale = factor * rng.uniform(0.97, 1.03, len(rows))
        for column in ("median_us", "p20_us", "p80_us", "min_us", "max_us"):
            rows[column] = rows[column] * scale
        rows["gbps"] = rows["bytes_moved"] / (rows["median_us"] * 1e3)
        rows["copy_fraction"] = rows["gbps"] / rows["copy_gbps"]
        rows["kernel_names"] = {
            "inductor": "triton_per_fused__softmax_0",
            "liger": "_softmax_single_block_forward_kernel",
            "quack": "kernel_cutlass_softmax",
            "auto": "row_softmax_kernel",
        }[peer]
        if peer == "inductor":
            rows["kernel_source"] = "@triton.jit\ndef triton_per_fused__softmax_0(in_ptr0, out_ptr2, xnumel, r0_numel):"
            rows["first_call_s"] = 1.8
        reason = pd.Series("", index=rows.index, dtype="string")
        if peer == "liger":
            reason[rows["n_cols"] > 65536] = (
                "unsupported: liger: N = {n}: Liger's BLOCK_SIZE = next_pow2(N) would be over its limit of 65536"
            )
        if peer == "quack":
            width = rows["dtype"].astype(str).map({"fp16": 8, "bf16": 8, "fp32": 4}).astype(int)
            unaligned = rows["n_cols"].astype(int) % width != 0
            reason[unaligned] = "unsupported: quack: N = {n} is not a multiple of the vector width"
            reason[(rows["n_cols"] == 131072) & (rows["dtype"] == "fp16")] = "wrong result: NaN in every row"
        rows["error"] = [text.format(n=n) for text, n in zip(reason, rows["n_cols"], strict=True)]
        failed = rows["error"] != ""
        for column in (
            "median_us",
            "p20_us",
            "p80_us",
            "min_us",
            "max_us",
            "gbps",
            "copy_fraction",
            "reps",
            "kernel_names",
            "kernel_source",
        ):
            rows.loc[failed, column] = None
        frames.append(rows)
    return normalize(pd.concat(frames, ignore_index=True))
