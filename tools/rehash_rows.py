"""Carry results rows across a change of the kernel source hash's scheme (raw bytes -> syntax tree), proven.

python3 -m tools.rehash_rows RESULTS.parquet [RESULTS2 ...] --measured-at COMMIT [--write]

A row keeps its freshness only when (1) its recorded hash is the raw-bytes hash of its variant's files at COMMIT
(the tree it was measured with) and (2) those files' syntax trees at COMMIT equal this tree's (formatting,
comments and docstrings differ at most). Such rows get this tree's hash; every other row is left as it is.
"""

from __future__ import annotations

import argparse
import io
import subprocess
import tarfile
import tempfile
from pathlib import Path

from blockscope import kernels, paths
from blockscope.profiling.results import load_results, revision, save_results


def hashes_at(tree_kernels: Path) -> dict[str, tuple[str, str]]:
    """variant -> (raw-bytes hash, syntax-tree hash) of its files in the kernels folder `tree_kernels`."""
    found = {}
    for variant in kernels.VARIANTS:
        module = revision._variant_module(variant) or variant
        try:
            files = revision.module_files(module, root=tree_kernels)
        except ValueError:
            continue
        found[variant] = (revision.files_hash(files, tree_kernels, raw=True), revision.files_hash(files, tree_kernels))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path)
    parser.add_argument("--measured-at", required=True, help="the commit whose kernels/ the rows were measured with")
    parser.add_argument("--write", action="store_true", help="save the restamped files")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="blockscope-rehash-") as tmp:
        command = ["git", "-C", str(paths.IMPORT_ROOT), "archive", args.measured_at, "kernels"]
        archive = subprocess.run(command, check=True, capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        old = hashes_at(Path(tmp) / "kernels")
    now = {v: revision.kernel_source_hash(v) for v in old}
    carry = {raw: now[v] for v, (raw, syntax) in old.items() if syntax == now[v]}
    for path in args.results:
        df = load_results(path)
        hits = df["kernel_source_hash"].isin(list(carry)) & df["variant"].isin(list(old))
        hits &= df["kernel_source_hash"] == df["variant"].map({v: raw for v, (raw, _) in old.items()})
        print(f"{path}: {int(hits.sum())} of {len(df)} rows carried to this tree's hash")
        if args.write and hits.any():
            triton = df.loc[hits, "kernel_revision"].astype(str).str.split("@").str[-1]
            df.loc[hits, "kernel_source_hash"] = df.loc[hits, "kernel_source_hash"].map(carry)
            df.loc[hits, "kernel_revision"] = df.loc[hits, "kernel_source_hash"] + "@" + triton
            save_results(df, path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
