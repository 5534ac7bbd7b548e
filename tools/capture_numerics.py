"""Capture the numerics dataset on a GPU: every variant + torch (+ exp probes, + peer backends when available)
x fp16/bf16/fp32 x the sweep's default N x every input distribution, R=64; then who beats torch.softmax.

  python3 -m tools.capture_numerics --out $OUT/numerics_h200.parquet       # run (resumes), <= --max-minutes
  python3 -m tools.capture_numerics --out $OUT/numerics_h200.parquet       # again until it prints 'complete'
  python3 -m tools.capture_numerics --out FILE --summary-only              # the verdict from a file, no GPU
  python3 -m tools.capture_numerics --dry-run                              # job count, no GPU needed

Rows follow the results schema (method 'none', numerics columns filled) through
profiling.inspect.numerics.run_numerics, the function behind `python -m profiling numerics`. N over a variant's
limit is left out; a failing config is an error row. The file is rewritten after each (dtype, N) block and
at the end, and a rerun skips what it holds, so a call cut at --max-minutes resumes where it stopped. The
summary compares each variant config-by-config with torch.softmax on the same GPU and inputs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

DTYPES = ("fp16", "bf16", "fp32")
ROWS = 64
MARGIN_S = 30.0  # stop this long before --max-minutes: the block in flight still has to finish and save


def softmax_names(include_probes: bool = True) -> list[str]:
    """torch, every registered variant that runs here (the Gluon ones need a GPU), the exp probes, and (on a GPU)
    the peer backends available there."""
    from blockscope import kernels
    from blockscope.profiling.inspect.numerics.probe import PROBES
    from blockscope.profiling.measure.backends import PEERS, get_backend

    runnable = [name for name, spec in kernels.VARIANTS.items() if spec.runs_here()]
    for name in sorted(set(kernels.VARIANTS) - set(runnable)):
        print(f"variant {name} left out: a Gluon kernel, which runs on a CUDA GPU only", flush=True)
    names = ["torch", *runnable, *(PROBES if include_probes else ())]
    import torch

    for name in PEERS[1:]:
        if not torch.cuda.is_available():
            print(f"peer backend {name} left out: the capture measures GPU kernels, and no GPU is here", flush=True)
            continue
        try:
            reason = get_backend(name).available()
        except Exception as error:  # a broken peer must not stop the capture
            reason = str(error)
        if reason:
            print(f"peer backend {name} left out: {reason}", flush=True)
        else:
            names.append(name)
    return names


def done_keys(path: Path) -> set[tuple]:
    """result_key of every row already in `path` (error rows included: a rerun does not retry them)."""
    from blockscope.profiling.inspect.numerics import result_key
    from blockscope.profiling.results import load_results

    if not path.exists():
        return set()
    table = load_results(path)
    table = table[table["method"] == "none"]
    return {
        result_key(r.variant, r.dtype, r.n_rows, r.n_cols, r.numerics_input)
        for r in table.itertuples(index=False)
        if isinstance(r.numerics_input, str)
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="numerics.parquet", help="results .parquet (resumed when present)")
    parser.add_argument("--max-minutes", type=float, default=8.0, help="stop cleanly after this long (default 8)")
    parser.add_argument("--rows", type=int, default=ROWS, help=f"R per input (default {ROWS})")
    parser.add_argument("--no-probes", action="store_true", help="leave out probe_exp / probe_exp2")
    parser.add_argument("--n", help="comma list of N instead of the sweep's default set (e.g. a quick check)")
    parser.add_argument(
        "--device",
        default="cuda",
        choices=("cuda", "cpu"),
        help="cuda (default); cpu: the Triton interpreter, small --n only (to check the script)",
    )
    parser.add_argument("--summary-only", action="store_true", help="print the verdict of --out and stop")
    parser.add_argument("--dry-run", action="store_true", help="print the job count and stop")
    args = parser.parse_args(argv)
    out = Path(args.out)
    if out.suffix.lower() != ".parquet":
        parser.error(f"--out {args.out}: allowed: a .parquet file path")
    if args.device == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported

    from blockscope.profiling.inspect.numerics import INPUTS, max_n, summary_lines
    from blockscope.profiling.measure.sweep import default_n_values
    from blockscope.profiling.results import concat_results, load_results, save_results

    if args.summary_only:
        for line in summary_lines(load_results(out)):
            print(line)
        return 0
    try:
        n_values = [int(v) for v in args.n.split(",") if v.strip()] if args.n else default_n_values()
    except ValueError:
        parser.error(f"--n {args.n!r}: allowed: a comma list of positive integers")
    if not n_values or min(n_values) < 1:
        parser.error(f"--n {args.n!r}: allowed: a comma list of positive integers")
    names = softmax_names(not args.no_probes)
    skip = done_keys(out)
    from blockscope.profiling.inspect.numerics import result_key

    wanted = {
        result_key(name, d, args.rows, n, i)
        for d in DTYPES
        for n in n_values
        for i in INPUTS
        for name in names
        if n <= max_n(name)
    }
    jobs = len(wanted)
    left = len(wanted - skip)  # the file may hold rows of other names, N or R: they are not this call's work
    print(
        f"{len(names)} softmaxes ({', '.join(names)}) x {len(DTYPES)} dtypes x {len(n_values)} N x {len(INPUTS)} "
        f"inputs at R={args.rows}: {jobs} measurements, {len(skip)} already in {out}",
        flush=True,
    )
    if args.dry_run:
        return 0

    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print(
            "error: no CUDA GPU here; this script measures on the GPU (use --dry-run or --summary-only)",
            file=sys.stderr,
        )
        return 2
    from blockscope.profiling.inspect.numerics import results_frame, run_numerics
    from blockscope.profiling.measure.env import fingerprint

    env = fingerprint(measure_copy=False)
    started = time.monotonic()
    deadline = started + args.max_minutes * 60 - MARGIN_S
    table = load_results(out) if out.exists() else None
    measured = errors = 0
    stopped = False
    for dtype in DTYPES:
        for n in n_values:
            if time.monotonic() > deadline:
                stopped = True
                break
            results = run_numerics(
                names,
                [dtype],
                [n],
                args.rows,
                list(INPUTS),
                device=args.device,
                env=env,
                skip=skip,
                within_limits=True,
                cancel=lambda: time.monotonic() > deadline,
            )
            if not results:
                continue
            measured += len(results)
            errors += sum(1 for r in results if r.error)
            frame = results_frame(results)
            table = frame if table is None else concat_results([table, frame])
            save_results(table, out)
            elapsed = time.monotonic() - started
            print(
                f"[{elapsed:5.0f} s] {dtype} N={n}: {len(results)} measured ({measured}/{left} this call, "
                f"{errors} errors)",
                flush=True,
            )
        if stopped:
            break
    complete = wanted <= done_keys(out) if out.exists() else False
    print(
        f"{'complete' if complete else 'stopped at --max-minutes (rerun to resume)'}: {measured} measured in "
        f"{time.monotonic() - started:.0f} s, {errors} error rows; {out}",
        flush=True,
    )
    if table is not None:
        print("vs torch.softmax (same GPU, dtype, R, N, input):")
        for line in summary_lines(table):
            print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
