"""Host microseconds per call of each piece of `auto`'s eager path (on a GPU):
PYTHONPATH=. python3 experiments/2026-12-01-eager-host-cost/eager_host_cost.py

Each piece is called `--calls` times in a Python loop (best of `--rounds`, the GPU synchronized between rounds), on an
fp16 64 x 4096 input whose shape `auto` sends to torch.softmax from an idle stream: the pieces of the fast path in
kernels/auto.py (cache key, capture check, current stream, stream and event queries, the event record of the torch
route), then torch.softmax, the raw `auto` launcher and kernels.softmax(variant="auto") whole.
"""

from __future__ import annotations

import argparse
import sys
import time

import torch

from blockscope import kernels
from blockscope.kernels import auto


def host_us(fn, calls: int, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls * 1e6)
    torch.cuda.synchronize()
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    x = torch.randn(64, 4096, device="cuda", dtype=torch.float16)
    kernels.softmax(x, variant="auto")
    key, stream = auto._current_stream(x.device)
    event = torch.cuda.Event()
    event.record(stream)
    pieces = {
        "cache key (shape, dtype, device) + _FAST.get": lambda: auto._FAST.get((x.shape, x.dtype, x.device)),
        "x.device": lambda: x.device,
        "capture check (torch._C)": auto._capturing,
        "auto._current_stream": lambda: auto._current_stream(x.device),
        "Stream.query": stream.query,
        "Event.query": event.query,
        "Event.record(stream)": lambda: event.record(stream),
        "auto._host_bound": lambda: auto._host_bound(x.device),
        "torch.softmax": lambda: torch.softmax(x, -1),
        "auto._route_to_torch": lambda: auto._route_to_torch(x),
        "auto.softmax_auto (raw launcher)": lambda: auto.softmax_auto(x),
        "blockscope.kernels.softmax(variant='auto')": lambda: kernels.softmax(x, variant="auto"),
    }
    print(
        f"{torch.cuda.get_device_name()}, torch {torch.__version__}; host us per call, best of {args.rounds} loops "
        f"of {args.calls}"
    )
    for label, fn in pieces.items():
        print(f"| {label} | {host_us(fn, args.calls, args.rounds):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
