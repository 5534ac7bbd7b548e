"""Triton row-softmax kernels: the seed's teaching kernel and production variants.

`softmax(x, dim=-1, variant=..., out=None, inplace=False, **tunables)` is the public entry (differentiable:
Triton backward in backward.py; compilable: the blockscope::softmax op in ops.py), `Softmax` its nn.Module;
`VARIANTS` maps names to the raw forward launchers (no autograd), limits and tunables. Imports neither
streamlit nor plotly; works on Triton 3.6 and 3.7. Set TRITON_INTERPRET=1 before importing triton to run
every variant on CPU tensors.
"""

from ._common import DTYPE_NAMES, SUPPORTED_DTYPES, dtype_from_name, interpreting, next_power_of_2
from .auto import softmax_auto
from .backward import choose_backward, softmax_backward
from .masked import masked_softmax
from .multirow import softmax_multirow
from .online import softmax_online
from .persistent import softmax_persistent
from .plan import LaunchPlan
from .ragged import ragged_softmax
from .reference import reference_softmax, torch_softmax
from .registry import VARIANTS, Softmax, Variant, get_variant, softmax
from .splitrow import softmax_splitrow
from .teaching import softmax_teaching
from .tinyrows import softmax_tinyrows

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
    "softmax_auto",
    "torch_softmax",
]
