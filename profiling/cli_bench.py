"""`bench` (auto vs torch, % of copy bandwidth, docs/benchmarks.md) and `tune` (make this GPU's auto table)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .cli import CLIError, int_list, str_list

DTYPES = ("fp16", "bf16", "fp32")


def register(subparsers: argparse._SubParsersAction) -> None:
    bench = subparsers.add_parser("bench", help="auto vs torch.softmax per shape, %% of copy bandwidth",
                                  description="Time torch.softmax and `auto` side by side on the default (R=4096) "
                                  "and large (~512 MB) shape sets; print per shape torch us, auto's variant and "
                                  "config, its us, speedup and %% of the copy bandwidth measured in this run.")
    bench.add_argument("--dtypes", type=str_list, default=list(DTYPES), help="comma list of fp16,bf16,fp32")
    bench.add_argument("--sets", type=str_list, default=["default", "large"], help="comma list of default,large")
    bench.add_argument("--markdown", default="docs/benchmarks.md", help="where to write the table (markdown)")
    bench.add_argument("--csv", help="also write the table as CSV")
    bench.set_defaults(handler=run_bench_command)

    tune = subparsers.add_parser("tune", help="autotune `auto` on this GPU and save its table",
                                 description="Measure variant x num_warps x tile x rows-per-program x stages per "
                                 "shape (back-to-back, L2 flushed) and save the fastest per (dtype, N, R) as this "
                                 "GPU's tuning table, read by `auto`.")
    tune.add_argument("--dtypes", type=str_list, default=list(DTYPES), help="comma list of fp16,bf16,fp32")
    tune.add_argument("--n", type=int_list, help="comma list of N (default: the bench's shapes: the sweep's N at "
                      "R=4096 and the ~512 MB large set)")
    tune.add_argument("--rows", type=int_list, help="comma list of R for --n (default: 4096 and ~512 MB of input)")
    tune.add_argument("--save-to", help="directory for the table (default: the user cache, "
                      "$BLOCKSCOPE_CACHE_DIR/autotune)")
    tune.set_defaults(handler=run_tune_command)


def _need_cuda(command: str) -> None:
    import torch

    if not torch.cuda.is_available():
        raise CLIError(f"{command} needs a CUDA GPU and none is available here; the bundled H200 results "
                       "(data/) and `python -m profiling inspect` work without one")


def _check_dtypes(dtypes: list[str]) -> None:
    bad = [d for d in dtypes if d not in DTYPES]
    if bad:
        raise CLIError(f"unknown dtype(s) {', '.join(bad)}; allowed: {', '.join(DTYPES)}")


def run_bench_command(args: argparse.Namespace) -> int:
    _check_dtypes(args.dtypes)
    from .bench import SETS

    bad = [s for s in args.sets if s not in SETS]
    if bad:
        raise CLIError(f"unknown shape set(s) {', '.join(bad)}; allowed: {', '.join(SETS)}")
    _need_cuda("bench")
    from .bench import run_bench, summary, write_outputs

    def progress(done: int, total: int, job: tuple) -> None:
        sys.stderr.write(f"\r[{done}/{total}] {job}        ")

    table, env = run_bench(args.dtypes, args.sets, progress=progress)
    sys.stderr.write("\n")
    print(f"{env['gpu_name']}  torch {env['torch_version']}  triton {env['triton_version']}  "
          f"copy {env['copy_gbps']:.0f} GB/s")
    print(f"{'set':8} {'dtype':5} {'R':>8} {'N':>8} {'torch us':>9} {'auto':28} {'auto us':>9} "
          f"{'speedup':>7} {'%copy':>6}")
    for r in table.itertuples():
        choice = f"{r.auto_variant} {r.auto_tunables}"
        print(f"{r.set:8} {r.dtype:5} {r.n_rows:>8} {r.n_cols:>8} {r.torch_us:>9.1f} {choice[:28]:28} "
              f"{r.auto_us:>9.1f} {r.speedup:>7.2f} {100 * r.auto_copy_fraction:>5.0f}%")
    info = summary(table)
    print(f"geomean speedup: default {info['geomean_speedup_default']:.2f}x, "
          f"large {info['geomean_speedup_large']:.2f}x; slower than torch on {len(info['losses_to_torch'])} "
          f"shapes ({len(info['losses_beyond_spread'])} beyond the p20-p80 spread); under target on "
          f"{len(info['missed_targets'])} shapes; errors on {len(info['errors'])}")
    command = "python -m profiling bench " + " ".join(sys.argv[2:] if sys.argv[1:2] == ["bench"] else [])
    write_outputs(table, env, command.strip(), Path(args.markdown), Path(args.csv) if args.csv else None)
    print(f"wrote {args.markdown}" + (f" and {args.csv}" if args.csv else ""))
    return 0


def run_tune_command(args: argparse.Namespace) -> int:
    _check_dtypes(args.dtypes)
    _need_cuda("tune")

    from kernels import auto

    from . import autotune, timing

    def timer(fn) -> float:
        return timing.benchmark(fn, "back_to_back_flushed", warmup=5).median_us

    if args.rows and not args.n:
        raise CLIError("--rows needs --n (without --n the bench's shapes are tuned)")
    records, seconds = autotune.tune(args.dtypes, args.n, timer, args.rows,
                                     lambda shape: print(autotune.describe(shape), flush=True))
    table = autotune.make_table(records, seconds, "python -m profiling " + " ".join(sys.argv[1:]))
    path = autotune.save_table(table, Path(args.save_to) if args.save_to else None)
    auto.clear_choices()
    print(f"tuning took {table['tuning_seconds']:.0f} s; wrote {path} ({len(table['entries'])} entries)")
    return 0
