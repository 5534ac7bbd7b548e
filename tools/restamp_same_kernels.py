"""Give results rows this tree's kernel hash where the kernel they measured compiles to the same code here: rows of
a variant whose source changed in a way that left their config's kernel alone (a dtype branch, a docstring).

python3 -m tools.restamp_same_kernels RESULTS.parquet --measured-at COMMIT [--write]

A row's kernel_source_hash covers its variant's source files (results/revision.py), so any edit marks every row
of the variant stale. This script proves, row by row, that nothing it measured changed, or leaves the row stale:
(1) provenance: the row's hash is the hash of COMMIT's sources (the tree that measured it); (2) the row's config,
compiled offline for sm_90 under COMMIT's sources and under this tree's, gives the same PTX once debug sections
and source-location lines are dropped (an `auto` row: the same pick from both trees' `auto.choose`, then that
config's PTX; a config both trees refuse: the same refusal). Without --write it only reports; with it, the rows
that pass get this tree's hash and kernel_revision, the file is saved, and nothing else in any row changes.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG_COLUMNS = ("variant", "dtype", "n_rows", "n_cols", "tunables", "gpu_name")


def kernel_fingerprint(ptx: str) -> str:
    """sha256 (16 hex digits) of PTX without its debug sections, `.loc`/`.file` lines and comments: what runs."""
    body = re.split(r"^\s*\.section\s+\.debug", ptx, maxsplit=1, flags=re.M)[0]
    kept = [line for line in body.splitlines() if not re.match(r"\s*(\.loc|\.file|//)", line)]
    return hashlib.sha256("\n".join(kept).encode()).hexdigest()[:16]


def config_key(config: dict) -> str:
    return json.dumps([config[c] for c in CONFIG_COLUMNS])


def fingerprints(configs: list[dict]) -> dict:
    """{'hashes': variant -> kernel_source_hash, 'kernels': config key -> fingerprint} under the `kernels` and
    `profiling` on sys.path (run in a subprocess per tree, see tree_fingerprints)."""
    os.environ.pop("TRITON_INTERPRET", None)  # offline compiles and auto's GPU-side picks
    import importlib

    try:  # this layout (blockscope.*) or a tree from before the package (top-level kernels, profiling)
        kernels = importlib.import_module("blockscope.kernels")
        compiled = importlib.import_module("blockscope.profiling.inspect.compiled")
        revision = importlib.import_module("blockscope.profiling.results.revision")
    except ImportError:
        kernels = importlib.import_module("kernels")
        compiled = importlib.import_module("blockscope.profiling.inspect.compiled")
        revision = importlib.import_module("blockscope.profiling.results.revision")
    auto = importlib.import_module(kernels.__name__ + ".auto")

    found: dict[str, str] = {}
    for config in configs:
        variant = config["variant"]
        tunables = json.loads(config["tunables"]) if config["tunables"] not in ("", "None", "nan") else {}
        dtype = kernels.dtype_from_name(config["dtype"])
        pick = ""
        if variant == "auto":
            variant, tunables = auto.choose(int(config["n_rows"]), int(config["n_cols"]), dtype, config["gpu_name"])
            pick = f"{variant} {json.dumps(tunables, sort_keys=True)}: "
        if variant == "torch":
            found[config_key(config)] = pick
            continue
        try:
            info = compiled.inspect_offline(
                variant, int(config["n_cols"]), dtype, n_rows=int(config["n_rows"]), cache=False, **tunables
            )
            found[config_key(config)] = pick + kernel_fingerprint(info.ptx)
        except Exception as error:  # noqa: BLE001 - a refusal is compared like a kernel
            found[config_key(config)] = pick + f"refused: {type(error).__name__}: {str(error).splitlines()[0]}"
    variants = sorted({c["variant"] for c in configs})
    return {"hashes": {v: revision.kernel_source_hash(v) for v in variants}, "kernels": found}


def tree_fingerprints(tree: Path, configs: list[dict]) -> dict:
    """fingerprints() with `tree`'s kernels and profiling packages, in a fresh process."""
    with tempfile.TemporaryDirectory(prefix="blockscope-restamp-") as tmp:
        request, answer = Path(tmp) / "configs.json", Path(tmp) / "answer.json"
        request.write_text(json.dumps(configs))
        env = {**os.environ, "PYTHONPATH": str(tree)}  # that tree's packages, in a process of their own
        subprocess.run(
            [sys.executable, __file__, "--fingerprints", str(request), "--tree", str(tree), "--out", str(answer)],
            check=True,
            env=env,
            cwd=tree,
        )
        return json.loads(answer.read_text())


def restampable(rows: list[dict], old: dict, new: dict) -> list[bool]:
    """Per row: its hash is the old tree's for its variant and its config's kernel is the same in both trees."""
    return [
        row["kernel_source_hash"] == old["hashes"].get(row["variant"])
        and old["kernels"].get(config_key(row)) is not None
        and old["kernels"].get(config_key(row)) == new["kernels"].get(config_key(row))
        for row in rows
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="?", type=Path)
    parser.add_argument("--measured-at", help="the git commit whose sources measured the stale rows")
    parser.add_argument("--write", action="store_true", help="restamp the rows that pass and save the file")
    parser.add_argument("--fingerprints", type=Path, help=argparse.SUPPRESS)  # internal: one tree's side
    parser.add_argument("--tree", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.fingerprints:
        args.out.write_text(json.dumps(fingerprints(json.loads(args.fingerprints.read_text()))))
        return 0
    if args.results is None or not args.measured_at:
        parser.error("RESULTS and --measured-at are required")
    from blockscope import kernels
    from blockscope.profiling.results import load_results, revision, save_results

    df = load_results(args.results)
    current = {v: revision.kernel_source_hash(v) for v in kernels.VARIANTS}
    stale = df["variant"].isin(list(current)) & (df["kernel_source_hash"] != df["variant"].map(current))
    if not stale.any():
        print(f"{args.results}: no stale rows")
        return 0
    part = df.loc[stale, [*CONFIG_COLUMNS, "kernel_source_hash"]].astype(str)
    configs = part[list(CONFIG_COLUMNS)].drop_duplicates().to_dict("records")
    with tempfile.TemporaryDirectory(prefix="blockscope-measured-at-") as tmp:
        listed = subprocess.run(
            ["git", "-C", str(ROOT), "ls-tree", "--name-only", args.measured_at],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        folders = [f for f in ("blockscope", "kernels", "profiling") if f in listed]
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", args.measured_at, *folders], check=True, capture_output=True
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        old = tree_fingerprints(Path(tmp), configs)
    new = tree_fingerprints(ROOT, configs)
    passed = restampable(part.to_dict("records"), old, new)
    part = part.assign(restamp=passed)
    print(part.groupby(["variant", "dtype"])["restamp"].agg(restamped="sum", rows="size").to_string())
    if args.write:
        index = part.index[part["restamp"]]
        triton = df.loc[index, "kernel_revision"].astype(str).str.split("@").str[-1]
        df.loc[index, "kernel_source_hash"] = df.loc[index, "variant"].map(current)
        df.loc[index, "kernel_revision"] = df.loc[index, "kernel_source_hash"] + "@" + triton
        save_results(df, args.results)
        print(f"restamped {len(index)} of {len(part)} stale rows in {args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
