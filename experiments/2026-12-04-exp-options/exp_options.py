"""fp32 softmax exp options (issue 37 item 3: "a correctly rounded exp2 split, or exp with an FMA-corrected
argument; measure both"): one standalone one-row-per-program kernel, three exps, each followed by its division:

  fast   tl.exp(x - m) (mul by log2 e + ex2.approx), num / sum (div.full): the kernels before issue 37
  exact  kernels/exactexp.py's exp_diff (TwoSum, Cody-Waite, degree-6 polynomial: ~25 ops, no MUFU) + normalize
         (one correctly rounded reciprocal per row, an FMA residual per element): what every fp32 kernel runs now
  fma    TwoSum for t = x - m and its error e; p = t log2(e) rounded, its exact residual by FMA, plus t log2(e)_lo
         and e log2(e): c; ex2.approx(p) corrected by one FMA, y (1 + c ln 2); + normalize (~12 ops and a MUFU)
  fma_scaled  the same with ex2.approx(p + 64) (the addition's error kept by TwoSum) times 2**-64: results below
         2**-126, which ex2.approx flushes to zero, round once instead (~18 ops and a MUFU)

On the GPU: ULP of each against the correctly rounded float64 softmax (profiling/inspect/numerics: seeded inputs
normal, scale10, scale30, dominant, near_uniform; 64 rows; N = 1000, 4096, 16384), torch.softmax alongside; and
time (`cuda_graph` and `back_to_back_flushed`, 4096 rows; N = 1024, 4096, 16384).

    python experiments/2026-12-04-exp-options/exp_options.py --out DIR      # from the repository root, on a GPU

Writes DIR/exp_options.csv (one row per mode x measurement)."""

from __future__ import annotations

import argparse
import csv
import functools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from blockscope.kernels import exactexp  # noqa: E402
from blockscope.profiling.inspect.numerics.inputs import make_input  # noqa: E402
from blockscope.profiling.inspect.numerics.ulp import round_to_dtype, ulp_distance  # noqa: E402
from blockscope.profiling.measure import timing  # noqa: E402

MODES = {"fast": 0, "exact": 1, "fma": 2, "fma_scaled": 3}
LOG2E = tl.constexpr(1.4426950408889634)
LOG2E_LO = tl.constexpr(1.92596298909109e-08)  # log2(e) - fp32(log2(e))
LN2 = tl.constexpr(0.6931471805599453)


@triton.jit
def exp_fma(x, m, SCALED: tl.constexpr):
    """exp(x - m) from ex2.approx with the argument's rounding errors folded back by FMAs. SCALED: ex2.approx of
    the argument + 64 (a normal result; its addition's error kept by TwoSum), times 2**-64 at the end, so results
    below 2**-126 round once instead of flushing to zero."""
    t = x - m
    z = t - x
    e = (x - (t - z)) + (-m - z)  # TwoSum: the exact error of t = fl(x - m)
    p = t * LOG2E
    c = tl.fma(t, LOG2E, -p)  # the product's rounding error, exact
    c = tl.fma(t, LOG2E_LO, c)  # log2(e)'s own rounding
    c = tl.fma(e, LOG2E, c)  # the subtraction's
    if SCALED:
        s = p + 64.0
        w = s - p
        c += (p - (s - w)) + (64.0 - w)  # TwoSum: the addition's error
        y = tl.exp2(s)
        y = tl.fma(y, c * LN2, y) * 5.421010862427522e-20  # 2**-64
    else:
        y = tl.exp2(p)
        y = tl.fma(y, c * LN2, y)  # 2**(p + c) = 2**p (1 + c ln 2), |c| << 1
    return tl.where(t < -105.0, 0.0, y)


@triton.jit
def softmax_rows(y_ptr, x_ptr, n_cols, BLOCK: tl.constexpr, MODE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))  # read x
    m = tl.max(x, axis=0)
    if MODE == 0:
        num = tl.exp(x - m)
        y = num / tl.sum(num, axis=0)
    elif MODE == 1:
        num = exactexp.exp_diff(x, m)
        y = exactexp.normalize(num, tl.sum(num, axis=0))
    else:
        num = exp_fma(x, m, MODE == 3)
        y = exactexp.normalize(num, tl.sum(num, axis=0))
    tl.store(y_ptr + row * n_cols + cols, y, mask=mask)  # write y


def run(x: torch.Tensor, mode: int) -> torch.Tensor:
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    block = triton.next_power_of_2(n_cols)
    softmax_rows[(n_rows,)](y, x, n_cols, BLOCK=block, MODE=mode, num_warps=min(16, max(4, block // 1024)))
    return y


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    rows = []
    for n_cols in (1000, 4096, 16384):
        for name in ("normal", "scale10", "scale30", "dominant", "near_uniform"):
            x = make_input(name, 64, n_cols, torch.float32, seed=1, device="cuda")
            reference = round_to_dtype(torch.softmax(x.double(), -1), torch.float32)
            outputs = {mode: run(x, code) for mode, code in MODES.items()}
            outputs["torch"] = torch.softmax(x, -1)
            for mode, y in outputs.items():
                ulp = ulp_distance(y, reference)
                row = {"measure": "ulp", "mode": mode, "input": name, "n_rows": 64, "n_cols": n_cols}
                row.update(max_ulp=float(ulp.max()), mean_ulp=round(float(ulp.mean()), 4))
                rows.append(row)
                print(row, flush=True)
    for n_cols in (1024, 4096, 16384):
        x = torch.randn(4096, n_cols, device="cuda")
        calls = {mode: functools.partial(run, x, code) for mode, code in MODES.items()}
        calls["torch"] = functools.partial(torch.softmax, x, -1)
        for mode, call in calls.items():
            row = {"measure": "time", "mode": mode, "input": "normal", "n_rows": 4096, "n_cols": n_cols}
            for method in ("cuda_graph", "back_to_back_flushed"):
                row[f"{method}_us"] = round(timing.benchmark(call, method, rel_ci=0.01).median_us, 3)
            rows.append(row)
            print(row, flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    fields = ["measure", "mode", "input", "n_rows", "n_cols", "max_ulp", "mean_ulp"]
    fields += ["cuda_graph_us", "back_to_back_flushed_us"]
    with (args.out / "exp_options.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fields)
        writer.writeheader()
        writer.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
