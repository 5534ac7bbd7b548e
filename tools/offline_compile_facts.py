"""Fill the compile columns of a results file's Blockscope rows that lack them (registers, spills, shared memory,
blocks per SM, occupancy, limiter) from an offline compile of the row's kernel for the row's arch, marked
compile_source = 'offline'; with --lanes, recompute every such row's masked_lane_fraction from its own dtype's
plan instead. Timings are untouched.

  python3 -m tools.offline_compile_facts data/h200_sweep.parquet --variants splitrow,staged_split [--dry-run]
  python3 -m tools.offline_compile_facts data/h200_sweep.parquet --lanes [--dry-run]

--lanes: until 2026-12-04 the masked-lane model planned every row in fp16, so fp32 rows carried fp16's fraction
(warprows and stagedrows lay fp32 rows out otherwise) or none (odd fp32 N of the staged variants).

Made for the bundled H200 sweep of 2026-12-04, whose splitrow and staged_split rows have none: the live compile
behind the sweep's facts could not build their *i64 workspace arguments (fixed since in
profiling/inspect/compiled.py). Only rows without an error whose kernel code is this tree's (revision.kernel_status
'current') are filled, so the compile is of the code that ran; offline and live facts agree (data/offline_vs_live.csv).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

FACT_COLUMNS = (
    "n_regs",
    "spill_store_bytes",
    "spill_load_bytes",
    "shared_bytes",
    "blocks_per_sm",
    "occupancy",
    "limiter",
    "compile_source",
)


def _ran_this_trees_kernel(table: pd.DataFrame, variants: list[str]) -> pd.Series:
    """Mask of the rows of `variants` without an error whose kernel code is this tree's (kernel_status 'current')."""
    from blockscope.profiling.results import revision

    return (
        table["variant"].isin(variants)
        & (table["error"].fillna("") == "")
        & (revision.kernel_status(table) == "current")
    )


def rows_to_fill(table: pd.DataFrame, variants: list[str]) -> pd.Series:
    """Mask of the rows of `variants` with no n_regs, no error and this tree's kernel code."""
    return _ran_this_trees_kernel(table, variants) & table["n_regs"].isna()


def fill(table: pd.DataFrame, variants: list[str]) -> tuple[pd.DataFrame, int, list[str]]:
    """(the table with the facts filled in, rows filled, one line per kernel compiled or failed)."""
    from blockscope.profiling.measure import sweep
    from blockscope.profiling.measure.env import arch_of

    mask = rows_to_fill(table, variants)
    table = table.copy()
    lines, filled = [], 0
    keys = ["variant", "dtype", "n_rows", "n_cols", "tunables", "compute_capability"]
    for key, group in table[mask].groupby(keys, dropna=False):
        variant, dtype, n_rows, n_cols, tunables, capability = key
        arch = arch_of({"compute_capability": capability})
        config = sweep.make_config(str(variant), str(dtype), int(n_rows), int(n_cols), **json.loads(tunables or "{}"))
        try:
            facts = sweep.default_compile_facts(config, sweep.resolve_plan(config), arch)
        except Exception as error:  # a row left as it was
            lines.append(f"{config.label()} {arch}: {type(error).__name__}: {error}")
            continue
        if facts.get("n_regs") is None:
            lines.append(f"{config.label()} {arch}: no facts")
            continue
        for column in FACT_COLUMNS:
            table.loc[group.index, column] = facts.get(column)
        filled += len(group)
        lines.append(f"{config.label()} {arch}: {facts['n_regs']} registers, {facts['blocks_per_sm']} blocks per SM")
    return table, filled, lines


def refill_lanes(table: pd.DataFrame) -> tuple[pd.DataFrame, int, int]:
    """(the table with masked_lane_fraction recomputed from each row's dtype, rows recomputed, rows whose value
    changed) for the error-free rows of registered variants and auto whose kernel code is this tree's."""
    from blockscope import kernels
    from blockscope.profiling.inspect import lanes

    mask = _ran_this_trees_kernel(table, list(kernels.VARIANTS))
    table = table.copy()
    done = changed = 0
    for (variant, dtype, n_rows, n_cols, tunables), group in table[mask].groupby(
        ["variant", "dtype", "n_rows", "n_cols", "tunables"]
    ):
        try:
            value = lanes.lane_model(
                str(variant), int(n_cols), n_rows=int(n_rows), dtype=str(dtype), **json.loads(tunables or "{}")
            ).masked_lane_fraction
        except ValueError:  # auto handing the shape to torch.softmax: no lanes
            value = None
        before = group["masked_lane_fraction"]
        changed += int(((before.isna() != (value is None)) | ((before - (value or 0.0)).abs() > 1e-12)).sum())
        table.loc[group.index, "masked_lane_fraction"] = value
        done += len(group)
    return table, done, changed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--variants", default="splitrow,staged_split", help="comma list")
    parser.add_argument("--lanes", action="store_true", help="recompute masked_lane_fraction from each row's dtype")
    parser.add_argument("--dry-run", action="store_true", help="count the rows to fill; compile nothing")
    args = parser.parse_args()
    from blockscope.profiling.results import load_results, save_results

    table = load_results(args.results)
    if args.lanes:
        table, done, changed = refill_lanes(table)
        if not args.dry_run:
            save_results(table, args.results)
        print(f"masked_lane_fraction of {done} rows recomputed, {changed} changed" + (" (dry run)" * args.dry_run))
        return 0
    variants = args.variants.split(",")
    if args.dry_run:
        print(f"{int(rows_to_fill(table, variants).sum())} rows of {args.results} would be filled")
        return 0
    table, filled, lines = fill(table, variants)
    print("\n".join(lines))
    save_results(table, args.results)
    print(f"filled {filled} rows of {args.results}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
