"""Table entries the capture reverses: where the fastest Blockscope variant's config in data/h200_sweep.parquet beat
`auto`'s own row by more than 5 % under both back_to_back_flushed and cuda_graph (the same variant and tunables
fastest under both), the table entry of that (dtype, R, N) takes that config, with the capture's flushed median
(the tuner's metric) and torch's. A tuned choice a re-measurement reverses is a bug; this applies the re-measurement.

Usage: python experiments/2026-12-04-capture/retune_from_capture.py [--write]   (prints the changes; --write saves)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from blockscope.profiling.measure import autotune
from blockscope.profiling.results import load_results

CAPTURE = Path("data/h200_sweep.parquet")
TABLE = Path("kernels/tuned/nvidia-h200.json")
LOG = Path("data/tuning/h200_retune_from_capture.jsonl")  # the auto page's candidates: the capture's rows there
ORDER = Path("data/tuning/order.json")
MARGIN = 1.05
METHODS = ("back_to_back_flushed", "cuda_graph")
PEERS = {"torch", "inductor", "liger", "quack", "auto"}


def reversals(df: pd.DataFrame, table: dict) -> list[dict]:
    """New entries for the table's shapes where the capture's fastest Blockscope config beat auto by > MARGIN under
    every method of METHODS (the same config fastest under each)."""
    ok = df[(df["error"].fillna("") == "") & df["median_us"].notna() & (df["direction"].fillna("forward") == "forward")]
    found = []
    for entry in table["entries"]:
        key = (entry["dtype"], int(entry["n_rows"]), int(entry["n_cols"]))
        shape = ok[(ok["dtype"] == key[0]) & (ok["n_rows"] == key[1]) & (ok["n_cols"] == key[2])]
        winners, ratios = set(), []
        for method in METHODS:
            part = shape[shape["method"] == method]
            ours = part[~part["variant"].isin(PEERS)]
            own = part[part["variant"] == "auto"]["median_us"]
            if ours.empty or own.empty:
                break
            best = ours.loc[ours["median_us"].idxmin()]
            winners.add((best["variant"], best["tunables"]))
            ratios.append(float(own.min()) / float(best["median_us"]))
        if len(ratios) != len(METHODS) or len(winners) != 1 or min(ratios) <= MARGIN:
            continue
        variant, tunables = winners.pop()
        flushed = shape[shape["method"] == METHODS[0]]
        pick = flushed[(flushed["variant"] == variant) & (flushed["tunables"] == tunables)]["median_us"].min()
        torch_us = flushed[flushed["variant"] == "torch"]["median_us"].min()
        found.append(
            {
                "dtype": key[0],
                "n_rows": key[1],
                "n_cols": key[2],
                "variant": variant,
                "tunables": json.loads(tunables),
                "median_us": float(pick),
                "torch_us": float(torch_us),
                "was": f"{entry['variant']} {entry['tunables']}",
                "auto_over_best": [round(r, 3) for r in ratios],
            }
        )
    return found


def write_log(df: pd.DataFrame, found: list[dict], log_path: Path = LOG) -> None:
    """Every Blockscope variant's and torch's flushed row of the capture at the changed shapes, as tuner records
    (the pick `chosen`), so the auto page lists what the choice was made from; appended to the logs' order."""
    flushed = df[(df["method"] == METHODS[0]) & (df["direction"].fillna("forward") == "forward")]
    with open(log_path, "w") as log:
        for change in found:
            shape = flushed[
                (flushed["dtype"] == change["dtype"])
                & (flushed["n_rows"] == change["n_rows"])
                & (flushed["n_cols"] == change["n_cols"])
                & (~flushed["variant"].isin(PEERS - {"torch"}))
            ]
            for row in shape.itertuples():
                tunables = json.loads(row.tunables) if row.variant != "torch" else {}
                record = {
                    "dtype": change["dtype"],
                    "n_rows": change["n_rows"],
                    "n_cols": change["n_cols"],
                    "variant": row.variant,
                    "tunables": tunables,
                    "median_us": float(row.median_us) if pd.notna(row.median_us) else float("nan"),
                    "torch_us": change["torch_us"],
                    "error": row.error if isinstance(row.error, str) else "",
                    "seconds": None,
                    "note": f"timed by the capture (run {row.run_id}, pruned={bool(row.pruned)})",
                }
                if (row.variant, tunables) == (change["variant"], change["tunables"]):
                    record["chosen"] = True
                log.write(json.dumps(record) + "\n")
    order = json.loads(ORDER.read_text())
    if log_path.name not in order["logs"]:
        order["logs"].append(log_path.name)
        ORDER.write_text(json.dumps(order, indent=2) + "\n")


def apply(df: pd.DataFrame, write: bool, command: str, log_path: Path = LOG) -> list[dict]:
    """Print the table entries `df`'s rows reverse; with `write`, merge them into TABLE (provenance `command`) and
    write their candidates to `log_path`. Returns the changes."""
    table = json.loads(TABLE.read_text())
    found = reversals(df, table)
    for change in found:
        print(
            f"{change['dtype']} {change['n_rows']}x{change['n_cols']}: {change['was']} -> {change['variant']} "
            f"{change['tunables']} ({change['median_us']:.1f} us flushed; auto / best {change['auto_over_best']})"
        )
    if write and found:
        records = [{k: v for k, v in c.items() if k not in ("was", "auto_over_best")} | {"error": ""} for c in found]
        print("wrote", autotune.save_table(autotune.merge_table(table, records, 0.0, command), TABLE.parent))
        write_log(df, found, log_path)
        print("wrote", log_path)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    df = load_results(CAPTURE)
    command = "python experiments/2026-12-04-capture/retune_from_capture.py --write"
    apply(df, args.write, f"{command} (configs timed by the capture, run {df['run_id'].iloc[0]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
