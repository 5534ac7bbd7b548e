"""Sharded sweeps: a deterministic split of the config list, the merge of the parts, and workers per GPU or on Ray.

Shard i of N holds the configs whose index in the full list (the order `sweep` builds it) is i mod N, in that
order, so N shards cover every config exactly once whatever machine builds the list. `merge_parts` stacks the
parts' results, refuses a (config, method) measured in two parts, and sorts rows canonically (CANONICAL_ORDER);
the merge of all shards equals the unsharded run in the same order (its timings are what each GPU measured).
"""

from __future__ import annotations

import os
import socket
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
RAY_TASK_GPUS = 1.0  # GPUs each --ray shard task requests: one whole GPU, so no two shards time on one board
RAY_CONNECT_TIMEOUT_S = 5.0  # TCP probe of an explicit --ray host:port before ray.init (which retries for minutes)


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


def ray_endpoint(address: str | None) -> tuple[str, int] | None:
    """(host, port) of an explicit Ray address ('host:port', 'ray://host:port', '[::1]:port'); None for None,
    'auto', 'local' or an address without a port (Ray resolves those itself)."""
    if address is None:
        return None
    text = address.strip()
    if "://" in text:
        text = text.split("://", 1)[1]
    text = text.split("/", 1)[0]
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def probe_ray_address(address: str | None, timeout_s: float = RAY_CONNECT_TIMEOUT_S) -> None:
    """ConnectionError (one line) when the explicit `address` takes no TCP connection within `timeout_s` seconds;
    nothing for 'auto', 'local' or None. ray.init itself retries an unreachable GCS for minutes."""
    endpoint = ray_endpoint(address)
    if endpoint is None:
        return
    try:
        with socket.create_connection(endpoint, timeout=timeout_s):
            pass
    except OSError as error:
        timed_out = isinstance(error, TimeoutError)
        reason = f"no answer within {timeout_s:g} s" if timed_out else (error.strerror or type(error).__name__)
        raise ConnectionError(
            f"Ray cluster {address} unreachable ({reason}); allowed: the address of a running Ray head "
            "(ray start --head; 'auto' on a cluster node, 'local' for a new local instance)"
        ) from None


def run_on_ray(
    address: str | None,
    argv: Sequence[str],
    shards: int | None,
    out: str | Path,
    run_id: str,
    *,
    num_gpus: float = RAY_TASK_GPUS,
    timeout_s: float | None = None,
    connect_timeout_s: float = RAY_CONNECT_TIMEOUT_S,
    worker_code: str = WORKER_CODE,
) -> list[Path]:
    """Run `shards` shards (None: one per GPU of the cluster) of the sweep in `argv` as Ray tasks on the cluster at
    `address` ('auto', 'local', 'host:port', 'ray://host:10001'; None: RAY_ADDRESS or a local instance); each task
    runs `sys.executable -c worker_code sweep ... --shard j/N --out <part> --run-id run_id` in a subprocess, writes
    its part file (a path every node can reach: shared storage) and returns. Returns the part paths, shard order.

    `num_gpus`: GPUs each task requests (default RAY_TASK_GPUS, one: Ray sets CUDA_VISIBLE_DEVICES to it). 0 and
    a `worker_code` that runs the sweep on the CPU interpreter with a fake clock is the CPU test run
    (tests/test_ray.py); timings of a GPU sweep need the default. `timeout_s`: seconds to wait for all shards
    (None: no limit). ConnectionError (one line) for an unreachable cluster, within `connect_timeout_s` seconds for
    an explicit host:port; ValueError for a cluster without GPUs (unless num_gpus=0 and `shards` are given);
    RuntimeError naming the first shard whose sweep failed (the other parts stay)."""
    ray = ray_module()
    probe_ray_address(address, connect_timeout_s)
    base = strip_options(argv, WORKER_STRIPPED)
    if base and base[0] == "sweep":
        base = base[1:]
    if not ray.is_initialized():
        try:
            ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise ConnectionError(f"Ray cluster {address or 'auto'} unreachable: {first}") from None
    gpus = int(ray.cluster_resources().get("GPU", 0))
    if gpus < 1 and (shards is None or num_gpus > 0):  # GPU tasks on it would wait for a GPU forever
        raise ValueError("the Ray cluster has no GPUs; allowed: a cluster with GPU nodes (each shard takes one GPU)")
    shards = gpus if shards is None else shards

    @ray.remote(num_gpus=num_gpus, max_retries=0)
    def sweep_shard(command: list[str]) -> tuple[int, str]:
        import subprocess

        done = subprocess.run(command, capture_output=True, text=True, check=False)
        lines = (done.stderr or done.stdout).strip().splitlines()
        return done.returncode, lines[-1] if lines else ""

    refs, parts = [], []
    for j in range(shards):
        part = part_path(out, j, shards)
        command = [sys.executable, "-c", worker_code, "sweep", *base, "--shard", f"{j}/{shards}"]
        command += ["--out", str(part), "--run-id", run_id]
        refs.append(sweep_shard.remote(command))
        parts.append(part)
    results = ray.get(refs, timeout=timeout_s)
    for j, (status, line) in enumerate(results):
        if status != 0:
            raise RuntimeError(f"shard {j}/{shards} exited {status}: {line}")
    return parts
