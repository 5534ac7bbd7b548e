"""`bench` (auto vs torch and the peer backends, % of copy bandwidth, docs/benchmarks.md) and `tune` (make this
GPU's auto table)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from blockscope.profiling.cli import CLIError, check_writable_file, n_list, rows_list, str_list

DTYPES = ("fp16", "bf16", "fp32")


def register(subparsers: argparse._SubParsersAction) -> None:
    bench = subparsers.add_parser(
        "bench",
        help="auto vs torch.softmax and peers per shape, %% of copy bandwidth",
        description="Time torch.softmax, `auto` and the peer backends (inductor, liger, "
        "quack: those installed) side by side on the default (R=4096), large (~512 MB) "
        "and off-grid shape sets; print per shape torch us, auto's variant and config, its "
        "us, speedup, %% of the copy bandwidth measured in this run, and auto vs each peer.",
    )
    bench.add_argument("--dtypes", type=str_list, default=list(DTYPES), help="comma list of fp16,bf16,fp32")
    bench.add_argument(
        "--sets",
        type=str_list,
        default=["default", "large"],
        help="comma list of default,large,offgrid (default: default,large)",
    )
    bench.add_argument(
        "--peers",
        type=str_list,
        help="comma list of inductor,liger,quack (default: those available here; 'none' for none)",
    )
    bench.add_argument(
        "--methods",
        type=str_list,
        default=["back_to_back_flushed"],
        help="comma list of back_to_back_flushed,cuda_graph,per_call_events",
    )
    bench.add_argument(
        "--directions",
        type=str_list,
        default=["forward"],
        help="comma list of forward,backward,forward_backward (default: forward): backward times dx "
        "from a saved y and dy, forward_backward one training step through autograd",
    )
    bench.add_argument("--markdown", default="docs/benchmarks.md", help="where to write the table (markdown)")
    bench.add_argument("--csv", help="also write the table as CSV")
    bench.add_argument(
        "--proton",
        action="store_true",
        help="after timing, a Proton tree profile of torch and auto per forward shape in "
        "<csv or markdown stem>_proton/<run id>.hatchet",
    )
    scopes = bench.add_argument_group(
        "scope breakdown (--proton-scopes)",
        "Instead of the timing table: per config of --variants x --dtypes x --n, one launch of the kernel's "
        "instrumented copy under Proton's instrumentation backend (after a warm-up launch); cycles per warp in "
        "load / local / publish / exchange / store (docs/results-schema.md, Proton scope breakdowns). Writes "
        "<csv or markdown stem>_proton/<run id>_scopes/<config>.json and prints each breakdown.",
    )
    scopes.add_argument(
        "--proton-scopes",
        action="store_true",
        help="time the scopes marked in splitrow, staged and cluster instead of the bench table",
    )
    scopes.add_argument(
        "--variants",
        type=str_list,
        help="with --proton-scopes: comma list of splitrow,staged,cluster (default: all three)",
    )
    scopes.add_argument("--n", type=n_list, help="with --proton-scopes: comma list of N (default: 65536,262144)")
    scopes.add_argument(
        "--rows", type=rows_list, help="with --proton-scopes: comma list of R per N (default: ~32 MB of input)"
    )
    scopes.add_argument(
        "--no-scope-warmup",
        action="store_true",
        help="with --proton-scopes: measure the first launch (one Proton session per config, no warm-up session)",
    )
    bench.set_defaults(handler=run_bench_command)

    tune = subparsers.add_parser(
        "tune",
        help="autotune `auto` on this GPU and save its table",
        description="Measure variant x num_warps x tile x rows-per-program x stages per "
        "shape (back-to-back, L2 flushed) and save the fastest per (dtype, N, R) as this "
        "GPU's tuning table, read by `auto`.",
    )
    tune.add_argument("--dtypes", type=str_list, default=list(DTYPES), help="comma list of fp16,bf16,fp32")
    tune.add_argument(
        "--n",
        type=n_list,
        help="comma list of N (default: the bench's shapes: the sweep's N at "
        "R=4096, the ~16 MB mid tier of small N and the ~512 MB large set)",
    )
    tune.add_argument(
        "--rows", type=rows_list, help="comma list of R for --n (default: 4096, ~16 MB of input for small N, ~512 MB)"
    )
    tune.add_argument(
        "--save-to", help="directory for the table (default: the user cache, $BLOCKSCOPE_CACHE_DIR/autotune)"
    )
    tune.set_defaults(handler=run_tune_command)


def _need_cuda(command: str) -> None:
    import torch

    if not torch.cuda.is_available():
        raise CLIError(
            f"{command} needs a CUDA GPU and none is available here; the bundled H200 results "
            "(data/) and `python -m profiling inspect` work without one"
        )


def _check_dtypes(dtypes: list[str]) -> None:
    bad = [d for d in dtypes if d not in DTYPES]
    if bad:
        raise CLIError(f"unknown dtype(s) {', '.join(bad)}; allowed: {', '.join(DTYPES)}")


SCOPE_N = (65536, 262144)


def run_scopes_command(args: argparse.Namespace) -> int:
    """bench --proton-scopes: one scope breakdown per (variant, dtype, N, R), printed and written beside the
    --csv or --markdown path; 1 when no config could be profiled."""
    from blockscope.profiling.measure.proton_scopes import VARIANTS

    variants = args.variants or list(VARIANTS)
    bad = [v for v in variants if v not in VARIANTS]
    if bad:
        raise CLIError(f"no scope markers in variant(s) {', '.join(bad)}; allowed: {', '.join(VARIANTS)}")
    n_values = args.n or list(SCOPE_N)
    rows = args.rows or [None]
    if len(rows) not in (1, len(n_values)):
        raise CLIError(f"--rows has {len(rows)} values for {len(n_values)} N; allowed: one R, or one per N")
    beside = Path(args.csv) if args.csv else Path(args.markdown)
    check_writable_file(str(beside), "--csv" if args.csv else "--markdown")
    _need_cuda("bench --proton-scopes")
    from blockscope.profiling.measure.env import new_run_id
    from blockscope.profiling.measure.proton_scopes import ScopesError, config_name, profile_scopes
    from blockscope.profiling.results.sidecars import proton_dir_for
    from blockscope.profiling.views.scopes import ScopeTraceError, format_breakdown, scope_breakdown, scopes_dir

    folder = scopes_dir(proton_dir_for(beside), new_run_id())
    done = 0
    for variant in variants:
        for dtype in args.dtypes:
            for i, n_cols in enumerate(n_values):
                r = rows[i] if len(rows) > 1 else rows[0]
                label = config_name(variant, dtype, n_cols, r or 0).removesuffix("-R0")
                try:
                    path = profile_scopes(variant, dtype, n_cols, folder, n_rows=r, warmup=not args.no_scope_warmup)
                    table = scope_breakdown(path, path.name)
                except (ValueError, ScopesError, ScopeTraceError) as error:
                    sys.stderr.write(f"{label}: not profiled: {str(error).splitlines()[0] if str(error) else error}\n")
                    continue
                except Exception as error:  # a launch or compile failure of this config: the others still run
                    first = str(error).strip().splitlines()[0][:300] if str(error).strip() else repr(error)
                    sys.stderr.write(f"{label}: failed: {first}\n")
                    continue
                done += 1
                print(f"\n{path.stem}  ({path})")
                print(format_breakdown(table))
    print(f"\nwrote {done} scope trace(s) to {folder}" if done else "no scope trace written")
    return 0 if done else 1


def run_bench_command(args: argparse.Namespace) -> int:
    _check_dtypes(args.dtypes)
    if args.proton_scopes:
        return run_scopes_command(args)
    if args.variants or args.n or args.rows or args.no_scope_warmup:
        raise CLIError(
            "--variants, --n, --rows and --no-scope-warmup go with --proton-scopes; the bench table has its own "
            "shape sets"
        )
    from blockscope.profiling.measure.bench import SETS

    bad = [s for s in args.sets if s not in SETS]
    if bad:
        raise CLIError(f"unknown shape set(s) {', '.join(bad)}; allowed: {', '.join(SETS)}")
    from blockscope.profiling.measure.bench import PEERS
    from blockscope.profiling.measure.timing import TIMING_METHODS

    bad = [m for m in args.methods if m not in TIMING_METHODS]
    if bad or not args.methods:
        raise CLIError(f"unknown method(s) {', '.join(bad) or '(none)'}; allowed: {', '.join(TIMING_METHODS)}")
    from blockscope.profiling.measure.directions import DIRECTIONS

    bad = [d for d in args.directions if d not in DIRECTIONS]
    if bad or not args.directions:
        raise CLIError(f"unknown direction(s) {', '.join(bad) or '(none)'}; allowed: {', '.join(DIRECTIONS)}")
    asked = [] if args.peers == ["none"] else args.peers
    bad = [p for p in asked or () if p not in PEERS]
    if bad:
        raise CLIError(f"unknown peer(s) {', '.join(bad)}; allowed: {', '.join(PEERS)} or none")
    check_writable_file(args.markdown, "--markdown")
    if args.csv:
        check_writable_file(args.csv, "--csv")
    _need_cuda("bench")
    from blockscope.profiling.measure.backends import get_backend
    from blockscope.profiling.measure.bench import peer_summary, run_bench, summary, write_outputs

    if asked is None:
        peers = [p for p in PEERS if get_backend(p).available() is None]
        skipped = {p: get_backend(p).available() for p in PEERS if p not in peers}
        for peer, reason in skipped.items():
            sys.stderr.write(f"peer {peer} left out: {reason}\n")
    else:
        peers = asked

    def progress(done: int, total: int, job: tuple) -> None:
        sys.stderr.write(f"\r[{done}/{total}] {job}        ")

    table, env = run_bench(args.dtypes, args.sets, args.methods, peers, progress=progress, directions=args.directions)
    sys.stderr.write("\n")
    print(
        f"{env['gpu_name']}  torch {env['torch_version']}  triton {env['triton_version']}  "
        f"copy {env['copy_gbps']:.0f} GB/s"
    )
    print(
        f"{'method':20} {'direction':16} {'set':8} {'dtype':5} {'R':>8} {'N':>8} {'torch us':>9} {'auto':28} "
        f"{'auto us':>9} {'speedup':>7} {'%copy':>6}" + "".join(f" {'vs ' + p:>12}" for p in peers)
    )
    for r in table.to_dict("records"):
        choice = f"{r['auto_variant']} {r['auto_tunables']}"
        ratios = "".join(
            f" {r[f'auto_vs_{p}']:>11.2f}x" if r[f"{p}_us"] == r[f"{p}_us"] else f" {'-':>12}" for p in peers
        )
        print(
            f"{r['method']:20} {r['direction']:16} {r['set']:8} {r['dtype']:5} {r['n_rows']:>8} {r['n_cols']:>8} "
            f"{r['torch_us']:>9.1f} {choice[:28]:28} {r['auto_us']:>9.1f} {r['speedup']:>7.2f} "
            f"{100 * r['auto_copy_fraction']:>5.0f}%" + ratios
        )
    info = summary(table[(table["method"] == args.methods[0]) & (table["direction"] == args.directions[0])])
    print(
        f"geomean speedup: default {info['geomean_speedup_default']:.2f}x, "
        f"large {info['geomean_speedup_large']:.2f}x; slower than torch on {len(info['losses_to_torch'])} "
        f"shapes ({len(info['losses_beyond_spread'])} beyond the p20-p80 spread); under target on "
        f"{len(info['missed_targets'])} shapes; errors on {len(info['errors'])} (first method's and direction's "
        "rows)"
    )
    for r in peer_summary(table).itertuples():
        print(
            f"{r.method} {r.direction}: auto vs {r.peer}: geomean {r.geomean_auto_speedup:.2f}x over {r.shapes} "
            f"shapes, worst {r.min_auto_speedup:.2f}x ({r.worst_shape}), {r.below_0_95} below 0.95; {r.peer} "
            f"unsupported on {r.unsupported}, wrong on {r.wrong}, failed on {r.failed}"
        )
    command = "python -m profiling bench " + " ".join(sys.argv[2:] if sys.argv[1:2] == ["bench"] else [])
    write_outputs(table, env, command.strip(), Path(args.markdown), Path(args.csv) if args.csv else None)
    print(f"wrote {args.markdown}" + (f" and {args.csv}" if args.csv else ""))
    if args.proton:
        from blockscope.profiling.measure.bench import proton_calls
        from blockscope.profiling.measure.proton import ProtonError, profile_configs, proton_dir_for

        beside = Path(args.csv) if args.csv else Path(args.markdown)
        try:
            written = profile_configs(proton_calls(table), proton_dir_for(beside) / str(env.get("run_id") or "bench"))
            print(f"Proton profile: {written}")
        except ProtonError as error:
            sys.stderr.write(f"Proton profile not written: {error}\n")
    return 0


def run_tune_command(args: argparse.Namespace) -> int:
    _check_dtypes(args.dtypes)
    _need_cuda("tune")

    from blockscope.kernels import auto
    from blockscope.profiling.measure import autotune, timing

    def timer(fn) -> float:
        return timing.benchmark(fn, "back_to_back_flushed", warmup=5).median_us

    if args.rows and not args.n:
        raise CLIError("--rows needs --n (without --n the bench's shapes are tuned)")
    records, seconds = autotune.tune(
        args.dtypes, args.n, timer, args.rows, lambda shape: print(autotune.describe(shape), flush=True)
    )
    table = autotune.make_table(records, seconds, "python -m profiling " + " ".join(sys.argv[1:]))
    path = autotune.save_table(table, Path(args.save_to) if args.save_to else None)
    auto.clear_choices()
    print(f"tuning took {table['tuning_seconds']:.0f} s; wrote {path} ({len(table['entries'])} entries)")
    return 0
