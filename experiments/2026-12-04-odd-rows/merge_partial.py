"""Fold run 5's partial odd-grid tune (the shapes it finished before its 330 s limit) into the table, as the tuner
would have at its end (autotune.merge_table):

    python3 experiments/2026-12-04-odd-rows/merge_partial.py   # rewrites kernels/tuned/nvidia-h200.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMMAND = (
    "python3 -m tools.tune_h200.py --out $OUT/odd --dtypes fp32,fp16,bf16 --extend kernels/tuned/nvidia-h200.json "
    "--grid odd (stopped at 330 s after 11 fp32 shapes; merged by experiments/2026-12-04-odd-rows/merge_partial.py)"
)


def main() -> int:
    from blockscope.profiling.measure import autotune

    here = Path(__file__).resolve().parent
    records = [json.loads(line) for line in (here / "run5_tune_log.jsonl").read_text().splitlines() if line]
    table_path = ROOT / "kernels/tuned/nvidia-h200.json"
    table = autotune.merge_table(json.loads(table_path.read_text()), records, 330.0, COMMAND)
    table_path.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    added = autotune.best_entries(records)
    print(
        f"{len(added)} entries merged:",
        ", ".join(f"{e['dtype']} {e['n_rows']}x{e['n_cols']} {e['variant']}" for e in added),
    )
    return 0


if __name__ == "__main__":
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
