"""Blockscope's profiling layer: measure, inspect and estimate Triton softmax kernels.

Modules: timing (the one timer), trace (torch.profiler), compiled (live/offline compile metadata),
occupancy (per-arch calculator), lanes (masked-lane model), sweep, results (schema, load/save),
figures (DataFrame -> plotly; the only module importing plotly), export. Nothing here imports
streamlit; everything but figures/export imports without plotly.
"""
