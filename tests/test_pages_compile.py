"""Occupancy and Kernel evidence pages: the offline compile runs in the background
(profiling.inspect.compiled.inspect_async) and never blocks a rerun for more than a few seconds; predicted-pathological
configs are refused unless forced.

The compile itself is faked here (a CompileJob the test finishes); the real worker is tested in test_compiled.py.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from blockscope.demo import synthetic_results  # noqa: E402
from blockscope.profiling.inspect import compiled  # noqa: E402
from blockscope.profiling.inspect.compiled import CompileInfo, CompileJob  # noqa: E402
from blockscope.profiling.results import save_results  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def results_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("results") / "synthetic.parquet"
    save_results(synthetic_results(n_values=(256, 1000, 1024, 65536)), path)
    return path


@pytest.fixture
def jobs(monkeypatch, tmp_path):
    """inspect_async replaced: every call recorded, answered with the job `jobs.next` (a fresh never-ending one by
    default, given up 2 s after it started)."""
    monkeypatch.setenv("BLOCKSCOPE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(compiled, "BACKGROUND_WAIT_S", 0.2)

    class Jobs:
        calls: list = []
        next: CompileJob | None = None

    def fake(variant, n_cols, dtype, arch=None, n_rows=4096, **tunables):
        Jobs.calls.append((variant, n_cols, arch, tunables))
        if Jobs.next is None:
            Jobs.next = CompileJob(f"{variant} N={n_cols} for {arch} (offline)", timeout_s=1.0)
            Jobs.next.deadline = Jobs.next.started_at + 2.0
        return Jobs.next

    Jobs.calls = []
    monkeypatch.setattr(compiled, "inspect_async", fake)
    return Jobs


def page(results_file: Path, name: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.sidebar.radio(key="data_source").set_value("Path on this machine").run()
    at.sidebar.text_input(key="typed_path").input(str(results_file)).run()
    at.switch_page(f"pages/{name}.py").run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def info_of(variant: str = "teaching", n_cols: int = 256) -> CompileInfo:
    return CompileInfo(
        variant=variant,
        arch="sm_90",
        dtype="fp16",
        n_cols=n_cols,
        n_rows=4096,
        tunables={"num_warps": 4},
        num_warps=4,
        num_stages=3,
        n_regs=40,
        spill_store_bytes=0,
        spill_load_bytes=0,
        stack_bytes=0,
        shared_bytes=16,
        compile_seconds=2.5,
        source="offline",
        cached=False,
        ptx=".version 8.7\n.visible .entry row_softmax_kernel(",
        sass="EXIT ;",
    )


def test_kernel_evidence_answers_while_compiling_then_shows_the_result(results_file, jobs):
    at = page(results_file, "kernel_evidence")
    at.number_input(key="ev_n").set_value(256)
    started = time.monotonic()
    at.toggle(key="ev_show").set_value(True).run()
    assert not at.exception, [e.message for e in at.exception]
    assert time.monotonic() - started < 20  # reruns while compiling, then stops at the job's deadline
    assert len(jobs.calls) >= 2  # it answered before the compile was done, and looked again
    assert any("in the background" in i.value and "rerun/refresh shortly" in i.value for i in at.info)
    assert not any(".entry" in c.value for c in at.code)
    jobs.next.set_result(info_of())  # the compile finishes
    at.run()
    assert any(".entry" in c.value for c in at.code)
    assert not any("in the background" in i.value for i in at.info)


def test_kernel_evidence_refuses_a_predicted_pathological_config_unless_forced(results_file, jobs):
    at = page(results_file, "kernel_evidence")
    at.number_input(key="ev_n").set_value(65536)
    at.selectbox(key="ev_warps").set_value(1)
    at.toggle(key="ev_show").set_value(True).run()
    assert any("predicted pathological compile time: 2048 lanes per thread" in w.value for w in at.warning)
    assert jobs.calls == []
    job = CompileJob("teaching N=65536", timeout_s=1.0)
    job.set_result(info_of(n_cols=65536))
    jobs.next = job
    at.checkbox(key="ev_force").check().run()
    assert [call[1] for call in jobs.calls] == [65536] and any(".entry" in c.value for c in at.code)


def test_occupancy_page_renders_while_compiling_and_refuses_pathological_configs(results_file, jobs):
    at = page(results_file, "occupancy")
    assert any("in the background" in i.value for i in at.info)
    assert any("waves" in m.value for m in at.markdown)  # the rest of the page did not wait
    assert jobs.calls and jobs.calls[0][0] == "teaching"
    jobs.next.set_result(info_of(n_cols=1000))
    at.run()
    assert not any("in the background" in i.value for i in at.info)
    assert any("compiled offline for sm_90" in c.value for c in at.caption)
    jobs.calls.clear()
    at.number_input(key="occ_n").set_value(65536)
    at.selectbox(key="occ_warps").set_value(1).run()
    assert any("predicted pathological compile time" in w.value for w in at.warning) and jobs.calls == []
    assert not at.exception


def test_a_compile_done_after_the_wait_shows_without_another_interaction(results_file, jobs, monkeypatch):
    """The compile finishes after the page's wait gave up but before the page ends: the page reruns at once and shows
    it (it used to stop polling a done job and show 'in the background' until the next widget change)."""
    at = page(results_file, "occupancy")
    job = CompileJob("teaching N=4096 for sm_90 (offline)", timeout_s=1.0)
    jobs.next = job
    real = compiled.result_within

    def late(waited, seconds):
        if waited is job and not job.done():
            job.set_result(info_of(n_cols=4096))  # done just after this wait
            return None
        return real(waited, seconds)

    monkeypatch.setattr(compiled, "result_within", late)
    at.number_input(key="occ_n").set_value(4096).run()
    assert not at.exception, [e.message for e in at.exception]
    assert not any("in the background" in i.value for i in at.info)
    assert any("compiled offline for sm_90" in c.value for c in at.caption)
