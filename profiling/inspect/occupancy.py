"""Occupancy calculator: resident programs (CTAs) per SM from registers/thread, warps and shared bytes.

Mirrors `cudaOccMaxActiveBlocksPerMultiprocessor` in CUDA 13.0's cuda_occupancy.h (the logic behind
cuOccupancyMaxActiveBlocksPerMultiprocessor): registers allocated per warp in units of 256, warps placed
per sub-partition (4 per SM), shared memory rounded up to 128 B after adding the 1 KB the driver reserves
per block (sm_80+), and zero blocks when a thread wants more than 255 registers or a block more shared
memory than the per-block opt-in maximum.

Shared memory per SM depends on the L1/shared carveout. The driver picks it at launch; for Triton kernels
this module models that choice as:
  * shared > 48 KB per block: the maximum carveout (Triton's loader sets CU_FUNC_CACHE_PREFER_SHARED and
    opts in to the large per-block limit for such kernels, triton/backends/nvidia/driver.c);
  * otherwise the smallest carveout step that holds as many blocks as registers, warps and the block limit
    allow (NVIDIA H100 tuning guide: the driver configures the shared capacity "to avoid shared memory
    occupancy bottlenecks").
So `blocks_per_sm` (the minimum over the four limits) equals the driver's answer, while
`limits['shared_memory']` is the blocks that carveout holds; pass `carveout_bytes` to pin it (e.g. the
arch's `shared_per_sm`, the occupancy API's assumption with the default carveout preference). Nsight
Compute reports the carveout actually configured for one launch, which can be larger: the driver also
weighs kernels already running.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

KB = 1024
LIMITERS: tuple[str, ...] = ("registers", "shared_memory", "warps", "blocks")
# tie-break order for `limiter` when several resources allow the same block count: the one a user can act on
# first; shared memory comes last because the modeled carveout is sized to the other limits
_TIE_ORDER: tuple[str, ...] = ("warps", "registers", "blocks", "shared_memory")
TRITON_PREFER_SHARED_ABOVE = 48 * KB  # driver.c: shared > 49152 -> cuFuncSetCacheConfig(PREFER_SHARED) + opt-in


@dataclass(frozen=True)
class ArchLimits:
    """Per-SM limits of one compute capability (bytes for shared memory, registers as 32-bit regs)."""

    name: str
    compute_capability: tuple[int, int]
    reference_gpu: str
    sm_count: int  # SMs of reference_gpu
    max_warps_per_sm: int
    max_blocks_per_sm: int
    max_threads_per_block: int
    registers_per_sm: int
    max_registers_per_block: int
    max_registers_per_thread: int
    register_alloc_unit: int  # registers per warp are rounded up to this
    sub_partitions: int  # warps are placed per sub-partition; each holds registers_per_sm / sub_partitions
    shared_per_sm: int  # largest carveout, bytes
    carveout_steps: tuple[int, ...]  # shared-memory capacities the driver may configure, bytes
    max_shared_per_block: int  # opt-in maximum per block, bytes
    shared_alloc_unit: int  # bytes
    reserved_shared_per_block: int  # bytes the driver reserves per block


def _steps(*kilobytes: int) -> tuple[int, ...]:
    return tuple(k * KB for k in kilobytes)


# Sources, per field:
#  max_warps_per_sm, max_threads_per_block, registers_per_sm (64 K), max_registers_per_block (64 K),
#  max_registers_per_thread (255), shared_per_sm and max_shared_per_block: CUDA C++ Programming Guide,
#  "Compute Capabilities" table "Technical Specifications per Compute Capability" (CUDA 12.x/13.0).
#  max_blocks_per_sm: cuda_occupancy.h cudaOccMaxBlocksPerMultiprocessor (CUDA 13.0): 8.0 -> 32, 8.6 -> 16,
#  8.9 -> 24, 9.0 -> 32, 10.0 -> 32, 12.x -> 24 (same as the guide's table for 8.x/9.0/10.0).
#  register_alloc_unit 256: cudaOccRegAllocationGranularity; sub_partitions 4: cudaOccSubPartitionsPerMultiprocessor.
#  carveout_steps: cudaOccAlignUpShmemSizeVoltaPlus (8.0: up to 164 KB; 8.6/8.9 and 12.x: up to 100 KB;
#  9.0/10.0: up to 228 KB), matching the guide's "shared memory capacity" lists per compute capability.
#  shared_alloc_unit 128: cudaOccSMemAllocationGranularity (8.x-12.x). reserved_shared_per_block 1 KB:
#  cudaDeviceProp::reservedSharedMemPerBlock (1024 on sm_80+), added in cudaOccMaxBlocksPerSMSmemLimit.
#  sm_count: vendor datasheets of the reference GPU (A100 108, RTX 3090 82, L40S 142, H100 SXM/H200 132,
#  B200 148, RTX 5090 170).
ARCHS: dict[str, ArchLimits] = {
    a.name: a
    for a in (
        ArchLimits(
            "sm_80",
            (8, 0),
            "A100",
            108,
            64,
            32,
            1024,
            65536,
            65536,
            255,
            256,
            4,
            164 * KB,
            _steps(0, 8, 16, 32, 64, 100, 132, 164),
            163 * KB,
            128,
            KB,
        ),
        ArchLimits(
            "sm_86",
            (8, 6),
            "RTX 3090",
            82,
            48,
            16,
            1024,
            65536,
            65536,
            255,
            256,
            4,
            100 * KB,
            _steps(0, 8, 16, 32, 64, 100),
            99 * KB,
            128,
            KB,
        ),
        ArchLimits(
            "sm_89",
            (8, 9),
            "L40S",
            142,
            48,
            24,
            1024,
            65536,
            65536,
            255,
            256,
            4,
            100 * KB,
            _steps(0, 8, 16, 32, 64, 100),
            99 * KB,
            128,
            KB,
        ),
        ArchLimits(
            "sm_90",
            (9, 0),
            "H100 SXM / H200",
            132,
            64,
            32,
            1024,
            65536,
            65536,
            255,
            256,
            4,
            228 * KB,
            _steps(0, 8, 16, 32, 64, 100, 132, 164, 196, 228),
            227 * KB,
            128,
            KB,
        ),
        ArchLimits(
            "sm_100",
            (10, 0),
            "B200",
            148,
            64,
            32,
            1024,
            65536,
            65536,
            255,
            256,
            4,
            228 * KB,
            _steps(0, 8, 16, 32, 64, 100, 132, 164, 196, 228),
            227 * KB,
            128,
            KB,
        ),
        ArchLimits(
            "sm_120",
            (12, 0),
            "RTX 5090",
            170,
            48,
            24,
            1024,
            65536,
            65536,
            255,
            256,
            4,
            100 * KB,
            _steps(0, 8, 16, 32, 64, 100),
            99 * KB,
            128,
            KB,
        ),
    )
}


def arch_from_name(name: str | int | ArchLimits) -> ArchLimits:
    """'sm_90' | 'sm_90a' | '90' | '9.0' | 90 -> ArchLimits; ValueError names the allowed archs."""
    if isinstance(name, ArchLimits):
        return name
    text = str(name).strip().lower()
    if text.startswith("sm_"):
        text = text[3:]
    text = text.rstrip("af")  # sm_90a / sm_100f: same resources
    if "." in text:
        major, _, minor = text.partition(".")
        text = major + minor
    found = ARCHS.get(f"sm_{text}")
    if found is None:
        raise ValueError(f"unknown arch {name!r}; allowed: {', '.join(ARCHS)}")
    return found


def check_shared_bytes(arch: str | int | ArchLimits, shared_bytes: int) -> None:
    """ValueError when `shared_bytes` (bytes per block) is over the arch's per-block opt-in maximum, so no
    block of it can launch; the message names the limit."""
    spec = arch_from_name(arch)
    if shared_bytes > spec.max_shared_per_block:
        raise ValueError(
            f"{shared_bytes} bytes of shared memory per block is over the {spec.name} per-block limit "
            f"of {spec.max_shared_per_block} bytes ({spec.max_shared_per_block // KB} KB opt-in maximum); "
            f"allowed: 0 to {spec.max_shared_per_block}"
        )


@dataclass(frozen=True)
class OccupancyResult:
    """Resident blocks per SM and what limits them; `limits` are blocks/SM each resource alone allows."""

    arch: str
    regs_per_thread: int
    num_warps: int
    shared_bytes: int
    blocks_per_sm: int
    warps_per_sm: int
    occupancy: float  # active warps / max warps per SM, 0..1
    limiter: str
    limits: dict[str, int]
    shared_alloc_per_block: int  # bytes: shared + reserved, rounded up to the allocation unit
    carveout_bytes: int  # shared-memory capacity per SM assumed for limits['shared_memory']

    def to_dict(self) -> dict:
        return asdict(self)


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def registers_limit(arch: ArchLimits, regs_per_thread: int, num_warps: int) -> int:
    """Blocks/SM the register file allows (cudaOccMaxBlocksPerSMRegsLimit, partitioned caching off)."""
    regs_per_warp = _round_up(regs_per_thread * 32, arch.register_alloc_unit)
    per_block_hw = regs_per_warp * _round_up(num_warps, arch.sub_partitions)  # the hardware's launch check
    if (
        regs_per_thread > arch.max_registers_per_thread
        or per_block_hw > arch.max_registers_per_block
        or regs_per_warp * num_warps > arch.max_registers_per_block
    ):
        return 0
    if regs_per_warp == 0:
        return arch.max_blocks_per_sm * 1000  # no registers: unlimited by registers (INT_MAX in the header)
    warps_per_sub_partition = (arch.registers_per_sm // arch.sub_partitions) // regs_per_warp
    return warps_per_sub_partition * arch.sub_partitions // num_warps


def shared_alloc_per_block(arch: ArchLimits, shared_bytes: int) -> int:
    """Bytes one block takes from the SM: shared + reserved, rounded up to the allocation unit."""
    return _round_up(shared_bytes + arch.reserved_shared_per_block, arch.shared_alloc_unit)


def launch_carveout(arch: ArchLimits, shared_bytes: int, blocks_wanted: int) -> int:
    """Shared capacity per SM (bytes) the driver is modeled to configure for `blocks_wanted` blocks."""
    alloc = shared_alloc_per_block(arch, shared_bytes)
    if shared_bytes > TRITON_PREFER_SHARED_ABOVE:
        return arch.shared_per_sm
    need = max(1, blocks_wanted) * alloc
    return next((step for step in arch.carveout_steps if step >= need), arch.shared_per_sm)


def occupancy(
    arch: str | ArchLimits, regs_per_thread: int, num_warps: int, shared_bytes: int, carveout_bytes: int | None = None
) -> OccupancyResult:
    """Blocks per SM for a kernel of `regs_per_thread` registers/thread, `num_warps` warps per block and
    `shared_bytes` (bytes) of shared memory per block, as cuOccupancyMaxActiveBlocksPerMultiprocessor.

    `carveout_bytes` pins the SM's shared capacity; None models the driver's launch-time choice.
    """
    spec = arch_from_name(arch)
    for label, value in (
        ("regs_per_thread", regs_per_thread),
        ("num_warps", num_warps),
        ("shared_bytes", shared_bytes),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{label}={value!r}; allowed: an integer >= 0")
    max_warps_per_block = spec.max_threads_per_block // 32
    if not 1 <= num_warps <= max_warps_per_block:
        raise ValueError(f"num_warps={num_warps}; allowed: 1 to {max_warps_per_block}")
    by_registers = registers_limit(spec, regs_per_thread, num_warps)
    by_warps = spec.max_warps_per_sm // num_warps
    by_blocks = spec.max_blocks_per_sm
    alloc = shared_alloc_per_block(spec, shared_bytes)
    if alloc > spec.max_shared_per_block + spec.reserved_shared_per_block:  # cudaOccSMemPerBlock check
        carveout, by_shared = 0, 0
    else:
        if carveout_bytes is None:
            carveout = launch_carveout(spec, shared_bytes, min(by_registers, by_warps, by_blocks))
        else:
            carveout = carveout_bytes
            if carveout < alloc:  # the header: a preference below one block's need is raised to fit it
                carveout = next((s for s in spec.carveout_steps if s >= alloc), spec.shared_per_sm)
        by_shared = carveout // alloc
    limits = {"registers": by_registers, "shared_memory": by_shared, "warps": by_warps, "blocks": by_blocks}
    blocks = min(limits.values())
    limiter = next(name for name in _TIE_ORDER if limits[name] == blocks)
    return OccupancyResult(
        arch=spec.name,
        regs_per_thread=regs_per_thread,
        num_warps=num_warps,
        shared_bytes=shared_bytes,
        blocks_per_sm=blocks,
        warps_per_sm=blocks * num_warps,
        occupancy=blocks * num_warps / spec.max_warps_per_sm,
        limiter=limiter,
        limits=limits,
        shared_alloc_per_block=alloc,
        carveout_bytes=carveout,
    )


def waves(grid_programs: int, sm_count: int, blocks_per_sm: int) -> tuple[float, float]:
    """(waves, tail_wave_fill): grid / (SMs x blocks per SM) and how full the last wave is (0..1].

    Zero programs give (0.0, 0.0); blocks_per_sm below 1 counts as 1 (a wave of one block per SM).
    """
    if grid_programs < 0 or sm_count < 1:
        raise ValueError(f"grid_programs={grid_programs}, sm_count={sm_count}; allowed: >= 0 and >= 1")
    per_wave = sm_count * max(1, blocks_per_sm)
    if grid_programs == 0:
        return 0.0, 0.0
    full = math.ceil(grid_programs / per_wave)
    return grid_programs / per_wave, (grid_programs - (full - 1) * per_wave) / per_wave
