"""`warm`: compile auto's tuned kernels ahead of time for a GPU arch, with no GPU (profiling/measure/warm.py)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from blockscope.profiling.cli import CLIError, positive_int

if TYPE_CHECKING:
    from blockscope.profiling.measure.warm import RecordReport


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "warm",
        help="compile auto's tuned kernels ahead of time for a GPU arch and plan their launch records (no GPU needed)",
        description="Compile every kernel auto's shipped tuning table launches (forward, and the backward kernel "
        "of each shape) for --arch with Triton's offline compiler into the kernel store: one folder per kernel "
        "specialization with its cubin and metadata, and a manifest (Triton version, arch, kernel source hashes). "
        "GPU launches then load these instead of JIT-compiling; anything else is JIT-compiled as before. A second "
        "run finds them cached. Then, where the table's GPU has this arch, it plans a launch record for every "
        "table shape (no GPU needed): a fresh process's first auto call at those shapes imports no Triton. Store: "
        "--out DIR, else $BLOCKSCOPE_KERNEL_CACHE, else ${XDG_CACHE_HOME:-~/.cache}/blockscope/kernels; kernels "
        "under <triton version>/<arch>, records under launches/<gpu>.",
    )
    parser.add_argument("--arch", required=True, help="GPU arch to compile for, such as sm_90")
    parser.add_argument("--out", default=None, help="store root (default: $BLOCKSCOPE_KERNEL_CACHE or ~/.cache/...)")
    parser.add_argument("--workers", type=positive_int, default=None, help="compile processes (default: CPU cores)")
    parser.add_argument("--no-backward", action="store_true", help="forward kernels only")
    parser.add_argument(
        "--record",
        action="store_true",
        help="on a GPU of --arch: then call auto once at every shape of its tuning table, recording each launch "
        "it makes (over the planned records; kernels/launches.py)",
    )
    parser.set_defaults(handler=run_warm_command)


def run_warm_command(args: argparse.Namespace) -> int:
    from blockscope.kernels import aot
    from blockscope.profiling.measure import warm

    try:
        aot.parse_arch(args.arch)
        if args.record:
            check_record_gpu(args.arch)
        items, skipped = warm.table_items(backward=not args.no_backward)
        print(f"kernels: {len(items)} to have for {args.arch} (Triton {aot.triton_version()})")
        report = warm.warm(args.arch, args.out, items=items, workers=args.workers)
    except ValueError as error:
        raise CLIError(str(error)) from None
    for label, why in sorted(skipped.items()):
        print(f"skipped {label}: {why}")
    for label, why in sorted(report.failed.items()):
        print(f"failed {label}: {why}")
    print(report.summary())
    if report.failed:
        return 1
    try:
        planned = warm.plan_records(args.arch, args.out)
    except ValueError as error:
        print(f"launch records: none planned ({error})")
    else:
        print_records(planned)
    if args.record:
        record_and_report(args.out)
    return 0


def print_records(report: RecordReport) -> None:
    """What a plan_records or record_launches report says: each shape left out, then the summary."""
    for label, why in sorted(report.missing.items()):
        print(f"not {report.how} {label}: {why}")
    print(report.summary())


def record_and_report(out: str | None) -> None:
    """`--record`: record every table shape's launch into the store under `out` (default: the kernel store root)
    and print what was not recorded and the summary; CLIError for what record_launches refuses."""
    from blockscope.profiling.measure import warm

    try:
        recorded = warm.record_launches(out)
    except ValueError as error:
        raise CLIError(str(error)) from None
    print_records(recorded)


def check_record_gpu(arch: str) -> None:
    """--record runs every launch once: a CUDA GPU of --arch must be here (CLIError naming what is allowed)."""
    import torch

    from blockscope.kernels import aot

    if not torch.cuda.is_available():
        raise CLIError("--record needs a CUDA GPU (it runs each launch once); allowed: warm without --record")
    major, minor = torch.cuda.get_device_capability()
    if aot.parse_arch(arch) != 10 * major + minor:
        raise CLIError(f"--record on this sm_{major}{minor} GPU; allowed: --arch sm_{major}{minor}")
