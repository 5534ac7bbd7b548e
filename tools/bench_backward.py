"""Softmax backward on a GPU: the Triton backward vs torch's, alone and as forward + backward through autograd.

python3 -m tools.bench_backward --out experiments/2026-12-01-bench-backward [--variant auto] [--shapes 4096x1024 ...]

Per shape and dtype (fp16, bf16, fp32), median us per call under two methods of profiling.timing.benchmark:
cuda_graph (10 calls captured, replayed) and back_to_back_flushed (L2 flushed before each call). Ops:
  bwd      kernels.softmax_backward(y, dy) vs torch._softmax_backward_data (the kernel torch's autograd runs);
           3 x R x N elements moved (read y, dy; write dx)
  fwd+bwd  torch.autograd.grad of kernels.softmax(x, variant=--variant) vs of torch.softmax; 5 x R x N moved
Each shape is checked against torch before it is timed. Prints a markdown table; writes one CSV row per timing.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import torch

from blockscope import kernels
from blockscope.kernels import backward
from blockscope.profiling.measure import timing

SHAPES = [
    (4096, 128),
    (4096, 512),
    (4096, 1024),
    (4096, 4096),
    (4096, 8192),
    (2048, 16384),
    (1024, 32768),
    (512, 65536),
    (128, 262144),
]
DTYPES = (torch.float16, torch.bfloat16, torch.float32)
METHODS = ("cuda_graph", "back_to_back_flushed")
FIELDS = ["n_rows", "n_cols", "dtype", "method", "op", "impl", "path", "median_us", "p20_us", "p80_us", "gbps"]


def parse_shape(text: str) -> tuple[int, int]:
    """'4096x1024' -> (4096, 1024)."""
    rows, sep, cols = text.lower().partition("x")
    if not sep or not rows.isdigit() or not cols.isdigit():
        raise argparse.ArgumentTypeError(f"bad shape {text!r}; allowed: RxN, e.g. 4096x1024")
    return int(rows), int(cols)


def check(n_rows: int, n_cols: int, dtype: torch.dtype, variant: str) -> None:
    """Triton dx (backward alone and through autograd) within 1% of max|dx| of torch's, or SystemExit."""
    x = torch.randn(n_rows, n_cols, device="cuda", dtype=dtype) * 3
    dy = torch.randn_like(x)
    y = torch.softmax(x, -1)
    want = torch._softmax_backward_data(dy, y, -1, dtype).float()
    leaf = x.clone().requires_grad_()
    (through_autograd,) = torch.autograd.grad(kernels.softmax(leaf, variant=variant), leaf, dy)
    for label, got in (("bwd", kernels.softmax_backward(y, dy)), ("fwd+bwd", through_autograd)):
        error = (got.float() - want).abs().max().item() / max(want.abs().max().item(), 1e-30)
        if not error <= 1e-2:
            raise SystemExit(f"{label} R={n_rows} N={n_cols} {dtype}: max error {error:.3g} of max|dx|; not timed")


def time_shape(n_rows: int, n_cols: int, dtype: torch.dtype, method: str, variant: str) -> list[dict]:
    x = torch.randn(n_rows, n_cols, device="cuda", dtype=dtype) * 3
    dy = torch.randn_like(x)
    y = torch.softmax(x, -1)
    leaf = x.clone().requires_grad_()
    calls = {
        ("bwd", "triton"): lambda: kernels.softmax_backward(y, dy),
        ("bwd", "torch"): lambda: torch._softmax_backward_data(dy, y, -1, dtype),
        ("fwd+bwd", "triton"): lambda: torch.autograd.grad(kernels.softmax(leaf, variant=variant), leaf, dy),
        ("fwd+bwd", "torch"): lambda: torch.autograd.grad(torch.softmax(leaf, -1), leaf, dy),
    }
    path = backward.choose_backward(n_rows, n_cols, dtype)[0]
    rows = []
    for (op, impl), fn in calls.items():
        stats = timing.benchmark(fn, method)
        moved = (3 if op == "bwd" else 5) * n_rows * n_cols * dtype.itemsize
        rows.append(
            {
                "n_rows": n_rows,
                "n_cols": n_cols,
                "dtype": kernels.DTYPE_NAMES[dtype],
                "method": method,
                "op": op,
                "impl": impl,
                "path": path if impl == "triton" else "",
                "median_us": round(stats.median_us, 3),
                "p20_us": round(stats.p20_us, 3),
                "p80_us": round(stats.p80_us, 3),
                "gbps": round(moved / stats.median_us / 1e3, 1),
            }
        )
    return rows


def markdown(rows: list[dict]) -> str:
    """One line per shape, dtype and method: Triton vs torch us and speedup, for bwd and fwd+bwd."""
    by_key: dict[tuple, dict] = {}
    for row in rows:
        key = (row["n_rows"], row["n_cols"], row["dtype"], row["method"])
        by_key.setdefault(key, {})[(row["op"], row["impl"])] = row
    lines = [
        "| R x N | dtype | method | bwd path | bwd triton us (GB/s) | bwd torch us | speedup | "
        "fwd+bwd triton us | fwd+bwd torch us | speedup |",
        "|---" * 10 + "|",
    ]
    for (n_rows, n_cols, dtype, method), cell in by_key.items():
        bwd_t, bwd_r = cell[("bwd", "triton")], cell[("bwd", "torch")]
        all_t, all_r = cell[("fwd+bwd", "triton")], cell[("fwd+bwd", "torch")]
        lines.append(
            f"| {n_rows} x {n_cols} | {dtype} | {method} | {bwd_t['path']} | {bwd_t['median_us']:.1f} "
            f"({bwd_t['gbps']:.0f}) | {bwd_r['median_us']:.1f} | "
            f"{bwd_r['median_us'] / bwd_t['median_us']:.2f}x | {all_t['median_us']:.1f} | "
            f"{all_r['median_us']:.1f} | {all_r['median_us'] / all_t['median_us']:.2f}x |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="CSV file to write (one row per timing)")
    parser.add_argument("--variant", default="auto", help="forward variant for fwd+bwd (default auto)")
    parser.add_argument("--shapes", nargs="+", type=parse_shape, default=SHAPES, help="RxN shapes")
    parser.add_argument("--dtypes", nargs="+", default=["fp16", "bf16", "fp32"], help="fp16 bf16 fp32")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("bench_backward needs a CUDA GPU")
    kernels.get_variant(args.variant)
    dtypes = [kernels.dtype_from_name(name) for name in args.dtypes]
    rows: list[dict] = []
    for n_rows, n_cols in args.shapes:
        for dtype in dtypes:
            check(n_rows, n_cols, dtype, args.variant)
            for method in args.methods:
                rows += time_shape(n_rows, n_cols, dtype, method, args.variant)
                print(markdown(rows[-4:]).splitlines()[-1], flush=True)
            torch.cuda.empty_cache()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    print(f"\n{torch.cuda.get_device_name()}, torch {torch.__version__}, forward variant {args.variant!r}\n")
    print(markdown(rows))
    print(f"\nwrote {len(rows)} rows to {args.out}")


if __name__ == "__main__":
    main()
