"""Proton scope breakdowns (issue 38): the marker -> pl.enter_scope/exit_scope transform of splitrow, staged and
cluster, an offline sm_90 compile of each instrumented copy (proton.record ops, clock reads), the trace parser on a
synthetic trace in the layout seen on the H200 (and hostile files), and bench --proton-scopes' CLI errors."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from blockscope.profiling.cli.main import main
from blockscope.profiling.measure import proton_scopes as ps
from blockscope.profiling.views import scopes as sv

ROOT = Path(__file__).resolve().parents[1]
EXPECTED = {
    "splitrow": ["kernel", "load", "local", "publish", "exchange", "store"],
    "staged": ["kernel", "load", "local", "exchange", "store"],
    "cluster": ["kernel", "load", "local", "exchange", "store"],
}


# ---------------------------------------------------------------- source transform


@pytest.mark.parametrize("variant", ps.VARIANTS)
def test_each_kernel_marks_its_scopes_and_the_copy_calls_proton_there(variant):
    source = ps.kernel_source(variant)
    assert ps.marked_scopes(source) == EXPECTED[variant]
    text = ps.instrumented_source(variant)
    assert "# scope:" not in text and "# end scope:" not in text
    for name in EXPECTED[variant]:
        assert text.count(f'pl.enter_scope("{name}")') == 1 and text.count(f'pl.exit_scope("{name}")') == 1
    lines = text.splitlines()
    assert lines[0].startswith("def row_softmax_") and not any(line.lstrip().startswith("@") for line in lines[:1])
    body = [line for line in lines[1:] if line.strip() and not line.strip().startswith("#")]
    assert 'pl.enter_scope("kernel")' in next(line for line in body if "pl." in line)
    assert body[-1].strip() == 'pl.exit_scope("kernel")'


def test_splitrow_exchange_holds_the_spin_wait_and_load_holds_the_load():
    text = ps.instrumented_source("splitrow")
    enter, exit_ = text.index('pl.enter_scope("exchange")'), text.index('pl.exit_scope("exchange")')
    assert enter < text.index("while tl.atomic_add(counter_ptr + row, 0") < exit_
    assert enter < text.index("while _tags_ready(") < exit_
    load = text[text.index('pl.enter_scope("load")') : text.index('pl.exit_scope("load")')]
    assert "_load_window(input_ptr, base, shift" in load and "local_max = tl.max" in load
    publish = text[text.index('pl.enter_scope("publish")') : text.index('pl.exit_scope("publish")')]
    assert "tl.atomic_add(counter_ptr + row, 1" in publish and "tl.atomic_xchg(slot," in publish
    store = text[text.index('pl.enter_scope("store")') : text.index('pl.exit_scope("store")')]
    assert "tl.store(output_ptr + row * output_row_stride + lanes" in store


@pytest.mark.parametrize("variant", ps.VARIANTS)
def test_markers_are_comments_only_so_the_kernels_code_identity_stays(variant):
    """The results' kernel_source_hash is taken from the syntax tree: removing the marker lines changes nothing."""
    path = ROOT / "kernels" / f"{variant}.py"
    text = path.read_text(encoding="utf-8")
    stripped = "\n".join(line for line in text.splitlines() if not (ps.START.match(line) or ps.END.match(line)))
    assert ast.dump(ast.parse(text)) == ast.dump(ast.parse(stripped))
    assert len(text.splitlines()) - len(stripped.splitlines()) == 2 * len(EXPECTED[variant])


@pytest.mark.parametrize("variant", ["teaching", "online", "auto", "staged_split", ""])
def test_unknown_variant_names_the_allowed_ones(variant):
    with pytest.raises(ValueError, match=re.escape("allowed: splitrow, staged, cluster")):
        ps.instrumented_source(variant)
    with pytest.raises(ValueError, match="allowed: splitrow, staged, cluster"):
        ps.profile_scopes(variant, "fp16", 65536, "unused")


@pytest.mark.parametrize(
    "source, message",
    [
        ("def f():\n    # scope: a\n    x = 1\n", "never closed"),
        ("def f():\n    x = 1\n    # end scope: a\n", "end of scope 'a'"),
        ("def f():\n    # scope: a\n    # scope: b\n    x = 1\n    # end scope: a\n    # end scope: b\n", "innermost"),
        ("def f():\n    # scope: a\n    if x:\n        y = 1\n        # end scope: a\n", "not in one block"),
        (
            "def f():\n    # scope: a\n    x = 1\n    # end scope: a\n    # scope: a\n    y = 2\n    # end scope: a\n",
            "twice",
        ),
    ],
)
def test_bad_markers_are_refused(source, message):
    with pytest.raises(ValueError, match=message):
        ps.transform_source(source)


def test_transform_keeps_indentation_and_nesting():
    source = (
        "def f(n):\n    # scope: all\n    for i in range(n):\n        # scope: body\n        x = i\n"
        "        # end scope: body\n    # end scope: all\n"
    )
    text = ps.transform_source(source)
    assert text.splitlines() == [
        "def f(n):",
        '    pl.enter_scope("all")',
        "    for i in range(n):",
        '        pl.enter_scope("body")',
        "        x = i",
        '        pl.exit_scope("body")',
        '    pl.exit_scope("all")',
    ]


def test_config_names_and_default_rows():
    assert ps.config_name("splitrow", "fp16", 65536, 256) == "splitrow-fp16-N65536-R256"
    assert ps.config_name("cluster", "fp32", 8192, 4, {"num_warps": 8, "chunk": 4096}) == (
        "cluster-fp32-N8192-R4-chunk4096-num_warps8"
    )
    assert ps.default_rows(65536, 2) == 256 and ps.default_rows(262144, 4) == 32 and ps.default_rows(64, 4) == 4096
    assert sv.config_label("splitrow-fp16-N65536-R256")["n_cols"] == 65536
    assert sv.config_label("odd name") == {"config": "odd name"}


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU message")
def test_profile_scopes_without_cuda_says_what_is_needed(tmp_path):
    with pytest.raises(ps.ScopesError, match="need a CUDA GPU"):
        ps.profile_scopes("cluster", "fp16", 65536, tmp_path)


# ---------------------------------------------------------------- offline sm_90 compile

COMPILE_CONFIGS = [
    ("splitrow", 65536, "fp16", {}),  # 4 chunks, tags polled
    ("splitrow", 262144, "fp32", {"counter": 1}),  # 16 chunks, counter waited on
    ("cluster", 65536, "fp16", {}),
    ("staged", 65536, "fp16", {}),  # a cluster of 2 (Gluon)
]
COMPILE_SCRIPT = """
import json, re, sys
from blockscope.profiling.measure import proton_scopes as ps
out = []
for variant, n_cols, dtype, tunables in json.loads(sys.argv[1]):
    c = ps.compile_offline(variant, n_cols, dtype, **tunables)
    plain = ps.compile_offline(variant, n_cols, dtype, instrumented=False, **tunables)
    ttgir = c.asm["ttgir"]
    out.append({
        "records": re.findall(r'proton\\.record (start|end) "(\\w+)"', ttgir),
        "spin": [ttgir.find('proton.record start "exchange"'), ttgir.find("scf.while"),
                 ttgir.find('proton.record end "exchange"')],
        "clock_reads": len(re.findall(r"%clock64|%clock\\b", c.asm["ptx"])),
        "globaltimer": "globaltimer" in c.asm["ptx"],
        "cubin": len(c.asm["cubin"]),
        "scratch": int(c.metadata.profile_scratch_size),
        "shared": int(c.metadata.shared), "plain_shared": int(plain.metadata.shared),
        "plain_records": plain.asm["ttgir"].count("proton.record"),
    })
print("RESULT " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def compiled_copies() -> list[dict]:
    """One worker without TRITON_INTERPRET (the kernels' helpers must be JIT functions) compiles every config."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    try:
        done = subprocess.run(
            [sys.executable, "-c", COMPILE_SCRIPT, json.dumps(COMPILE_CONFIGS)],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=900,
        )
    except subprocess.TimeoutExpired:
        pytest.skip("the offline compile worker took over 900 s")
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None and ("proton" in done.stderr.lower() and "import" in done.stderr.lower()):
        pytest.skip(f"this Triton cannot instrument offline: {done.stderr.strip().splitlines()[-1]}")
    assert line is not None, done.stderr[-3000:]
    return json.loads(line.removeprefix("RESULT "))


@pytest.mark.parametrize("index", range(len(COMPILE_CONFIGS)), ids=lambda i: "-".join(map(str, COMPILE_CONFIGS[i][:3])))
def test_offline_sm90_compile_of_the_copy_records_every_scope(compiled_copies, index):
    variant = COMPILE_CONFIGS[index][0]
    facts = compiled_copies[index]
    names = EXPECTED[variant]
    assert sorted(map(tuple, facts["records"])) == sorted([("start", n) for n in names] + [("end", n) for n in names])
    assert facts["records"][0] == ["start", "kernel"] and facts["records"][-1] == ["end", "kernel"]
    assert facts["clock_reads"] >= 2 * len(names) and facts["globaltimer"]  # each record reads the clock
    assert facts["cubin"] > 0 and facts["scratch"] > 0  # a global profile buffer per CTA
    assert facts["shared"] == facts["plain_shared"]  # global buffer: the plain kernel's shared memory (residency)
    assert facts["plain_records"] == 0
    if variant == "splitrow":
        enter, spin, exit_ = facts["spin"]
        assert 0 <= enter < spin < exit_  # the whole spin-wait loop inside `exchange`


# ---------------------------------------------------------------- trace parser


def synthetic_trace(ctas: int = 3, warps: int = 4, rows: int = 1, kernel: str = "row_softmax_cluster_kernel") -> dict:
    """Proton's trace layout (H200, Triton 3.6): per CTA and warp, `kernel` and its scopes; ts/dur cycles / 1000.
    load takes (4 + warp) x 1000 cycles per row, exchange 2000 (CTA 0: 6000), store 1000."""
    events = []
    for cta in range(ctas):
        for warp in range(warps):
            start = 100.0 * cta

            def event(name: str, ts: float, dur: float, line: int, cta: int = cta, warp: int = warp) -> None:
                events.append(
                    {
                        "name": name,
                        "cat": kernel,
                        "ph": "X",
                        "pid": f"{kernel} Core{2 * cta + 1} CTA{cta}",
                        "tid": f"warp {warp} (line {line})",
                        "ts": ts,
                        "dur": dur,
                        "args": {"Finalization Time (ns)": 128, "Frequency (MHz)": 1000, "call_stack": []},
                    }
                )

            t = start + 0.1
            for _ in range(rows):
                event("load", t, 4.0 + warp, 1)
                t += 4.0 + warp
                exchange = 6.0 if cta == 0 else 2.0
                event("exchange", t, exchange, 1)
                t += exchange
                event("store", t, 1.0, 1)
                t += 1.0
            event("kernel", start, t - start + 0.4, 0)
    return {"displayTimeUnit": "ns", "traceEvents": events}


def test_breakdown_of_a_synthetic_trace():
    table = sv.scope_breakdown(json.dumps(synthetic_trace()).encode())
    assert list(table.columns) == list(sv.BREAKDOWN_COLUMNS)
    assert table["scope"].tolist() == ["kernel", "load", "exchange", "store", "other"]
    rows = table.set_index("scope")
    assert rows.loc["load", "median_cycles"] == pytest.approx(5500.0)  # warps 0-3: 4000..7000
    assert rows.loc["load", "p90_cycles"] == pytest.approx(7000.0)
    assert rows.loc["exchange", "median_cycles"] == pytest.approx(2000.0)
    assert rows.loc["exchange", "p90_cycles"] == pytest.approx(6000.0)  # CTA 0 waited longer
    assert rows.loc["store", "median_cycles"] == pytest.approx(1000.0)
    assert rows.loc["other", "median_cycles"] == pytest.approx(500.0)  # 0.1 before load + 0.4 after store
    assert (table["ctas"] == 3).all() and (table["warps"] == 12).all()
    assert rows.loc["kernel", "share_of_kernel"] == 1.0
    parts = rows.loc[["load", "exchange", "store", "other"], "share_of_kernel"].sum()
    assert parts == pytest.approx(1.0)
    text = sv.format_breakdown(table)
    assert "exchange" in text and "%" in text and len(text.splitlines()) == 6


def test_scopes_run_once_per_row_are_summed_per_warp():
    table = sv.scope_breakdown(json.dumps(synthetic_trace(rows=3, kernel="row_softmax_splitrow_kernel")).encode())
    rows = table.set_index("scope")
    assert rows.loc["load", "median_cycles"] == pytest.approx(3 * 5500.0)
    assert rows.loc["store", "instances_per_warp"] == 3
    assert table["kernel"].unique().tolist() == ["row_softmax_splitrow_kernel"]


def test_events_read_the_frequency_and_skip_foreign_events():
    trace = synthetic_trace(ctas=1, warps=1)
    for event in trace["traceEvents"]:
        event["args"]["Frequency (MHz)"] = 2000  # ts/dur = cycles / 2000
    trace["traceEvents"] += [{"ph": "M", "name": "process_name"}, {"ph": "X", "name": "bad", "dur": "x"}, 7, None]
    events = sv.scope_events(json.dumps(trace).encode())
    assert set(events["scope"]) == {"kernel", "load", "exchange", "store"}
    assert events.loc[events["scope"] == "store", "cycles"].iloc[0] == pytest.approx(2000.0)
    assert events["sm"].iloc[0] == 1 and events["cta"].iloc[0] == 0 and events["warp"].iloc[0] == 0


@pytest.mark.parametrize(
    "data, message",
    [
        (b"\x00\xffnot json{", "not JSON"),
        (b"[1, 2, 3]", "no scope events"),
        (b'{"traceEvents": 5}', "no traceEvents list"),
        (b'{"traceEvents": [{"ph": "X", "name": "a"}]}', "no scope events"),
        (b"[" * 100_000, "not JSON"),
    ],
)
def test_garbled_traces_are_refused_with_one_line(data, message):
    with pytest.raises(sv.ScopeTraceError, match=message) as error:
        sv.scope_breakdown(data, "bad.json")
    assert len(str(error.value).splitlines()) == 1


def test_oversized_or_missing_files_are_refused_before_parsing(tmp_path, monkeypatch):
    path = tmp_path / "big.json"
    path.write_bytes(json.dumps(synthetic_trace()).encode())
    monkeypatch.setattr(sv, "MAX_TRACE_BYTES", 100)
    with pytest.raises(sv.ScopeTraceError, match="larger than 100; allowed: at most 100 bytes"):
        sv.scope_breakdown(path)
    with pytest.raises(sv.ScopeTraceError, match="no such file"):
        sv.scope_events(tmp_path / "missing.json")
    monkeypatch.setattr(sv, "MAX_TRACE_BYTES", 1 << 20)
    monkeypatch.setattr(sv, "MAX_EVENTS", 10)
    with pytest.raises(sv.ScopeTraceError, match="over 10"):
        sv.scope_breakdown(path)


def test_files_beside_results_are_found_and_read_together(tmp_path):
    results = tmp_path / "run.parquet"
    folder = sv.scopes_dir(tmp_path / "run_proton", "run-1")
    folder.mkdir(parents=True)
    (folder / "cluster-fp16-N65536-R256.json").write_text(json.dumps(synthetic_trace()))
    (folder / "splitrow-fp16-N65536-R256.json").write_text(json.dumps(synthetic_trace(rows=2)))
    (folder / "garbled-fp16-N1-R1.json").write_bytes(b"{")
    found = sv.find_scope_traces([None, str(results)])
    assert [p.name for p in found] == sorted(p.name for p in folder.iterdir())
    table, errors = sv.breakdowns(found)
    assert list(errors) == ["garbled-fp16-N1-R1.json"] and "not JSON" in errors["garbled-fp16-N1-R1.json"]
    assert set(table["variant"]) == {"cluster", "splitrow"} and set(table["n_cols"]) == {65536}
    from blockscope.profiling.views.figures import scopes as figures

    one = table[table["config"] == "cluster-fp16-N65536-R256"]
    fig = figures.scope_cycles_figure(one, "cluster-fp16-N65536-R256")
    assert [t.name for t in fig.data] == ["load", "exchange", "store", "other"]
    share = figures.scope_share_figure(table)
    assert len(share.data) == 4 and list(share.data[0].x) == list(dict.fromkeys(table["config"]))


# ---------------------------------------------------------------- CLI


@pytest.mark.parametrize(
    "argv, message",
    [
        (["bench", "--variants", "splitrow"], "--variants, --n, --rows and --no-scope-warmup go with --proton-scopes"),
        (["bench", "--proton-scopes", "--variants", "online"], "no scope markers in variant(s) online; allowed:"),
        (["bench", "--proton-scopes", "--n", "1024,2048", "--rows", "1,2,3"], "--rows has 3 values for 2 N"),
    ],
)
def test_scope_cli_errors(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU message")
def test_scope_cli_needs_cuda(tmp_path, capsys):
    assert main(["bench", "--proton-scopes", "--markdown", str(tmp_path / "b.md")]) == 2
    assert "bench --proton-scopes needs a CUDA GPU" in capsys.readouterr().err


# ---------------------------------------------------------------- the GPU run's control flow, with a fake Proton


class FakeProton:
    """proton.start/finalize as the instrumentation backend uses them; finalize writes `<name>.chrome_trace`."""

    def __init__(self) -> None:
        self.started: list[dict] = []
        self.open: str | None = None

    def start(self, name, backend=None, data=None, mode=None):
        assert self.open is None, "sessions never overlap"
        self.started.append({"name": name, "backend": backend, "data": data, "mode": mode})
        self.open = name
        return len(self.started) - 1

    def finalize(self, session=None):
        Path(self.open + ".chrome_trace").write_text(json.dumps(synthetic_trace(ctas=2, warps=2)))
        self.open = None


@pytest.mark.parametrize("variant, cluster", [("splitrow", 1), ("cluster", 4), ("staged", 2)])
def test_profile_scopes_launches_a_fresh_copy_per_session_through_the_variants_launcher(
    variant, cluster, tmp_path, monkeypatch
):
    from types import SimpleNamespace

    from triton.runtime import _allocation

    from blockscope import kernels

    fake, seen, sizes = FakeProton(), [], []
    module = ps.kernel_module(variant)
    original = getattr(module, ps.KERNEL_ATTRS[variant])

    def launcher(x, **tunables):
        kernel = getattr(module, ps.KERNEL_ATTRS[variant])
        assert kernel is not original and fake.open is not None
        assert "pl.enter_scope" in ps.inspect.getsource(kernel.fn)
        seen.append(kernel)
        _allocation._profile_allocator(1000, 128, None)  # what Triton's launcher asks for: one cluster's worth
        return x

    def plan(n_rows, n_cols, dtype, **tunables):
        return SimpleNamespace(cluster_size=cluster)

    monkeypatch.setattr(kernels, "get_variant", lambda name: SimpleNamespace(launcher=launcher, plan=plan))
    monkeypatch.setattr(ps, "_need_proton", lambda: fake)
    monkeypatch.setattr(ps, "_input", lambda n_rows, n_cols, dtype: torch.zeros(n_rows, 4, dtype=dtype))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    _allocation._profile_allocator.set(lambda size, align, stream: sizes.append(size))
    try:
        path = ps.profile_scopes(variant, "fp16", 65536, tmp_path / "scopes", n_rows=8)
    finally:
        _allocation.set_profile_allocator(None)
    assert path == tmp_path / "scopes" / f"{variant}-fp16-N65536-R8.json"
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # the warm-up trace dropped
    assert [s["backend"] for s in fake.started] == ["instrumentation"] * 2
    assert {s["data"] for s in fake.started} == {"trace"} and {s["mode"] for s in fake.started} == {ps.DEFAULT_MODE}
    assert len(seen) == 2 and seen[0] is not seen[1]  # warm-up, then measured: a fresh copy each
    assert getattr(module, ps.KERNEL_ATTRS[variant]) is original  # put back
    assert sizes == [1000 * cluster] * 2  # a profile segment for every CTA of the clusters
    assert set(sv.scope_breakdown(path)["scope"]) == {"kernel", "load", "exchange", "store", "other"}


def test_profile_scopes_says_when_splitrow_ran_online_instead(tmp_path, monkeypatch):
    import warnings
    from types import SimpleNamespace

    from blockscope import kernels

    def launcher(x, **tunables):
        warnings.warn("splitrow: no cooperative launch; ran 'online' instead", RuntimeWarning, stacklevel=2)
        return x

    monkeypatch.setattr(
        kernels,
        "get_variant",
        lambda name: SimpleNamespace(launcher=launcher, plan=lambda *a, **k: SimpleNamespace(cluster_size=1)),
    )
    monkeypatch.setattr(ps, "_need_proton", lambda: FakeProton())
    monkeypatch.setattr(ps, "_input", lambda n_rows, n_cols, dtype: torch.zeros(n_rows, 4, dtype=dtype))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    with pytest.raises(ps.ScopesError, match="splitrow did not run its own kernel: splitrow: no cooperative"):
        ps.profile_scopes("splitrow", "fp16", 65536, tmp_path, n_rows=8, warmup=False)


@pytest.mark.gpu
@pytest.mark.parametrize("variant", ps.VARIANTS)
def test_gpu_breakdown_of_one_small_config(variant, tmp_path):
    """On the GPU: one config per variant under Proton's instrumentation backend gives every marked scope."""
    if variant in ("staged", "cluster") and torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("thread-block clusters need sm_90")
    path = ps.profile_scopes(variant, "fp16", 65536, tmp_path, n_rows=16)
    table = sv.scope_breakdown(path)
    assert set(EXPECTED[variant]) | {"other"} == set(table["scope"])
    rows = table.set_index("scope")
    assert (rows["median_cycles"] > 0).loc[["kernel", "load", "exchange", "store"]].all()
    assert rows.loc["load", "ctas"] == rows.loc["kernel", "ctas"] > 1


def test_evidence_beside_a_path_outside_the_allowed_folders_is_not_read(tmp_path, monkeypatch):
    """The results paths come from what a visitor typed: beside one outside the allowed folders nothing is listed,
    and a file inside that links out is left out too."""
    from blockscope import paths

    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    for root in (allowed, outside):
        folder = sv.scopes_dir(root / "run_proton", "run-1")
        folder.mkdir(parents=True)
        (folder / "cluster-fp16-N65536-R256.json").write_text(json.dumps(synthetic_trace()))
    linked = sv.scopes_dir(allowed / "run_proton", "run-1") / "splitrow-fp16-N65536-R256.json"
    linked.symlink_to(sv.scopes_dir(outside / "run_proton", "run-1") / "cluster-fp16-N65536-R256.json")
    monkeypatch.setenv(paths.ALLOWED_ROOTS_ENV, str(allowed))
    monkeypatch.chdir(allowed)
    assert sv.find_scope_traces([str(outside / "run.parquet")]) == []
    found = sv.find_scope_traces([str(allowed / "run.parquet")])
    assert [p.name for p in found] == ["cluster-fp16-N65536-R256.json"]
