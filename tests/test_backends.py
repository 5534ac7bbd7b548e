"""Peer backend adapters: support rules, unavailable packages (imports mocked), and how the sweep records an
unsupported, missing or wrong backend (CPU, fake clock)."""

from __future__ import annotations

import importlib
import sys
import types

import pytest
import torch

from blockscope.profiling.measure import backends, sweep
from blockscope.profiling.measure.backends import base, get_backend
from blockscope.profiling.measure.backends.liger import LigerBackend
from blockscope.profiling.measure.backends.quack import QuackBackend
from blockscope.profiling.measure.sweep import make_config
from blockscope.profiling.results import validate
from tests.test_sweep import run


def test_names_and_unknown_backend():
    assert backends.backend_names()[:4] == ("torch", "inductor", "liger", "quack")
    assert "auto" in backends.backend_names() and backends.is_peer("quack") and not backends.is_peer("auto")
    assert get_backend("liger") is get_backend("liger")
    with pytest.raises(ValueError, match="unknown backend 'nope'; allowed: torch, inductor, liger, quack, teaching"):
        get_backend("nope")
    rows = {row["backend"]: row for row in backends.status()}
    assert rows["torch"]["available"] == "yes" and rows["liger"]["package"] == "liger-kernel"


@pytest.mark.parametrize(
    ("dtype", "n", "allowed"),
    [
        (torch.float16, 4096, True),
        (torch.float16, 1001, False),
        (torch.float16, 1004, False),
        (torch.bfloat16, 100000, True),
        (torch.float32, 1004, True),
        (torch.float32, 1002, False),
        (torch.float32, 2**20, False),
        (torch.float16, 2**20, True),
        (torch.float64, 1024, False),
    ],
)
def test_quack_support_rules(dtype, n, allowed):
    reason = QuackBackend().supports(64, n, dtype)
    assert (reason is None) == allowed, reason
    if not allowed and dtype != torch.float64:
        aligned = n % (16 // torch.empty((), dtype=dtype).element_size()) == 0
        assert ("shared memory of one cluster" if aligned else "multiple of") in reason


def test_liger_refuses_rows_over_its_block_limit():
    assert LigerBackend().supports(8, 65536, torch.float16) is None
    reason = LigerBackend().supports(8, 65537, torch.float16)
    assert "next_pow2(N) would be over its limit of 65536" in reason


def _missing(name):
    real = importlib.import_module

    def fake(module, *args, **kwargs):
        if module.startswith(name):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return real(module, *args, **kwargs)

    return fake


@pytest.mark.parametrize(("backend", "module"), [("liger", "liger_kernel"), ("quack", "quack")])
def test_missing_package_is_a_reason_not_a_crash(monkeypatch, backend, module):
    monkeypatch.setattr(importlib, "import_module", _missing(module))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (9, 0))
    reason = get_backend(backend).available()
    assert reason is not None and "not installed" in reason and module in reason


def test_sweep_records_unavailable_and_unsupported_backends(monkeypatch):
    monkeypatch.setattr(importlib, "import_module", _missing("liger_kernel"))
    configs = [
        make_config("liger", "fp32", 4, 8),
        make_config("quack", "fp32", 4, 6),
        make_config("torch", "fp32", 4, 8),
    ]
    table = validate(run(configs, methods=["per_call_events"]))
    error = dict(zip(table["variant"], table["error"], strict=True))
    assert error["liger"].startswith("unavailable: liger: ") and sweep.error_kind(error["liger"]) == "transient"
    assert error["quack"].startswith("unavailable: quack: ")  # no GPU here
    assert sweep.error_kind("unsupported: quack: N = 6 is not a multiple of 4") == "deterministic"
    assert error["torch"] == "" and table.loc[table["variant"] == "torch", "max_abs_error"].iloc[0] < 1e-6
    assert table.loc[table["variant"] != "torch", "median_us"].isna().all()


def _fake_quack(monkeypatch, forward):
    module = types.ModuleType("quack.softmax")
    module.softmax_fwd = forward
    monkeypatch.setitem(sys.modules, "quack", types.ModuleType("quack"))
    monkeypatch.setitem(sys.modules, "quack.softmax", module)
    monkeypatch.setattr(QuackBackend, "available", lambda self: None)


def test_sweep_times_a_peer_and_never_times_a_wrong_one(monkeypatch):
    _fake_quack(monkeypatch, lambda rows: torch.softmax(rows, dim=-1))
    good = validate(run([make_config("quack", "fp32", 4, 8)], methods=["per_call_events", "cuda_graph"]))
    assert (good["error"] == "").all() and (good["median_us"] > 0).all() and good["max_abs_error"].iloc[0] < 1e-6
    assert good["kernel_names"].tolist() == ["row_softmax_fake; second_kernel"] * 2

    _fake_quack(monkeypatch, lambda rows: torch.full_like(rows, float("nan")))  # as Quack did at N=100000
    bad = validate(run([make_config("quack", "fp32", 4, 8)], methods=["per_call_events"]))
    assert bad["error"].iloc[0].startswith("wrong result: 32 of 32 elements off")
    assert bad["max_abs_error"].iloc[0] == float("inf") and bad["median_us"].isna().all()


def test_peers_take_no_tunables_and_any_width():
    configs = sweep.build_configs(["torch", "liger", "teaching"], ["fp16"], [100, 70000], n_rows=8, num_warps=[4])
    assert sorted(c.n_cols for c in configs if c.variant == "liger") == [100, 70000]  # supports() decides per row
    assert all(c.tunables == () for c in configs if c.variant != "teaching")
    assert sweep.resolve_plan(configs[0]) is None and sweep.resolved_tunables_json(configs[1], None) == "{}"


def test_compiled_kernel_facts_read_jit_caches():
    compiled = types.SimpleNamespace(
        name="k", n_regs=38, n_spills=0, metadata=types.SimpleNamespace(shared=512, num_warps=8, name="k")
    )
    jit = types.SimpleNamespace(device_caches={0: ({"key": compiled}, None)})
    assert [base.compiled_kernel_facts(k) for k in base.compiled_kernels([jit, object()])] == [
        base.KernelFacts("k", 38, 0, 512, 8)
    ]


def test_blockscope_evidence_is_this_shapes_compile(monkeypatch):
    from blockscope.profiling.inspect import compiled

    seen = []

    def fake_inspect(variant, n_cols, dtype, arch=None, n_rows=4096, **tunables):
        seen.append((variant, n_cols, dtype, n_rows, tunables))
        if variant == "auto" and n_cols == 7:
            raise ValueError("auto: the tuning table picks torch.softmax")
        return types.SimpleNamespace(
            kernel_name=f"k{n_cols}",
            variant=variant,
            n_regs=n_cols // 8,
            spill_store_bytes=0,
            shared_bytes=16,
            num_warps=4,
        )

    monkeypatch.setattr(compiled, "inspect", fake_inspect)
    facts = backends.BlockscopeBackend("teaching", num_warps=4).evidence(torch.zeros(2, 3, 256))
    assert facts.kernels == [base.KernelFacts("k256", 32, 0, 16, 4)]
    assert seen[-1] == ("teaching", 256, torch.float32, 6, {"num_warps": 4})
    assert "picks torch.softmax" in backends.get_backend("auto").evidence(torch.zeros(2, 7)).note


def test_peer_compile_facts_fill_occupancy(monkeypatch):
    evidence = base.Evidence(
        kernels=[base.KernelFacts("triton_per_fused__softmax_0", 32, 0, 0, 8)], source="# generated"
    )
    monkeypatch.setattr(backends.InductorBackend, "evidence", lambda self, x: evidence)
    facts = sweep.peer_compile_facts(make_config("inductor", "fp16", 4, 8), torch.zeros(4, 8), "sm_90")
    assert facts["n_regs"] == 32 and facts["num_warps"] == 8 and facts["kernel_source"] == "# generated"
    assert facts["blocks_per_sm"] == 8 and facts["occupancy"] == pytest.approx(1.0) and facts["limiter"]


@pytest.mark.slow
def test_inductor_compiles_per_shape_and_keeps_its_source():
    backend = backends.InductorBackend()
    x = torch.randn(3, 40)
    run_once = backend.prepare(x)
    torch.testing.assert_close(run_once(), torch.softmax(x, -1))
    torch.testing.assert_close(run_once(), torch.softmax(x, -1))
    assert backend.source(x) and list(backend.compile_seconds.values())[0] > 0
    other = torch.randn(5, 24)
    torch.testing.assert_close(backend.prepare(other)(), torch.softmax(other, -1))
    assert len(backend.compile_seconds) == 2 and backend.evidence(other).source


@pytest.mark.parametrize("original", ["none", "absent", "method"])
def test_output_code_capture_puts_back_what_was_there(monkeypatch, original):
    """torch 2.11 declares `GraphLowering.save_output_code = None` and tests it before calling it; removing it
    broke every later torch.compile (AttributeError), so the capture restores exactly the original."""
    from torch._inductor.graph import GraphLowering

    from blockscope.profiling.measure.backends.inductor import _capture_output_code

    if original == "absent":
        monkeypatch.delattr(GraphLowering, "save_output_code", raising=False)
    else:
        monkeypatch.setattr(GraphLowering, "save_output_code", None if original == "none" else staticmethod(print))
    before = GraphLowering.__dict__.get("save_output_code", "absent")
    with _capture_output_code() as codes:
        GraphLowering.save_output_code("# code")
    assert codes == ["# code"]
    assert GraphLowering.__dict__.get("save_output_code", "absent") is before


def test_liger_evidence_is_the_kernel_of_this_shape(monkeypatch):
    """Facts come from the kernel this shape compiled (or shares by BLOCK_SIZE / num_warps), never from the
    first kernel Liger ever compiled (the first H200 capture reported N=128's 15 registers at every N)."""
    cache: dict = {}
    jit = types.SimpleNamespace(device_caches={0: (cache, None)})

    def apply(x):
        block = 1 << (x.shape[-1] - 1).bit_length()
        key = (x.dtype, block)
        if key not in cache:
            cache[key] = types.SimpleNamespace(
                name="_softmax_single_block_forward_kernel",
                n_regs=block // 64 + 10,
                n_spills=0,
                metadata=types.SimpleNamespace(shared=16, num_warps=4),
            )
        return torch.softmax(x, -1)

    softmax = types.ModuleType("liger_kernel.ops.softmax")
    softmax.LigerSoftmaxFunction = types.SimpleNamespace(apply=apply)
    softmax._softmax_single_block_forward_kernel = jit
    utils = types.ModuleType("liger_kernel.ops.utils")
    utils.calculate_settings = lambda n: (1 << (n - 1).bit_length(), 4)
    for name, module in (
        ("liger_kernel", types.ModuleType("liger_kernel")),
        ("liger_kernel.ops", types.ModuleType("liger_kernel.ops")),
        ("liger_kernel.ops.softmax", softmax),
        ("liger_kernel.ops.utils", utils),
    ):
        monkeypatch.setitem(sys.modules, name, module)
    backend = LigerBackend()
    small, wide, shares = torch.randn(2, 128), torch.randn(2, 4096), torch.randn(2, 4090)
    for x in (small, wide, shares):
        backend.prepare(x)()
    assert backend.evidence(small).kernels[0].n_regs == 12
    assert backend.evidence(wide).kernels[0].n_regs == 74
    assert backend.evidence(shares).kernels == []  # N % 16 != 0: another specialization, compiled nothing new
    assert "before Blockscope watched" in backend.evidence(torch.randn(2, 999)).note
