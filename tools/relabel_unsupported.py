"""Rewrite the error text of results rows that a Blockscope variant's own rules leave out (no measurement in them)
to the text `python -m profiling sweep` writes for them now: 'unsupported: <variant>: <reason>'.

python3 -m tools.relabel_unsupported data/h200_sweep.parquet [more.parquet ...]

The H200 capture of 2026-12-01 07:33 ran before the sweep checked `profiling.measure.backends.unsupported_reason` ahead
of planning a Blockscope variant's forward config, so odd-N fp16/bf16 configs of the staged variants (cp.async
copies whole 4-byte words) are ValueError rows from the variants' plans. Only rows with an error, no median and
a reason from that same function are touched; every other cell is kept. Prints how many rows changed per variant.
"""

from __future__ import annotations

import sys

import pandas as pd

from blockscope import kernels
from blockscope.profiling.measure.backends import UNSUPPORTED, unsupported_reason
from blockscope.profiling.results import load_results, save_results


def relabel(df: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, int]]:
    """(the table with those rows' `error` rewritten, rows changed per variant)."""
    out = df.copy()
    changed: dict[str, int] = {}
    for index, row in out.iterrows():
        error = row["error"] if isinstance(row["error"], str) else ""
        if (
            not error
            or error.startswith(UNSUPPORTED)
            or pd.notna(row["median_us"])
            or row["variant"] not in kernels.VARIANTS
            or row.get("direction", "forward") != "forward"
        ):
            continue
        reason = unsupported_reason(
            row["variant"], int(row["n_rows"]), int(row["n_cols"]), kernels.dtype_from_name(row["dtype"])
        )
        if reason:
            out.at[index, "error"] = reason
            changed[row["variant"]] = changed.get(row["variant"], 0) + 1
    return out, changed


def main(paths: list[str]) -> int:
    if not paths:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    for path in paths:
        table, changed = relabel(load_results(path))
        save_results(table, path)
        print(f"{path}: {sum(changed.values())} rows relabelled {changed}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
