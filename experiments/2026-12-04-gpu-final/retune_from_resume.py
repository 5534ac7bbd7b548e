"""Table entries the resume run reverses (the capture's fp32 N >= 65535 part, run 20261204T111531Z): the rule of
experiments/2026-12-04-capture/retune_from_capture.py (one of our configs beat auto's own row by > 5 % under both
back_to_back_flushed and cuda_graph), applied to that run's rows only, so every comparison is within one run.

    python experiments/2026-12-04-gpu-final/retune_from_resume.py [--write]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

from blockscope.profiling.measure import autotune
from blockscope.profiling.results import load_results

RUN = "20261204T111531Z-6148dd15"
HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("rfc", HERE.parent / "2026-12-04-capture" / "retune_from_capture.py")
rfc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rfc)
rfc.LOG = Path("data/tuning/h200_retune_from_resume.jsonl")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    df = load_results(rfc.CAPTURE)
    df = df[(df["run_id"] == RUN) & (df["op"].fillna("softmax") == "softmax")]
    table = json.loads(rfc.TABLE.read_text())
    found = rfc.reversals(df, table)
    for change in found:
        print(
            f"{change['dtype']} {change['n_rows']}x{change['n_cols']}: {change['was']} -> {change['variant']} "
            f"{change['tunables']} ({change['median_us']:.1f} us flushed; auto / best {change['auto_over_best']})"
        )
    if args.write and found:
        records = [{k: v for k, v in c.items() if k not in ("was", "auto_over_best")} | {"error": ""} for c in found]
        command = f"python experiments/2026-12-04-gpu-final/retune_from_resume.py --write (configs timed by run {RUN})"
        print("wrote", autotune.save_table(autotune.merge_table(table, records, 0.0, command), rfc.TABLE.parent))
        rfc.write_log(df, found)
        print("wrote", rfc.LOG)
    return 0


if __name__ == "__main__":
    sys.exit(main())
