"""`numerics`: ULP error of each softmax against the exact float64 answer, per dtype, N and input distribution."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

from blockscope.profiling.cli import CLIError, check_writable_file, n_list, positive_int, str_list

DEFAULT_VARIANTS = ("torch", "teaching", "online")
DEFAULT_N = (128, 1000, 1024, 4096)
DTYPES = ("fp16", "bf16", "fp32")


def register(subparsers: argparse._SubParsersAction) -> None:
    numerics = subparsers.add_parser(
        "numerics",
        help="ULP error vs the float64 softmax per variant, dtype, N and input distribution",
        description="Run each softmax on seeded inputs and compare every output element with the float64 softmax "
        "rounded to the output dtype, in ULPs of that dtype; print max/mean ULP, the fractions at 0/1/>1 ULP and "
        "the worst row-sum error, and optionally write results rows. Runs on the GPU when there is one, else on "
        "the CPU Triton interpreter (N <= 8192 there).",
    )
    numerics.add_argument(
        "--variants",
        type=str_list,
        default=list(DEFAULT_VARIANTS),
        help="comma list: torch, kernels.VARIANTS names, probe_exp, probe_exp2, peer backends "
        f"(default {','.join(DEFAULT_VARIANTS)})",
    )
    numerics.add_argument("--dtypes", type=str_list, default=list(DTYPES), help="comma list of fp16,bf16,fp32")
    numerics.add_argument(
        "--n", type=n_list, default=list(DEFAULT_N), help=f"comma list of N (default {','.join(map(str, DEFAULT_N))})"
    )
    numerics.add_argument("--rows", type=positive_int, default=64, help="rows R per input (default 64)")
    numerics.add_argument("--inputs", type=str_list, help="comma list of input distributions (default all)")
    numerics.add_argument("--seed", type=int, default=0, help="input seed (default 0)")
    numerics.add_argument(
        "--out", metavar="FILE", help="also write the results rows to a .parquet or .csv (overwritten)"
    )
    numerics.add_argument("--json", action="store_true", help="print one JSON object per measurement instead")
    numerics.set_defaults(handler=run_numerics_command)


def check_args(variants: list[str], dtypes: list[str], n_values: list[int], inputs: list[str], cuda: bool) -> None:
    """CLIError naming what is allowed for empty lists, unknown names or dtypes, and N over the CPU cap."""
    from blockscope.profiling.inspect.numerics import CPU_MAX_N, INPUTS, allowed_names

    for flag, values in (("variants", variants), ("dtypes", dtypes), ("n", n_values), ("inputs", inputs)):
        if not values:
            raise CLIError(f"--{flag} is empty; allowed: a comma-separated list")
    allowed = allowed_names()
    unknown = [v for v in variants if v not in allowed]
    if unknown:
        raise CLIError(f"unknown variant(s) {', '.join(unknown)}; allowed: {', '.join(allowed)}")
    bad = [d for d in dtypes if d not in DTYPES]
    if bad:
        raise CLIError(f"unknown dtype(s) {', '.join(bad)}; allowed: {', '.join(DTYPES)}")
    bad = [i for i in inputs if i not in INPUTS]
    if bad:
        raise CLIError(f"unknown input distribution(s) {', '.join(bad)}; allowed: {', '.join(INPUTS)}")
    too_wide = [n for n in n_values if n > CPU_MAX_N]
    if too_wide and not cuda:
        raise CLIError(
            f"N={too_wide[0]} is over the CPU interpreter's cap and there is no GPU; allowed without a "
            f"GPU: N <= {CPU_MAX_N}"
        )


def _prepare_interpreter() -> None:
    """Without CUDA, Triton must run on the CPU interpreter: set TRITON_INTERPRET=1 before triton is imported."""
    if os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes"):
        return
    if "triton" in sys.modules:
        raise CLIError(
            "no GPU, and Triton was imported without TRITON_INTERPRET=1; allowed: run with "
            "TRITON_INTERPRET=1 set (or on a CUDA GPU)"
        )
    os.environ["TRITON_INTERPRET"] = "1"


def _fmt(value: Any, spec: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    return format(value, spec)


def table_lines(results: list) -> list[str]:
    """The printed table: one line per measurement (errors spelled out)."""
    lines = [
        f"{'variant':11} {'dtype':5} {'N':>6} {'input':12} {'max ULP':>8} {'mean ULP':>9} {'%0':>7} {'%1':>7} "
        f"{'%>1':>7} {'rowsum err':>10} {'NaN mm':>6}  worst (row, col) input / vs torch"
    ]
    for result in results:
        row, s = result.row, result.summary
        head = f"{row['variant']:11} {row['dtype']:5} {row['n_cols']:>6} {row['numerics_input']:12}"
        if s is None:
            lines.append(f"{head} error: {result.error}")
            continue
        worst = f"({s.worst_row}, {s.worst_col}) x={_fmt(s.worst_input, '.4g')}" if s.ulp_max > 0 else ""
        extra = "; ".join(part for part in (worst, result.versus_torch) if part)
        lines.append(
            f"{head} {_fmt(s.ulp_max, '.0f'):>8} {_fmt(s.ulp_mean, '.4f'):>9} {100 * s.frac_0:>6.2f}% "
            f"{100 * s.frac_1:>6.2f}% {100 * s.frac_gt1:>6.2f}% {_fmt(s.rowsum_err_max, '.2e'):>10} "
            f"{s.nan_mismatches:>6}  {extra}".rstrip()
        )
    return lines


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def json_record(result: Any) -> dict[str, Any]:
    """One measurement as JSON-safe values (inf as the string 'inf', NaN as null)."""
    row = result.row
    record = {k: row.get(k) for k in ("variant", "dtype", "n_rows", "n_cols", "numerics_input", "error")}
    if result.summary is not None:
        record.update(result.summary.as_dict())
        record["versus_torch"] = result.versus_torch
    return {k: _json_value(v) for k, v in record.items()}


def run_numerics_command(args: argparse.Namespace) -> int:
    out = Path(args.out) if args.out else None
    if out is not None and out.suffix.lower() not in (".parquet", ".csv"):
        raise CLIError(f"--out {args.out}: unsupported suffix {out.suffix!r}; allowed: .parquet or .csv")
    if out is not None and out.is_dir():
        raise CLIError(f"--out {args.out} is a directory; allowed: a .parquet or .csv file path")
    if out is not None:
        check_writable_file(args.out)
    import torch

    cuda = torch.cuda.is_available()
    if not cuda:
        _prepare_interpreter()
    from blockscope.profiling.inspect.numerics import INPUTS, results_frame, run_numerics

    inputs = args.inputs if args.inputs is not None else list(INPUTS)
    check_args(args.variants, args.dtypes, args.n, inputs, cuda)
    from blockscope.profiling.measure.env import fingerprint

    env = fingerprint(measure_copy=False)
    where = env["gpu_name"] if cuda else "CPU Triton interpreter"

    def progress(done: int, total: int, label: str) -> None:
        if not args.json:
            sys.stderr.write(f"[{done}/{total}] {label}\n")

    results = run_numerics(
        args.variants,
        args.dtypes,
        args.n,
        args.rows,
        inputs,
        device="cuda" if cuda else "cpu",
        seed=args.seed,
        env=env,
        progress=progress,
    )
    if args.json:
        for result in results:
            print(json.dumps({**json_record(result), "device": where}))
    else:
        print(f"ULP error vs float64 softmax rounded to the output dtype; R={args.rows}, seed {args.seed}, on {where}")
        if not cuda and "bf16" in args.dtypes and any(v != "torch" for v in args.variants):
            from blockscope.profiling.inspect.numerics.probe import INTERPRETER_BF16_NOTE

            print(f"note: {INTERPRETER_BF16_NOTE}")
        for line in table_lines(results):
            print(line)
    if out is not None:
        from blockscope.profiling.results import save_results

        save_results(results_frame(results), out)
        if not args.json:
            print(f"wrote {len(results)} rows to {out}")
    return 1 if results and all(r.error for r in results) else 0
