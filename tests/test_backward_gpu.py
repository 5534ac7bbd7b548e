"""Backward directions on a real GPU (make test-gpu): every available peer's backward and training step against the
float64 gradient, the names of the kernels they launch, all three timing methods on them, and a small sweep with
--directions. A peer that is not installed (or has no backward in its installed version) is skipped with why."""

from __future__ import annotations

import pytest
import torch

from blockscope.profiling.measure import backends, directions, timing
from blockscope.profiling.measure.sweep import build_configs, run_sweep
from blockscope.profiling.results import validate

pytestmark = pytest.mark.gpu
PEERS = ["torch", "inductor", "liger", "quack"]
DTYPES = [torch.float16, torch.bfloat16, torch.float32]


def _need(name: str, n_rows: int, n_cols: int, dtype: torch.dtype) -> backends.Backend:
    reason = backends.unsupported_reason(name, n_rows, n_cols, dtype, "backward")
    if reason:
        pytest.skip(reason)
    return backends.get_backend(name)


def _case(n_rows: int, n_cols: int, dtype: torch.dtype):
    x = torch.randn(n_rows, n_cols, device="cuda", dtype=dtype) * 3
    reference = torch.softmax(x.double(), -1)
    return x, reference, directions.gradient_inputs(x, seed=0, reference=reference)


@pytest.mark.parametrize("name", [*PEERS, "auto"])
@pytest.mark.parametrize("dtype", DTYPES, ids=["fp16", "bf16", "fp32"])
@pytest.mark.parametrize("way", ["backward", "forward_backward"])
def test_backward_directions_match_float64(name, dtype, way):
    n_rows, n_cols = 513, 4096
    _need(name, n_rows, n_cols, dtype)
    x, reference, inputs = _case(n_rows, n_cols, dtype)
    fn = directions.direction_callable(way, name, {}, x, inputs)
    dx = fn()
    assert dx.dtype == dtype and dx.shape == x.shape
    label = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}[dtype]
    wrong, _ = directions.check_direction(way, dx, inputs, reference, label)
    assert wrong == "", wrong
    again, _ = directions.check_direction(way, fn(), inputs, reference, label)  # timed calls repeat the closure
    assert again == "", again


@pytest.mark.parametrize("name", [*PEERS, "auto"])
def test_every_timing_method_times_the_backward(name):
    _need(name, 1024, 2048, torch.float16)
    x, _, inputs = _case(1024, 2048, torch.float16)
    for way in ("backward", "forward_backward"):
        fn = directions.direction_callable(way, name, {}, x, inputs)
        fn()
        for method in timing.TIMING_METHODS:
            stats = timing.benchmark(fn, method, reps=20, warmup=3)
            assert 0 < stats.median_us < 1e5, (name, way, method, stats)


def test_kernel_names_of_each_backward():
    from blockscope.profiling.measure.trace import kernel_names

    x, _, inputs = _case(256, 2048, torch.float16)
    expected = {"inductor": "triton_", "liger": "backward", "auto": "softmax_backward"}
    for name in [*PEERS, "auto"]:
        if backends.unsupported_reason(name, 256, 2048, torch.float16, "backward"):
            continue
        fn = directions.direction_callable("backward", name, {}, x, inputs)
        fn()
        names = kernel_names(fn)
        assert names, name
        if name in expected:
            assert any(expected[name] in n for n in names), (name, names)


def test_sweep_with_directions_on_the_gpu(tmp_path):
    variants = ["torch", "auto", *[p for p in PEERS[1:] if backends.get_backend(p).available() is None]]
    configs = build_configs(
        variants, ["fp16", "fp32"], [1000, 4096], n_rows=1024, directions=["forward", "backward", "forward_backward"]
    )
    table = run_sweep(configs, out=tmp_path / "directions.parquet", reps=20, warmup=3)
    validate(table)
    ran = table[table["error"] == ""]
    assert set(ran["direction"]) == {"forward", "backward", "forward_backward"}
    failed = table[(table["error"] != "") & ~table["error"].str.startswith(("unsupported", "unavailable"))]
    assert failed.empty, failed[["variant", "dtype", "n_cols", "direction", "method", "error"]].to_string()
    backward = ran[ran["direction"] == "backward"]
    assert (backward["max_abs_error"] < 1e-2).all() and backward["kernel_names"].notna().all()
    auto = backward[backward["variant"] == "auto"]
    assert auto["kernel_names"].str.contains("softmax_backward").all()
