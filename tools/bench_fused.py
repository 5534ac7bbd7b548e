"""GPU benchmark of the fused ops, kernels.masked_softmax and kernels.ragged_softmax, against torch's ways to do them.

    python3 tools/bench_fused.py --out-dir DIR        (or: python3 -m tools.bench_fused --out-dir DIR)

from the repository root, on a CUDA machine (no streamlit/plotly needed). Writes DIR/bench_fused.csv (one row per
op, case, dtype, backend and timing method) and DIR/bench_fused.md (tables). Budget: about 3-4 minutes on an H200.

Timing (profiling.measure.timing.benchmark): `cuda_graph` (10 calls captured, replayed; us per call) and
`back_to_back_flushed` (L2 flushed before each call). "ideal" = bytes of x read once + y written once at the
device-to-device copy bandwidth measured in the same run (measure_copy_gbps, read + write bytes); pct_of_ideal =
ideal / median. Mask and bias bytes are not in the ideal (broadcast, L2-resident); a causal row reads only up to
its diagonal, so a causal pct_of_ideal can pass 100.

masked_softmax at (B, H, L, L) = (2, 16, L, L), L in 512, 1000, 1024, 2048, 4096, fp16/bf16/fp32, two cases:
  causal           scale 0.125, causal=True
  scale_mask_bias  scale 0.125, mask (B, 1, L, L) bool (90 % kept), bias (1, H, 1, L) in x's dtype
backends: blockscope (kernels.masked_softmax), eager (torch.softmax(torch.where(keep, x * scale + bias, -inf), -1),
keep precomputed), inductor (torch.compile of that expression), sdpa_math_softmax (aten._safe_softmax(x * scale +
attn_mask), the softmax step of SDPA's math backend with the mask and bias folded into one float attn_mask
beforehand). Liger and Quack have no masked/causal softmax.
ragged_softmax over 1-D values, fp32/bf16/fp16, two length distributions (seeded):
  uniform    16384 segments, lengths uniform in 1..8192
  long_tail  16383 segments, lengths lognormal (median 400, clipped to 1..100000), plus one of 147456 (144k)
backends: blockscope (ragged.ragged_softmax_forward with check=False: offsets validated once before timing),
nested (torch.softmax over the ragged dim of a jagged nested tensor), pad_unpad (scatter into a -inf padded
(B, max_len) tensor, torch.softmax, gather back), segment_reduce (torch.segment_reduce max and sum, exp,
repeat_interleave: the torch_geometric CSR recipe). Failures (out of memory, int32 limits) are rows with `error`.
Last, if time is left, a tuning pass (cuda_graph only): masked_softmax at num_warps 1-16, ragged_softmax at other
chunk sizes x num_warps x packed_max (0: no packed launches, 1024), rows with backend "blockscope[name=value]"
and their own table, for choosing the defaults (ragged: design 0's tunables; design 1's: experiments/
2026-12-04-ragged-redesign/bench_ragged.py --tune).

Cases, inputs, float64 references, checks and backends come from profiling/measure/backends/fused.py, shared with
`python -m profiling sweep --op masked_softmax,ragged_softmax` (the same measurements as results-schema rows).
"""

from __future__ import annotations

import argparse
import csv
import itertools
import os
import sys
import time
from pathlib import Path

if __name__ == "__main__" and not __package__:  # run as a file: re-run as the module so `blockscope` imports
    os.chdir(Path(__file__).resolve().parent.parent)
    os.execv(sys.executable, [sys.executable, "-m", "tools.bench_fused", *sys.argv[1:]])

from blockscope.profiling.measure.backends import fused as fb  # noqa: E402 - after the re-exec above

DEVICE = "cuda"
MASKED_LENGTHS = fb.MASKED_LENGTHS
TUNE_LENGTHS = (1000, 2048, 4096)
BATCH, HEADS = fb.BATCH, fb.HEADS
DTYPE_NAMES = ("fp16", "bf16", "fp32")
METHODS = ("cuda_graph", "back_to_back_flushed")
FIELDS = [
    "op",
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
    "vs_blockscope",
    "check",
    "error",
    "phase",
]


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Fused masked/ragged softmax vs torch, on a CUDA GPU")
    parser.add_argument("--out-dir", required=True, type=Path, help="folder for bench_fused.csv and bench_fused.md")
    parser.add_argument("--budget-s", type=float, default=210.0, help="stop starting new cases after this (s)")
    parser.add_argument("--dtypes", default=",".join(DTYPE_NAMES), help="comma-separated: fp16,bf16,fp32")
    return parser.parse_args(argv)


class Bench:
    """Timing, correctness checks and rows for one run."""

    def __init__(self, out_dir: Path, budget_s: float) -> None:
        import torch

        from blockscope.profiling.measure import timing

        self.torch, self.timing = torch, timing
        self.out_dir, self.budget_s, self.start = out_dir, budget_s, time.monotonic()
        self.rows: list[dict] = []
        self.copy_gbps = timing.measure_copy_gbps(bytes=1 << 30, reps=20)

    def over_budget(self) -> bool:
        return time.monotonic() - self.start > self.budget_s

    def ideal_us(self, nbytes: int) -> float:
        return nbytes / (self.copy_gbps * 1e9) * 1e6

    def time(self, fn, method: str) -> dict:
        stats = self.timing.benchmark(
            fn, method, warmup=5, warmup_ms=10.0, rel_ci=0.02, min_reps=10, max_reps=300, budget_ms=40.0
        )
        return {"median_us": stats.median_us, "p20_us": stats.p20_us, "p80_us": stats.p80_us, "reps": stats.reps}

    def run_backends(self, base: dict, backends: dict, ideal_us: float, check) -> None:
        """Time every backend under both methods; `check(name, output)` -> 'ok' or a mismatch text."""
        torch = self.torch
        results = {}
        for name, fn in backends.items():
            try:
                out = fn()
                torch.cuda.synchronize()
                verdict = check(name, out)
                del out
            except Exception as error:  # noqa: BLE001 - a backend that fails is a row, not a crash
                for method in METHODS:
                    self.rows.append({**base, "backend": name, "method": method, "error": _short(error)})
                torch.cuda.empty_cache()
                continue
            for method in METHODS:
                row = {**base, "backend": name, "method": method, "check": verdict, "ideal_us": ideal_us}
                try:
                    row.update(self.time(fn, method))
                    row["pct_of_ideal"] = 100.0 * ideal_us / row["median_us"]
                    results[(name, method)] = row["median_us"]
                except Exception as error:  # noqa: BLE001
                    row["error"] = _short(error)
                self.rows.append(row)
            torch.cuda.empty_cache()
        for row in self.rows[-len(backends) * len(METHODS) :]:
            ours = results.get(("blockscope", row["method"]))
            if ours and row.get("median_us"):
                row["vs_blockscope"] = row["median_us"] / ours


def _short(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}".replace("\n", " ")
    return text[:200]


def bench_masked(bench: Bench, dtypes: list) -> None:
    torch = bench.torch
    for length in MASKED_LENGTHS:
        for dtype in dtypes:
            for case in fb.CASES[fb.MASKED]:
                base = {
                    "op": fb.MASKED,
                    "case": case,
                    "dtype": str(dtype).removeprefix("torch."),
                    "shape": f"{BATCH}x{HEADS}x{length}x{length}",
                }
                if bench.over_budget():
                    bench.rows.append({**base, "backend": "all", "error": "skipped: time budget"})
                    continue
                inputs = fb.masked_inputs(case, length, dtype, DEVICE, batch=BATCH, heads=HEADS)
                reference = fb.masked_reference(inputs)
                backends = fb.build_backends(fb.MASKED, inputs)
                nbytes = 2 * inputs.x.numel() * inputs.x.element_size()
                check = fb.compare(reference, fb.TOLERANCES[dtype])
                bench.run_backends(base, backends, bench.ideal_us(nbytes), check)
                del inputs, reference, backends
                torch.cuda.empty_cache()


def _lengths(kind: str):
    return fb.ragged_lengths(kind)


def bench_ragged(bench: Bench, dtypes: list) -> None:
    torch = bench.torch
    for kind in fb.CASES[fb.RAGGED]:
        for dtype in dtypes:
            lengths = fb.ragged_lengths(kind)
            total, n_seg, max_len = int(lengths.sum()), lengths.numel(), int(lengths.max())
            base = {
                "op": fb.RAGGED,
                "case": kind,
                "dtype": str(dtype).removeprefix("torch."),
                "shape": f"B={n_seg} T={total} max={max_len}",
            }
            if bench.over_budget():
                bench.rows.append({**base, "backend": "all", "error": "skipped: time budget"})
                continue
            inputs = fb.ragged_inputs(kind, dtype, DEVICE)
            backends = {}
            for name in fb.backend_names(fb.RAGGED):
                why = fb.unsupported_reason(fb.RAGGED, name, inputs)
                if why:
                    for method in METHODS:
                        bench.rows.append({**base, "backend": name, "method": method, "error": why})
                    continue
                backends[name] = fb.get_backend(fb.RAGGED, name).build(inputs)
            reference = fb.ragged_reference(inputs)
            nbytes = 2 * inputs.values.numel() * inputs.values.element_size()
            check = fb.compare(reference, fb.TOLERANCES[dtype])
            bench.run_backends(base, backends, bench.ideal_us(nbytes), check)
            del inputs, reference, backends
            torch.cuda.empty_cache()


def bench_tuning(bench: Bench, dtypes: list) -> None:
    """Other tunables of our kernels (cuda_graph only), after everything else, while time is left."""
    torch = bench.torch
    from blockscope.kernels import masked, ragged

    for length in TUNE_LENGTHS:
        for dtype in dtypes:
            if bench.over_budget():
                return
            x = torch.randn(BATCH, HEADS, length, length, device=DEVICE).to(dtype)
            mask = torch.rand(BATCH, 1, length, length, device=DEVICE) < 0.9
            default = masked.plan(x.numel() // length, length, dtype).num_warps
            for case, kw in (("causal", {"causal": True}), ("scale_mask_bias", {"mask": mask})):
                base = {"op": "masked_softmax", "case": case, "dtype": str(dtype).removeprefix("torch.")}
                base["shape"] = f"{BATCH}x{HEADS}x{length}x{length}"
                for warps in (1, 2, 4, 8, 16):
                    name = f"blockscope[num_warps={warps}]" + (" (default)" if warps == default else "")
                    fn = lambda x=x, kw=kw, w=warps: masked.masked_softmax_forward(x, 0.125, num_warps=w, **kw)  # noqa: E731
                    _tune_row(bench, base, name, fn, 2 * x.numel() * x.element_size())
            del x, mask
            torch.cuda.empty_cache()
    for kind in ("uniform", "long_tail"):
        lengths = _lengths(kind)
        total = int(lengths.sum())
        offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)]).to(DEVICE)
        for dtype in dtypes:
            if bench.over_budget():
                return
            values = torch.randn(total, device=DEVICE).to(dtype)
            base = {"op": "ragged_softmax", "case": kind, "dtype": str(dtype).removeprefix("torch.")}
            base["shape"] = f"B={lengths.numel()} T={total} max={int(lengths.max())}"
            plan = ragged.plan(total, 1, dtype, design=0)  # the tuning rows are design 0's (items) tunables
            default = (plan.constexprs["CHUNK"], plan.num_warps, plan.tunables["packed_max"])
            for chunk, warps, packed in itertools.product((256, 512, 1024, 2048, 4096), (1, 2, 4, 8), (0, 1024)):
                name = f"blockscope[design=0,chunk={chunk},num_warps={warps},packed_max={packed}]" + (
                    " (default)" if (chunk, warps, packed) == default else ""
                )
                fn = lambda v=values, o=offsets, c=chunk, w=warps, p=packed: ragged.ragged_softmax_forward(  # noqa: E731
                    v, o, check=False, design=0, chunk=c, num_warps=w, packed_max=p
                )
                _tune_row(bench, base, name, fn, 2 * values.numel() * values.element_size())
            del values
            torch.cuda.empty_cache()


def _tune_row(bench: Bench, base: dict, name: str, fn, nbytes: int) -> None:
    row = {**base, "backend": name, "method": "cuda_graph", "phase": "tuning", "ideal_us": bench.ideal_us(nbytes)}
    try:
        row.update(bench.time(fn, "cuda_graph"))
        row["pct_of_ideal"] = 100.0 * row["ideal_us"] / row["median_us"]
    except Exception as error:  # noqa: BLE001
        row["error"] = _short(error)
    bench.rows.append(row)


def write(bench: Bench) -> None:
    out = bench.out_dir
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "bench_fused.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=FIELDS)
        writer.writeheader()
        for row in bench.rows:
            writer.writerow({k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in row.items() if k in FIELDS})
    import torch

    lines = [
        "# Fused softmax ops vs torch (tools/bench_fused.py)",
        "",
        f"{torch.cuda.get_device_name()}, torch {torch.__version__}, copy bandwidth {bench.copy_gbps:.0f} GB/s "
        f"(read + write) measured in this run; {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}.",
        "Cells: median us per call (% of ideal); ratio = backend time / blockscope time (> 1: blockscope faster).",
        "",
    ]
    for method in METHODS:
        for op in ("masked_softmax", "ragged_softmax"):
            rows = [r for r in bench.rows if r["op"] == op and r.get("method") in (method, None) and not r.get("phase")]
            backends = list(dict.fromkeys(r["backend"] for r in rows if r["backend"] != "all"))
            if not rows:
                continue
            lines += [f"## {op}, {method}", ""]
            lines.append("| case | dtype | shape | " + " | ".join(backends) + " | check (blockscope) |")
            lines.append("|---" * (4 + len(backends)) + "|")
            keys = list(dict.fromkeys((r["case"], r["dtype"], r["shape"]) for r in rows))
            for key in keys:
                cells = []
                check = ""
                for name in backends:
                    match = [r for r in rows if (r["case"], r["dtype"], r["shape"]) == key and r["backend"] == name]
                    r = match[0] if match else {}
                    if r.get("median_us"):
                        ratio = r.get("vs_blockscope")
                        cells.append(
                            f"{r['median_us']:.1f} ({r['pct_of_ideal']:.0f}%)"
                            + (f" x{ratio:.2f}" if ratio and name != "blockscope" else "")
                        )
                    else:
                        cells.append(("failed: " + r.get("error", "")[:60]) if r else "")
                    if name == "blockscope":
                        check = r.get("check", "")
                skipped = [r for r in rows if (r["case"], r["dtype"], r["shape"]) == key and r["backend"] == "all"]
                if skipped:
                    cells = ["skipped (time budget)"] * len(backends)
                lines.append(f"| {key[0]} | {key[1]} | {key[2]} | " + " | ".join(cells) + f" | {check} |")
            lines.append("")
    tuning = [r for r in bench.rows if r.get("phase") == "tuning"]
    if tuning:
        lines += ["## Tuning pass (cuda_graph): our kernels at other tunables", ""]
        lines += ["| op | case | dtype | shape | config | median us | % of ideal |", "|---|---|---|---|---|---|---|"]
        for r in tuning:
            cell = (
                f"{r['median_us']:.1f} | {r['pct_of_ideal']:.0f}%" if r.get("median_us") else f"failed | {r['error']}"
            )
            lines.append(f"| {r['op']} | {r['case']} | {r['dtype']} | {r['shape']} | {r['backend']} | {cell} |")
        lines.append("")
    (out / "bench_fused.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    import torch

    if not torch.cuda.is_available():
        print("bench_fused: no CUDA GPU; allowed: a machine with one", file=sys.stderr)
        return 2
    names = [n.strip() for n in args.dtypes.split(",") if n.strip()]
    bad = [n for n in names if n not in DTYPE_NAMES]
    if bad or not names:
        print(f"bench_fused: unknown dtype(s) {', '.join(bad)}; allowed: {', '.join(DTYPE_NAMES)}", file=sys.stderr)
        return 2
    dtypes = [{"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[n] for n in names]
    for option in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit"):
        if hasattr(torch._dynamo.config, option):  # one compiled expression per (L, dtype, case)
            setattr(torch._dynamo.config, option, 1024)
    bench = Bench(args.out_dir, args.budget_s)
    try:
        bench_masked(bench, dtypes)
        bench_ragged(bench, dtypes)
        bench_tuning(bench, dtypes)
    finally:
        write(bench)
    elapsed = time.monotonic() - bench.start
    print((args.out_dir / "bench_fused.md").read_text())
    print(f"bench_fused: {len(bench.rows)} rows in {elapsed:.0f} s -> {args.out_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
