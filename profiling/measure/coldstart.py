"""Cold start: what a fresh process pays before its first softmax, per backend and shape (`python -m profiling
coldstart`).

Each sample is one new Python process (CHILD_SCRIPT, run with `python -c`) that times, with time.perf_counter:
`import torch` ('torch_import'), the backend's imports beyond torch ('import'; IMPORTS), CUDA init ('cuda_init':
the context and a first allocation, synchronized; not on --device cpu), the first softmax call ('first_call':
compiles included, synchronized) and the second ('second_call'), and prints one JSON line. Cache states: 'cold'
runs with private, empty compiler cache folders (CACHE_ENV, set in the child's environment only: the user's caches
are never read or written); 'warm' runs again with the same folders. Each of `reps` repetitions makes new folders,
runs cold then warm, and removes them. Rows: results schema, method 'cold_start', one per (backend, shape,
cache_state, cold_phase), median / p20 / p80 / min / max of that wall time over the reps, microseconds.

Imports neither streamlit nor plotly.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from blockscope.profiling.results import (
    CACHE_STATE_VALUES,
    COLD_PHASE_VALUES,
    COLD_START,
    PEER_BACKENDS,
    UNAVAILABLE,
    normalize,
)

DEFAULT_BACKENDS: tuple[str, ...] = ("torch", "auto", "inductor", "liger", "quack")
CPU_DEFAULT_BACKENDS: tuple[str, ...] = ("torch", "auto")
ALIASES: dict[str, str] = {"blockscope": "auto"}
DEVICES: tuple[str, ...] = ("cuda", "cpu")
DTYPES: dict[str, str] = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}
CHILD_TIMEOUT_S = 600.0  # one child process (imports, CUDA init, two calls; Inductor's cold compile is the longest)
# what each backend's user imports beyond torch (the 'import' phase); Blockscope variants: IMPORTS["auto"]
IMPORTS: dict[str, tuple[str, ...]] = {
    "torch": (),
    "auto": ("blockscope.kernels",),
    "inductor": ("torch._dynamo",),  # what torch.compile(...) imports; Inductor itself loads on the first call
    "liger": ("liger_kernel.ops.softmax",),
    "quack": ("quack.softmax",),
}
# compiler caches, each pointed at its own folder under the private root (the child's environment only)
CACHE_ENV: dict[str, str] = {
    "TRITON_CACHE_DIR": "triton",  # Triton's compiled kernels (Blockscope, Inductor, Liger)
    "TRITON_HOME": "triton_home",  # Triton's other files (~/.triton)
    "TORCHINDUCTOR_CACHE_DIR": "inductor",  # Inductor's FX graph and code caches
    "CUTE_DSL_CACHE_DIR": "cute_dsl",  # CuTe DSL (Quack) compiled kernels
    "CUDA_CACHE_PATH": "cuda",  # the driver's PTX JIT cache
    "BLOCKSCOPE_CACHE_DIR": "blockscope",  # auto's user tuning table and the native replay module (so: not in use)
    "BLOCKSCOPE_KERNEL_CACHE": "kernels",  # the AOT kernel store and auto's launch records (kernels/launches.py)
}

CHILD_SCRIPT = r"""
import json, sys, time
t0 = time.perf_counter()
spec = json.loads(sys.argv[1])
phase = "torch_import"
out = {"ok": False, "phases": {}}
try:
    import torch
    t1 = time.perf_counter()
    out["phases"]["torch_import"] = t1 - t0
    phase = "import"
    import importlib
    for module in spec["imports"]:
        importlib.import_module(module)
    out["phases"]["import"] = time.perf_counter() - t1
    device = spec["device"]
    if device == "cuda":
        phase = "cuda_init"
        t = time.perf_counter()
        torch.cuda.init()
        torch.zeros(1, device="cuda")
        torch.cuda.synchronize()
        out["phases"]["cuda_init"] = time.perf_counter() - t
    phase = "setup"
    x = torch.randn(spec["n_rows"], spec["n_cols"], device=device, dtype=getattr(torch, spec["dtype"]))
    backend = spec["backend"]
    if backend == "torch":
        fn = lambda: torch.softmax(x, -1)
    elif spec["blockscope"]:
        import blockscope.kernels as kernels
        fn = lambda: kernels.softmax(x, variant=backend)
    else:
        from blockscope.profiling.measure.backends import get_backend
        fn = get_backend(backend).prepare(x)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    sync()
    for phase in ("first_call", "second_call"):
        t = time.perf_counter()
        y = fn()
        sync()
        out["phases"][phase] = time.perf_counter() - t
    phase = "check"
    out["max_abs_error"] = float((y.double() - torch.softmax(x.double(), -1)).abs().max())
    out["ok"] = True
except BaseException as error:
    text = str(error).strip()
    out["error"] = f"{phase}: {type(error).__name__}: {text.splitlines()[0] if text else ''}"
print("BLOCKSCOPE_COLDSTART " + json.dumps(out), flush=True)
"""
MARKER = "BLOCKSCOPE_COLDSTART "


@dataclass
class Sample:
    """One child process: wall seconds per phase, or the error that stopped it."""

    phases: dict[str, float] = field(default_factory=dict)
    error: str = ""
    max_abs_error: float | None = None


def parse_shapes(text: str) -> list[tuple[int, int]]:
    """'4096x1024,1x32768' -> [(4096, 1024), (1, 32768)]; ValueError names the allowed form."""
    shapes = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        pieces = part.lower().split("x")
        try:
            rows, cols = (int(p) for p in pieces) if len(pieces) == 2 else (0, 0)
        except ValueError:
            rows, cols = 0, 0
        if rows < 1 or cols < 1:
            raise ValueError(f"bad shape {part!r}; allowed: RxN with positive integers, e.g. 4096x1024")
        shapes.append((rows, cols))
    if not shapes:
        raise ValueError(f"no shape in {text!r}; allowed: a comma list of RxN, e.g. 4096x1024,1x32768")
    return shapes


def allowed_backends(device: str) -> tuple[str, ...]:
    """Backend names `coldstart` takes on `device` ('blockscope' is an alias of 'auto')."""
    from blockscope import kernels

    if device == "cpu":
        return ("torch", *(name for name, v in kernels.VARIANTS.items() if not v.gpu_only))
    return (*PEER_BACKENDS, *kernels.VARIANTS)


def resolve_backends(names: Sequence[str], device: str) -> list[str]:
    """Aliases resolved, duplicates dropped; ValueError names the allowed backends on `device`."""
    if device not in DEVICES:
        raise ValueError(f"unknown device {device!r}; allowed: {', '.join(DEVICES)}")
    allowed = allowed_backends(device)
    out: list[str] = []
    for name in names:
        name = ALIASES.get(name, name)
        if name not in allowed:
            where = " with --device cpu (peers and Gluon variants need a CUDA GPU)" if device == "cpu" else ""
            raise ValueError(f"unknown backend {name!r}{where}; allowed: blockscope (= auto), {', '.join(allowed)}")
        if name not in out:
            out.append(name)
    if not out:
        raise ValueError(f"no backend given; allowed: blockscope (= auto), {', '.join(allowed)}")
    return out


def unavailable_reason(backend: str) -> str | None:
    """None when `backend` can run here; else why not (an optional peer not installed, ...)."""
    if backend in PEER_BACKENDS and backend != "torch":
        from blockscope.profiling.measure.backends import get_backend

        return get_backend(backend).available()
    return None


def child_env(cache_root: Path | None, device: str) -> dict[str, str]:
    """The child's environment: this one, every CACHE_ENV variable under `cache_root`; TRITON_INTERPRET=1 on cpu."""
    env = dict(os.environ)
    if cache_root is not None:
        for variable, folder in CACHE_ENV.items():
            path = cache_root / folder
            path.mkdir(parents=True, exist_ok=True)
            env[variable] = str(path)
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = env.get("PYTHONDONTWRITEBYTECODE", "1")
    return env


def package_root() -> Path:
    """The folder from which the child imports `blockscope` (a checkout's root or site-packages)."""
    import blockscope

    return Path(blockscope.__file__).resolve().parent.parent


def run_child(
    backend: str,
    n_rows: int,
    n_cols: int,
    dtype: str,
    device: str,
    cache_root: Path | None,
    timeout_s: float = CHILD_TIMEOUT_S,
    extra_env: dict[str, str] | None = None,
) -> Sample:
    """One fresh process measuring `backend` on an (n_rows, n_cols) `dtype` input (fp16 / bf16 / fp32); seconds.
    `extra_env` is set in the child's environment after the private cache folders (the `store` state's
    BLOCKSCOPE_KERNEL_CACHE)."""
    blockscope = backend not in PEER_BACKENDS
    spec = {
        "backend": backend,
        "blockscope": blockscope,
        "imports": list(IMPORTS["auto" if blockscope else backend]),
        "n_rows": n_rows,
        "n_cols": n_cols,
        "dtype": DTYPES[dtype],
        "device": device,
    }
    try:
        proc = subprocess.run(
            [sys.executable, "-c", CHILD_SCRIPT, json.dumps(spec)],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            cwd=package_root(),
            env={**child_env(cache_root, device), **(extra_env or {})},
        )
    except subprocess.TimeoutExpired:
        return Sample(error=f"timeout: the child ran over {timeout_s:g} s")
    except OSError as error:
        return Sample(error=f"the child did not start: {error}")
    lines = [line for line in proc.stdout.splitlines() if line.startswith(MARKER)]
    if not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return Sample(error=f"the child exited with status {proc.returncode} and no result: {tail[:300]}")
    try:
        out = json.loads(lines[-1][len(MARKER) :])
    except json.JSONDecodeError:
        return Sample(error=f"the child printed an unreadable result: {lines[-1][:200]}")
    phases = {k: float(v) for k, v in out.get("phases", {}).items() if k in COLD_PHASE_VALUES}
    if not out.get("ok"):
        return Sample(phases=phases, error=str(out.get("error") or "the child failed"))
    return Sample(phases=phases, max_abs_error=out.get("max_abs_error"))


def measure(
    backends: Sequence[str],
    shapes: Sequence[tuple[int, int]],
    dtype: str = "fp16",
    reps: int = 3,
    device: str = "cuda",
    timeout_s: float = CHILD_TIMEOUT_S,
    progress: Callable[[str], None] | None = None,
    runner: Callable[..., Sample] = run_child,
    store: Path | None = None,
) -> pd.DataFrame:
    """Cold-start rows (results schema, method 'cold_start') for every backend x shape x cache state x phase.

    `backends`: resolved names (resolve_backends); unavailable peers give one 'unavailable: ...' row per shape.
    Each of `reps` repetitions: new private cache folders, a cold child, a warm child, folders removed. With
    `store` (an ahead-of-time kernel store, `python -m profiling warm`: compiled kernels and the table's launch
    records), Blockscope backends also run a `store` child: new empty caches and BLOCKSCOPE_KERNEL_CACHE=a
    private copy of the store (peers have no store: no such rows). The cold child's own store is empty and
    private; the warm child sees what the cold one wrote there (compiled kernels' launch records)."""
    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; allowed: {', '.join(DTYPES)}")
    if reps < 1:
        raise ValueError(f"reps = {reps}; allowed: a positive integer")
    if store is not None and not Path(store).is_dir():
        raise ValueError(f"--store {store}: no such folder; allowed: a kernel store made by `python -m profiling warm`")
    samples: dict[tuple[str, int, int, str], list[Sample]] = {}
    missing: dict[str, str] = {}
    for backend in backends:
        reason = unavailable_reason(backend)
        if reason:
            missing[backend] = reason
            if progress:
                progress(f"{backend}: skipped ({reason})")
    for rep in range(reps):
        for backend in (b for b in backends if b not in missing):
            for n_rows, n_cols in shapes:
                root = Path(tempfile.mkdtemp(prefix="blockscope-coldstart-"))
                try:
                    for state in _states(backend, store):  # cold first, then warm in the same folders
                        if state == "store":  # fresh empty caches again, the kernels from a copy of the store
                            shutil.rmtree(root, ignore_errors=True)
                            root.mkdir()
                            copy = root / "store"  # auto writes launch records into its store: never the user's
                            shutil.copytree(store, copy, symlinks=True)
                            extra = {"BLOCKSCOPE_KERNEL_CACHE": str(copy)}
                            sample = runner(backend, n_rows, n_cols, dtype, device, root, timeout_s, extra_env=extra)
                        else:
                            sample = runner(backend, n_rows, n_cols, dtype, device, root, timeout_s)
                        samples.setdefault((backend, n_rows, n_cols, state), []).append(sample)
                        if progress:
                            what = sample.error or ", ".join(f"{k} {seconds_text(v)}" for k, v in sample.phases.items())
                            progress(f"rep {rep + 1}/{reps} {backend} {n_rows}x{n_cols} {state}: {what}")
                finally:
                    shutil.rmtree(root, ignore_errors=True)
    return _rows(backends, shapes, dtype, reps, device, samples, missing, store)


def _states(backend: str, store: Path | None) -> tuple[str, ...]:
    """The cache states a backend runs in: cold and warm; plus store for Blockscope's when a store is given."""
    return CACHE_STATE_VALUES if store is not None and backend not in PEER_BACKENDS else CACHE_STATE_VALUES[:2]


def _rows(
    backends: Sequence[str],
    shapes: Sequence[tuple[int, int]],
    dtype: str,
    reps: int,
    device: str,
    samples: dict[tuple[str, int, int, str], list[Sample]],
    missing: dict[str, str],
    store: Path | None = None,
) -> pd.DataFrame:
    from blockscope.profiling.measure.env import fingerprint
    from blockscope.profiling.measure.timing import percentile
    from blockscope.profiling.results.revision import kernel_revision, kernel_source_hash

    env = fingerprint(measure_copy=False)
    rows: list[dict[str, Any]] = []
    for backend in backends:
        source_hash = kernel_source_hash(backend)
        base = {
            "variant": backend,
            "dtype": dtype,
            "tunables": "{}",
            "direction": "forward",
            "method": COLD_START,
            **env,
            "kernel_source_hash": source_hash,
            "kernel_revision": kernel_revision(source_hash, env.get("triton_version")),
        }
        for n_rows, n_cols in shapes:
            shape = {**base, "n_rows": n_rows, "n_cols": n_cols}
            if backend in missing:
                rows.append({**shape, "error": f"{UNAVAILABLE}{backend}: {missing[backend]}"})
                continue
            for state in _states(backend, store):
                runs = samples.get((backend, n_rows, n_cols, state), [])
                good = [s for s in runs if not s.error]
                if not good:
                    error = runs[0].error if runs else "not run"
                    rows.append({**shape, "cache_state": state, "error": f"cold start failed ({device}): {error}"})
                    continue
                failed = len(runs) - len(good)
                note = f"{device}; fresh process per sample"
                if failed:
                    note += (
                        f"; {failed} of {len(runs)} children failed (first: {next(s.error for s in runs if s.error)})"
                    )
                errors = [s.max_abs_error for s in good if s.max_abs_error is not None]
                for phase in COLD_PHASE_VALUES:
                    values = [s.phases[phase] * 1e6 for s in good if phase in s.phases]
                    if not values:
                        continue
                    values = [max(v, 1e-3) for v in values]  # a timed row needs > 0 µs (a no-op import)
                    rows.append(
                        {
                            **shape,
                            "cache_state": state,
                            "cold_phase": phase,
                            "median_us": percentile(values, 50),
                            "p20_us": percentile(values, 20),
                            "p80_us": percentile(values, 80),
                            "min_us": min(values),
                            "max_us": max(values),
                            "reps": len(values),
                            "timing_note": note,
                            "max_abs_error": max(errors) if errors else None,
                            "error": "",
                        }
                    )
    return normalize(pd.DataFrame(rows))


def seconds_text(seconds: float) -> str:
    """'1.31 s', '38.2 ms' or '12 µs' for a wall time in seconds."""
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.0f} µs"


def summary_lines(df: pd.DataFrame) -> list[str]:
    """One text line per (backend, shape, cache state): each phase's median in seconds, or the error."""
    lines = []
    if df.empty:
        return lines
    keys = ["variant", "n_rows", "n_cols", "cache_state"]
    for key, group in df.groupby(keys, dropna=False, sort=False):
        backend, n_rows, n_cols, state = key
        state = "" if pd.isna(state) else f" {state}"
        errors = [e for e in group["error"].fillna("") if e]
        if errors:
            lines.append(f"{backend} {n_rows}x{n_cols}{state}: {errors[0]}")
            continue
        parts = [
            f"{row.cold_phase} {seconds_text(row.median_us / 1e6)} "
            f"(p20-p80 {seconds_text(row.p20_us / 1e6)}-{seconds_text(row.p80_us / 1e6)})"
            for row in group.itertuples()
        ]
        lines.append(f"{backend} {n_rows}x{n_cols}{state}: " + "; ".join(parts))
    return lines
