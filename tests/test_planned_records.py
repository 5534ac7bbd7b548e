"""Launch records planned without a GPU (profiling/measure/warm.py's plan_records, run by `warm` and `package`).

On the CPU: compile a few table entries offline (one per launch form: plain, cluster, split-row with and without
counters, a torch choice), plan their records, and check each field against the plan and the compiled kernel: the
parameters decoded from the blob, the cluster grid, the resident grid left to the loader, the workspace slots; that
the loader's checks accept them on any SM count and resolve the resident grid as the launchers do; and what is
refused. tests/test_launches.py's GPU test compares planned records with launched ones at every table shape.
"""

from __future__ import annotations

import ctypes
import json
import struct
from pathlib import Path

import pytest
import torch

from blockscope.kernels import aot, get_variant, launches
from blockscope.kernels._common import dtype_from_name
from blockscope.profiling.cli.main import main
from blockscope.profiling.measure import warm

ARCH = "sm_90"
ENTRIES = [  # one of each launch form in the shipped H200 table
    {"variant": "warprows", "dtype": "bf16", "n_rows": 100000, "n_cols": 8, "tunables": {"num_warps": 8}},
    {"variant": "teaching", "dtype": "fp16", "n_rows": 4096, "n_cols": 513, "tunables": {"num_warps": 1}},
    {"variant": "staged", "dtype": "bf16", "n_rows": 4096, "n_cols": 24000, "tunables": {"cluster": 2, "num_warps": 8}},
    {
        "variant": "splitrow",
        "dtype": "bf16",
        "n_rows": 4096,
        "n_cols": 32767,
        "tunables": {"chunk": 2048, "counter": 0, "num_warps": 2, "prefetch": 1},
    },
    {"variant": "staged_split", "dtype": "fp32", "n_rows": 4096, "n_cols": 262143, "tunables": {"chunks": 16}},
    {"variant": "torch", "dtype": "fp32", "n_rows": 4096, "n_cols": 129, "tunables": {}},
]
H200 = launches.Device("NVIDIA H200", 90, 132)


@pytest.fixture(scope="module")
def planned(tmp_path_factory) -> tuple[Path, warm.RecordReport, str]:
    root = tmp_path_factory.mktemp("store")
    table = {"format": 1, "gpu": "NVIDIA H200", "compute_capability": "9.0", "entries": ENTRIES}
    table_file = root / "nvidia-h200.json"
    table_file.write_text(json.dumps(table))
    items = [
        warm.forward_item(e["variant"], e["dtype"], e["n_rows"], e["n_cols"], e["tunables"])
        for e in ENTRIES
        if e["variant"] != "torch"
    ]
    compiled = warm.warm(ARCH, root, items=items, workers=2)
    assert not compiled.failed, compiled.failed
    report = warm.plan_records(ARCH, root, table_file=table_file)
    import hashlib

    return root, report, hashlib.sha256(table_file.read_bytes()).hexdigest()


def record_of(planned, entry: dict) -> dict:
    root, report, _ = planned
    name = launches.record_name(dtype_from_name(entry["dtype"]), entry["n_rows"], entry["n_cols"])
    return json.loads((report.folder / name).read_text())


def values(record: dict) -> list[int]:
    """The blob's parameters, each as the unsigned integer its size holds."""
    blob = bytes.fromhex(record["blob"])
    formats = {4: "I", 8: "Q"}
    return [struct.unpack_from(formats[s], blob, o)[0] for o, s in zip(record["offsets"], record["sizes"], strict=True)]


def test_every_entry_is_planned_into_the_gpu_folder(planned):
    root, report, _ = planned
    assert report.recorded == len(ENTRIES) and report.torch_choices == 1 and not report.missing
    assert report.folder == root / launches.FOLDER / "nvidia-h200" and report.how == "planned"
    assert "6 launch records planned (1 of them torch.softmax)" in report.summary()


def test_a_plain_launch_takes_the_plan_and_the_compiled_kernel(planned):
    entry = ENTRIES[0]
    record = record_of(planned, entry)
    plan = get_variant("warprows").plan(100000, 8, torch.bfloat16, num_warps=8)
    assert record["function"] == "row_softmax_warprows_kernel" and record["sm_count"] is None
    assert record["grid"] == [plan.grid[0], 1, 1] and record["block"] == 256 and record["num_ctas"] == 1
    assert record["y_slots"] == [0] and record["x_slots"] == [8]  # output_ptr, input_ptr
    assert values(record) == [0, 0, 8, 8, 100000, 8, 0, 0]  # y, x, strides N and N, R, N, two scratch pointers
    assert "resident" not in record and "workspace" not in record and not record["cooperative"]


def test_a_cluster_launch_counts_clusters_and_adds_the_exchange_buffer(planned):
    record = record_of(planned, ENTRIES[2])
    plan = get_variant("staged").plan(4096, 24000, torch.bfloat16, cluster=2, num_warps=8)
    assert record["num_ctas"] == 2 and record["grid"] == [plan.grid[0] // 2, 1, 1] == [4096, 1, 1]
    root, _, _ = planned
    item = warm.forward_item("staged", "bf16", 4096, 24000, {"cluster": 2, "num_warps": 8})
    folder = aot.entry_dir(aot.store_dir(ARCH, root), item.material(ARCH))
    compiled_shared = json.loads((folder / "row_softmax_staged_kernel.json").read_text())["shared"]
    assert record["shared"] == plan.shared_bytes(compiled_shared) > compiled_shared


@pytest.mark.parametrize(
    ("index", "slots"), [(3, {"stats_ptr", "counter_ptr", "control_ptr"}), (4, {"stats_ptr", "control_ptr"})]
)
def test_split_row_launches_leave_the_grid_to_the_loader_and_name_their_workspace(planned, index, slots):
    entry = ENTRIES[index]
    record = record_of(planned, entry)
    chunks = (
        get_variant(entry["variant"])
        .plan(entry["n_rows"], entry["n_cols"], dtype_from_name(entry["dtype"]), **entry["tunables"])
        .constexprs["CHUNKS"]
    )
    assert record["resident"] == {"chunks": chunks} and record["grid"] == [chunks, 1, 1]
    assert record["workspace"]["chunks"] == chunks and set(record["workspace"]["slots"]) == slots
    assert record["cooperative"] is (chunks > 1)
    assert launches.check_record(record, H200, dtype_from_name(entry["dtype"]), entry["n_rows"], entry["n_cols"]) in (
        None,
        "stale: made with another tuning table",
    )


def test_the_loader_accepts_planned_records_on_any_sm_count(planned, monkeypatch):
    _, _, digest = planned
    monkeypatch.setattr(launches, "table_digest", lambda name: digest)
    for entry in ENTRIES:
        record = record_of(planned, entry)
        dtype = dtype_from_name(entry["dtype"])
        for device in (H200, launches.Device("NVIDIA H200", 90, 66)):  # a MIG slice has fewer SMs
            assert launches.check_record(record, device, dtype, entry["n_rows"], entry["n_cols"]) is None, entry
        problem = launches.check_record(record, launches.Device("NVIDIA H100", 90, 132), dtype, 4096, entry["n_cols"])
        assert problem is not None and problem.startswith(("made on NVIDIA H200", "made for"))


@pytest.mark.parametrize(
    ("resident", "says"), [({"chunks": 0}, "no chunk count"), ({}, "no chunk count"), ([4], "no chunk count")]
)
def test_a_malformed_resident_field_is_refused(planned, monkeypatch, resident, says):
    _, _, digest = planned
    monkeypatch.setattr(launches, "table_digest", lambda name: digest)
    record = {**record_of(planned, ENTRIES[3]), "resident": resident}
    assert says in launches.check_record(record, H200, torch.bfloat16, 4096, 32767)


@pytest.mark.parametrize(("blocks", "n_rows", "grid"), [(2, 4096, [(2 * 132 // 17) * 17, 1, 1]), (2, 3, [51, 1, 1])])
def test_the_resident_grid_is_resolved_as_the_launchers_do(monkeypatch, blocks, n_rows, grid):
    """rows in flight = SMs x blocks per SM // chunks, at most R; times chunks programs."""

    class Driver:
        def occupancy(self, result, function, block, shared):
            ctypes.cast(result, ctypes.POINTER(ctypes.c_int)).contents.value = blocks
            return 0

    class Properties:
        multi_processor_count = 132

    monkeypatch.setattr(launches, "driver", Driver)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: Properties())
    record = {"n_rows": n_rows, "block": 64, "shared": 8, "resident": {"chunks": 17}}
    assert launches._resident_grid(ctypes.c_void_p(1), record, 0) == grid
    with pytest.raises(RuntimeError, match="265 programs do not fit on this GPU at once .264 resident."):
        launches._resident_grid(ctypes.c_void_p(1), {**record, "resident": {"chunks": 265}}, 0)


def test_an_entry_whose_kernel_is_not_in_the_store_is_left_out(planned, tmp_path):
    root, _, _ = planned
    table = {"format": 1, "gpu": "NVIDIA H200", "compute_capability": "9.0", "entries": ENTRIES[:1]}
    table_file = tmp_path / "t.json"
    table_file.write_text(json.dumps(table))
    report = warm.plan_records(ARCH, tmp_path / "empty", table_file=table_file)
    assert report.recorded == 0 and "not in the store" in report.missing["bf16 100000x8"]


def test_a_persistent_entry_is_left_to_be_recorded_on_use(tmp_path):
    """persistent's grid is SMs x blocks per SM with no chunk count: a planned record cannot say it, so none is
    written (the shape is recorded at its first launch)."""
    entry = {"variant": "persistent", "dtype": "fp16", "n_rows": 4096, "n_cols": 1024, "tunables": {}}
    table_file = tmp_path / "t.json"
    table = {"format": 1, "gpu": "NVIDIA H200", "compute_capability": "9.0", "entries": [entry]}
    table_file.write_text(json.dumps(table))
    report = warm.plan_records(ARCH, tmp_path / "store", table_file=table_file)
    assert report.recorded == 0 and "a grid resolved at launch" in report.missing["fp16 4096x1024"]


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ('{"format": 1, "gpu": "../../../etc", "compute_capability": "9.0", "entries": []}', "names the GPU"),
        ('{"format": 1, "gpu": "a/b", "compute_capability": "9.0", "entries": []}', "names the GPU"),
        ('{"format": 2, "entries": []}', "not a Blockscope tuning table"),
        ("[1, 2]", "not a Blockscope tuning table"),
        ("{not json", "not a Blockscope tuning table"),
        (" " * (warm.MAX_TABLE_BYTES + 1), "at most"),
    ],
)
def test_a_hostile_table_writes_nothing_outside_the_store(tmp_path, content, says):
    table_file = tmp_path / "t.json"
    table_file.write_text(content)
    with pytest.raises(ValueError, match=says):
        warm.plan_records(ARCH, tmp_path / "store", table_file=table_file)
    assert not (tmp_path / "store").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["t.json"]


def test_malformed_entries_are_left_out_one_by_one(tmp_path):
    entries = [[1], {"variant": "warprows"}, {"variant": "teaching", "dtype": "fp64", "n_rows": 4, "n_cols": 8}]
    table = {"format": 1, "gpu": "NVIDIA H200", "compute_capability": "9.0", "entries": entries}
    table_file = tmp_path / "t.json"
    table_file.write_text(json.dumps(table))
    report = warm.plan_records(ARCH, tmp_path / "store", table_file=table_file)
    assert report.recorded == 0 and set(report.missing) == {"entry 0", "entry 1", "fp64 4x8"}


def test_a_table_of_another_arch_plans_nothing(tmp_path):
    table_file = tmp_path / "t.json"
    table_file.write_text(json.dumps({"format": 1, "gpu": "NVIDIA A100", "compute_capability": "8.0", "entries": []}))
    with pytest.raises(ValueError, match="NVIDIA A100 .compute capability 8.0., not sm_90; allowed: --arch sm_80"):
        warm.plan_records(ARCH, tmp_path, table_file=table_file)
    assert not (tmp_path / launches.FOLDER).exists()


def test_cli_warm_plans_the_records_after_compiling(planned, monkeypatch, capsys):
    root, _, _ = planned
    table_file = root / "nvidia-h200.json"
    items = [
        warm.forward_item(e["variant"], e["dtype"], e["n_rows"], e["n_cols"], e["tunables"])
        for e in ENTRIES
        if e["variant"] != "torch"
    ]
    monkeypatch.setattr(warm, "table_items", lambda backward=True: (items, {}))
    planner = warm.plan_records
    monkeypatch.setattr(warm, "plan_records", lambda arch, out: planner(arch, out, table_file=table_file))
    assert main(["warm", "--arch", "sm_90", "--out", str(root)]) == 0
    out = capsys.readouterr().out
    assert "0 compiled, 5 cached" in out and "6 launch records planned (1 of them torch.softmax)" in out
