"""Carry results rows across a change of the kernel source hash's scheme, proven.

python3 -m tools.rehash_rows RESULTS.parquet [RESULTS2 ...] --measured-at COMMIT [--scheme raw|ast-dump-py312] [--write]

Old schemes: `raw` (file bytes, rows before 2026-12-04) and `ast-dump-py312` (`ast.dump` of the syntax tree as
Python 3.12 prints it, i.e. with `type_params=[]` on every def and class: rows written on the GPU machine on
2026-12-04 before the hash became `revision.canonical_dump`, the same on every Python). A row keeps its freshness
only when (1) its recorded hash is the old scheme's hash of its variant's files at COMMIT (the tree it was measured
with) and (2) those files' syntax trees at COMMIT equal this tree's (formatting, comments and docstrings differ at
most). Such rows get this tree's hash; every other row is left as it is.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import subprocess
import tarfile
import tempfile
from pathlib import Path

from blockscope import kernels, paths
from blockscope.profiling.results import load_results, revision, save_results

DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@contextlib.contextmanager
def ast_dump_py312():
    """revision.code_bytes as it was, `ast.dump`, printed as Python 3.12 prints it (`type_params=[]` on every def and
    class, after the fields 3.11 has): patched into this process for the context."""
    fields = {kind: kind._fields for kind in DEFS}
    parse, canonical = ast.parse, revision.canonical_dump

    def parse_312(*args, **kwargs):
        tree = parse(*args, **kwargs)
        for node in ast.walk(tree):
            if isinstance(node, DEFS) and not hasattr(node, "type_params"):
                node.type_params = []
        return tree

    for kind in DEFS:
        if "type_params" not in kind._fields:
            kind._fields = (*kind._fields, "type_params")
    ast.parse, revision.canonical_dump = parse_312, lambda tree: ast.dump(tree, include_attributes=False)
    try:
        yield
    finally:
        for kind, names in fields.items():
            kind._fields = names
        ast.parse, revision.canonical_dump = parse, canonical


def hashes_at(tree_kernels: Path, scheme: str = "raw") -> dict[str, tuple[str, str]]:
    """variant -> (old-scheme hash, current syntax-tree hash) of its files in the kernels folder `tree_kernels`."""
    found = {}
    for variant in kernels.VARIANTS:
        module = revision._variant_module(variant) or variant
        try:
            files = revision.module_files(module, root=tree_kernels)
        except ValueError:
            continue
        if scheme == "raw":
            old = revision.files_hash(files, tree_kernels, raw=True)
        else:
            with ast_dump_py312():
                old = revision.files_hash(files, tree_kernels)
        found[variant] = (old, revision.files_hash(files, tree_kernels))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path)
    parser.add_argument("--measured-at", required=True, help="the commit whose kernels/ the rows were measured with")
    parser.add_argument("--scheme", choices=("raw", "ast-dump-py312"), default="raw", help="the rows' hash scheme")
    parser.add_argument("--write", action="store_true", help="save the restamped files")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="blockscope-rehash-") as tmp:
        command = ["git", "-C", str(paths.IMPORT_ROOT), "archive", args.measured_at, "kernels"]
        archive = subprocess.run(command, check=True, capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        old = hashes_at(Path(tmp) / "kernels", args.scheme)
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
