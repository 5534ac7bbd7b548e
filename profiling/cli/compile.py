"""`occupancy` (calculator) and `inspect` (compile facts of one config + its occupancy) commands."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

from blockscope.profiling.cli import CLIError, positive_int

MAX_SHARED_ARG = 1 << 30  # bytes; anything larger is a typo
MAX_REGS_ARG = 255
DEFAULT_TIMEOUT_S = 120.0  # an inspect compile; longer ones are killed (see --timeout)
PROGRESS_EVERY_S = 10.0  # a 'still compiling' line on stderr this often


def _bounded_int(low: int, high: int, unit: str):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer; allowed: {low} to {high} {unit}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is out of range; allowed: {low} to {high} {unit}")
        return value

    return parse


def register(subparsers: argparse._SubParsersAction) -> None:
    occupancy = subparsers.add_parser(
        "occupancy",
        help="blocks per SM from registers, warps and shared memory (no GPU needed)",
        description="Occupancy calculator (cuda_occupancy.h logic): resident programs per SM and which resource "
        "limits them.",
    )
    occupancy.add_argument(
        "--arch", default="sm_90", help="sm_80, sm_86, sm_89, sm_90, sm_100 or sm_120 (default sm_90)"
    )
    occupancy.add_argument(
        "--regs", type=_bounded_int(0, MAX_REGS_ARG, "registers/thread"), required=True, help="registers per thread"
    )
    occupancy.add_argument("--num-warps", type=_bounded_int(1, 32, "warps"), required=True, help="warps per program")
    occupancy.add_argument(
        "--shared-bytes",
        type=_bounded_int(0, MAX_SHARED_ARG, "bytes"),
        default=0,
        help="shared memory per program, bytes (default 0)",
    )
    occupancy.add_argument("--json", action="store_true", help="print JSON")
    occupancy.set_defaults(handler=run_occupancy)

    inspect = subparsers.add_parser(
        "inspect",
        help="registers, spills, shared memory and occupancy of one compiled config",
        description="Compile one variant config (live on this GPU, else offline for --arch) and report its "
        "resources and occupancy.",
    )
    inspect.add_argument("--variant", default="teaching", help="registered variant (default teaching)")
    inspect.add_argument("--n", type=positive_int, required=True, help="N, the softmax width")
    inspect.add_argument("--rows", type=positive_int, default=4096, help="R, rows (default 4096)")
    inspect.add_argument("--dtype", default="fp16", help="fp16, bf16 or fp32 (default fp16)")
    inspect.add_argument("--arch", help="target arch (default: this GPU live, else sm_90 offline)")
    inspect.add_argument("--num-warps", type=positive_int, help="warps per program (default: the variant's)")
    inspect.add_argument("--num-stages", type=positive_int, help="pipelining stages (online, persistent)")
    inspect.add_argument("--tile", type=positive_int, help="online: lanes per loop step")
    inspect.add_argument("--rows-per-program", type=positive_int, help="multirow: rows per program")
    inspect.add_argument("--chunk", type=positive_int, help="splitrow: columns per program")
    inspect.add_argument("--prefetch", type=int, choices=(0, 1), help="splitrow: 1 loads the next row ahead")
    inspect.add_argument("--json", action="store_true", help="print JSON")
    inspect.add_argument("--ptx", action="store_true", help="also print the PTX")
    inspect.add_argument("--sass", action="store_true", help="also print the SASS")
    inspect.add_argument(
        "--force",
        action="store_true",
        help="compile even a config predicted to compile for minutes (over 256 lanes per thread; refused otherwise)",
    )
    inspect.add_argument(
        "--timeout",
        type=_positive_seconds,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"give up on the compile after this long, killing it (default {DEFAULT_TIMEOUT_S:g})",
    )
    inspect.set_defaults(handler=run_inspect)


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; allowed: seconds > 0") from None
    if not value > 0 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text} is not positive; allowed: seconds > 0")
    return value


def run_occupancy(args: argparse.Namespace) -> int:
    from blockscope.profiling.inspect import occupancy

    try:
        arch = occupancy.arch_from_name(args.arch)
    except ValueError as error:
        raise CLIError(str(error)) from None
    try:
        occupancy.check_shared_bytes(arch, args.shared_bytes)  # no block could launch: an error, not 0.0%
    except ValueError as error:
        raise CLIError(f"--shared-bytes: {error}") from None
    try:
        result = occupancy.occupancy(arch, args.regs, args.num_warps, args.shared_bytes)
    except ValueError as error:
        raise CLIError(str(error)) from None
    out = {k: getattr(result, k) for k in ("arch", "blocks_per_sm", "warps_per_sm", "occupancy", "limiter", "limits")}
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"{result.arch}: {args.regs} regs/thread, {args.num_warps} warps, {args.shared_bytes} B shared per program")
    print(_limits_table(result))
    return 0


def _limits_table(result) -> str:
    lines = [f"{'resource':<15}{'blocks/SM it allows':>20}"]
    for name, blocks in result.limits.items():
        mark = "  <- limiter" if name == result.limiter else ""
        lines.append(f"{name:<15}{blocks:>20}{mark}")
    lines.append(f"blocks/SM {result.blocks_per_sm}, warps/SM {result.warps_per_sm}, occupancy {result.occupancy:.1%}")
    return "\n".join(lines)


def predicted_problem(variant: str, n_cols: int, dtype: str, n_rows: int, tunables: dict[str, int]) -> str | None:
    """The sweep's prediction for this config (profiling.measure.sweep.predicted_compile_problem): why compiling
    it would take minutes, or None. ValueError for an invalid config (the variant's own message)."""
    from blockscope import kernels
    from blockscope.profiling.measure.sweep import DEFAULT_MAX_LANES_PER_THREAD, predicted_compile_problem

    try:
        torch_dtype = kernels.dtype_from_name(dtype)
    except TypeError as error:
        raise ValueError(str(error)) from None
    spec = kernels.get_variant(variant)
    if n_cols > spec.max_n:
        raise ValueError(f"{variant}: N={n_cols} is over this variant's limit; allowed: 1 <= N <= {spec.max_n}")
    plan = spec.plan(n_rows, n_cols, torch_dtype, **tunables)
    return predicted_compile_problem(plan, DEFAULT_MAX_LANES_PER_THREAD)


def run_inspect(args: argparse.Namespace) -> int:
    from concurrent.futures import TimeoutError as WaitTimeout

    from blockscope.profiling.inspect import compiled, occupancy

    tunables = {
        name: value
        for name, value in (
            ("num_warps", args.num_warps),
            ("num_stages", args.num_stages),
            ("tile", args.tile),
            ("rows_per_program", args.rows_per_program),
            ("chunk", args.chunk),
            ("prefetch", args.prefetch),
        )
        if value is not None
    }
    try:
        if args.arch is not None:
            occupancy.arch_from_name(args.arch)
        problem = predicted_problem(args.variant, args.n, args.dtype, args.rows, tunables)
        if problem and not args.force:  # answered before any compile: such configs take minutes
            raise CLIError(
                f"refused: {problem.removeprefix('skipped: ')}; allowed: --force to compile anyway "
                f"(killed after --timeout {args.timeout:g} s), or more --num-warps"
            )
        job = compiled.inspect_async(
            args.variant, args.n, args.dtype, arch=args.arch, n_rows=args.rows, timeout_s=args.timeout, **tunables
        )
        if not job.done():
            sys.stderr.write(f"compiling {job.label} in a worker (killed after {args.timeout:g} s)...\n")
            sys.stderr.flush()
        while True:
            try:
                info = job.result(timeout=PROGRESS_EVERY_S)
                break
            except WaitTimeout:
                sys.stderr.write(
                    f"  still compiling {job.label}: {time.monotonic() - job.started_at:.0f} s of at "
                    f"most {args.timeout:g} s\n"
                )
                sys.stderr.flush()
        result = occupancy.occupancy(info.arch, info.n_regs, info.num_warps, info.shared_bytes)
    except (ValueError, TypeError) as error:
        raise CLIError(str(error).splitlines()[0]) from None
    except compiled.CompileTimeout:
        raise CLIError(
            f"compile timed out after {args.timeout:g} s (worker killed); allowed: --timeout SECONDS to wait longer"
        ) from None
    except RuntimeError as error:
        raise CLIError(f"compile failed: {str(error).strip().splitlines()[-1][:300]}") from None
    out = {
        **info.to_dict(),
        "blocks_per_sm": result.blocks_per_sm,
        "warps_per_sm": result.warps_per_sm,
        "occupancy": result.occupancy,
        "limiter": result.limiter,
        "limits": result.limits,
    }
    if args.json:
        if args.ptx:
            out["ptx"] = info.ptx
        if args.sass:
            out["sass"] = info.sass
        print(json.dumps(out, indent=2))
        return 0
    print(
        f"{info.variant} N={info.n_cols} {info.dtype} on {info.arch} ({info.source}"
        f"{', cached' if info.cached else ''}, {info.compile_seconds:.2f} s): "
        f"num_warps={info.num_warps} num_stages={info.num_stages} tunables={json.dumps(info.tunables)}"
    )
    print(
        f"registers/thread {info.n_regs}, spill stores {info.spill_store_bytes} B, spill loads "
        f"{info.spill_load_bytes} B, stack {info.stack_bytes} B, shared/program {info.shared_bytes} B"
    )
    print(_limits_table(result))
    for flag, label, text in ((args.ptx, "PTX", info.ptx), (args.sass, "SASS", info.sass)):
        if flag:
            sys.stdout.write(f"\n--- {label} ---\n{text}\n")
    return 0
