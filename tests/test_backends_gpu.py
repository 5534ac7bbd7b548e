"""Peer backends on a real GPU (make test-gpu): each available peer computes softmax, names its kernels and, for
the Triton-based ones (Inductor, Liger), reports registers. A peer that is not installed is skipped with why."""

from __future__ import annotations

import pytest
import torch

from blockscope.profiling.measure import backends
from blockscope.profiling.measure.sweep import make_config, peer_compile_facts

pytestmark = pytest.mark.gpu


def _need(name: str) -> backends.Backend:
    backend = backends.get_backend(name)
    reason = backend.available()
    if reason:
        pytest.skip(f"{name}: {reason}")
    return backend


@pytest.mark.parametrize("name", ["torch", "inductor", "liger", "quack"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_peer_matches_torch(name, dtype):
    backend = _need(name)
    x = torch.randn(513, 4096, device="cuda", dtype=dtype)
    assert backend.supports(*x.shape, dtype) is None
    fn = backend.prepare(x)
    torch.testing.assert_close(
        fn().float(), torch.softmax(x.float(), -1), atol=2e-3 if dtype != torch.float32 else 1e-5, rtol=0
    )


@pytest.mark.parametrize("name", ["inductor", "liger"])
def test_triton_peers_report_compile_facts(name):
    _need(name)
    x = torch.randn(1024, 3000, device="cuda", dtype=torch.float16)
    backends.get_backend(name).prepare(x)()
    torch.cuda.synchronize()
    facts = peer_compile_facts(make_config(name, "fp16", 1024, 3000), x, None)
    assert facts.get("n_regs") and facts["n_regs"] > 0 and facts.get("num_warps"), facts
    assert 0 < facts["occupancy"] <= 1 and facts["blocks_per_sm"] >= 1
    if name == "inductor":
        assert "triton" in facts["kernel_source"] and "def triton_" in facts["kernel_source"]


def test_kernel_names_name_each_peer():
    from blockscope.profiling.measure.trace import kernel_names

    x = torch.randn(256, 2048, device="cuda", dtype=torch.float16)
    for name in ("torch", "inductor", "liger", "quack"):
        backend = backends.get_backend(name)
        if backend.available():
            continue
        fn = backend.prepare(x)
        fn()
        names = kernel_names(fn)
        assert names, name
        if name == "inductor":
            assert any(n.startswith("triton_") for n in names), names
        if name == "liger":
            assert any("softmax" in n for n in names), names
