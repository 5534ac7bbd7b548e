"""ragged_softmax, old design (items, design=0) vs new (length classes, design=1) vs torch's jagged nested tensor.

    python3 experiments/2026-12-04-ragged-redesign/bench_ragged.py --out DIR/bench_ragged.csv [--tune]

from the repository root, on a CUDA machine (torch + Triton; no streamlit/plotly). Cases: tools/bench_fused.py's
`uniform` (16384 segments, lengths 1..8192) and `long_tail` (lognormal, median 400, plus one 147456-row segment)
lengths over 1-D values in fp16/bf16/fp32, and `uniform_h8`: uniform lengths // 8 over (T, 8) values (fp16).
Timing: profiling.measure.timing.benchmark, `cuda_graph` (replay) and `back_to_back_flushed` (L2 flushed before
each call). ideal = values read once + written once at the copy bandwidth measured in this run; pct_of_ideal =
ideal / median; x_vs_nested = nested median / this median. Every output is checked against a float64 reference
(segment max / sum by scatter; column `check`). `--tune` adds design-1 configurations (cuda_graph only).
Budget: under 120 s on an H200 (`--budget-s` stops starting new cases after that).
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import sys
import time
from pathlib import Path

DEVICE = "cuda"  # the tests run the loop on "cpu" (Triton's interpreter, timing faked)
FIELDS = [
    "case",
    "dtype",
    "shape",
    "backend",
    "method",
    "median_us",
    "p20_us",
    "p80_us",
    "reps",
    "ideal_us",
    "pct_of_ideal",
    "x_vs_nested",
    "x_vs_old",
    "check",
    "error",
]
METHODS = ("cuda_graph", "back_to_back_flushed")
DTYPE_NAMES = ("fp16", "bf16", "fp32")
TOLERANCE = {"fp16": 2e-3, "bf16": 1.6e-2, "fp32": 1e-5}
# (case, lengths kind, width H, divisor of the lengths, dtypes)
CASES = [
    ("uniform", "uniform", None, 1, DTYPE_NAMES),
    ("long_tail", "long_tail", None, 1, DTYPE_NAMES),
    ("uniform_h8", "uniform", 8, 8, ("fp16",)),
]
BACKENDS = {"new": {"design": 1}, "old": {"design": 0}}
TUNE = [  # design-1 configurations for --tune (cuda_graph only); the defaults: pack 0, fused 0, big 8 warps at
    # 64 registers, small 4 warps at 80 registers (1-D forward)
    {"fused": 1},
    {"fused": 1, "pack": 1},
    {"fused": 1, "big_maxnreg": 80},
    {"pack": 1},
    {"pack": 1, "big_maxnreg": 48},
    {"big_maxnreg": 48},
    {"big_maxnreg": 0},
    {"maxnreg": 0},
    {"big_warps": 4, "big_maxnreg": 128},
    {"max_lanes": 16384, "big_warps": 16, "big_maxnreg": 64},
]


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="ragged_softmax old vs new design vs nested tensors (CUDA)")
    parser.add_argument("--out", required=True, type=Path, help="CSV file to write")
    parser.add_argument("--dtypes", default=",".join(DTYPE_NAMES), help="comma-separated: fp16,bf16,fp32")
    parser.add_argument("--budget-s", type=float, default=100.0, help="stop starting new cases after this (s)")
    parser.add_argument("--tune", action="store_true", help="also time design-1 configurations (cuda_graph)")
    parser.add_argument("--cases", default=",".join(c[0] for c in CASES), help="comma-separated cases to run")
    args = parser.parse_args(argv)
    args.case_names = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in args.case_names if c not in {case[0] for case in CASES}]
    if unknown or not args.case_names:
        parser.error(f"unknown case(s) {', '.join(unknown) or '(none)'}; allowed: {', '.join(c[0] for c in CASES)}")
    names = [n.strip() for n in args.dtypes.split(",") if n.strip()]
    bad = [n for n in names if n not in DTYPE_NAMES]
    if bad or not names:
        parser.error(f"unknown dtype(s) {', '.join(bad) or '(none)'}; allowed: {', '.join(DTYPE_NAMES)}")
    args.dtype_names = names
    return args


def lengths_of(kind: str, divisor: int = 1):
    """bench_fused's lengths (seeded), each divided by `divisor` (at least 1)."""
    from tools.bench_fused import _lengths

    lengths = _lengths(kind)
    return (lengths // divisor).clamp(min=1) if divisor > 1 else lengths


def reference(values, offsets, lengths):
    """Per-segment softmax along dim 0 in float64 (segment max and sum by scatter), values' shape."""
    import torch

    v = values.double()
    n_seg = lengths.numel()
    seg = torch.repeat_interleave(torch.arange(n_seg, device=v.device), lengths, output_size=v.shape[0])
    seg_b = seg if v.dim() == 1 else seg[:, None].expand_as(v)
    shape = (n_seg,) + tuple(v.shape[1:])
    m = torch.full(shape, -math.inf, dtype=v.dtype, device=v.device).scatter_reduce(0, seg_b, v, "amax")
    e = torch.exp(v - m[seg])
    s = torch.zeros(shape, dtype=v.dtype, device=v.device).index_add_(0, seg, e)
    return e / s[seg]


def compare(got, want, tolerance: float) -> str:
    """'ok' or a mismatch text: max |got - want| over finite reference lanes, NaN positions equal."""
    got = got.double()
    if got.shape != want.shape:
        return f"shape {tuple(got.shape)} != {tuple(want.shape)}"
    nan_mismatch = int((got.isnan() != want.isnan()).sum())
    finite = ~want.isnan()
    err = float((got[finite] - want[finite]).abs().max()) if bool(finite.any()) else 0.0
    if nan_mismatch or not err <= tolerance:
        return f"MISMATCH max_abs={err:.3g} nan_mismatch={nan_mismatch}"
    return "ok"


def short(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}".replace("\n", " ")[:200]


def add_ratios(rows: list[dict]) -> None:
    """x_vs_nested / x_vs_old of each row: that backend's median (same case, dtype, method) / this median."""
    by_key = {(r["case"], r["dtype"], r["backend"], r["method"]): r.get("median_us") for r in rows}
    for r in rows:
        mine = r.get("median_us")
        for backend, field in (("nested", "x_vs_nested"), ("old", "x_vs_old")):
            theirs = by_key.get((r["case"], r["dtype"], backend, r["method"]))
            if mine and theirs:
                r[field] = theirs / mine


def write_csv(rows: list[dict], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=FIELDS)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in row.items() if k in FIELDS})


def table(rows: list[dict], header: str = "") -> str:
    """Markdown table: one line per row, median us, % of ideal, x vs nested and x vs old."""

    def cell(value, fmt):
        return format(value, fmt) if isinstance(value, (int, float)) and value == value else ""

    lines = [header, ""] if header else []
    lines.append(
        "| case | dtype | shape | backend | method | median us | % of ideal | x vs nested | x vs old | check |"
    )
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        median = cell(r.get("median_us"), ".1f") or ("failed: " + r.get("error", "")[:60])
        lines.append(
            f"| {r['case']} | {r['dtype']} | {r.get('shape', '')} | {r['backend']} | {r.get('method', '')} | {median} "
            f"| {cell(r.get('pct_of_ideal'), '.0f')} | {cell(r.get('x_vs_nested'), '.1f')} "
            f"| {cell(r.get('x_vs_old'), '.2f')} | {r.get('check', '')} |"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace, rows: list[dict]) -> list[dict]:
    """Time every case into `rows` (kept by the caller if a case raises)."""
    import torch

    from blockscope.kernels import ragged
    from blockscope.profiling.measure import timing

    start = time.monotonic()
    copy_gbps = timing.measure_copy_gbps(bytes=1 << 30, reps=20)
    name = torch.cuda.get_device_name() if DEVICE == "cuda" else DEVICE
    print(f"{name}, torch {torch.__version__}, copy {copy_gbps:.0f} GB/s", flush=True)

    def measure(fn, method):
        stats = timing.benchmark(
            fn, method, warmup=5, warmup_ms=10.0, rel_ci=0.02, min_reps=10, max_reps=200, budget_ms=40.0
        )
        return {"median_us": stats.median_us, "p20_us": stats.p20_us, "p80_us": stats.p80_us, "reps": stats.reps}

    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    for case, kind, width, divisor, case_dtypes in [c for c in CASES if c[0] in args.case_names]:
        lengths_cpu = lengths_of(kind, divisor)
        total, n_seg, max_len = int(lengths_cpu.sum()), lengths_cpu.numel(), int(lengths_cpu.max())
        lengths = lengths_cpu.to(DEVICE)
        offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths_cpu.cumsum(0)]).to(DEVICE)
        ragged.check_offsets(offsets, total)
        for name in [n for n in args.dtype_names if n in case_dtypes]:
            base = {"case": case, "dtype": name, "shape": f"B={n_seg} T={total} H={width or 1} max={max_len}"}
            if time.monotonic() - start > args.budget_s:
                rows.append({**base, "backend": "all", "error": "skipped: time budget"})
                continue
            gen = torch.Generator(device=DEVICE).manual_seed(35)
            shape = (total,) if width is None else (total, width)
            values = torch.randn(shape, device=DEVICE, generator=gen).to(dtypes[name])
            want = reference(values, offsets, lengths)
            ideal_us = 2 * values.numel() * values.element_size() / (copy_gbps * 1e3)
            backends = {
                label: (lambda v=values, o=offsets, t=tun: ragged.ragged_softmax_forward(v, o, check=False, **t))
                for label, tun in BACKENDS.items()
            }
            nested = torch.nested.nested_tensor_from_jagged(values, offsets, max_seqlen=max_len, min_seqlen=1)
            backends["nested"] = lambda nt=nested: torch.softmax(nt, dim=1).values()
            configs = [(label, fn, METHODS) for label, fn in backends.items()]
            if args.tune:
                for tun in TUNE:
                    label = "new[" + ",".join(f"{k}={v}" for k, v in tun.items()) + "]"
                    fn = lambda v=values, o=offsets, t=tun: ragged.ragged_softmax_forward(v, o, check=False, **t)  # noqa: E731
                    configs.append((label, fn, ("cuda_graph",)))
            for label, fn, methods in configs:
                try:
                    verdict = compare(fn(), want, TOLERANCE[name])
                    _sync()
                except Exception as error:  # noqa: BLE001 - a failing backend is a row (nested: int32 numel)
                    rows.extend({**base, "backend": label, "method": m, "error": short(error)} for m in methods)
                    _free()
                    continue
                for method in methods:
                    row = {**base, "backend": label, "method": method, "check": verdict, "ideal_us": ideal_us}
                    try:
                        row.update(measure(fn, method))
                        row["pct_of_ideal"] = 100.0 * ideal_us / row["median_us"]
                    except Exception as error:  # noqa: BLE001
                        row["error"] = short(error)
                    rows.append(row)
                    print(
                        f"{case} {name} {label} {method}: {row.get('median_us', float('nan')):.1f} us "
                        f"({row.get('pct_of_ideal', float('nan')):.0f}% of ideal) {verdict}",
                        flush=True,
                    )
            del values, want, nested, backends, configs
            _free()
    print(f"bench_ragged: {len(rows)} rows in {time.monotonic() - start:.0f} s", flush=True)
    return rows


def _sync() -> None:
    import torch

    if DEVICE == "cuda":
        torch.cuda.synchronize()


def _free() -> None:
    import torch

    if DEVICE == "cuda":
        torch.cuda.empty_cache()


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    import torch

    if not torch.cuda.is_available():
        print("bench_ragged: no CUDA GPU; allowed: a machine with one", file=sys.stderr)
        return 2
    rows: list[dict] = []
    try:
        run(args, rows)
    finally:
        add_ratios(rows)
        write_csv(rows, args.out)
    print(table(rows, f"# ragged_softmax old vs new ({args.out})"))
    return 0


if __name__ == "__main__":
    root = Path(__file__).resolve().parents[2]
    if str(root) not in sys.path:  # run as a file from anywhere: the repository root holds blockscope and tools
        sys.path.insert(0, str(root))
    os.chdir(root)
    raise SystemExit(main())
