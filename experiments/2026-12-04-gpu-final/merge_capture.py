"""The bundled capture after its resume: run 1's `auto` rows that the resume measured again (the table's corrected
picks) are dropped, so every (config, method) has one row; everything else is kept as the sweep wrote it.

    python experiments/2026-12-04-gpu-final/merge_capture.py RESUMED.parquet data/h200_sweep.parquet [OPS.parquet]

    python experiments/2026-12-04-gpu-final/merge_capture.py --drop-stale data/h200_sweep_repeat.parquet

OPS.parquet (the `sweep --op masked_softmax,ragged_softmax` rows of the same session) is appended: the fused-op
rows, tagged with `op`, that the softmax pages leave out and the Backends page's Fused ops section reads.
--drop-stale removes a file's stale rows (the repeat's `auto` rows of the picks the table has since corrected: they
timed kernels `auto` no longer runs, so Run vs run would compare two different kernels as one config).
"""

from __future__ import annotations

import sys

import pandas as pd

from blockscope.profiling.results import load_results, revision, save_results

KEYS = ["variant", "dtype", "n_rows", "n_cols", "tunables", "method", "direction"]


def main(source: str, target: str, ops: str | None = None) -> int:
    table = load_results(source)
    stale = revision.stale_rows(table)
    again = table.duplicated(KEYS, keep=False) & stale
    kept = table[~again]
    assert not kept.duplicated(KEYS).any(), "a config and method measured twice, not by a stale row"
    if ops is not None:
        op_rows = load_results(ops)
        kept = pd.concat([kept, op_rows], ignore_index=True)
        print(f"{len(op_rows)} op rows appended from {ops}")
    save_results(kept, target)
    print(f"{len(table)} rows; dropped {int(again.sum())} stale rows measured again; {len(kept)} written to {target}")
    return 0


def drop_stale(path: str) -> int:
    table = load_results(path)
    stale = revision.stale_rows(table)
    save_results(table[~stale], path)
    print(f"{path}: dropped {int(stale.sum())} stale rows ({', '.join(sorted(set(table.loc[stale, 'variant'])))})")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--drop-stale"]:
        sys.exit(drop_stale(sys.argv[2]))
    sys.exit(main(*sys.argv[1:4]))
