"""What the exact fp32 exp costs `auto`: each fp32 entry of the H200 table timed with its tunables as picked
(fast_exp=0, the exp and division within an ULP) and with fast_exp=1 (tl.exp / approximate division), same call.

    python3 experiments/2026-12-04-gpu-final/exp_cost.py --out DIR/exp_cost.csv [--budget-s 60]

from the repository root on a CUDA machine. Timing: profiling.measure.timing.benchmark, `cuda_graph` (replay),
median of adaptive reps (2 % CI), the two forms alternated per shape. cost = exact / fast - 1. Entries whose
variant has no fast_exp tunable (torch, staged_split, online, persistent) are listed as such, not timed.
"""

from __future__ import annotations

import argparse
import csv
import functools
import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402

from blockscope import kernels  # noqa: E402
from blockscope.profiling.measure import timing  # noqa: E402

TABLE = Path("kernels/tuned/nvidia-h200.json")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--budget-s", type=float, default=60.0)
    args = parser.parse_args()
    entries = [e for e in json.loads(TABLE.read_text())["entries"] if e["dtype"] == "fp32"]
    rows, start = [], time.monotonic()
    for entry in sorted(entries, key=lambda e: (e["n_cols"], e["n_rows"])):
        variant, tunables = entry["variant"], dict(entry["tunables"])
        row = {
            "n_rows": entry["n_rows"],
            "n_cols": entry["n_cols"],
            "variant": variant,
            "tunables": json.dumps(tunables),
        }
        if variant not in kernels.VARIANTS or "fast_exp" not in kernels.VARIANTS[variant].tunables:
            rows.append({**row, "note": "no fast_exp tunable"})
            continue
        if time.monotonic() - start > args.budget_s:
            rows.append({**row, "note": "skipped: time budget"})
            continue
        x = torch.randn(entry["n_rows"], entry["n_cols"], device="cuda") * 10
        out = {}
        for fast in (0, 1, 0, 1):
            call = functools.partial(kernels.softmax, x, variant=variant, **{**tunables, "fast_exp": fast})
            stats = timing.benchmark(
                call, "cuda_graph", warmup=5, warmup_ms=10.0, rel_ci=0.02, min_reps=10, max_reps=200, budget_ms=30.0
            )
            out.setdefault(fast, []).append(stats.median_us)
        exact, fast = min(out[0]), min(out[1])
        rows.append({**row, "exact_us": round(exact, 2), "fast_us": round(fast, 2), "cost": round(exact / fast - 1, 4)})
        print(
            f"fp32 {entry['n_rows']}x{entry['n_cols']} {variant}: exact {exact:.1f} us, fast {fast:.1f} us, "
            f"cost {100 * (exact / fast - 1):+.1f} %",
            flush=True,
        )
        del x
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fields = ["n_rows", "n_cols", "variant", "tunables", "exact_us", "fast_us", "cost", "note"]
    with args.out.open("w", newline="") as f:
        writer = csv.DictWriter(f, fields)
        writer.writeheader()
        writer.writerows(rows)
    costs = [r["cost"] for r in rows if "cost" in r]
    if costs:
        geo = math.exp(sum(math.log1p(c) for c in costs) / len(costs)) - 1
        print(
            f"{len(costs)} entries timed: cost median {100 * sorted(costs)[len(costs) // 2]:+.1f} %, geomean "
            f"{100 * geo:+.1f} %, max {100 * max(costs):+.1f} %, over 2 %: {sum(c > 0.02 for c in costs)}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
