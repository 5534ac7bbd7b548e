"""Nsight Compute on the kernels behind issue 13's remaining gaps: staged rows over a cluster against one program per
row, the register-held cluster variant, and the small-N kernels Quack still beats (run on the GPU machine).

python3 -m tools.ncu_cluster --out ncu_cluster_h200.csv
python3 -m tools.ncu_cluster --set smalln --cache-control none --out ncu_smalln_h200.csv   (Quack beside ours;
    needs the peers of tools/peer_wheels.sh)
python3 -m tools.ncu_cluster --set liger --out ncu_liger_h200.csv   (Liger's kernel beside auto's picks where
    Liger leads; liger-kernel from `tools/peer_wheels.sh stage`)

Runs itself under `ncu --clock-control none` (sections SpeedOfLight, Occupancy, LaunchStats, WarpStateStats; kernels
named row_softmax*, *Softmax* or *_softmax_*: ours, Quack's and Liger's), one launch per config (the first call,
after which the kernel is compiled; a cluster's programs are co-scheduled, so kernel replay is sound), and writes
ncu's CSV (one row per kernel x metric) with the config of each kernel, in launch order. `--cache-control none`
leaves L2 as the previous pass left it (each config is replayed once per section pass, so later passes find its
input in L2, close to CUDA-graph replay of an L2-sized input); the default `all` flushes before every pass
(DRAM-bound, as the flushed timing).
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import subprocess
import sys
from pathlib import Path

CONFIGS = [  # (label, variant, dtype, R, N, tunables)
    ("staged one program", "staged", "fp16", 4096, 65536, {"cluster": 1}),
    ("staged cluster 2", "staged", "fp16", 4096, 65536, {"cluster": 2}),
    ("staged cluster 8", "staged", "fp16", 1024, 262144, {"cluster": 8}),
    ("staged cluster 10", "staged", "fp16", 300, 300000, {}),
    ("staged one program", "staged", "fp16", 4096, 32768, {}),
    ("cluster registers", "cluster", "fp16", 4096, 32768, {}),
    ("cluster registers", "cluster", "fp32", 4096, 32768, {"chunk": 16384, "num_warps": 16}),
    ("teaching", "teaching", "fp16", 5000, 1536, {"num_warps": 4}),
    ("warprows", "warprows", "fp16", 5000, 1536, {}),
    ("teaching", "teaching", "fp16", 3000, 5000, {"num_warps": 4}),
]
SMALLN_CONFIGS = [  # mid N, where Quack leads under CUDA-graph replay (experiments/2026-12-02-stagedrows)
    ("quack", "quack", "fp16", 5000, 1536, {}),
    ("warprows", "warprows", "fp16", 5000, 1536, {}),
    ("stagedrows", "stagedrows", "fp16", 5000, 1536, {}),
    ("teaching", "teaching", "fp16", 5000, 1536, {"num_warps": 2}),
    ("quack", "quack", "fp16", 3000, 5000, {}),
    ("warprows", "warprows", "fp16", 3000, 5000, {"threads_per_row": 64, "num_warps": 8}),
    ("stagedrows", "stagedrows", "fp16", 3000, 5000, {"threads_per_row": 128, "num_warps": 4}),
    ("teaching", "teaching", "fp16", 3000, 5000, {"num_warps": 4}),
]
LIGER_CONFIGS = [  # the bench shapes (2026-12-03) where Liger's one program per row is 0.5-2.2% ahead of auto's pick
    ("liger", "liger", "fp32", 2048, 12345, {}),
    ("auto pick", "teaching", "fp32", 2048, 12345, {"num_warps": 16}),
    ("liger", "liger", "fp32", 5000, 1536, {}),
    ("auto pick", "stagedrows", "fp32", 5000, 1536, {"threads_per_row": 32, "num_warps": 4}),
    ("liger", "liger", "fp32", 4096, 1000, {}),
    ("auto pick", "multirow", "fp32", 4096, 1000, {"rows_per_program": 1, "num_warps": 2}),
    ("liger", "liger", "fp32", 16384, 8192, {}),
    ("auto pick", "stagedrows", "fp32", 16384, 8192, {"threads_per_row": 64, "num_warps": 4}),
]
CONFIG_SETS = {"cluster": CONFIGS, "smalln": SMALLN_CONFIGS, "liger": LIGER_CONFIGS}
SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats", "WarpStateStats")
SMALLN_SECTIONS = (*SECTIONS, "MemoryWorkloadAnalysis", "SchedulerStats")


def launch_all(configs: list) -> None:
    import torch

    from blockscope import kernels
    from blockscope.profiling.measure.backends import get_backend

    for _, variant, dtype, n_rows, n_cols, tunables in configs:
        x = torch.randn(n_rows, n_cols, device="cuda", dtype=kernels.dtype_from_name(dtype))
        if variant in ("quack", "liger"):
            get_backend(variant).prepare(x)()  # one launch: prepare compiles without launching the kernel
        else:
            kernels.softmax(x, variant=variant, **tunables)
        torch.cuda.synchronize()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--launch", action="store_true", help="(internal) run as ncu's target")
    parser.add_argument("--ncu", default="ncu")
    parser.add_argument("--set", choices=sorted(CONFIG_SETS), default="cluster", help="which configs (default cluster)")
    parser.add_argument(
        "--cache-control",
        choices=("all", "none"),
        default="all",
        help="ncu's: flush caches before each pass (all) or not (none)",
    )
    args = parser.parse_args()
    configs = CONFIG_SETS[args.set]
    if args.launch:
        launch_all(configs)
        return 0
    if args.out is None:
        parser.error("--out is required")
    sections = SMALLN_SECTIONS if args.set == "smalln" else SECTIONS
    command = [
        args.ncu,
        "--clock-control",
        "none",
        "--cache-control",
        args.cache_control,
        "--target-processes",
        "all",
        "--kernel-name",
        "regex:row_softmax|Softmax|_softmax_",
        *[part for section in sections for part in ("--section", section)],
        "--csv",
        "--page",
        "details",
        sys.executable,
        __file__,
        "--launch",
        "--set",
        args.set,
    ]
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    lines = [line for line in done.stdout.splitlines() if line.startswith('"')]
    if done.returncode != 0 or not lines:
        print(done.stdout[-3000:], done.stderr[-3000:], sep="\n")
        return 1
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    ids = sorted({int(row["ID"]) for row in rows})
    if len(ids) != len(configs):
        print(f"ncu profiled {len(ids)} kernels for {len(configs)} configs: {sorted({r['Kernel Name'] for r in rows})}")
        return 1
    labels = {kernel_id: configs[index] for index, kernel_id in enumerate(ids)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            [
                "label",
                "variant",
                "dtype",
                "n_rows",
                "n_cols",
                "tunables",
                "kernel",
                "section",
                "metric",
                "unit",
                "value",
            ]
        )
        for row in rows:
            label, variant, dtype, n_rows, n_cols, tunables = labels[int(row["ID"])]
            writer.writerow(
                [
                    label,
                    variant,
                    dtype,
                    n_rows,
                    n_cols,
                    tunables,
                    row["Kernel Name"],
                    row["Section Name"],
                    row["Metric Name"],
                    row["Metric Unit"],
                    row["Metric Value"],
                ]
            )
    wanted = (
        "Duration",
        "DRAM Throughput",
        "Achieved Occupancy",
        "Theoretical Occupancy",
        "Registers Per Thread",
        "Block Size",
        "Grid Size",
        "Dynamic Shared Memory Per Block",
        "Cluster Size",
        "Warp Cycles Per Issued Instruction",
    )
    for kernel_id in ids:
        label, variant, dtype, n_rows, n_cols, tunables = labels[kernel_id]
        facts = {row["Metric Name"]: row["Metric Value"] for row in rows if int(row["ID"]) == kernel_id}
        print(
            f"{label}: {variant} {dtype} {n_rows}x{n_cols} {tunables}: "
            + ", ".join(f"{name} {facts[name]}" for name in wanted if name in facts)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
