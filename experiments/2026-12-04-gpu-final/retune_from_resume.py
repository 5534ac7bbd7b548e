"""Table entries the resume run reverses (the capture's fp32 N >= 65535 part, run 20261204T111531Z): the rule of
experiments/2026-12-04-capture/retune_from_capture.py (one of our configs beat auto's own row by > 5 % under both
back_to_back_flushed and cuda_graph), applied to that run's rows only, so every comparison is within one run.

    python experiments/2026-12-04-gpu-final/retune_from_resume.py [--write]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

from blockscope.profiling.results import load_results

RUN = "20261204T111531Z-6148dd15"
LOG = Path("data/tuning/h200_retune_from_resume.jsonl")
HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("rfc", HERE.parent / "2026-12-04-capture" / "retune_from_capture.py")
rfc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rfc)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    df = load_results(rfc.CAPTURE)
    df = df[(df["run_id"] == RUN) & (df["op"].fillna("softmax") == "softmax")]
    command = f"python experiments/2026-12-04-gpu-final/retune_from_resume.py --write (configs timed by run {RUN})"
    rfc.apply(df, args.write, command, LOG)
    return 0


if __name__ == "__main__":
    sys.exit(main())
