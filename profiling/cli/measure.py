"""`seed` (the source text's experiment, three timing methods), `sweep` (results table) and `drift` (repeat run
vs first run) commands."""

from __future__ import annotations

import argparse
import contextlib
import math
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from blockscope.profiling.cli import CLIError, check_writable_file, int_list, n_list, positive_int, rows_list, str_list

NUM_WARPS_ALLOWED = (1, 2, 4, 8, 16, 32)


def register(subparsers: argparse._SubParsersAction) -> None:
    seed = subparsers.add_parser(
        "seed",
        help="the seed experiment: [4096,1000] fp16, teaching kernel vs torch",
        description="Run the source text's experiment (torch.manual_seed(223), [4096, 1000] "
        "fp16) and print its lines, plus the medians under all three timing methods.",
    )
    seed.add_argument("--rounds", type=positive_int, default=100, help="timed calls per method (default 100)")
    seed.add_argument("--warmup", type=_non_negative_int, default=25, help="warmup calls (default 25)")
    seed.add_argument(
        "--chrome-trace", metavar="FILE", help="also write the traced Triton call as a Chrome trace (open in Perfetto)"
    )
    seed.set_defaults(handler=run_seed)

    sweep = subparsers.add_parser(
        "sweep",
        help="time variants x dtypes x N x num_warps into a results file",
        description="Sweep variants x dtypes x N x R x num_warps x tunables, one row per "
        "(config, timing method); resumes from --out if it exists (rows of this GPU and "
        "torch/Triton versions; transient errors are retried). Ctrl-C, SIGTERM and SIGHUP "
        "save the rows measured so far; one sweep per --out at a time (lock file).",
    )
    sweep.add_argument(
        "--op",
        default="softmax",
        metavar="OPS",
        help="what to time: softmax (default: plain row softmax) or a comma list of masked_softmax, ragged_softmax "
        "(the fused ops: cases x dtypes x L for masked_softmax at B=2, H=16, x backends; rows tagged with op and "
        "case; takes --variants (the op's backends), --dtypes, --n (masked_softmax's L), --methods, --reps, "
        "--warmup, --max-minutes, --retry-errors)",
    )
    sweep.add_argument(
        "--variants",
        type=str_list,
        help="comma list of backends: torch, inductor, liger, quack "
        "and the Triton variants (default: torch, the peers available here, every Triton variant); with --op "
        "masked_softmax: blockscope, eager, inductor, sdpa_math_softmax; ragged_softmax: blockscope, nested, "
        "pad_unpad, segment_reduce",
    )
    sweep.add_argument("--dtypes", type=str_list, help="comma list of fp16,bf16,fp32 (default all)")
    sweep.add_argument(
        "--n",
        type=n_list,
        help="comma list of N (default: powers of two 128..262144 with +-1 neighbours and mid points)",
    )
    sweep.add_argument("--rows", type=rows_list, help="comma list of R (default 4096)")
    sweep.add_argument(
        "--num-warps", type=int_list, help=f"comma list from {NUM_WARPS_ALLOWED} (default: each variant's own)"
    )
    sweep.add_argument(
        "--tunable",
        action="append",
        default=[],
        metavar="NAME=V1,V2",
        help="another tunable axis, e.g. tile=1024,4096 (repeatable)",
    )
    sweep.add_argument(
        "--methods", type=str_list, help="comma list (default: per_call_events,back_to_back_flushed,cuda_graph)"
    )
    sweep.add_argument(
        "--directions",
        type=str_list,
        help="comma list of forward,backward,forward_backward "
        "(default: forward): backward times dx from a saved y and dy, forward_backward one training "
        "step (forward + autograd backward); dx is checked against float64 first",
    )
    sweep.add_argument(
        "--reps",
        type=positive_int,
        help="timed reps per method (default: adaptive, 10-1000 reps "
        "until the median's 95%% CI is within 1%%, or the method's time budget)",
    )
    sweep.add_argument(
        "--warmup",
        type=_non_negative_int,
        default=25,
        help="warmup calls before a config's first method (default 25, cut short after 15 ms; its later methods "
        "follow at once on the same input and warm up with at most 5)",
    )
    sweep.add_argument(
        "--no-prune",
        action="store_true",
        help="sample every config in full (default: prune - stop sampling a config once its median's 95%% CI lies "
        "over 10%% above the best config's of the same shape, dtype, method and backend group (the Blockscope "
        "variants together, torch and each peer alone); its rows keep the samples taken, with pruned=True; "
        "adaptive reps only, not with --reps)",
    )
    sweep.add_argument("--max-minutes", type=_positive_float, help="stop cleanly after this long (resume later)")
    sweep.add_argument("--no-trace", action="store_true", help="skip the torch.profiler kernel-name trace")
    sweep.add_argument(
        "--retry-errors",
        action="store_true",
        help="measure every error row of --out again "
        "(default: only transient ones, e.g. CUDA out of memory or driver errors)",
    )
    sweep.add_argument(
        "--compile-workers",
        type=_non_negative_int,
        help="worker processes that compile the "
        "kernels ahead of timing (default: min(16, CPU cores); 0: compile in-process while sweeping)",
    )
    sweep.add_argument(
        "--trace-config",
        action="append",
        default=None,
        metavar="VARIANT:DTYPE:N",
        help="keep a Chrome trace (torch.profiler) of this config in <out stem>_traces/ with an "
        "index.json (repeatable; default: a few of the seed's shape and wide rows that the sweep runs)",
    )
    sweep.add_argument(
        "--compare-with",
        metavar="OLD",
        help="after the sweep, print the per-config median drift "
        "against this earlier results file (configs over 20 us; goal within 3%%)",
    )
    sweep.add_argument("--out", required=True, metavar="FILE", help="results .parquet or .csv (resumed if present)")
    sweep.add_argument(
        "--shard",
        metavar="I/N",
        help="run only shard I of N: configs whose index mod N is I "
        "(e.g. $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT)",
    )
    sweep.add_argument(
        "--gpus",
        metavar="all|0,1",
        help="one worker process per GPU (CUDA_VISIBLE_DEVICES, a shard each) writing <out stem>.shardIofN files, "
        "merged into --out",
    )
    sweep.add_argument(
        "--ray",
        nargs="?",
        const="auto",
        metavar="ADDRESS",
        help="run the shards as Ray tasks (num_gpus=1 each) on an existing cluster (default address: auto; "
        "'local' starts a local instance; host:port is probed for 5 s); part files must be on storage every node "
        "reaches",
    )
    sweep.add_argument("--ray-shards", type=positive_int, help="shards for --ray (default: the cluster's GPUs)")
    sweep.add_argument(
        "--proton",
        action="store_true",
        help="after timing, profile the configs that ran with Proton (triton.profiler) into "
        "<out stem>_proton/<run id>.hatchet (shown on the Kernel evidence page)",
    )
    sweep.add_argument("--run-id", help=argparse.SUPPRESS)  # workers of --gpus/--ray share the parent's run id
    sweep.set_defaults(handler=run_sweep_command)

    merge = subparsers.add_parser(
        "merge",
        help="merge the part files of a sharded sweep into one results file",
        description="Stack results files of sweep --shard I/N (refusing a config measured in two parts) in the "
        "canonical row order; the merge of all shards holds the same rows as the unsharded sweep.",
    )
    merge.add_argument("parts", nargs="+", metavar="PART", help="results files of the shards")
    merge.add_argument("--out", required=True, metavar="FILE", help="merged results .parquet or .csv")
    merge.set_defaults(handler=run_merge_command)

    drift = subparsers.add_parser(
        "drift",
        help="per-config median drift between two results files (a repeat run)",
        description="Pair the configs timed in both files and print second / first - 1 "
        "of their medians, for configs whose first median is at least --min-us.",
    )
    drift.add_argument("first", metavar="FIRST", help="results file of the first run")
    drift.add_argument("second", metavar="SECOND", help="results file of the repeat run")
    drift.add_argument(
        "--min-us",
        type=_positive_float,
        default=20.0,
        help="leave out configs faster than this in the first run (us, default 20)",
    )
    drift.add_argument("--limit", type=_positive_float, default=0.03, help="drift counted as within (default 0.03)")
    drift.add_argument("--methods", type=str_list, help="comma list of timing methods (default all)")
    drift.add_argument("--out", metavar="FILE", help="also write the per-config table (.csv or .parquet)")
    drift.add_argument(
        "--force",
        action="store_true",
        help="compare runs from different GPUs (name or UUID) or torch/Triton versions anyway (the output says FORCED)",
    )
    drift.set_defaults(handler=run_drift_command)


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer; allowed: an integer >= 0") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative; allowed: an integer >= 0")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; allowed: a positive number") from None
    if not value > 0 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text} is not positive; allowed: a positive number")
    return value


def require_cuda(command: str) -> None:
    import torch

    if not torch.cuda.is_available():
        raise CLIError(
            f"{command} needs a CUDA GPU and this machine has none (torch.cuda.is_available() is False); "
            "load a results file in the dashboard instead"
        )


def run_seed(args: argparse.Namespace) -> int:
    """The seed text's script, lines in its format, timed by profiling.measure.timing (+ the other two methods)."""
    require_cuda("seed")
    import torch

    with torch.inference_mode():
        for line in seed_report(rounds=args.rounds, warmup=args.warmup, chrome_trace=args.chrome_trace):
            print(line)
    return 0


def seed_report(
    *,
    n_rows: int = 4096,
    n_cols: int = 1000,
    device: Any = "cuda",
    clock: Any = None,
    tracer: Any = None,
    rounds: int = 100,
    warmup: int = 25,
    graph_calls: int = 10,
    chrome_trace: str | None = None,
) -> list[str]:
    """The seed experiment's output lines (torch.manual_seed(223), [n_rows, n_cols] fp16, teaching kernel).

    The seed's lines first (its median line is per_call_events, the seed's method), then one line per method.
    `clock` / `tracer` default to CUDA events and torch.profiler; tests inject fakes and a small shape."""
    import platform

    import torch
    import triton

    from blockscope.kernels import softmax_teaching
    from blockscope.kernels.teaching import plan
    from blockscope.profiling.measure.timing import TIMING_METHODS, CudaClock, benchmark, first_call_seconds
    from blockscope.profiling.measure.trace import kernel_names, trace_kernels

    torch.manual_seed(223)
    device = torch.device(device)
    clock = clock if clock is not None else CudaClock(device)
    tracer = tracer if tracer is not None else kernel_names
    x = torch.randn(n_rows, n_cols, device=device, dtype=torch.float16)
    reference = torch.softmax(x, dim=-1)
    outputs: list[Any] = []
    triton_first_s = first_call_seconds(lambda: outputs.append(softmax_teaching(x)), clock)
    actual = outputs.pop()
    torch.testing.assert_close(actual, reference, rtol=2e-3, atol=2e-3)
    torch.testing.assert_close(actual.float().sum(-1), torch.ones(n_rows, device=device), rtol=2e-3, atol=2e-3)
    torch_fn = lambda: torch.softmax(x, dim=-1)  # noqa: E731
    triton_fn = lambda: softmax_teaching(x)  # noqa: E731
    medians = {}
    for method in TIMING_METHODS:
        medians[method] = tuple(
            benchmark(
                fn, method, reps=rounds, warmup=warmup, clock=clock, first_call_s=math.nan, graph_calls=graph_calls
            ).median_us
            for fn in (torch_fn, triton_fn)
        )
    names = tracer(triton_fn)  # after all timing: the profiler never precedes a timed call
    if chrome_trace:
        trace_kernels(triton_fn, export_path=chrome_trace)
    block_size = plan(n_rows, n_cols, torch.float16).tile_width
    if device.type == "cuda":
        name, capability = torch.cuda.get_device_name(device), torch.cuda.get_device_capability(device)
        device_line = f"device={name} capability={capability}"
    else:
        device_line = f"device={device} capability=none"
    torch_us, triton_us = medians["per_call_events"]
    lines = [
        f"python={platform.python_version()} torch={torch.__version__} triton={triton.__version__}",
        device_line,
        f"X={tuple(x.shape)} dtype={x.dtype} layout=contiguous row_stride={x.stride(0)}",
        f"grid=({n_rows},) BLOCK_SIZE={block_size} masked_lanes_per_program={block_size - n_cols}",
        f"max_abs_diff={(actual - reference).abs().max():.3e}",
        f"row_sum_max_error={(actual.float().sum(-1) - 1).abs().max():.3e}",
        f"torch_softmax_median_us={torch_us:.3f} triton_softmax_median_us={triton_us:.3f}",
        f"triton_profiler_cuda_kernels={names}",
    ]
    lines += [
        f"method={method} torch_softmax_median_us={t:.3f} triton_softmax_median_us={s:.3f}"
        for method, (t, s) in medians.items()
    ]
    lines.append(f"triton_first_call_s={triton_first_s:.3f} (JIT compile + launch, cold)")
    if chrome_trace:
        lines.append(f"chrome_trace={chrome_trace}")
    return lines


def parse_tunable_axes(items: list[str]) -> dict[str, list[int]]:
    """['tile=1024,4096'] -> {'tile': [1024, 4096]}; CLIError names the expected form."""
    axes: dict[str, list[int]] = {}
    for item in items:
        name, sep, values = item.partition("=")
        name = name.strip().replace("-", "_")
        try:
            parsed = int_list(values) if sep else []
        except argparse.ArgumentTypeError as error:
            raise CLIError(f"--tunable {item!r}: {error}") from None
        if not name or not parsed:
            raise CLIError(f"--tunable {item!r} is malformed; allowed: NAME=V1,V2 (e.g. tile=1024,4096)")
        axes[name] = parsed
    return axes


def sweep_configs_from_args(args: argparse.Namespace) -> list:
    """Validated configs for `sweep` (CLIError for bad names/values)."""
    from blockscope.kernels import DTYPE_NAMES, get_variant
    from blockscope.profiling.measure import sweep
    from blockscope.profiling.measure.backends import backend_names

    allowed = backend_names()  # every name a sweep takes: the peers and the Triton variants
    variants = args.variants if args.variants is not None else list(sweep.default_variants())
    directions = args.directions
    for name, values in (
        ("variants", variants),
        ("dtypes", args.dtypes),
        ("n", args.n),
        ("rows", args.rows),
        ("num-warps", args.num_warps),
        ("methods", args.methods),
        ("directions", directions),
    ):
        if values is not None and not values:
            raise CLIError(f"--{name} is empty; allowed: a comma-separated list")
    unknown = [v for v in variants if v not in allowed]
    if unknown:
        raise CLIError(f"unknown variant(s) {', '.join(unknown)}; allowed: {', '.join(allowed)}")
    dtypes = args.dtypes or list(sweep.DEFAULT_DTYPES)
    bad = [d for d in dtypes if d not in DTYPE_NAMES.values()]
    if bad:
        raise CLIError(f"unknown dtype(s) {', '.join(bad)}; allowed: {', '.join(DTYPE_NAMES.values())}")
    from blockscope.profiling.measure.timing import TIMING_METHODS

    bad = [m for m in args.methods or () if m not in TIMING_METHODS]
    if bad:
        raise CLIError(f"unknown method(s) {', '.join(bad)}; allowed: {', '.join(TIMING_METHODS)}")
    from blockscope.profiling.measure.directions import DIRECTIONS

    bad = [d for d in directions or () if d not in DIRECTIONS]
    if bad:
        raise CLIError(f"unknown direction(s) {', '.join(bad)}; allowed: {', '.join(DIRECTIONS)}")
    bad = [str(w) for w in args.num_warps or () if w not in NUM_WARPS_ALLOWED]
    if bad:
        raise CLIError(f"--num-warps {', '.join(bad)} not allowed; allowed: {', '.join(map(str, NUM_WARPS_ALLOWED))}")
    axes = parse_tunable_axes(args.tunable)
    known = {name for v in variants if not sweep.is_peer(v) for name in get_variant(v).tunables}
    for name in axes:
        if name == "num_warps":
            raise CLIError("--tunable num_warps=...: use --num-warps")
        if name not in known:
            raise CLIError(f"--tunable {name}: no selected variant takes it; allowed: {', '.join(sorted(known))}")
    n_values = args.n or sweep.default_n_values()
    too_wide = [n for n in n_values if not any(n <= sweep.max_n(v) for v in variants)]
    if too_wide:
        raise CLIError(
            f"N={too_wide[0]} is over every selected variant's limit; allowed: N <= "
            f"{max(sweep.max_n(v) for v in variants)}"
        )
    configs = sweep.build_configs(
        variants,
        dtypes,
        n_values,
        args.rows or [sweep.DEFAULT_ROWS],
        args.num_warps,
        axes,
        directions,
        scale_tiny_rows=not args.rows,  # rows not given: tiny N move >= sweep.TINY_MIN_BYTES (sweep_rows)
        default_selection=args.variants is None,  # variants not named: each where its sweep_where rule holds
    )
    if not configs:
        raise CLIError("the selection gives no configs; allowed: N within the variants' limits")
    return configs


def _progress_reporter(stream: Any = None, every_s: float = 5.0) -> tuple[Any, Any]:
    """(callback, close) for progress: tqdm when installed, else one line per config on stderr.

    `callback.status` takes run_sweep's SweepStatus: a line per phase start, then compile and trace progress at most
    every `every_s` seconds (and at the end of each); while timing, the per-config text carries its time left."""
    stream = stream or sys.stderr
    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    from blockscope.profiling.measure.sweep import ProgressClock

    bar: dict[str, Any] = {}
    clock = ProgressClock()
    latest: dict[str, Any] = {"phase": None, "printed": -math.inf}

    def write(line: str) -> None:
        if "bar" in bar and tqdm is not None:
            tqdm.write(line, file=stream)
        else:
            stream.write(line + "\n")
            stream.flush()

    def status(update: Any) -> None:
        latest["status"] = update
        now = time.monotonic()
        new_phase = update.phase != latest["phase"]
        latest["phase"] = update.phase
        if update.phase == "timing" and not new_phase:
            return  # the per-config callback shows it
        changed = latest.get("last") != (update.phase, update.done, update.total)
        if new_phase or (changed and update.done >= update.total) or now - latest["printed"] >= every_s:
            latest["printed"], latest["last"] = now, (update.phase, update.done, update.total)
            write(f"[{update.text()}]")

    def callback(done: int, total: int, config: Any) -> None:
        update = latest.get("status")
        if update is not None and update.phase == "timing" and update.done == done:
            text = update.text()
        else:
            text = clock.text(done, total)
        if tqdm is not None:
            if "bar" not in bar:
                bar["bar"] = tqdm(  # no tqdm time left: the postfix has the one measured per phase
                    total=total,
                    unit="config",
                    file=stream,
                    bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}, {rate_fmt}{postfix}]",
                )
            bar["bar"].set_postfix_str(f"{config.label()}; {text}", refresh=False)
            bar["bar"].update(done - bar["bar"].n)
        else:
            stream.write(f"[{text}] {config.label()}\n")
            stream.flush()

    def close() -> None:
        if "bar" in bar:
            bar["bar"].close()

    callback.start = clock.start  # type: ignore[attr-defined]  # run_sweep's timing_started
    callback.status = status  # type: ignore[attr-defined]  # run_sweep's status
    return callback, close


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP during a sweep: raised like Ctrl-C's KeyboardInterrupt, so run_sweep saves on the way out."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def save_on_signals(signals: tuple[int, ...] = (signal.SIGTERM, signal.SIGHUP)) -> Iterator[Callable[[], int | None]]:
    """Turn the first of `signals` into Stopped (a KeyboardInterrupt) for the block, so the sweep saves the rows done
    so far as it does for Ctrl-C; later ones arrive while it saves and are ignored. Yields a function returning the
    signal received (None before one): Python runs a handler wherever the main thread is, and an exception raised
    inside a weakref callback or `__del__` is printed and dropped ("Exception ignored in ..."), so the caller also
    polls it between configs (seen on the H200: a SIGTERM that landed in torch._dynamo's weakref callback left the
    sweep running until it was killed). Previous handlers come back on exit (main thread only: elsewhere the block
    runs unchanged and the function always returns None)."""
    import threading

    fired: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return

    def handler(signum: int, frame: Any) -> None:
        if not fired:
            fired.append(signum)
            raise Stopped(signum)

    previous = {signum: signal.signal(signum, handler) for signum in signals}
    try:
        yield lambda: fired[0] if fired else None
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def sweep_cancel(signalled: Callable[[], int | None], deadline: float | None) -> Callable[[], bool]:
    """A sweep's `cancel` poll: True once a signal arrived whose Stopped was dropped (`signalled`, from
    save_on_signals), or once time.monotonic() is past `deadline` (--max-minutes; None: no deadline)."""

    def cancel() -> bool:
        return signalled() is not None or (deadline is not None and time.monotonic() > deadline)

    return cancel


def check_out_path(text: str) -> Path:
    """--out as a Path: CLIError for a directory, a FIFO or device (also at its lock file) or a suffix other than
    .parquet/.csv."""
    out = Path(text)
    check_writable_file(text)
    if out.is_dir() or text.endswith(("/", "\\")):
        raise CLIError(
            f"--out {text} is a directory; allowed: a results file path ending in .parquet or .csv "
            f"(e.g. {out / 'sweep.parquet'})"
        )
    if out.suffix.lower() not in (".parquet", ".csv"):
        raise CLIError(f"--out {text}: unsupported suffix {out.suffix!r}; allowed: .parquet or .csv")
    check_writable_file(str(out.with_name(out.name + ".lock")), "--out's lock file")
    return out


# sweep options the fused ops' sweep does not take (flag, attribute, value meaning "not given")
OP_SWEEP_REFUSED: tuple[tuple[str, str, Any], ...] = (
    ("--rows", "rows", None),
    ("--num-warps", "num_warps", None),
    ("--tunable", "tunable", []),
    ("--directions", "directions", None),
    ("--no-prune", "no_prune", False),
    ("--compile-workers", "compile_workers", None),
    ("--trace-config", "trace_config", None),
    ("--compare-with", "compare_with", None),
    ("--shard", "shard", None),
    ("--gpus", "gpus", None),
    ("--ray", "ray", None),
    ("--ray-shards", "ray_shards", None),
    ("--proton", "proton", False),
)
OP_SWEEP_OPTIONS = "--variants, --dtypes, --n, --methods, --reps, --warmup, --max-minutes, --retry-errors, --no-trace"


def parse_op_option(text: str) -> list[str]:
    """--op: ['softmax'] or the fused ops of a comma list; CLIError naming the allowed values."""
    from blockscope.profiling.measure.op_sweep import parse_ops
    from blockscope.profiling.results import SOFTMAX

    if text.strip() == SOFTMAX:
        return [SOFTMAX]
    try:
        return parse_ops(text)
    except ValueError as error:
        raise CLIError(f"--op {text}: {error}") from None


def op_configs_from_args(args: argparse.Namespace, ops: list[str]) -> list:
    """Validated fused-op configs for `sweep --op ...` (CLIError for options it does not take and bad values)."""
    from blockscope.kernels import DTYPE_NAMES
    from blockscope.profiling.measure import op_sweep
    from blockscope.profiling.measure.backends import fused

    shown = ",".join(ops)
    for flag, name, unset in OP_SWEEP_REFUSED:
        if getattr(args, name, unset) != unset:
            raise CLIError(f"--op {shown} does not take {flag}; allowed with --op {shown}: {OP_SWEEP_OPTIONS}")
    given = (("variants", args.variants), ("dtypes", args.dtypes), ("n", args.n), ("methods", args.methods))
    for name, values in given:
        if values is not None and not values:
            raise CLIError(f"--{name} is empty; allowed: a comma-separated list")
    if args.n is not None and fused.MASKED not in ops:
        raise CLIError(f"--op {shown} does not take --n; allowed: --n (L) with --op {fused.MASKED}")
    bad = [d for d in args.dtypes or () if d not in DTYPE_NAMES.values()]
    if bad:
        raise CLIError(f"unknown dtype(s) {', '.join(bad)}; allowed: {', '.join(DTYPE_NAMES.values())}")
    from blockscope.profiling.measure.timing import TIMING_METHODS

    bad = [m for m in args.methods or () if m not in TIMING_METHODS]
    if bad:
        raise CLIError(f"unknown method(s) {', '.join(bad)}; allowed: {', '.join(TIMING_METHODS)}")
    try:
        return op_sweep.build_op_configs(ops, args.dtypes, args.n, args.variants)
    except ValueError as error:
        raise CLIError(str(error)) from None


def run_op_sweep_command(args: argparse.Namespace, out: Path, ops: list[str]) -> int:
    """`sweep --op masked_softmax,ragged_softmax`: the fused ops' sweep (profiling.measure.op_sweep) into --out."""
    from blockscope.profiling.measure.op_sweep import run_op_sweep
    from blockscope.profiling.measure.sweep import ResultsLockError, SweepSaveError
    from blockscope.profiling.measure.timing import TIMING_METHODS
    from blockscope.profiling.results import ResultsError, load_results

    configs = op_configs_from_args(args, ops)
    if out.exists():
        try:
            load_results(out)
        except ResultsError as error:
            raise CLIError(f"--out exists and cannot be resumed: {error}") from None
    require_cuda("sweep")
    methods = args.methods or list(TIMING_METHODS)
    sys.stderr.write(f"{len(configs)} {'/'.join(ops)} configs x {len(methods)} methods\n")
    deadline = time.monotonic() + args.max_minutes * 60 if args.max_minutes else None
    out.parent.mkdir(parents=True, exist_ok=True)

    def progress(done: int, total: int, config: Any) -> None:
        sys.stderr.write(f"[{done}/{total}] {config.label()}\n")

    try:
        with save_on_signals() as signalled:
            table = run_op_sweep(
                configs,
                methods=methods,
                out=out,
                reps=args.reps,
                warmup=args.warmup,
                progress=progress,
                cancel=sweep_cancel(signalled, deadline),
                retry_errors=args.retry_errors,
                env=_worker_env(args.run_id),
            )
    except Stopped as stop:
        sys.stderr.write(f"stopped by {stop}: the rows measured so far are saved in {out} (rerun to resume)\n")
        return 128 + stop.signum
    except (ResultsLockError, SweepSaveError) as error:
        raise CLIError(" ".join(str(error).split())) from None
    if signalled() is not None:
        name = signal.Signals(signalled()).name
        sys.stderr.write(f"stopped by {name}: the rows measured so far are saved in {out} (rerun to resume)\n")
        return 128 + signalled()
    info = table.attrs.get("sweep", {})
    state = "stopped at --max-minutes (rerun to resume)" if info.get("cancelled") else "done"
    print(
        f"{state}: {info.get('done', 0)} {'/'.join(ops)} configs run, {info.get('skipped_existing', 0)} already in "
        f"{out}, {info.get('errors', 0)} error rows; {len(table)} rows in {out} ({info.get('seconds', 0):.0f} s)"
    )
    return 0


def run_sweep_command(args: argparse.Namespace) -> int:
    from blockscope.profiling.measure.sweep import ResultsLockError, format_duration, predicted_seconds, run_sweep
    from blockscope.profiling.results import SOFTMAX, ResultsError, load_results

    out = check_out_path(args.out)
    ops = parse_op_option(getattr(args, "op", SOFTMAX))
    if ops != [SOFTMAX]:
        return run_op_sweep_command(args, out, ops)
    configs = sweep_configs_from_args(args)
    if sum(x is not None for x in (args.shard, args.gpus, args.ray)) > 1:
        raise CLIError("--shard, --gpus and --ray: choose one; allowed: one way to split the sweep")
    if args.shard is not None:
        from blockscope.profiling.measure.shard import parse_shard, shard

        try:
            index, count = parse_shard(args.shard)
        except ValueError as error:
            raise CLIError(f"--shard: {error}") from None
        configs = shard(configs, index, count)
        if not configs:
            raise CLIError(f"--shard {args.shard}: no configs in this shard ({count} shards); allowed: fewer shards")
    if args.gpus is not None:
        return _sweep_on_gpus(args, out)
    if args.ray is not None:
        return _sweep_on_ray(args, out)
    if out.exists():
        try:
            load_results(out)
        except ResultsError as error:
            raise CLIError(f"--out exists and cannot be resumed: {error}") from None
    require_cuda("sweep")
    from blockscope.profiling.measure.timing import TIMING_METHODS

    methods = args.methods or list(TIMING_METHODS)
    estimate = predicted_seconds(configs, methods, compile_workers=args.compile_workers != 0, trace=not args.no_trace)
    sys.stderr.write(
        f"{len(configs)} configs x {len(methods)} methods, first estimate {format_duration(estimate)} (less when "
        "resuming; the time left shown as it runs is measured per phase)\n"
    )
    old_table = None
    if args.compare_with:
        try:
            old_table = load_results(args.compare_with)
        except ResultsError as error:
            raise CLIError(f"--compare-with: {error}") from None
    from blockscope.profiling.measure import sweep as sweep_module
    from blockscope.profiling.measure.precompile import default_workers

    try:
        trace_configs = (
            []
            if args.no_trace
            else sweep_module.pick_trace_configs(
                configs, args.trace_config or sweep_module.DEFAULT_TRACE_CONFIGS, strict=args.trace_config is not None
            )
        )
    except ValueError as error:
        raise CLIError(f"--trace-config: {error}") from None
    workers = default_workers() if args.compile_workers is None else args.compile_workers
    deadline = time.monotonic() + args.max_minutes * 60 if args.max_minutes else None
    callback, close = _progress_reporter()
    out.parent.mkdir(parents=True, exist_ok=True)
    signalled: Callable[[], int | None] = lambda: None
    try:
        with save_on_signals() as signalled:
            table = run_sweep(
                configs,
                methods=methods,
                out=out,
                reps=args.reps,
                warmup=args.warmup,
                trace=not args.no_trace,
                progress=callback,
                retry_errors=args.retry_errors,
                cancel=sweep_cancel(signalled, deadline),
                compile_workers=workers,
                timing_started=callback.start,
                trace_configs=trace_configs,
                on_warning=lambda line: sys.stderr.write(f"warning: {line}\n"),
                env=_worker_env(args.run_id),
                proton=args.proton,
                prune=not args.no_prune,
                status=callback.status,
            )
    except Stopped as stop:
        close()
        sys.stderr.write(f"stopped by {stop}: the rows measured so far are saved in {out} (rerun to resume)\n")
        return 128 + stop.signum
    except (ResultsLockError, sweep_module.SweepSaveError) as error:
        raise CLIError(" ".join(str(error).split())) from None
    finally:
        close()
    if signalled() is not None:  # the handler's Stopped was dropped; the sweep stopped at the next config
        name = signal.Signals(signalled()).name
        sys.stderr.write(f"stopped by {name}: the rows measured so far are saved in {out} (rerun to resume)\n")
        return 128 + signalled()
    info = table.attrs.get("sweep", {})
    state = "stopped at --max-minutes (rerun to resume)" if info.get("cancelled") else "done"
    print(
        f"{state}: {info.get('done', 0)} configs run, {info.get('skipped_existing', 0)} already in {out}, "
        f"{info.get('errors', 0)} error rows; {len(table)} rows in {out} ({info.get('seconds', 0):.0f} s)"
    )
    if info.get("saved_to"):
        print(f"{out}'s disk was full: the rows are in {info['saved_to']} (move it to {out} and rerun to resume)")
    for line in sweep_report_lines(info):
        print(line)
    if old_table is not None:
        from blockscope.profiling.results.drift import DriftMismatch, drift_lines, repeat_drift

        try:
            for line in drift_lines(repeat_drift(old_table, table)):
                print(line)
        except DriftMismatch as error:  # the sweep is saved; only the comparison is refused
            sys.stderr.write(f"--compare-with: {error}\n")
    return 0


def _worker_env(run_id: str | None) -> dict[str, Any] | None:
    """The fingerprint with the parent's run id for a --gpus/--ray worker; None (run_sweep's own) otherwise."""
    if not run_id:
        return None
    from blockscope.profiling.measure.env import fingerprint

    return fingerprint(run_id=run_id)


def _merge_into(parts: list[Path], out: Path) -> int:
    from blockscope.profiling.measure.shard import merge_parts
    from blockscope.profiling.results import ResultsError, save_results

    try:
        table = merge_parts(parts)
    except (ValueError, ResultsError) as error:
        raise CLIError(str(error).splitlines()[0]) from None
    save_results(table, out)
    gpus = table["gpu_uuid"].dropna().nunique() if "gpu_uuid" in table.columns else 0
    print(f"merged {len(parts)} parts into {out}: {len(table)} rows, {gpus} GPU(s) by gpu_uuid")
    return 0


def _sweep_on_gpus(args: argparse.Namespace, out: Path) -> int:
    """--gpus: one `sweep --shard j/N` worker per GPU, then the merge of their part files into `out`."""
    import subprocess

    require_cuda("sweep --gpus")
    import torch

    from blockscope.profiling.measure.env import new_run_id
    from blockscope.profiling.measure.shard import gpu_worker_commands, parse_gpus

    try:
        gpus = parse_gpus(args.gpus, torch.cuda.device_count())
    except ValueError as error:
        raise CLIError(str(error)) from None
    workers = gpu_worker_commands(args.argv, gpus, out, args.run_id or new_run_id())
    sys.stderr.write(f"{len(workers)} workers on GPUs {','.join(map(str, gpus))}; parts beside {out}\n")
    running = [subprocess.Popen(command, env=env) for command, env, _ in workers]
    failed = [(gpu, p.wait()) for gpu, p in zip(gpus, running, strict=True)]
    failed = [(gpu, status) for gpu, status in failed if status != 0]
    if failed:
        gpu, status = failed[0]
        raise CLIError(f"the worker on GPU {gpu} exited {status} ({len(failed)} failed); parts kept, rerun to resume")
    return _merge_into([part for _, _, part in workers], out)


def _sweep_on_ray(args: argparse.Namespace, out: Path) -> int:
    """--ray [ADDRESS]: the shards as Ray tasks with one GPU each, then the merge into `out`."""
    from blockscope.profiling.measure.env import new_run_id
    from blockscope.profiling.measure.shard import run_on_ray

    try:
        parts = run_on_ray(args.ray, args.argv, args.ray_shards, out, args.run_id or new_run_id())
    except (ImportError, ConnectionError, ValueError, RuntimeError) as error:
        raise CLIError(str(error).splitlines()[0]) from None
    return _merge_into(parts, out)


def run_merge_command(args: argparse.Namespace) -> int:
    """`merge PART... --out FILE`."""
    out = check_out_path(args.out)
    return _merge_into([Path(p) for p in args.parts], out)


def sweep_report_lines(info: dict[str, Any]) -> list[str]:
    """Where a sweep's wall time went (phase seconds), its compile warm-up and the traces it kept."""
    lines = []
    if info.get("proton"):
        lines.append(f"Proton profile: {info['proton']}")
    phases = info.get("phase_s") or {}
    if phases:
        lines.append("wall time by phase: " + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in phases.items()))
    calls = info.get("first_calls") or {}
    if len(calls) > 1 or "first_call (not warmed)" in calls:
        lines.append("first calls: " + ", ".join(f"{count} {name}" for name, count in calls.items()))
    slowest = info.get("slowest_first_calls") or []
    if slowest:
        lines.append("slowest first calls: " + "; ".join(f"{seconds:.2f} s {label}" for seconds, label in slowest))
    pre = info.get("precompile") or {}
    if pre:
        lines.append(
            f"compile warm-up: {pre.get('compiled', 0)} kernels in {pre.get('workers', 0)} workers, "
            f"{pre.get('failed', 0)} left to in-process JIT, {pre.get('seconds', 0):.1f} s"
            + (f" ({pre['broken']})" if pre.get("broken") else "")
        )
        if pre.get("no_facts"):
            lines.append(f"  {pre['no_facts']} compiled without compile facts (read in-process)")
        for reason, count in pre.get("failed_reasons") or ():
            lines.append(f"  left to in-process JIT: {count} x {reason}")
    if info.get("traces"):
        lines.append(f"Chrome traces kept: {', '.join(info['traces'])}")
    if info.get("pruned_rows"):
        lines.append(
            f"pruned: {info['pruned_rows']} rows stopped sampling early, clearly slower than their group's best "
            "(pruned=True; --no-prune samples every config in full)"
        )
    return lines


def run_drift_command(args: argparse.Namespace) -> int:
    """`drift FIRST SECOND`: the per-config median drift table's summary (and the table with --out)."""
    from blockscope.profiling.results import ResultsError, load_results
    from blockscope.profiling.results.drift import DriftMismatch, check_same_gpu, drift_lines, repeat_drift

    tables = []
    if args.out:
        check_writable_file(args.out)
    for label, path in (("FIRST", args.first), ("SECOND", args.second)):
        try:
            tables.append(load_results(path))
        except ResultsError as error:
            raise CLIError(f"{label}: {error}") from None
    try:
        result = repeat_drift(
            *tables, min_us=args.min_us, methods=tuple(args.methods) if args.methods else None, force=args.force
        )
    except DriftMismatch as error:
        raise CLIError(str(error)) from None
    note = check_same_gpu(*tables, force=True) if args.force else None
    if note:
        sys.stderr.write(f"warning: {note} (--force)\n")
    for line in drift_lines(result, args.limit, args.min_us):
        print(line)
    if args.out:
        out = Path(args.out)
        if out.suffix.lower() not in (".csv", ".parquet"):
            raise CLIError(f"--out {args.out}: unsupported suffix {out.suffix!r}; allowed: .csv or .parquet")
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            result.to_csv(out, index=False) if out.suffix.lower() == ".csv" else result.to_parquet(out, index=False)
        except OSError as error:
            raise CLIError(
                f"--out {args.out}: cannot write ({error.strerror or error}); allowed: a path in a writable folder"
            ) from None
    return 0
