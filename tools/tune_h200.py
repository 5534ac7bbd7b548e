"""Tune `auto` on a GPU (run on the H200): writes every measurement (one JSON line per config, as it goes) and
the tuning table under --out.

python3 -m tools.tune_h200.py --out $OUT [--dtypes fp16,fp32] [--powers-of-two --min-n 128 --max-n 1048576]
    [--check-off-grid] [--challenge kernels/tuned/nvidia-h200.json --variants staged,staged_split --min-n 4096]
    [--mid-tier kernels/tuned/nvidia-h200.json] [--extend kernels/tuned/nvidia-h200.json]
Shapes: the bench's (the sweep's N at R=4096, the ~16 MB mid tier of small N, the buckets' mid points
autotune.GRID_MID_N, the ~512 MB large set);
--mid-tier extends a table with the mid-tier shapes it has no entry for, --extend with every grid shape it has no
entry for (merged, provenance under "retuned");
with --powers-of-two, N = min-n..max-n
in powers of two at R=4096 (N <= 262144) and ~512 MB. Timing: profiling.measure.timing back_to_back_flushed median
(L2 flushed before each rep, launches back to back), the timer the bench uses; the fastest three and torch are
timed again interleaved (autotune.recheck), and configs still within 3% of the fastest are told apart by CUDA-graph
replay (autotune.break_ties; --no-tiebreak: the fastest flushed median alone, as every table up to 2026-12-02's).
--check-off-grid then times, on the bench's off-grid shapes (R and N the tuner never saw), every candidate against
what `auto` picks from the new table (offgrid_check.jsonl).
--challenge retunes part of an existing table: on its shapes with --min-n <= N <= --max-n, torch, its pick and every
candidate of --variants are timed (with the recheck, which always includes the table's pick) and the winners
replace its entries (provenance under "retuned").
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from blockscope.profiling.measure import autotune, timing


def flushed_median_us(fn) -> float:
    return timing.benchmark(fn, "back_to_back_flushed", warmup=5).median_us


def graph_median_us(fn) -> float:
    """The tie-break (autotune.break_ties): CUDA-graph replay median."""
    return timing.benchmark(fn, "cuda_graph", warmup=5).median_us


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--dtypes", default="fp16,fp32")
    parser.add_argument("--powers-of-two", action="store_true")
    parser.add_argument("--min-n", type=int, default=128)
    parser.add_argument("--max-n", type=int, default=2**20)
    parser.add_argument("--check-off-grid", action="store_true")
    parser.add_argument(
        "--challenge",
        type=Path,
        help="a tuning table to retune in part: its shapes with N in "
        "--min-n..--max-n, its pick against --variants (torch timed too); writes the merged table",
    )
    parser.add_argument("--variants", default="staged,staged_split")
    parser.add_argument(
        "--mid-tier",
        type=Path,
        help="a tuning table to extend with the mid tier (~16 MB of "
        "small-N rows, autotune.mid_tier_shapes): tunes those shapes and writes the merged table",
    )
    parser.add_argument(
        "--extend",
        type=Path,
        help="a tuning table to extend with every shape of the grid "
        "(--grid, default autotune.bench_shapes) it has no entry for: tunes those and writes the merged table",
    )
    parser.add_argument(
        "--grid",
        default="bench",
        choices=sorted(autotune.GRIDS),
        help="the grid --extend covers: bench (everything), odd (ODD_N: rows not 16-byte aligned), tiny (N 8-64), "
        "mid, grid-mid",
    )
    parser.add_argument("--no-tiebreak", action="store_true", help="pick the fastest flushed median alone")
    args = parser.parse_args()
    tiebreak = None if args.no_tiebreak else graph_median_us
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    n_values = None
    if args.powers_of_two:
        n_values = []
        n_cols = args.min_n
        while n_cols <= args.max_n:
            n_values.append(n_cols)
            n_cols *= 2
    with open(out / "tune_log.jsonl", "w") as log:

        def on_shape(records: list[dict]) -> None:
            log.writelines(json.dumps(record) + "\n" for record in records)
            log.flush()
            print(autotune.describe(records), flush=True)

        command = "python3 -m tools.tune_h200.py " + " ".join(sys.argv[1:])
        if args.mid_tier or args.extend:
            base = json.loads((args.mid_tier or args.extend).read_text())
            tuned = {(e["dtype"], int(e["n_rows"]), int(e["n_cols"])) for e in base["entries"]}
            grid = autotune.mid_tier_shapes if args.mid_tier else autotune.GRIDS[args.grid]

            def untuned(dtype):  # the grid's shapes the table has no entry for yet
                from blockscope.kernels import DTYPE_NAMES

                return [(r, n) for r, n in grid(dtype) if (DTYPE_NAMES[dtype], r, n) not in tuned]

            records, seconds = autotune.tune(
                args.dtypes.split(","), None, flushed_median_us, on_shape=on_shape, shapes_of=untuned, tiebreak=tiebreak
            )
            table = autotune.merge_table(base, records, seconds, command)
        elif args.challenge:
            base = json.loads(args.challenge.read_text())
            records, seconds = autotune.challenge(
                base,
                args.dtypes.split(","),
                args.variants.split(","),
                flushed_median_us,
                min_n=args.min_n,
                on_shape=on_shape,
                max_n=args.max_n,
                tiebreak=tiebreak,
            )
            table = autotune.merge_table(base, records, seconds, command)
        else:
            records, seconds = autotune.tune(
                args.dtypes.split(","), n_values, flushed_median_us, on_shape=on_shape, tiebreak=tiebreak
            )
            table = autotune.make_table(records, seconds, command)
    print("wrote", autotune.save_table(table, out), "entries", len(table["entries"]), "s", round(seconds, 1))
    reversed_picks = [r for r in records if r.get("reversed")]
    print(
        f"recheck reversed the first-pass winner on {len(reversed_picks)} shapes:",
        ", ".join(f"{r['dtype']} {r['n_rows']}x{r['n_cols']}" for r in reversed_picks),
    )
    broken = [
        r
        for r in records
        if r.get("chosen")
        and any(
            o is not r
            and (o["dtype"], o["n_rows"], o["n_cols"]) == (r["dtype"], r["n_rows"], r["n_cols"])
            and o.get("tiebreak_us") is not None
            and o["median_us"] < r["median_us"]
            for o in records
        )
    ]
    print(
        f"CUDA-graph replay broke a tie against the fastest flushed config on {len(broken)} shapes:",
        ", ".join(f"{r['dtype']} {r['n_rows']}x{r['n_cols']} {r['variant']}" for r in broken),
    )
    if args.check_off_grid:
        os.environ["BLOCKSCOPE_CACHE_DIR"] = str(out / "cache")  # auto reads the user table first: the new one
        autotune.save_table(table)
        from blockscope.kernels import auto
        from blockscope.profiling.measure.bench import OFFGRID

        auto.clear_choices()
        shapes = [(d, r, n) for d in args.dtypes.split(",") for r, n in OFFGRID]
        results = autotune.check_off_grid(shapes, flushed_median_us, gpu_name=table["gpu"])
        with open(out / "offgrid_check.jsonl", "w") as log:
            log.writelines(json.dumps(r) + "\n" for r in results)
        for r in results:
            print(
                f"off grid {r['dtype']} {r['n_rows']}x{r['n_cols']}: auto {r['pick']} {r['pick_tunables']} "
                f"{r['pick_us']:.1f} us, best {r['best']} {r['best_tunables']} {r['best_us']:.1f} us, "
                f"ratio {r['ratio']:.3f}"
            )


if __name__ == "__main__":
    main()
