"""One row per program, staged in shared memory by cp.async (a Gluon kernel): wide 16-bit rows without the register
limit of the teaching kernel.

The teaching kernel holds its row in registers as fp32, so a program of a 32768-wide fp16 row fills the register file
of an SM and one row is in flight per SM (78-80% of copy on the H200, docs/kernel-changes.md). Here the row is copied
into shared memory in its own dtype (cp.async, 16 bytes per thread per copy, one commit group per slice), then read
three times from shared memory (max per lane as slices land, sum of exp, exp times 1/sum stored): registers hold one
slice, shared memory bounds the programs per SM (3 of 64 KB at N=32768 fp16 on sm_90), and DRAM sees x once.
Gluon (triton.experimental.gluon) is what exposes shared memory and cp.async; the Triton CPU interpreter cannot run
it, so the launcher is GPU-only (CPU tests compile it offline and check the PTX).
The `# scope: NAME` / `# end scope: NAME` comments in the kernel mark regions that
profiling/measure/proton_scopes.py times with Proton (`bench --proton-scopes`); comments, so the code is unchanged.
"""

from __future__ import annotations

import functools

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy

from . import cluster as clusters
from . import exactexp, warprows
from ._common import (
    NUM_WARPS_ALLOWED,
    VECTOR_BYTES,
    cached_plans,
    check_int_choice,
    check_int_range,
    check_tunables,
    prepare_launch,
)
from ._common import launch as launch_kernel
from .plan import LaunchPlan

NAME = "staged"
MAX_ROW_BYTES = 224 * 1024  # sm_90's 227 KB of shared memory per block, less the reductions' scratch
MAX_N = 2**20  # over a cluster of programs (one program: MAX_ROW_BYTES of row; plan checks per dtype)
MIN_COPY_BYTES = 4  # cp.async moves 4, 8 or 16 bytes
WARPS_ALLOWED = tuple(w for w in NUM_WARPS_ALLOWED if w >= 4)
CLUSTER_CHUNK_BYTES = 64 * 1024  # a row over a cluster: chunks of this, 3 programs per SM on sm_90
SM_SHARED_BYTES = 228 * 1024  # sm_90: shared memory per SM, of which each resident block reserves 1 KB
SM_REGISTERS = 65536  # sm_90: 32-bit registers per SM
SM_THREADS = 2048
FTZ_SAFE_RANGE = gl.constexpr(87.0)  # x - max >= -87 keeps exp(x - max) >= 2**-125.5: ex2.approx.ftz flushes none
SHARED_OVERHEAD_BYTES = 1024 + 256  # per block: the reserved 1 KB, the reductions' scratch and the exchange buffer
TUNABLES = {
    "num_warps": f"warps per program, one of {WARPS_ALLOWED}; default 8",
    "cluster": f"programs per row, one thread-block cluster (sm_90+), 1 to {clusters.MAX_CLUSTER}; default "
    f"cdiv(row bytes, {CLUSTER_CHUNK_BYTES // 1024} KB)",
    "fast_exp": exactexp.FAST_EXP_TUNABLE,
}


@gluon.jit
def _allocate(dtype: gl.constexpr, SLICE: gl.constexpr, PART0: gl.constexpr, PART1: gl.constexpr, PART2: gl.constexpr):
    """Shared buffers of PART0, PART1, PART2 slices (an unused one aliases the first)."""
    shared: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [0])
    part0 = gl.allocate_shared_memory(dtype, [PART0 * SLICE], shared)
    part1 = part0
    part2 = part0
    if PART1 > 0:
        part1 = gl.allocate_shared_memory(dtype, [PART1 * SLICE], shared)
    if PART2 > 0:
        part2 = gl.allocate_shared_memory(dtype, [PART2 * SLICE], shared)
    return part0, part1, part2


@gluon.jit
def _slice(part0, part1, part2, i: gl.constexpr, PART0: gl.constexpr, PART1: gl.constexpr, SLICE: gl.constexpr):
    """Slice i of the row: shared buffers have power-of-two shapes, so a row is up to three buffers of slices."""
    if i < PART0:
        return part0.slice(i * SLICE, SLICE)
    elif i < PART0 + PART1:
        return part1.slice((i - PART0) * SLICE, SLICE)
    else:
        return part2.slice((i - PART0 - PART1) * SLICE, SLICE)


@gluon.jit
def _announce():
    return gl.inline_asm_elementwise(clusters.ANNOUNCE_PTX, "=r", [], dtype=gl.int32, is_pure=False, pack=1)


@gluon.jit
def _log2_offset(m, EXP: gl.constexpr):
    """fp16 (EXP=2): the addend of _numerators for a row (or chunk) maximum m, m * log2(e) rounded once (mul.rn:
    never contracted into an FMA, so the exchange combines exactly the offsets the numerators used); unused
    otherwise."""
    return gl.inline_asm_elementwise(
        "mul.rn.f32 $0, $1, 0f3FB8AA3B;", "=f,f", [m], dtype=gl.float32, is_pure=True, pack=1
    )


@gluon.jit
def _numerators(values, shift, offset, FORM: gl.constexpr):
    """exp(values - shift), up to a factor common to the row: FORM 2 (fp16) ex2.approx.ftz of one FMA with the given
    offset; 1 (bf16) 2**64 x exp by ex2.approx.ftz (warprows.exp_rows); 3 (fp32 with fast_exp, rows whose finite
    values all lie within FTZ_SAFE_RANGE of the shift) ex2.approx.ftz of (values - shift) * log2(e), gl.exp's own
    arithmetic less its subnormal-result handling, which no such row needs (bitwise equal to 4's results there); 4
    gl.exp (fp32 with fast_exp); 0 fp32's exp within an ULP (kernels/exactexp.py)."""
    if FORM == 2:
        return gl.inline_asm_elementwise(
            "fma.rn.f32 $0, $1, 0f3FB8AA3B, $2;\n\tex2.approx.ftz.f32 $0, $0;",
            "=f,f,f",
            [values, -offset],
            dtype=gl.float32,
            is_pure=True,
            pack=1,
        )
    if FORM == 3:
        return gl.inline_asm_elementwise(
            "ex2.approx.ftz.f32 $0, $1;",
            "=f,f",
            [(values - shift) * warprows.LOG2E],
            dtype=gl.float32,
            is_pure=True,
            pack=1,
        )
    return warprows.exp_rows(values, shift, FORM)


@gluon.jit
def _exp_pass(
    part0,
    part1,
    part2,
    lanes,
    width,
    target,
    shift,
    low,
    offset,
    inverse,
    LAYOUT: gl.constexpr,
    SLICE: gl.constexpr,
    PART0: gl.constexpr,
    PART1: gl.constexpr,
    SLICES: gl.constexpr,
    WHOLE: gl.constexpr,
    EXP: gl.constexpr,
    STORE: gl.constexpr,
):
    """_pass in _numerators' form for EXP: fp32 with fast_exp (EXP 4) form 3 where every finite value of the chunk
    (the smallest being `low`) lies within FTZ_SAFE_RANGE of `shift`, gl.exp (form 4) otherwise; otherwise the form
    EXP (fp32's 0: exp within an ULP, kernels/exactexp.py)."""
    if EXP == 4:
        if shift - low <= FTZ_SAFE_RANGE:  # every exp of this chunk a normal number (or exactly 0)
            total = _pass(
                part0,
                part1,
                part2,
                lanes,
                width,
                target,
                shift,
                offset,
                inverse,
                LAYOUT,
                SLICE,
                PART0,
                PART1,
                SLICES,
                WHOLE,
                3,
                STORE,
            )
        else:
            total = _pass(
                part0,
                part1,
                part2,
                lanes,
                width,
                target,
                shift,
                offset,
                inverse,
                LAYOUT,
                SLICE,
                PART0,
                PART1,
                SLICES,
                WHOLE,
                4,
                STORE,
            )
    else:
        total = _pass(
            part0,
            part1,
            part2,
            lanes,
            width,
            target,
            shift,
            offset,
            inverse,
            LAYOUT,
            SLICE,
            PART0,
            PART1,
            SLICES,
            WHOLE,
            EXP,
            STORE,
        )
    return total


@gluon.jit
def _pass(
    part0,
    part1,
    part2,
    lanes,
    width,
    target,
    shift,
    offset,
    inverse,
    LAYOUT: gl.constexpr,
    SLICE: gl.constexpr,
    PART0: gl.constexpr,
    PART1: gl.constexpr,
    SLICES: gl.constexpr,
    WHOLE: gl.constexpr,
    FORM: gl.constexpr,
    STORE: gl.constexpr,
):
    """One pass over the staged slices: STORE False, per lane the sum of _numerators (lanes past the chunk's width:
    0); STORE True, _numerators x inverse stored (FORM 0, fp32: `inverse` is the row sum and exactexp's normalize
    divides; lanes past the width: not stored), sums 0."""
    total = gl.zeros([SLICE], gl.float32, LAYOUT)
    for i in gl.static_range(SLICES):
        values = _slice(part0, part1, part2, i, PART0, PART1, SLICE).load(LAYOUT).to(gl.float32)
        numerators = _numerators(values, shift, offset, FORM)
        if STORE:
            cols = i * SLICE + lanes
            if FORM == 0:
                y = exactexp.gluon_normalize(numerators, inverse).to(target.dtype.element_ty)
            else:
                y = (numerators * inverse).to(target.dtype.element_ty)
            if i < WHOLE:
                gl.store(target + cols, y)
            else:
                gl.store(target + cols, y, mask=cols < width)
        else:
            if i >= WHOLE:
                numerators = gl.where(i * SLICE + lanes < width, numerators, 0.0)
            total += numerators
    return total


@gluon.jit
def _row_stats(bar, m, s, rank, CLUSTER: gl.constexpr, EXP: gl.constexpr):
    """kernels.cluster's exchange and combination of the cluster's (max, sum) pairs, in Gluon. fp16: each partial
    sum is rescaled by exp2 of the difference of the offsets its numerators used, so the combined sum and the
    numerators of the store pass carry the same factor; otherwise by exp(m_i - M). Returns (M, M's offset, sum)."""
    base = gl.inline_asm_elementwise(
        clusters.EXCHANGE_PTX, "=r,r,f,f,r,r", [bar, m, s, rank, CLUSTER], dtype=gl.int32, is_pure=False, pack=1
    )
    row_max = -float("inf")
    for i in gl.static_range(CLUSTER):
        row_max = gl.maximum(
            row_max,
            gl.inline_asm_elementwise(
                clusters.SLOT_PTX, "=f,=f,r,r", [base, i], dtype=(gl.float32, gl.float32), is_pure=False, pack=1
            )[0],
        )
    row_offset = _log2_offset(row_max, EXP)
    total = 0.0
    for i in gl.static_range(CLUSTER):
        peer_max, peer_sum = gl.inline_asm_elementwise(
            clusters.SLOT_PTX, "=f,=f,r,r", [base, i], dtype=(gl.float32, gl.float32), is_pure=False, pack=1
        )
        if EXP == 2:
            total += peer_sum * gl.exp2(_log2_offset(peer_max, EXP) - row_offset)
        elif EXP == 0:
            total += peer_sum * exactexp.gluon_exp_diff(peer_max, row_max)
        else:
            total += peer_sum * gl.exp(peer_max - row_max)
    return row_max, row_offset, total


@gluon.jit
def row_softmax_staged_kernel(
    output_ptr,
    input_ptr,
    input_row_stride,
    output_row_stride,
    n_cols: gl.constexpr,
    SLICE: gl.constexpr,
    PART0: gl.constexpr,
    PART1: gl.constexpr,
    PART2: gl.constexpr,
    VEC: gl.constexpr,
    CLUSTER: gl.constexpr,
    EXP: gl.constexpr,
):
    # read N (global -> shared, once) + write N elements per row; shared memory is read 3 times. CLUSTER > 1: a row
    # per thread-block cluster, each program staging CHUNK columns, (max, sum) exchanged as in kernels.cluster
    # scope: kernel
    SLICES: gl.constexpr = PART0 + PART1 + PART2
    CHUNK: gl.constexpr = SLICES * SLICE
    WHOLE: gl.constexpr = (n_cols - (CLUSTER - 1) * CHUNK) // SLICE  # slices whole in every program: no mask
    layout: gl.constexpr = gl.BlockedLayout([VEC], [32], [gl.num_warps()], [0])
    part0, part1, part2 = _allocate(input_ptr.dtype.element_ty, SLICE, PART0, PART1, PART2)
    if CLUSTER > 1:
        bar = _announce()
        rank = gl.program_id(0) % CLUSTER
        row = (gl.program_id(0) // CLUSTER).to(gl.int64)
        first = rank * CHUNK
        width = n_cols - first
    else:
        row = gl.program_id(0).to(gl.int64)
        first = 0
        width = n_cols
    lanes = gl.arange(0, SLICE, layout=layout)
    source = input_ptr + row * (input_row_stride // VEC * VEC) + first  # rounding shows Triton whole VEC-vectors
    target = output_ptr + row * (output_row_stride // VEC * VEC) + first
    # scope: load
    for i in gl.static_range(SLICES):
        cols = i * SLICE + lanes
        if i < WHOLE:
            async_copy.async_copy_global_to_shared(_slice(part0, part1, part2, i, PART0, PART1, SLICE), source + cols)
        else:
            async_copy.async_copy_global_to_shared(
                _slice(part0, part1, part2, i, PART0, PART1, SLICE), source + cols, mask=cols < width
            )
        async_copy.commit_group()
    # fp16 maxima two at a time (exact; bf16 has no cheaper max than fp32's on sm_90); fp32 also the smallest finite
    # value, which decides the exp's form below
    MAX_TYPE: gl.constexpr = gl.float16 if input_ptr.dtype.element_ty == gl.float16 else gl.float32
    running = gl.full([SLICE], -float("inf"), MAX_TYPE, layout)
    low = gl.full([SLICE], float("inf"), gl.float32, layout)
    for i in gl.static_range(SLICES):  # each thread reads back what it copied: its own wait_group suffices
        async_copy.wait_group(SLICES - 1 - i)
        values = _slice(part0, part1, part2, i, PART0, PART1, SLICE).load(layout).to(MAX_TYPE)
        if i >= WHOLE:
            values = gl.where(i * SLICE + lanes < width, values, -float("inf"))
        running = gl.maximum(running, values)
        if EXP == 4:
            low = gl.minimum(low, gl.where(values > -float("inf"), values, float("inf")))
    row_max = gl.max(running.to(gl.float32), axis=0)
    # end scope: load
    # scope: local
    if CLUSTER > 1:
        shift = gl.where(row_max == -float("inf"), 0.0, row_max)  # a chunk of -inf: exp(-inf) = 0, not exp(nan)
    else:
        shift = row_max
    offset = _log2_offset(shift, EXP)
    if EXP == 4:
        row_min = gl.min(low, axis=0)  # decides fast fp32's exp form (_exp_pass)
    else:
        row_min = shift  # unused
    total = _exp_pass(
        part0,
        part1,
        part2,
        lanes,
        width,
        target,
        shift,
        row_min,
        offset,
        0.0,
        layout,
        SLICE,
        PART0,
        PART1,
        SLICES,
        WHOLE,
        EXP,
        False,
    )
    # end scope: local
    # scope: exchange
    if CLUSTER > 1:
        row_max, offset, row_sum = _row_stats(bar, row_max, gl.sum(total, axis=0), rank, CLUSTER, EXP)
        if EXP == 0:
            inverse = row_sum  # fp32: _pass divides by the row sum (exactexp's normalize)
        else:
            inverse = 1.0 / row_sum
    elif EXP == 0:
        inverse = gl.sum(total, axis=0)
    else:
        inverse = 1.0 / gl.sum(total, axis=0)  # one reciprocal per row
    # end scope: exchange
    # scope: store
    _exp_pass(
        part0,
        part1,
        part2,
        lanes,
        width,
        target,
        row_max,
        row_min,
        offset,
        inverse,
        layout,
        SLICE,
        PART0,
        PART1,
        SLICES,
        WHOLE,
        EXP,
        True,
    )
    # end scope: store
    # end scope: kernel


def signature(dtype: torch.dtype) -> dict[str, str]:
    """Kernel argument types for offline compilation (Triton type strings)."""
    ptr = "*" + {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}[dtype]
    return {
        "output_ptr": ptr,
        "input_ptr": ptr,
        "input_row_stride": "i32",
        "output_row_stride": "i32",
        "n_cols": "constexpr",
        "SLICE": "constexpr",
        "PART0": "constexpr",
        "PART1": "constexpr",
        "PART2": "constexpr",
        "VEC": "constexpr",
        "CLUSTER": "constexpr",
        "EXP": "constexpr",
    }


def whole_copies(rows: torch.Tensor, vec: int) -> bool:
    """Whether cp.async can copy these rows in VEC-element pieces: a 16-byte aligned start (Triton specializes
    pointers on 16-byte alignment only; below it cp.async would need 2-byte copies, which do not exist) and a row
    stride that is a multiple of VEC."""
    return rows.data_ptr() % 16 == 0 and rows.stride(0) % vec == 0


def staging_buffers(rows: torch.Tensor, output: torch.Tensor, vec: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(source, target) rows the kernel can copy whole: the given ones, or fresh contiguous copies of those that
    are not (the caller copies the target back into `output`)."""
    source = rows if whole_copies(rows, vec) else rows.clone(memory_format=torch.contiguous_format)
    target = output if whole_copies(output, vec) else torch.empty_like(source, memory_format=torch.contiguous_format)
    return source, target


def program_cols(dtype: torch.dtype) -> int:
    """The widest N one program stages in `dtype`: MAX_ROW_BYTES of elements, whole slices at every num_warps
    (multiples of 8192)."""
    return MAX_ROW_BYTES // dtype.itemsize // 8192 * 8192


def max_cols(dtype: torch.dtype) -> int:
    """The widest N in `dtype`: a cluster of MAX_CLUSTER programs, at most MAX_N."""
    return min(MAX_N, clusters.MAX_CLUSTER * program_cols(dtype))


def copy_elements(itemsize: int, *extents: int) -> int:
    """Elements per cp.async: the widest of 16, 8 or 4 bytes that divides every extent (N, row strides); 0 if none."""
    vec = VECTOR_BYTES // itemsize
    while vec * itemsize >= MIN_COPY_BYTES:
        if all(extent % vec == 0 for extent in extents):
            return vec
        vec //= 2
    return 0


def slice_parts(slices: int) -> tuple[int, int, int]:
    """Slices per shared buffer: `slices` rounded up to at most three powers of two (shared buffers must have
    power-of-two shapes), largest first, 0 for an unused buffer. 25 -> (16, 8, 1); 23 -> (16, 8, 0)."""
    while bin(slices).count("1") > 3:
        slices += slices & -slices
    parts = [1 << bit for bit in range(slices.bit_length() - 1, -1, -1) if slices >> bit & 1]
    return tuple(parts + [0] * (3 - len(parts)))  # type: ignore[return-value]


def default_cluster(n_cols: int, itemsize: int) -> int:
    """Programs per row by default: chunks of CLUSTER_CHUNK_BYTES or less, at most MAX_CLUSTER (H200,
    experiments/2026-12-01-staged-cluster: one 128 KB program per row of 65536 fp16 reaches 81% of copy, two of 64 KB
    96%; 100000 fp16: 71% in one program, 87% in four)."""
    return max(1, min(clusters.MAX_CLUSTER, -(-n_cols * itemsize // CLUSTER_CHUNK_BYTES)))


def register_cap(chunk_bytes: int, num_warps: int) -> int:
    """The `maxnreg` of the compile, 0 for none: registers per thread (a multiple of 8) at which registers let as
    many programs share an SM as its shared memory does (sm_90), where that is 64 to 120. There ptxas' own choice
    (up to 80, prefetching shared loads) can cost a resident program (bf16 at 25000 columns per program: 74
    registers, 3 programs per SM where shared memory holds 4); below 64 a cap makes it serialize the loads instead
    (H200, fp16 777x100000 over 7 programs against 4, one run each: capped at 32 registers 94.2 vs 79.8 us,
    experiments/2026-12-02-fp32-range; uncapped 78.0 vs 80.9 us, experiments/2026-12-02-fp32-range), and at
    128 or more registers bind nothing."""
    threads = 32 * num_warps
    programs = max(1, min(SM_THREADS // threads, SM_SHARED_BYTES // (chunk_bytes + SHARED_OVERHEAD_BYTES)))
    cap = SM_REGISTERS // (programs * threads) // 8 * 8
    return cap if 64 <= cap < 128 else 0


def plan(n_rows: int, n_cols: int, dtype: torch.dtype, **tunables: int) -> LaunchPlan:
    """Grid (R x cluster,); slices of VEC x 32 x num_warps elements; shared memory per program = its chunk (the row,
    or cdiv(N, cluster) columns) rounded up to whole slices, in at most three power-of-two buffers."""
    check_tunables(NAME, tunables, TUNABLES)
    num_warps = check_int_choice(NAME, "num_warps", tunables.get("num_warps", 8), WARPS_ALLOWED)
    itemsize = dtype.itemsize
    vec = copy_elements(itemsize, n_cols)
    if vec == 0:
        raise ValueError(
            f"{NAME}: N={n_cols} {dtype} rows are not whole {MIN_COPY_BYTES}-byte words (cp.async "
            f"copies 4, 8 or 16 bytes); allowed: N even for 16-bit dtypes; use 'teaching' or 'online'"
        )
    slice_width = vec * 32 * num_warps
    row_slices = -(-n_cols // slice_width)
    cluster = check_int_range(
        NAME, "cluster", tunables.get("cluster", default_cluster(n_cols, itemsize)), 1, clusters.MAX_CLUSTER
    )
    parts = slice_parts(-(-row_slices // cluster))
    chunk = sum(parts) * slice_width
    if n_cols < 1 or chunk * itemsize > MAX_ROW_BYTES:
        widest = MAX_ROW_BYTES // itemsize // slice_width * slice_width
        raise ValueError(
            f"{NAME}: N={n_cols} is outside this variant's range for {dtype} at num_warps={num_warps}, "
            f"cluster={cluster}; allowed: 1 <= N and each program's chunk, rounded up to slices of "
            f"{slice_width}, at most {MAX_ROW_BYTES} bytes of shared memory (N <= {widest} per program; "
            f"raise cluster, up to {clusters.MAX_CLUSTER})"
        )
    if (cluster - 1) * chunk >= n_cols:
        raise ValueError(
            f"{NAME}: cluster={cluster} leaves programs without columns at N={n_cols} (chunks of "
            f"{chunk}); allowed: cluster <= {-(-n_cols // chunk)}"
        )
    return LaunchPlan(
        variant=NAME,
        kernel_name="row_softmax_staged_kernel",
        n_rows=n_rows,
        n_cols=n_cols,
        dtype=dtype,
        grid=(n_rows * cluster,),
        num_warps=num_warps,
        num_stages=1,
        tile_width=chunk,
        rows_per_program=1,
        constexprs={
            "n_cols": n_cols,
            "SLICE": slice_width,
            "PART0": parts[0],
            "PART1": parts[1],
            "PART2": parts[2],
            "VEC": vec,
            "CLUSTER": cluster,
            "EXP": warprows.exp_form(dtype, exactexp.fast_exp_choice(NAME, tunables)),
        },
        scalar_args={"input_row_stride": n_cols, "output_row_stride": n_cols},
        tunables={
            "num_warps": num_warps,
            **({"cluster": cluster} if cluster > 1 else {}),
            **exactexp.fast_exp_tunables(exactexp.fast_exp_choice(NAME, tunables)),
        },
        launch_shared_bytes=clusters.EXCHANGE_BYTES if cluster > 1 else 0,
        cluster_size=cluster,
        compile_options={"maxnreg": cap} if (cap := register_cap(chunk * itemsize, num_warps)) else {},
    )


_plans = cached_plans(plan)


@functools.cache
def shared_memory_limit(device_index: int) -> int:
    """Bytes of shared memory one block may opt in to on this device (227 KB on sm_90)."""
    return int(torch.cuda.get_device_properties(device_index).shared_memory_per_block_optin)


def softmax_staged(x: torch.Tensor, **tunables: int) -> torch.Tensor:
    """Softmax over the last dim, each row staged in shared memory (tunables: num_warps, cluster). CUDA tensors only
    (cluster > 1: sm_90 or newer)."""
    rows, launch, output = prepare_launch(x, NAME, MAX_N, _plans, tunables)
    n_rows, n_cols = rows.shape
    if rows.numel() == 0:
        return output.view(x.shape)
    if not rows.is_cuda:
        raise ValueError(
            f"{NAME}: a Gluon kernel, which the Triton CPU interpreter cannot run; allowed: a CUDA "
            "tensor (on the CPU use 'teaching', 'multirow', 'online', 'persistent' or 'splitrow')"
        )
    needed = launch.tile_width * rows.element_size()
    available = shared_memory_limit(rows.device.index if rows.device.index is not None else 0)
    if needed > available - 1024:
        raise ValueError(
            f"{NAME}: a chunk of {launch.tile_width} columns needs {needed} bytes of shared memory and "
            f"this GPU allows {available} per block; allowed: chunks of at most "
            f"{(available - 1024) // rows.element_size()} columns (raise cluster on sm_90+, or use "
            "'splitrow' or 'online' for wider rows)"
        )
    source, target = staging_buffers(rows, output, launch.constexprs["VEC"])
    args = (target, source, source.stride(0), target.stride(0))
    if launch.cluster_size > 1:
        clusters.check_clusters(rows.device)
        clusters.launch_cluster(row_softmax_staged_kernel, launch, args, launch.constexprs)
    else:
        launch_kernel(
            row_softmax_staged_kernel,
            launch.grid,
            args,
            launch.constexprs,
            launch.num_warps,
            options=launch.compile_options,
        )
    if target is not output:
        output.copy_(target)
    return output.view(x.shape)
