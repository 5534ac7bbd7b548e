"""Sharded sweeps: a deterministic split of the config list, the merge of the parts, and workers per GPU or on Ray.

Shard i of N holds the configs whose index in the full list (the order `sweep` builds it) is i mod N, in that
order, so N shards cover every config exactly once whatever machine builds the list. `merge_parts` stacks the
parts' results, refuses a (config, method) measured in two parts, and sorts rows canonically (CANONICAL_ORDER);
the merge of all shards equals the unsharded run in the same order (its timings are what each GPU measured).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from blockscope.profiling.results import concat_results, load_results

CANONICAL_ORDER = ("direction", "dtype", "n_rows", "n_cols", "variant", "tunables", "method")
KEY_COLUMNS = ("variant", "dtype", "n_rows", "n_cols", "tunables", "method", "direction")
OP_COLUMNS = ("op", "case", "op_shape")
RAY_INSTALL = "pip install 'blockscope[cluster]' (or pip install ray)"


def parse_shard(text: str) -> tuple[int, int]:
    """'i/N' -> (i, N) with 0 <= i < N; ValueError naming what is allowed."""
    parts = str(text).split("/")
    if len(parts) != 2 or not all(p.strip().lstrip("-").isdigit() for p in parts):
        raise ValueError(f"shard {text!r}; allowed: I/N with integers 0 <= I < N, e.g. 0/4")
    index, count = int(parts[0]), int(parts[1])
    if count < 1 or not 0 <= index < count:
        raise ValueError(f"shard {text!r}; allowed: I/N with 0 <= I < N and N >= 1, e.g. 0/4")
    return index, count


def shard(configs: Sequence[Any], index: int, count: int) -> list[Any]:
    """Configs at positions index, index + count, ... of `configs` (stable order)."""
    if count < 1 or not 0 <= index < count:
        raise ValueError(f"shard {index}/{count}; allowed: 0 <= index < count, count >= 1")
    return [config for position, config in enumerate(configs) if position % count == index]


def canonical(table: pd.DataFrame) -> pd.DataFrame:
    """Rows sorted by CANONICAL_ORDER (stable), index reset: one order for a merged and an unsharded table."""
    columns = [c for c in CANONICAL_ORDER if c in table.columns]
    return table.sort_values(columns, kind="stable", na_position="first").reset_index(drop=True)


def merge_parts(parts: Sequence[str | Path | pd.DataFrame]) -> pd.DataFrame:
    """The shards' results as one table (canonical order). ValueError when no parts are given, a part does not
    load (profiling.results.ResultsError), or two parts measured the same (config, method, direction)."""
    if not parts:
        raise ValueError("no parts; allowed: one or more results files of sweep --shard I/N")
    tables, names = [], []
    for part in parts:
        if isinstance(part, pd.DataFrame):
            tables.append(part)
            names.append(f"part {len(names)}")
        else:
            tables.append(load_results(part))
            names.append(str(part))
    seen: dict[tuple, int] = {}
    for number, table in enumerate(tables):
        ran = table[table["method"] != "none"] if "method" in table.columns else table
        columns = [*KEY_COLUMNS, *(c for c in OP_COLUMNS if c in ran.columns)]  # op rows: also op, case, shape
        for key in ran[columns].astype("string").fillna("").itertuples(index=False, name=None):
            if seen.get(key, number) != number:
                raise ValueError(
                    f"{names[number]} and {names[seen[key]]} both hold {' '.join(key)}; allowed: parts of one "
                    "sharded sweep (each config in one shard)"
                )
            seen[key] = number
    return canonical(concat_results(tables))


def parse_gpus(text: str, visible: int) -> list[int]:
    """'all' or '0,1' -> GPU indices (of the machine's `visible` GPUs); ValueError naming what is allowed."""
    if text.strip() == "all":
        if visible < 1:
            raise ValueError("--gpus all: no GPU is visible; allowed: a machine with CUDA GPUs")
        return list(range(visible))
    try:
        gpus = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"--gpus {text!r}; allowed: 'all' or a comma list of GPU indices, e.g. 0,1") from None
    bad = [g for g in gpus if not 0 <= g < visible]
    if not gpus or bad or len(set(gpus)) != len(gpus):
        raise ValueError(
            f"--gpus {text!r}: {'duplicate' if not bad and gpus else 'unknown'} GPU index; "
            f"allowed: distinct indices 0..{visible - 1} or 'all'"
        )
    return gpus


def strip_options(argv: Sequence[str], options: dict[str, bool | None]) -> list[str]:
    """`argv` without the named options (name -> True: takes a value, False: a flag, None: an optional value),
    in both '--x V' and '--x=V' forms."""
    out, skip = [], None
    for arg in argv:
        if skip is not None:
            optional, skip = skip, None
            if not (optional and arg.startswith("-")):
                continue
        name = arg.split("=", 1)[0]
        if name in options:
            if "=" not in arg and options[name] is not False:
                skip = options[name] is None  # then the next arg is skipped (optional value: unless it is an option)
            continue
        out.append(arg)
    return out


WORKER_STRIPPED: dict[str, bool | None] = {
    "--gpus": True,
    "--out": True,
    "--shard": True,
    "--run-id": True,
    "--ray": None,
    "--ray-shards": True,
}


WORKER_CODE = "import sys; from blockscope.profiling.cli.main import main; sys.exit(main(sys.argv[1:], 'blockscope'))"


def part_path(out: str | Path, index: int, count: int) -> Path:
    """Where shard index/count of a sweep into `out` writes: '<stem>.shard<i>of<N><suffix>' beside it."""
    out = Path(out)
    return out.with_name(f"{out.stem}.shard{index}of{count}{out.suffix}")


def gpu_worker_commands(
    argv: Sequence[str], gpus: Sequence[int], out: str | Path, run_id: str
) -> list[tuple[list[str], dict[str, str], Path]]:
    """(command, environment, part file) per GPU: the same sweep arguments with `--shard j/len(gpus)`, its own
    part file and the shared `run_id`, run with CUDA_VISIBLE_DEVICES set to that GPU."""
    base = strip_options(argv, WORKER_STRIPPED)
    if base and base[0] == "sweep":
        base = base[1:]
    commands = []
    for j, gpu in enumerate(gpus):
        part = part_path(out, j, len(gpus))
        command = [sys.executable, "-c", WORKER_CODE, "sweep", *base]
        command += ["--shard", f"{j}/{len(gpus)}", "--out", str(part), "--run-id", run_id]
        commands.append((command, {**os.environ, "CUDA_VISIBLE_DEVICES": str(gpu)}, part))
    return commands


def ray_module() -> Any:
    """The `ray` module, or ImportError with the one line that says how to install it."""
    try:
        import ray
    except ImportError:
        raise ImportError(f"--ray needs Ray, which is not installed; allowed: {RAY_INSTALL}") from None
    return ray


def run_on_ray(
    address: str | None,
    argv: Sequence[str],
    shards: int | None,
    out: str | Path,
    run_id: str,
    *,
    num_gpus: float = 1,
    timeout_s: float | None = None,
) -> list[Path]:
    """Run `shards` shards (None: one per GPU of the cluster) of the sweep in `argv` as Ray tasks (num_gpus each)
    on the cluster at `address` ('auto', 'host:port', 'ray://host:10001'; None: RAY_ADDRESS or a local
    instance); each task writes its part
    file (a path every node can reach: shared storage) and returns it. ConnectionError for an unreachable
    cluster, RuntimeError naming the shard whose sweep failed."""
    ray = ray_module()
    base = strip_options(argv, WORKER_STRIPPED)
    if base and base[0] == "sweep":
        base = base[1:]
    if not ray.is_initialized():
        try:
            ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise ConnectionError(f"Ray cluster {address or 'auto'} unreachable: {first}") from None
    if shards is None:
        shards = int(ray.cluster_resources().get("GPU", 0))
        if shards < 1:
            raise ValueError("the Ray cluster has no GPUs; allowed: a cluster with GPUs, or --ray-shards N")

    @ray.remote(num_gpus=num_gpus, max_retries=0)
    def sweep_shard(command: list[str]) -> tuple[int, str]:
        import subprocess

        done = subprocess.run(command, capture_output=True, text=True, check=False)
        lines = (done.stderr or done.stdout).strip().splitlines()
        return done.returncode, lines[-1] if lines else ""

    refs, parts = [], []
    for j in range(shards):
        part = part_path(out, j, shards)
        command = [sys.executable, "-c", WORKER_CODE, "sweep", *base, "--shard", f"{j}/{shards}"]
        command += ["--out", str(part), "--run-id", run_id]
        refs.append(sweep_shard.remote(command))
        parts.append(part)
    results = ray.get(refs, timeout=timeout_s)
    for j, (status, line) in enumerate(results):
        if status != 0:
            raise RuntimeError(f"shard {j}/{shards} exited {status}: {line}")
    return parts
