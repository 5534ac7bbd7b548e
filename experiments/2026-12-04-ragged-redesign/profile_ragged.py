"""Per-kernel CUDA time of ragged_softmax_forward (torch.profiler) on bench_fused's lengths, both designs.

    python3 experiments/2026-12-04-ragged-redesign/profile_ragged.py [fp16,fp32]

from the repository root, on a CUDA machine. Prints, per case and design, each kernel's mean time per call.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main() -> int:
    import torch
    from torch.profiler import ProfilerActivity, profile

    from blockscope.kernels import ragged
    from tools.bench_fused import _lengths

    if not torch.cuda.is_available():
        print("profile_ragged: no CUDA GPU", file=sys.stderr)
        return 2
    calls = 20
    for kind in ("uniform", "long_tail"):
        lengths = _lengths(kind)
        total = int(lengths.sum())
        offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)]).cuda()
        names = (sys.argv[1] if len(sys.argv) > 1 else "fp16,fp32").split(",")
        for dtype in [{"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[n] for n in names]:
            values = torch.randn(total, device="cuda").to(dtype)
            for tunables in ({"design": 1}, {"design": 1, "pack": 0}, {"design": 0}):
                for _ in range(3):
                    ragged.ragged_softmax_forward(values, offsets, check=False, **tunables)
                torch.cuda.synchronize()
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    for _ in range(calls):
                        ragged.ragged_softmax_forward(values, offsets, check=False, **tunables)
                    torch.cuda.synchronize()
                parts = []
                for event in prof.key_averages():
                    us = event.device_time_total / calls
                    if us > 0:
                        parts.append((us, event.key[:40], event.count // calls))
                parts.sort(reverse=True)
                summary = ", ".join(f"{name} x{count}: {us:.1f} us" for us, name, count in parts)
                print(
                    f"{kind} {str(dtype)[6:]} {tunables}: total {sum(p[0] for p in parts):.1f} us = {summary}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root))
    raise SystemExit(main())
