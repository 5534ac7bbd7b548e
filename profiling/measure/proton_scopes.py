"""Intra-kernel timing of the cross-program exchange: Proton's instrumentation backend on a marked copy of a kernel.

The kernels of `splitrow`, `staged` and `cluster` mark their regions with whole-line comments, `# scope: NAME` ...
`# end scope: NAME` (comments leave the kernels' code, and so the results' `kernel_source_hash`, unchanged). At
measurement time `instrumented_kernel(variant)` reads the kernel function's source, turns each marker into
`pl.enter_scope(NAME)` / `pl.exit_scope(NAME)` (`import triton.profiler.language as pl`), execs the function in the
kernel module's globals (the same called helpers) and wraps it as the original is (`triton.jit`, or `gluon.jit`
for staged). `profile_scopes` then runs the variant's own launcher (same LaunchPlan, workspace, cooperative or
cluster launch) with that copy in place of the kernel, inside a Proton session (`backend="instrumentation"`,
`data="trace"`), and writes the trace as `<folder>/<config>.json`: one Chrome-trace "X" event per scope instance per
warp per CTA, durations in cycles / 1000 (profiling.views.scopes reads it into a breakdown per scope).

Scopes: `kernel` (the whole body), `load` (row or chunk load and its max), `local` (the chunk's exp and sum), `publish`
(splitrow: storing the tagged partial max and sum), `exchange` (waiting for and reading the other programs' partial
max and sum, and combining them; cluster/staged: the distributed-shared-memory exchange, which also publishes),
`store` (normalize and write). splitrow's scopes sit inside its row loop (num_stages=1: Triton does not pipeline
it; one instance per row); the spin-wait loop is inside `exchange` as a whole.

Proton's own limits (docs/ecosystem facts, issue 38): Triton-DSL kernels need `pl.enable_semantic("triton")`
(done here); the interpreter cannot run `pl.*`; the buffer is global (`DEFAULT_MODE`) so the instrumented kernel's
shared memory, and with it splitrow's residency, is the plain kernel's; cluster launches get a profile buffer sized
for every CTA (Triton's launcher sizes it per cluster). CUDA only.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import inspect
import itertools
import linecache
import re
import tempfile
import textwrap
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

VARIANTS = ("splitrow", "staged", "cluster")
KERNEL_ATTRS = {
    "splitrow": "row_softmax_splitrow_kernel",
    "staged": "row_softmax_staged_kernel",
    "cluster": "row_softmax_cluster_kernel",
}
DEFAULT_MODE = "default:buffer_type=global"  # per-warp segments in global memory: no shared memory taken
SM90_MAX_SHARED = 232448  # bytes per block (opt-in) on sm_90: what the instrumentation pass is told offline
DEFAULT_INPUT_BYTES = 32 << 20  # default rows: about 32 MB of input (a few waves, traces of a few MB)
START = re.compile(r"^(?P<indent>[ \t]*)# scope: (?P<name>[A-Za-z_]\w*)[ \t]*$")
END = re.compile(r"^(?P<indent>[ \t]*)# end scope: (?P<name>[A-Za-z_]\w*)[ \t]*$")
_COPIES = itertools.count()
_LIVE: list[Any] = []  # every copy made: kernels._common caches compiled kernels by id(kernel), never reused here
FALLBACK_WARNING = "ran 'online' instead"  # splitrow's warning when it does not run its own kernel


class ScopesError(RuntimeError):
    """The scope breakdown cannot run here (no CUDA, no Proton, no events); the message is one line."""


def check_variant(variant: str) -> str:
    """`variant` if it carries scope markers; ValueError naming the allowed ones otherwise."""
    if variant not in VARIANTS:
        raise ValueError(f"no scope markers in variant {variant!r}; allowed: {', '.join(VARIANTS)}")
    return variant


def kernel_module(variant: str) -> Any:
    """The kernels module of a marked variant (blockscope.kernels.<variant>)."""
    return importlib.import_module(f"blockscope.kernels.{check_variant(variant)}")


def _raw_function(variant: str) -> Any:
    kernel = getattr(kernel_module(variant), KERNEL_ATTRS[variant])
    return getattr(kernel, "fn", kernel)


def kernel_source(variant: str) -> str:
    """The kernel function's source, dedented, from its `def` line (decorators left out)."""
    lines = textwrap.dedent(inspect.getsource(_raw_function(variant))).splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("def "))
    return "\n".join(lines[start:]) + "\n"


def marked_scopes(source: str) -> list[str]:
    """Scope names in the order their `# scope: NAME` markers appear."""
    return [m["name"] for line in source.splitlines() if (m := START.match(line))]


def transform_source(source: str) -> str:
    """`source` with each `# scope: NAME` line replaced by `pl.enter_scope("NAME")` and each `# end scope: NAME` by
    `pl.exit_scope("NAME")`, at the marker's indentation. ValueError when markers do not pair up (an end without
    its start, a scope left open, a name used twice) or a pair does not enclose statements of one block."""
    out, open_scopes, seen = [], [], set()
    for number, line in enumerate(source.splitlines(), 1):
        if m := START.match(line):
            if m["name"] in seen:
                raise ValueError(f"line {number}: scope {m['name']!r} opened twice; allowed: one region per name")
            seen.add(m["name"])
            open_scopes.append(m["name"])
            out.append(f'{m["indent"]}pl.enter_scope("{m["name"]}")')
        elif m := END.match(line):
            if not open_scopes or open_scopes[-1] != m["name"]:
                raise ValueError(
                    f"line {number}: end of scope {m['name']!r} while {open_scopes[-1] if open_scopes else 'none'!r}"
                    " is open; allowed: nested scopes closed innermost first"
                )
            open_scopes.pop()
            out.append(f'{m["indent"]}pl.exit_scope("{m["name"]}")')
        else:
            out.append(line)
    if open_scopes:
        raise ValueError(f"scope(s) {', '.join(open_scopes)} never closed; allowed: a '# end scope: NAME' for each")
    text = "\n".join(out) + "\n"
    try:
        tree = ast.parse(text)
    except SyntaxError as error:
        raise ValueError(f"the marked source does not parse ({error.msg}, line {error.lineno})") from None
    _check_pairs(tree)
    return text


def _scope_call(node: ast.AST) -> tuple[str, str] | None:
    """('enter' | 'exit', name) of a `pl.enter_scope("x")` / `pl.exit_scope("x")` statement, else None."""
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
        return None
    func, args = node.value.func, node.value.args
    if (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == "pl"
        and func.attr in ("enter_scope", "exit_scope")
        and len(args) == 1
        and isinstance(args[0], ast.Constant)
    ):
        return func.attr.removesuffix("_scope"), str(args[0].value)
    return None


def _check_pairs(tree: ast.AST) -> None:
    """Each scope's enter and exit are statements of the same block, enter first."""
    where: dict[str, dict[str, tuple[int, int]]] = {}
    for block in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            statements = getattr(block, field, None)
            if not isinstance(statements, list):
                continue
            for index, statement in enumerate(statements):
                call = _scope_call(statement)
                if call is not None:
                    where.setdefault(call[1], {})[call[0]] = (id(statements), index)
    for name, ends in where.items():
        enter, exit_ = ends.get("enter"), ends.get("exit")
        if enter is None or exit_ is None or enter[0] != exit_[0] or enter[1] >= exit_[1]:
            raise ValueError(f"scope {name!r}: its start and end markers are not in one block, start first")


def instrumented_source(variant: str) -> str:
    """The kernel function of `variant` with its markers turned into Proton scope calls (ValueError: other
    variants, bad markers)."""
    return transform_source(kernel_source(variant))


def instrumented_kernel(variant: str) -> Any:
    """A fresh JIT copy of the variant's kernel with Proton scopes: exec'd in the kernel module's globals (plus
    `pl`), wrapped as the original (gluon.jit for a Gluon kernel, else a triton JITFunction, also under
    TRITON_INTERPRET, which cannot run it). Each call makes a new function object (a new Proton registration)."""
    import triton.profiler.language as pl

    module = kernel_module(variant)
    original = getattr(module, KERNEL_ATTRS[variant])
    fn = _raw_function(variant)
    text = instrumented_source(variant)
    filename = f"<blockscope-scopes {variant} {next(_COPIES)}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)  # inspect.getsource reads it
    namespace = dict(fn.__globals__)
    namespace["pl"] = pl
    exec(compile(text, filename, "exec"), namespace)  # noqa: S102 - our own kernel source, markers replaced
    copy = namespace[fn.__name__]
    copy.__module__ = fn.__module__
    copy.__qualname__ = fn.__qualname__
    if bool(getattr(original, "is_gluon", lambda: False)()):
        from triton.experimental import gluon

        kernel = gluon.jit(copy)
    else:
        from triton.runtime.jit import JITFunction

        kernel = JITFunction(copy)
    _LIVE.append(kernel)
    return kernel


def _plain_kernel(variant: str) -> Any:
    """The variant's own kernel as a JITFunction (Gluon kernels as they are)."""
    original = getattr(kernel_module(variant), KERNEL_ATTRS[variant])
    if bool(getattr(original, "is_gluon", lambda: False)()):
        return original
    from triton.runtime.jit import JITFunction

    return original if type(original) is JITFunction else JITFunction(_raw_function(variant))


def _instrumentation_passes(mode: Any, max_shared: int) -> Any:
    """Proton's instrumentation pass hooks for the NVIDIA backend (as InstrumentationHook.activate registers them,
    without asking a GPU for its shared memory)."""
    from triton._C.libtriton import passes as triton_passes
    from triton._C.libtriton import proton as triton_proton
    from triton.profiler import mode as proton_mode
    from triton.profiler.hooks.instrumentation import Instrumentation, InstrumentationHook

    def to_llvmir(pm: Any) -> None:
        triton_proton.add_convert_proton_to_protongpu(
            pm,
            mode.metric_type,
            mode.sampling_strategy,
            mode.sampling_options,
            mode.granularity,
            mode.buffer_strategy,
            mode.buffer_type,
            mode.buffer_size,
            max_shared,
            InstrumentationHook.profile_buffer_size,
            InstrumentationHook.profile_buffer_alignment,
            proton_mode.Optimize.CLOCK32 not in mode.optimizations,
        )
        triton_passes.common.add_cse(pm)
        if proton_mode.Optimize.SCHED_STORES in mode.optimizations:
            triton_proton.add_schedule_buffer_store(pm)
        triton_proton.add_allocate_proton_shared_memory(pm)

    def to_llvm(pm: Any) -> None:
        triton_proton.add_allocate_proton_global_scratch_buffer(pm)
        triton_proton.add_convert_proton_nvidia_gpu_to_llvm(pm)

    return Instrumentation({"ttgpuir_to_llvmir": to_llvmir, "llvmir_to_llvm": to_llvm})


@contextlib.contextmanager
def offline_instrumentation(mode: str = DEFAULT_MODE, max_shared: int = SM90_MAX_SHARED) -> Iterator[str]:
    """Instrumentation on for offline compiles in this process (no GPU): Proton's flag, the Triton semantic, the
    NVIDIA backend's pass hooks; yields the `instrumentation_mode` compile option. Restored on exit."""
    import triton.profiler.language as pl
    from triton.backends import backends
    from triton.profiler.flags import flags
    from triton.profiler.hooks.instrumentation import _interpret_mode

    parsed = _interpret_mode(mode)
    compiler = backends["nvidia"].compiler
    before = (flags.instrumentation_on, compiler.instrumentation, set(pl._SEMANTICS))
    flags.instrumentation_on = True
    pl.enable_semantic("triton")
    compiler.instrumentation = _instrumentation_passes(parsed, max_shared)
    try:
        yield str(parsed)
    finally:
        flags.instrumentation_on, compiler.instrumentation = before[0], before[1]
        pl._SEMANTICS.clear()
        pl._SEMANTICS.update(before[2])


def compile_offline(
    variant: str,
    n_cols: int,
    dtype: str = "fp16",
    n_rows: int = 4096,
    capability: int = 90,
    mode: str = DEFAULT_MODE,
    instrumented: bool = True,
    **tunables: int,
) -> Any:
    """The instrumented copy of the variant's kernel compiled for `capability` (sm_90 by default) without a GPU, as
    a launch of the plan for (n_rows, n_cols, dtype, tunables) specializes; a CompiledKernel (asm: ttgir, llir, ptx,
    cubin; ttir too for Triton kernels). `instrumented` False: the plain kernel, instrumentation off (to compare).
    Run with TRITON_INTERPRET off: the kernel's helpers must be JIT functions."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from blockscope.profiling.inspect.compiled import _resolve, _specialization

    spec, plan, torch_dtype = _resolve(check_variant(variant), n_cols, dtype, n_rows, tunables)
    signature, constexprs, attrs = _specialization(spec, plan, torch_dtype)
    kernel = instrumented_kernel(variant) if instrumented else _plain_kernel(variant)
    if bool(getattr(kernel, "is_gluon", lambda: False)()):
        from triton.experimental.gluon._runtime import GluonASTSource

        source = GluonASTSource(kernel, signature, constexprs=constexprs, attrs=attrs)
    else:
        source = ASTSource(kernel, signature, constexprs=constexprs, attrs=attrs)
    if not instrumented:
        options = {"num_warps": plan.num_warps, "num_stages": plan.num_stages, **plan.compile_options}
        return triton.compile(source, target=GPUTarget("cuda", capability, 32), options=options)
    with offline_instrumentation(mode) as instrumentation_mode:
        return triton.compile(
            source,
            target=GPUTarget("cuda", capability, 32),
            options={
                "num_warps": plan.num_warps,
                "num_stages": plan.num_stages,
                "instrumentation_mode": instrumentation_mode,
                **plan.compile_options,
            },
        )


@contextlib.contextmanager
def kernel_swapped(variant: str, kernel: Any) -> Iterator[None]:
    """The variant's module-level kernel replaced by `kernel` (its launcher reads it at call time); splitrow's
    residency caches emptied for the duration (the copy is compiled apart) and restored after."""
    module = kernel_module(variant)
    name = KERNEL_ATTRS[variant]
    original = getattr(module, name)
    caches = [getattr(module, c) for c in ("_BLOCKS_PER_SM", "_FALLBACKS") if hasattr(module, c)]
    saved = [dict(c) for c in caches]
    for cache in caches:
        cache.clear()
    setattr(module, name, kernel)
    try:
        yield
    finally:
        setattr(module, name, original)
        for cache, before in zip(caches, saved, strict=True):
            cache.clear()
            cache.update(before)


def config_name(variant: str, dtype: str, n_cols: int, n_rows: int, tunables: Mapping[str, int] | None = None) -> str:
    """A file stem naming one config: 'splitrow-fp16-N65536-R512' (+ '-chunk8192' per tunable, sorted)."""
    extra = "".join(f"-{k}{int(v)}" for k, v in sorted((tunables or {}).items()))
    return f"{variant}-{dtype}-N{int(n_cols)}-R{int(n_rows)}{extra}"


def default_rows(n_cols: int, itemsize: int) -> int:
    """About DEFAULT_INPUT_BYTES of input, 1 to 4096 rows."""
    return max(1, min(4096, DEFAULT_INPUT_BYTES // max(1, n_cols * itemsize)))


def _input(n_rows: int, n_cols: int, dtype: Any) -> Any:
    """The config's input rows on the GPU (standard normal)."""
    import torch

    return torch.randn(n_rows, n_cols, device="cuda", dtype=dtype)


def _need_proton() -> Any:
    from blockscope.profiling.measure.proton import import_proton

    proton = import_proton("scope breakdowns", "bench --proton-scopes", ScopesError)
    import triton.profiler.language as pl  # ships with triton.profiler

    pl.enable_semantic("triton")
    return proton


def _cluster_size(variant: str, x: Any, tunables: Mapping[str, int]) -> int:
    """CTAs per launched cluster (1: none): Triton's launcher sizes the profile buffer per cluster, not per CTA."""
    from blockscope import kernels

    spec = kernels.get_variant(variant)
    plan = spec.plan(x.shape[0], x.shape[1], x.dtype, **dict(tunables))
    return max(1, int(getattr(plan, "cluster_size", 1) or 1))


def _session(proton: Any, variant: str, x: Any, tunables: Mapping[str, int], base: Path, mode: str) -> list[Path]:
    """One Proton instrumentation session: a fresh instrumented copy launched once through the variant's launcher;
    returns the files the session wrote (base + suffix)."""
    import torch
    from triton.runtime import _allocation

    from blockscope import kernels

    launcher = kernels.get_variant(variant).launcher
    factor = _cluster_size(variant, x, tunables)
    kernel = instrumented_kernel(variant)
    torch.cuda.synchronize()
    try:
        session = proton.start(str(base), backend="instrumentation", data="trace", mode=mode)
    except Exception as error:  # driver / libproton failures
        raise ScopesError(f"proton.start failed: {str(error).splitlines()[0] if str(error) else error!r}") from None
    if session is None:
        raise ScopesError("proton.start returned no session (TRITON_PROTON_DISABLE set, or under the proton CLI)")
    allocate = _allocation._profile_allocator.get()  # the session's (Proton's hook set it)
    try:
        if factor > 1:  # one profile segment per CTA, and a cluster launch counts clusters
            _allocation._profile_allocator.set(lambda size, align, stream: allocate(size * factor, align, stream))
        with kernel_swapped(variant, kernel), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            launcher(x, **dict(tunables))
            torch.cuda.synchronize()
    finally:
        _allocation._profile_allocator.set(allocate)
        proton.finalize(session)
    for warning in caught:
        if FALLBACK_WARNING in str(warning.message):  # splitrow ran 'online': no scopes to see
            raise ScopesError(f"{variant} did not run its own kernel: {str(warning.message).splitlines()[0]}")
        warnings.warn(warning.message, warning.category, stacklevel=2)
    return sorted(p for p in base.parent.iterdir() if p.is_file() and p.name.split(".")[0] == base.name)


def profile_scopes(
    variant: str,
    dtype: str,
    n_cols: int,
    folder: str | Path,
    n_rows: int | None = None,
    tunables: Mapping[str, int] | None = None,
    mode: str = DEFAULT_MODE,
    warmup: bool = True,
) -> Path:
    """Run one config's instrumented copy on the GPU (with `warmup`, a first session whose trace is dropped: the
    compile and first launch; then the measured one; one launch each) and write its Proton trace as
    `<folder>/<config_name>.json`; returns that path. `n_rows` default: about 32 MB of input. ValueError for a
    variant without markers or a bad config; ScopesError without CUDA or Proton, or when the session writes no
    trace."""
    check_variant(variant)
    tunables = dict(tunables or {})
    from blockscope import kernels

    torch_dtype = kernels.dtype_from_name(dtype)
    rows = int(n_rows or default_rows(int(n_cols), torch_dtype.itemsize))
    kernels.get_variant(variant).plan(rows, int(n_cols), torch_dtype, **tunables)  # config errors before the GPU
    proton = _need_proton()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    x = _input(rows, int(n_cols), torch_dtype)
    with tempfile.TemporaryDirectory(dir=folder) as scratch:
        if warmup:  # compile + first launch, dropped; the measured session gets a fresh copy (Proton registers it)
            _session(proton, variant, x, tunables, Path(scratch) / "warmup", mode)
        written = _session(proton, variant, x, tunables, Path(scratch) / "measured", mode)
        if not written:
            raise ScopesError("the Proton session wrote no trace file")
        target = folder / f"{config_name(variant, dtype, int(n_cols), rows, tunables)}.json"
        written[0].replace(target)
    return target
