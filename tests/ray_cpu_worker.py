"""`sweep` on the CPU interpreter with tests/test_sweep.py's fakes: the worker of the CPU test run of `sweep --ray`.

`CODE` is the `worker_code` for profiling.measure.shard.run_on_ray (with num_gpus=0): each Ray task runs
`python -c CODE sweep ... --shard j/N --out <part> --run-id <id>`, i.e. the real CLI with `cpu_patches()` applied
(no CUDA check; run_sweep on the CPU device with a FakeClock, fake compile facts and the fake kernel-name tracer).
The in-process run of the same sweep applies the same patches (monkeypatch), so both sides differ only in the path.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CODE = (
    f"import sys; sys.path.insert(0, {str(ROOT)!r}); from tests.ray_cpu_worker import main; "
    "sys.exit(main(sys.argv[1:]))"
)


def cpu_patches() -> list[tuple[Any, str, Callable[..., Any]]]:
    """(object, attribute, replacement) that make `sweep` run here: setattr them (or monkeypatch.setattr)."""
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported (the CLI imports it lazily)
    from blockscope.profiling.cli import measure
    from blockscope.profiling.measure import sweep
    from blockscope.profiling.measure.timing import FakeClock
    from tests.test_sweep import fake_facts, fake_tracer

    real_run_sweep = sweep.run_sweep

    def run_sweep_on_cpu(configs: Any, **options: Any) -> Any:
        options.update(
            device="cpu",
            clock=FakeClock(tick_us=5.0, wall_tick_s=0.25),
            compile_facts=fake_facts,
            tracer=fake_tracer,
            graph_calls=2,
        )
        return real_run_sweep(configs, **options)

    return [(measure, "require_cuda", lambda command: None), (sweep, "run_sweep", run_sweep_on_cpu)]


def main(argv: list[str]) -> int:
    """The CLI (`profiling` main) with cpu_patches() applied; its exit status."""
    for owner, name, value in cpu_patches():
        setattr(owner, name, value)
    from blockscope.profiling.cli.main import main as cli

    return cli(argv, "blockscope")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
