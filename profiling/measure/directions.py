"""Backward timings beside forward: what one timed call computes per `direction`, its inputs and the dx check.

  forward           y = softmax(x) over the last dim (the sweep's original rows)
  backward          dx = y * (dy - sum(dy * y)) from a saved y and dy: y is the float64 softmax of the sweep's x
                    rounded once into the dtype (shared by every backend), dy a seeded standard normal
  forward_backward  one training step of the op: the backend's differentiable forward on a leaf x, then
                    torch.autograd.grad(y, x, dy)

Inputs are built outside the timed closures (tritonbench style). dx is checked against float64 before timing:
backward against the formula on the given y and dy, forward_backward against the gradient of the float64 softmax
of x. Imports neither streamlit nor plotly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import torch

from blockscope.profiling.measure.backends import Backend, BlockscopeBackend, get_backend, is_peer
from blockscope.profiling.results import DEFAULT_DIRECTION, DIRECTION_VALUES

FORWARD = DEFAULT_DIRECTION
BACKWARD = "backward"
FORWARD_BACKWARD = "forward_backward"
DIRECTIONS: tuple[str, ...] = DIRECTION_VALUES
# |dx - ref| <= atol * (1 + max|dy|) + rtol * (|ref| + y * max|dy|) (max over the row), as tests/grad_checks.py:
# y's relative error moves sum(dy * y) by up to rtol * max|dy|, which dx_i sees times y_i; rounding dx adds
# rtol * |dx_i|; atol covers tiny y and dx. fp32's rtol is the sweep's forward one (a training step's y is the
# backend's forward output).
GRAD_TOLERANCES: dict[str, tuple[float, float]] = {"fp32": (5e-5, 1e-8), "fp16": (2e-3, 1e-7), "bf16": (1.6e-2, 1e-7)}
CHUNK_ELEMENTS = 1 << 24  # float64 work in row chunks of at most this many elements (128 MB)


def parse_directions(values: Iterable[str] | None) -> tuple[str, ...]:
    """Validated directions in the order given, duplicates dropped (None or empty: forward only)."""
    chosen = tuple(dict.fromkeys(values or (FORWARD,)))
    bad = [d for d in chosen if d not in DIRECTIONS]
    if bad:
        raise ValueError(f"unknown direction(s) {', '.join(map(repr, bad))}; allowed: {', '.join(DIRECTIONS)}")
    return chosen


@dataclass
class GradientInputs:
    """A shape's backward inputs (x's dtype and device) and its float64 reference dx per direction."""

    y: torch.Tensor
    dy: torch.Tensor
    references: dict[str, torch.Tensor] = field(default_factory=dict)


def _rows(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(-1, t.shape[-1])


def _chunks(n_rows: int, n_cols: int) -> Iterable[slice]:
    step = max(1, CHUNK_ELEMENTS // max(1, n_cols))
    for start in range(0, n_rows, step):
        yield slice(start, start + step)


def gradient_inputs(x: torch.Tensor, seed: int, reference: torch.Tensor | None = None) -> GradientInputs:
    """y (the float64 softmax `reference` of x, computed when not given, rounded into x's dtype) and dy (standard
    normal in x's dtype, seeded with seed + 1 so it differs from x)."""
    if reference is None:
        from blockscope import kernels

        reference = kernels.reference_softmax(x)
    generator = torch.Generator(device=x.device).manual_seed(seed + 1)
    dy = torch.randn(x.shape, device=x.device, dtype=x.dtype, generator=generator)
    return GradientInputs(y=reference.to(x.dtype), dy=dy)


def reference_dx(direction: str, inputs: GradientInputs, reference: torch.Tensor) -> torch.Tensor:
    """float64 dx = y * (dy - sum(dy * y)) for `direction` (cached in inputs.references): 'backward' on the given
    y, 'forward_backward' on the float64 softmax `reference` of x (the exact gradient of x)."""
    if direction not in (BACKWARD, FORWARD_BACKWARD):
        raise ValueError(f"no reference dx for direction {direction!r}; allowed: {BACKWARD}, {FORWARD_BACKWARD}")
    if direction not in inputs.references:
        y_source = inputs.y if direction == BACKWARD else reference
        y_rows, dy_rows = _rows(y_source), _rows(inputs.dy)
        out = torch.empty(y_rows.shape, dtype=torch.float64, device=y_rows.device)
        for rows in _chunks(*y_rows.shape):
            y64, dy64 = y_rows[rows].to(torch.float64), dy_rows[rows].to(torch.float64)
            out[rows] = y64 * (dy64 - (y64 * dy64).sum(-1, keepdim=True))
        inputs.references[direction] = out.view(inputs.y.shape)
    return inputs.references[direction]


def check_gradient(
    dx: torch.Tensor, expected: torch.Tensor, y: torch.Tensor, dy: torch.Tensor, dtype: str
) -> tuple[str, float]:
    """('' or why dx is wrong, max |dx - expected|) within GRAD_TOLERANCES[dtype] (see there); `y` the softmax
    output the bound scales with, `dy` the output gradient. NaN where the reference has NaN counts as right; a NaN
    elsewhere makes the error inf."""
    if not isinstance(dx, torch.Tensor) or dx.shape != expected.shape:
        got = tuple(dx.shape) if isinstance(dx, torch.Tensor) else type(dx).__name__
        return f"wrong result: dx shape {got}, expected {tuple(expected.shape)}", math.inf
    rtol, atol = GRAD_TOLERANCES[dtype]
    dx_rows, want_rows, y_rows, dy_rows = _rows(dx), _rows(expected), _rows(y), _rows(dy)
    bad, worst = 0, 0.0
    for rows in _chunks(*dx_rows.shape):
        got, want = dx_rows[rows].to(torch.float64), want_rows[rows]
        dy_max = dy_rows[rows].to(torch.float64).abs().amax(-1, keepdim=True)
        bound = atol * (1 + dy_max) + rtol * (want.abs() + y_rows[rows].to(torch.float64).abs() * dy_max)
        both_nan = torch.isnan(got) & torch.isnan(want)
        diff = torch.where(both_nan, torch.zeros_like(got), (got - want).abs())
        bad += int((~((diff <= bound) | both_nan)).sum())
        worst = max(worst, float(torch.nan_to_num(diff, nan=math.inf).max()))
    if bad:
        return (
            f"wrong result: {bad} of {dx.numel()} dx elements off the float64 gradient (max abs error "
            f"{worst:.3g}; rtol {rtol:g}, atol {atol:g} scaled by max|dy| per row)"
        ), worst
    return "", worst


def check_direction(
    direction: str, dx: torch.Tensor, inputs: GradientInputs, reference: torch.Tensor, dtype: str
) -> tuple[str, float]:
    """check_gradient of a backward direction's first-call dx against its float64 reference dx."""
    expected = reference_dx(direction, inputs, reference)
    return check_gradient(dx, expected, inputs.y if direction == BACKWARD else reference, inputs.dy, dtype)


def backend_for(variant: str, tunables: Mapping[str, int] | None = None) -> Backend:
    """The adapter a config times: a peer's shared instance, or a Blockscope variant with the config's tunables."""
    if is_peer(variant):
        return get_backend(variant)
    return BlockscopeBackend(variant, **dict(tunables or {}))


def direction_callable(
    direction: str, variant: str, tunables: Mapping[str, int] | None, x: torch.Tensor, inputs: GradientInputs
) -> Callable[[], torch.Tensor]:
    """The zero-argument closure a backward-direction config times (returns dx); its inputs are built already."""
    backend = backend_for(variant, tunables)
    if direction == BACKWARD:
        return backend.backward_call(x, inputs.y, inputs.dy)
    if direction == FORWARD_BACKWARD:
        return backend.forward_backward_call(x, inputs.dy)
    raise ValueError(
        f"direction_callable times {BACKWARD} and {FORWARD_BACKWARD}; got {direction!r} (the forward "
        "is the sweep's backend_callable)"
    )


def backward_plan(n_rows: int, n_cols: int, dtype: torch.dtype):
    """The Triton backward's LaunchPlan for this shape (kernels.backward.plan, choose_backward's path): the launch
    columns of a Blockscope variant's 'backward' rows."""
    from blockscope.kernels import backward

    return backward.plan(n_rows, n_cols, dtype)
