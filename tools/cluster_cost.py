"""Inputs of docs/cluster.md's cost model for the default sweep split over G GPUs (CPU only: plans, no timing).

python3 -m tools.cluster_cost

Per G in 1, 2, 4, 8: the largest shard's configs, its distinct kernels (what that worker compiles when the Triton
cache is not shared) and profiling.measure.sweep.estimate_seconds of the largest shard (the sweep's own model of
GPU wall seconds: compiles + per-config overhead + timing; not a measurement).
"""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # plans only; set before triton is imported

from blockscope.profiling.measure import sweep  # noqa: E402
from blockscope.profiling.measure.shard import shard  # noqa: E402


def kernels_of(configs: list) -> set[tuple]:
    """Distinct compiled kernels of `configs` (the key estimate_seconds counts compiles by)."""
    keys = set()
    for config in configs:
        try:
            plan = sweep.resolve_plan(config)
        except Exception:  # a config the plan refuses: an error row, nothing compiled
            continue
        if plan is None or sweep.predicted_compile_problem(plan, sweep.DEFAULT_MAX_LANES_PER_THREAD):
            continue
        keys.add((plan.variant, config.dtype, plan.num_warps, plan.num_stages, tuple(sorted(plan.constexprs.items()))))
    return keys


def main() -> None:
    variants = list(sweep.default_variants())
    configs = sweep.build_configs(
        variants, list(sweep.DEFAULT_DTYPES), sweep.default_n_values(), [sweep.DEFAULT_ROWS], None, {}, None
    )
    print(f"default sweep: {len(configs)} configs, {len(kernels_of(configs))} distinct kernels")
    print("| GPUs | configs (largest shard) | kernels (largest shard) | estimate_seconds (largest shard) |")
    print("|---|---|---|---|")
    for gpus in (1, 2, 4, 8):
        parts = [shard(configs, i, gpus) for i in range(gpus)]
        kernels = max(len(kernels_of(p)) for p in parts)
        seconds = max(sweep.estimate_seconds(p) for p in parts)
        print(f"| {gpus} | {max(len(p) for p in parts)} | {kernels} | {seconds:.0f} s |")


if __name__ == "__main__":
    main()
