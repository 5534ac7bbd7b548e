"""`coldstart`: per backend and shape, what a fresh process pays before its first softmax.

The measurement lives in profiling/measure/coldstart.py; this module parses and checks the arguments."""

from __future__ import annotations

import argparse
from pathlib import Path

from blockscope.profiling.cli import CLIError, positive_int, str_list

DEFAULT_SHAPES = "4096x1024"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "coldstart",
        help="fresh-process import, CUDA init, first and second call per backend, cold and warm caches",
        description="Per backend and shape, in fresh processes: import time beyond torch, CUDA init, first call and "
        "second call wall time (synchronized), with private empty compiler caches ('cold') and the same caches "
        "again ('warm'); your own caches are never touched. Rows: results schema, method cold_start (median, "
        "p20, p80 over --reps). Needs a CUDA GPU unless --device cpu (torch and Blockscope on the Triton CPU "
        "interpreter). Exit status 1 when every child of a backend, shape and cache state failed (its row says "
        "why).",
    )
    parser.add_argument(
        "--backends",
        type=str_list,
        default=None,
        help="comma list (default torch,auto,inductor,liger,quack; on cpu torch,auto); blockscope = auto; any "
        "Blockscope variant name; peers not installed are skipped with a note",
    )
    parser.add_argument("--shapes", default=DEFAULT_SHAPES, help=f"comma list of RxN (default {DEFAULT_SHAPES})")
    parser.add_argument("--dtype", default=None, help="fp16, bf16 or fp32 (default fp16; fp32 on cpu)")
    parser.add_argument("--reps", type=positive_int, default=3, help="fresh processes per cache state (default 3)")
    parser.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    parser.add_argument(
        "--timeout", type=positive_int, default=600, help="seconds one child process may run (default 600)"
    )
    parser.add_argument("--out", type=Path, default=None, help="save the rows (.parquet or .csv)")
    parser.add_argument(
        "--store",
        type=Path,
        default=None,
        help="an ahead-of-time kernel store (python -m profiling warm --out DIR): Blockscope backends also run a "
        "'store' child with empty caches and BLOCKSCOPE_KERNEL_CACHE=DIR",
    )
    parser.set_defaults(handler=run_coldstart_command)


def run_coldstart_command(args: argparse.Namespace) -> int:
    from blockscope.profiling.measure import coldstart
    from blockscope.profiling.results import ResultsError, save_results

    if args.device not in coldstart.DEVICES:
        raise CLIError(f"unknown device {args.device!r}; allowed: {', '.join(coldstart.DEVICES)}")
    dtype = args.dtype or ("fp32" if args.device == "cpu" else "fp16")
    if dtype not in coldstart.DTYPES:
        raise CLIError(f"unknown dtype {dtype!r}; allowed: {', '.join(coldstart.DTYPES)}")
    try:
        shapes = coldstart.parse_shapes(args.shapes)
    except ValueError as error:
        raise CLIError(str(error)) from None
    if args.out is not None and args.out.suffix.lower() not in (".parquet", ".csv"):
        raise CLIError(f"--out {args.out}: unsupported suffix {args.out.suffix!r}; allowed: .parquet, .csv")
    default = coldstart.CPU_DEFAULT_BACKENDS if args.device == "cpu" else coldstart.DEFAULT_BACKENDS
    try:
        backends = coldstart.resolve_backends(args.backends if args.backends is not None else default, args.device)
    except ValueError as error:
        raise CLIError(str(error)) from None
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise CLIError(
                "coldstart needs a CUDA GPU and none is available here; allowed: --device cpu (torch and Blockscope "
                "on the Triton CPU interpreter)"
            )
    if args.store is not None and not args.store.is_dir():
        raise CLIError(
            f"--store {args.store}: no such folder; allowed: a kernel store made by `python -m profiling warm`"
        )
    print(
        f"coldstart: {', '.join(backends)} x {', '.join(f'{r}x{n}' for r, n in shapes)} {dtype} on {args.device}, "
        f"{args.reps} rep(s) x cold + warm{' + store' if args.store else ''}, one fresh process each",
        flush=True,
    )
    df = coldstart.measure(
        backends,
        shapes,
        dtype=dtype,
        reps=args.reps,
        device=args.device,
        timeout_s=args.timeout,
        progress=lambda line: print(f"  {line}", flush=True),
        store=args.store,
    )
    for line in coldstart.summary_lines(df):
        print(line)
    if args.out is not None:
        try:
            path = save_results(df, args.out)
        except (ResultsError, OSError) as error:
            raise CLIError(f"cannot save {args.out}: {error}") from None
        print(f"saved {len(df)} rows to {path}")
    failed = df["error"].fillna("").str.startswith("cold start failed")
    return 1 if failed.any() else 0
