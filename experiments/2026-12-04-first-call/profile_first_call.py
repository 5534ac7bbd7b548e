"""Where auto's first call in a fresh process spends its time: cProfile of `kernels.softmax(x, variant="auto")`
(fp16 4096 x 1024 by default) in new child processes with private, empty caches (profiling/measure/coldstart.py's
child_env): 'cold' (empty Triton/Blockscope caches), then 'warm' (the same caches again, a second child).

    python experiments/2026-12-04-first-call/profile_first_call.py --out DIR [--shape 4096x1024] [--reps 2]

Writes DIR/<state>-<rep>.txt (wall seconds per phase, then the top functions by cumulative time) and
DIR/summary.json. Needs a GPU."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import cProfile, io, json, pstats, sys, time
t0 = time.perf_counter()
import torch
t1 = time.perf_counter()
import blockscope.kernels as kernels
t2 = time.perf_counter()
torch.cuda.init(); torch.zeros(1, device="cuda"); torch.cuda.synchronize()
rows, cols = (int(v) for v in sys.argv[1].split("x"))
x = torch.randn(rows, cols, device="cuda", dtype=torch.float16)
torch.cuda.synchronize()
t3 = time.perf_counter()
profile = cProfile.Profile()
profile.enable()
y = kernels.softmax(x, variant="auto")
torch.cuda.synchronize()
profile.disable()
t4 = time.perf_counter()
y = kernels.softmax(x, variant="auto"); torch.cuda.synchronize()
t5 = time.perf_counter()
text = io.StringIO()
stats = pstats.Stats(profile, stream=text)
stats.sort_stats("cumulative").print_stats(70)
stats.sort_stats("tottime").print_stats(25)
error = float((y.float() - torch.softmax(x.float(), -1)).abs().max())
phases = {"torch_import": t1 - t0, "kernels_import": t2 - t1, "first_call_profiled": t4 - t3, "second_call": t5 - t4}
print("PHASES " + json.dumps({"phases": phases, "max_abs_error": error, "triton_loaded": "triton" in sys.modules}))
print(text.getvalue())
"""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--shape", default="4096x1024")
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args()
    from blockscope.profiling.measure.coldstart import child_env, package_root

    args.out.mkdir(parents=True, exist_ok=True)
    summary = []
    for rep in range(args.reps):
        with tempfile.TemporaryDirectory(prefix="blockscope-profile-") as root:
            for state in ("cold", "warm"):
                proc = subprocess.run(
                    [sys.executable, "-c", CHILD, args.shape],
                    capture_output=True,
                    text=True,
                    timeout=300,
                    cwd=package_root(),
                    env=child_env(Path(root), "cuda"),
                )
                (args.out / f"{state}-{rep}.txt").write_text(proc.stdout + "\n--- stderr\n" + proc.stderr[-4000:])
                line = next((s for s in proc.stdout.splitlines() if s.startswith("PHASES ")), None)
                result = json.loads(line[7:]) if line else {"error": proc.stderr[-500:]}
                summary.append({"state": state, "rep": rep, **result})
                print(state, rep, json.dumps(result), flush=True)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
