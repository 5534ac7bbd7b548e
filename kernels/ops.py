"""Torch custom ops, so torch.compile(fullgraph=True) traces kernels.softmax without graph breaks.

  blockscope::softmax(Tensor x, str variant, str tunables) -> Tensor           softmax over the last dim
  blockscope::softmax_backward(Tensor y, Tensor dy) -> Tensor                  its Triton backward

`tunables` is "name=value,..." (ints; schemas take no dicts). Outputs are new contiguous tensors of the input's
shape; autograd is registered (saves y). These are `torch.library.custom_op`s, opaque to the compiler, not
`triton_op`s: the launchers' host logic (direct launches of compiled kernels cached by pointer alignment, the
driver occupancy queries of persistent/splitrow, auto's table lookup, split-row's GPU-resident epoch workspace)
is not traceable through wrap_triton, and under the CPU interpreter kernels are not compiled at all.
Inside the ops split-row launches take private workspaces (splitrow.private_workspaces): cudagraph trees
(mode="reduce-overhead") warm up and capture in their own memory pool, where a cached workspace would leak.
"""

from __future__ import annotations

import torch

from ._common import SUPPORTED_DTYPES

# splitrow and backward (Triton) import inside the launches: the registry imports this module, and
# `import blockscope.kernels` imports no Triton (docs/measurements.md, "Import cost")


def encode_tunables(tunables: dict[str, int]) -> str:
    """{'tile': 2048, 'num_warps': 8} -> 'num_warps=8,tile=2048' (sorted: one string per config)."""
    return ",".join(f"{name}={value}" for name, value in sorted(tunables.items()))


def decode_tunables(text: str) -> dict[str, int]:
    """Inverse of encode_tunables; ValueError names the expected form."""
    tunables = {}
    for item in filter(None, text.split(",")):
        name, sep, value = item.partition("=")
        try:
            tunables[name] = int(value)
        except ValueError:
            sep = ""
        if not sep or not name:
            raise ValueError(f"blockscope::softmax: bad tunables {text!r}; allowed: 'name=int,...'")
    return tunables


@torch.library.custom_op("blockscope::softmax", mutates_args=())
def softmax_op(x: torch.Tensor, variant: str, tunables: str) -> torch.Tensor:
    from . import splitrow
    from .registry import get_variant  # the registry imports this module to register the op: resolve at call time

    launcher = get_variant(variant).launcher
    with torch.no_grad(), splitrow.private_workspaces():  # x may still carry requires_grad below autograd
        y = launcher(x, **decode_tunables(tunables))
    return y.contiguous()  # auto's torch route on a strided x: keep the fake's contiguous layout


@softmax_op.register_fake
def _(x: torch.Tensor, variant: str, tunables: str) -> torch.Tensor:
    from .registry import get_variant

    get_variant(variant)
    if x.dtype not in SUPPORTED_DTYPES or x.dim() == 0:
        raise ValueError(f"blockscope::softmax: {x.dtype} tensor of rank {x.dim()}; allowed: fp16/bf16/fp32, rank >= 1")
    return torch.empty(x.shape, dtype=x.dtype, device=x.device)


@torch.library.custom_op("blockscope::softmax_backward", mutates_args=())
def softmax_backward_op(y: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    from .backward import softmax_backward

    with torch.no_grad():
        return softmax_backward(y, dy)


@softmax_backward_op.register_fake
def _(y: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    if dy.shape != y.shape:
        raise ValueError(f"blockscope::softmax_backward: dy {tuple(dy.shape)} != y {tuple(y.shape)}; allowed: equal")
    return torch.empty(y.shape, dtype=y.dtype, device=y.device)


def _setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
    ctx.save_for_backward(output)


def _backward(ctx, dy: torch.Tensor) -> tuple[torch.Tensor, None, None]:
    (y,) = ctx.saved_tensors
    return softmax_backward_op(y, dy), None, None


softmax_op.register_autograd(_backward, setup_context=_setup_context)
