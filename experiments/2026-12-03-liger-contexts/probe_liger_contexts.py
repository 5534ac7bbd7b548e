"""Liger at fp32 2048x12345 timed in each context that differs between the bench and probe_kernels, in one process.

PYTHONPATH=. python3 experiments/2026-12-03-liger-contexts/probe_liger_contexts.py --out liger_contexts.csv
(liger-kernel from `tools/peer_wheels.sh stage`)

The bench measured Liger there at 55-57 us, ncu and tools/probe_kernels.py at 71-78 us (docs/kernel-changes.md
section 16). The contexts: the input's values (randn as the bench, randn x 3 as the probe, both in the same memory
by an in-place scale, and in new memory), the order (fp16/bf16 of the shape compiled and run first, as the bench
does), the closure (the bench's `bench_shape` against `get_backend('liger').prepare` + `timing.benchmark` as the
probe), and the peers run before Liger in the same process. Pass 1: Liger alone; pass 2: `bench_shape` with the
bench's peers in its order (Inductor, Liger, Quack where installed); pass 3: the direct contexts again, after
Inductor has run. --peers-first imports every peer first (the bench's availability check). `teaching` with 16 warps
(auto's pick there) is timed beside Liger in each context as the control. Printed: one line per (pass, context,
config, method) and the SM clock from nvidia-smi around each pass.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import torch

from blockscope import kernels
from blockscope.profiling.measure import timing
from blockscope.profiling.measure.backends import get_backend
from blockscope.profiling.measure.bench import bench_shape

SHAPE = (2048, 12345)
METHODS = ("cuda_graph", "back_to_back_flushed")
BENCH_PEERS = {1: ["liger"], 2: ["inductor", "liger", "quack"]}  # pass -> bench_shape's peers (pass 3: none)


def gpu_clocks() -> str:
    """nvidia-smi's SM / memory clock (MHz), power (W) and temperature (C) now, or why not."""
    try:
        return subprocess.run(
            ["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as error:
        return f"nvidia-smi failed: {error}"


def time_closures(context: str, x: torch.Tensor, rows: list[dict], run_pass: int) -> None:
    """Liger and teaching (16 warps) on x, each under both methods, appended to rows."""
    liger = get_backend("liger")
    configs = {"liger": liger.prepare(x), "teaching w16": lambda: kernels.softmax(x, variant="teaching", num_warps=16)}
    for name, fn in configs.items():
        fn()
        for method in METHODS:
            stats = timing.benchmark(fn, method)
            rows.append(
                {
                    "pass": run_pass,
                    "context": context,
                    "config": name,
                    "method": method,
                    "median_us": stats.median_us,
                    "p20_us": stats.p20_us,
                    "p80_us": stats.p80_us,
                    "reps": stats.reps,
                }
            )
    facts = liger.evidence(x)
    print(f"  liger kernels: {[(k.name, k.n_regs, k.num_warps) for k in facts.kernels] or facts.note}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--peers-first",
        action="store_true",
        help="check every peer's availability (importing it) before any kernel compiles, as the bench "
        "does; prints the environment variables the imports set",
    )
    args = parser.parse_args()
    if args.peers_first:
        from blockscope.profiling.measure.backends import backend_names

        before = dict(os.environ)
        print({name: get_backend(name).available() for name in backend_names()})
        changed = {k: v for k, v in os.environ.items() if before.get(k) != v}
        print(f"environment set by the peers' imports: {changed or 'none'}")
    copy_gbps = timing.measure_copy_gbps()
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, copy {copy_gbps:.0f} GB/s")
    rows: list[dict] = []
    n_rows, n_cols = SHAPE
    for run_pass in (1, 2, 3):
        print(f"pass {run_pass}: clocks {gpu_clocks()}")
        torch.manual_seed(run_pass)
        x = torch.randn(n_rows, n_cols, device="cuda")
        time_closures("randn", x, rows, run_pass)
        time_closures("randn x3, new memory", x * 3, rows, run_pass)
        x.mul_(3)
        time_closures("randn x3, same memory", x, rows, run_pass)
        del x
        torch.cuda.empty_cache()
        peers = BENCH_PEERS.get(run_pass)
        if peers:
            context = f"bench_shape after fp16, bf16, peers {','.join(peers)}"
            for dtype in (torch.float16, torch.bfloat16, torch.float32):  # the bench's order: each dtype of the shape
                for method in METHODS:
                    row = bench_shape("offgrid", n_rows, n_cols, dtype, copy_gbps, method, peers=peers)
                    if dtype == torch.float32:
                        auto_label = f"auto ({row['auto_variant']} {row['auto_tunables']})"
                        for config, column in (("liger", "liger"), (auto_label, "auto")):
                            rows.append(
                                {
                                    "pass": run_pass,
                                    "context": context,
                                    "config": config,
                                    "method": method,
                                    "median_us": row[f"{column}_us"],
                                    "p20_us": row[f"{column}_p20_us"],
                                    "p80_us": row[f"{column}_p80_us"],
                                }
                            )
                    torch.cuda.empty_cache()
        print(f"  clocks after pass {run_pass}: {gpu_clocks()}")
    table = pd.DataFrame(rows)
    table["copy_gbps"] = copy_gbps
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    print(
        table.pivot_table(index=["context", "config"], columns=["method", "pass"], values="median_us", sort=False)
        .round(2)
        .to_string()
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
