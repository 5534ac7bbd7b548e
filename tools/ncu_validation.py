"""Nsight Compute's view of occupancy for >= 20 configs (run on the GPU machine; writes a CSV).

python3 -m tools.ncu_validation --out data/ncu_validation.csv

Runs itself under `ncu --clock-control none` with `--launch` (each config launched once after its compile),
profiling only kernels named row_softmax*, then joins ncu's rows (in launch order) with the configs and
the live compile facts (registers, shared memory) recorded by the launching process.
The split-row variant is left out: its programs wait for each other, which kernel replay does not promise.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

METRICS = (
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps",
    "launch__occupancy_limit_blocks",
    "sm__maximum_warps_per_active_cycle_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__time_duration.sum",
    "launch__registers_per_thread",
    "launch__block_size",
    "launch__grid_size",
    "launch__shared_mem_per_block_dynamic",
)
N_ROWS = 4096
# (variant, dtype, n_cols, tunables): blocks-, warps-, register- and shared-memory-limited cases
CONFIGS: tuple[tuple[str, str, int, dict], ...] = (
    ("teaching", "fp16", 128, {"num_warps": 1}),
    ("teaching", "fp16", 1000, {"num_warps": 1}),
    ("teaching", "fp16", 1000, {"num_warps": 4}),
    ("teaching", "fp32", 1024, {"num_warps": 2}),
    ("teaching", "fp16", 4096, {"num_warps": 8}),
    ("teaching", "fp32", 8192, {"num_warps": 4}),
    ("teaching", "fp16", 16384, {"num_warps": 4}),
    ("teaching", "fp32", 16384, {"num_warps": 8}),
    ("teaching", "fp16", 32768, {"num_warps": 16}),
    ("teaching", "fp32", 65536, {"num_warps": 32}),
    ("multirow", "fp16", 128, {"rows_per_program": 1, "num_warps": 1}),
    ("multirow", "fp16", 128, {"rows_per_program": 16, "num_warps": 4}),
    ("multirow", "bf16", 256, {"rows_per_program": 32, "num_warps": 8}),
    ("multirow", "fp32", 1024, {"rows_per_program": 8, "num_warps": 8}),
    ("multirow", "fp32", 2048, {"rows_per_program": 8, "num_warps": 4}),
    ("online", "fp16", 65536, {"tile": 4096, "num_warps": 8}),
    ("online", "fp32", 131072, {"tile": 8192, "num_warps": 16, "num_stages": 1}),
    ("online", "fp32", 32768, {"tile": 8192, "num_warps": 8, "num_stages": 3}),
    ("online", "fp32", 65536, {"tile": 16384, "num_warps": 8, "num_stages": 4}),
    ("online", "fp16", 8192, {"tile": 1024, "num_warps": 2, "num_stages": 2}),
    ("persistent", "fp16", 1024, {"num_warps": 4}),
    ("persistent", "fp32", 4096, {"num_warps": 8, "num_stages": 2}),
    ("persistent", "fp32", 8192, {"num_warps": 8, "num_stages": 3}),
    ("persistent", "fp32", 16384, {"num_warps": 16, "num_stages": 3}),
    ("persistent", "fp16", 32768, {"num_warps": 16, "num_stages": 4}),
    ("persistent", "bf16", 2048, {"num_warps": 2, "num_stages": 4}),
    ("auto", "fp16", 8192, {}),
)


def launch(record_path: Path) -> None:
    """Target process: launch each config once (compiled first, so only the real launch is profiled)."""
    import torch

    from blockscope import kernels

    records = []
    for variant, dtype_name, n_cols, tunables in CONFIGS:
        dtype = kernels.dtype_from_name(dtype_name)
        x = torch.randn(N_ROWS, n_cols, device="cuda", dtype=dtype)
        record = {
            "variant": variant,
            "dtype": dtype_name,
            "n_rows": N_ROWS,
            "n_cols": n_cols,
            "tunables": json.dumps(tunables, sort_keys=True),
            "error": "",
        }
        try:
            if variant == "auto":
                variant_run, tunables = kernels.auto.choose(N_ROWS, n_cols, dtype, torch.cuda.get_device_name())
                record["runs_as"] = f"{variant_run} {json.dumps(tunables, sort_keys=True)}"
                variant = variant_run
            plan = kernels.get_variant(variant).plan(N_ROWS, n_cols, dtype, **tunables)
            args = _kernel_args(variant, x, plan)
            compiled = kernels.get_variant(variant).kernel.warmup(
                *args, grid=(1,), num_warps=plan.num_warps, num_stages=plan.num_stages, **plan.constexprs
            )
            compiled._init_handles()
            record.update(
                num_warps=plan.num_warps,
                num_stages=plan.num_stages,
                n_regs=compiled.n_regs,
                n_spills=compiled.n_spills,
                shared_bytes=compiled.metadata.shared,
            )
            torch.cuda.synchronize()
            kernels.softmax(x, variant, **tunables)  # the profiled launch
            torch.cuda.synchronize()
        except Exception as error:  # recorded; the other configs still run
            record["error"] = f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"
        records.append(record)
    record_path.write_text(json.dumps(records))


def _kernel_args(variant: str, x, plan) -> tuple:
    import torch

    out = torch.empty_like(x)
    n_rows, n_cols = x.shape
    if variant == "teaching":
        return (out, x, n_cols, n_cols)
    if variant in ("multirow", "persistent"):
        return (out, x, n_cols, n_cols, n_rows, n_cols)
    if variant == "online":
        return (out, x, n_cols, n_cols, n_cols)
    raise ValueError(f"no ncu launch recipe for {variant}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--launch", metavar="RECORDS_JSON", help="(internal) run as ncu's target")
    parser.add_argument("--ncu", default="ncu")
    args = parser.parse_args()
    if args.launch:
        launch(Path(args.launch))
        return
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    records_path = out.with_suffix(".records.json")
    log_path = out.with_suffix(".ncu.csv")
    command = [
        args.ncu,
        "--clock-control",
        "none",
        "--target-processes",
        "all",
        "--kernel-name",
        "regex:row_softmax",
        "--metrics",
        ",".join(METRICS),
        "--csv",
        "--page",
        "raw",
        "--log-file",
        str(log_path),
        sys.executable,
        __file__,
        "--out",
        str(out),
        "--launch",
        str(records_path),
    ]
    print(" ".join(command), flush=True)
    subprocess.run(command, check=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    records = [r for r in json.loads(records_path.read_text())]
    text = log_path.read_text()
    rows = list(csv.DictReader(io.StringIO(text[text.index('"ID"') :])))
    rows = [r for r in rows if r.get("ID", "").isdigit()]  # drop the units row
    launched = [r for r in records if not r["error"]]
    if len(rows) != len(launched):
        print(f"warning: {len(rows)} profiled kernels for {len(launched)} launched configs", flush=True)
    for record, row in zip(launched, rows, strict=False):
        record["kernel_name"] = row.get("Kernel Name", "")
        for metric in METRICS:
            record[metric] = row.get(metric, "")
    fields = sorted({k for r in records for k in r}, key=lambda k: (k not in ("variant", "dtype", "n_cols"), k))
    with open(out, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(records)
    print(f"wrote {out}: {len(launched)} configs profiled, {len(records) - len(launched)} failed", flush=True)


if __name__ == "__main__":
    main()
