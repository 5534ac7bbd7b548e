"""Does `auto`'s idle-stream check see a busy stream? Run on a GPU: python3 experiments/2026-12-01-eager-busy-check

Per shape: auto's tuned pick and eager decision, what the check's stream and torch.cuda.current_stream() say
while a spin kernel runs, auto's GPU time back_to_back_flushed and cuda_graph, and how many of the check's calls
during a back_to_back_flushed timing found the stream idle (should be 0: those launches are queued behind work).
"""

from __future__ import annotations

import sys

import torch

from blockscope import kernels
from blockscope.kernels import auto
from blockscope.profiling.measure import timing

SHAPES = [(4096, 3000), (777, 5000), (2048, 2000)]


def main() -> int:
    for n_rows, n_cols in SHAPES:
        x = torch.randn(n_rows, n_cols, device="cuda", dtype=torch.float16)
        auto.clear_choices()
        kernels.softmax(x, variant="auto")
        key = (n_rows, n_cols, x.dtype, auto._device_name(x))
        print(f"fp16 {n_rows}x{n_cols}: pick {auto._CHOICES[key][1]}, eager prefers torch {auto._EAGER.get(key)}")
        torch.cuda.synchronize()
        torch.cuda._sleep(10**8)
        print(
            f"  spinning: check's stream idle {auto._current_stream(x.device)[1].query()}, "
            f"current_stream idle {torch.cuda.current_stream().query()}"
        )
        torch.cuda.synchronize()

        def call(x=x):
            return kernels.softmax(x, variant="auto")

        for method in ("back_to_back_flushed", "cuda_graph"):
            print(f"  {method}: {timing.benchmark(call, method).median_us:.2f} us")
        seen: list[bool] = []
        check = auto._host_bound
        auto._host_bound = lambda device, seen=seen, check=check: seen.append(check(device)) or seen[-1]
        try:
            timing.benchmark(call, "back_to_back_flushed", reps=50)
        finally:
            auto._host_bound = check
        print(f"  checks during back_to_back_flushed that found the call host-bound: {sum(seen)} of {len(seen)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
