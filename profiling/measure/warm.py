"""`warm`: compile ahead, for one arch and with no GPU, every kernel that auto's shipped tuning table launches.

What is compiled (`table_items`): for each entry of the table (kernels/tuned/, or a table given), the kernel its
variant launches at the entry's shape, as a contiguous launch specializes it (16-byte aligned pointers, integers
equal to 1 / divisible by 16), once at the entry's R and once at an R of the other divisible-by-16 class (the same
kernel for any other R of that class); and the backward kernel `choose_backward` picks for that shape, where one
exists. An R x N input `auto` sends to an entry's kernel at another N, or strided rows, specialize differently and
are JIT-compiled at their first launch as before.

`warm()` compiles what is not in the store yet (kernels/aot.py: validated entries are 'cached') in spawned worker
processes with TRITON_INTERPRET cleared (triton.compile for a GPUTarget), writes the manifest and removes entries
of these kernels whose source changed. `plan_records()` then writes the launch record (kernels/launches.py) of
every table shape from the plans and the compiled kernels, with no GPU; `record_launches()` (on a GPU) records them
by launching. Imports neither torch nor triton at module level.
"""

from __future__ import annotations

import importlib
import os
import re
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PASSES_NUM_STAGES = ("online", "persistent")  # launchers that pass plan.num_stages; the others launch with 1


@dataclass(frozen=True)
class WarmItem:
    """One kernel to compile: the module attribute holding it, its argument kinds (kernels.aot.arg_kind), constexprs,
    num_warps, num_stages and compile options (name, value pairs)."""

    label: str = field(compare=False)
    module: str
    attr: str
    kinds: tuple[str, ...]
    constexprs: tuple[tuple[str, int], ...]
    num_warps: int
    num_stages: int
    options: tuple[tuple[str, Any], ...] = ()

    def kernel(self) -> Any:
        return getattr(importlib.import_module(self.module), self.attr)

    def material(self, arch: str) -> dict[str, Any]:
        from blockscope.kernels import aot

        return aot.key_material(
            self.kernel(), self.kinds, dict(self.constexprs), self.num_warps, self.num_stages, dict(self.options), arch
        )


@dataclass
class WarmReport:
    """What a warm run did: entries compiled, already cached, failed (label -> one-line error), stale entries removed,
    the store folder, wall seconds."""

    store: Path
    compiled: int = 0
    cached: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    removed: int = 0
    seconds: float = 0.0
    kernels: dict[str, str] = field(default_factory=dict)  # kernel name -> source hash

    def summary(self) -> str:
        failed = f", {len(self.failed)} failed" if self.failed else ""
        removed = f", {self.removed} stale removed" if self.removed else ""
        return (
            f"{self.compiled} compiled, {self.cached} cached{failed}{removed} in {self.seconds:.1f} s -> {self.store}"
        )


def _int_value(name: str, plan: Any) -> int | None:
    if name in plan.scalar_args:
        return int(plan.scalar_args[name])
    if name == "n_rows":
        return plan.n_rows
    if name == "n_cols" or "stride" in name:  # contiguous rows: row stride = N
        return plan.n_cols
    return None


def _kinds(kernel: Any, plan: Any, pointer_types: dict[str, str]) -> tuple[str, ...]:
    """Argument kinds of a contiguous launch of `plan`: pointers as declared (or the plan's dtype), 16-byte aligned."""
    from blockscope.kernels import aot
    from blockscope.kernels._common import DTYPE_NAMES

    own = "*" + DTYPE_NAMES[plan.dtype]
    kinds = []
    for param in aot.jit_function(kernel).params:
        if param.is_constexpr:
            continue
        declared = pointer_types.get(param.name, "")
        if declared.startswith("*") or (not declared and param.name.endswith("_ptr")):
            kinds.append((declared or own) + ":16")
            continue
        value = _int_value(param.name, plan)
        kinds.append(aot.int_kind(value) if value is not None else (declared or "i32"))
    return tuple(kinds)


def _item(label: str, kernel: Any, plan: Any, declared: dict[str, str], num_stages: int, options: dict) -> WarmItem:
    from blockscope.kernels import aot

    fn = aot.jit_function(kernel).fn
    return WarmItem(
        label=label,
        module=fn.__module__,
        attr=fn.__name__,
        kinds=_kinds(kernel, plan, declared),
        constexprs=tuple(sorted(plan.constexprs.items())),
        num_warps=plan.num_warps,
        num_stages=num_stages,
        options=tuple(sorted(options.items())),
    )


def _row_counts(n_rows: int) -> tuple[int, ...]:
    """The entry's R and one R of the other divisible-by-16 class (Triton specializes n_rows on it)."""
    other = n_rows + 1 if n_rows % 16 == 0 else -(-n_rows // 16) * 16
    return (n_rows, other)


def forward_item(
    variant: str, dtype_name: str, n_rows: int, n_cols: int, tunables: dict | None = None, *, plan: Any = None
) -> WarmItem:
    """The kernel `variant` launches for contiguous R x N rows of `dtype_name` with these tunables (ValueError if
    its plan refuses them); `plan`: that launch's plan when the caller has it already."""
    from blockscope.kernels import get_variant
    from blockscope.kernels._common import dtype_from_name
    from blockscope.profiling.inspect.compiled import launch_options

    dtype = dtype_from_name(dtype_name)
    spec = get_variant(variant)
    plan = plan if plan is not None else spec.plan(n_rows, n_cols, dtype, **dict(tunables or {}))
    options = launch_options(variant, plan)
    stages = plan.num_stages if variant in PASSES_NUM_STAGES else 1
    label = f"{variant} {dtype_name} {n_rows}x{n_cols}"
    return _item(label, spec.kernel, plan, spec.signature(dtype), stages, options)


def backward_item(dtype_name: str, n_rows: int, n_cols: int) -> WarmItem:
    """The backward kernel `choose_backward` picks for contiguous R x N rows of `dtype_name`."""
    from blockscope.kernels import backward
    from blockscope.kernels._common import dtype_from_name

    plan = backward.plan(n_rows, n_cols, dtype_from_name(dtype_name))
    kernel = backward.KERNELS[plan.variant.removeprefix(f"{backward.NAME}_")]
    return _item(f"{plan.variant} {dtype_name} {n_rows}x{n_cols}", kernel, plan, {}, 1, {})


def table_items(table: dict | None = None, *, backward: bool = True) -> tuple[list[WarmItem], dict[str, str]]:
    """(distinct kernels to compile, skipped: label -> why) for a tuning table (default: the first shipped one)."""
    from blockscope.kernels import auto

    table = table if table is not None else auto.load_table(None)
    if table is None:
        raise ValueError(
            f"no tuning table in {auto.SHIPPED_DIR}; allowed: a table written by `python -m profiling tune`"
        )
    items: dict[WarmItem, None] = {}
    skipped: dict[str, str] = {}
    for entry in table["entries"]:
        variant, dtype_name = entry["variant"], entry["dtype"]
        label = f"{variant} {dtype_name} {entry['n_rows']}x{entry['n_cols']}"
        if variant == "torch":
            skipped[label] = "torch.softmax: nothing to compile"
            continue
        n_cols = int(entry["n_cols"])
        for n_rows in _row_counts(int(entry["n_rows"])):
            calls: list[tuple[Any, tuple]] = [
                (forward_item, (variant, dtype_name, n_rows, n_cols, entry.get("tunables", {})))
            ]
            if backward:
                calls.append((backward_item, (dtype_name, n_rows, n_cols)))
            for make, arguments in calls:
                try:
                    items.setdefault(make(*arguments))
                except (ValueError, KeyError, TypeError) as error:
                    skipped[label] = f"{type(error).__name__}: {error}"
    return list(items), skipped


def _worker_init() -> None:
    os.environ.pop("TRITON_INTERPRET", None)


def compile_items(items: Sequence[WarmItem], store: str, arch: str) -> list[tuple[str, str, str]]:
    """Worker task: (label, 'compiled' | 'cached' | 'failed', error) per item."""
    from blockscope.kernels import aot

    results = []
    for item in items:
        try:
            status = aot.compile_into(Path(store), item.kernel(), item.material(arch))
            results.append((item.label, status, ""))
        except Exception as error:
            text = str(error).strip().splitlines()[0][:200] if str(error).strip() else ""
            results.append((item.label, "failed", f"{type(error).__name__}: {text}"))
    return results


def _writable(folder: Path) -> str | None:
    """Why `folder` cannot hold a store (one line), or None."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".probe-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as error:
        return (
            f"kernel store {folder} is not writable ({type(error).__name__}); allowed: a writable folder "
            "(--out or BLOCKSCOPE_KERNEL_CACHE)"
        )
    return None


def warm(
    arch: str,
    out: Path | str | None = None,
    *,
    items: Sequence[WarmItem] | None = None,
    workers: int | None = None,
    timeout_s: float = 3600.0,
) -> WarmReport:
    """Compile `items` (default: table_items()) for `arch` into the store under `out` (default: the kernel store
    root, kernels.aot.store_root()). ValueError for a bad arch, an unwritable store or a store that is off."""
    import multiprocessing

    from blockscope.kernels import aot

    started = time.perf_counter()
    aot.parse_arch(arch)
    store = aot.store_dir(arch, out)
    if store is None:
        raise ValueError(f"{aot.STORE_ENV} is off; allowed: --out DIR or {aot.STORE_ENV} set to a folder")
    problem = _writable(store)
    if problem is not None:
        raise ValueError(problem)
    if items is None:
        items, _ = table_items()
    report = WarmReport(store=store)
    todo: list[WarmItem] = []
    for item in items:
        kernel = item.kernel()
        report.kernels[aot.kernel_name(kernel)] = aot.source_hash(kernel)
        material = item.material(arch)
        if aot.check_entry(aot.entry_dir(store, material), material) is None:
            report.cached += 1
        else:
            todo.append(item)
    report.removed = aot.remove_stale(store, report.kernels)
    if todo:
        count = max(1, min(workers or os.cpu_count() or 1, len(todo)))
        groups = [todo[index::count] for index in range(count)]
        with ProcessPoolExecutor(
            max_workers=count, mp_context=multiprocessing.get_context("spawn"), initializer=_worker_init
        ) as executor:
            from blockscope.profiling.measure.precompile import bare_main

            with bare_main():  # spawned workers must not rerun a Streamlit page running as __main__
                futures = [executor.submit(compile_items, group, str(store), arch) for group in groups]
            for future, group in zip(futures, groups, strict=True):
                try:
                    results = future.result(timeout=timeout_s)
                except Exception as error:  # a crashed worker or the timeout: its items stay uncompiled
                    for item in group:
                        report.failed[item.label] = f"worker failed: {type(error).__name__}"
                    continue
                for label, status, error in results:
                    if status == "failed":
                        report.failed[label] = error
                    elif status == "cached":
                        report.cached += 1
                    else:
                        report.compiled += 1
    aot.write_manifest(store, arch, report.kernels)
    report.seconds = time.perf_counter() - started
    return report


@dataclass
class PackageReport:
    """A package build: the warm report of its kernels, the package folder, problems check_package found."""

    folder: Path
    warm: WarmReport
    problems: list[str] = field(default_factory=list)
    records: RecordReport | None = None  # launch records planned into the package (None: its table is for another arch)


def build_package(
    arch: str,
    out: Path | str,
    *,
    table_path: Path | str | None = None,
    backward: bool = True,
    workers: int | None = None,
) -> PackageReport:
    """A deployable folder: tuned/<gpu>.json (the table, default the shipped one), kernels/ (warm's store of every
    kernel the table launches, for `arch`) and package.json (format, Triton, arch, table checksum, one line per
    kernel: what it is for, its folder, launch metadata); then checked by loading every kernel (no compiling).
    ValueError for a bad arch, table or unwritable folder."""
    import hashlib
    import json
    import shutil

    from blockscope.kernels import aot, auto

    aot.parse_arch(arch)
    folder = Path(out)
    source = Path(table_path) if table_path is not None else next(iter(sorted(auto.SHIPPED_DIR.glob("*.json"))), None)
    if source is None or not source.is_file():
        raise ValueError(f"tuning table {source} not found; allowed: a table written by `python -m profiling tune`")
    try:
        table = json.loads(source.read_text())
        if table.get("format") != auto.TABLE_FORMAT or not isinstance(table.get("entries"), list):
            raise ValueError
    except (OSError, ValueError, AttributeError):
        raise ValueError(f"{source}: not a Blockscope tuning table (format {auto.TABLE_FORMAT})") from None
    items, _ = table_items(table, backward=backward)
    report = warm(arch, folder / "kernels", items=items, workers=workers)
    (folder / "tuned").mkdir(exist_ok=True)
    table_file = folder / "tuned" / source.name
    if source.resolve() != table_file.resolve():
        shutil.copyfile(source, table_file)
    store = aot.store_dir(arch, folder / "kernels")
    listed = []
    for item in items:
        material = item.material(arch)
        path = aot.entry_dir(store, material)
        if item.label in report.failed or not path.is_dir():
            continue
        metadata = json.loads((path / f"{material['kernel']}.json").read_text())
        listed.append(
            {
                "label": item.label,
                "module": item.module,
                "attr": item.attr,
                "entry": str(path.relative_to(folder)),
                "kinds": list(item.kinds),
                "constexprs": dict(item.constexprs),
                "num_warps": item.num_warps,
                "num_stages": item.num_stages,
                "options": dict(item.options),
                "shared_bytes": metadata.get("shared"),
            }
        )
    package = {
        "format": aot.PACKAGE_FORMAT,
        "triton": aot.triton_version(),
        "arch": aot.arch_name(aot.parse_arch(arch)),
        "table": f"tuned/{source.name}",
        "table_sha256": hashlib.sha256(table_file.read_bytes()).hexdigest(),
        "store": "kernels",
        "kernels": listed,
    }
    (folder / aot.PACKAGE).write_text(json.dumps(package, indent=1, sort_keys=True))
    try:
        records = plan_records(arch, folder / "kernels", table_file=table_file)
    except ValueError:
        records = None  # a table of another GPU arch: its launches are left to the JIT and the store
    return PackageReport(folder=folder, warm=report, problems=aot.check_package(folder, load=True), records=records)


@dataclass
class RecordReport:
    """What `warm --record` did: shapes recorded (launch records written or already valid), shapes whose launch
    was not recordable (label -> why), the records folder, wall seconds."""

    folder: Path | None
    recorded: int = 0
    torch_choices: int = 0
    missing: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    how: str = "recorded"  # or "planned" (plan_records: without a GPU)

    def summary(self) -> str:
        missing = f", {len(self.missing)} not {self.how}" if self.missing else ""
        return (
            f"{self.recorded} launch records {self.how} ({self.torch_choices} of them torch.softmax){missing} in "
            f"{self.seconds:.1f} s -> {self.folder}"
        )


MAX_TABLE_BYTES = 16 * 2**20  # a tuning table is about 100 KB; plan_records reads no more than this


def planned_record(entry: dict, store: Path, arch: str, table_digest: str, gpu: str) -> dict:
    """The launch record (kernels/launches.py) of one tuning-table entry, planned without a GPU: the kernel, its
    specialization and cubin from the store (compiled by warm), the grid, block, shared memory and cluster size from
    its plan, and the parameters packed as the launcher binds them for contiguous rows (input_ptr: the input,
    output_ptr: the output, *_ptr of a split-row workspace; strides N, n_rows R, n_cols N), with the cubin's bytes
    under 'cubin_bytes'. Split-row grids (SMs x blocks per SM) are left to the loader ('resident'), so the record
    holds no SM count. ValueError when the entry's kernel is not in the store or its launch cannot be planned."""
    import json

    import torch

    from blockscope.kernels import aot, get_variant, launches, native
    from blockscope.kernels._common import DTYPE_NAMES, dtype_from_name

    variant, dtype_name = entry["variant"], entry["dtype"]
    n_rows, n_cols = int(entry["n_rows"]), int(entry["n_cols"])
    dtype = dtype_from_name(dtype_name)
    record: dict[str, Any] = {
        "format": launches.FORMAT,
        "dtype": DTYPE_NAMES[dtype],
        "n_rows": n_rows,
        "n_cols": n_cols,
        "variant": variant,
        "tunables": dict(entry.get("tunables", {})),
        "gpu": gpu,
        "capability": aot.parse_arch(arch),
        "sm_count": None,
        "sources": launches.sources_digest(),
        "table": table_digest,
    }
    if variant == "torch":
        return record
    plan = get_variant(variant).plan(n_rows, n_cols, dtype, **dict(entry.get("tunables", {})))
    item = forward_item(variant, dtype_name, n_rows, n_cols, plan=plan)
    if plan.grid_resolved_at_launch and "CHUNKS" not in plan.constexprs:  # persistent: a grid from occupancy alone
        raise ValueError(f"{item.label}: a grid resolved at launch that a record cannot resolve (recorded on use)")
    kernel = item.kernel()
    material = item.material(arch)
    folder = aot.entry_dir(store, material)
    if aot.check_entry(folder, material) is not None:
        raise ValueError(f"{item.label}: its kernel is not in the store (run warm for {arch} first)")
    name = material["kernel"]
    metadata = json.loads((folder / f"{name}.json").read_text())
    cubin = (folder / f"{name}.cubin").read_bytes()
    signature, _, _ = aot.specialization(kernel, item.kinds, dict(item.constexprs))
    x, y = torch.empty(2), torch.empty(2)  # stand-ins: pack_params finds the pointer slots by data pointer
    workspace = {slot: torch.empty(2) for slot in launches.WORKSPACE_PARAMS}  # split-row workspace pointers
    bound: list[Any] = []
    for param in aot.jit_function(kernel).params:
        kind = signature[param.name]
        if param.name == "input_ptr":
            bound.append(x)
        elif param.name == "output_ptr":
            bound.append(y)
        elif param.name in workspace:
            bound.append(workspace[param.name])
        elif kind == "constexpr":
            bound.append(None)  # not packed
        else:
            value = _int_value(param.name, plan)
            if value is None or not kind.startswith(("i", "u")):
                raise ValueError(f"{item.label}: no planned value for parameter {param.name} ({kind})")
            bound.append(value)
    named = {tensor.data_ptr(): slot for slot, tensor in workspace.items()}
    packed = native.pack_params(list(signature.values()), bound, x, y, workspace=named)
    cluster = plan.cluster_size
    grid = (tuple(plan.grid) + (1, 1))[:3]
    if cluster > 1:
        grid = (grid[0] // cluster, grid[1], grid[2])  # clusters; the launch multiplies x by num_ctas
    shared = plan.shared_bytes(int(metadata["shared"]))
    cooperative = bool(dict(item.options).get("launch_cooperative_grid", False))
    record.update(
        launches.launch_fields(str(metadata["name"]), list(grid), 32 * item.num_warps, shared, cluster, cooperative)
    )
    record.update(launches.packed_fields(packed, cubin))
    if packed.named:
        if variant not in launches.WORKSPACE_VARIANTS:
            raise ValueError(f"{item.label}: a workspace the launch record of {variant} cannot fill")
        record["workspace"] = {"chunks": int(plan.constexprs["CHUNKS"]), "slots": dict(packed.named)}
    if plan.grid_resolved_at_launch:
        chunks = int(plan.constexprs["CHUNKS"])
        record["resident"] = {"chunks": chunks}
        record["grid"] = [chunks, 1, 1]  # at least one row's programs; the loader resolves it
    return record


def plan_records(arch: str, out: Path | str | None = None, *, table_file: Path | str | None = None) -> RecordReport:
    """Without a GPU: write the planned launch record (planned_record) of every shape of a tuning table (default:
    the first shipped one) whose GPU has compute capability `arch` into the store under `out` (default: the kernel
    store root), from the kernels warm compiled there. A fresh process's first `auto` call at those shapes on that
    GPU then loads the cubin through the CUDA driver and imports no Triton. The records name the table by its
    sha256: a process that reads another table skips them. ValueError when the store is off or the table is not
    for `arch` (nothing written)."""
    import hashlib
    import json

    from blockscope.kernels import aot, auto, launches, tables

    started = time.perf_counter()
    source = Path(table_file) if table_file is not None else next(iter(tables.candidates(None)), None)
    if source is None or not source.is_file():
        raise ValueError(
            f"no tuning table in {auto.SHIPPED_DIR}; allowed: a table written by `python -m profiling tune`"
        )
    with open(source, "rb") as handle:
        data = handle.read(MAX_TABLE_BYTES + 1)
    try:
        table = json.loads(data) if len(data) <= MAX_TABLE_BYTES else None
    except ValueError:
        table = None
    if (
        not isinstance(table, dict)
        or table.get("format") != auto.TABLE_FORMAT
        or not isinstance(table.get("entries"), list)
    ):
        raise ValueError(
            f"{source}: not a Blockscope tuning table (format {auto.TABLE_FORMAT}, at most {MAX_TABLE_BYTES} bytes)"
        )
    gpu, capability = str(table.get("gpu", "")), str(table.get("compute_capability", ""))
    wanted = aot.parse_arch(arch)
    if not gpu or capability.replace(".", "") != str(wanted):
        raise ValueError(
            f"{source} is for {gpu or 'an unnamed GPU'} (compute capability {capability or '?'}), not {arch}; "
            f"allowed: --arch sm_{capability.replace('.', '') or 'XX'}"
        )
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,99}", tables.gpu_key(gpu)):  # the records folder's name
        raise ValueError(f"{source} names the GPU {gpu[:100]!r}; allowed: letters, digits, spaces, '.', '_', '-'")
    root = Path(out) if out is not None else aot.store_root()
    if root is None:
        raise ValueError(f"{aot.STORE_ENV} is off; allowed: --out DIR or {aot.STORE_ENV} set to a folder")
    store = aot.store_dir(arch, root)
    folder = root / launches.FOLDER / tables.gpu_key(gpu)
    digest = hashlib.sha256(data).hexdigest()
    report = RecordReport(folder=folder, how="planned")
    planned: set[str] = set()
    for index, entry in enumerate(table["entries"]):
        if not isinstance(entry, dict) or not {"variant", "dtype", "n_rows", "n_cols"} <= set(entry):
            report.missing[f"entry {index}"] = "not a table entry (variant, dtype, n_rows, n_cols)"
            continue
        label = f"{entry['dtype']} {entry['n_rows']}x{entry['n_cols']}"
        if label in planned:  # auto takes a shape's first entry (the nearest, first among equals)
            report.missing[f"{label} ({entry['variant']})"] = "a second entry for this shape: auto takes the first"
            continue
        planned.add(label)
        try:
            record = planned_record(entry, store, arch, digest, gpu)
            if launches.write(folder, record, record.pop("cubin_bytes", None)) is None:
                report.missing[label] = f"the records folder holds {launches.MAX_RECORDS} records already"
                continue
        except (ValueError, KeyError, TypeError, OSError) as error:
            report.missing[label] = f"{entry['variant']}: {str(error).splitlines()[0] if str(error) else error}"
            continue
        report.recorded += 1
        report.torch_choices += entry["variant"] == "torch"
    report.seconds = time.perf_counter() - started
    return report


def record_launches(out: Path | str | None = None, *, max_bytes: int = 8 * 2**30) -> RecordReport:
    """On a CUDA GPU: call `auto` once on a contiguous R x N input of every shape in the tuning table auto reads for
    this GPU, which records each launch (kernels/launches.py) into the store under `out` (default: the kernel store
    root): a fresh process's first call at those shapes then needs no Triton. Shapes whose input would exceed
    `max_bytes` are listed as missing. ValueError without a CUDA GPU or with the store off."""
    import torch

    from blockscope import kernels
    from blockscope.kernels import aot, auto, launches

    if not torch.cuda.is_available():
        raise ValueError("--record runs each launch once and needs a CUDA GPU; allowed: warm without --record here")
    started = time.perf_counter()
    previous = os.environ.get(aot.STORE_ENV)
    if out is not None:
        os.environ[aot.STORE_ENV] = str(Path(out).resolve())
    try:
        if aot.store_root() is None:
            raise ValueError(f"{aot.STORE_ENV} is off; allowed: --out DIR or {aot.STORE_ENV} set to a folder")
        launches.clear()
        device = launches.Device.of(torch.cuda.current_device())
        table = auto.load_table(device.name)
        if table is None:
            raise ValueError(f"no tuning table for {device.name}; allowed: a GPU with one (python -m profiling tune)")
        folder = launches.records_dir(device.name)
        report = RecordReport(folder=folder)
        shapes = sorted({(e["dtype"], int(e["n_rows"]), int(e["n_cols"]), e["variant"]) for e in table["entries"]})
        for dtype_name, n_rows, n_cols, variant in shapes:
            dtype = kernels.dtype_from_name(dtype_name)
            label = f"{dtype_name} {n_rows}x{n_cols}"
            if n_rows * n_cols * dtype.itemsize * 2 > max_bytes:
                report.missing[label] = f"x and y take more than {max_bytes / 2**30:g} GiB"
                continue
            x = torch.randn(n_rows, n_cols, device="cuda", dtype=dtype)
            kernels.softmax(x, variant="auto")
            torch.cuda.synchronize()
            del x
            path = folder / launches.record_name(dtype, n_rows, n_cols)
            if path.is_file():
                report.recorded += 1
                report.torch_choices += variant == "torch"
            else:
                report.missing[label] = (
                    f"{variant}: its launch is not recordable (more than one launch, or buffers a record cannot fill)"
                )
        report.seconds = time.perf_counter() - started
        return report
    finally:
        if out is not None:
            if previous is None:
                os.environ.pop(aot.STORE_ENV, None)
            else:
                os.environ[aot.STORE_ENV] = previous
        launches.clear()
