"""Give stale `auto` rows this tree's kernel hash where this tree launches the same kernel with the same launch
configuration for them, and that kernel's own code is unchanged since the rows' run.

python3 -m tools.restamp_same_launch RESULTS.parquet [--dry-run]

`auto`'s kernel_source_hash covers its whole import graph (results/revision.py): a change to auto's host path alone
(how a launch is recorded, replayed or looked up) marks every `auto` row stale though no kernel changed. Per stale
`auto` row of a Blockscope GPU run this proves the row is still this tree's, or leaves it stale:
  1. this tree's `auto.choose` for the row's (R, N, dtype, GPU) picks a Triton variant P, and P's plan for that shape
     has the row's num_warps, num_stages, tile_width and rows_per_program (what the run recorded of the launch),
     and P's kernel name is among the row's kernel_names where the run recorded them; or it picks torch.softmax
     and the row recorded no Triton launch (it ran torch.softmax);
  2. P's kernel_source_hash in this tree equals the hash that P's own rows of the same run carry (P's kernel and
     launcher are the code that ran).
Rows that pass get this tree's `auto` hash and kernel_revision; the rest keep theirs (printed with the reason).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from blockscope.kernels import auto, dtype_from_name, get_variant
from blockscope.profiling.results import load_results, revision, save_results

PLAN_FIELDS = ("num_warps", "num_stages", "tile_width", "rows_per_program")


def why_not(row: pd.Series, run_hashes: dict[tuple[str, str], str]) -> str | None:
    """Why this stale auto row cannot be proven this tree's launch (None: it can)."""
    n_rows, n_cols, dtype = int(row["n_rows"]), int(row["n_cols"]), dtype_from_name(row["dtype"])
    variant, tunables = auto.choose(n_rows, n_cols, dtype, row["gpu_name"], on_that_gpu=True)
    if variant == "torch":  # the row ran torch.softmax too when it recorded no Triton launch
        ran_triton = any(pd.notna(row.get(name)) for name in PLAN_FIELDS)
        return "this tree hands the shape to torch.softmax, the row ran a Triton kernel" if ran_triton else None
    plan = get_variant(variant).plan(n_rows, n_cols, dtype, **tunables)
    for name in PLAN_FIELDS:
        if pd.notna(row.get(name)) and int(row[name]) != int(getattr(plan, name)):
            return f"{variant} plans {name}={getattr(plan, name)}, the row ran {int(row[name])}"
    names = row.get("kernel_names")
    if isinstance(names, str) and names and plan.kernel_name not in names:
        return f"{variant} launches {plan.kernel_name}, the row ran {names}"
    then = run_hashes.get((row["run_id"], variant))
    if then is None:
        return f"the run has no {variant} rows to tell its code then"
    if then != revision.kernel_source_hash(variant):
        return f"{variant}'s code changed since the run ({then} then)"
    return None


def restamp(df: pd.DataFrame) -> tuple[pd.Series, list[str]]:
    """(mask of the stale auto rows proven this tree's launch, one line per shape left stale)."""
    stale = (df["variant"] == "auto") & (revision.kernel_status(df) == "stale")
    run_hashes = {
        (run, variant): hashes.iloc[0]
        for (run, variant), hashes in df.groupby(["run_id", "variant"])["kernel_source_hash"]
        if hashes.nunique() == 1
    }
    proven = pd.Series(False, index=df.index)
    left: dict[tuple, str] = {}
    verdicts: dict[tuple, str | None] = {}
    for index in df.index[stale]:
        row = df.loc[index]
        key = (row["run_id"], row["gpu_name"], row["dtype"], int(row["n_rows"]), int(row["n_cols"]))
        key += tuple(None if pd.isna(row.get(f)) else int(row[f]) for f in PLAN_FIELDS)
        if key not in verdicts:
            verdicts[key] = why_not(row, run_hashes)
        if verdicts[key] is None:
            proven[index] = True
        else:
            left[key[:5]] = verdicts[key]
    lines = [f"left stale: {key[2]} {key[3]}x{key[4]} ({key[0]}): {reason}" for key, reason in sorted(left.items())]
    return proven, lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--dry-run", action="store_true", help="say what would change, write nothing")
    args = parser.parse_args()
    df = load_results(args.results)
    proven, lines = restamp(df)
    for line in lines:
        print(line)
    new_hash = revision.kernel_source_hash("auto")
    if not args.dry_run and proven.any():
        df.loc[proven, "kernel_source_hash"] = new_hash
        df.loc[proven, "kernel_revision"] = [
            revision.kernel_revision(new_hash, version) for version in df.loc[proven, "triton_version"]
        ]
        save_results(df, args.results)
    what = "would get" if args.dry_run else "got"
    print(f"{int(proven.sum())} stale auto rows {what} this tree's hash {new_hash}; {len(lines)} shapes left stale")
    return 0


if __name__ == "__main__":
    sys.exit(main())
