"""Rebuild the retuned table from the tuner's per-shape lines (the call's table files did not come back: a device call
returns at most 8 files). Each `best` line is `autotune.describe`, i.e. the `best_entries` record `merge_table` folds
in, with times rounded to 0.1 us. Usage: python experiments/2026-12-04-retune-coldstore/rebuild_table.py"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from blockscope.profiling.measure import autotune

HERE = Path(__file__).parent
TABLE = Path("kernels/tuned/nvidia-h200.json")
LOG = Path("data/tuning/h200_retune_2026-12-04.jsonl")  # the auto page's candidates: torch and the kept config
ORDER = Path("data/tuning/order.json")
LINE = re.compile(r"^(fp16|bf16|fp32) R=(\d+) N=(\d+): torch ([\d.]+) us, best (\w+) (\{.*\}) ([\d.]+) us$")
RUNS = (  # log, command as it ran, seconds the tuner reported
    (
        "lo.log",
        "python3 -m tools.tune_h200 --out $OUT/tune/lo --dtypes fp32 --challenge kernels/tuned/nvidia-h200.json "
        "--variants warprows,stagedrows --max-n 4096",
        144.4,
    ),
    (
        "hi.log",
        "python3 -m tools.tune_h200 --out $OUT/tune/hi --dtypes fp32 --challenge $OUT/tune/lo/nvidia-h200.json "
        "--variants warprows,stagedrows --min-n 4097",
        85.0,
    ),
    (
        "tiny.log",
        "python3 -m tools.tune_h200 --out $OUT/tune/tiny --dtypes fp16,bf16,fp32 --extend "
        "$OUT/tune/hi/nvidia-h200.json --grid tiny",
        106.7,
    ),
)


def entries(log: Path) -> list[dict]:
    found = []
    for line in log.read_text().splitlines():
        if m := LINE.match(line.strip()):
            dtype, rows, cols, torch_us, variant, tunables, best_us = m.groups()
            found.append(
                {
                    "dtype": dtype,
                    "n_rows": int(rows),
                    "n_cols": int(cols),
                    "variant": variant,
                    "tunables": ast.literal_eval(tunables),
                    "median_us": float(best_us),
                    "torch_us": float(torch_us),
                    "error": None,
                    "chosen": True,
                }
            )
    return found


def main() -> None:
    table = json.loads(TABLE.read_text())
    for name, command, seconds in RUNS:
        records = entries(HERE / "logs" / name)
        table = autotune.merge_table(
            table, records, seconds, command + f"  (rebuilt from {name}: {len(records)} shapes)"
        )
    print("wrote", autotune.save_table(table, TABLE.parent))
    note = "rebuilt from the tuner's per-shape line: the other candidates' times did not come back"
    with open(LOG, "w") as log:
        for name, _, _ in RUNS:
            for record in entries(HERE / "logs" / name):
                torch_record = {**record, "variant": "torch", "tunables": {}, "median_us": record["torch_us"]}
                torch_record.pop("chosen")
                kept = [record] if record["variant"] == "torch" else [torch_record, record]
                log.writelines(json.dumps({**r, "seconds": None, "note": note}) + "\n" for r in kept)
    order = json.loads(ORDER.read_text())
    if LOG.name not in order["logs"]:
        order["logs"].append(LOG.name)
        ORDER.write_text(json.dumps(order, indent=2) + "\n")
    print("wrote", LOG)
    print("entries", len(table["entries"]))


if __name__ == "__main__":
    main()
