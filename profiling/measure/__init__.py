"""Measure: time kernels on a GPU (timing, trace), run sweeps, benches and the tuner, and the backend adapters.

Imports kernels and results; never views or pages, never streamlit or plotly.
"""
