"""Triton row-softmax kernels: the seed's teaching kernel and production variants.

`softmax(x, dim=-1, variant=..., out=None, inplace=False, **tunables)` is the public entry (differentiable:
Triton backward in backward.py; compilable: the blockscope::softmax op in ops.py), `Softmax` its nn.Module;
`VARIANTS` maps names to the raw forward launchers (no autograd), limits and tunables. Imports neither
streamlit nor plotly; works on Triton 3.6 and 3.7. Set TRITON_INTERPRET=1 before importing triton to run
every variant on CPU tensors.

`import blockscope.kernels` imports no Triton: the variant modules (Triton, Gluon) load on first use, through the
registry's `VARIANTS` and this module's `__getattr__` (docs/measurements.md, "Import cost").
"""

from __future__ import annotations

import importlib
from typing import Any

from ._common import DTYPE_NAMES, SUPPORTED_DTYPES, dtype_from_name, interpreting, next_power_of_2
from .plan import LaunchPlan
from .reference import reference_softmax, torch_softmax
from .registry import VARIANTS, Softmax, Variant, get_variant, softmax

# Loaded on first use (module-level __getattr__): these modules import Triton / Gluon, about 0.3-0.4 s that
# `import blockscope.kernels` no longer pays (docs/measurements.md, "Import cost").
_LAZY: dict[str, str] = {
    "softmax_auto": "auto",
    "choose_backward": "backward",
    "softmax_backward": "backward",
    "masked_softmax": "masked",
    "softmax_multirow": "multirow",
    "softmax_online": "online",
    "softmax_persistent": "persistent",
    "ragged_softmax": "ragged",
    "softmax_splitrow": "splitrow",
    "softmax_teaching": "teaching",
    "softmax_tinyrows": "tinyrows",
    "softmax_vecrows": "vecrows",
}


def __getattr__(name: str) -> Any:
    """The lazy names above, and submodules (`kernels.auto`, ...) imported on first attribute access."""
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    if not name.startswith("__"):
        try:
            return importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as err:
            if err.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "DTYPE_NAMES",
    "SUPPORTED_DTYPES",
    "VARIANTS",
    "LaunchPlan",
    "Softmax",
    "Variant",
    "choose_backward",
    "dtype_from_name",
    "get_variant",
    "masked_softmax",
    "interpreting",
    "next_power_of_2",
    "ragged_softmax",
    "reference_softmax",
    "softmax",
    "softmax_backward",
    "softmax_multirow",
    "softmax_online",
    "softmax_persistent",
    "softmax_splitrow",
    "softmax_teaching",
    "softmax_tinyrows",
    "softmax_vecrows",
    "softmax_auto",
    "torch_softmax",
]
