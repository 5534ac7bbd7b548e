"""Rows split over a thread-block cluster: CLUSTER programs per row, each holding `chunk` columns in registers, the
partial (max, sum) exchanged through distributed shared memory (Hopper, sm_90+; GPU only).

Split-row programs that meet in L2 (`splitrow`, `staged_split`) pay 2-3 dependent L2 round trips per row and keep a
persistent grid to make them affordable (docs/kernel-changes.md, "Why fp16/bf16 wide rows stay under 75-85% of
copy"). A cluster's programs are resident together and can store into each other's shared memory, so here the grid
is one program per chunk (R x CLUSTER programs, no row loop) and the exchange is one round: each program reduces its
chunk to (m, s = sum exp(x - m)), stores the pair into the same slot of every program of its cluster
(`st.async.shared::cluster`, completing a transaction count on the receiver's mbarrier), waits on its own mbarrier
and combines the CLUSTER pairs (M = max m_i, S = sum s_i exp(m_i - M)). This is the design of Quack's CuTe-DSL
softmax (a 2-CTA cluster per row at fp16 4096 x 32768, measured with ncu, docs/kernel-changes.md).

Triton 3.6/3.7 cannot lower a cross-CTA reduction (`scripts/gluon_cluster_probe.py`), so the exchange is inline
PTX: the exchange buffer is the last EXCHANGE_BYTES of the dynamic shared memory (`global_smem` +
`%dynamic_smem_size`), which the launcher adds past what Triton's own reductions use, and the cluster is formed at
launch (Triton's launcher forms clusters of `num_ctas` programs along x: the kernel is compiled for one CTA and
launched with num_ctas = CLUSTER). The CPU interpreter runs no PTX: the launcher is GPU-only.
The `# scope: NAME` / `# end scope: NAME` comments in the kernel mark regions that
profiling/measure/proton_scopes.py times with Proton (`bench --proton-scopes`); comments, so the code is unchanged.
"""

from __future__ import annotations

import ctypes
import functools

import torch
import triton
import triton.language as tl

from . import exactexp
from ._common import (
    VECTOR_BYTES,
    _libcuda,
    cached_plans,
    check_int_choice,
    check_int_range,
    check_power_of_2,
    check_tunables,
    compiled_kernel,
    launch_constexprs,
    next_power_of_2,
    prepare_launch,
    run_compiled,
)
from .plan import LaunchPlan

NAME = "cluster"
MAX_CLUSTER = 16  # 8 is the portable cluster size; 16 needs the non-portable opt-in (the launcher sets it)
MIN_CHUNK, MAX_CHUNK = 1024, 32768
MAX_N = MAX_CLUSTER * MAX_CHUNK
WARPS_ALLOWED = (4, 8, 16, 32)
MIN_MAXNREG = 32
SLOTS_OFFSET = 32  # bytes from the exchange buffer's start (its mbarrier, 8 bytes, padded) to the first slot
EXCHANGE_BYTES = SLOTS_OFFSET + 8 * MAX_CLUSTER  # + MAX_CLUSTER (max, sum) slots of 8 bytes: 160
TUNABLES = {
    "chunk": f"columns per program, a power of two from {MIN_CHUNK} to {MAX_CHUNK}; programs per row (the cluster) "
    f"= cdiv(N, chunk), at most {MAX_CLUSTER}; default the smallest chunk that keeps the cluster at 8 or "
    "less and 32 KB of row per program or more",
    "num_warps": f"warps per program, one of {WARPS_ALLOWED}; default chunk / 2048 (64 values per thread), 4 to 32",
    "maxnreg": f"register cap per thread (Triton's maxnreg: more programs per SM, or spills), 0 (none) or "
    f"{MIN_MAXNREG} to 255; default 0",
    "fast_exp": exactexp.FAST_EXP_TUNABLE,
}


# The exchange in PTX, one string each for the Triton helpers here and the Gluon ones (staged's clusters). The buffer
# is the last EXCHANGE_BYTES of the dynamic shared memory: an mbarrier, then MAX_CLUSTER (max, sum) slots of 8 bytes.
ANNOUNCE_PTX = tl.constexpr(
    """{
        .reg .pred p;
        .reg .b32 t, a;
        mov.u32 t, %tid.x;
        setp.eq.u32 p, t, 0;
        mov.u32 a, global_smem;
        mov.u32 $0, %dynamic_smem_size;
        add.u32 $0, a, $0;
        sub.u32 $0, $0, EXCHANGE_BYTES;
        @p mbarrier.init.shared::cta.b64 [$0], 1;
        @p fence.mbarrier_init.release.cluster;
        barrier.cluster.arrive.relaxed.aligned;
        }""".replace("EXCHANGE_BYTES", str(EXCHANGE_BYTES))
)
EXCHANGE_PTX = tl.constexpr(
    """{
        .reg .pred p, q, done;
        .reg .b32 t, a, rslot, rbar, bytes;
        barrier.cluster.wait.aligned;
        mov.u32 t, %tid.x;
        setp.eq.u32 q, t, 0;
        shl.b32 bytes, $5, 3;
        @q mbarrier.arrive.expect_tx.shared::cta.b64 _, [$1], bytes;
        setp.lt.u32 p, t, $5;
        add.u32 $0, $1, SLOTS_OFFSET;
        mad.lo.u32 a, $4, 8, $0;
        @p mapa.shared::cluster.u32 rslot, a, t;
        @p mapa.shared::cluster.u32 rbar, $1, t;
        @p st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [rslot], {$2, $3}, [rbar];
        WAIT:
        mbarrier.try_wait.parity.shared::cta.b64 done, [$1], 0;
        @!done bra WAIT;
        }""".replace("SLOTS_OFFSET", str(SLOTS_OFFSET))
)
SLOT_PTX = tl.constexpr("{ .reg .b32 a; mad.lo.u32 a, $3, 8, $2; ld.shared.v2.f32 {$0, $1}, [a]; }")


@triton.jit
def _announce():
    """Start of a program: mbarrier init (thread 0: one arrival, the local expect_tx) then a relaxed cluster arrive,
    which the matching wait in _exchange pairs with: no peer stores into this program before it exists. Returns the
    mbarrier's shared address."""
    return tl.inline_asm_elementwise(ANNOUNCE_PTX, "=r", [], dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def _exchange(bar, m, s, rank, cluster):
    """Store (m, s) into slot `rank` of every program of the cluster and wait until all `cluster` pairs of this
    program have landed: thread t < cluster writes to program t. Returns the shared address of slot 0."""
    return tl.inline_asm_elementwise(
        EXCHANGE_PTX, "=r,r,f,f,r,r", [bar, m, s, rank, cluster], dtype=tl.int32, is_pure=False, pack=1
    )


@triton.jit
def _slot(base, i):
    """(max, sum) of slot i."""
    return tl.inline_asm_elementwise(
        SLOT_PTX, "=f,=f,r,r", [base, i], dtype=(tl.float32, tl.float32), is_pure=False, pack=1
    )


@triton.jit
def _row_stats(base, CLUSTER: tl.constexpr, EXACT: tl.constexpr):
    """(row max M, row sum S) from the cluster's CLUSTER pairs: M = max m_i, S = sum s_i exp(m_i - M) (EXACT:
    exp by kernels/exactexp.py, the fp32 path)."""
    row_max = -float("inf")
    for i in tl.static_range(CLUSTER):
        row_max = tl.maximum(row_max, _slot(base, i)[0])
    total = 0.0
    for i in tl.static_range(CLUSTER):
        peer_max, peer_sum = _slot(base, i)
        if EXACT:
            total += peer_sum * exactexp.exp_diff(peer_max, row_max)
        else:
            total += peer_sum * tl.exp(peer_max - row_max)
    return row_max, total


@triton.jit
def row_softmax_cluster_kernel(
    output_ptr,
    input_ptr,
    input_row_stride,
    output_row_stride,
    n_cols,
    CHUNK: tl.constexpr,
    CLUSTER: tl.constexpr,
    VEC: tl.constexpr,
    EXACT: tl.constexpr,
):
    # read CHUNK + write CHUNK elements per program; CLUSTER x 8 bytes into the cluster's shared memory
    # scope: kernel
    program = tl.program_id(0)
    row = (program // CLUSTER).to(tl.int64)
    rank = program % CLUSTER  # clusters are CLUSTER consecutive programs along x
    if CLUSTER > 1:  # a launch without a cluster faults on cluster instructions (illegal instruction on the H200)
        bar = _announce()
    # scope: load
    cols = rank * CHUNK + tl.arange(0, CHUNK)
    mask = cols < n_cols // VEC * VEC  # exact (the launcher checks N % VEC): shows Triton whole vectors
    x = tl.load(input_ptr + row * (input_row_stride // VEC * VEC) + cols, mask=mask, other=-float("inf"))
    m = tl.max(x.to(tl.float32), axis=0)
    # end scope: load
    # scope: local
    shift = tl.where(m == -float("inf"), 0.0, m)  # a chunk of -inf: exp(-inf) = 0, not exp(nan)
    if EXACT:
        partial = tl.sum(exactexp.exp_diff(x.to(tl.float32), shift), axis=0)
    else:
        partial = tl.sum(tl.exp(x.to(tl.float32) - shift), axis=0)
    # end scope: local
    # scope: exchange
    if CLUSTER > 1:
        row_max, total = _row_stats(_exchange(bar, m, partial, rank, CLUSTER), CLUSTER, EXACT)
    elif EXACT:
        row_max = m
        total = partial * exactexp.exp_diff(m, row_max)  # NaN for a row of -inf, as the exchange gives
    else:
        row_max = m
        total = partial * tl.exp(m - row_max)  # NaN for a row of -inf, as the exchange gives
    # end scope: exchange
    # x waits in its own dtype and exp is taken again (keeping the fp32 numerators instead compiled to as many
    # registers: 117-128 per thread at 64 values, sm_90)
    # scope: store
    if EXACT:
        y = exactexp.normalize(exactexp.exp_diff(x.to(tl.float32), row_max), total)
        tl.store(output_ptr + row * (output_row_stride // VEC * VEC) + cols, y, mask=mask)
    else:
        tl.store(
            output_ptr + row * (output_row_stride // VEC * VEC) + cols,
            (tl.exp(x.to(tl.float32) - row_max) / total).to(output_ptr.dtype.element_ty),
            mask=mask,
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
        "n_cols": "i32",
        "CHUNK": "constexpr",
        "CLUSTER": "constexpr",
        "VEC": "constexpr",
        "EXACT": "constexpr",
    }


def default_chunk(n_cols: int, itemsize: int) -> int:
    """The smallest power-of-two chunk of at least 32 KB of row (16384 16-bit or 8192 fp32 columns) that keeps
    the cluster at 8 programs or fewer (the portable size), capped at MAX_CHUNK."""
    wanted = max(32768 // itemsize, next_power_of_2(-(-n_cols // 8)))
    return max(MIN_CHUNK, min(MAX_CHUNK, wanted, next_power_of_2(n_cols)))


def default_warps(chunk: int) -> int:
    """chunk / 2048 warps (64 values per thread, as Quack's 256 threads at 16384 columns), 4 to 32."""
    return max(4, min(32, chunk // 2048))


def plan(n_rows: int, n_cols: int, dtype: torch.dtype, **tunables: int) -> LaunchPlan:
    """Grid (R x CLUSTER,) in clusters of CLUSTER = cdiv(N, chunk) programs; each program loads `chunk` columns
    (16-byte vectors where N allows)."""
    check_tunables(NAME, tunables, TUNABLES)
    itemsize = dtype.itemsize
    if not 1 <= n_cols <= MAX_N:
        raise ValueError(
            f"{NAME}: N={n_cols} is outside this variant's range; allowed: 1 <= N <= {MAX_N} "
            f"({MAX_CLUSTER} programs of {MAX_CHUNK} columns; use 'staged_split' or 'online' wider)"
        )
    chunk = check_power_of_2(
        NAME, "chunk", tunables.get("chunk", default_chunk(n_cols, itemsize)), MIN_CHUNK, MAX_CHUNK
    )
    cluster = -(-n_cols // chunk)
    if cluster > MAX_CLUSTER:
        raise ValueError(
            f"{NAME}: chunk={chunk} splits N={n_cols} over {cluster} programs; allowed: at most "
            f"{MAX_CLUSTER} programs per cluster (chunk >= {next_power_of_2(-(-n_cols // MAX_CLUSTER))})"
        )
    num_warps = check_int_choice(NAME, "num_warps", tunables.get("num_warps", default_warps(chunk)), WARPS_ALLOWED)
    maxnreg = tunables.get("maxnreg", 0)
    if maxnreg != 0:
        maxnreg = check_int_range(NAME, "maxnreg", maxnreg, MIN_MAXNREG, 255)
    vec = VECTOR_BYTES // itemsize
    vec = vec if n_cols % vec == 0 else 1
    fast_exp = exactexp.fast_exp_choice(NAME, tunables)
    return LaunchPlan(
        variant=NAME,
        kernel_name="row_softmax_cluster_kernel",
        n_rows=n_rows,
        n_cols=n_cols,
        dtype=dtype,
        grid=(n_rows * cluster,),
        num_warps=num_warps,
        num_stages=1,
        tile_width=chunk,
        rows_per_program=1,
        constexprs={"CHUNK": chunk, "CLUSTER": cluster, "VEC": vec, "EXACT": exactexp.exact_constexpr(dtype, fast_exp)},
        scalar_args={"input_row_stride": n_cols, "output_row_stride": n_cols, "n_cols": n_cols},
        tunables={
            "chunk": chunk,
            "num_warps": num_warps,
            **({"maxnreg": maxnreg} if maxnreg else {}),
            **exactexp.fast_exp_tunables(fast_exp),
        },
        compile_options={"maxnreg": maxnreg} if maxnreg else {},
        launch_shared_bytes=EXCHANGE_BYTES,
        cluster_size=cluster,
    )


_plans = cached_plans(plan)
_MAX_DYNAMIC_SHARED_SIZE_BYTES, _NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 8, 14  # CUfunction_attribute
_PREPARED: set[tuple[int, int]] = set()  # (CUfunction, dynamic shared bytes) done


def _prepare_function(function: int, cluster: int, compiled_shared: int, shared: int) -> None:
    """Once per loaded kernel and size: opt in to clusters of more than 8 programs, and to dynamic shared memory over
    48 KB where the exchange buffer crosses it (Triton opts in only past 48 KB of its own)."""
    if (function, shared) in _PREPARED:
        return
    settings = []
    if cluster > 8:
        settings.append((_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1, f"clusters of {cluster} programs"))
    if shared > 49152 >= compiled_shared:
        settings.append((_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared, f"{shared} bytes of shared memory"))
    for attribute, value, what in settings:
        status = _libcuda().cuFuncSetAttribute(ctypes.c_void_p(function), ctypes.c_int(attribute), ctypes.c_int(value))
        if status != 0:
            raise RuntimeError(
                f"{NAME}: cuFuncSetAttribute for {what} failed with CUresult {status}; allowed: at "
                "most 8 programs per cluster and the GPU's shared memory per block"
            )
    _PREPARED.add((function, shared))


def check_clusters(device: torch.device) -> None:
    """ValueError unless the GPU has thread-block clusters (sm_90 or newer)."""
    major, minor = _capability(device.index if device.index is not None else torch.cuda.current_device())
    if major < 9:
        raise ValueError(
            f"thread-block clusters need sm_90 or newer, this GPU is sm_{major}{minor}; allowed: "
            "'splitrow', 'staged_split' or 'online' for wide rows (or 'staged' with cluster=1)"
        )


@functools.cache
def _capability(device_index: int) -> tuple[int, int]:
    return torch.cuda.get_device_capability(device_index)


def launch_cluster(kernel, launch: LaunchPlan, args: tuple, constexprs: dict[str, int]) -> None:
    """Launch a kernel compiled for one program as R clusters of launch.cluster_size programs along x, with the
    exchange buffer (launch.launch_shared_bytes) past the compiled kernel's shared memory."""
    compiled, bound, stream, hooks = compiled_kernel(
        kernel, launch.grid, args, constexprs, launch.num_warps, options=launch.compile_options
    )
    cluster = launch.cluster_size
    shared = launch.shared_bytes(compiled.metadata.shared)
    _prepare_function(compiled.function, cluster, compiled.metadata.shared, shared)
    grid = launch.grid[0] // cluster  # clusters; Triton's launcher multiplies x by num_ctas
    run_compiled(compiled, (grid, 1, 1), stream, (launch.num_warps, cluster, shared), bound, hooks)


def softmax_cluster(x: torch.Tensor, **tunables: int) -> torch.Tensor:
    """Softmax over the last dim, each row split over a cluster of programs (tunables: chunk, num_warps, maxnreg).
    CUDA tensors on sm_90 or newer only."""
    rows, launch, output = prepare_launch(x, NAME, MAX_N, _plans, tunables)
    if rows.numel() == 0:
        return output.view(x.shape)
    if not rows.is_cuda:
        raise ValueError(
            f"{NAME}: inline PTX for thread-block clusters, which the Triton CPU interpreter cannot run; "
            "allowed: a CUDA tensor of an sm_90 or newer GPU (on the CPU use 'teaching', 'multirow', "
            "'online', 'persistent' or 'splitrow')"
        )
    check_clusters(rows.device)
    launch_cluster(
        row_softmax_cluster_kernel,
        launch,
        (output, rows, rows.stride(0), output.stride(0), rows.shape[1]),
        launch_constexprs(launch.constexprs, rows, output),
    )
    return output.view(x.shape)
