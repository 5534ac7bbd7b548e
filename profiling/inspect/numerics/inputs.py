"""Seeded input distributions for numerics runs: the same values on every device for one (name, shape, seed).

Values are drawn on the CPU with a `torch.Generator` in float32, cast to the dtype there, then moved to
the device, so a CPU-interpreter run and a GPU run see bit-identical inputs.

* normal: standard normal (the sweep's input distribution).
* scale10, scale30: large-range logits, 10 x and 30 x a standard normal.
* dominant: standard normal with one column per row raised to the row max + 30 (softmax ~ one-hot; the
  other outputs are tiny, many subnormal or zero in fp16).
* near_uniform: 1e-3 x a standard normal (outputs ~ 1/N, differences of a few ULPs).
* special: one special-values case per row, cycling through SPECIAL_ROWS (see `special_row`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

DOMINANT_GAP = 30.0  # the dominant value sits this far above the rest of its row
NEAR_UNIFORM_SCALE = 1e-3
SPECIAL_ROWS: tuple[str, ...] = (
    "all -inf",
    "+inf present",
    "NaN present",
    "-inf present",
    "all equal",
    "denormal inputs",
    "+-finite max",
)
SPECIAL_DESCRIPTIONS: dict[str, str] = {
    "all -inf": "every value -inf (0/0: the float64 reference is NaN)",
    "+inf present": "one +inf among normals (inf - inf: the reference is NaN)",
    "NaN present": "one NaN among normals (the reference is NaN)",
    "-inf present": "some -inf among normals (their outputs are exactly 0)",
    "all equal": "every value 3.0 (outputs exactly 1/N)",
    "denormal inputs": "subnormal magnitudes of the dtype (outputs ~ 1/N)",
    "+-finite max": "the dtype's largest finite value, its negative and normals (x - max may overflow)",
}


def _generator(seed: int) -> torch.Generator:
    return torch.Generator(device="cpu").manual_seed(int(seed))


def _normal(n_rows: int, n_cols: int, gen: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
    return torch.randn(n_rows, n_cols, generator=gen, dtype=torch.float32)


def _scaled(scale: float) -> Callable[[int, int, torch.Generator, torch.dtype], torch.Tensor]:
    def make(n_rows: int, n_cols: int, gen: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
        return scale * torch.randn(n_rows, n_cols, generator=gen, dtype=torch.float32)

    return make


def _dominant(n_rows: int, n_cols: int, gen: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
    x = torch.randn(n_rows, n_cols, generator=gen, dtype=torch.float32)
    cols = torch.randint(0, n_cols, (n_rows,), generator=gen)
    peak = x.max(dim=-1).values + DOMINANT_GAP
    x[torch.arange(n_rows), cols] = peak
    return x


def _near_uniform(n_rows: int, n_cols: int, gen: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
    return NEAR_UNIFORM_SCALE * torch.randn(n_rows, n_cols, generator=gen, dtype=torch.float32)


def special_row(kind: str, n_cols: int, dtype: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    """One float32 row of a special-values case (values representable in `dtype`); ValueError for unknown kinds."""
    row = torch.randn(n_cols, generator=gen, dtype=torch.float32)
    position = int(torch.randint(0, n_cols, (1,), generator=gen))
    info = torch.finfo(dtype)
    if kind == "all -inf":
        row.fill_(-math.inf)
    elif kind == "+inf present":
        row[position] = math.inf
    elif kind == "NaN present":
        row[position] = math.nan
    elif kind == "-inf present":
        row[torch.arange(n_cols) % 3 == position % 3] = -math.inf
        if n_cols > 1 and bool(torch.isinf(row).all()):
            row[(position + 1) % n_cols] = 0.0
    elif kind == "all equal":
        row.fill_(3.0)
    elif kind == "denormal inputs":
        steps = torch.randint(-8, 9, (n_cols,), generator=gen).to(torch.float32)
        row = steps * float(info.smallest_normal) / 16  # multiples of 1/16 of the smallest normal: subnormal
    elif kind == "+-finite max":
        row[position] = float(info.max)
        row[(position + 1) % n_cols] = -float(info.max) if n_cols > 1 else float(info.max)
    else:
        raise ValueError(f"unknown special-values row {kind!r}; allowed: {', '.join(SPECIAL_ROWS)}")
    return row


def _special(n_rows: int, n_cols: int, gen: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
    return torch.stack([special_row(SPECIAL_ROWS[i % len(SPECIAL_ROWS)], n_cols, dtype, gen) for i in range(n_rows)])


INPUTS: dict[str, Callable[[int, int, torch.Generator, torch.dtype], torch.Tensor]] = {
    "normal": _normal,
    "scale10": _scaled(10.0),
    "scale30": _scaled(30.0),
    "dominant": _dominant,
    "near_uniform": _near_uniform,
    "special": _special,
}


def check_input_name(name: str) -> str:
    """`name` if it is a known distribution; ValueError naming the allowed ones."""
    if name not in INPUTS:
        raise ValueError(f"unknown input distribution {name!r}; allowed: {', '.join(INPUTS)}")
    return name


def make_input(
    name: str, n_rows: int, n_cols: int, dtype: torch.dtype, *, seed: int = 0, device: str | torch.device = "cpu"
) -> torch.Tensor:
    """[n_rows, n_cols] input of distribution `name` in `dtype` on `device`; the same for the same arguments."""
    check_input_name(name)
    if n_rows < 1 or n_cols < 1:
        raise ValueError(f"input shape [{n_rows}, {n_cols}] is empty; allowed: n_rows >= 1 and n_cols >= 1")
    values = INPUTS[name](int(n_rows), int(n_cols), _generator(seed), dtype)
    return values.to(dtype).to(device)


def special_matrix(
    n_cols: int, dtype: torch.dtype, *, seed: int = 0, device: str | torch.device = "cpu"
) -> tuple[list[str], torch.Tensor]:
    """(row kinds, [len(SPECIAL_ROWS), n_cols] input): one row per special-values case, in SPECIAL_ROWS order."""
    return list(SPECIAL_ROWS), make_input("special", len(SPECIAL_ROWS), n_cols, dtype, seed=seed, device=device)
