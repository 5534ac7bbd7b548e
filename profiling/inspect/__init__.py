"""Inspect: what a kernel is without timing it: compile facts (registers, spills, shared memory; offline for any
arch), the occupancy calculator, the masked-lane model and ULP numerics.

Imports kernels and results; never views or pages, never streamlit or plotly.
"""
