"""Eager-mode wall time per call (host included) of `auto` vs torch.softmax, and what the idle-stream check and the
native replay buy.

python3 -m tools.eager_wall --out FILE.csv [--calls 200] [--rounds 9] [--no-native]

Per shape, three passes; in each, torch.softmax, `kernels.softmax(x, variant="auto")` (the public entry) and the raw
`auto` launcher take turns: every round times a plain Python loop of `--calls` calls of each (one synchronize at
the end), and each keeps its best round (the host's speed drifts: only ratios within a pass compare). Passes: as
shipped (native module on, eager check on), the eager check off (BLOCKSCOPE_AUTO_EAGER=0), the native module off
(BLOCKSCOPE_NATIVE=0: the Python replay). The native module is built first unless --no-native. Then the GPU time
of `auto` with launches queued behind a busy stream (profiling.measure.timing back_to_back_flushed): the check
must leave it on the tuned Triton kernel. Issue 13's goal: eager wall per call within 1.1x of torch.softmax on every
shape.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import torch

from blockscope import kernels
from blockscope.kernels import auto, native
from blockscope.profiling.measure import timing

SHAPES = [
    ("fp16", 64, 4096),
    ("fp32", 1, 1000),
    ("fp16", 4096, 1000),
    ("bf16", 65536, 96),
    ("fp16", 1, 128),
    ("fp32", 256, 4096),
    ("bf16", 1024, 2048),
    ("fp16", 8, 32768),
    ("fp16", 4096, 4096),
    ("fp32", 4096, 32768),
]
PASSES = (("shipped", {}), ("check off", {auto.EAGER_ENV: "0"}), ("no native", {native.ENV: "0"}))


def interleaved_us(fns: dict[str, Callable[[], object]], calls: int, rounds: int) -> dict[str, float]:
    """Best wall us per call of each fn over `rounds` rounds in which the fns take turns (20 warm-up calls each)."""
    for fn in fns.values():
        for _ in range(20):
            fn()
    best = dict.fromkeys(fns, math.inf)
    for _ in range(rounds):
        for name, fn in fns.items():
            best[name] = min(best[name], auto.eager_wall_us(fn, calls, torch.cuda.synchronize))
    return best


def run_pass(x: torch.Tensor, env: dict[str, str], calls: int, rounds: int) -> tuple[dict[str, float], str]:
    """One pass with `env` set: torch, public and raw auto us per call, and what auto's idle calls of x ran."""
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    native.reset()
    auto.clear_choices()
    try:
        times = interleaved_us(
            {
                "torch": lambda: torch.softmax(x, -1),
                "auto": lambda: kernels.softmax(x, variant="auto"),
                "raw": lambda: auto.softmax_auto(x),
            },
            calls,
            rounds,
        )
        seen = auto._FAST[(x.shape, x.dtype, x.device)]
        key = (*x.shape, x.dtype, torch.cuda.get_device_name(x.device))
        pick = "torch" if auto._EAGER.get(key) else auto.choose(*key)[0] + (" (native)" if seen.native else "")
        return times, pick
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        native.reset()
        auto.clear_choices()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--no-native", action="store_true", help="do not build the native module first")
    args = parser.parse_args()
    if not args.no_native:
        result = native.build()
        print(f"native build: {result.summary()}")
    print(
        f"{torch.cuda.get_device_name()}, torch {torch.__version__}, native module: "
        f"{'loaded' if native.load() is not None else native.load_error()}; best of {args.rounds} interleaved "
        f"rounds of {args.calls} calls; us per call (auto / torch of the same pass)"
    )
    print(
        "| dtype | R | N | torch us | auto us | raw us | auto / torch | check off: auto / torch | no native: auto / "
        "torch | auto GPU us, busy stream | eager pick |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    rows = []
    for dtype_name, n_rows, n_cols in SHAPES:
        x = torch.randn(n_rows, n_cols, device="cuda", dtype=kernels.dtype_from_name(dtype_name))
        result = {"dtype": dtype_name, "n_rows": n_rows, "n_cols": n_cols}
        picks = {}
        for label, env in PASSES:
            times, picks[label] = run_pass(x, env, args.calls, args.rounds)
            key = label.replace(" ", "_")
            for name, value in times.items():
                result[f"{key}_{name}_us"] = value
            result[f"{key}_auto_over_torch"] = times["auto"] / times["torch"]
            result[f"{key}_raw_over_torch"] = times["raw"] / times["torch"]
        result["eager_pick"] = picks["shipped"]
        result["auto_gpu_busy_us"] = timing.benchmark(
            lambda x=x: auto.softmax_auto(x), "back_to_back_flushed"
        ).median_us
        rows.append(result)
        print(
            f"| {dtype_name} | {n_rows} | {n_cols} | {result['shipped_torch_us']:.1f} | "
            f"{result['shipped_auto_us']:.1f} | {result['shipped_raw_us']:.1f} | "
            f"{result['shipped_auto_over_torch']:.2f} | {result['check_off_auto_over_torch']:.2f} | "
            f"{result['no_native_auto_over_torch']:.2f} | {result['auto_gpu_busy_us']:.1f} | "
            f"{result['eager_pick']} |",
            flush=True,
        )
    frame = pd.DataFrame(rows)
    frame.to_csv(args.out, index=False)
    for label, _ in PASSES:
        ratios = frame[f"{label.replace(' ', '_')}_auto_over_torch"]
        print(
            f"{label}: auto / torch {ratios.min():.2f}-{ratios.max():.2f}, geomean "
            f"{math.exp(ratios.map(math.log).mean()):.2f}; over 1.1 on {int((ratios > 1.1).sum())} of {len(ratios)}"
        )
    print(f"wrote {len(rows)} rows to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
