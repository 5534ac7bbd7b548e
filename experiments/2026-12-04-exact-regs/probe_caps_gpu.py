"""Time the fp32 table picks of caps.json three ways on one GPU, in interleaved rounds: as shipped (exact exp), the
same kernel compiled under its register cap (Triton's maxnreg, one more block per SM offline), and fast_exp=1
(tl.exp: the speed the exact exp is measured against, issue 37 item 3). CUDA-graph replay and L2-flushed
back-to-back; % of copy at the copy bandwidth measured in the same run; each output checked against float64.

    python3 experiments/2026-12-04-exact-regs/probe_caps_gpu.py --out FILE.csv [--rounds 3] [--dry-run]

The cap reaches the compile by wrapping kernels._common.compile_or_load (and splitrow's import of it) for the
duration of one setting, with the compiled-kernel caches cleared around it, so kernels/ stays unchanged.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SETTINGS = ("shipped", "maxnreg", "fast_exp")


@contextlib.contextmanager
def register_cap(cap: int) -> Iterator[None]:
    """Every kernel compiled or loaded inside gets maxnreg=cap (0: unchanged); compiled-kernel caches cleared on
    entry and exit so no launch outside sees a capped kernel or inside an uncapped one."""
    from blockscope.kernels import _common, splitrow

    original = _common.compile_or_load

    def capped(kernel, args, constexprs, num_warps, num_stages=1, options=None, grid=(1,)):
        return original(kernel, args, constexprs, num_warps, num_stages, {**(options or {}), "maxnreg": cap}, grid)

    def clear() -> None:
        _common._COMPILED.clear()
        splitrow._BLOCKS_PER_SM.clear()
        splitrow._FALLBACKS.clear()

    clear()
    if cap:
        _common.compile_or_load = splitrow.compile_or_load = capped
    try:
        yield
    finally:
        _common.compile_or_load = splitrow.compile_or_load = original
        clear()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dry-run", action="store_true", help="list the cases and exit (no GPU needed)")
    args = parser.parse_args()
    cases = json.loads((HERE / "caps.json").read_text())
    if args.dry_run:
        for case in cases:
            print(case)
        return 0
    import torch

    from blockscope.kernels import get_variant
    from blockscope.profiling.measure import timing

    copy_gbps = timing.measure_copy_gbps(bytes=1 << 30, reps=20)
    print(f"{torch.cuda.get_device_name()}, copy {copy_gbps:.0f} GB/s", flush=True)
    samples: dict[tuple, list[float]] = {}
    errors: dict[tuple, float] = {}
    for round_index in range(args.rounds):
        for case in cases:
            x = torch.randn(case["n_rows"], case["n_cols"], device="cuda") * 3
            want = torch.softmax(x.double(), -1)
            launcher = get_variant(case["variant"]).launcher
            for setting in SETTINGS:
                tunables = dict(case["tunables"], **({"fast_exp": 1} if setting == "fast_exp" else {}))
                with register_cap(case["maxnreg"] if setting == "maxnreg" else 0):

                    def fn(t=tunables, rows=x, run=launcher):
                        return run(rows, **t)

                    key = (case["variant"], case["n_rows"], case["n_cols"], setting)
                    errors[key] = max(errors.get(key, 0.0), float((fn().double() - want).abs().max()))
                    for method in ("cuda_graph", "back_to_back_flushed"):
                        stats = timing.benchmark(fn, method, warmup=5, warmup_ms=10.0, rel_ci=0.01, min_reps=10,
                                                 max_reps=300, budget_ms=40.0)  # fmt: skip
                        samples.setdefault((*key, method), []).append(stats.median_us)
                        print(round_index, key, method, round(stats.median_us, 2), flush=True)
            del x, want
    rows = []
    for (variant, n_rows, n_cols, setting, method), values in samples.items():
        ideal_us = 2 * n_rows * n_cols * 4 / (copy_gbps * 1e3)
        median = statistics.median(values)
        rows.append({"variant": variant, "n_rows": n_rows, "n_cols": n_cols, "setting": setting, "method": method,
                     "median_us": round(median, 2), "round_medians_us": " ".join(f"{v:.2f}" for v in values),
                     "pct_of_copy": round(100 * ideal_us / median, 1),
                     "max_abs_err": errors[(variant, n_rows, n_cols, setting)]})  # fmt: skip
    import pandas as pd

    args.out.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(args.out, index=False)
    return 0


if __name__ == "__main__":
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
