"""What the 16-bit exp of `warprows` / `stagedrows` (ex2.approx.ftz of one FMA, docs/kernel-changes.md section 13)
does to ULP error, emulated on the CPU on the numerics capture's inputs (no GPU: an emulation of the arithmetic,
not the kernel; MUFU.EX2's own ~2 fp32-ULP error is left out, far below a 16-bit ULP). Three forms: `before`
(gl.exp of x - max, subnormal results kept), `ftz` (ex2.ftz of x * log2e - max * log2e: results below 2**-126
flushed; the fp16 kernels), `scaled` (the same on 2**64 x exp, flushed only below 2**-190; the bf16 kernels).

PYTHONPATH=. python3 experiments/2026-12-02-ftz-exp-emulation/ftz_exp_emulation.py --out FILE.csv

Per dtype x input distribution x N (R=64 rows, seed 0, profiling.numerics inputs), each form normalized by one fp32
reciprocal of the fp32 sum (a subnormal fp32 product kept), rounded to the dtype and compared with the float64
reference (profiling.numerics.summarize). Printed and written: ULP max / mean per form and the fraction of outputs
that differ from `before`.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import pandas as pd
import torch

from blockscope.profiling.inspect import numerics

LOG2E = 1.4426950408889634
SMALLEST_NORMAL = 2.0**-126
SHIFTS = {"ftz": 0.0, "scaled": 64.0}  # kernels/warprows.py: EXP=2 (fp16) and EXP=1 (bf16, SUBNORMAL_SHIFT)
INPUTS = ("normal", "scale10", "scale30", "dominant", "near_uniform")


def emulated_softmax(x: torch.Tensor, form: str) -> torch.Tensor:
    """Row softmax of a 16-bit `x` as the kernels compute it in fp32, in form 'before', 'ftz' or 'scaled'."""
    values = x.float()
    row_max = values.amax(dim=-1, keepdim=True)
    if form in SHIFTS:
        log2e = torch.tensor(LOG2E, dtype=torch.float32)
        offset = (row_max * log2e - SHIFTS[form]).double()  # one fp32 value per row
        shifted = (values.double() * log2e.double() - offset).float()  # one rounding: an FMA
        numerators = torch.exp2(shifted)
        numerators = torch.where(numerators < SMALLEST_NORMAL, torch.zeros_like(numerators), numerators)
    else:
        numerators = torch.exp(values - row_max)
    inverse = 1.0 / numerators.sum(dim=-1, keepdim=True)
    return (numerators * inverse).to(x.dtype)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--n", default="1000,1536,4096,16384", help="comma list of N")
    args = parser.parse_args()
    rows = []
    for dtype in ("fp16", "bf16"):
        for input_name in INPUTS:
            for n_cols in (int(n) for n in args.n.split(",")):
                prepared = numerics.prepare_input(input_name, dtype, 64, n_cols)
                outputs = {form: emulated_softmax(prepared.x, form) for form in ("before", "ftz", "scaled")}
                row = {"dtype": dtype, "input": input_name, "n_cols": n_cols}
                for form, output in outputs.items():
                    summary = numerics.summarize(output, prepared.reference, prepared.x)
                    row[f"ulp_max_{form}"], row[f"ulp_mean_{form}"] = summary.ulp_max, summary.ulp_mean
                    if form != "before":
                        row[f"changed_{form}"] = float((output != outputs["before"]).float().mean())
                rows.append(row)
    table = pd.DataFrame(rows)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}" if math.isfinite(v) else str(v)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
