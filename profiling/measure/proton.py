"""Proton (triton.profiler) profiles of timed configs, kept beside the results like the Chrome traces.

`profile_configs(calls, path)` runs each (label, make) pair's callable `make()` (built outside the profiled scope,
so input allocation is not in the tree, and dropped after) `repeats` times inside a Proton scope named by the label
(cupti backend, `hook="triton"` so Triton kernels carry launch metadata), in one session, and writes
`<path>.hatchet`: a JSON list whose element 0 is the tree ROOT -> config scope -> kernel, with per-node metrics
`count`, `time (ns)` and, where the kernel reports them, `bytes`/`flops`; element 1 is device info
(profiling.views.hatchet reads it). Runs after all timing (profiling perturbs kernels); CUDA only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from blockscope.profiling.results.sidecars import proton_dir_for  # noqa: F401 - re-exported for callers

PROTON_REPEATS = 10


class ProtonError(RuntimeError):
    """Proton could not profile here (no GPU, profiler unavailable); the message is one line."""


def import_proton(what: str, command: str, error: type[Exception] = ProtonError) -> Any:
    """triton.profiler on a CUDA machine; else `error` in one line naming `what` needs it and the `command` to run
    on the GPU machine."""
    import torch

    if not torch.cuda.is_available():
        raise error(f"{what} need a CUDA GPU; allowed: run {command} on the GPU machine")
    try:
        import triton.profiler as proton
    except ImportError as problem:
        raise error(f"triton.profiler (Proton) is not importable here: {problem}") from None
    return proton


def profile_configs(
    calls: Sequence[tuple[str, Callable[[], Callable[[], object]]]], path: str | Path, *, repeats: int = PROTON_REPEATS
) -> Path:
    """Profile each (label, make): `make()` once outside the scope, then its callable `repeats` times in a scope
    named `label`; returns the written .hatchet file.

    `path` is the file without its suffix (Proton adds '.hatchet'). ProtonError when CUDA or Proton is
    unavailable or the session fails; a failing call inside is left out of the tree (its scope stays empty)."""
    if repeats < 1:
        raise ValueError(f"repeats={repeats}; allowed: a positive int")
    proton = import_proton("Proton profiles", "sweep/bench --proton")
    import torch

    base = Path(path)
    base.parent.mkdir(parents=True, exist_ok=True)
    base = base.with_suffix("") if base.suffix == ".hatchet" else base
    try:
        session = proton.start(str(base), context="shadow", data="tree", hook="triton")
    except Exception as error:  # CUPTI/driver failures surface as RuntimeError or native errors
        raise ProtonError(f"proton.start failed: {str(error).splitlines()[0] if str(error) else error!r}") from None
    if session is None:
        raise ProtonError("proton.start returned no session (TRITON_PROTON_DISABLE set, or under the proton CLI)")
    try:
        for label, make in calls:
            try:
                fn = make()
                torch.cuda.synchronize()
                with proton.scope(label):
                    for _ in range(repeats):
                        fn()
                    torch.cuda.synchronize()
            except Exception:  # evidence, not results: skip the config
                pass
            fn = None  # free its input before the next config
    finally:
        proton.finalize(session)
    written = base.with_name(base.name + ".hatchet")
    if not written.is_file():
        raise ProtonError(f"Proton wrote no {written.name}")
    return written
