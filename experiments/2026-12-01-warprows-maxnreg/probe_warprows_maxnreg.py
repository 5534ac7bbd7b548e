"""Does capping warprows' registers (Triton's `maxnreg` launch option) fit more programs per SM and close the gap to
Quack at 5000x1536? GPU time of the kernel at its default launch and at maxnreg caps, one run.

PYTHONPATH=. python3 experiments/2026-12-01-warprows-maxnreg/probe_warprows_maxnreg.py --out probe.csv \
    [--shapes fp16:5000:1536,...] [--caps 32,40,48,56]

Per shape: `warprows` through kernels.softmax (its default plan), then the same plan launched directly with
maxnreg=cap; each checked against torch.softmax in float64 (max abs error) and timed with CUDA-graph replay and
L2-flushed back-to-back launches (profiling.timing, median). Registers, spills and the driver's blocks per SM of
each compiled kernel are printed beside the times.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from blockscope import kernels
from blockscope.kernels import warprows
from blockscope.kernels._common import driver_blocks_per_sm
from blockscope.profiling.measure import timing
from tools.probe_kernels import timed_rows, write_table


def launcher(x: torch.Tensor, out: torch.Tensor, plan, cap: int | None):
    """The timed call: kernels.softmax's warprows (cap None) or the plan launched with maxnreg=cap into `out`."""
    if cap is None:
        return lambda: kernels.softmax(x, "warprows")

    def launch() -> torch.Tensor:
        warprows.row_softmax_warprows_kernel[plan.grid](
            out,
            x,
            x.stride(0),
            out.stride(0),
            x.shape[0],
            x.shape[1],
            num_warps=plan.num_warps,
            maxnreg=cap,
            **plan.constexprs,
        )
        return out

    return launch


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--shapes", default="fp16:5000:1536,bf16:5000:1536,fp16:3000:5000,fp16:4096:1000")
    parser.add_argument("--caps", default="32,40,48,56")
    args = parser.parse_args()
    copy_gbps = timing.measure_copy_gbps()
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, copy {copy_gbps:.0f} GB/s")
    rows = []
    for part in args.shapes.split(","):
        dtype_name, n_rows, n_cols = part.split(":")
        n_rows, n_cols, dtype = int(n_rows), int(n_cols), kernels.dtype_from_name(dtype_name)
        x = torch.randn(n_rows, n_cols, device="cuda", dtype=dtype) * 3
        expected = torch.softmax(x.double(), -1)
        plan = warprows.plan(n_rows, n_cols, dtype)
        out = torch.empty_like(x)
        configs = [("default", None)] + [(f"maxnreg={cap}", int(cap)) for cap in args.caps.split(",")]
        for label, cap in configs:
            fn = launcher(x, out, plan, cap)
            record = {
                "dtype": dtype_name,
                "n_rows": n_rows,
                "n_cols": n_cols,
                "config": label,
                "tunables": str(plan.tunables),
            }
            try:
                record["max_abs_error"] = (fn().double() - expected).abs().max().item()
                options = {} if cap is None else {"maxnreg": cap}
                compiled = warprows.row_softmax_warprows_kernel.warmup(
                    out,
                    x,
                    x.stride(0),
                    out.stride(0),
                    n_rows,
                    n_cols,
                    grid=plan.grid,
                    num_warps=plan.num_warps,
                    **options,
                    **plan.constexprs,
                )
                compiled._init_handles()
                record.update(
                    n_regs=compiled.n_regs,
                    n_spills=compiled.n_spills,
                    blocks_per_sm=driver_blocks_per_sm(compiled.function, plan.num_warps, compiled.metadata.shared),
                )
                rows += timed_rows(fn, x, record, copy_gbps)
            except Exception as exc:  # noqa: BLE001 - a failing config is a row, not the end of the probe
                rows.append({**record, "error": f"{type(exc).__name__}: {exc}"[:300]})
    table = write_table(rows, copy_gbps, args.out)
    print(table.drop(columns=["copy_gbps"]).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
