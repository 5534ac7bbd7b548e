"""Issue 37 on a GPU, in one run of under 4 minutes: tiny rows, misaligned rows, the fp32 exact exp's cost and ULPs.

  python3 -m tools.bench_frontier --out-dir DIR            # from the repo root, one CUDA GPU (the H200)

Times, per shape and dtype, torch.softmax, `auto`, the variants issue 37 added or changed (tinyrows; teaching's
aligned window, on and off; fp32 exp within an ULP against fast_exp=1) and the peers Quack and Liger where they are
importable, each with CUDA-graph replay (10 calls a replay) and L2-flushed back-to-back calls
(profiling/measure/timing.py), against the device-to-device copy bandwidth measured in the same run (1 GiB, and a
copy of the shape's own bytes). Shapes off the tuning grid: tiny rows 10**5 x {8, 16, 32, 64}; odd N {257, 1025,
2047, 4097, 32001, 50257, 128257} at R=4096 (N <= 4097) or ~64 MB of input; fp32 exact vs fast exp at six fp32
shapes where the table picks warprows, stagedrows, teaching, multirow, staged and cluster. Then fp32 ULP error
against the correctly rounded float64 softmax (profiling.inspect.numerics) for torch and each variant, default and
fast_exp=1, on every input distribution, and 16-bit ULP of auto.

Writes DIR/frontier_timing.csv, DIR/frontier_numerics.csv and DIR/frontier.md (the tables the issue asks for). A
config that fails is a row with its error; past --budget-s seconds the timing stops and the files say so.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import traceback
from pathlib import Path

TINY_N = (8, 16, 32, 64)
TINY_ROWS = 100000
ODD_N = (257, 1025, 2047, 4097, 32001, 50257, 128257)
ODD_BYTES = 64 * 2**20  # rows of N > 4097: ~64 MB of input
EXACT_SHAPES = (  # fp32 (R, N) and the variant the shipped table picks there (kernels/tuned/nvidia-h200.json)
    (65536, 128, "warprows"),
    (4096, 1000, "multirow"),
    (16384, 2048, "stagedrows"),
    (4096, 2049, "teaching"),
    (4096, 32769, "staged"),
    (4096, 65536, "cluster"),
)
NUMERICS_N = (64, 1000, 4096)
NUMERICS_ROWS = 64
NUMERICS_VARIANTS = ("teaching", "multirow", "warprows", "stagedrows", "tinyrows", "splitrow", "staged", "cluster")
TOLERANCE = {"fp16": 2e-3, "bf16": 1.6e-2, "fp32": 1e-5}
METHODS = ("cuda_graph", "back_to_back_flushed")


def _env() -> dict:
    import torch
    import triton

    return {
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "capability": ".".join(map(str, torch.cuda.get_device_capability())),
    }


def _peers() -> dict:
    """name -> backend for Quack and Liger where importable here."""
    from blockscope.profiling.measure.backends import get_backend

    found = {}
    for name in ("quack", "liger"):
        try:
            backend = get_backend(name)
            if backend.available() is None:
                found[name] = backend
            else:
                print(f"peer {name} left out: {backend.available()}", flush=True)
        except Exception as error:  # a broken install is a finding, not a crash
            print(f"peer {name} left out: {type(error).__name__}: {error}", flush=True)
    return found


def _impls(kind: str, n_rows: int, n_cols: int, dtype) -> list[tuple[str, str, dict]]:
    """(label, variant, tunables) to time for one shape besides torch, auto and the peers."""
    from blockscope import kernels

    found: list[tuple[str, str, dict]] = []
    if kind == "tiny":
        found += [("tinyrows", "tinyrows", {}), ("multirow", "multirow", {}), ("warprows", "warprows", {})]
    elif kind == "odd":
        if n_cols <= 16384:
            found += [
                ("teaching window=1", "teaching", {"window": 1}),
                ("teaching window=0", "teaching", {"window": 0}),
            ]
        found.append(("splitrow", "splitrow", {}))
    elif kind == "exact":  # the table's pick with its tunables where it is the listed variant, else its defaults
        variant = next(v for r, n, v in EXACT_SHAPES if (r, n) == (n_rows, n_cols))
        picked, tunables = _table_pick(n_rows, n_cols, dtype)
        tunables = dict(tunables) if picked == variant else {}
        found += [
            (f"{variant} exact", variant, tunables),
            (f"{variant} fast_exp=1", variant, {**tunables, "fast_exp": 1}),
        ]
    runnable = []
    for label, variant, tunables in found:
        try:
            kernels.get_variant(variant).plan(n_rows, n_cols, dtype, **tunables)
        except ValueError as error:
            print(f"  {label} left out at {n_rows}x{n_cols}: {error}", flush=True)
            continue
        runnable.append((label, variant, tunables))
    return runnable


def _table_pick(n_rows: int, n_cols: int, dtype) -> tuple[str, dict]:
    """auto's (variant, tunables) for the shape on this GPU's table (the shipped H200 table without a GPU)."""
    import torch

    from blockscope.kernels import auto

    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "NVIDIA H200"
    return auto.choose(n_rows, n_cols, dtype, gpu, on_that_gpu=True)


def _shapes() -> list[tuple[str, str, int, int]]:
    """(kind, dtype, R, N) in the order timed."""
    shapes = []
    for dtype in ("fp16", "bf16", "fp32"):
        shapes += [("tiny", dtype, TINY_ROWS, n) for n in TINY_N]
    for dtype in ("fp16", "bf16", "fp32"):
        itemsize = 4 if dtype == "fp32" else 2
        shapes += [("odd", dtype, 4096 if n <= 4097 else max(64, ODD_BYTES // (n * itemsize)), n) for n in ODD_N]
    shapes += [("exact", "fp32", r, n) for r, n, _ in EXACT_SHAPES]
    return shapes


def _warm(shapes: list[tuple[str, str, int, int]], peers: dict, timeout_s: float) -> str:
    """Compile every kernel the run will launch in parallel worker processes first (profiling/measure/precompile.py:
    Triton's disk cache fills, so the timed process only loads); one line on what it did."""
    from blockscope import kernels
    from blockscope.profiling.measure import precompile, sweep

    configs = []
    for kind, dtype, n_rows, n_cols in shapes:
        torch_dtype = kernels.dtype_from_name(dtype)
        configs.append(sweep.make_config("auto", dtype, n_rows, n_cols))
        configs += [
            sweep.make_config(v, dtype, n_rows, n_cols, **t) for _, v, t in _impls(kind, n_rows, n_cols, torch_dtype)
        ]
        configs += [sweep.make_config(name, dtype, n_rows, n_cols) for name in peers]
    fp32 = kernels.dtype_from_name("fp32")
    for n_cols in NUMERICS_N:
        for variant in NUMERICS_VARIANTS:
            for tunables in ({}, {"fast_exp": 1}):
                try:
                    kernels.get_variant(variant).plan(NUMERICS_ROWS, n_cols, fp32, **tunables)
                except ValueError:
                    continue
                configs.append(sweep.make_config(variant, "fp32", NUMERICS_ROWS, n_cols, **tunables))
        configs.append(sweep.make_config("auto", "fp32", NUMERICS_ROWS, n_cols))
    report = precompile.precompile(list(dict.fromkeys(configs)), timeout_s=timeout_s)
    return (
        f"precompiled {report.compiled} configs in {report.seconds:.0f} s with {report.workers} workers"
        f"{'; ' + str(len(report.failed)) + ' not (compiled in-process)' if report.failed else ''}"
        f"{'; ' + report.broken if report.broken else ''}"
    )


def _time(fn, method: str) -> tuple[float, float, float]:
    from blockscope.profiling.measure import timing

    stats = timing.benchmark(fn, method, rel_ci=0.02, budget_ms=40.0, warmup=10, warmup_ms=10.0)
    return stats.median_us, stats.p20_us, stats.p80_us


def _time_shape(kind, dtype_name, n_rows, n_cols, peers, copy_gbps, rows_out) -> None:
    import torch

    from blockscope import kernels
    from blockscope.kernels import auto
    from blockscope.profiling.measure.backends import unsupported_reason
    from blockscope.profiling.measure.sweep import check_result
    from blockscope.profiling.results import bytes_moved

    dtype = kernels.dtype_from_name(dtype_name)
    x = torch.randn(n_rows, n_cols, device="cuda", dtype=dtype) * 3
    expected = kernels.reference_softmax(x)
    moved = bytes_moved(n_rows, n_cols, dtype_name)
    dst = torch.empty_like(x)
    calls: list[tuple[str, str, dict, object]] = [("torch", "torch", {}, lambda: torch.softmax(x, dim=-1))]
    pick = auto.choose(n_rows, n_cols, dtype, torch.cuda.get_device_name())
    calls.append(("auto", "auto", {"pick": pick[0], **pick[1]}, lambda: kernels.softmax_auto(x)))
    for label, variant, tunables in _impls(kind, n_rows, n_cols, dtype):
        launcher = kernels.get_variant(variant).launcher
        calls.append((label, variant, tunables, lambda launcher=launcher, tunables=tunables: launcher(x, **tunables)))
    for name, backend in peers.items():
        reason = unsupported_reason(name, n_rows, n_cols, dtype)
        if reason:
            rows_out.append(
                _row(kind, dtype_name, n_rows, n_cols, name, name, {}, "", math.nan, moved, copy_gbps, reason)
            )
            continue
        try:
            calls.append((name, name, {}, backend.prepare(x)))
        except Exception as error:
            rows_out.append(
                _row(kind, dtype_name, n_rows, n_cols, name, name, {}, "", math.nan, moved, copy_gbps, str(error)[:200])
            )
    copy_us = {method: _time(lambda: dst.copy_(x), method)[0] for method in METHODS}
    for label, variant, tunables, fn in calls:
        try:
            error = check_result(fn(), expected, dtype_name)[1]  # the first call compiles: outside the timing
            if not error <= TOLERANCE[dtype_name]:
                raise ValueError(f"wrong result: max abs error {error:.3g}")
            for method in METHODS:
                median, p20, p80 = _time(fn, method)
                row = _row(kind, dtype_name, n_rows, n_cols, label, variant, tunables, method, median, moved, copy_gbps)
                row.update(p20_us=p20, p80_us=p80, same_size_copy_us=copy_us[method])
                row["same_size_copy_fraction"] = copy_us[method] / median
                rows_out.append(row)
        except Exception as error:  # one config failing is a row, not a crash
            text = (str(error).strip().splitlines() or [""])[0][:200]
            rows_out.append(
                _row(kind, dtype_name, n_rows, n_cols, label, variant, tunables, "", math.nan, moved, copy_gbps, text)
            )


def _row(kind, dtype, n_rows, n_cols, label, variant, tunables, method, median_us, moved, copy_gbps, error="") -> dict:
    gbps = moved / (median_us * 1e3) if median_us == median_us else math.nan
    return {
        "kind": kind,
        "dtype": dtype,
        "n_rows": n_rows,
        "n_cols": n_cols,
        "impl": label,
        "variant": variant,
        "tunables": json.dumps(tunables, sort_keys=True),
        "method": method,
        "median_us": median_us,
        "gbps": gbps,
        "copy_fraction": gbps / copy_gbps,
        "error": error,
    }


def _numerics(rows_out: list[dict], deadline: float) -> str:
    """fp32 ULP of torch and each variant (default and fast_exp=1) on every input distribution; 16-bit ULP of auto.
    Stops at `deadline` (time.perf_counter()); returns '' or what it left out."""
    from blockscope import kernels
    from blockscope.profiling.inspect import numerics as nm

    variants = NUMERICS_VARIANTS
    for n_cols in NUMERICS_N:
        if time.perf_counter() > deadline:
            return f"numerics stopped at the time budget before fp32 N={n_cols}"
        for input_name in nm.INPUTS:
            prepared = nm.prepare_input(input_name, "fp32", NUMERICS_ROWS, n_cols, device="cuda")
            fns = [("torch", {}, nm.softmax_callable("torch")), ("auto", {}, kernels.softmax_auto)]
            for variant in variants:
                spec = kernels.get_variant(variant)
                for tunables in ({}, {"fast_exp": 1}):
                    try:
                        spec.plan(NUMERICS_ROWS, n_cols, kernels.dtype_from_name("fp32"), **tunables)
                    except ValueError:
                        continue
                    fns.append((variant, tunables, lambda x, s=spec, t=tunables: s.launcher(x, **t)))
            for name, tunables, fn in fns:
                record = {"dtype": "fp32", "n_cols": n_cols, "input": input_name, "impl": name}
                record["fast_exp"] = int(tunables.get("fast_exp", 0))
                try:
                    summary, _ = nm.measure_prepared(fn, prepared)
                    record.update(
                        ulp_max=summary.ulp_max, ulp_mean=summary.ulp_mean, nan_mismatches=summary.nan_mismatches
                    )
                except Exception as error:
                    record["error"] = (str(error).splitlines() or [""])[0][:200]
                rows_out.append(record)
    for dtype in ("fp16", "bf16"):
        for input_name in nm.INPUTS:
            prepared = nm.prepare_input(input_name, dtype, NUMERICS_ROWS, 1000, device="cuda")
            for name, fn in (("torch", nm.softmax_callable("torch")), ("auto", kernels.softmax_auto)):
                summary, _ = nm.measure_prepared(fn, prepared)
                rows_out.append(
                    {
                        "dtype": dtype,
                        "n_cols": 1000,
                        "input": input_name,
                        "impl": name,
                        "fast_exp": 0,
                        "ulp_max": summary.ulp_max,
                        "ulp_mean": summary.ulp_mean,
                        "nan_mismatches": summary.nan_mismatches,
                    }
                )
    return ""


def _markdown(timing, numerics, env: dict, copy_gbps: float, seconds: float, partial: str) -> str:
    import pandas as pd

    lines = [
        "# Issue 37 frontier benchmark",
        "",
        f"`python3 -m tools.bench_frontier --out-dir DIR` on {env['gpu']} (sm_{env['capability'].replace('.', '')}), "
        f"torch {env['torch']}, Triton {env['triton']}; {seconds:.0f} s. Copy bandwidth (1 GiB device-to-device, "
        f"L2-flushed, read + write bytes): **{copy_gbps:.0f} GB/s**. `% copy` = GB/s over that; `% same-size copy` "
        "= a copy of the shape's own bytes (same method) over the kernel's time.",
    ]
    if partial:
        lines += ["", f"**Partial run**: {partial}"]
    ok = timing[timing["error"] == ""] if len(timing) else timing
    for kind, title in (("tiny", "Tiny rows (10**5 rows)"), ("odd", "Rows not 16-byte aligned (odd N)")):
        part = ok[ok["kind"] == kind]
        if part.empty:
            continue
        lines += ["", f"## {title}", ""]
        for method in METHODS:
            sub = part[part["method"] == method]
            if sub.empty:
                continue
            table = sub.pivot_table(index=["dtype", "n_rows", "n_cols"], columns="impl", values="copy_fraction")
            lines += [f"### % of copy bandwidth, {method}", "", _md_table((100 * table).round(0))]
            us = sub.pivot_table(index=["dtype", "n_rows", "n_cols"], columns="impl", values="median_us")
            lines += ["", f"### median us, {method}", "", _md_table(us.round(2)), ""]
    exact = ok[ok["kind"] == "exact"]
    if not exact.empty:
        lines += ["", "## fp32: exp within an ULP vs fast_exp=1 (tl.exp)", ""]
        rows = []
        for (n_rows, n_cols, method), part in exact.groupby(["n_rows", "n_cols", "method"]):
            fast = part[part["impl"].str.endswith("fast_exp=1")]["median_us"]
            slow = part[part["impl"].str.endswith(" exact")]["median_us"]
            if len(fast) and len(slow):
                rows.append(
                    {
                        "R": n_rows,
                        "N": n_cols,
                        "method": method,
                        "variant": part[part["impl"].str.endswith(" exact")]["variant"].iloc[0],
                        "exact us": round(float(slow.iloc[0]), 2),
                        "fast us": round(float(fast.iloc[0]), 2),
                        "cost %": round(100 * (float(slow.iloc[0]) / float(fast.iloc[0]) - 1), 1),
                    }
                )
        lines.append(_md_table(pd.DataFrame(rows).set_index(["R", "N", "method"])) if rows else "(no pairs)")
    failed = timing[timing["error"] != ""] if len(timing) else timing
    if len(failed):
        lines += ["", "## Configs without a time", ""]
        lines += [f"- {r.kind} {r.dtype} {r.n_rows}x{r.n_cols} {r.impl}: {r.error}" for r in failed.itertuples()]
    if len(numerics):
        good = numerics[numerics.get("error", pd.Series([""] * len(numerics))).fillna("") == ""]
        lines += ["", "## ULP vs the correctly rounded float64 softmax (R=64)", ""]
        fp32 = good[good["dtype"] == "fp32"].copy()
        fp32["impl"] = fp32["impl"] + fp32["fast_exp"].map({0: "", 1: " fast_exp=1"})
        for value in ("ulp_max", "ulp_mean"):
            table = fp32.pivot_table(index=["n_cols", "input"], columns="impl", values=value)
            lines += [f"### fp32 {value}", "", _md_table(table.round(3)), ""]
        half = good[good["dtype"] != "fp32"]
        if len(half):
            table = half.pivot_table(index=["dtype", "input"], columns="impl", values=["ulp_max", "ulp_mean"])
            lines += ["### 16-bit (N=1000)", "", _md_table(table.round(3)), ""]
    return "\n".join(lines) + "\n"


def _md_table(frame) -> str:
    frame = frame.reset_index()
    header = "| " + " | ".join(str(c if not isinstance(c, tuple) else " ".join(map(str, c))) for c in frame.columns)
    rule = "|" + "---|" * len(frame.columns)
    body = ["| " + " | ".join("" if v != v else str(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([header + " |", rule, *body])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", required=True, help="folder for frontier_timing.csv, frontier_numerics.csv, .md")
    parser.add_argument(
        "--budget-s", type=float, default=180.0, help="stop timing new shapes after this many seconds (default 180)"
    )
    parser.add_argument("--total-s", type=float, default=210.0, help="stop the numerics after this (default 210)")
    parser.add_argument("--skip-numerics", action="store_true", help="timing only")
    parser.add_argument("--no-precompile", action="store_true", help="compile in-process as the timing goes")
    parser.add_argument(
        "--precompile-s", type=float, default=100.0, help="time limit of the parallel compile (default 100)"
    )
    args = parser.parse_args(argv)
    import pandas as pd
    import torch

    if not torch.cuda.is_available():
        print("bench_frontier needs a CUDA GPU; none is available here", file=sys.stderr)
        return 2
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    from blockscope.profiling.measure import timing

    env = _env()
    copy_gbps = timing.measure_copy_gbps()
    print(f"{env['gpu']}: copy {copy_gbps:.0f} GB/s", flush=True)
    peers = _peers()
    rows: list[dict] = []
    partial = ""
    shapes = _shapes()
    if not args.no_precompile:
        print(_warm(shapes, peers, timeout_s=args.precompile_s), flush=True)
    for index, (kind, dtype, n_rows, n_cols) in enumerate(shapes):
        if time.perf_counter() - start > args.budget_s:
            partial = f"timing stopped after {args.budget_s:.0f} s at shape {index + 1} of {len(shapes)}"
            print(partial, flush=True)
            break
        print(f"[{index + 1}/{len(shapes)}] {kind} {dtype} {n_rows}x{n_cols}", flush=True)
        try:
            _time_shape(kind, dtype, n_rows, n_cols, peers, copy_gbps, rows)
            torch.cuda.empty_cache()
        except Exception as error:
            traceback.print_exc()
            rows.append(_row(kind, dtype, n_rows, n_cols, "-", "-", {}, "", math.nan, 1, copy_gbps, str(error)[:200]))
        pd.DataFrame(rows).to_csv(out / "frontier_timing.csv", index=False)  # what is done survives a cut
    numerics: list[dict] = []
    if not args.skip_numerics:
        print("numerics", flush=True)
        try:
            left = _numerics(numerics, start + args.total_s)
            partial = "; ".join(p for p in (partial, left) if p)
        except Exception:
            traceback.print_exc()
        pd.DataFrame(numerics).to_csv(out / "frontier_numerics.csv", index=False)
    timing_frame = pd.DataFrame(rows)
    numerics_frame = pd.DataFrame(numerics)
    seconds = time.perf_counter() - start
    text = _markdown(timing_frame, numerics_frame, env, copy_gbps, seconds, partial)
    (out / "frontier.md").write_text(text)
    (out / "frontier_env.json").write_text(json.dumps({**env, "copy_gbps": copy_gbps, "seconds": seconds}, indent=1))
    print(text)
    print(f"wrote {out}/frontier_timing.csv, frontier_numerics.csv, frontier.md in {seconds:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
