"""Host-side cost of one launch per variant (run on a GPU): wall time of many async launches, us per call, through
Triton's JITFunction.run and through the cached compiled kernel (kernels._common.launch).

PYTHONPATH=. python3 experiments/2026-12-01-launch-overhead/launch_overhead.py [--profile VARIANT]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import torch

from blockscope import kernels


def host_us(fn, calls: int = 2000) -> float:
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    host = (time.perf_counter() - start) / calls * 1e6
    torch.cuda.synchronize()
    return host


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", default="")
    args = parser.parse_args()
    x = torch.randn(4096, 128, device="cuda", dtype=torch.float16)
    print(f"torch.softmax host us/call: {host_us(lambda: torch.softmax(x, dim=-1)):.2f}")
    print(f"torch.empty_like host us/call: {host_us(lambda: torch.empty_like(x)):.2f}")
    from blockscope.kernels import _common

    for direct in (False, True):
        _common.DIRECT_LAUNCH = direct
        path = "compiled-kernel launch" if direct else "JITFunction launch"
        for name in kernels.VARIANTS:
            print(f"{name} host us/call ({path}): {host_us(lambda name=name: kernels.softmax(x, name)):.2f}")
    launcher = kernels.VARIANTS["teaching"].kernel
    out = torch.empty_like(x)
    raw = lambda: launcher[(4096,)](out, x, 128, 128, n_cols=128, BLOCK_SIZE=128, num_warps=4)  # noqa: E731
    print(f"raw triton launch (teaching) host us/call: {host_us(raw):.2f}")
    if args.profile:
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(2000):
            kernels.softmax(x, args.profile)
        profile.disable()
        pstats.Stats(profile).sort_stats("cumulative").print_stats(18)


if __name__ == "__main__":
    main()
