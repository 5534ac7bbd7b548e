"""LaunchPlan: everything a variant decides before launching, shared by launchers and compile analysis."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass(frozen=True)
class LaunchPlan:
    """Resolved launch of one variant for one shape.

    `constexprs` are the kernel's compile-time arguments by name; `scalar_args` the runtime integer
    arguments for contiguous [n_rows, n_cols] input (strides in elements). `tile_width` is the lanes one
    program spans per row per step (BLOCK_SIZE, or TILE for the looped kernel). When
    `grid_resolved_at_launch` is set, `grid` is the CPU-interpreter placeholder and the GPU launch uses
    SM count x blocks per SM of the compiled kernel instead.
    """

    variant: str
    kernel_name: str
    n_rows: int
    n_cols: int
    dtype: torch.dtype
    grid: tuple[int, ...]
    num_warps: int
    num_stages: int
    tile_width: int
    rows_per_program: int
    constexprs: dict[str, int] = field(default_factory=dict)
    scalar_args: dict[str, int] = field(default_factory=dict)
    tunables: dict[str, int] = field(default_factory=dict)
    grid_resolved_at_launch: bool = False  # persistent: programs = SMs x blocks/SM, known only on the GPU
    compile_options: dict[str, int] = field(default_factory=dict)  # more Triton options (maxnreg)
    launch_shared_bytes: int = 0  # dynamic shared memory the launcher adds past the compiled kernel's (bytes)
    cluster_size: int = 1  # programs per thread-block cluster (consecutive along x)

    def shared_bytes(self, compiled_shared: int) -> int:
        """Dynamic shared memory per program of the launch (bytes): the compiled kernel's, plus what the launcher
        adds (at a 16-byte aligned offset past the compiled kernel's)."""
        if not self.launch_shared_bytes:
            return compiled_shared
        return -(-compiled_shared // 16) * 16 + self.launch_shared_bytes

    @property
    def programs(self) -> int:
        """Programs (CTAs) launched."""
        n = 1
        for g in self.grid:
            n *= g
        return n
