"""Fill the compile columns of a results file's Blockscope rows that lack them (registers, spills, shared memory,
blocks per SM, occupancy, limiter) from an offline compile of the row's kernel for the row's arch, marked
compile_source = 'offline'; timings are untouched.

  python3 -m tools.offline_compile_facts data/h200_sweep.parquet --variants splitrow,staged_split [--dry-run]

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


def rows_to_fill(table: pd.DataFrame, variants: list[str]) -> pd.Series:
    """Mask of the rows of `variants` with no n_regs, no error and this tree's kernel code."""
    from blockscope.profiling.results import revision

    return (
        table["variant"].isin(variants)
        & table["n_regs"].isna()
        & (table["error"].fillna("") == "")
        & (revision.kernel_status(table) == "current")
    )


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--variants", default="splitrow,staged_split", help="comma list")
    parser.add_argument("--dry-run", action="store_true", help="count the rows to fill; compile nothing")
    args = parser.parse_args()
    from blockscope.profiling.results import load_results, save_results

    table = load_results(args.results)
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
