"""Kernel revision of a results row: which kernel source produced it, and whether that source has changed since.

`kernel_source_hash(variant)`:
  * a Blockscope variant (kernels.VARIANTS): the first 12 hex digits of the sha256 of the source files its launch
    uses: kernels/<module>.py of its launcher plus every kernels module it imports, transitively, found by
    reading the imports (`from . import x`, `from .x import y`, `from kernels.x import y`, also imports inside
    functions): e.g. teaching = teaching.py + _common.py + plan.py. 'auto' imports the registry at run time, so
    its hash covers every variant, and it adds the shipped tuning tables (kernels/tuned/*.json) that decide its
    picks. Python files are hashed by path relative to kernels/ and syntax tree without docstrings (formatting and
    comments change nothing), other files by content, in path order. kernels/aot.py (the ahead-of-time store's
    loader) is neither hashed nor followed: the compiled kernel it hands out is keyed by the kernel's own source,
    so its code changes no result (and following its imports would tie every variant to every other). Nor are
    kernels/launches.py (launch records: they replay the launch auto recorded, bit for bit), kernels/tables.py
    (where the tables live; the tables themselves are hashed) and kernels/triton_startup.py (Triton's start-up on
    a thread: nothing compiled or launched changes).
  * torch and the peer backends: the versions string of the package that provides the kernel, e.g.
    'torch==2.11.0' (torch, inductor) or 'liger-kernel==0.6.1' ('<package>==not installed' when missing).
`kernel_revision` = '<source hash>@triton-<Triton version of the run>'.

A row is *stale* when it is a Blockscope variant's row whose recorded hash differs from this tree's: the kernel
changed since it was measured. A different Triton version (or torch / peer package version) alone is not stale:
it is reported separately ('other_triton', 'other_version'), so a laptop on Triton 3.7 reading an H200 capture
made on 3.6 does not see every row flagged. Rows without a hash (files written before the column existed) are
'unknown'. Imports neither streamlit nor plotly.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.metadata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from blockscope import paths

KERNELS_DIR = paths.KERNELS_DIR
HASH_DIGITS = 12
UNKNOWN = "unknown"
STATUS_VALUES: tuple[str, ...] = ("current", "stale", "unknown", "other_version")
TORCH_BACKENDS: tuple[str, ...] = ("torch", "inductor")  # kernels come from the torch package itself
DATA_FILES: dict[str, tuple[str, ...]] = {
    "auto": ("tuned/*.json",),  # non-Python inputs of a module's launch
    "native": ("native_launch.cpp",),
}


def _imported_modules(path: Path, root: Path = KERNELS_DIR) -> set[str]:
    """Names of the kernels modules `path` imports (relative, or as [blockscope.]kernels.<name>), anywhere in it."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module is None:  # from . import a, b
                names.update(alias.name for alias in node.names)
            elif node.level == 1 and node.module:  # from .a import x
                names.add(node.module.split(".")[0])
            elif node.level == 0 and node.module and node.module.removeprefix("blockscope.").startswith("kernels."):
                names.add(node.module.removeprefix("blockscope.").split(".")[1])
            elif node.level == 0 and node.module in ("kernels", "blockscope.kernels"):  # from kernels import a
                names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.removeprefix("blockscope.").startswith("kernels."):
                    names.add(alias.name.removeprefix("blockscope.").split(".")[1])
    return {name for name in names if (root / f"{name}.py").is_file()}


# kernels modules that never change what a kernel computes (see above): the ahead-of-time store (aot), the launch
# records that replay exactly the launch auto made (launches), where auto's tables live (tables) and Triton's
# start-up on a thread (triton_startup)
NOT_KERNEL_SOURCE = frozenset({"aot", "launches", "tables", "triton_startup"})


def module_files(module: str, root: Path = KERNELS_DIR) -> list[Path]:
    """kernels/<module>.py and every kernels module it imports, transitively, plus its data files (sorted); `root`
    is the kernels folder (another tree's, to compare)."""
    if not (root / f"{module}.py").is_file():
        allowed = ", ".join(sorted(p.stem for p in root.glob("*.py")))
        raise ValueError(f"no kernels module {module!r}; allowed: {allowed}")
    seen: set[str] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(_imported_modules(root / f"{name}.py", root) - seen - NOT_KERNEL_SOURCE)
    files = {root / f"{name}.py" for name in seen}
    for name in seen:
        for pattern in DATA_FILES.get(name, ()):
            files.update(root.glob(pattern))
    return sorted(files)


def code_bytes(path: Path) -> bytes:
    """What a file contributes to the hash: a Python file's syntax tree without docstrings (so formatting, comments
    and docstrings never make a row stale; `canonical_dump`, the same on every Python), any other file's bytes."""
    if path.suffix != ".py":
        return path.read_bytes()
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return canonical_dump(tree).encode()


def canonical_dump(node: object) -> str:
    """`node`'s syntax tree as text that is the same on every Python version: like `ast.dump`, but fields that are
    None or empty lists are left out (3.12 adds `type_params=[]` to every def and class, 3.13 drops empty fields),
    so the data of a GPU machine on another Python is not marked stale by the version alone."""
    if isinstance(node, ast.AST):
        fields = []
        for name in node._fields:
            value = getattr(node, name, None)
            if value is None or (isinstance(value, list) and not value):
                continue
            fields.append(f"{name}={canonical_dump(value)}")
        return f"{type(node).__name__}({', '.join(fields)})"
    if isinstance(node, list):
        return "[" + ", ".join(canonical_dump(item) for item in node) + "]"
    return repr(node)


def files_hash(files: list[Path], root: Path = KERNELS_DIR, raw: bool = False) -> str:
    """First HASH_DIGITS hex digits of sha256 over (relative path, code_bytes) of `files`, in path order; `raw`:
    over the files' bytes instead (the scheme of rows written before 2026-12-04)."""
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update((path.read_bytes() if raw else code_bytes(path)) + b"\0")
    return digest.hexdigest()[:HASH_DIGITS]


def _variant_module(variant: str) -> str | None:
    """The kernels module whose launcher runs a registered variant ('teaching' -> 'teaching'); None otherwise."""
    from blockscope import kernels

    entry = kernels.VARIANTS.get(variant)
    if entry is None:
        return None
    module = getattr(entry.launcher, "__module__", "") or ""
    return module.split(".")[-1] if module.startswith(("kernels.", "blockscope.kernels.")) else variant


def backend_versions(variant: str) -> str:
    """'<package>==<version>' of the package whose kernel a torch / peer backend runs."""
    from blockscope.profiling.results import PEER_PACKAGES

    package = "torch" if variant in TORCH_BACKENDS else PEER_PACKAGES.get(variant, variant)  # unknown: its own
    try:
        version = importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        version = "not installed"
    return f"{package}=={version}"


OP_KERNEL_MODULES: dict[str, str] = {"masked_softmax": "masked", "ragged_softmax": "ragged"}  # a fused op's module
OP_BACKEND = "blockscope"  # the `variant` of a fused op's rows that ran Blockscope's kernel (op sweep)


@functools.cache
def op_source_hash(op: str) -> str:
    """This tree's kernel source hash of a fused op's Blockscope kernel (kernels/masked.py, kernels/ragged.py)."""
    return files_hash(module_files(OP_KERNEL_MODULES[op]))


@functools.cache
def kernel_source_hash(variant: str) -> str:
    """This tree's kernel source hash of a Blockscope variant, or the package versions string of torch / a peer."""
    module = _variant_module(variant)
    if module is None:
        return backend_versions(variant)
    return files_hash(module_files(module))


def kernel_revision(source_hash: str | None, triton_version: str | None) -> str:
    """'<source hash>@triton-<version>' ('unknown' parts where missing)."""
    return f"{source_hash or UNKNOWN}@triton-{triton_version or UNKNOWN}"


def current_triton_version() -> str | None:
    """The installed Triton's version (None without Triton)."""
    try:
        return importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:
        return None


def is_blockscope_variant(variant: str) -> bool:
    from blockscope import kernels

    return variant in kernels.VARIANTS


def _hash_or_none(hash_of: Callable[[str], str], name: str) -> str | None:
    """hash_of(name), or None where the source cannot be read (nothing to compare with)."""
    try:
        return hash_of(name)
    except Exception:
        return None


def kernel_status(df: pd.DataFrame, current: Mapping[str, str] | None = None) -> pd.Series:
    """Per row: 'stale' (a Blockscope variant, or a fused op's Blockscope kernel, whose recorded kernel_source_hash
    differs from this tree's), 'unknown' (no hash recorded), 'other_version' (torch / a peer measured with another
    package version), 'current' otherwise. `current` maps variant -> hash (default: kernel_source_hash of this
    tree); a fused op's rows compare with op_source_hash."""
    status = pd.Series("current", index=df.index, dtype="string")
    if not len(df):
        return status
    recorded = (
        df["kernel_source_hash"].astype("string")
        if "kernel_source_hash" in df.columns
        else pd.Series(pd.NA, index=df.index, dtype="string")
    )
    variants = df["variant"].astype("string").fillna("")
    ops = df["op"].astype("string").fillna("softmax") if "op" in df.columns else pd.Series("softmax", index=df.index)
    op_rows = (ops.isin(list(OP_KERNEL_MODULES)) & (variants == OP_BACKEND)).astype(bool)  # a fused op's kernel
    now = {}
    for variant in variants[~op_rows].unique():
        if current is not None and variant in current:
            now[variant] = current[variant]
        else:
            now[variant] = _hash_or_none(kernel_source_hash, str(variant))
    expected = variants.map(now).astype("string")
    expected[op_rows] = ops[op_rows].map({op: _hash_or_none(op_source_hash, str(op)) for op in ops[op_rows].unique()})
    differs = (recorded != expected).fillna(False).astype(bool) & expected.notna().to_numpy()
    ours = variants.map({v: is_blockscope_variant(str(v)) for v in variants.unique()}).astype(bool) | op_rows
    status[differs & ours] = "stale"
    status[differs & ~ours] = "other_version"
    status[recorded.isna().to_numpy()] = UNKNOWN
    return status


def stale_rows(df: pd.DataFrame, current: Mapping[str, str] | None = None) -> pd.Series:
    """True for rows whose Blockscope kernel source changed since they were measured (see kernel_status)."""
    return kernel_status(df, current) == "stale"


def other_triton_rows(df: pd.DataFrame, triton_version: str | None = None) -> pd.Series:
    """True for rows measured with a Triton version other than `triton_version` (default: the installed one);
    reported apart from stale rows: the same kernel source, another compiler."""
    version = triton_version if triton_version is not None else current_triton_version()
    if version is None or "triton_version" not in df.columns:
        return pd.Series(False, index=df.index)
    recorded = df["triton_version"].astype("string")
    return (recorded.notna() & (recorded != version)).fillna(False).astype(bool)


def with_revision_columns(df: pd.DataFrame, current: Mapping[str, str] | None = None) -> pd.DataFrame:
    """`df` with 'kernel' ('current' / 'stale' / 'unknown' / 'other_version', see kernel_status) after the config
    columns and kernel_revision shown as 'unknown' where missing (for data tables)."""
    out = df.copy()
    if "variant" not in out.columns:
        return out
    out["kernel_revision"] = (
        out["kernel_revision"].astype("string").fillna(UNKNOWN) if "kernel_revision" in out.columns else UNKNOWN
    )
    status = kernel_status(out, current)
    position = list(out.columns).index("variant") + 1
    out.insert(position, "kernel", status)
    return out


@dataclass(frozen=True)
class RevisionNotice:
    """What the dashboard says about the loaded rows' kernel revisions; `stale` makes it a warning."""

    stale: bool
    text: str


def revision_notice(
    df: pd.DataFrame, current: Mapping[str, str] | None = None, triton_version: str | None = None
) -> RevisionNotice | None:
    """A one-paragraph notice: rows measured with a kernel that has changed since (by variant), rows of another
    Triton version (not flagged as changed), rows without a revision; None when there is nothing to say."""
    if df is None or not len(df) or "variant" not in df.columns:
        return None
    status = kernel_status(df, current)
    parts = []
    stale = status == "stale"
    if stale.any():
        variants = ", ".join(sorted(df.loc[stale, "variant"].astype(str).unique()))
        parts.append(
            f"{int(stale.sum()):,} row(s) ({variants}) were measured with a kernel whose source (for "
            "auto, also its tuning table) has changed since (their kernel_source_hash differs from this "
            "checkout's): their numbers describe the older kernel or pick; the data tables mark them "
            "'stale' in the kernel column."
        )
    version = triton_version if triton_version is not None else current_triton_version()
    other = other_triton_rows(df, version)
    if other.any():
        versions = ", ".join(sorted(df.loc[other, "triton_version"].astype(str).unique()))
        parts.append(
            f"{int(other.sum()):,} row(s) were measured on Triton {versions} (here: {version}); the same "
            "kernel source compiled by another Triton is not flagged as changed."
        )
    unknown = status == UNKNOWN
    if unknown.all() and len(df):
        parts.append("The loaded rows record no kernel revision (written before the column existed): unknown.")
    elif unknown.any():
        parts.append(f"{int(unknown.sum()):,} row(s) record no kernel revision (older files): unknown.")
    if not parts:
        return None
    return RevisionNotice(stale=bool(stale.any()), text=" ".join(parts))
