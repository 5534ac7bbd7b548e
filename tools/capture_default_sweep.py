"""The default sweep twice on the GPU machine: wall time of each (goal: <= 120 s including JIT) and repeat drift.

  OUT=./out python3 -m tools.capture_default_sweep            # cold caches in $OUT, then a repeat run
  python3 -m tools.capture_default_sweep --out /tmp/o -- --dtypes fp16   # extra args go to both sweeps

Run 1 starts with empty compile caches of its own ($OUT/caches/: TRITON_CACHE_DIR, TORCHINDUCTOR_CACHE_DIR,
BLOCKSCOPE_CACHE_DIR), so its wall time includes every JIT compile; run 2 repeats the same sweep into a second
file (caches warm) and compares its medians with run 1 (`--compare-with`: configs over 20 us, goal within 3 %).
Each run is `python -m profiling sweep` in its own process (every backend available here, three dtypes, the
default N set, three timing methods, the default Chrome traces); logs go to $OUT/run<k>.log, the summary to
stdout and $OUT/capture_default_sweep.log.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOAL_S = 120.0


def sweep_command(out_file: Path, extra: list[str], compare_with: Path | None = None) -> list[str]:
    """The `python -m profiling sweep` command line of one run."""
    command = [sys.executable, "-m", "profiling", "sweep", "--out", str(out_file), *extra]
    if compare_with is not None:
        command += ["--compare-with", str(compare_with)]
    return command


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "./out"), help="output folder (default $OUT or ./out)")
    parser.add_argument(
        "--keep-caches",
        action="store_true",
        help="reuse $OUT/caches instead of emptying it first (run 1 then no longer includes cold JIT)",
    )
    parser.add_argument("extra", nargs="*", help="arguments after -- are passed to both sweeps")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    caches = out / "caches"
    if caches.exists() and not args.keep_caches:
        shutil.rmtree(caches)
    env = dict(
        os.environ,
        TRITON_CACHE_DIR=str(caches / "triton"),
        TORCHINDUCTOR_CACHE_DIR=str(caches / "inductor"),
        BLOCKSCOPE_CACHE_DIR=str(caches / "blockscope"),
        PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
    )  # keep peers
    summary: list[str] = []
    files = [out / "default_run1.parquet", out / "default_run2.parquet"]
    status = 0
    for index, path in enumerate(files, start=1):
        if path.exists():
            path.unlink()  # a fresh sweep each time: the wall time must not be a resume
        command = sweep_command(path, args.extra, files[0] if index == 2 else None)
        start = time.perf_counter()
        with open(out / f"run{index}.log", "w") as log:
            result = subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=log, text=True)
        seconds = time.perf_counter() - start
        (out / f"run{index}.stdout").write_text(result.stdout)
        verdict = "within" if seconds <= GOAL_S else "OVER"
        summary.append(
            f"run {index}: {seconds:.1f} s wall ({verdict} the {GOAL_S:.0f} s goal; "
            f"{'cold caches' if index == 1 and not args.keep_caches else 'warm caches'}), exit "
            f"{result.returncode}"
        )
        summary += [f"  {line}" for line in result.stdout.splitlines()]
        if result.returncode:
            status = result.returncode
            summary.append(f"  (see {out / f'run{index}.log'})")
            break
    text = "\n".join(summary)
    print(text)
    (out / "capture_default_sweep.log").write_text(text + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
