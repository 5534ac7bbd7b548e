"""The table's staged_split shape (fp32 4096 x 262143) through a launch record: process A calls auto once (which
records its launch into a private kernel store), process B (fresh, empty Triton cache) calls it three times and
checks each output against torch.softmax and that Triton was never imported.

    python experiments/2026-12-04-first-call/staged_split_record.py --out DIR

Writes DIR/staged_split_record.json. Needs a GPU with about 20 GB free."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, sys, time
import torch
import blockscope.kernels as kernels
from blockscope.kernels import launches
torch.cuda.init(); torch.zeros(1, device="cuda"); torch.cuda.synchronize()
x = torch.randn(4096, 262143, device="cuda", dtype=torch.float32) * 10
torch.cuda.synchronize()
calls = []
for _ in range(3):
    t = time.perf_counter()
    y = kernels.softmax(x, variant="auto")
    torch.cuda.synchronize()
    seconds = time.perf_counter() - t
    reference = torch.softmax(x, -1)
    calls.append({"seconds": seconds, "max_abs_error": float((y - reference).abs().max())})
    del y, reference
folder = launches.records_dir(torch.cuda.get_device_name())
record = folder / launches.record_name(torch.float32, 4096, 262143)
saved = json.loads(record.read_text()) if record.is_file() else None
print("RESULT " + json.dumps({
    "calls": calls,
    "triton_imported": "triton" in sys.modules,
    "record": None if saved is None else {
        k: saved.get(k) for k in ("variant", "tunables", "grid", "block", "shared", "cooperative", "workspace")
    },
}))
"""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    from blockscope.profiling.measure.coldstart import child_env, package_root

    args.out.mkdir(parents=True, exist_ok=True)
    results = {}
    with tempfile.TemporaryDirectory(prefix="blockscope-staged-split-") as root:
        for process in ("A_records", "B_replays"):
            env = child_env(Path(root) / process, "cuda")
            env["BLOCKSCOPE_KERNEL_CACHE"] = str(Path(root) / "store")  # shared by A and B
            env["BLOCKSCOPE_NATIVE"] = "0"
            proc = subprocess.run(
                [sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=400, cwd=package_root(), env=env
            )
            line = next((s for s in proc.stdout.splitlines() if s.startswith("RESULT ")), None)
            results[process] = json.loads(line[7:]) if line else {"error": proc.stderr[-2000:]}
            results[process]["stderr_tail"] = proc.stderr[-1500:]
            print(process, json.dumps(results[process])[:1500], flush=True)
    (args.out / "staged_split_record.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
