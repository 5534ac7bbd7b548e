"""Compile facts of a variant's kernel: registers/thread, spills, stack, shared bytes, PTX and SASS.

* offline: `triton.compile` for any arch (no GPU), then the wheel's own `ptxas -v` and `cuobjdump`; results
  are cached as JSON under $BLOCKSCOPE_CACHE_DIR/compiled (default ~/.cache/blockscope/compiled), keyed by
  the kernel source, arch, dtype, constexprs, specialization, warps, stages and Triton version.
* live: on a CUDA GPU, the real JIT (`kernel.warmup`) and the loaded function's attributes.

ptxas runs once per compile: Triton's own `ptxas -v` log (TRITON_DUMP_PTXAS_LOG, captured from its stdout)
gives registers, spills and stack; a separate `ptxas -v` run happens only when Triton served the kernel from
its cache and printed nothing. `timeout_s` (the CLI's --timeout) runs the compile in a worker process group
killed when it is over; `inspect_async` starts such a compile in the background and returns a future at once
(the dashboard polls it), with results cached on disk as before.

Offline compiles specialize arguments as a live launch would: pointers 16-byte aligned, integer arguments
divisible by 16 marked so, integers equal to 1 turned into constants. Under TRITON_INTERPRET=1 Triton's own
helpers (tl.max, ...) are interpreter functions and cannot be compiled in that process, so the compile runs
in a worker process without it (`python -m blockscope.profiling.inspect.compiled --worker`).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect as pyinspect
import io
import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import torch

from blockscope import kernels, paths, scratch
from blockscope.kernels import DTYPE_NAMES, dtype_from_name, interpreting
from blockscope.profiling.inspect import occupancy as occ

REPO_ROOT = paths.IMPORT_ROOT  # PYTHONPATH and cwd of compile workers
CACHE_FORMAT = 1
DEFAULT_ARCH = "sm_90"
WORKER_TIMEOUT_S = 120.0  # per config in a worker process (the CLI's --timeout default); the worker is killed after
BACKGROUND_WAIT_S = 2.0  # how long a dashboard rerun waits on a background compile before saying it is running


class CompileTimeout(RuntimeError):
    """A compile ran past its timeout; its worker process group was killed."""


@dataclass
class CompileInfo:
    """Compile facts of one kernel specialization (registers per thread, bytes per thread / per block)."""

    variant: str  # the variant whose kernel was compiled ('auto' resolves to its choice)
    arch: str  # 'sm_90'
    dtype: str  # 'fp16' | 'bf16' | 'fp32'
    n_cols: int
    n_rows: int
    tunables: dict[str, int]
    num_warps: int
    num_stages: int
    n_regs: int  # registers per thread
    spill_store_bytes: int | None  # per thread (ptxas -v)
    spill_load_bytes: int | None
    stack_bytes: int | None  # stack frame per thread (ptxas -v; live: local memory per thread)
    shared_bytes: int  # shared memory per program (metadata.shared, plus what the launcher adds), bytes
    compile_seconds: float  # wall time of the compile that produced these facts
    source: str  # 'offline' | 'live'
    cached: bool  # served from the on-disk cache (offline) without compiling
    ptx: str = field(default="", repr=False)
    sass: str = field(default="", repr=False)
    triton_version: str = ""
    kernel_name: str = ""
    constexprs: dict[str, int] = field(default_factory=dict)
    warm_seconds: float | None = None  # live: a second warmup (JIT cache hit)
    function_handle: int | None = field(default=None, repr=False)  # live: CUfunction for the occupancy API

    def to_dict(self) -> dict[str, Any]:
        """Facts without the PTX/SASS text and the function handle."""
        out = asdict(self)
        for key in ("ptx", "sass", "function_handle"):
            out.pop(key)
        return out


# ---------------------------------------------------------------- requests


def _resolve(variant: str, n_cols: int, dtype: str | torch.dtype, n_rows: int, tunables: Mapping[str, int]):
    """(spec, plan, dtype) with the kernels' own validation; ValueError names what is allowed."""
    spec = kernels.get_variant(variant)
    try:
        torch_dtype = dtype_from_name(dtype)
    except TypeError as error:
        raise ValueError(str(error)) from None
    for label, value in (("n_cols", n_cols), ("n_rows", n_rows)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{label}={value!r}; allowed: a positive integer")
    if n_cols > spec.max_n:
        raise ValueError(f"{variant}: N={n_cols} is over this variant's limit; allowed: 1 <= N <= {spec.max_n}")
    plan = spec.plan(n_rows, n_cols, torch_dtype, **dict(tunables))
    if plan.variant != spec.name:  # auto: compile the variant it runs
        spec = kernels.get_variant(plan.variant)
    if torch_dtype not in spec.dtypes:
        raise ValueError(
            f"{spec.name}: dtype {dtype} not supported; allowed: {', '.join(DTYPE_NAMES[d] for d in spec.dtypes)}"
        )
    return spec, plan, torch_dtype


def _specialization(spec, plan, torch_dtype) -> tuple[dict[str, str], dict[str, int], dict[tuple, list]]:
    """(signature, constexprs, attrs) for ASTSource, as a live launch on contiguous rows specializes."""
    arg_names = list(pyinspect.signature(spec.kernel_function).parameters)
    declared = spec.signature(torch_dtype)
    signature: dict[str, str] = {}
    constexprs = dict(plan.constexprs)
    attrs: dict[tuple, list] = {}
    for index, name in enumerate(arg_names):
        kind = declared[name]
        if kind == "constexpr":
            signature[name] = "constexpr"
            continue
        if kind.startswith("*"):
            attrs[(index,)] = [["tt.divisibility", 16]]  # torch allocations are >= 16-byte aligned
        else:
            value = plan.scalar_args.get(name)
            if value == 1:  # Triton turns integer arguments equal to 1 into constants
                signature[name] = "constexpr"
                constexprs[name] = 1
                continue
            if value is not None and value % 16 == 0:
                attrs[(index,)] = [["tt.divisibility", 16]]
        signature[name] = kind
    return signature, constexprs, attrs


def _source_hash(spec) -> str:
    return hashlib.sha256(pyinspect.getsource(spec.kernel_function).encode()).hexdigest()[:16]


def _triton_version() -> str:
    import triton

    return triton.__version__


def cache_dir() -> Path:
    """$BLOCKSCOPE_CACHE_DIR/compiled, default ~/.cache/blockscope/compiled."""
    base = os.environ.get("BLOCKSCOPE_CACHE_DIR") or Path.home() / ".cache" / "blockscope"
    return Path(base) / "compiled"


def _cache_key(spec, plan, dtype_name: str, arch: str, signature, constexprs, attrs) -> str:
    material = {
        "format": CACHE_FORMAT,
        "kernel": spec.name,
        "source": _source_hash(spec),
        "arch": arch,
        "dtype": dtype_name,
        "signature": signature,
        "constexprs": sorted(constexprs.items()),
        "attrs": sorted((list(k), v) for k, v in attrs.items()),
        "num_warps": plan.num_warps,
        "num_stages": plan.num_stages,
        "triton": _triton_version(),
    }
    if plan.compile_options:  # (maxnreg); absent otherwise, so the keys of earlier caches stand
        material["options"] = sorted(plan.compile_options.items())
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()[:32]


# ---------------------------------------------------------------- offline


def _nvidia_bin(tool: str) -> str:
    import triton

    path = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / tool
    if not path.exists():
        raise RuntimeError(f"{tool} not found in the Triton wheel ({path})")
    return str(path)


def _ptxas_candidates(capability: int) -> list[str]:
    """ptxas binaries in the order tried: the Triton wheel's own (ptxas; ptxas-blackwell first from sm_100), its
    other one (often a newer CUDA), then the one Triton's knobs name (TRITON_PTXAS_PATH: a GPU box may point it at a
    newer CUDA whose PTX the wheel's ptxas rejects). Never one found on PATH."""
    found: list[str] = []
    for tool in ("ptxas-blackwell", "ptxas") if capability >= 100 else ("ptxas", "ptxas-blackwell"):
        with contextlib.suppress(RuntimeError):
            found.append(_nvidia_bin(tool))
    try:
        from triton.backends.nvidia.compiler import get_ptxas

        path = get_ptxas(capability).path
        if path and Path(path).exists():
            found.append(str(path))
    except Exception:  # older Triton layouts, or the knob's path unusable: the wheel's binaries above
        pass
    return list(dict.fromkeys(found))


_PTX_VERSION = re.compile(r"^\s*\.version\s+(\d+)\.(\d+)", re.MULTILINE)
_PTX_8_CUDA = {6: (12, 7), 7: (12, 8), 8: (12, 9)}  # PTX ISA 8.x -> CUDA 12.x, except these


def ptx_needs_cuda(ptx: str) -> tuple[int, int] | None:
    """The oldest CUDA release (major, minor) whose ptxas reads `ptx`'s `.version` (ISA 7.x: 11.x, 8.0-8.5:
    12.0-12.5, 8.6: 12.7, 8.7: 12.8, 8.8: 12.9, 9.x: 13.x); None without a `.version` line."""
    match = _PTX_VERSION.search(ptx)
    if not match:
        return None
    major, minor = int(match.group(1)), int(match.group(2))
    if major == 8:
        return _PTX_8_CUDA.get(minor, (12, minor))
    return (major + 4, minor)


@functools.lru_cache(maxsize=16)
def _ptxas_release(path: str) -> tuple[int, int] | None:
    """(major, minor) of `ptxas --version`'s 'release X.Y', or None when it cannot be run or read."""
    try:
        text = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"release (\d+)\.(\d+)", text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def ptxas_for_ptx(ptx: str, capability: int) -> str:
    """The first of _ptxas_candidates whose CUDA release reads `ptx`'s PTX ISA version (else the first one)."""
    candidates = _ptxas_candidates(capability)
    needed = ptx_needs_cuda(ptx)
    for path in candidates:
        release = _ptxas_release(path)
        if needed is None or (release is not None and release >= needed):
            return path
    return candidates[0]


def _gpu_name(capability: int) -> str:
    return f"sm_{capability}{'a' if capability >= 90 else ''}"  # as Triton's sm_arch_from_capability


def _ptxas_flags() -> list[str]:
    from triton.backends.nvidia import compiler as nvidia_compiler

    flags = ["-lineinfo", "-v"]
    if "regAllocOptLevel" in pyinspect.getsource(nvidia_compiler):  # Triton 3.7 adds it (ptxas 13 workaround)
        flags.append("--regAllocOptLevel=2")
    return flags


_PTXAS_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_PTXAS_REGS = re.compile(r"Used (\d+) registers")


def parse_ptxas_log(log: str) -> dict[str, int] | None:
    """Registers/thread, stack, spill store/load bytes per thread from a `ptxas -v` log (its first function: a
    Triton module holds one kernel), or None when the log has no such lines."""
    frame, regs = _PTXAS_FRAME.search(log), _PTXAS_REGS.search(log)
    if not frame or not regs:
        return None
    return {
        "n_regs": int(regs.group(1)),
        "stack_bytes": int(frame.group(1)),
        "spill_store_bytes": int(frame.group(2)),
        "spill_load_bytes": int(frame.group(3)),
    }


def ptxas_usage(ptx: str, capability: int) -> dict[str, int]:
    """Registers/thread, stack, spill store/load bytes per thread from `ptxas -v` on `ptx`, run by a ptxas of
    Triton's that reads the PTX's ISA version (ptxas_for_ptx; on "Unsupported .version" the next one is tried)."""
    first = ptxas_for_ptx(ptx, capability)
    order = [first, *(p for p in _ptxas_candidates(capability) if p != first)]
    failures: list[str] = []
    with scratch.temporary_dir("blockscope-ptxas-") as tmp:
        source = Path(tmp) / "kernel.ptx"
        source.write_text(ptx)
        for ptxas in order:
            done = subprocess.run(
                [
                    ptxas,
                    *_ptxas_flags(),
                    f"--gpu-name={_gpu_name(capability)}",
                    str(source),
                    "-o",
                    str(Path(tmp) / "kernel.cubin"),
                ],
                capture_output=True,
                text=True,
                timeout=300,
            )
            log = done.stdout + done.stderr
            if done.returncode != 0 and "Unsupported .version" in log:
                failures.append(f"{ptxas}: {' '.join(log.split())[:160]}")
                continue
            break
        else:
            raise RuntimeError(f"no ptxas reads this PTX ({'; '.join(failures)}); tried {', '.join(order)}")
    if done.returncode != 0:
        raise RuntimeError(f"ptxas failed ({done.returncode}): {log.strip()[-500:]}")
    usage = parse_ptxas_log(log)
    if usage is None:
        raise RuntimeError(f"could not read ptxas -v output: {log.strip()[-500:]}")
    return usage


@contextlib.contextmanager
def triton_ptxas_log() -> Iterator[io.StringIO]:
    """Capture the `ptxas -v` log of Triton's own cubin step for compiles in the block (TRITON_DUMP_PTXAS_LOG makes
    Triton print it to stdout), so nobody runs ptxas a second time to read registers and spills. Empty when
    Triton serves the kernel from its cache. Redirects this process's stdout for the block."""
    buffer = io.StringIO()
    previous = os.environ.get("TRITON_DUMP_PTXAS_LOG")
    os.environ["TRITON_DUMP_PTXAS_LOG"] = "1"
    try:
        with contextlib.redirect_stdout(buffer):
            yield buffer
    finally:
        if previous is None:
            os.environ.pop("TRITON_DUMP_PTXAS_LOG", None)
        else:
            os.environ["TRITON_DUMP_PTXAS_LOG"] = previous


def cubin_registers(cubin: bytes) -> int | None:
    """REG of the cubin's (single) kernel from `cuobjdump -res-usage`, or None if unreadable."""
    with scratch.temporary_dir("blockscope-cubin-") as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        done = subprocess.run(
            [_nvidia_bin("cuobjdump"), "-res-usage", str(path)], capture_output=True, text=True, timeout=120
        )
    found = re.search(r"REG:(\d+)", done.stdout)
    return int(found.group(1)) if found else None


def cubin_sass(cubin: bytes) -> str:
    """SASS of a cubin (`cuobjdump -sass`) without the encoding-only comment lines."""
    with scratch.temporary_dir("blockscope-cubin-") as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        done = subprocess.run(
            [_nvidia_bin("cuobjdump"), "-sass", str(path)], capture_output=True, text=True, timeout=120
        )
    if done.returncode != 0:
        return f"(cuobjdump -sass failed: {done.stderr.strip()[-300:]})"
    lines = [re.sub(r"\s*/\* 0x[0-9a-f]+ \*/\s*$", "", line) for line in done.stdout.splitlines()]
    return "\n".join(line for line in lines if line.strip())


_JIT_FUNCTIONS: dict[str, Any] = {}


def _is_gluon(kernel) -> bool:
    """A triton.experimental.gluon kernel (compiled through GluonASTSource)."""
    return bool(getattr(kernel, "is_gluon", lambda: False)())


def _jit_function(spec):
    """A JITFunction of the variant's raw kernel function (works whatever TRITON_INTERPRET was at import)."""
    if spec.name not in _JIT_FUNCTIONS:
        from triton.runtime.jit import JITFunction

        kernel = spec.kernel
        if _is_gluon(kernel):  # Gluon kernels are never wrapped by the interpreter
            _JIT_FUNCTIONS[spec.name] = kernel
        else:
            _JIT_FUNCTIONS[spec.name] = kernel if type(kernel) is JITFunction else JITFunction(spec.kernel_function)
    return _JIT_FUNCTIONS[spec.name]


def _compile_facts(spec, plan, torch_dtype, arch: occ.ArchLimits) -> dict[str, Any]:
    """Compile in this process (TRITON_INTERPRET must be off) and measure; facts as a JSON-able dict."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    major, minor = arch.compute_capability
    capability = major * 10 + minor
    signature, constexprs, attrs = _specialization(spec, plan, torch_dtype)
    start = time.perf_counter()
    kernel = _jit_function(spec)
    if _is_gluon(kernel):
        from triton.experimental.gluon._runtime import GluonASTSource

        source = GluonASTSource(kernel, signature, constexprs=constexprs, attrs=attrs)
    else:
        source = ASTSource(kernel, signature, constexprs=constexprs, attrs=attrs)
    with triton_ptxas_log() as log:
        compiled = triton.compile(
            source,
            target=GPUTarget("cuda", capability, 32),
            options={"num_warps": plan.num_warps, "num_stages": plan.num_stages, **plan.compile_options},
        )
    ptx = compiled.asm["ptx"]
    usage = parse_ptxas_log(log.getvalue()) or ptxas_usage(ptx, capability)  # the latter: a Triton cache hit
    regs = cubin_registers(compiled.asm["cubin"])
    seconds = time.perf_counter() - start
    return {
        "n_regs": regs if regs is not None else usage["n_regs"],
        "spill_store_bytes": usage["spill_store_bytes"],
        "spill_load_bytes": usage["spill_load_bytes"],
        "stack_bytes": usage["stack_bytes"],
        "shared_bytes": plan.shared_bytes(int(compiled.metadata.shared)),
        "compile_seconds": seconds,
        "ptx": ptx,
        "sass": cubin_sass(compiled.asm["cubin"]),
        "triton_version": triton.__version__,
        "kernel_name": compiled.metadata.name,
        "constexprs": constexprs,
    }


def _read_cache(path: Path) -> dict | None:
    try:
        with open(path) as handle:
            entry = json.load(handle)
    except (OSError, ValueError):
        return None
    return entry if isinstance(entry, dict) and entry.get("format") == CACHE_FORMAT else None


def _write_cache(path: Path, facts: dict) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = scratch.temp_path(path)
        tmp.write_text(json.dumps({"format": CACHE_FORMAT, **facts}))
        os.replace(tmp, path)
    except OSError:
        pass  # an unwritable cache only costs a recompile


def _info(
    facts: dict, variant: str, arch: str, dtype_name: str, n_cols: int, n_rows: int, plan, source: str, cached: bool
) -> CompileInfo:
    known = {f.name for f in fields(CompileInfo)}
    return CompileInfo(
        **{
            **{k: v for k, v in facts.items() if k in known},
            "variant": variant,
            "arch": arch,
            "dtype": dtype_name,
            "n_cols": n_cols,
            "n_rows": n_rows,
            "tunables": dict(plan.tunables),
            "num_warps": plan.num_warps,
            "num_stages": plan.num_stages,
            "source": source,
            "cached": cached,
        }
    )


def _prepare(variant, n_cols, dtype, arch, n_rows, tunables, cache_root: Path | None):
    spec_arch = occ.arch_from_name(arch)
    spec, plan, torch_dtype = _resolve(variant, n_cols, dtype, n_rows, tunables)
    dtype_name = DTYPE_NAMES[torch_dtype]
    signature, constexprs, attrs = _specialization(spec, plan, torch_dtype)
    key = _cache_key(spec, plan, dtype_name, spec_arch.name, signature, constexprs, attrs)
    path = (cache_root or cache_dir()) / f"{spec.name}-{dtype_name}-{spec_arch.name}-{key}.json"
    return spec_arch, spec, plan, torch_dtype, dtype_name, path


def inspect_offline(
    variant: str,
    n_cols: int,
    dtype: str | torch.dtype,
    arch: str = DEFAULT_ARCH,
    n_rows: int = 4096,
    *,
    cache: bool = True,
    cache_root: str | Path | None = None,
    timeout_s: float | None = None,
    **tunables: int,
) -> CompileInfo:
    """Compile `variant` for `arch` without a GPU and read its resources (ptxas -v, cuobjdump); disk-cached.

    With `timeout_s` (seconds) the compile runs in a worker process group killed after that long (CompileTimeout);
    under TRITON_INTERPRET=1 it always runs in a worker (WORKER_TIMEOUT_S unless given)."""
    root = Path(cache_root) if cache_root else None
    spec_arch, spec, plan, torch_dtype, dtype_name, path = _prepare(
        variant, n_cols, dtype, arch, n_rows, tunables, root
    )
    if cache:
        entry = _read_cache(path)
        if entry is not None:
            return _info(entry, spec.name, spec_arch.name, dtype_name, n_cols, n_rows, plan, "offline", True)
    if interpreting() or timeout_s is not None:
        request = _request(variant, n_cols, dtype_name, spec_arch.name, n_rows, tunables, root, cache)
        return _worker_result(_run_workers([request], workers=1, timeout_s=timeout_s)[0], "offline compile")
    facts = _compile_facts(spec, plan, torch_dtype, spec_arch)
    if cache:
        _write_cache(path, facts)
    return _info(facts, spec.name, spec_arch.name, dtype_name, n_cols, n_rows, plan, "offline", False)


def _worker_result(result: CompileInfo | dict, what: str) -> CompileInfo:
    """A worker's CompileInfo, or its error raised (CompileTimeout when the worker was killed at its timeout)."""
    if isinstance(result, CompileInfo):
        result.function_handle = None  # the worker's CUfunction means nothing in this process
        return result
    if result.get("timed_out"):
        raise CompileTimeout(f"{what} {result['error']}")
    raise RuntimeError(f"{what} failed: {result['error']}")


# ---------------------------------------------------------------- many, in worker processes


def _request(variant, n_cols, dtype_name, arch, n_rows, tunables, root, cache, live: bool = False) -> dict:
    return {
        "variant": variant,
        "n_cols": n_cols,
        "dtype": dtype_name,
        "arch": arch,
        "n_rows": n_rows,
        "tunables": dict(tunables),
        "cache_root": str(root) if root else None,
        "cache": cache,
        "live": live,
    }


def _config_request(config: Mapping[str, Any], cache_root: Path | None, cache: bool) -> dict:
    extra = set(config) - {"variant", "n_cols", "dtype", "arch", "n_rows", "tunables"}
    tunables = {**dict(config.get("tunables") or {}), **{k: config[k] for k in extra}}
    dtype = config.get("dtype", "fp16")
    dtype_name = DTYPE_NAMES[dtype] if isinstance(dtype, torch.dtype) else str(dtype)
    return _request(
        config["variant"],
        config["n_cols"],
        dtype_name,
        config.get("arch") or DEFAULT_ARCH,
        config.get("n_rows", 4096),
        tunables,
        cache_root,
        cache,
    )


def _worker_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    return env


RESULT_PREFIX = "@blockscope-compiled "  # marks the worker's result lines among anything else it prints


def _result_lines(text: str | bytes | None) -> list[dict]:
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    lines = []
    for line in (text or "").splitlines():
        if line.startswith(RESULT_PREFIX):
            try:
                lines.append(json.loads(line[len(RESULT_PREFIX) :]))
            except ValueError:
                break  # a torn last line: that config counts as failed
    return lines


def _worker_command() -> list[str]:
    return [sys.executable, "-m", "blockscope.profiling.inspect.compiled", "--worker"]


def _kill_group(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)  # the worker and what it started (ptxas, cuobjdump)


def _run_worker_process(payload: str, timeout_s: float) -> tuple[int | None, str, str]:
    """Run one worker in a process group of its own with `payload` on stdin: (exit status, or None when it ran past
    `timeout_s` seconds and the group was killed; stdout; stderr)."""
    process = subprocess.Popen(
        _worker_command(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
        env=_worker_env(),
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(payload, timeout=timeout_s)
        return process.returncode, stdout, stderr
    except subprocess.TimeoutExpired:
        _kill_group(process)
        stdout, stderr = process.communicate()
        return None, stdout, stderr
    except BaseException:  # KeyboardInterrupt, ...: never leave a compile running
        _kill_group(process)
        process.wait()
        raise


def _run_chunk(requests: list[dict], results: dict[int, Any], indices: list[int], timeout_s: float) -> None:
    """One worker process compiles `requests` in order, one result line each; a crash or a timeout (`timeout_s`
    seconds per config still to do) fails that config only."""
    pending = list(zip(indices, requests, strict=True))
    while pending:
        timed_out = False
        budget = timeout_s * len(pending)
        try:
            status, stdout, stderr = _run_worker_process(json.dumps([r for _, r in pending]), budget)
            lines = _result_lines(stdout)
            if status is None:
                failure, timed_out = f"timed out after {budget:g} s (worker killed)", True
            else:
                failure = f"worker exited {status}: {stderr.strip()[-300:]}"
        except OSError as error:
            lines, failure = [], f"could not start a worker: {error}"
        for (index, _), line in zip(pending, lines, strict=False):
            results[index] = line
        if len(lines) >= len(pending):
            return
        index, request = pending[len(lines)]
        results[index] = {
            "error": f"{failure} (while compiling this config)",
            "config": request,
            **({"timed_out": True} if timed_out else {}),
        }
        pending = pending[len(lines) + 1 :]  # the configs after the one that failed get a fresh worker


def _from_line(line: dict) -> CompileInfo | dict:
    if "error" in line:
        return line
    return CompileInfo(**{k: v for k, v in line.items() if k in {f.name for f in fields(CompileInfo)}})


def _run_workers(requests: list[dict], workers: int, timeout_s: float | None = None) -> list[CompileInfo | dict]:
    results: dict[int, Any] = {}
    workers = max(1, min(workers, len(requests)))
    timeout_s = WORKER_TIMEOUT_S if timeout_s is None else timeout_s
    chunks = [list(range(i, len(requests), workers)) for i in range(workers)]
    threads = [
        threading.Thread(target=_run_chunk, args=([requests[i] for i in chunk], results, chunk, timeout_s))
        for chunk in chunks
        if chunk
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [
        _from_line(results.get(i, {"error": "no result from the worker", "config": requests[i]}))
        for i in range(len(requests))
    ]


def inspect_many(
    configs: Iterable[Mapping[str, Any]],
    workers: int = 2,
    *,
    cache: bool = True,
    cache_root: str | Path | None = None,
    timeout_s: float | None = None,
) -> list[CompileInfo | dict]:
    """Offline-inspect many configs in `workers` processes; per config a CompileInfo or {'error', 'config'}.

    A config is a dict with variant, n_cols, dtype, arch (default sm_90), n_rows (default 4096) and its
    tunables (inline or under 'tunables'). Invalid configs and compile failures never stop the others; a config
    compiling longer than `timeout_s` (default WORKER_TIMEOUT_S) seconds gets an error with 'timed_out'.
    """
    root = Path(cache_root) if cache_root else None
    requests = [_config_request(c, root, cache) for c in configs]
    out: list[CompileInfo | dict | None] = [None] * len(requests)
    todo: list[int] = []
    for i, request in enumerate(requests):
        try:  # validate and serve cache hits here; compile the rest in workers
            _, spec, plan, _, dtype_name, path = _prepare(
                request["variant"],
                request["n_cols"],
                request["dtype"],
                request["arch"],
                request["n_rows"],
                request["tunables"],
                root,
            )
            entry = _read_cache(path) if cache else None
            if entry is not None:
                out[i] = _info(
                    entry,
                    spec.name,
                    occ.arch_from_name(request["arch"]).name,
                    dtype_name,
                    request["n_cols"],
                    request["n_rows"],
                    plan,
                    "offline",
                    True,
                )
            else:
                todo.append(i)
        except Exception as error:
            out[i] = {"error": f"{type(error).__name__}: {error}", "config": request}
    if todo:
        for i, result in zip(todo, _run_workers([requests[i] for i in todo], workers, timeout_s), strict=True):
            out[i] = result
    return out  # type: ignore[return-value]


def _worker_main() -> None:
    """Read a JSON list of requests on stdin; write one result line per request (facts or error) to stdout."""
    results = sys.stdout
    for request in json.loads(sys.stdin.read()):
        try:
            with contextlib.redirect_stdout(sys.stderr):  # Triton prints PTX on ptxas errors
                if request.get("live"):
                    info = inspect_live(
                        request["variant"],
                        request["n_cols"],
                        request["dtype"],
                        request["n_rows"],
                        **request["tunables"],
                    )
                else:
                    info = inspect_offline(
                        request["variant"],
                        request["n_cols"],
                        request["dtype"],
                        request["arch"],
                        request["n_rows"],
                        cache=request.get("cache", True),
                        cache_root=request.get("cache_root"),
                        **request["tunables"],
                    )
            line = asdict(info)
        except Exception as error:
            line = {"error": f"{type(error).__name__}: {str(error).strip()[:500]}", "config": request}
        results.write(RESULT_PREFIX + json.dumps(line) + "\n")
        results.flush()


# ---------------------------------------------------------------- live


def live_arch() -> str | None:
    """'sm_XY' of the current CUDA device, or None without one."""
    if not torch.cuda.is_available():
        return None
    major, minor = torch.cuda.get_device_capability()
    return f"sm_{major}{minor}"


POINTER_DTYPES = {  # Triton pointer types -> the torch dtype of a stand-in tensor for a live compile
    "*fp16": torch.float16,
    "*bf16": torch.bfloat16,
    "*fp32": torch.float32,
    "*fp64": torch.float64,
    "*i1": torch.bool,
    "*i8": torch.int8,
    "*u8": torch.uint8,
    "*i16": torch.int16,
    "*i32": torch.int32,
    "*i64": torch.int64,
}
COOPERATIVE_VARIANTS = ("splitrow", "staged_split")  # launched as a cooperative grid when CHUNKS > 1


def launch_options(variant: str, plan) -> dict[str, Any]:
    """The Triton compile options a variant's GPU launch of `plan` compiles with: the plan's compile_options, plus
    launch_cooperative_grid where splitrow / staged_split programs wait on each other (CHUNKS > 1) and this Triton
    launches cooperative grids (their launchers add it). A live compile with other options is another kernel."""
    from blockscope.kernels.splitrow import _cooperative

    options = dict(plan.compile_options)
    if variant in COOPERATIVE_VARIANTS and _cooperative(dict(plan.constexprs)):
        options["launch_cooperative_grid"] = True
    return options


def _live_args(spec, plan, torch_dtype, device) -> list:
    """The kernel's runtime arguments for a live compile: a 64-element tensor per pointer (only its dtype and
    16-byte alignment specialize) and the plan's integers; ValueError for a pointer type not in POINTER_DTYPES."""
    declared = spec.signature(torch_dtype)
    args = []
    for name in pyinspect.signature(spec.kernel_function).parameters:
        kind = declared[name]
        if kind == "constexpr":
            continue
        if kind.startswith("*"):
            if kind not in POINTER_DTYPES:
                raise ValueError(f"{spec.name}: pointer {name} of type {kind}; allowed: {', '.join(POINTER_DTYPES)}")
            args.append(torch.empty(64, dtype=POINTER_DTYPES[kind], device=device))
        else:
            args.append(plan.scalar_args[name])
    return args


def inspect_live(
    variant: str, n_cols: int, dtype: str | torch.dtype, n_rows: int = 4096, **tunables: int
) -> CompileInfo:
    """JIT the real kernel on the current CUDA GPU and read n_regs, local bytes, shared bytes and the handle."""
    if not torch.cuda.is_available():
        raise RuntimeError("inspect_live needs a CUDA GPU; use inspect_offline")
    spec, plan, torch_dtype = _resolve(variant, n_cols, dtype, n_rows, tunables)
    arch = live_arch() or DEFAULT_ARCH
    kernel = _jit_function(spec)
    args = _live_args(spec, plan, torch_dtype, torch.device("cuda"))
    options = {
        "num_warps": plan.num_warps,
        "num_stages": plan.num_stages,
        "grid": (1,),
        **launch_options(spec.name, plan),
        **plan.constexprs,
    }
    start = time.perf_counter()
    with triton_ptxas_log() as log:
        compiled = kernel.warmup(*args, **options)
    compiled._init_handles()
    cold = time.perf_counter() - start
    start = time.perf_counter()
    kernel.warmup(*args, **options)
    warm = time.perf_counter() - start
    ptx = compiled.asm.get("ptx", "")
    usage: dict[str, int | None] = {"spill_store_bytes": None, "spill_load_bytes": None}
    try:
        major, minor = torch.cuda.get_device_capability()
        usage.update(parse_ptxas_log(log.getvalue()) or ptxas_usage(ptx, major * 10 + minor))
    except Exception as error:  # spill bytes are best effort: the loaded function's facts below are what counts
        import warnings

        warnings.warn(
            f"inspect_live: spill bytes unknown for {spec.name} ({type(error).__name__}: {error})",
            RuntimeWarning,
            stacklevel=2,
        )
    try:
        sass = cubin_sass(compiled.asm["cubin"])
    except Exception as error:
        sass = f"(no SASS: {error})"
    return CompileInfo(
        variant=spec.name,
        arch=arch,
        dtype=DTYPE_NAMES[torch_dtype],
        n_cols=n_cols,
        n_rows=n_rows,
        tunables=dict(plan.tunables),
        num_warps=plan.num_warps,
        num_stages=plan.num_stages,
        n_regs=int(compiled.n_regs),
        spill_store_bytes=usage["spill_store_bytes"],
        spill_load_bytes=usage["spill_load_bytes"],
        stack_bytes=int(compiled.n_spills),
        shared_bytes=plan.shared_bytes(int(compiled.metadata.shared)),
        compile_seconds=cold,
        source="live",
        cached=False,
        ptx=ptx,
        sass=sass,
        triton_version=_triton_version(),
        kernel_name=compiled.metadata.name,
        constexprs=dict(plan.constexprs),
        warm_seconds=warm,
        function_handle=int(compiled.function),
    )


def _live_here(arch: str | None) -> str | None:
    """This GPU's 'sm_XY' when `arch` (None: this GPU) names it and kernels are not interpreted, else None."""
    here = None if interpreting() else live_arch()
    if here is not None and (arch is None or occ.arch_from_name(arch).name == here):
        return here
    return None


def inspect(
    variant: str,
    n_cols: int,
    dtype: str | torch.dtype,
    arch: str | None = None,
    n_rows: int = 4096,
    *,
    timeout_s: float | None = None,
    **tunables: int,
) -> CompileInfo:
    """Live on the CUDA GPU when `arch` is None or names it (and not interpreting), else offline (default sm_90).

    With `timeout_s` (seconds) the compile runs in a worker process group killed after that long (CompileTimeout);
    a live compile in a worker returns no function handle."""
    here = _live_here(arch)
    if here is None:
        return inspect_offline(
            variant, n_cols, dtype, arch or DEFAULT_ARCH, n_rows=n_rows, timeout_s=timeout_s, **tunables
        )
    if timeout_s is None:
        return inspect_live(variant, n_cols, dtype, n_rows=n_rows, **tunables)
    _, _, _, _, dtype_name, _ = _prepare(variant, n_cols, dtype, here, n_rows, tunables, None)  # ValueError here
    request = _request(variant, n_cols, dtype_name, here, n_rows, tunables, None, False, live=True)
    return _worker_result(_run_workers([request], workers=1, timeout_s=timeout_s)[0], "live compile")


# ---------------------------------------------------------------- in the background


class CompileJob(Future):
    """A background compile: a concurrent.futures.Future of CompileInfo (its exception: CompileTimeout or
    RuntimeError) that also says what it compiles (`label`), when it started and by when it ends at the latest
    (`deadline`; time.monotonic() seconds: the worker is killed at its timeout). A job waiting for a free worker has
    no deadline yet (inf): its clock starts when it runs, so a page polling it does not give up while it is queued
    behind other compiles."""

    def __init__(self, label: str, timeout_s: float) -> None:
        super().__init__()
        self.label = label
        self.timeout_s = timeout_s
        self.submitted_at = self.started_at = time.monotonic()
        self.deadline = math.inf
        self.finished_at: float | None = None

    def start(self) -> None:
        """The worker takes the job: its timeout counts from now."""
        self.started_at = time.monotonic()
        self.deadline = self.started_at + self.timeout_s + 30.0  # + worker start and cache write


_JOBS: dict[tuple, CompileJob] = {}
_JOBS_LOCK = threading.Lock()
_EXECUTOR: list[ThreadPoolExecutor] = []
JOB_ERROR_TTL_S = 60.0  # a failed job answers reruns this long before a new call compiles again
MAX_JOBS_KEPT = 256


def _run_job(job: CompileJob, request: dict, what: str) -> None:
    if not job.set_running_or_notify_cancel():
        return
    job.start()
    try:
        info = _worker_result(_run_workers([request], workers=1, timeout_s=job.timeout_s)[0], what)
    except BaseException as error:
        job.finished_at = time.monotonic()
        job.set_exception(error)
    else:
        job.finished_at = time.monotonic()
        job.set_result(info)


def result_within(job: Future, seconds: float) -> CompileInfo | None:
    """The job's CompileInfo if it is done within `seconds`, else None (still running); raises the job's error."""
    wait([job], timeout=seconds)
    return job.result() if job.done() else None


def inspect_async(
    variant: str,
    n_cols: int,
    dtype: str | torch.dtype,
    arch: str | None = None,
    n_rows: int = 4096,
    *,
    timeout_s: float = WORKER_TIMEOUT_S,
    cache_root: str | Path | None = None,
    **tunables: int,
) -> CompileJob:
    """Start, or join, a background compile of one config (as `inspect`: live on this GPU, else offline) and return
    its CompileJob at once; never blocks on the compile. An invalid config raises ValueError here.

    A disk-cache hit comes back already done (a finished offline compile leaves its result there, as `inspect`
    does). Otherwise a worker process (killed after `timeout_s` seconds) runs on a small thread pool; calls for
    the same config while it runs get the same job, as do calls after a live one finished (no disk cache) and,
    for JOB_ERROR_TTL_S seconds, after one failed; then a new call compiles again."""
    here = _live_here(arch)
    target = here or arch or DEFAULT_ARCH
    root = Path(cache_root) if cache_root else None
    spec_arch, spec, plan, _, dtype_name, path = _prepare(variant, n_cols, dtype, target, n_rows, tunables, root)
    key = (
        variant,
        n_cols,
        dtype_name,
        spec_arch.name,
        here is not None,
        n_rows,
        tuple(sorted(tunables.items())),
        str(root),
    )
    with _JOBS_LOCK:
        earlier = _JOBS.get(key)
        if earlier is not None and not earlier.done():
            return earlier
        failed = earlier is not None and earlier.exception() is not None
        if failed and time.monotonic() < (earlier.finished_at or 0.0) + JOB_ERROR_TTL_S:
            return earlier
        source = "live" if here else "offline"
        job = CompileJob(f"{spec.name} N={n_cols} {dtype_name} for {spec_arch.name} ({source})", timeout_s)
        entry = None if here else _read_cache(path)
        if entry is not None:  # offline results live in the disk cache
            job.finished_at = job.started_at
            job.set_result(_info(entry, spec.name, spec_arch.name, dtype_name, n_cols, n_rows, plan, "offline", True))
            return job
        if earlier is not None and not failed:  # a live result, or the cache could not be written
            return earlier
        if len(_JOBS) >= MAX_JOBS_KEPT:  # forget finished jobs, oldest first
            for old in [k for k, j in _JOBS.items() if j.done()][: MAX_JOBS_KEPT // 2]:
                del _JOBS[old]
        _JOBS[key] = job
        if not _EXECUTOR:
            _EXECUTOR.append(ThreadPoolExecutor(max_workers=2, thread_name_prefix="blockscope-compile"))
        request = _request(
            variant, n_cols, dtype_name, spec_arch.name, n_rows, tunables, root, True, live=here is not None
        )
        _EXECUTOR[0].submit(_run_job, job, request, f"{source} compile")
    return job


if __name__ == "__main__":
    if sys.argv[1:] == ["--worker"]:
        _worker_main()
    else:
        sys.exit("usage: python -m blockscope.profiling.inspect.compiled --worker  (reads JSON requests on stdin)")
