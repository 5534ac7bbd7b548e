"""Launch records (kernels/launches.py): what a fresh process's first `auto` call replays without Triton.

CPU tests check the record's validation (every field, stale sources and tables, bounded reads, cubin checksums),
the atomic writes, the fall-back on a bad record and the cold-start measurement's private store; the GPU tests
(@pytest.mark.gpu) record launches in one process and replay them in a fresh one that never imports Triton.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

from blockscope.kernels import aot, launches, tables
from blockscope.profiling.measure import coldstart

H200 = launches.Device("NVIDIA H200", 90, 132)
CUBIN = b"\x7fELF" + bytes(range(256)) * 4


def valid_record(**changes) -> dict:
    blob = bytes(40)
    record = {
        "format": launches.FORMAT,
        "dtype": "fp16",
        "n_rows": 4096,
        "n_cols": 1000,
        "variant": "warprows",
        "tunables": {"num_warps": 4},
        "gpu": H200.name,
        "capability": H200.capability,
        "sm_count": H200.sm_count,
        "sources": launches.sources_digest(),
        "table": launches.table_digest(H200.name),
        "function": "row_softmax_warprows_kernel",
        "grid": [1024, 1, 1],
        "block": 128,
        "shared": 0,
        "blob": blob.hex(),
        "offsets": [0, 8, 16, 20, 24, 32],
        "sizes": [8, 8, 4, 4, 8, 8],
        "x_slots": [8],
        "y_slots": [0],
        "cubin": hashlib.sha256(CUBIN).hexdigest(),
        "triton": "3.6.0",
    }
    record.update(changes)
    return record


WORKSPACE_AT_16 = {"stats_ptr": 16, "counter_ptr": 24, "control_ptr": 32}  # offset 16 holds a 4-byte parameter


def check(record: dict) -> str | None:
    return launches.check_record(record, H200, torch.float16, 4096, 1000)


def test_a_record_of_these_sources_and_this_table_is_accepted():
    assert check(valid_record()) is None
    assert check(valid_record(variant="torch")) is None


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"format": 2}, "not a Blockscope launch record"),
        ({"n_rows": "4096"}, "'n_rows' is not an integer"),
        ({"dtype": "bf16"}, "made for dtype 'bf16'"),
        ({"n_cols": 1001}, "made for 4096x1001 rows"),
        ({"gpu": "NVIDIA H100"}, "made on NVIDIA H100"),
        ({"capability": 80}, "sm_80"),
        ({"sm_count": 66}, "66 SMs"),  # a MIG slice or another SKU: persistent grids differ
        ({"sm_count": "132"}, "'sm_count' is not an integer or null"),
        ({"sources": "0" * 64}, "stale: made by other kernel sources"),
        ({"table": "0" * 64}, "stale: made with another tuning table"),
        ({"block": 2048}, "grid or block out of range"),
        ({"num_ctas": 17}, "'num_ctas' is not a cluster size"),
        ({"cooperative": 1}, "'cooperative' is not true or false"),
        ({"workspace": {"chunks": 0}}, "no chunk count"),
        ({"workspace": {"chunks": 1025}}, "no chunk count of 1 to 1024"),
        ({"workspace": {"chunks": 4, "slots": {"stats_ptr": 16}}}, "does not name the slots"),
        ({"workspace": {"chunks": 4, "slots": {"counter_ptr": 16, "control_ptr": 24}}}, "does not name the slots"),
        ({"workspace": {"chunks": 4, "slots": {**WORKSPACE_AT_16, "other_ptr": 40}}}, "does not name the slots"),
        ({"workspace": {"chunks": 4, "slots": WORKSPACE_AT_16}}, "not 8-byte parameters"),
        ({"grid": [0, 1, 1]}, "grid or block out of range"),
        ({"shared": -1}, "'shared' is not a non-negative integer"),
        ({"offsets": [0, 8, 16, 20, 24, 40]}, "a parameter ends past the blob"),
        ({"blob": "zz"}, "'blob' is not hex"),
        ({"blob": "00"}, "parameter blob out of range"),
        ({"x_slots": [16]}, "pointer slots are not 8-byte parameters"),
        ({"y_slots": [3]}, "pointer slots are not 8-byte parameters"),
        ({"x_slots": []}, "pointer slots are not 8-byte parameters"),
        ({"function": "a b"}, "function name or cubin digest missing"),
        ({"cubin": "abc"}, "function name or cubin digest missing"),
    ],
)
def test_a_record_that_does_not_fit_says_why(change, says):
    problem = check(valid_record(**change))
    assert problem is not None and says in problem


def test_a_record_without_an_sm_count_field_is_refused():
    """null (a planned record) fits any SM count; a missing field is a broken record, not a planned one."""
    record = valid_record()
    del record["sm_count"]
    assert check(record) == "field 'sm_count' is not an integer or null"
    assert check(valid_record(sm_count=None)) is None


def test_the_table_digest_follows_the_table_auto_reads(tmp_path, monkeypatch):
    from blockscope.kernels import auto

    monkeypatch.setenv("BLOCKSCOPE_CACHE_DIR", str(tmp_path))
    shipped = launches.table_digest(H200.name)
    made_before = valid_record()
    assert tables.table_path(H200.name) == auto.SHIPPED_DIR / "nvidia-h200.json"
    own = tmp_path / "autotune" / "nvidia-h200.json"  # a user's retune takes precedence: old records are stale
    own.parent.mkdir()
    own.write_text('{"format": 1, "entries": []}')
    assert launches.table_digest(H200.name) != shipped
    assert check(made_before) == "stale: made with another tuning table"
    assert launches.table_digest("Some Other GPU") == "none"


def test_a_split_row_record_may_have_as_many_chunks_as_splitrow():
    from blockscope.kernels import splitrow

    assert launches.WORKSPACE_MAX_CHUNKS == splitrow.MAX_CHUNKS
    record = valid_record(
        offsets=[0, 8, 16, 24, 32, 40, 44, 48],
        sizes=[8, 8, 8, 8, 8, 4, 4, 8],
        blob=bytes(56).hex(),
        workspace={
            "chunks": 128,
            "zero_counters": True,
            "slots": {"stats_ptr": 16, "counter_ptr": 24, "control_ptr": 32},
        },
    )
    assert check(record) is None
    from blockscope.kernels import staged_split

    assert staged_split.MAX_CHUNKS <= launches.WORKSPACE_MAX_CHUNKS
    record["workspace"]["slots"] = {"stats_ptr": 16, "control_ptr": 24}  # staged_split's: no counters
    assert check(record) is None


def test_cluster_launches_get_cuda_launch_config_layout():
    """cuLaunchKernelEx's structs as cuda.h lays them out (x86-64): CUlaunchAttribute 72 bytes, CUlaunchConfig 56
    with the stream at 32; a record of 4-program clusters launches 4 x its grid along x with the cluster attribute."""
    import ctypes

    assert ctypes.sizeof(launches._LaunchAttribute) == 72
    assert launches._LaunchConfig.stream.offset == 32 and ctypes.sizeof(launches._LaunchConfig) == 56
    entry = launches._Entry(valid_record(num_ctas=4, grid=[300, 1, 1], shared=70000), 1, 2, 0, 3)
    assert list(entry.config.grid) == [1200, 1, 1] and list(entry.config.block) == [128, 1, 1]
    assert entry.config.shared == 70000 and entry.config.count == 2
    assert entry.attributes[0].id == 4 and list(entry.attributes[0].value[:3]) == [4, 1, 1]
    assert entry.attributes[1].id == 5 and entry.attributes[1].value[0] == 1
    cooperative = launches._Entry(valid_record(cooperative=True), 1, 2, 0, 3)
    assert cooperative.config.count == 1 and cooperative.attributes[0].id == 2 and cooperative.attributes[0].value[0]
    assert list(cooperative.config.grid) == [1024, 1, 1]
    plain = launches._Entry(valid_record(), 1, 2, 0, 3)
    assert plain.config is None and len(plain.params) == 6
    assert [p - ctypes.addressof(plain.storage) for p in plain.params] == [0, 8, 16, 20, 24, 32]


def test_write_is_atomic_idempotent_and_bounded(tmp_path, monkeypatch):
    record = valid_record()
    path = launches.write(tmp_path, record, CUBIN)
    assert path == tmp_path / "fp16-4096x1000.json"
    assert json.loads(path.read_text()) == record
    assert (tmp_path / "cubin" / f"{record['cubin']}.cubin").read_bytes() == CUBIN
    before = path.stat().st_mtime_ns
    assert launches.write(tmp_path, record, CUBIN) == path and path.stat().st_mtime_ns == before  # not rewritten
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]
    monkeypatch.setattr(launches, "MAX_RECORDS", 1)
    assert launches.write(tmp_path, valid_record(n_rows=8), CUBIN) is None  # full: nothing new
    assert launches.write(tmp_path, record, CUBIN) == path  # an existing one may still be replaced


def test_reads_are_bounded_and_cubins_checked(tmp_path):
    assert launches.read_record(tmp_path / "missing.json") is None
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (launches.MAX_RECORD_BYTES + 1))
    with pytest.raises(ValueError, match="larger than"):
        launches.read_record(big)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError):
        launches.read_record(bad)
    digest = hashlib.sha256(CUBIN).hexdigest()
    (tmp_path / "cubin").mkdir()
    (tmp_path / "cubin" / f"{digest}.cubin").write_bytes(CUBIN)
    assert launches.read_cubin(tmp_path, digest) == CUBIN
    (tmp_path / "cubin" / f"{digest}.cubin").write_bytes(CUBIN[:-1])  # truncated
    with pytest.raises(ValueError, match="sha256 differs"):
        launches.read_cubin(tmp_path, digest)
    with pytest.raises(ValueError, match="cannot read"):
        launches.read_cubin(tmp_path, "f" * 64)


class _FakeCudaTensor:
    """What _load reads of an input (shape, dtype, device index)."""

    def __init__(self, shape, dtype=torch.float16):
        self.shape, self.dtype = torch.Size(shape), dtype
        self.device = torch.device("cpu")

    def dim(self):
        return len(self.shape)

    def numel(self):
        return self.shape.numel()


@pytest.fixture
def store(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv(aot.STORE_ENV, str(tmp_path))
    monkeypatch.setattr(launches.Device, "of", staticmethod(lambda index: H200))
    monkeypatch.setattr(launches, "_REPORTED", set())
    launches.clear()
    yield tmp_path / launches.FOLDER / "nvidia-h200"
    launches.clear()


def test_lookup_takes_a_valid_record_and_falls_back_on_anything_else(store, monkeypatch):
    loaded = []
    monkeypatch.setattr(launches, "_load_module", lambda record, cubin, device: loaded.append(cubin) or "entry")
    x = _FakeCudaTensor((8, 512, 1000))  # any contiguous shape of 4096 rows x 1000
    assert launches._load(x) is False  # no record: auto's own path, silently
    launches.write(store, valid_record(), CUBIN)
    assert launches._load(x) == "entry" and loaded == [CUBIN]
    launches.write(store, valid_record(sources="1" * 64), CUBIN)  # stale: skipped without a word
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert launches._load(x) is False
    launches.write(store, valid_record(variant="torch"), None)
    assert launches._load(x) == "torch"
    (store / "fp16-4096x1000.json").write_text('{"format": 1, "dtype": "fp16"')  # truncated by a kill
    with pytest.warns(RuntimeWarning, match="launch record: .*fp16-4096x1000.json: Expecting.*taking auto's own path"):
        assert launches._load(x) is False
    launches.write(store, valid_record(), CUBIN)
    (store / "cubin" / f"{hashlib.sha256(CUBIN).hexdigest()}.cubin").write_bytes(b"\x7fELF garbage")
    with pytest.warns(RuntimeWarning, match="sha256 differs"):
        assert launches._load(x) is False


def test_records_are_off_with_the_store(store, monkeypatch):
    monkeypatch.setenv(aot.STORE_ENV, "0")
    assert not launches.enabled() and launches.records_dir("NVIDIA H200") is None
    assert launches._load(_FakeCudaTensor((4096, 1000))) is False


def test_run_declines_what_is_not_a_plain_cuda_tensor():
    assert launches.run(torch.randn(4, 8)) is None  # a CPU tensor: auto's own path (the interpreter here)
    assert launches.run(torch.randn(4, 8, requires_grad=True)) is None


def test_auto_on_the_cpu_never_writes_records(store):
    from blockscope import kernels

    x = torch.randn(4, 64)
    torch.testing.assert_close(kernels.softmax(x, variant="auto"), torch.softmax(x, dim=-1))
    assert not store.exists()


def test_coldstart_children_never_share_the_users_store(tmp_path, monkeypatch):
    env = coldstart.child_env(tmp_path, "cuda")
    assert env[aot.STORE_ENV] == str(tmp_path / "kernels")
    user_store = tmp_path / "user-store"
    user_store.mkdir()
    (user_store / "marker").write_text("x")
    seen = []

    def runner(backend, n_rows, n_cols, dtype, device, root, timeout_s, extra_env=None):
        if extra_env:
            copy = Path(extra_env[aot.STORE_ENV])
            assert copy != user_store and copy.is_relative_to(root) and (copy / "marker").is_file()
            (copy / "written-by-child").write_text("y")
        seen.append(extra_env)
        return coldstart.Sample(phases={"first_call": 0.1})

    coldstart.measure(["auto"], [(4, 8)], reps=1, device="cpu", runner=runner, store=user_store)
    assert len(seen) == 3 and seen[2] is not None
    assert sorted(p.name for p in user_store.iterdir()) == ["marker"]  # the user's store is untouched


@pytest.mark.parametrize("command", ["warm", "package"])
def test_warm_record_needs_a_gpu_of_the_arch(command, tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "profiling", command, "--arch", "sm_90", "--record", "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    if torch.cuda.is_available():
        pytest.skip("a GPU is here")
    assert result.returncode == 2 and "--record needs a CUDA GPU" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "o").exists()  # refused before compiling anything


# ---------------------------------------------------------------- GPU: record in one process, replay in another

CHILD = r"""
import json, sys, time, torch
torch.zeros(1, device="cuda"); torch.cuda.synchronize()
from blockscope import kernels
out = []
for dtype, n_rows, n_cols in json.loads(sys.argv[1]):
    x = torch.randn(n_rows, n_cols, device="cuda", dtype=getattr(torch, dtype))
    torch.cuda.synchronize()
    t = time.perf_counter()
    y = kernels.softmax(x, variant="auto")
    torch.cuda.synchronize()
    first = time.perf_counter() - t
    error = float((y.double() - torch.softmax(x.double(), -1)).abs().max())
    out.append({"first_s": first, "error": error, "triton": "triton" in sys.modules})
from blockscope.kernels import triton_startup
out[0].update(startup=triton_startup.started(), startup_error=triton_startup.error())
print("RESULT " + json.dumps(out))
"""


def run_child(shapes, store: Path) -> list[dict]:
    env = {**os.environ, aot.STORE_ENV: str(store), "BLOCKSCOPE_NATIVE_AUTOBUILD": "0"}
    result = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(shapes)],
        capture_output=True,
        text=True,
        env=env,
        cwd=Path(__file__).resolve().parent.parent,
        timeout=600,
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, result.stderr[-2000:]
    return json.loads(lines[-1][len("RESULT ") :])


def table_shapes(count_per_variant: int = 1) -> list[list]:
    from blockscope.kernels import auto

    name = torch.cuda.get_device_name()
    table = auto.load_table(name)
    if table is None:
        pytest.skip(f"no tuning table for {name}")
    picked: dict[str, list] = {}
    for entry in table["entries"]:
        if entry["n_rows"] * entry["n_cols"] <= 2**28:
            picked.setdefault(entry["variant"], []).append(
                [
                    "float16" if entry["dtype"] == "fp16" else "bfloat16" if entry["dtype"] == "bf16" else "float32",
                    entry["n_rows"],
                    entry["n_cols"],
                ]
            )
    return [shape for shapes in picked.values() for shape in shapes[:count_per_variant]]


@pytest.mark.gpu
def test_gpu_a_fresh_process_replays_recorded_launches_without_triton(tmp_path):
    shapes = table_shapes()
    first = run_child(shapes, tmp_path)  # records every recordable launch
    assert all(r["error"] < 2e-3 for r in first)
    assert first[0]["startup"] and first[0]["startup_error"] is None  # no record: Triton started on a thread
    folder = next((tmp_path / launches.FOLDER).iterdir())
    recorded = {p.name for p in folder.glob("*.json")}
    assert recorded, "no launch was recorded"
    names = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}
    replayable = [s for s in shapes if f"{names[s[0]]}-{s[1]}x{s[2]}.json" in recorded]
    assert len(replayable) == len(shapes), (shapes, recorded)
    again = run_child(replayable, tmp_path)  # a fresh process: every call from its record
    for shape, result in zip(replayable, again, strict=True):
        assert result["error"] < 2e-3 and not result["triton"], shape
    assert not again[0]["startup"]  # every call had its record: nothing of Triton started


@pytest.mark.gpu
def test_gpu_planned_records_are_the_launched_ones_and_replay_without_triton(tmp_path):
    """Every table shape: the record warm plans without a GPU (profiling/measure/warm.py's plan_records) holds the
    launch auto makes (the same cubin, function, block, shared memory, cluster, cooperative flag, parameter blob and
    slots, workspace; its resident grid resolved at load = the launched grid); a fresh process replays them."""
    import shutil

    from blockscope.profiling.measure import warm

    name = torch.cuda.get_device_name()
    table_file = tables.table_path(name)
    if table_file is None:
        pytest.skip(f"no tuning table for {name}")
    major, minor = torch.cuda.get_device_capability()
    arch = f"sm_{major}{minor}"
    planned_root, launched_root = tmp_path / "planned", tmp_path / "launched"
    items, _ = warm.table_items(json.loads(table_file.read_text()), backward=False)
    assert not warm.warm(arch, planned_root, items=items).failed
    shutil.copytree(planned_root, launched_root)  # the same compiled kernels, before any record
    planned = warm.plan_records(arch, planned_root, table_file=table_file)
    assert not planned.missing, planned.missing
    launched = warm.record_launches(launched_root, max_bytes=2 * 2**30)
    compared = 0
    same = ("function", "block", "shared", "num_ctas", "cooperative", "blob", "offsets", "sizes", "x_slots", "y_slots")
    same += ("cubin", "workspace")
    for path in sorted(launched.folder.glob("*.json")):
        made = json.loads(path.read_text())
        plan = json.loads((planned.folder / path.name).read_text())
        assert plan["variant"] == made["variant"], path.name
        if made["variant"] == "torch":
            continue
        assert {k: plan.get(k) for k in same} == {k: made.get(k) for k in same}, path.name
        if plan.get("resident"):
            cubin = launches.read_cubin(planned.folder, plan["cubin"])
            entry = launches._load_module(plan, cubin, torch.cuda.current_device())
            assert list(entry.grid) == made["grid"], path.name
        else:
            assert plan["grid"] == made["grid"], path.name
        compared += 1
    assert compared >= launched.recorded - launched.torch_choices > 100
    shapes = table_shapes()
    launches.clear()
    replayed = run_child(shapes, planned_root)
    assert all(r["error"] < 2e-3 and not r["triton"] for r in replayed), replayed


@pytest.mark.gpu
def test_gpu_a_corrupt_cubin_falls_back_to_auto(tmp_path):
    shapes = table_shapes()[:1]
    run_child(shapes, tmp_path)
    for cubin in (tmp_path / launches.FOLDER).rglob("*.cubin"):
        cubin.write_bytes(b"\x7fELF" + b"\0" * 64)
    result = run_child(shapes, tmp_path)[0]
    assert result["error"] < 2e-3 and result["triton"]  # auto's own path, correct


def test_auto_records_replayable_and_split_row_launches_only(monkeypatch):
    """auto's first contiguous call saves a record of its one launch for replayable variants and for splitrow and
    staged_split (their workspace is filled by the record's replay), never for other variants (a torch op the record
    would miss)."""
    from blockscope.kernels import _common, auto

    saved = []
    monkeypatch.setattr(launches, "save", lambda variant, tunables, launch, x, y: saved.append(variant))
    monkeypatch.setattr(auto, "_register_native", lambda *a: False)

    def launcher(x, **tunables):
        if _common.RECORDERS:  # what run_compiled reports to an open recording
            _common.RECORDERS[-1].append(("launcher", (1, 1, 1), 0, (4, 1, 0), [x], None))
        return torch.softmax(x, -1)

    x = torch.randn(4, 8)
    for variant, replayable, expected in [
        ("warprows", True, ["warprows"]),
        ("splitrow", False, ["splitrow"]),
        ("staged_split", False, ["staged_split"]),
        ("staged", False, []),
        ("", True, []),
    ]:
        saved.clear()
        seen = auto._Seen(launcher, {}, None, replayable, variant)
        torch.testing.assert_close(seen.launch(x), torch.softmax(x, -1))
        seen.launch(x)  # recorded once
        assert saved == expected, variant


def test_native_registration_starts_its_build_off_the_callers_thread(monkeypatch):
    """A record's second call hands it to the native module; the first native.load() of the process (which may
    start a compiler) runs on a thread, later calls register once it is there."""
    import threading

    started = threading.Event()
    release = threading.Event()
    calls = []

    class Module:
        def register(self, *args):
            calls.append(args[0])

        def run(self, x):
            return None

    def load():
        started.set()
        release.wait(5)
        return Module()

    monkeypatch.setattr(launches, "_NATIVE_STARTED", [])
    monkeypatch.setattr(launches, "NATIVE_RUN", None)
    monkeypatch.setattr(launches.native, "load", load)
    entry = launches._Entry(valid_record(), 1, 2, 0, 3)
    launches._register_native(entry, "x")  # starts the thread, returns at once
    assert started.wait(5) and not entry.native and calls == []
    launches._register_native(entry, "x")  # the load still runs: nothing yet
    assert calls == []
    release.set()
    launches._NATIVE_STARTED[0].join(5)
    launches._register_native(entry, "x")
    assert calls == ["x"] and entry.native and launches.NATIVE_RUN is not None
