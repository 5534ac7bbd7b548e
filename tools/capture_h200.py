"""Capture the H200 dataset in three device calls of <= 8 minutes each, then merge.

  python3 -m tools.capture_h200.py --part 1 --out $OUT     # default N range, every variant + torch, fp16/bf16/fp32
  python3 -m tools.capture_h200.py --part 2 --out $OUT     # num_warps 1..32 at N = 256 .. 65536 (5 points), fp16
  python3 -m tools.capture_h200.py --part 3 --out $OUT     # finish part 1 if it was cut short, then other tunables
  python3 -m tools.capture_h200.py --merge --out $OUT      # part*.parquet -> data/h200_sweep.parquet
  python3 -m tools.capture_h200.py --part 1 --dry-run      # config counts and estimated minutes, no GPU needed

Each part writes $OUT/part<k>.parquet (resumable: rerunning a part skips what is there) and $OUT/part<k>.log,
stops cleanly before --max-minutes (default 7.5) and prints its estimated wall time up front. All three
timing methods (per_call_events, back_to_back_flushed, cuda_graph) at R=4096 through profiling.measure.sweep.run_sweep.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

from blockscope.profiling.measure import sweep
from blockscope.profiling.measure.timing import TIMING_METHODS
from blockscope.profiling.results import concat_results, load_results, save_results, validate

ROOT = Path(__file__).resolve().parents[1]

TRITON_VARIANTS = ("teaching", "multirow", "online", "persistent", "splitrow")
PART2_N = (256, 1024, 4096, 16384, 65536)
PART2_WARPS = (1, 2, 4, 8, 16, 32)
MARGIN_S = 25.0  # stop this long before --max-minutes: the config in flight still has to finish
COMPILE_S = 1.0  # assumed Triton compile per distinct kernel (cold cache) for the estimate


def part1_configs() -> list[sweep.Config]:
    """Default N range x every variant (default tunables) + torch x fp16/bf16/fp32."""
    return sweep.build_configs(None, ("fp16", "bf16", "fp32"), sweep.default_n_values(), sweep.DEFAULT_ROWS)


def part2_configs() -> list[sweep.Config]:
    """num_warps dimension for each Triton variant at a few N (fp16), torch alongside."""
    dtypes = ("fp16",)
    return sweep.build_configs(
        TRITON_VARIANTS, dtypes, PART2_N, sweep.DEFAULT_ROWS, num_warps=PART2_WARPS
    ) + sweep.build_configs(("torch",), dtypes, PART2_N, sweep.DEFAULT_ROWS)


def part3_configs() -> list[sweep.Config]:
    """Tunables other than num_warps, fp16, each variant's default num_warps."""
    rows, fp16 = sweep.DEFAULT_ROWS, ("fp16",)
    return (
        sweep.build_configs(
            ("multirow",), fp16, (128, 512, 2048), rows, tunable_grid={"rows_per_program": (1, 4, 16, 64, 256)}
        )
        + sweep.build_configs(
            ("online",),
            fp16,
            (16384, 65536, 262144),
            rows,
            tunable_grid={"tile": (512, 2048, 8192, 32768), "num_stages": (1, 2)},
        )
        + sweep.build_configs(("persistent",), fp16, (1024, 16384), rows, tunable_grid={"num_stages": (1, 2, 3)})
        + sweep.build_configs(
            ("splitrow",), fp16, (65536, 262144), rows, tunable_grid={"chunk": (1024, 4096, 16384, 32768)}
        )
    )


PARTS: dict[int, Callable[[], list[sweep.Config]]] = {1: part1_configs, 2: part2_configs, 3: part3_configs}


def plan_part(part: int, out: Path) -> list[tuple[Path, list[sweep.Config]]]:
    """(output file, configs) in run order; part 3 first finishes part 1."""
    jobs = [(out / f"part{part}.parquet", PARTS[part]())]
    if part == 3:
        jobs.insert(0, (out / "part1.parquet", part1_configs()))
    return jobs


def pending(configs: list[sweep.Config], path: Path) -> list[sweep.Config]:
    """Configs not yet complete (all methods) in `path`."""
    if not path.exists():
        return configs
    done = sweep.existing_keys(load_results(path))
    left = []
    for config in configs:
        try:
            plan = sweep.resolve_plan(config)
        except Exception:
            plan = None
        tunables = sweep.resolved_tunables_json(config, plan)
        if any(
            sweep.row_key(config.variant, config.dtype, config.n_rows, config.n_cols, tunables, m) not in done
            for m in TIMING_METHODS
        ):
            left.append(config)
    return left


def merge_parts(out: Path, merged: Path) -> None:
    """part1/2/3.parquet -> `merged`; a config measured by two parts keeps the earlier part's rows."""
    frames = {p.name: load_results(p) for p in sorted(out.glob("part[123].parquet"))}
    if not frames:
        sys.exit(f"no part*.parquet in {out}; run --part 1/2/3 first")
    table = concat_results(frames)
    key = ["variant", "dtype", "n_rows", "n_cols", "tunables", "method"]
    table = table[~table[key].astype(str).duplicated(keep="first")].drop(columns="source").reset_index(drop=True)
    validate(table)
    save_results(table, merged)
    for name, frame in frames.items():
        print(f"{name}: {len(frame)} rows, {int((frame['error'] != '').sum())} error rows")
    print(
        f"wrote {merged}: {len(table)} rows, {table['run_id'].nunique()} runs, "
        f"{int((table['error'] != '').sum())} error rows"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", type=int, choices=sorted(PARTS))
    parser.add_argument("--merge", action="store_true", help="combine part*.parquet into --merged")
    parser.add_argument("--out", default=str(ROOT / "out" / "h200"), help="directory for part files and logs")
    parser.add_argument("--merged", default=str(ROOT / "data" / "h200_sweep.parquet"))
    parser.add_argument("--max-minutes", type=float, default=7.5)
    parser.add_argument("--dry-run", action="store_true", help="print counts and the estimate, run nothing")
    parser.add_argument("--no-trace", action="store_true", help="skip the per-config torch.profiler trace")
    args = parser.parse_args(argv)
    out = Path(args.out)
    if args.merge:
        merge_parts(out, Path(args.merged))
        return 0
    if args.part is None:
        parser.error("--part 1|2|3 or --merge is required")
    started = time.monotonic()
    deadline = started + args.max_minutes * 60 - MARGIN_S
    jobs = [(path, pending(configs, path)) for path, configs in plan_part(args.part, out)]
    estimate = sum(sweep.estimate_seconds(configs, compile_s=COMPILE_S) for _, configs in jobs)
    lines = [
        f"part {args.part}: " + ", ".join(f"{path.name} {len(configs)} configs to run" for path, configs in jobs),
        f"x {len(TIMING_METHODS)} methods; estimated {estimate / 60:.1f} min (compile {COMPILE_S:g} s per "
        f"distinct kernel, cold cache); stops cleanly after {args.max_minutes:g} min (rerun to resume)",
    ]
    print("\n".join(lines), flush=True)
    if args.dry_run:
        return 0
    import torch

    if not torch.cuda.is_available():
        sys.exit("capture needs a CUDA GPU (this machine has none); --dry-run works anywhere")
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f"part{args.part}.log", "a", buffering=1) as log:

        def say(text: str) -> None:
            print(text, flush=True)
            log.write(text + "\n")

        for line in lines:
            log.write(line + "\n")
        from blockscope.profiling.measure.env import fingerprint

        env = fingerprint()
        say("env: " + " ".join(f"{k}={v}" for k, v in env.items()))
        for path, configs in jobs:
            if not configs:
                say(f"{path.name}: complete")
                continue

            def progress(done: int, total: int, config: sweep.Config, path: Path = path) -> None:
                say(f"[{path.stem} {done}/{total} {time.monotonic() - started:6.1f}s] {config.label()}")

            table = sweep.run_sweep(
                configs,
                out=path,
                env=env,
                trace=not args.no_trace,
                progress=progress,
                cancel=lambda: time.monotonic() > deadline,
            )
            info = table.attrs["sweep"]
            errors = table[table["error"] != ""]
            say(
                f"{path.name}: {info['done']} configs run in {info['seconds']:.0f} s, {len(table)} rows, "
                f"{len(errors)} error rows"
                + (" - STOPPED at the time limit: rerun to resume" if info["cancelled"] else "")
            )
            for message, count in errors["error"].str.slice(0, 140).value_counts().head(12).items():
                say(f"  error x{count}: {message}")
            if info["cancelled"]:
                break
        say(f"part {args.part} finished after {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
