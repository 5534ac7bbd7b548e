"""Ahead-of-time compiled kernels: a folder of cubins that GPU launches load instead of JIT-compiling.

`python -m profiling warm --arch sm_90` (profiling/measure/warm.py) compiles kernels offline (`triton.compile` for a
GPUTarget, no GPU needed) into a store; `kernels._common.launch` asks `load()` before it would JIT-compile a kernel.

Layout (one store per Triton version and arch):

    <root>/<triton version>/<arch>/manifest.json          format, triton version, arch, kernel source hashes
    <root>/<triton version>/<arch>/<kernel>/<key>/entry.json   the key material, sha256 of the two files below
    <root>/<triton version>/<arch>/<kernel>/<key>/<kernel>.json   Triton's metadata of the compiled kernel
    <root>/<triton version>/<arch>/<kernel>/<key>/<kernel>.cubin  the binary

<root> is $BLOCKSCOPE_KERNEL_CACHE (0 or off: no store at all), default ${XDG_CACHE_HOME:-~/.cache}/blockscope/kernels.
<key> hashes the key material: kernel name, kernel source hash (JITFunction.cache_key: the kernel's source and every
@triton.jit function it calls), the launch's specialization (pointer dtypes and 16-byte alignment, integers equal
to 1 / divisible by 16 / 64-bit), constexprs, num_warps, num_stages, compile options, arch, Triton version.

Why CompiledKernel(src, files, hash) and not a Triton-cache layout: it is exactly what `triton.compile` returns on
its own cache hit (Triton 3.6 and 3.7 alike), and the direct launch path (kernels/_common.py) already runs
CompiledKernel objects, so a loaded kernel launches through Triton's own launcher with nothing re-implemented. A
Triton-cache layout would instead have to reproduce Triton's cache key, which hashes the backend (ptxas version),
cache-invalidating environment variables and the options' full repr: any drift means a silent miss, and pointing
TRITON_CACHE_DIR at the store would also write every other kernel there. Our key is ours, checked field by field.

Invalidation: another Triton version or arch is another folder (and the manifest and each entry are checked, in
case a store is copied to the wrong place); a changed kernel source changes the key, so the stale entry is never
found (`warm` removes stale entries; a store whose manifest names another source hash for a kernel says so once).
Anything wrong - corrupt, truncated or foreign-arch files, a store of another Triton, an unreadable folder - is
reported once as a one-line RuntimeWarning and that kernel is JIT-compiled as before: never a crash, never a kernel
compiled for other arguments. A read-only store is fine to load from (nothing is written at runtime).
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib
import inspect as pyinspect
import json
import os
import shutil
import textwrap
import threading
import types
import warnings
from pathlib import Path
from typing import Any

import torch

from . import triton_startup

FORMAT = 1
STORE_ENV = "BLOCKSCOPE_KERNEL_CACHE"
MANIFEST = "manifest.json"
ENTRY = "entry.json"
ELF_MAGIC = b"\x7fELF"
_REPORTED: set[str] = set()
_JIT: dict[Any, Any] = {}
_SOURCE_HASHES: dict[Any, str] = {}  # per kernel function, for this process
_MANIFESTS: dict[tuple[str, float], dict | str] = {}


def triton_version() -> str:
    import triton

    return triton.__version__


def parse_arch(arch: str) -> int:
    """'sm_90' -> 90 (Triton's capability number); ValueError naming what is allowed."""
    text = str(arch).strip().lower()
    digits = text.removeprefix("sm_").removesuffix("a")
    if not text.startswith("sm_") or not digits.isdigit() or not 30 <= int(digits) <= 200:
        raise ValueError(f"arch={arch!r}; allowed: sm_<major><minor>, such as sm_80, sm_90 or sm_100")
    return int(digits)


def arch_name(capability: int) -> str:
    """90 -> 'sm_90'."""
    return f"sm_{capability}"


def store_root() -> Path | None:
    """$BLOCKSCOPE_KERNEL_CACHE, default ${XDG_CACHE_HOME:-~/.cache}/blockscope/kernels; None when set to 0 or off."""
    value = os.environ.get(STORE_ENV, "")
    if value.strip().lower() in ("0", "off", "none", "false"):
        return None
    if value:
        return Path(value).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "blockscope" / "kernels"


def store_dir(arch: str, root: Path | str | None = None) -> Path | None:
    """The store of this Triton version and `arch` under `root` (default store_root()); None when the store is off."""
    base = Path(root) if root is not None else store_root()
    if base is None:
        return None
    return base / triton_version() / arch_name(parse_arch(arch))


def report(problem: str) -> None:
    """One RuntimeWarning per distinct problem: what is wrong, and that the JIT compiles instead."""
    if problem in _REPORTED:
        return
    _REPORTED.add(problem)
    warnings.warn(f"blockscope kernel store: {problem}; JIT-compiling instead", RuntimeWarning, stacklevel=3)


# ---------------------------------------------------------------- key material


def jit_function(kernel: Any) -> Any:
    """A compilable JITFunction of `kernel` (rebuilt from its Python function under the CPU interpreter); Gluon
    kernels as they are."""
    if getattr(kernel, "is_gluon", lambda: False)():
        return kernel
    from triton.runtime.jit import JITFunction

    if type(kernel) is JITFunction:
        return kernel
    fn = kernel.fn
    if fn not in _JIT:
        _JIT[fn] = JITFunction(fn)
    return _JIT[fn]


def source_hash(kernel: Any) -> str:
    """sha256 of the kernel's source, of every @triton.jit function it calls (transitively) and of the module-level
    numbers they read. Not Triton's JITFunction.cache_key: that one raises under the CPU interpreter, where the
    called functions are InterpretedFunctions; this hash is the same with and without it."""
    fn = jit_function(kernel).fn
    if fn not in _SOURCE_HASHES:
        parts: list[str] = []
        _walk_source(fn, set(), parts)
        _SOURCE_HASHES[fn] = hashlib.sha256("\n".join(parts).encode()).hexdigest()
    return _SOURCE_HASHES[fn]


def _walk_source(fn: Any, seen: set, parts: list[str]) -> None:
    if fn in seen:
        return
    seen.add(fn)
    source = textwrap.dedent(pyinspect.getsource(fn))
    parts.append(f"{fn.__module__}.{fn.__qualname__}\n{source}")
    names = fn.__globals__
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name):
            label, value = node.id, names.get(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            base = names.get(node.value.id)
            if not isinstance(base, types.ModuleType):
                continue
            label, value = f"{node.value.id}.{node.attr}", getattr(base, node.attr, None)
        else:
            continue
        inner = getattr(value, "fn", None)
        if inner is not None and not isinstance(value, types.ModuleType) and hasattr(inner, "__code__"):
            _walk_source(inner, seen, parts)  # a called @triton.jit function (JIT, interpreted or Gluon)
        elif isinstance(value, (bool, int, float, str)) or type(value).__name__ == "constexpr":
            parts.append(f"{label}={value!r}")


def kernel_name(kernel: Any) -> str:
    return jit_function(kernel).fn.__name__


def arg_kind(value: Any) -> str | None:
    """How Triton specializes one runtime argument: '*fp16:16' (pointer dtype, 16-byte aligned), '*fp16',
    '1' (an integer equal to 1), 'i32:16' / 'i64:16' (divisible by 16), 'i32' / 'i64'; None for anything else."""
    if isinstance(value, torch.Tensor):
        name = _TRITON_DTYPES.get(value.dtype)
        if name is None:
            return None
        return f"*{name}:16" if value.data_ptr() % 16 == 0 else f"*{name}"
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return int_kind(value)


def int_kind(value: int) -> str:
    """arg_kind of an integer."""
    if value == 1:
        return "1"
    width = "i32" if -(2**31) <= value < 2**31 else "i64" if -(2**63) <= value < 2**63 else "u64"
    return f"{width}:16" if value % 16 == 0 else width


_TRITON_DTYPES = {
    torch.float16: "fp16",
    torch.bfloat16: "bf16",
    torch.float32: "fp32",
    torch.float64: "fp64",
    torch.int8: "i8",
    torch.int16: "i16",
    torch.int32: "i32",
    torch.int64: "i64",
    torch.uint8: "u8",
    torch.bool: "i1",
}


def specialization(
    kernel: Any, kinds: tuple[str, ...], constexprs: dict[str, int]
) -> tuple[dict[str, str], dict[str, int], dict[tuple, list]]:
    """(signature, constexprs, attrs) for ASTSource from the kinds of the runtime arguments (in order) and the
    constexprs by name, as Triton's JIT specializes a launch."""
    fn = jit_function(kernel)
    signature: dict[str, str] = {}
    values = dict(constexprs)
    attrs: dict[tuple, list] = {}
    runtime = iter(kinds)
    for index, param in enumerate(fn.params):
        name = param.name
        if param.is_constexpr:
            signature[name] = "constexpr"
            continue
        kind = next(runtime)
        if kind == "1":
            signature[name] = "constexpr"
            values[name] = 1
            continue
        base, _, divisible = kind.partition(":")
        if divisible:
            attrs[(index,)] = [["tt.divisibility", 16]]
        signature[name] = base
    return signature, values, attrs


def key_material(
    kernel: Any,
    kinds: tuple[str, ...],
    constexprs: dict[str, int],
    num_warps: int,
    num_stages: int,
    options: dict[str, Any],
    arch: str,
) -> dict[str, Any]:
    """Everything a compiled kernel depends on, JSON-able; two launches share a binary iff these are equal."""
    return {
        "format": FORMAT,
        "kernel": kernel_name(kernel),
        "source": source_hash(kernel),
        "kinds": list(kinds),
        "constexprs": sorted([name, value] for name, value in constexprs.items()),
        "num_warps": int(num_warps),
        "num_stages": int(num_stages),
        "options": sorted([name, value] for name, value in options.items()),
        "arch": arch_name(parse_arch(arch)),
        "triton": triton_version(),
    }


def _plain(value: Any) -> bool:
    """An int or bool: what the store keys hold (JSON-exact)."""
    return isinstance(value, (bool, int))


def entry_key(material: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()[:32]


def entry_dir(store: Path, material: dict[str, Any]) -> Path:
    return Path(store) / material["kernel"] / entry_key(material)


def _source(kernel: Any, material: dict[str, Any]) -> Any:
    signature, constexprs, attrs = specialization(
        kernel, tuple(material["kinds"]), {name: value for name, value in material["constexprs"]}
    )
    fn = jit_function(kernel)
    if getattr(fn, "is_gluon", lambda: False)():
        from triton.experimental.gluon._runtime import GluonASTSource

        return GluonASTSource(fn, signature, constexprs=constexprs, attrs=attrs)
    from triton.compiler import ASTSource

    return ASTSource(fn, signature, constexprs=constexprs, attrs=attrs)


# ---------------------------------------------------------------- writing (warm)


def compile_into(store: Path, kernel: Any, material: dict[str, Any]) -> str:
    """Compile one kernel for material['arch'] offline (TRITON_INTERPRET must be off) into the store, unless a valid
    entry is there; returns 'cached' or 'compiled'. Raises OSError when the store cannot be written."""
    import triton
    from triton.backends.compiler import GPUTarget

    path = entry_dir(store, material)
    if check_entry(path, material) is None:
        return "cached"
    compiled = triton.compile(
        _source(kernel, material),
        target=GPUTarget("cuda", parse_arch(material["arch"]), 32),
        options={
            "num_warps": material["num_warps"],
            "num_stages": material["num_stages"],
            **{name: value for name, value in material["options"]},
        },
    )
    name = material["kernel"]
    cubin = bytes(compiled.asm["cubin"])
    metadata_file = next(Path(p) for c, p in compiled.metadata_group.items() if c.endswith(".json"))
    metadata = metadata_file.read_bytes()
    temporary = path.parent / f".tmp-{path.name}-{os.getpid()}"
    shutil.rmtree(temporary, ignore_errors=True)
    temporary.mkdir(parents=True)
    try:
        (temporary / f"{name}.cubin").write_bytes(cubin)
        (temporary / f"{name}.json").write_bytes(metadata)
        entry = {
            "format": FORMAT,
            "material": material,
            "cubin_sha256": hashlib.sha256(cubin).hexdigest(),
            "metadata_sha256": hashlib.sha256(metadata).hexdigest(),
        }
        (temporary / ENTRY).write_text(json.dumps(entry, indent=1, sort_keys=True))
        shutil.rmtree(path, ignore_errors=True)
        try:
            os.replace(temporary, path)
        except OSError:  # another warm process wrote this entry meanwhile: keep its copy if it is valid
            if check_entry(path, material) is not None:
                raise
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    return "compiled"


def write_atomic(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary file beside it, renamed over it: readers, concurrent writers and
    a kill see the old file or the new one, never half of one."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(temporary, "wb") as handle:
            handle.write(data)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def write_manifest(store: Path, arch: str, sources: dict[str, str]) -> Path:
    """manifest.json: format, Triton version, arch, {kernel name: source hash} (merged with an existing one)."""
    store = Path(store)
    path = store / MANIFEST
    kernels: dict[str, str] = {}
    old = _read_json(path)
    if isinstance(old, dict) and old.get("triton") == triton_version() and isinstance(old.get("kernels"), dict):
        kernels.update(old["kernels"])
    kernels.update(sources)
    manifest = {"format": FORMAT, "triton": triton_version(), "arch": arch_name(parse_arch(arch)), "kernels": kernels}
    write_atomic(path, json.dumps(manifest, indent=1, sort_keys=True).encode())
    return path


def remove_stale(store: Path, sources: dict[str, str]) -> int:
    """Delete entries of the named kernels whose source hash is not the current one; returns how many."""
    removed = 0
    for name, current in sources.items():
        folder = Path(store) / name
        if not folder.is_dir():
            continue
        for entry in folder.iterdir():
            data = _read_json(entry / ENTRY)
            material = data.get("material") if isinstance(data, dict) else None
            if isinstance(material, dict) and material.get("source") not in (None, current):
                shutil.rmtree(entry, ignore_errors=True)
                removed += 1
    return removed


# ---------------------------------------------------------------- reading (launch)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def check_store(store: Path, arch: str) -> str | None:
    """Why this store cannot be used for `arch` under this Triton (one line), or None when it can. A store
    without a manifest is 'empty' (never warmed)."""
    path = Path(store) / MANIFEST
    try:
        stamp = path.stat().st_mtime
    except FileNotFoundError:
        return "empty"
    except OSError as error:
        return f"{path}: unreadable ({type(error).__name__})"
    cached = _MANIFESTS.get((str(path), stamp))
    if cached is None:
        cached = _MANIFESTS[(str(path), stamp)] = _manifest_problem(path, arch)
    return cached if isinstance(cached, str) else None


def _manifest_problem(path: Path, arch: str) -> dict | str:
    manifest = _read_json(path)
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        return f"{path}: not a Blockscope kernel store manifest (format {FORMAT})"
    if manifest.get("triton") != triton_version():
        return f"{path}: made with Triton {manifest.get('triton')}, this is Triton {triton_version()}"
    if manifest.get("arch") != arch_name(parse_arch(arch)):
        return f"{path}: made for {manifest.get('arch')}, this GPU is {arch_name(parse_arch(arch))}"
    return manifest


def manifest_source(store: Path, name: str) -> str | None:
    """The source hash the store's manifest records for kernel `name`."""
    manifest = _read_json(Path(store) / MANIFEST)
    kernels = manifest.get("kernels") if isinstance(manifest, dict) else None
    return kernels.get(name) if isinstance(kernels, dict) else None


def check_entry(path: Path, material: dict[str, Any]) -> str | None:
    """Why the entry folder cannot stand for `material` (one line), or None when it can: missing, corrupt or
    truncated files, a key that is not this one (a foreign or edited entry), metadata of another arch or kernel."""
    path = Path(path)
    if not path.is_dir():
        return "missing"
    entry = _read_json(path / ENTRY)
    if not isinstance(entry, dict) or entry.get("format") != FORMAT:
        return f"{path / ENTRY}: corrupt or not a Blockscope kernel entry"
    if entry.get("material") != material:
        stored = entry.get("material") if isinstance(entry.get("material"), dict) else {}
        differ = sorted(k for k in material if stored.get(k) != material[k]) or ["format"]
        return f"{path}: compiled for other arguments ({', '.join(differ)} differ)"
    name = material["kernel"]
    try:
        cubin = (path / f"{name}.cubin").read_bytes()
        metadata_bytes = (path / f"{name}.json").read_bytes()
    except OSError as error:
        return f"{path}: unreadable ({type(error).__name__})"
    if not cubin.startswith(ELF_MAGIC) or hashlib.sha256(cubin).hexdigest() != entry.get("cubin_sha256"):
        return f"{path / (name + '.cubin')}: truncated or corrupt (checksum differs)"
    if hashlib.sha256(metadata_bytes).hexdigest() != entry.get("metadata_sha256"):
        return f"{path / (name + '.json')}: truncated or corrupt (checksum differs)"
    try:
        metadata = json.loads(metadata_bytes)
        target = metadata["target"]
        wanted = parse_arch(material["arch"])
        if target["backend"] != "cuda" or int(target["arch"]) != wanted:
            return f"{path}: cubin built for {target['backend']} {target['arch']}, wanted cuda {wanted}"
        if metadata["name"] != name or int(metadata["num_warps"]) != material["num_warps"]:
            return f"{path}: metadata names kernel {metadata['name']} with {metadata['num_warps']} warps"
    except (ValueError, KeyError, TypeError) as error:
        return f"{path / (name + '.json')}: corrupt metadata ({type(error).__name__})"
    return None


def load_entry(store: Path, kernel: Any, material: dict[str, Any]) -> Any | None:
    """The CompiledKernel of `material` from the store, validated (check_store, check_entry); None, with a one-line
    report for anything but a plain miss, when it cannot be used. Needs no GPU until it is launched."""
    problem = check_store(store, material["arch"])
    if problem == "empty":
        return None
    if problem is not None:
        report(problem)
        return None
    path = entry_dir(store, material)
    problem = check_entry(path, material)
    if problem == "missing":
        recorded = manifest_source(store, material["kernel"])
        if recorded is not None and recorded != material["source"]:
            report(
                f"{store}: {material['kernel']} changed since it was compiled ahead; allowed: "
                "run `python -m profiling warm` again"
            )
        return None
    if problem is not None:
        report(problem)
        return None
    try:
        from triton.compiler.compiler import CompiledKernel

        name = material["kernel"]
        group = {f"{name}.json": str(path / f"{name}.json"), f"{name}.cubin": str(path / f"{name}.cubin")}
        return CompiledKernel(_source(kernel, material), group, entry_key(material))
    except Exception as error:  # a Triton whose CompiledKernel differs: JIT
        report(f"{path}: cannot be loaded by Triton {triton_version()} ({type(error).__name__}: {error})")
        return None


def load(
    kernel: Any,
    args: tuple,
    constexprs: dict[str, int],
    num_warps: int,
    num_stages: int,
    options: dict[str, Any] | None,
    device: int | None,
) -> Any | None:
    """The store's CompiledKernel for this GPU launch (handles loaded), or None: the caller JIT-compiles.
    Never raises. Where auto's first call began Triton's start-up on a thread (kernels/triton_startup.py), waits
    for its driver first and, before returning None, for its cache key, so that neither this load nor the caller's
    compile makes either again; before a compile it also starts the kernel's launcher build (prebuild_launcher)."""
    triton_startup.wait_driver()
    try:
        material = launch_material(kernel, args, constexprs, num_warps, num_stages, options, device)
    except Exception as error:
        _report_lookup(error)
        return None
    if material is None:
        return None  # an argument warm never stores (floats, other objects): the JIT
    compiled = _load_stored(kernel, material)
    if compiled is None:
        with contextlib.suppress(Exception):  # only ever a head start: Triton builds what this did not
            prebuild_launcher(kernel, material)
        triton_startup.wait_key()  # the JIT compile that follows starts with Triton's cache key
    return compiled


def launch_material(
    kernel: Any,
    args: tuple,
    constexprs: dict[str, int],
    num_warps: int,
    num_stages: int,
    options: dict[str, Any] | None,
    device: int | None,
) -> dict[str, Any] | None:
    """The key material (key_material) of a GPU launch for the arch of `device`; None when an argument, constexpr
    or option is of a kind warm never stores (floats, other objects)."""
    kinds = tuple(arg_kind(a) for a in args)
    if any(k is None for k in kinds) or not all(_plain(v) for v in (*constexprs.values(), *(options or {}).values())):
        return None
    major, minor = torch.cuda.get_device_capability(device)
    return key_material(kernel, kinds, constexprs, num_warps, num_stages, options or {}, f"sm_{major}{minor}")


_LAUNCHERS: dict[str, threading.Thread] = {}  # launcher source sha256 -> the thread building it


def prebuild_launcher(kernel: Any, material: dict[str, Any]) -> threading.Thread | None:
    """Triton 3.6 builds a C launcher module per kernel signature (a compiler run, about 0.37 s on the H200 host,
    experiments/2026-12-04-first-call) when a JIT-compiled kernel first loads, after its compile; Triton 3.7 has
    one generic launcher. Where this Triton builds per signature, start that build on a thread from the launch's
    source (`material`: launch_material; its signature and constants are all the launcher's C source depends on),
    so it runs during the compile and the kernel's load finds the module in Triton's cache. The thread started
    (None: nothing to start: another Triton, turned off with BLOCKSCOPE_TRITON_STARTUP=0, or already started)."""
    if not triton_startup.enabled():
        return None
    from triton.backends.nvidia import driver as nvidia

    make, build = getattr(nvidia, "make_launcher", None), getattr(nvidia, "compile_module_from_src", None)
    if make is None or build is None:
        return None
    if tuple(pyinspect.signature(make).parameters) != ("constants", "signature", "tensordesc_meta"):
        return None  # not the 3.6 launcher this mirrors (CudaLauncher.__init__)
    src = _source(kernel, material)
    names = src.fn.arg_names
    constants = {((names.index(k),) if isinstance(k, str) else k): v for k, v in getattr(src, "constants", {}).items()}
    text = make(constants, dict(src.signature), None)
    key = hashlib.sha256(text.encode()).hexdigest()
    if key in _LAUNCHERS:
        return None

    def run() -> None:
        with contextlib.suppress(Exception):
            build(
                src=text,
                name="__triton_launcher",
                library_dirs=nvidia.library_dirs(),
                include_dirs=nvidia.include_dirs,
                libraries=nvidia.libraries,
            )

    thread = _LAUNCHERS[key] = threading.Thread(target=run, name="blockscope-launcher-build", daemon=True)
    thread.start()
    return thread


def _load_stored(kernel: Any, material: dict[str, Any]) -> Any | None:
    """The store's CompiledKernel of `material` with its handles loaded, or None (no store, a miss, a bad entry)."""
    try:
        store = store_dir(material["arch"])
        if store is None or not store.is_dir():
            return None
        compiled = load_entry(store, kernel, material)
        if compiled is None:
            return None
        compiled._init_handles()
        return compiled
    except Exception as error:
        _report_lookup(error)
        return None


def _report_lookup(error: Exception) -> None:
    with contextlib.suppress(Exception):
        report(f"lookup failed ({type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else ''})")


# ---------------------------------------------------------------- packages (`python -m profiling package`)

PACKAGE = "package.json"
PACKAGE_FORMAT = 1


def check_package(folder: Path | str, *, load: bool = False) -> list[str]:
    """Problems of a package folder, one line each (empty: usable here): package.json, the tuned table (checksum,
    format), the kernel store (manifest: this Triton, the package's arch) and every listed kernel (checksums, key,
    arch, source hash of the kernel as installed here). With `load`, each kernel is also loaded as a Triton
    CompiledKernel (no compiling, no GPU needed)."""
    folder = Path(folder)
    package = _read_json(folder / PACKAGE)
    if not isinstance(package, dict) or package.get("format") != PACKAGE_FORMAT:
        return [f"{folder / PACKAGE}: missing or not a Blockscope package (format {PACKAGE_FORMAT})"]
    problems: list[str] = []
    if package.get("triton") != triton_version():
        problems.append(f"{folder}: packaged with Triton {package.get('triton')}, this is Triton {triton_version()}")
        return problems
    table = folder / str(package.get("table", ""))
    try:
        table_bytes = table.read_bytes()
        entries = json.loads(table_bytes).get("entries")
        if hashlib.sha256(table_bytes).hexdigest() != package.get("table_sha256") or not isinstance(entries, list):
            problems.append(f"{table}: tuned table changed or corrupt (checksum differs)")
    except (OSError, ValueError, AttributeError):
        problems.append(f"{table}: tuned table missing or corrupt")
    arch = str(package.get("arch", ""))
    try:
        store = store_dir(arch, folder / str(package.get("store", "kernels")))
    except ValueError as error:
        return [*problems, f"{folder / PACKAGE}: {error}"]
    problem = check_store(store, arch)
    if problem is not None:
        return [*problems, f"{store}: no kernel store" if problem == "empty" else problem]
    for listed in package.get("kernels", []):
        try:
            path = folder / listed["entry"]
            entry = _read_json(path / ENTRY)
            material = entry["material"] if isinstance(entry, dict) else None
            if not isinstance(material, dict):
                problems.append(f"{path / ENTRY}: corrupt or not a Blockscope kernel entry")
                continue
            kernel = getattr(importlib.import_module(listed["module"]), listed["attr"])
            if material.get("source") != source_hash(kernel):
                problems.append(f"{path}: {material.get('kernel')} changed since it was packaged")
                continue
            if path.resolve() != entry_dir(store, material).resolve():
                problems.append(f"{path}: not where its key puts it")
                continue
            problem = check_entry(path, material)
            if problem is not None:
                problems.append(problem)
            elif load and load_entry(store, kernel, material) is None:
                problems.append(f"{path}: Triton could not load it")
        except (KeyError, TypeError, ImportError, AttributeError, ValueError) as error:
            problems.append(f"{folder / PACKAGE}: bad kernel listing ({type(error).__name__}: {error})")
    return problems


def use_package(folder: Path | str) -> dict[str, Any]:
    """Use a package in this process: its kernel store for GPU launches (sets $BLOCKSCOPE_KERNEL_CACHE) and its
    tuned table for `auto`, first. Call before the first launch. ValueError (one line, the first problem) when
    check_package finds any; returns package.json."""
    from . import auto

    folder = Path(folder).resolve()
    problems = check_package(folder)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ValueError(f"{problems[0]}{more}; allowed: a folder written by `python -m profiling package`")
    package = json.loads((folder / PACKAGE).read_text())
    os.environ[STORE_ENV] = str(folder / package.get("store", "kernels"))
    tuned = (folder / package["table"]).parent
    if tuned not in auto.PACKAGE_TABLE_DIRS:
        auto.PACKAGE_TABLE_DIRS.insert(0, tuned)
    return package
