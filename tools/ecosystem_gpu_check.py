"""GPU check of issue 38's pieces on one GPU (< 5 minutes): machine record, sweep --proton, shards, ncu import.

PYTHONPATH=/path/to/nvidia_ml_py-13.615.71-py3-none-any.whl python3 -m tools.ecosystem_gpu_check --out-dir DIR

(the PYTHONPATH wheel is only needed where nvidia-ml-py is not installed: a py3-none-any wheel imports as a zip).
Writes into DIR: machine.csv (profiling.measure.machine.machine_record + warnings), sweep.parquet (a small
sweep with --proton), proton_tree.csv (its .hatchet as profiling.views.hatchet reads it), shards.md (sweep
--shard 0/2 and 1/2 merged vs the unsharded config set), and where `ncu` is on PATH: ncu_details.csv and
ncu_raw.csv (ncu's own output for 4 launches) with ncu_details_import.csv / ncu_raw_import.csv (ncu-import
matched to sweep.parquet's configs). summary.md says what each step found. Each step runs even if another fails.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path

SWEEP = ["--variants", "teaching,online,torch", "--dtypes", "fp16", "--n", "1000,8192", "--rows", "4096"]
SWEEP += ["--num-warps", "4", "--methods", "back_to_back_flushed", "--no-trace", "--compile-workers", "0"]
LAUNCH = """
import torch
from blockscope import kernels
for n, w in ((1000, 4), (8192, 4)):
    x = torch.randn(4096, n, device="cuda", dtype=torch.float16)
    kernels.softmax(x, "teaching", num_warps=w)
    torch.cuda.synchronize()
print("done")
"""


def step(summary: list[str], name: str, fn) -> None:
    tic = time.perf_counter()
    try:
        lines = fn() or []
        summary.append(f"## {name}: ok ({time.perf_counter() - tic:.1f} s)")
        summary.extend(f"- {line}" for line in lines)
    except Exception as error:  # a failing step is reported; the others still run
        summary.append(
            f"## {name}: FAILED ({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''})"
        )
        summary.append("```\n" + traceback.format_exc()[-3000:] + "\n```")


def machine_step(out: Path) -> list[str]:
    import pandas as pd

    from blockscope.profiling.measure import machine

    record = machine.machine_record(uuid=machine.torch_device_uuid())
    pd.DataFrame([record]).to_csv(out / "machine.csv", index=False)
    return [f"{k} = {v}" for k, v in record.items()] + [f"warning: {w}" for w in machine.warnings(record)]


def cli(argv: list[str]) -> int:
    from blockscope.profiling.cli.main import main

    return main(argv, "blockscope")


def sweep_step(out: Path) -> list[str]:
    from blockscope.profiling.results import load_results
    from blockscope.profiling.views.hatchet import hatchet_table

    status = cli(["sweep", *SWEEP, "--proton", "--out", str(out / "sweep.parquet")])
    table = load_results(out / "sweep.parquet")
    trees = sorted((out / "sweep_proton").glob("*.hatchet"))
    lines = [f"sweep exit {status}, {len(table)} rows, gpu_uuid {sorted(table['gpu_uuid'].dropna().unique())}"]
    lines.append(f"clocks_locked {sorted(table['clocks_locked'].dropna().unique())}, nvml_status "
                 f"{sorted(table['nvml_status'].dropna().unique())}")  # fmt: skip
    if trees:
        tree = hatchet_table(trees[0])
        tree.to_csv(out / "proton_tree.csv", index=False)
        lines.append(f"{trees[0].name}: {len(tree)} nodes, kernels: {sorted(tree[tree['depth'] == 2]['name'])}")
    else:
        lines.append("no .hatchet written")
    return lines


def shard_step(out: Path) -> list[str]:
    from blockscope.profiling.measure.shard import merge_parts
    from blockscope.profiling.results import load_results

    parts = []
    for i in range(2):
        part = out / f"shard{i}.parquet"
        cli(["sweep", *SWEEP, "--shard", f"{i}/2", "--out", str(part)])
        parts.append(part)
    merged = merge_parts(parts)
    whole = load_results(out / "sweep.parquet")
    key = ["variant", "dtype", "n_rows", "n_cols", "tunables", "method"]
    same = sorted(map(tuple, merged[key].astype(str).values)) == sorted(map(tuple, whole[key].astype(str).values))
    text = f"merged {len(merged)} rows from 2 shards; same (config, method) set as the unsharded sweep: {same}"
    (out / "shards.md").write_text(text + "\n")
    return [text]


def ncu_step(out: Path) -> list[str]:
    ncu = shutil.which("ncu")
    if ncu is None:
        return ["ncu not on PATH: skipped"]
    lines = []
    for page in ("details", "raw"):
        command = [ncu, "--csv", "--kernel-name", "regex:row_softmax", "--launch-count", "4"]
        command += ["--section", "LaunchStats", "--section", "Occupancy", "--section", "SpeedOfLight"]
        command += ["--page", "raw"] if page == "raw" else []
        command += [sys.executable, "-c", LAUNCH]
        done = subprocess.run(command, capture_output=True, timeout=150, check=False)
        (out / f"ncu_{page}.csv").write_bytes(done.stdout)
        status = cli(
            ["ncu-import", str(out / f"ncu_{page}.csv"), "--out", str(out / f"ncu_{page}_import.csv"),
             "--configs", str(out / "sweep.parquet")]
        )  # fmt: skip
        lines.append(f"ncu --page {page}: exit {done.returncode}; ncu-import exit {status}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out-dir", required=True)
    args = parser.parse_args()
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = ["# Issue 38 GPU check", f"python {sys.version.split()[0]}"]
    step(summary, "machine record", lambda: machine_step(out))
    step(summary, "sweep --proton", lambda: sweep_step(out))
    step(summary, "shards", lambda: shard_step(out))
    step(summary, "ncu import", lambda: ncu_step(out))
    (out / "summary.md").write_text("\n".join(summary) + "\n")
    print("\n".join(summary))


if __name__ == "__main__":
    main()
