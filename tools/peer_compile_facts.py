"""Re-read the compile facts (registers, spills, shared memory, warps, occupancy) of a peer backend's kernels per
(dtype, N) without timing anything, and patch them into a results file's rows of that backend.

  python3 -m tools.peer_compile_facts --backends liger --out $OUT/liger_facts.csv         # on the GPU
  python3 -m tools.peer_compile_facts --patch data/h200_backends.parquet --facts FILE.csv  # here, no GPU

Made for the first H200 backends capture (2026-12-01), whose Liger rows carried the facts of the first kernel
Liger compiled (N=128) at every N; timings are untouched by a patch.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]

FACT_COLUMNS = ("n_regs", "spill_store_bytes", "shared_bytes", "num_warps", "blocks_per_sm", "occupancy", "limiter")


def read_facts(backends: list[str], dtypes: list[str], n_values: list[int], rows: int) -> pd.DataFrame:
    """One row per (backend, dtype, N): the facts profiling.measure.sweep records for a peer's first call."""
    import torch

    from blockscope.kernels import dtype_from_name
    from blockscope.profiling.measure.backends import get_backend, unsupported_reason
    from blockscope.profiling.measure.sweep import make_config, peer_compile_facts

    records = []
    for name in backends:
        for dtype in dtypes:
            for n in n_values:
                torch_dtype = dtype_from_name(dtype)
                if unsupported_reason(name, rows, n, torch_dtype):
                    continue
                x = torch.randn(rows, n, device="cuda", dtype=torch_dtype)
                get_backend(name).prepare(x)()
                torch.cuda.synchronize()
                facts = peer_compile_facts(make_config(name, dtype, rows, n), x, None)
                records.append(
                    {"variant": name, "dtype": dtype, "n_cols": n, **{c: facts.get(c) for c in FACT_COLUMNS}}
                )
                print(name, dtype, n, {c: facts.get(c) for c in FACT_COLUMNS[:4]}, flush=True)
    return pd.DataFrame(records)


def patch(results: Path, facts_csv: Path) -> int:
    """Write the facts into `results`' rows of the same (variant, dtype, N); returns the rows changed."""
    from blockscope.profiling.results import load_results, save_results

    table = load_results(results)
    facts = pd.read_csv(facts_csv)
    changed = 0
    for record in facts.to_dict("records"):
        mask = (
            (table["variant"] == record["variant"])
            & (table["dtype"] == record["dtype"])
            & (table["n_cols"] == int(record["n_cols"]))
            & (table["error"] == "")
        )
        for column in FACT_COLUMNS:
            value = record[column]
            table.loc[mask, column] = None if pd.isna(value) else value
        changed += int(mask.sum())
    save_results(table, results)
    return changed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="liger", help="comma list of peers (default liger)")
    parser.add_argument("--dtypes", default="fp16,bf16,fp32")
    parser.add_argument("--n", help="comma list of N (default: the sweep's default N set)")
    parser.add_argument("--rows", type=int, default=64, help="R of the probe input (facts do not depend on it)")
    parser.add_argument("--out", type=Path, help="CSV of facts to write (GPU)")
    parser.add_argument("--patch", type=Path, help="results file whose rows get the facts of --facts")
    parser.add_argument("--facts", type=Path, help="CSV written by --out")
    args = parser.parse_args()
    if args.patch:
        if not args.facts:
            parser.error("--patch needs --facts")
        print(f"patched {patch(args.patch, args.facts)} rows of {args.patch}")
        return 0
    if not args.out:
        parser.error("give --out (read facts on a GPU) or --patch with --facts")
    from blockscope.profiling.measure.sweep import default_n_values

    n_values = [int(v) for v in args.n.split(",")] if args.n else default_n_values()
    table = read_facts(args.backends.split(","), args.dtypes.split(","), n_values, args.rows)
    table.to_csv(args.out, index=False)
    print(f"wrote {len(table)} rows to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
