"""Per-kernel GPU times (torch.profiler, CUDA activity) of ragged_softmax and masked_softmax on one GPU.

    PYTHONPATH=. python3 experiments/2026-12-04-fused-profile/profile_fused.py > OUT.txt

Prints, per case, every CUDA kernel the call launches with its mean duration (us) over 20 calls and the launch
config where Triton reports it; for finding where the time of bench_fused's slow rows goes.
"""

from __future__ import annotations

import sys

import torch
from torch.profiler import ProfilerActivity, profile

from blockscope import kernels
from blockscope.kernels import ragged
from tools.bench_fused import _lengths


def report(name: str, fn, calls: int = 20) -> None:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    total = 0.0
    lines = []
    for event in prof.key_averages():
        if event.device_time_total <= 0:
            continue
        per_call = event.device_time_total / calls
        total += per_call
        lines.append(f"    {per_call:9.1f} us  x{event.count // calls:<3} {event.key[:110]}")
    print(f"{name}: {total:.1f} us per call", flush=True)
    print("\n".join(sorted(lines, reverse=True)), flush=True)


def main() -> int:
    if not torch.cuda.is_available():
        print("needs a CUDA GPU", file=sys.stderr)
        return 2
    for kind in ("uniform", "long_tail"):
        lengths = _lengths(kind)
        offsets = torch.zeros(len(lengths) + 1, dtype=torch.int64)
        offsets[1:] = torch.cumsum(torch.as_tensor(lengths, dtype=torch.int64), 0)
        offsets = offsets.cuda()
        total = int(offsets[-1])
        for dtype in (torch.float16, torch.float32):
            values = torch.randn(total, device="cuda", dtype=dtype)
            for tunables in ({}, {"packed_max": 0}, {"packed_max": 0, "chunk": 1024, "num_warps": 4}):
                name = f"ragged {kind} {dtype} T={total} {tunables}"
                call = lambda v=values, o=offsets, t=tunables: ragged.ragged_softmax_forward(v, o, check=False, **t)  # noqa: E731
                report(name, call)
            del values
    for dtype in (torch.float16, torch.float32):
        for length in (1024, 2048):
            x = torch.randn(2, 16, length, length, device="cuda", dtype=dtype)
            report(f"masked causal {dtype} L={length}", lambda x=x: kernels.masked_softmax(x, scale=0.125, causal=True))
            mask = torch.rand(2, 1, length, length, device="cuda") < 0.9
            bias = torch.randn(1, 16, 1, length, device="cuda", dtype=dtype)
            report(
                f"masked scale_mask_bias {dtype} L={length}",
                lambda x=x, m=mask, b=bias: kernels.masked_softmax(x, scale=0.125, mask=m, bias=b),
            )
            report(f"plain softmax {dtype} L={length}", lambda x=x, n=length: kernels.softmax(x.view(-1, n)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
