"""The background offline compile shared by the Occupancy and Kernel evidence pages: the sweep's prediction
first (no compile of a config predicted to take minutes unless forced), then profiling.inspect.compiled.inspect_async,
waited on for a few seconds at most; the page reruns itself until the job is done."""

from __future__ import annotations

import time
from typing import Any

import streamlit as st

REFRESH_S = 1.0  # while a background compile runs, the page reruns itself this long after it has rendered


@st.cache_data(show_spinner=False, max_entries=256)
def compile_problem(variant: str, n_cols: int, dtype: str, num_warps: int) -> str | None:
    """Why compiling this config would take minutes (the sweep's prediction), or None."""
    from blockscope.profiling.cli.compile import predicted_problem

    return predicted_problem(variant, n_cols, dtype, 4096, {"num_warps": num_warps})


def background_compile(
    variant: str, n_cols: int, dtype: str, arch: str, num_warps: int, force_key: str, waiting_note: str = ""
) -> tuple[Any | None, Any | None]:
    """(CompileInfo or None, the job still running or None). Shows the prediction (with a force checkbox keyed
    `force_key`), a spinner for at most compiled.BACKGROUND_WAIT_S, and a note while the job runs on. Compile
    errors propagate to the page, which says what failed."""
    from blockscope import kernels
    from blockscope.profiling.inspect import compiled

    problem = compile_problem(variant, n_cols, dtype, num_warps)
    if problem:
        st.warning(f"Not compiled: {problem.removeprefix('skipped: ')}.")
        if not st.checkbox("Compile anyway (in the background; it may take minutes)", False, key=force_key):
            return None, None
    job = compiled.inspect_async(variant, n_cols, kernels.dtype_from_name(dtype), arch=arch, num_warps=num_warps)
    with st.spinner(f"Compiling {job.label}…"):
        info = compiled.result_within(job, compiled.BACKGROUND_WAIT_S)
    if info is not None:
        return info, None
    st.info(
        f"Compiling {job.label} in the background (given up after {job.timeout_s:.0f} s); this page reruns by "
        f"itself until it is done — rerun/refresh shortly.{waiting_note}"
    )
    return None, job


def rerun_while_compiling(job: Any | None) -> None:
    """At the end of a page that rendered without `job`'s result: rerun at once if it finished meanwhile (after the
    page's wait gave up, before the page was done: the result would otherwise wait for the next interaction), else,
    while it runs and before its deadline, after REFRESH_S."""
    if job is None:
        return
    if not job.done():
        if time.monotonic() >= job.deadline:
            return
        time.sleep(REFRESH_S)  # the page has rendered; look again (a widget change interrupts this rerun)
    st.rerun()
