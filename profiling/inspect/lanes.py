"""Masked-lane model: how many of the lanes a variant's programs span are masked off, from its LaunchPlan.

Pure arithmetic on `kernels.get_variant(v).plan(...)`: no Triton launch. A lane is one element position of a
program's tile; lanes at columns >= N (and, for multirow, rows >= R in the last program) are masked.
The looped 'online' kernel runs two passes over the same tiles, so its fraction is that of one pass.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass

import pandas as pd
import torch

from blockscope import kernels


@dataclass(frozen=True)
class LaneModel:
    """Lanes of one launch (counts in lanes = element positions; fractions 0..1)."""

    variant: str  # the variant that runs ('auto' resolves to its choice)
    n_cols: int
    n_rows: int
    num_warps: int
    tile_width: int  # BLOCK_SIZE, TILE (online) or CHUNK (splitrow): lanes per row per program step
    rows_per_program: int
    steps: int  # tile steps per row per pass (online: cdiv(N, TILE); else 1 per program)
    tail_valid_lanes: int  # valid lanes of the row's last tile (online's tail tile, splitrow's last chunk)
    lanes_per_program: int  # lanes one program spans over its row group (one pass; splitrow: one chunk)
    masked_lanes_per_program: int  # of those, masked, for a program whose rows are all valid (splitrow: last chunk)
    lanes_spanned: int  # over the whole launch (all rows, one pass)
    lanes_masked: int
    masked_lane_fraction: float  # lanes_masked / lanes_spanned
    elements_per_thread: float  # tile lanes / (32 * num_warps): values one thread holds per step

    def to_dict(self) -> dict:
        return asdict(self)


def lane_model(
    variant: str, n_cols: int, n_rows: int = 4096, dtype: str | torch.dtype = "fp16", **tunables: int
) -> LaneModel:
    """Masked-lane model of `variant` for R x N rows of `dtype` (its plan in that dtype: vector widths, and so the
    layouts of warprows and stagedrows, and the odd N the staged variants take, depend on it); ValueError (from
    the variant's plan) for bad arguments."""
    if isinstance(n_rows, bool) or not isinstance(n_rows, int) or n_rows < 1:
        raise ValueError(f"n_rows={n_rows!r}; allowed: an integer >= 1")
    if isinstance(n_cols, bool) or not isinstance(n_cols, int):
        raise ValueError(f"n_cols={n_cols!r}; allowed: a positive integer")
    plan = kernels.get_variant(variant).plan(n_rows, n_cols, _torch_dtype(dtype), **tunables)
    tile, rows_per_program = plan.tile_width, plan.rows_per_program
    steps = plan.constexprs.get("CHUNKS", -(-n_cols // tile))  # splitrow: + a chunk for its window's slack
    row_span = steps * tile  # lanes spanned per row (all chunks / all steps of one pass)
    tail_valid = max(0, n_cols - (steps - 1) * tile)  # lanes of the last tile holding columns (row start aligned)
    if plan.variant in ("multirow", "warprows", "stagedrows", "tinyrows"):  # ROWS rows per program, the last partial
        programs = -(-n_rows // rows_per_program)
        spanned = programs * rows_per_program * row_span
        lanes_per_program = rows_per_program * row_span
        masked_per_program = rows_per_program * (row_span - n_cols)
    elif plan.variant in ("splitrow", "staged_split") or plan.cluster_size > 1:  # programs per row: one chunk each
        spanned = n_rows * row_span
        lanes_per_program = tile
        masked_per_program = tile - tail_valid
        steps = 1  # each chunk is one program's single step
    else:  # teaching, persistent (per row it handles), online (per pass)
        spanned = n_rows * row_span
        lanes_per_program = row_span
        masked_per_program = row_span - n_cols
    masked = spanned - n_rows * n_cols
    return LaneModel(
        variant=plan.variant,
        n_cols=n_cols,
        n_rows=n_rows,
        num_warps=plan.num_warps,
        tile_width=tile,
        rows_per_program=rows_per_program,
        steps=steps,
        tail_valid_lanes=tail_valid,
        lanes_per_program=lanes_per_program,
        masked_lanes_per_program=masked_per_program,
        lanes_spanned=spanned,
        lanes_masked=masked,
        masked_lane_fraction=masked / spanned,
        elements_per_thread=rows_per_program * tile / (32 * plan.num_warps),
    )


def masked_lane_fraction(
    variant: str, n_cols: int, n_rows: int = 4096, dtype: str | torch.dtype = "fp16", **tunables: int
) -> float:
    """Lanes masked / lanes spanned over the launch, 0..1."""
    return lane_model(variant, n_cols, n_rows=n_rows, dtype=dtype, **tunables).masked_lane_fraction


def lane_curve(
    variant: str, n_values: Iterable[int], n_rows: int = 4096, dtype: str | torch.dtype = "fp16", **tunables: int
) -> pd.DataFrame:
    """One LaneModel row per N of `dtype` (N outside the variant's range or left out by its shape rule, e.g. odd N
    in 16 bits for the staged variants, is left out); columns as LaneModel fields."""
    spec = kernels.get_variant(variant)
    torch_dtype = _torch_dtype(dtype)
    limit = spec.limit(torch_dtype)

    def takes(n: int) -> bool:
        return 1 <= n <= limit and (spec.shape_rule is None or spec.shape_rule(n, torch_dtype) is None)

    rows = [
        lane_model(variant, int(n), n_rows=n_rows, dtype=torch_dtype, **tunables).to_dict()
        for n in n_values
        if takes(int(n))
    ]
    columns = list(LaneModel.__dataclass_fields__)
    return pd.DataFrame(rows, columns=columns)


def _torch_dtype(dtype: str | torch.dtype) -> torch.dtype:
    """kernels.dtype_from_name, its TypeError for another torch dtype raised as ValueError (lane_model's contract)."""
    try:
        return kernels.dtype_from_name(dtype)
    except TypeError as error:
        raise ValueError(str(error)) from None
