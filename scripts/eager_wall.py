"""Eager-mode wall time per call (host included) of `auto` vs torch.softmax, and what the idle-stream check buys.

python3 scripts/eager_wall.py --out FILE.csv

Per shape: a plain Python loop of calls (`--calls` per round, one synchronize at the end, best of `--rounds`)
for torch.softmax, `kernels.softmax(x, variant="auto")` (the public entry, autograd wrapper included) and the
raw `auto` launcher, each with the eager check on and off (BLOCKSCOPE_AUTO_EAGER=0), plus the GPU time of `auto`
with launches queued behind a busy stream (profiling.timing back_to_back_flushed): the check must leave it on
the tuned Triton kernel. Issue 13's goal: eager wall per call within 1.1x of torch.softmax on every shape.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pandas as pd  # noqa: E402
import torch  # noqa: E402

import kernels  # noqa: E402
from kernels import auto  # noqa: E402
from profiling import timing  # noqa: E402

SHAPES = [("fp16", 64, 4096), ("fp32", 1, 1000), ("fp16", 4096, 1000), ("bf16", 65536, 96), ("fp16", 1, 128),
          ("fp32", 256, 4096), ("bf16", 1024, 2048), ("fp16", 8, 32768), ("fp16", 4096, 4096),
          ("fp32", 4096, 32768)]


def wall_us(fn, calls: int, rounds: int) -> float:
    """Best of `rounds` loops of `calls` calls from an idle stream (auto's own measure), after 20 warm-up calls."""
    for _ in range(20):
        fn()
    return min(auto.eager_wall_us(fn, calls, torch.cuda.synchronize) for _ in range(rounds))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rows = []
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    print("| dtype | R | N | torch us | auto us (check on) | auto us (check off) | raw launcher on / off | "
          "on / torch | auto GPU us, busy stream | eager pick |")
    print("|---|---:|---:|---:|---:|---:|---|---:|---:|---|")
    for dtype_name, n_rows, n_cols in SHAPES:
        x = torch.randn(n_rows, n_cols, device="cuda", dtype=kernels.dtype_from_name(dtype_name))
        result = {"dtype": dtype_name, "n_rows": n_rows, "n_cols": n_cols,
                  "torch_us": wall_us(lambda x=x: torch.softmax(x, -1), args.calls, args.rounds)}
        for label, env in (("on", "1"), ("off", "0")):
            os.environ[auto.EAGER_ENV] = env
            auto.clear_choices()
            result[f"auto_{label}_us"] = wall_us(lambda x=x: kernels.softmax(x, variant="auto"), args.calls,
                                                 args.rounds)
            result[f"raw_{label}_us"] = wall_us(lambda x=x: auto.softmax_auto(x), args.calls, args.rounds)
            if label == "on":  # what the idle-stream check picked (cleared before the 'off' run)
                key = (n_rows, n_cols, x.dtype, torch.cuda.get_device_name(x.device))
                result["eager_pick"] = "torch" if auto._EAGER.get(key) else auto.choose(*key)[0]
        os.environ[auto.EAGER_ENV] = "1"
        result["auto_gpu_busy_us"] = timing.benchmark(lambda x=x: auto.softmax_auto(x),
                                                      "back_to_back_flushed").median_us
        result["on_over_torch"] = result["auto_on_us"] / result["torch_us"]
        rows.append(result)
        print(f"| {dtype_name} | {n_rows} | {n_cols} | {result['torch_us']:.1f} | {result['auto_on_us']:.1f} | "
              f"{result['auto_off_us']:.1f} | {result['raw_on_us']:.1f} / {result['raw_off_us']:.1f} | "
              f"{result['on_over_torch']:.2f} | {result['auto_gpu_busy_us']:.1f} | {result['eager_pick']} |",
              flush=True)
    pd.DataFrame(rows).to_csv(args.out, index=False)
    print(f"wrote {len(rows)} rows to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
