"""Rows whose start is not 16-byte aligned (N % 8 != 0 in 16 bits, N % 4 != 0 in fp32; issue 37 item 1): a probe
kernel that loads and stores each row's whole 16-byte vectors and its two partial end vectors element by element
(the ends interleaved so Triton gives each thread one element), one row per program, BLOCK = next_pow2(N), against
auto, teaching (window 0 and 1) and torch (CUDA).

    python3 experiments/2026-12-04-odd-rows/probe_vec_rows.py --out FILE.csv

% of copy: 2 x R x N x itemsize at the copy bandwidth measured in the run. fp32 rows use tl.exp here (teaching and
auto use kernels/exactexp.py's exact exp in fp32, so fp32 is compared with teaching fast_exp=1 too).
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import triton
import triton.language as tl

ROOT = Path(__file__).resolve().parents[2]
SHAPES = [(4096, n) for n in (2047, 2049, 4095, 4097, 8191, 8193, 16383, 16385)] + [(1024, 50257), (2048, 32003)]
DTYPES = ("float16", "bfloat16", "float32")


@triton.jit
def vec_rows_kernel(out_ptr, in_ptr, stride, n_cols, BLOCK: tl.constexpr, VEC: tl.constexpr):
    # read N + write N elements per row: whole vectors, the two partial end vectors element by element
    start = tl.program_id(axis=0).to(tl.int64) * stride
    base = start // VEC * VEC
    head = (start - base).to(tl.int32)
    n = head + n_cols
    body_lo = (head + VEC - 1) // VEC * VEC
    body_hi = n // VEC * VEC
    lanes = tl.arange(0, BLOCK)
    body = (lanes >= body_lo) & (lanes < body_hi)
    j = tl.arange(0, 2 * VEC)
    at_tail = (j % 2) == 1
    ends = j // 2 + tl.where(at_tail, body_hi, 0)
    ends_ok = (ends >= head) & (ends < n) & tl.where(at_tail, ends >= body_lo, ends < body_lo)
    x = tl.load(in_ptr + base + lanes, mask=body, other=-float("inf")).to(tl.float32)
    x_ends = tl.load(in_ptr + base + ends, mask=ends_ok, other=-float("inf")).to(tl.float32)
    row_max = tl.maximum(tl.max(x), tl.max(x_ends))
    e = tl.exp(x - row_max)
    e_ends = tl.exp(x_ends - row_max)
    scale = 1.0 / (tl.sum(e) + tl.sum(e_ends))
    tl.store(out_ptr + base + lanes, e * scale, mask=body)
    tl.store(out_ptr + base + ends, e_ends * scale, mask=ends_ok)


def vec_rows(x, num_warps):
    import torch

    out = torch.empty_like(x)
    n = x.shape[1]
    vec = 16 // x.element_size()
    vec_rows_kernel[(x.shape[0],)](out, x, x.stride(0), n, BLOCK=triton.next_power_of_2(n), VEC=vec,
                                   num_warps=num_warps)  # fmt: skip
    return out


def configs_for(x) -> dict:
    """label -> callable of x: auto, torch, teaching (window 0, 1; fp32 also fast_exp=1), the probe at 4/8/16 warps."""
    import torch

    from blockscope import kernels

    configs = {"auto": lambda: kernels.softmax(x, variant="auto"), "torch": lambda: torch.softmax(x, -1)}
    if x.shape[1] <= 65536 - 7:
        configs["teaching"] = lambda: kernels.softmax(x, variant="teaching")
        configs["teaching[window=1]"] = lambda: kernels.softmax(x, variant="teaching", window=1)
        if x.dtype == torch.float32:
            configs["teaching[fast_exp=1]"] = lambda: kernels.softmax(x, variant="teaching", fast_exp=1)
    for warps in (4, 8, 16):
        configs[f"vec_rows[num_warps={warps}]"] = lambda w=warps: vec_rows(x, w)
    return configs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    import torch

    from blockscope.profiling.measure import timing

    copy_gbps = timing.measure_copy_gbps(bytes=1 << 30, reps=20)
    print(f"{torch.cuda.get_device_name()}, copy {copy_gbps:.0f} GB/s", flush=True)
    rows = []
    for dtype_name in DTYPES:
        dtype = getattr(torch, dtype_name)
        for n_rows, n_cols in SHAPES:
            x = torch.randn(n_rows, n_cols, device="cuda").to(dtype) * 3
            want = torch.softmax(x.double(), -1)
            configs = configs_for(x)
            ideal_us = 2 * x.numel() * x.element_size() / (copy_gbps * 1e3)
            for label, fn in configs.items():
                err = float((fn().double() - want).abs().max())
                for method in ("cuda_graph", "back_to_back_flushed"):
                    stats = timing.benchmark(fn, method, warmup=5, warmup_ms=10.0, rel_ci=0.02, min_reps=10,
                                             max_reps=200, budget_ms=30.0)  # fmt: skip
                    row = {"dtype": dtype_name, "n_rows": n_rows, "n_cols": n_cols, "config": label, "method": method,
                           "median_us": round(stats.median_us, 2), "p20_us": round(stats.p20_us, 2),
                           "p80_us": round(stats.p80_us, 2), "reps": stats.reps,
                           "pct_of_copy": round(100 * ideal_us / stats.median_us, 1), "max_abs_err": err}  # fmt: skip
                    rows.append(row)
                    print(row, flush=True)
            del x, want
    with open(args.out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return 0


if __name__ == "__main__":
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
