"""Give `auto` rows measured with an earlier tuning table this tree's kernel hash, where that table and this tree's
tables pick the same kernel config for every one of those rows (nothing else in the rows changes).

python3 -m tools.restamp_auto_rows RESULTS.parquet --table-used TABLE.json [--table-used OTHER.json ...] [--per-row]

`auto`'s kernel_source_hash covers the kernels sources and the shipped tuning tables (results/revision.py), so an
entry added to the table for shapes a results file never ran marks all its `auto` rows stale. This script proves
the rows are this tree's anyway, or changes nothing: (1) the rows' hash equals this tree's hash computed with one
of the given tables in place of the shipped table of its GPU (the rows were made by these sources, hashed with that
table); (2) for every `auto` row, `auto.choose` gives the same variant and tunables under every given table as
under the shipped one. Give every table that could have decided the run: the shipped one of that tree and a user
table ($BLOCKSCOPE_CACHE_DIR/autotune, which takes precedence and is not in the hash). Then it writes this tree's
hash (and kernel_revision) into those rows and prints how many. With --per-row, (2) is asked of each row: rows
whose shape picks the same config get this tree's hash, the others keep theirs (stale: they measured another pick).
Rows whose hash is none of the given tables' (left stale by an earlier restamp) are kept as they are.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from blockscope.kernels import auto, dtype_from_name
from blockscope.profiling.results import load_results, revision, save_results


def hash_with_table(table_used: Path) -> str:
    """`auto`'s kernel_source_hash of this tree with table_used's content in place of the shipped table of its GPU."""
    files = revision.module_files("auto")
    shipped = auto.SHIPPED_DIR / f"{auto.gpu_key(json.loads(table_used.read_text())['gpu'])}.json"
    if shipped not in files:
        raise SystemExit(f"{table_used}: no shipped table for its GPU in {auto.SHIPPED_DIR}")
    real = shipped.read_bytes()
    try:
        shipped.write_bytes(table_used.read_bytes())
        return revision.files_hash(files)
    finally:
        shipped.write_bytes(real)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--table-used", type=Path, action="append", required=True)
    parser.add_argument("--per-row", action="store_true", help="restamp the rows whose pick is unchanged only")
    args = parser.parse_args()
    df = load_results(args.results)
    rows = df["variant"] == "auto"
    new_hash = revision.kernel_source_hash("auto")
    candidates = {hash_with_table(path): path for path in args.table_used}
    hashes = set(df.loc[rows, "kernel_source_hash"])
    matching = hashes & set(candidates)
    if len(matching) != 1:
        print(
            f"the auto rows have hashes {sorted(hashes)}, {'none' if not matching else 'several'} of "
            f"{sorted(candidates)} (these sources with the given tables); nothing changed"
        )
        return 1
    old_hash = matching.pop()
    others = rows & (df["kernel_source_hash"] != old_hash)
    if others.any():  # rows already stale under an older table: another run's pick, they stay as they are
        print(
            f"kept: {int(others.sum())} auto rows of hashes {sorted(hashes - {old_hash})} (not from the given tables)"
        )
    rows &= ~others
    tables = [json.loads(path.read_text()) for path in args.table_used]
    original = auto.load_table
    picks_now, picks_used = {}, {}
    for key in set(
        zip(
            df.loc[rows, "n_rows"], df.loc[rows, "n_cols"], df.loc[rows, "dtype"], df.loc[rows, "gpu_name"], strict=True
        )
    ):
        n_rows, n_cols, dtype, gpu = int(key[0]), int(key[1]), dtype_from_name(key[2]), key[3]
        picks_now[key] = auto.choose(n_rows, n_cols, dtype, gpu)
        for table in tables:
            auto.load_table = lambda gpu_name, table=table: table
            try:
                pick = auto.choose(n_rows, n_cols, dtype, gpu)
            finally:
                auto.load_table = original
            if pick != picks_now[key]:
                picks_used[key] = pick
    differ = sorted(picks_used)
    if differ and args.per_row:
        keys = pd.Series(
            list(zip(df["n_rows"], df["n_cols"], df["dtype"], df["gpu_name"], strict=True)), index=df.index
        )
        rows &= ~keys.isin(set(differ))
        for key in differ:
            print(f"left stale: {key}: {picks_used[key]} then, {picks_now[key]} now")
    elif differ:
        print(
            f"{len(differ)} shapes pick differently, e.g. {differ[0]}: {picks_used[differ[0]]} then, "
            f"{picks_now[differ[0]]} now; nothing changed"
        )
        return 1
    df.loc[rows, "kernel_source_hash"] = new_hash
    df.loc[rows, "kernel_revision"] = [
        revision.kernel_revision(new_hash, version) for version in df.loc[rows, "triton_version"]
    ]
    save_results(df, args.results)
    print(
        f"{int(rows.sum())} auto rows over {len(picks_now) - len(differ)} shapes: {old_hash} -> {new_hash} (same picks)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
