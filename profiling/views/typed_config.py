"""One typed config, any N: its lanes, the grid its launcher would use on a chosen GPU, the waves, why the
shared-memory limit is what it is (the carveout), and the measured rows of that N when the sweep has them.

No streamlit and no plotly (the Occupancy and Masked lanes pages render this). Sizes are bytes, counts are
programs (CTAs) or lanes (element positions).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

KB = 1024


@dataclass(frozen=True)
class LaunchGrid:
    """Programs a GPU launch of one config uses on a GPU of `sm_count` SMs, and how the launcher sized it."""

    variant: str
    programs: int  # programs (CTAs) launched; 0 when the variant would not launch (see `fallback`)
    how: str  # the launcher's rule, with this config's numbers
    fallback: str | None = None  # splitrow: why the GPU launch would run 'online' instead (None: it runs)


def _check_counts(n_rows: int, sm_count: int, blocks_per_sm: int) -> None:
    for name, value, low in (("n_rows", n_rows, 1), ("sm_count", sm_count, 1), ("blocks_per_sm", blocks_per_sm, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name}={value!r}; allowed: an integer >= {low}")


def launch_grid(
    variant: str, n_rows: int, n_cols: int, dtype: str, num_warps: int, sm_count: int, blocks_per_sm: int
) -> LaunchGrid:
    """The grid `variant`'s launcher would use for R x N rows on `sm_count` SMs holding `blocks_per_sm` of its
    programs each (the occupancy calculator's answer for its compiled kernel).

    teaching / multirow / online: the plan's grid (it does not depend on the GPU). persistent: SMs x blocks/SM
    programs (at least 1 per SM), at most R, as kernels.persistent.resident_programs. splitrow: resident programs
    // CHUNKS row groups (at most R) x CHUNKS, as kernels.splitrow.launched_programs; when one row's CHUNKS
    programs do not fit at once the launch runs 'online' instead (programs 0, `fallback` says why).
    ValueError (from the variant's plan or for bad counts) names what is allowed.
    """
    from blockscope import kernels

    _check_counts(n_rows, sm_count, blocks_per_sm)
    plan = kernels.get_variant(variant).plan(n_rows, n_cols, kernels.dtype_from_name(dtype), num_warps=num_warps)
    if not plan.grid_resolved_at_launch:
        per = f"{plan.rows_per_program} rows per program" if plan.rows_per_program > 1 else "one program per row"
        return LaunchGrid(plan.variant, plan.programs, f"{per}: {plan.programs:,} programs for R={n_rows:,}")
    resident = sm_count * blocks_per_sm
    if plan.variant == "persistent":
        programs = min(n_rows, sm_count * max(1, blocks_per_sm))
        return LaunchGrid(
            plan.variant,
            programs,
            f"SMs x blocks/SM = {sm_count} x {max(1, blocks_per_sm)}, at most R={n_rows:,}: {programs:,} "
            "programs looping over the rows",
        )
    chunks = int(plan.constexprs["CHUNKS"])
    if resident < chunks:
        if chunks == 1:
            return LaunchGrid(plan.variant, 0, "no program of this kernel fits on an SM: the launch fails")
        reason = (
            f"a row needs {chunks} programs of {plan.tile_width:,} columns but only {resident} fit on the GPU at once"
        )
        return LaunchGrid(
            plan.variant, 0, f"{chunks} programs per row; {reason}: the launch runs 'online' instead", fallback=reason
        )
    groups = min(n_rows, resident // chunks)
    return LaunchGrid(
        plan.variant,
        groups * chunks,
        f"resident programs {sm_count} x {blocks_per_sm} = {resident:,} // {chunks} chunk(s) per row = "
        f"{resident // chunks:,} rows in flight (at most R={n_rows:,}) x {chunks} chunk(s): "
        f"{groups * chunks:,} programs looping over the rows",
    )


def shared_memory_note(occupancy: dict, arch: str) -> str:
    """Why the shared-memory limit allows `occupancy['limits']['shared_memory']` blocks: the bytes one block takes
    and the L1/shared carveout the driver configures (blockscope.profiling.inspect.occupancy's model). `occupancy` is an
    OccupancyResult as a dict."""
    from blockscope.profiling.inspect import occupancy as occ

    spec = occ.arch_from_name(arch)
    shared = int(occupancy["shared_bytes"])
    alloc = int(occupancy["shared_alloc_per_block"])
    carveout = int(occupancy["carveout_bytes"])
    allowed = int(occupancy["limits"]["shared_memory"])
    binds = occupancy["limiter"] == "shared_memory"
    block = (
        f"Each program takes {alloc:,} B of shared memory: the kernel's {shared:,} B plus the "
        f"{spec.reserved_shared_per_block:,} B the driver reserves per block, rounded up to "
        f"{spec.shared_alloc_unit} B."
    )
    if alloc > spec.max_shared_per_block + spec.reserved_shared_per_block:
        return (
            f"{block} That is over the {spec.max_shared_per_block // KB} KB a block may opt in to on {spec.name}: "
            "no block can launch."
        )
    steps = ", ".join(str(s // KB) for s in spec.carveout_steps)
    if shared > occ.TRITON_PREFER_SHARED_ABOVE:
        rule = (
            f"Above {occ.TRITON_PREFER_SHARED_ABOVE // KB} KB per block Triton asks for the largest carveout, "
            f"{carveout // KB} KB on {spec.name}"
        )
    else:
        others = min(v for k, v in occupancy["limits"].items() if k != "shared_memory")
        rule = (
            f"The SM's L1/shared split (the carveout) is set by the driver at launch, in steps of {steps} KB on "
            f"{spec.name}; it is modeled as the smallest step holding the {others} block(s) the other limits "
            f"allow ({others} x {alloc:,} B), here {carveout // KB} KB"
        )
    verdict = (
        "This is the binding limit: the largest carveout cannot hold as many blocks as the other limits allow."
        if binds
        else "It does not bind: the carveout grows with the blocks that fit, so a small kernel's "
        "shared-memory figure only says how much of L1 the driver gives to shared memory."
    )
    return f"{block} {rule}, which holds {carveout:,} // {alloc:,} = {allowed} block(s). {verdict}"


def default_sm_count(arch: str, data_arch: str | None = None, data_sm_count: int | None = None) -> int:
    """SMs to assume for `arch`: the loaded data's SM count when its GPU is that arch, else the arch's reference
    GPU from blockscope.profiling.inspect.occupancy.ARCHS (e.g. sm_90 -> 132, sm_120 -> 170)."""
    from blockscope.profiling.inspect import occupancy as occ

    spec = occ.arch_from_name(arch)
    try:
        same = bool(data_arch) and occ.arch_from_name(data_arch).name == spec.name
    except ValueError:  # the data's GPU is an arch the calculator does not know: not this one
        same = False
    if data_sm_count and same:
        return int(data_sm_count)
    return spec.sm_count


def lane_facts(
    variants: list[str], n_cols: int, n_rows: int = 4096, num_warps: int | None = None, dtype: str = "fp16"
) -> pd.DataFrame:
    """Per registered variant, its lanes at N = `n_cols` in `dtype`: `runs` (the variant that runs: auto's choice),
    tile_width (BLOCK_SIZE, TILE or CHUNK), lanes one row spans (tiles_per_row x tile_width), masked lanes per
    row and the wasted fraction (0..1). A variant whose range excludes N gets its plan's message in `error`;
    ValueError when N is not a positive integer."""
    from blockscope.profiling.inspect import lanes

    if isinstance(n_cols, bool) or not isinstance(n_cols, int) or n_cols < 1:
        raise ValueError(f"N={n_cols!r}; allowed: an integer >= 1")
    tunables = {} if num_warps is None else {"num_warps": num_warps}
    rows = []
    for variant in variants:
        try:
            model = lanes.lane_model(variant, n_cols, n_rows=n_rows, dtype=dtype, **tunables)
        except (ValueError, KeyError) as error:
            rows.append({"variant": variant, "error": str(error).strip("'\"")})
            continue
        # splitrow's chunks are programs, not steps: its row span is the launch's lanes per row
        row_span = model.lanes_spanned // n_rows if model.variant == "splitrow" else model.steps * model.tile_width
        rows.append(
            {
                "variant": variant,
                "runs": model.variant,
                "tile_width": model.tile_width,
                "tiles_per_row": row_span // model.tile_width,
                "lanes_per_row": row_span,
                "masked_lanes_per_row": row_span - n_cols,
                "wasted_fraction": (row_span - n_cols) / row_span,
                "error": "",
            }
        )
    columns = [
        "variant",
        "runs",
        "tile_width",
        "tiles_per_row",
        "lanes_per_row",
        "masked_lanes_per_row",
        "wasted_fraction",
        "error",
    ]
    table = pd.DataFrame(rows, columns=columns)
    counts = ["tile_width", "tiles_per_row", "lanes_per_row", "masked_lanes_per_row"]
    return table.astype({**dict.fromkeys(counts, "Int64"), "wasted_fraction": "Float64", "runs": "string"})


def launcher_num_warps(variant: str, n_cols: int, dtype: str, n_rows: int = 4096) -> int | None:
    """The num_warps a variant's launcher runs at this N and dtype with no tunables given (its plan's own
    choice); None when the variant cannot plan this shape."""
    from blockscope import kernels

    try:
        return int(kernels.get_variant(variant).plan(n_rows, n_cols, kernels.dtype_from_name(dtype)).num_warps)
    except (ValueError, TypeError, KeyError):
        return None


def measured_at(df: pd.DataFrame | None, variant: str, dtype: str, n_cols: int) -> pd.DataFrame:
    """The loaded rows of `variant` / `dtype` at exactly N = `n_cols` (empty when that N was not swept)."""
    if df is None or df.empty:
        return pd.DataFrame()
    return df[(df["variant"] == variant) & (df["dtype"] == dtype) & (df["n_cols"] == n_cols)]
