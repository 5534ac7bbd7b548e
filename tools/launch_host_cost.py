"""Host microseconds per call of each variant's launch paths (run on a GPU): python3 -m tools.launch_host_cost

Per variant, on a small input (fp16 64 x 1024 by default, a kernel of a few us, so a loop of calls is bound by the
host): the launcher as users call it (checks, plan, compiled-kernel lookup, Triton's launch wrapper) and its replay
(kernels/replay.py: one allocation and the C launch, checked equal to the launcher's output first) and its native
replay (kernels/native.py: the whole call in C++, built first unless --no-native; checked equal too); then
torch.softmax, torch.empty_like and `auto` raw and through kernels.softmax, with the native module and without it
(BLOCKSCOPE_NATIVE=0). Each is called `--calls` times in a
Python loop, best of `--rounds` loops, the GPU synchronized before each loop and after it (wall time / calls of a
host-bound loop: host time).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import pandas as pd
import torch

from blockscope import kernels
from blockscope.kernels import auto, native, replay

VARIANTS = ("teaching", "multirow", "online", "persistent", "staged", "warprows", "stagedrows", "cluster")


def host_us(fn, calls: int, rounds: int) -> float:
    best = float("inf")
    for _ in range(3):
        fn()
    for _ in range(rounds):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - start) / calls * 1e6)
    return best


def pieces(x: torch.Tensor, add) -> None:
    """The teaching replay's per-call pieces one by one (its C launch with one fixed output)."""
    with replay.recording() as launches:
        y = kernels.get_variant("teaching").launcher(x)
    replayed = replay.build(launches, x, y)
    template = replayed._template
    args = list(template)
    for index in replayed._inputs:
        args[index] = x.data_ptr()
    for index in replayed._outputs:
        args[index] = y.data_ptr()
    stream = replayed._stream(replayed._device)
    grid, middle, launch = replayed._grid, replayed._middle, replayed._launch
    fixed = (
        (lambda: launch(*grid, stream, *middle, tuple(args)))
        if replayed._nested
        else (lambda: launch(*grid, stream, *middle, *args))
    )
    add("C launch, fixed arguments", fixed, "pieces")
    add("current stream getter", lambda: replayed._stream(replayed._device), "pieces")
    add("x.data_ptr()", x.data_ptr, "pieces")
    add(
        "torch.empty_like(x, memory_format=contiguous)",
        lambda: torch.empty_like(x, memory_format=torch.contiguous_format),
        "pieces",
    )
    add("torch.empty_like(x)", lambda: torch.empty_like(x), "pieces")
    add("x.new_empty(x.shape)", lambda: x.new_empty(x.shape), "pieces")
    add("torch.empty(x.shape, dtype, device)", lambda: torch.empty(x.shape, dtype=x.dtype, device=x.device), "pieces")
    add("args from template", lambda: template.copy(), "pieces")
    add("x.is_contiguous()", x.is_contiguous, "pieces")
    add("_FAST key (shape, dtype, device)", lambda: auto._FAST.get((x.shape, x.dtype, x.device)), "pieces")
    add("_FAST key (shape, dtype, get_device())", lambda: auto._FAST.get((x.shape, x.dtype, x.get_device())), "pieces")
    add("torch.compiler.is_compiling()", torch.compiler.is_compiling, "pieces")
    add("blockscope.kernels.get_variant('auto')", lambda: kernels.get_variant("auto"), "pieces")
    add("torch._softmax(x, -1, False)", lambda: torch._softmax(x, -1, False), "pieces")
    module = native.load()
    if module is not None:
        add("a C call with no work (native module.size())", module.size, "pieces")
        other = x[:1]
        add("native run declining (no entry for this shape)", lambda: module.run(other), "pieces")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--shape", default="fp16:64:1024", help="dtype:R:N")
    parser.add_argument("--out", help="CSV of the rows printed")
    parser.add_argument("--pieces", action="store_true", help="also time the pieces of the teaching replay")
    parser.add_argument("--no-native", action="store_true", help="leave the native module out (no build)")
    args = parser.parse_args()
    module = None
    if not args.no_native:
        result = native.build()
        print(f"native build: {result.summary()}")
        module = native.load()
    dtype_name, n_rows, n_cols = args.shape.split(":")
    dtype = kernels.dtype_from_name(dtype_name)
    x = torch.randn(int(n_rows), int(n_cols), device="cuda", dtype=dtype)
    rows = []

    def add(path: str, fn, variant: str = "") -> None:
        rows.append({"variant": variant, "path": path, "host_us": host_us(fn, args.calls, args.rounds)})
        print(f"| {variant} | {path} | {rows[-1]['host_us']:.2f} |", flush=True)

    print(
        f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton "
        f"{__import__('triton').__version__}; {dtype_name} {n_rows} x {n_cols}; host us per call, best of "
        f"{args.rounds} loops of {args.calls}"
    )
    print("| variant | path | host us/call |\n|---|---|---:|")
    add("torch.softmax", lambda: torch.softmax(x, -1))
    add("torch.empty_like", lambda: torch.empty_like(x))
    for name in VARIANTS:
        launcher = kernels.get_variant(name).launcher
        add("launcher", lambda launcher=launcher: launcher(x), name)
        with replay.recording() as launches:
            y = launcher(x)
        replayed = replay.build(launches, x, y)
        if replayed is None:
            print(f"| {name} | replay | not replayable |")
            continue
        torch.testing.assert_close(replayed(x), y, rtol=0, atol=0)
        add("replay", lambda replayed=replayed: replayed(x), name)
        if module is not None:
            module.clear()
            native.register(module, launches[0], x, y)
            torch.testing.assert_close(module.run(x), y, rtol=0, atol=0)
            add("native", lambda: module.run(x), name)
    for label in ("native", "no native") if module is not None else ("no native",):
        if label == "no native":
            native.reset()
            os.environ[native.ENV] = "0"
        auto.clear_choices()
        kernels.softmax(x, variant="auto")
        kernels.softmax(x, variant="auto")
        seen = auto._FAST[(x.shape, x.dtype, x.device)]
        add(f"softmax_auto (as called, {label})", lambda: auto.softmax_auto(x), "auto")
        add(f"blockscope.kernels.softmax(variant='auto') ({label})", lambda: kernels.softmax(x, variant="auto"), "auto")
        print(
            f"auto ({label}): pick {auto.choose(*x.shape, x.dtype, torch.cuda.get_device_name())}, replay "
            f"{'yes' if seen.replay is not None else 'no'}, native {'yes' if seen.native else 'no'}, eager check "
            f"kept: {seen.eager_key is not None}"
        )
    os.environ.pop(native.ENV, None)
    native.reset()
    if args.pieces:
        pieces(x, add)
    if args.out:
        pd.DataFrame(rows).assign(
            shape=args.shape, gpu=torch.cuda.get_device_name(), triton=__import__("triton").__version__
        ).to_csv(args.out, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
