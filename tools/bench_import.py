"""Import cost of `blockscope.kernels` beyond `import torch`, in fresh interpreters.

python -m tools.bench_import [--repeat 7] [--root PATH ...]

Each sample is one new `python -c` in the given checkout root (default: this one) that times `import torch`, then
`import blockscope.kernels` (time.perf_counter, seconds), and whether Triton got imported. Prints the median, min
and max of each over --repeat samples.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

CODE = (
    "import json, sys, time; t0 = time.perf_counter(); import torch; t1 = time.perf_counter(); "
    "import blockscope.kernels; t2 = time.perf_counter(); "
    "print(json.dumps([t1 - t0, t2 - t1, 'triton' in sys.modules]))"
)


def sample(root: Path) -> tuple[float, float, bool]:
    """One fresh interpreter: (import torch s, import blockscope.kernels beyond torch s, triton imported)."""
    proc = subprocess.run([sys.executable, "-c", CODE], cwd=root, capture_output=True, text=True, timeout=300)
    if proc.returncode:
        raise SystemExit(f"bench_import: the child failed in {root}: {proc.stderr.strip().splitlines()[-1:]}")
    torch_s, kernels_s, triton = json.loads(proc.stdout.strip().splitlines()[-1])
    return torch_s, kernels_s, triton


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="fresh interpreters per root (default 7)")
    parser.add_argument("--root", type=Path, action="append", help="checkout root(s) to time (default: this one)")
    args = parser.parse_args(argv)
    for root in args.root or [Path(__file__).resolve().parent.parent]:
        runs = [sample(root) for _ in range(max(1, args.repeat))]
        torch_s = [r[0] for r in runs]
        kernels_s = [r[1] for r in runs]
        print(
            f"{root}: import torch median {statistics.median(torch_s):.3f} s; import blockscope.kernels beyond torch "
            f"median {statistics.median(kernels_s):.3f} s (min {min(kernels_s):.3f}, max {max(kernels_s):.3f}); "
            f"triton imported: {any(r[2] for r in runs)}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
