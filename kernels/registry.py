"""Variant registry: name -> launcher, kernel, limits and tunables.

Importing this module imports neither Triton nor a variant module: `VARIANTS` fills itself on first use (the variant
modules, Triton and Gluon load then), so `import blockscope.kernels` costs little beyond `import torch`
(docs/measurements.md, "Import cost"). It does register the blockscope::softmax ops (kernels/ops.py, no Triton at
import); softmax's traced path hands the op a variant name checked against VARIANT_NAMES, so a trace never imports."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import torch

from . import ops  # registers blockscope::softmax (cheap: its launches import the variants when they run)
from ._common import SUPPORTED_DTYPES
from .plan import LaunchPlan

_auto: ModuleType | None = None  # kernels.auto once VARIANTS has loaded (softmax's fast path reads it)


@dataclass(frozen=True)
class Variant:
    """One registered Triton softmax variant."""

    name: str
    summary: str
    launcher: Callable[..., torch.Tensor]
    kernel: Any  # triton JITFunction (InterpretedFunction under TRITON_INTERPRET=1); None for 'auto'
    max_n: int
    tunables: Mapping[str, str]
    plan: Callable[..., LaunchPlan]
    signature: Callable[[torch.dtype], dict[str, str]]
    dtypes: tuple[torch.dtype, ...] = SUPPORTED_DTYPES
    gpu_only: bool = False  # a Gluon kernel: the Triton CPU interpreter cannot run it (CUDA tensors only)
    max_n_of: Callable[[torch.dtype], int] | None = None  # a per-dtype limit below max_n (bytes of shared memory)
    shape_rule: Callable[[int, torch.dtype], str | None] | None = None  # why rows of N it cannot run are out
    replayable: bool = False  # a launch of a contiguous input is one kernel on (output, input rows, ints) and
    # nothing else (no workspace, no torch op): auto replays it for a repeated input (kernels/replay.py)
    sweep_where: Callable[[int, torch.dtype], bool] | None = None  # the default sweep times it only at the N where
    # this holds (None: every N it takes); a sweep that names it times it at every N

    def limit(self, dtype: torch.dtype) -> int:
        """The widest N this variant takes in `dtype`."""
        return self.max_n if self.max_n_of is None else min(self.max_n, self.max_n_of(dtype))

    def runs_here(self) -> bool:
        """Whether launches can run in this process: GPU-only variants need CUDA and no interpreter."""
        from ._common import interpreting

        return not self.gpu_only or (torch.cuda.is_available() and not interpreting())

    @property
    def kernel_function(self) -> Callable:
        """The undecorated Python function of the kernel (to rebuild a JITFunction for offline compiles).

        'auto' has none: compile analysis follows its plan's `variant` to the variant that runs."""
        if self.kernel is None:
            raise ValueError(f"{self.name} has no kernel of its own; use the variant its plan names")
        return self.kernel.fn


def _whole_words(n_cols: int, dtype: torch.dtype) -> str | None:
    """The staged variants' rule: cp.async copies whole 4-byte words, so odd N in 16 bits is out."""
    from . import staged

    if staged.copy_elements(dtype.itemsize, n_cols) == 0:
        return (
            f"N = {n_cols} is odd: cp.async copies whole 4-byte words (N even for 16-bit dtypes; "
            "'teaching', 'online' or 'splitrow' take it)"
        )
    return None


def _build() -> dict[str, Variant]:
    """Import every variant module (Triton, Gluon, the blockscope::softmax op) and list the variants."""
    global _auto
    from . import (
        auto,
        cluster,
        multirow,
        online,
        persistent,
        splitrow,
        staged,
        staged_split,
        stagedrows,
        teaching,
        tinyrows,
        vecrows,
        warprows,
    )

    _auto = auto
    return {
        v.name: v
        for v in (
            Variant(
                "teaching",
                "the seed kernel: one program per row, BLOCK_SIZE = next_pow2(N)",
                teaching.softmax_teaching,
                teaching.row_softmax_kernel,
                teaching.MAX_N,
                teaching.TUNABLES,
                teaching.plan,
                teaching.signature,
                replayable=True,
            ),
            Variant(
                "multirow",
                "several rows per program ([ROWS, BLOCK_SIZE] tile) for small N",
                multirow.softmax_multirow,
                multirow.row_softmax_multirow_kernel,
                multirow.MAX_N,
                multirow.TUNABLES,
                multirow.plan,
                multirow.signature,
                replayable=True,
            ),
            Variant(
                "online",
                "looped online softmax (running max, rescaled sum) for any N",
                online.softmax_online,
                online.row_softmax_online_kernel,
                online.MAX_N,
                online.TUNABLES,
                online.plan,
                online.signature,
                replayable=True,
            ),
            Variant(
                "persistent",
                "SM count x blocks/SM programs, each looping over rows",
                persistent.softmax_persistent,
                persistent.row_softmax_persistent_kernel,
                persistent.MAX_N,
                persistent.TUNABLES,
                persistent.plan,
                persistent.signature,
                replayable=True,
            ),
            Variant(
                "splitrow",
                "CHUNKS cooperating programs per row, each chunk kept in registers (x read once)",
                splitrow.softmax_splitrow,
                splitrow.row_softmax_splitrow_kernel,
                splitrow.MAX_N,
                splitrow.TUNABLES,
                splitrow.plan,
                splitrow.signature,
            ),
            Variant(
                "staged",
                "one program per row, the row staged in shared memory by cp.async (Gluon; GPU only)",
                staged.softmax_staged,
                staged.row_softmax_staged_kernel,
                staged.MAX_N,
                staged.TUNABLES,
                staged.plan,
                staged.signature,
                gpu_only=True,
                max_n_of=staged.max_cols,
                shape_rule=_whole_words,
                replayable=True,
            ),
            Variant(
                "staged_split",
                "CHUNKS cooperating programs per row, each chunk staged in shared memory (Gluon; GPU only)",
                staged_split.softmax_staged_split,
                staged_split.row_softmax_staged_split_kernel,
                staged_split.MAX_N,
                staged_split.TUNABLES,
                staged_split.plan,
                staged_split.signature,
                gpu_only=True,
                shape_rule=_whole_words,
            ),
            Variant(
                "warprows",
                "rows spread over threads_per_row threads by an explicit layout, reductions inside "
                "warps, N in up to two power-of-two pieces (Gluon; GPU only)",
                warprows.softmax_warprows,
                warprows.row_softmax_warprows_kernel,
                warprows.MAX_N,
                warprows.TUNABLES,
                warprows.plan,
                warprows.signature,
                gpu_only=True,
                replayable=True,
            ),
            Variant(
                "stagedrows",
                "rows spread over threads_per_row threads, staged in shared memory by cp.async and "
                "read back a slice at a time (Gluon; GPU only)",
                stagedrows.softmax_stagedrows,
                stagedrows.row_softmax_stagedrows_kernel,
                stagedrows.MAX_N,
                stagedrows.TUNABLES,
                stagedrows.plan,
                stagedrows.signature,
                gpu_only=True,
                shape_rule=_whole_words,
                replayable=True,
            ),
            Variant(
                "cluster",
                "CLUSTER = cdiv(N, chunk) programs per row in a thread-block cluster, chunks in registers, "
                "(max, sum) exchanged through distributed shared memory (inline PTX; sm_90+, GPU only)",
                cluster.softmax_cluster,
                cluster.row_softmax_cluster_kernel,
                cluster.MAX_N,
                cluster.TUNABLES,
                cluster.plan,
                cluster.signature,
                gpu_only=True,
                replayable=True,
            ),
            Variant(
                "tinyrows",
                "tiny rows (N <= 64): ROWS back-to-back rows per program moved as one flat span of 16-byte vectors",
                tinyrows.softmax_tinyrows,
                tinyrows.row_softmax_tinyrows_kernel,
                tinyrows.MAX_N,
                tinyrows.TUNABLES,
                tinyrows.plan,
                tinyrows.signature,
                replayable=True,
            ),
            Variant(
                "vecrows",
                "one program per row in 16-byte vectors from the boundary below the row (rows not 16-byte aligned)",
                vecrows.softmax_vecrows,
                vecrows.row_softmax_vecrows_kernel,
                vecrows.MAX_N,
                vecrows.TUNABLES,
                vecrows.plan,
                vecrows.signature,
                replayable=True,
                sweep_where=vecrows.misaligned,
            ),
            Variant(
                "auto",
                "picks variant and tunables per GPU, dtype and shape from a tuning table",
                auto.softmax_auto,
                None,
                auto.MAX_N,
                auto.TUNABLES,
                auto.plan,
                auto.signature,
            ),
        )
    }


class _Variants(MutableMapping):
    """The registry's name -> Variant table; the variant modules import on its first use."""

    def __init__(self) -> None:
        self._table: dict[str, Variant] | None = None

    def _loaded(self) -> dict[str, Variant]:
        if self._table is None:
            self._table = _build()
        return self._table

    def __getitem__(self, name: str) -> Variant:
        return self._loaded()[name]

    def __setitem__(self, name: str, variant: Variant) -> None:
        self._loaded()[name] = variant

    def __delitem__(self, name: str) -> None:
        del self._loaded()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaded())

    def __len__(self) -> int:
        return len(self._loaded())

    def __contains__(self, name: object) -> bool:
        return name in self._loaded()

    def __repr__(self) -> str:
        return repr(self._loaded())


VARIANTS: MutableMapping[str, Variant] = _Variants()


# every variant's name, in VARIANTS' order, known without importing the variant modules (tests/test_import_cost.py
# checks it against VARIANTS)
VARIANT_NAMES: tuple[str, ...] = (
    "teaching",
    "multirow",
    "online",
    "persistent",
    "splitrow",
    "staged",
    "staged_split",
    "warprows",
    "stagedrows",
    "cluster",
    "tinyrows",
    "vecrows",
    "auto",
)


@dataclass(frozen=True)
class _Named:
    """A variant by name only: what softmax's traced path passes to the blockscope::softmax op."""

    name: str


_NAMED: dict[str, _Named] = {name: _Named(name) for name in VARIANT_NAMES}


_records: ModuleType | None = None  # kernels.launches, imported by the first softmax(x, variant="auto")


def _load_records() -> ModuleType:
    global _records
    from . import launches

    _records = launches
    return launches


def _load_auto() -> ModuleType:
    """kernels.auto, loading the registry's variants on the way (the first softmax(x, variant="auto"))."""
    VARIANTS["auto"]  # noqa: B018 - fills the table and _auto
    assert _auto is not None
    return _auto


def get_variant(name: str) -> Variant:
    """Look a variant up by name; ValueError names the registered ones."""
    try:
        return VARIANTS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown variant {name!r}; allowed: {', '.join(VARIANTS)}") from None


def softmax(
    x: torch.Tensor,
    dim: int | str = -1,
    variant: str | None = None,
    *,
    out: torch.Tensor | None = None,
    inplace: bool = False,
    **tunables: int,
) -> torch.Tensor:
    """Softmax of `x` over `dim` with a registered Triton variant (default 'teaching') and its tunables.

    Differentiable: every variant's backward is the Triton backward (kernels/backward.py) on the saved output.
    Under torch.compile it calls the blockscope::softmax op (kernels/ops.py), traced without graph breaks.
    `dim` other than the last is moved last (a copy when the moved last dim is not unit-stride); the result is
    then a view of a buffer with `dim` innermost. `out`: a preallocated output of x's shape, dtype and device,
    not overlapping x (written in place when viewable as rows, else copied into); returned. `inplace=True`
    writes into x and returns x. Neither takes autograd (as torch's out= ops), and both refuse (RuntimeError, as
    torch's in-place ops) a written-to tensor whose elements share memory (an expand, overlapping as_strided rows).
    The old positional form softmax(x, "online", tile=2048) still works: a str second argument is the variant.
    """
    # auto's repeated input: its whole call in C++ (kernels/native.py), or None (autograd, subclasses, a new shape).
    # Never while tracing: traced calls take the blockscope::softmax op below without reading _NATIVE_RUN (a guard on
    # it would recompile the graph once it is set).
    if (
        variant == "auto"
        and dim == -1
        and out is None
        and not inplace
        and not tunables
        and not torch.compiler.is_compiling()
    ):
        records = _records if _records is not None else _load_records()
        run = (_auto._NATIVE_RUN if _auto is not None else None) or records.NATIVE_RUN
        if run is not None:
            y = run(x)
            if y is not None:
                return y
        if type(x) is torch.Tensor and not (x.requires_grad and torch.is_grad_enabled()):
            y = records.run(x)  # a launch recorded by an earlier process: no Triton import (kernels/launches.py)
            if y is not None:
                return y
            auto = _auto if _auto is not None else _load_auto()
            return auto.softmax_auto_after_native(x, {})
    if isinstance(dim, str):  # softmax(x, "online"): the variant, as before `dim` existed
        if variant is not None:
            raise TypeError(f"softmax: variant given twice ({dim!r} and {variant!r}); allowed: one of them")
        dim, variant = -1, dim
    name = "teaching" if variant is None else variant
    # traced: the op takes the name only; resolving the variant would import the variant modules inside the trace
    if torch.compiler.is_compiling():
        entry = _NAMED.get(name)
        if entry is None:
            raise ValueError(f"unknown variant {name!r}; allowed: {', '.join(VARIANT_NAMES)}")
    else:
        entry = get_variant(name)
    if dim == -1 and out is None and not inplace and not torch.compiler.is_compiling():  # the common call
        if isinstance(x, torch.Tensor) and x.requires_grad and torch.is_grad_enabled():
            from .autograd import SoftmaxFunction

            return SoftmaxFunction.apply(x, entry.launcher, tunables)
        return entry.launcher(x, **tunables)
    ndim = x.dim() if isinstance(x, torch.Tensor) else 0
    if ndim and not -ndim <= dim < ndim:
        raise IndexError(f"softmax: dim={dim} is out of range for a rank-{ndim} tensor; allowed: {-ndim}..{ndim - 1}")
    last = not ndim or dim % ndim == ndim - 1
    if out is not None or inplace:
        return _softmax_into(x, dim, last, entry, out, inplace, tunables)
    moved = x if last else x.movedim(dim, -1)
    if torch.compiler.is_compiling():
        y = torch.ops.blockscope.softmax(moved, entry.name, ops.encode_tunables(tunables))
    elif isinstance(x, torch.Tensor) and x.requires_grad and torch.is_grad_enabled():
        from .autograd import SoftmaxFunction

        y = SoftmaxFunction.apply(moved, entry.launcher, tunables)
    else:
        y = entry.launcher(moved, **tunables)
    return y if last else y.movedim(-1, dim)


def _softmax_into(
    x: torch.Tensor,
    dim: int,
    last: bool,
    entry: Variant | _Named,
    out: torch.Tensor | None,
    inplace: bool,
    tunables: dict,
) -> torch.Tensor:
    """softmax(..., out=...) / softmax(..., inplace=True): checks, then the launch writes into the target."""
    if not isinstance(x, torch.Tensor):
        return entry.launcher(x, **tunables)  # the launcher names the problem
    if x.requires_grad and torch.is_grad_enabled():
        raise RuntimeError(
            "softmax: out= and inplace=True do not support autograd and x requires grad; allowed: "
            "out=None, inplace=False (differentiable) or a call under torch.no_grad()"
        )
    if inplace:
        if out is not None and out is not x:
            raise ValueError("softmax: inplace=True writes into x; allowed: out=None or out=x")
        out = x
        if not torch.compiler.is_compiling() and _self_overlap(x):
            raise RuntimeError(OVERLAP_MESSAGE)
    else:
        if not isinstance(out, torch.Tensor):
            raise TypeError(f"softmax: out must be a torch.Tensor, got {type(out).__name__}")
        if out.shape != x.shape or out.dtype != x.dtype or out.device != x.device:
            raise ValueError(
                f"softmax: out is {tuple(out.shape)} {out.dtype} on {out.device}; allowed: x's "
                f"{tuple(x.shape)} {x.dtype} on {x.device}"
            )
        if out.requires_grad and torch.is_grad_enabled():
            raise RuntimeError("softmax: out requires grad; out= does not support autograd")
        if not torch.compiler.is_compiling() and _self_overlap(out):
            raise RuntimeError(OVERLAP_MESSAGE)
        if not torch.compiler.is_compiling() and _overlap(x, out):
            raise ValueError(
                "softmax: out overlaps x's memory; allowed: a separate tensor, or inplace=True to write into x"
            )
    moved_x = x if last else x.movedim(dim, -1)
    moved_out = out if last else out.movedim(dim, -1)
    if torch.compiler.is_compiling():
        moved_out.copy_(torch.ops.blockscope.softmax(moved_x, entry.name, ops.encode_tunables(tunables)))
        return out
    if moved_out.stride(-1) == 1 and (moved_out.dim() == 2 or moved_out.is_contiguous()):  # rows view: in place
        y = entry.launcher(moved_x, out=moved_out, **tunables)
        if y.data_ptr() == moved_out.data_ptr() or y.numel() == 0:
            return out
    else:
        y = entry.launcher(moved_x, **tunables)
    moved_out.copy_(y)  # out not viewable as rows, or auto's torch route
    return out


OVERLAP_MESSAGE = (
    "softmax: unsupported operation: more than one element of the written-to tensor refers to a single memory "
    "location (an expanded or self-overlapping view); allowed: a tensor whose elements are distinct, e.g. .clone()"
)
_EXACT_OVERLAP_LIMIT = 1 << 22  # elements: above it an unprovable layout counts as overlapping


def _self_overlap(t: torch.Tensor) -> bool:
    """True when two elements of `t` share a memory location (an expand, a zero stride, overlapping as_strided rows),
    as torch refuses for in-place ops. Dense layouts answer at once; others by sorting strides (sufficient), then
    by the exact set of element offsets (up to 4 Mi elements; larger unprovable layouts count as overlapping)."""
    if t.numel() <= 1 or t.is_meta:
        return False
    if t.is_contiguous() or torch._debug_has_internal_overlap(t) == 0:  # 0: no overlap (non-overlapping and dense)
        return False
    dims = sorted((abs(s), n) for n, s in zip(t.shape, t.stride(), strict=True) if n > 1)
    if any(stride == 0 for stride, _ in dims):
        return True
    reach = 0  # the largest offset the smaller-stride dims reach
    for stride, size in dims:
        if stride <= reach:
            break
        reach += (size - 1) * stride
    else:
        return False
    if t.numel() > _EXACT_OVERLAP_LIMIT:
        return True
    offsets = torch.zeros((), dtype=torch.int64)
    for stride, size in dims:
        offsets = (offsets.unsqueeze(-1) + torch.arange(size, dtype=torch.int64) * stride).reshape(-1)
    return bool(offsets.unique().numel() < offsets.numel())


def _overlap(a: torch.Tensor, b: torch.Tensor) -> bool:
    """True when a and b share a storage and their byte ranges intersect (conservative for interleaved views)."""
    if a.numel() == 0 or b.numel() == 0 or a.is_meta:
        return False
    if a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr():
        return False

    def span(t: torch.Tensor) -> tuple[int, int]:
        low = t.data_ptr() + sum((n - 1) * s for n, s in zip(t.shape, t.stride(), strict=True) if s < 0) * t.itemsize
        high = (
            t.data_ptr()
            + (sum((n - 1) * s for n, s in zip(t.shape, t.stride(), strict=True) if s > 0) + 1) * t.itemsize
        )
        return low, high

    (a_low, a_high), (b_low, b_high) = span(a), span(b)
    return a_low < b_high and b_low < a_high


class Softmax(torch.nn.Module):
    """nn.Module for kernels.softmax: Softmax(dim=-1, variant="auto", **tunables), differentiable, compilable."""

    def __init__(self, dim: int = -1, variant: str = "auto", **tunables: int) -> None:
        super().__init__()
        get_variant(variant)
        self.dim, self.variant, self.tunables = dim, variant, dict(tunables)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return softmax(x, self.dim, self.variant, **self.tunables)

    def extra_repr(self) -> str:
        return ", ".join(
            [
                f"dim={self.dim}",
                f"variant={self.variant!r}",
                *(f"{name}={value}" for name, value in self.tunables.items()),
            ]
        )
