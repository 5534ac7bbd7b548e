"""Rows (or ragged segments) that do not start 16-byte aligned, in whole vectors (issues 35 and 37): from the
VEC-aligned row at or below the start, the vectors that rows [head, n) fill are loaded and stored whole
(`ld/st.global.v4`); the rows in the partial vectors at both ends go through one element load whose lanes
interleave the two ends. A contiguous [VEC] tensor would take Triton's vector layout, every thread loading the whole
replicated vector; interleaved, each thread holds one element. Used by kernels/vecrows.py and kernels/ragged.py.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def whole_vectors(lanes, head, n, VEC: tl.constexpr):
    """Mask of the lanes (from a VEC-aligned row) in the whole vectors that rows [head, n) fill; head < VEC, head
    and n int32 scalars or [S, 1]. Its bounds are multiples of VEC, so Triton loads and stores them as vectors."""
    return (lanes >= (head + VEC - 1) // VEC * VEC) & (lanes < n // VEC * VEC)


@triton.jit
def partial_ends(head, n, VEC: tl.constexpr):
    """The rows of [head, n) outside whole_vectors: those in the partial vectors at both ends, as [S or 1, 2 * VEC]
    rows from the aligned row (even lanes the head's vector, odd lanes the tail's) and their mask."""
    j = tl.arange(0, 2 * VEC)[None, :]
    body_lo = (head + VEC - 1) // VEC * VEC
    body_hi = n // VEC * VEC
    at_tail = (j % 2) == 1
    rows = j // 2 + tl.where(at_tail, body_hi, 0)
    ok = (rows >= head) & (rows < n) & tl.where(at_tail, rows >= body_lo, rows < body_lo)
    return rows, ok
