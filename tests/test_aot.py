"""Ahead-of-time kernel store (kernels/aot.py, profiling/measure/warm.py, `python -m profiling warm`).

On the CPU: compile for sm_90 offline, check the store's contents, that a second run finds them cached, that the key
a launch computes from its real arguments is the one `warm` stored, and that every bad store (corrupt, truncated,
foreign-arch, other Triton, changed source, unwritable) is reported in one line and left to the JIT. On a GPU
(@pytest.mark.gpu): a launch loads the stored cubin and never JIT-compiles.
"""

from __future__ import annotations

import json
import os
import shutil
import warnings
from pathlib import Path

import pytest
import torch

from blockscope.kernels import _common, aot
from blockscope.profiling.cli.main import main
from blockscope.profiling.measure import warm

ARCH = "sm_90"


def small_items() -> list[warm.WarmItem]:
    return [warm.forward_item("teaching", "fp32", 64, 256), warm.backward_item("fp32", 64, 256)]


@pytest.fixture(autouse=True)
def fresh_reports():
    aot._REPORTED.clear()
    aot._MANIFESTS.clear()
    yield
    aot._REPORTED.clear()


@pytest.fixture(scope="module")
def warmed(tmp_path_factory) -> tuple[Path, warm.WarmReport]:
    root = tmp_path_factory.mktemp("kernels")
    report = warm.warm(ARCH, root, items=small_items(), workers=2)
    return root, report


def copy_store(warmed, tmp_path: Path) -> Path:
    root, report = warmed
    target = tmp_path / "root"
    shutil.copytree(root, target)
    return aot.store_dir(ARCH, target)


def teaching_material(arch: str = ARCH) -> tuple[object, dict]:
    item = small_items()[0]
    return item.kernel(), item.material(arch)


def load_quietly(store: Path, kernel, material) -> tuple[object, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = aot.load_entry(store, kernel, material)
    return compiled, [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]


# ---------------------------------------------------------------- warm: store contents


def test_warm_compiles_offline_into_a_store(warmed):
    root, report = warmed
    assert report.failed == {}
    assert (report.compiled, report.cached) == (2, 0)
    store = aot.store_dir(ARCH, root)
    assert store == root / aot.triton_version() / "sm_90"
    manifest = json.loads((store / aot.MANIFEST).read_text())
    assert manifest["triton"] == aot.triton_version() and manifest["arch"] == "sm_90"
    assert manifest["format"] == aot.FORMAT
    for item in small_items():
        kernel = item.kernel()
        assert manifest["kernels"][aot.kernel_name(kernel)] == aot.source_hash(kernel)
        folder = aot.entry_dir(store, item.material(ARCH))
        name = aot.kernel_name(kernel)
        assert sorted(p.name for p in folder.iterdir()) == sorted([aot.ENTRY, f"{name}.cubin", f"{name}.json"])
        assert (folder / f"{name}.cubin").read_bytes().startswith(aot.ELF_MAGIC)
        metadata = json.loads((folder / f"{name}.json").read_text())
        assert metadata["target"]["arch"] == 90 and metadata["name"] == name
        assert metadata["num_warps"] == item.num_warps
        assert aot.check_entry(folder, item.material(ARCH)) is None


def test_second_run_finds_everything_cached(warmed):
    root, _ = warmed
    again = warm.warm(ARCH, root, items=small_items(), workers=1)
    assert (again.compiled, again.cached, again.failed) == (0, 2, {})
    assert again.summary().startswith("0 compiled, 2 cached")


def test_cli_warm_reports_compiled_and_cached(warmed, tmp_path, monkeypatch, capsys):
    root, _ = warmed
    monkeypatch.setattr(warm, "table_items", lambda backward=True: (small_items(), {}))
    assert main(["warm", "--arch", "sm_90", "--out", str(root)]) == 0
    assert "0 compiled, 2 cached" in capsys.readouterr().out


def test_cli_warm_refuses_a_bad_arch(capsys):
    assert main(["warm", "--arch", "hopper"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "allowed: sm_<major><minor>" in err


def test_cli_warm_refuses_an_unwritable_store(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setattr(warm, "table_items", lambda backward=True: (small_items(), {}))
    assert main(["warm", "--arch", "sm_90", "--out", str(blocker)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not writable" in err and "allowed:" in err


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes into read-only folders")
def test_warm_into_a_read_only_store_is_refused(warmed, tmp_path):
    store = copy_store(warmed, tmp_path)
    store.chmod(0o555)
    try:
        with pytest.raises(ValueError, match="not writable"):
            warm.warm(ARCH, tmp_path / "root", items=small_items(), workers=1)
    finally:
        store.chmod(0o755)


def test_warm_into_a_read_only_store_is_refused_even_as_root(warmed, tmp_path, monkeypatch):
    """Root ignores folder permissions: the store's write probe failing stands for a read-only mount."""
    copy_store(warmed, tmp_path)
    real = Path.write_text

    def read_only(self, *args, **kwargs):
        if self.name.startswith(".probe-"):
            raise PermissionError(30, "Read-only file system", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", read_only)
    with pytest.raises(ValueError, match="not writable") as caught:
        warm.warm(ARCH, tmp_path / "root", items=small_items(), workers=1)
    assert "\n" not in str(caught.value) and "allowed:" in str(caught.value)


def test_an_unreadable_manifest_is_reported_once(warmed, tmp_path, monkeypatch):
    store = copy_store(warmed, tmp_path)
    real = Path.stat

    def unreadable(self, *args, **kwargs):
        if self.name == aot.MANIFEST:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *args, **kwargs)

    kernel, material = teaching_material()
    monkeypatch.setattr(Path, "stat", unreadable)
    compiled, reports = load_quietly(store, kernel, material)
    assert compiled is None
    only_report(reports, "unreadable (PermissionError)")


def test_a_read_only_store_still_loads(warmed, tmp_path):
    store = copy_store(warmed, tmp_path)
    for path in sorted(store.rglob("*"), reverse=True):
        path.chmod(0o555 if path.is_dir() else 0o444)
    store.chmod(0o555)
    try:
        kernel, material = teaching_material()
        compiled, reports = load_quietly(store, kernel, material)
        assert compiled is not None and reports == []
    finally:
        for path in [store, *store.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)


def test_default_store_location_and_override(monkeypatch, tmp_path):
    monkeypatch.delenv(aot.STORE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert aot.store_dir("sm_90") == tmp_path / "xdg" / "blockscope" / "kernels" / aot.triton_version() / "sm_90"
    monkeypatch.setenv(aot.STORE_ENV, str(tmp_path / "mine"))
    assert aot.store_dir("sm_90") == tmp_path / "mine" / aot.triton_version() / "sm_90"
    monkeypatch.setenv(aot.STORE_ENV, "off")
    assert aot.store_dir("sm_90") is None
    with pytest.raises(ValueError, match="allowed: sm_<major><minor>"):
        aot.parse_arch("90")


# ---------------------------------------------------------------- lookup


def test_a_stored_kernel_loads_without_compiling(warmed, monkeypatch):
    root, _ = warmed
    store = aot.store_dir(ARCH, root)
    kernel, material = teaching_material()
    import triton

    monkeypatch.setattr(triton, "compile", lambda *a, **k: pytest.fail("compiled instead of loading"))
    compiled, reports = load_quietly(store, kernel, material)
    assert reports == []
    name = material["kernel"]
    folder = aot.entry_dir(store, material)
    assert compiled.asm["cubin"] == (folder / f"{name}.cubin").read_bytes()
    assert compiled.metadata.target.arch == 90 and compiled.metadata.num_warps == material["num_warps"]
    assert compiled.hash == aot.entry_key(material)
    assert compiled.function is None  # handles load on the GPU, at the first launch


def capture_launch(monkeypatch, module, run) -> list[tuple]:
    """The (kernel, args, constexprs, num_warps, num_stages, options) a launcher passes to kernels._common.launch."""
    seen: list[tuple] = []

    def record(kernel, grid, args, constexprs, num_warps, num_stages=1, cooperative=False, options=None):
        seen.append((kernel, args, constexprs, num_warps, num_stages, options or {}))

    monkeypatch.setattr(module, "launch_kernel", record)
    run()
    return seen


@pytest.mark.parametrize(
    ("variant", "dtype_name", "n_rows", "n_cols", "tunables"),
    [
        ("teaching", "fp32", 64, 256, {}),
        ("teaching", "fp16", 33, 1000, {"num_warps": 8}),
        ("multirow", "bf16", 4096, 128, {}),
        ("multirow", "fp32", 1, 96, {}),
    ],
)
def test_launch_key_is_the_key_warm_stores(monkeypatch, variant, dtype_name, n_rows, n_cols, tunables):
    """What a live launch looks up (kinds of its real arguments) is what warm compiled for that shape."""
    from blockscope.kernels import get_variant, multirow, teaching
    from blockscope.kernels._common import dtype_from_name

    module = {"teaching": teaching, "multirow": multirow}[variant]
    x = torch.randn(n_rows, n_cols, dtype=dtype_from_name(dtype_name))
    seen = capture_launch(monkeypatch, module, lambda: get_variant(variant).launcher(x, **tunables))
    assert len(seen) == 1
    kernel, args, constexprs, num_warps, num_stages, options = seen[0]
    live = aot.key_material(
        kernel, tuple(aot.arg_kind(a) for a in args), constexprs, num_warps, num_stages, options, ARCH
    )
    assert warm.forward_item(variant, dtype_name, n_rows, n_cols, tunables).material(ARCH) == live


def test_backward_launch_key_is_the_key_warm_stores(monkeypatch):
    from blockscope.kernels import backward

    y = torch.softmax(torch.randn(48, 300), dim=-1)
    seen = capture_launch(monkeypatch, backward, lambda: backward.softmax_backward(y, torch.randn_like(y)))
    kernel, args, constexprs, num_warps, num_stages, options = seen[0]
    live = aot.key_material(
        kernel, tuple(aot.arg_kind(a) for a in args), constexprs, num_warps, num_stages, options, ARCH
    )
    assert warm.backward_item("fp32", 48, 300).material(ARCH) == live


def test_arg_kinds_follow_triton_specialization():
    x = torch.empty(64, dtype=torch.float16)
    assert aot.arg_kind(x) == "*fp16:16"
    assert aot.arg_kind(x[1:]) == "*fp16"  # 2 bytes past an aligned start
    assert [aot.arg_kind(v) for v in (1, 32, 33, 2**31, 2**40 + 1)] == ["1", "i32:16", "i32", "i64:16", "i64"]
    assert aot.arg_kind(1.5) is None and aot.arg_kind(True) is None
    assert aot.source_hash(small_items()[0].kernel()) == aot.source_hash(aot.jit_function(small_items()[0].kernel()))


def test_arg_kinds_agree_with_tritons_own_specialization():
    """kernels.aot.arg_kind says what Triton's JIT specializes on (its native specialize, as the launch uses it)."""
    libtriton = pytest.importorskip("triton._C.libtriton")
    from triton.backends.compiler import BaseBackend

    half = torch.empty(64, dtype=torch.float16)
    values = [half, half[1:], half[8:], torch.empty(4, dtype=torch.bfloat16), torch.empty(3, dtype=torch.int64)]
    values += [1, 0, 16, 32, 33, -16, 2**31 - 16, 2**31, 2**40 + 1]
    for value in values:
        kind, key = libtriton.native_specialize_impl(BaseBackend, value, False, True, True)[:2]
        expected = "1" if kind == "constexpr" else kind + (":16" if key == "D" else "")
        assert aot.arg_kind(value) == expected, value


def test_the_table_items_cover_forward_and_backward():
    items, skipped = warm.table_items()
    attrs = {item.attr for item in items}
    assert {"row_softmax_warprows_kernel", "row_softmax_kernel", "softmax_backward_row_kernel"} <= attrs
    assert len(items) == len(set(items))  # one per distinct specialization
    assert all(not why.startswith("ValueError") for why in skipped.values())


# ---------------------------------------------------------------- bad stores: one line, JIT fallback


def only_report(reports: list[str], *needles: str) -> None:
    assert len(reports) == 1, reports
    assert "\n" not in reports[0] and reports[0].endswith("JIT-compiling instead")
    for needle in needles:
        assert needle in reports[0], reports[0]


def test_corrupt_entry_json(warmed, tmp_path):
    store = copy_store(warmed, tmp_path)
    kernel, material = teaching_material()
    (aot.entry_dir(store, material) / aot.ENTRY).write_text("{not json")
    compiled, reports = load_quietly(store, kernel, material)
    assert compiled is None
    only_report(reports, "corrupt")


def test_truncated_cubin(warmed, tmp_path):
    store = copy_store(warmed, tmp_path)
    kernel, material = teaching_material()
    cubin = aot.entry_dir(store, material) / f"{material['kernel']}.cubin"
    cubin.write_bytes(cubin.read_bytes()[:100])
    compiled, reports = load_quietly(store, kernel, material)
    assert compiled is None
    only_report(reports, "truncated or corrupt")


def test_corrupt_cubin_bytes_same_length(warmed, tmp_path):
    store = copy_store(warmed, tmp_path)
    kernel, material = teaching_material()
    cubin = aot.entry_dir(store, material) / f"{material['kernel']}.cubin"
    data = bytearray(cubin.read_bytes())
    data[len(data) // 2] ^= 0xFF
    cubin.write_bytes(bytes(data))
    compiled, reports = load_quietly(store, kernel, material)
    assert compiled is None
    only_report(reports, "checksum")


def test_corrupt_metadata(warmed, tmp_path):
    store = copy_store(warmed, tmp_path)
    kernel, material = teaching_material()
    (aot.entry_dir(store, material) / f"{material['kernel']}.json").write_text("{}")
    compiled, reports = load_quietly(store, kernel, material)
    assert compiled is None
    only_report(reports, "corrupt")


def test_foreign_arch_entry_is_never_loaded(warmed, tmp_path):
    """An sm_90 entry copied where an sm_80 launch looks (and an sm_80 manifest beside it): refused."""
    root, _ = warmed
    kernel, material90 = teaching_material("sm_90")
    _, material80 = teaching_material("sm_80")
    store80 = aot.store_dir("sm_80", tmp_path)
    shutil.copytree(aot.entry_dir(aot.store_dir(ARCH, root), material90), aot.entry_dir(store80, material80))
    aot.write_manifest(store80, "sm_80", {material80["kernel"]: material80["source"]})
    compiled, reports = load_quietly(store80, kernel, material80)
    assert compiled is None
    only_report(reports, "compiled for other arguments", "arch")
    # and with its entry.json edited to claim sm_80: the metadata still says 90
    entry_file = aot.entry_dir(store80, material80) / aot.ENTRY
    entry = json.loads(entry_file.read_text())
    entry["material"] = material80
    entry_file.write_text(json.dumps(entry))
    aot._REPORTED.clear()
    compiled, reports = load_quietly(store80, kernel, material80)
    assert compiled is None
    only_report(reports, "built for cuda 90", "wanted cuda 80")


def test_store_of_another_triton_version(warmed, tmp_path):
    store = copy_store(warmed, tmp_path)
    manifest = json.loads((store / aot.MANIFEST).read_text())
    manifest["triton"] = "0.0.1"
    (store / aot.MANIFEST).write_text(json.dumps(manifest))
    kernel, material = teaching_material()
    compiled, reports = load_quietly(store, kernel, material)
    assert compiled is None
    only_report(reports, "Triton 0.0.1", f"this is Triton {aot.triton_version()}")


def test_another_triton_version_looks_in_another_folder(warmed, monkeypatch):
    root, _ = warmed
    monkeypatch.setattr(aot, "triton_version", lambda: "9.9.9")
    assert aot.store_dir(ARCH, root) == root / "9.9.9" / "sm_90"
    kernel, material = teaching_material()
    assert material["triton"] == "9.9.9"
    assert not aot.store_dir(ARCH, root).exists()  # nothing there: a plain miss, the JIT compiles


def test_store_for_another_arch_manifest(warmed, tmp_path):
    store = copy_store(warmed, tmp_path)
    kernel, material = teaching_material()
    manifest = json.loads((store / aot.MANIFEST).read_text())
    manifest["arch"] = "sm_80"
    (store / aot.MANIFEST).write_text(json.dumps(manifest))
    compiled, reports = load_quietly(store, kernel, material)
    assert compiled is None
    only_report(reports, "made for sm_80")


def test_changed_kernel_source_misses_and_says_so(warmed, tmp_path, monkeypatch):
    store = copy_store(warmed, tmp_path)
    kernel = small_items()[0].kernel()
    monkeypatch.setitem(aot._SOURCE_HASHES, aot.jit_function(kernel).fn, "0" * 64)
    material = small_items()[0].material(ARCH)
    assert material["source"] == "0" * 64
    compiled, reports = load_quietly(store, kernel, material)
    assert compiled is None
    only_report(reports, "changed since it was compiled ahead", "python -m profiling warm")


def test_warm_removes_entries_of_a_changed_source(warmed, tmp_path):
    store = copy_store(warmed, tmp_path)
    kernel, material = teaching_material()
    stale = dict(material, source="f" * 64)
    shutil.copytree(aot.entry_dir(store, material), aot.entry_dir(store, stale))
    entry_file = aot.entry_dir(store, stale) / aot.ENTRY
    entry = json.loads(entry_file.read_text())
    entry["material"] = stale
    entry_file.write_text(json.dumps(entry))
    report = warm.warm(ARCH, tmp_path / "root", items=small_items(), workers=1)
    assert (report.compiled, report.cached, report.removed) == (0, 2, 1)
    assert not aot.entry_dir(store, stale).exists()


def test_a_corrupt_entry_is_recompiled_by_warm(warmed, tmp_path):
    store = copy_store(warmed, tmp_path)
    kernel, material = teaching_material()
    cubin = aot.entry_dir(store, material) / f"{material['kernel']}.cubin"
    cubin.write_bytes(b"")
    report = warm.warm(ARCH, tmp_path / "root", items=small_items()[:1], workers=1)
    assert (report.compiled, report.cached, report.failed) == (1, 0, {})
    assert aot.check_entry(aot.entry_dir(store, material), material) is None


def test_missing_manifest_or_store_is_a_plain_miss(tmp_path):
    kernel, material = teaching_material()
    compiled, reports = load_quietly(tmp_path / "nothing", kernel, material)
    assert compiled is None and reports == []


def test_load_never_raises_and_reports_once(monkeypatch, tmp_path):
    monkeypatch.setenv(aot.STORE_ENV, str(tmp_path))

    def no_gpu(device=None):
        raise RuntimeError("no CUDA GPU\nsecond line")

    monkeypatch.setattr(torch.cuda, "get_device_capability", no_gpu)
    kernel = small_items()[0].kernel()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            assert aot.load(kernel, (torch.empty(4),), {}, 4, 1, {}, 0) is None
    messages = [str(w.message) for w in caught]
    only_report(messages, "lookup failed", "no CUDA GPU")


def test_arguments_warm_never_stores_are_a_quiet_miss(warmed, monkeypatch):
    root, _ = warmed
    monkeypatch.setenv(aot.STORE_ENV, str(root))
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    kernel = small_items()[0].kernel()
    x = torch.empty(4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert aot.load(kernel, (x, x, 1.5, 4), {}, 4, 1, {}, 0) is None  # a float argument
        assert aot.load(kernel, (x, x, 4, 4), {"SCALE": 0.5}, 4, 1, {}, 0) is None  # a float constexpr
    assert [str(w.message) for w in caught] == []


# ---------------------------------------------------------------- GPU: the launch loads the stored cubin


def gpu_arch() -> str:
    major, minor = torch.cuda.get_device_capability()
    return f"sm_{major}{minor}"


def record_loads(monkeypatch) -> list:
    """Every aot.load result of the launches that follow (None: a miss, the JIT compiled)."""
    results: list = []
    real = aot.load

    def load(*args, **kwargs):
        compiled = real(*args, **kwargs)
        results.append(compiled)
        return compiled

    monkeypatch.setattr(aot, "load", load)
    monkeypatch.setattr(_common, "_COMPILED", {})
    return results


@pytest.mark.gpu
@pytest.mark.parametrize("which", ["teaching", "backward"])
def test_gpu_launch_loads_the_stored_kernel(tmp_path, monkeypatch, which):
    from blockscope.kernels import softmax_backward, softmax_teaching

    arch = gpu_arch()
    item = (
        warm.forward_item("teaching", "fp32", 64, 256) if which == "teaching" else warm.backward_item("fp32", 64, 256)
    )
    report = warm.warm(arch, tmp_path, items=[item], workers=1)
    assert report.failed == {} and report.compiled == 1
    monkeypatch.setenv(aot.STORE_ENV, str(tmp_path))
    loads = record_loads(monkeypatch)
    kernel = item.kernel()
    monkeypatch.setattr(kernel, "warmup", lambda *a, **k: pytest.fail("JIT-compiled instead of loading the store"))
    x = torch.randn(64, 256, device="cuda")
    if which == "teaching":
        torch.testing.assert_close(softmax_teaching(x), torch.softmax(x, dim=-1))
    else:
        y, dy = torch.softmax(x, dim=-1), torch.randn_like(x)
        expected = y * (dy - (dy * y).sum(dim=-1, keepdim=True))
        torch.testing.assert_close(softmax_backward(y, dy), expected)
    torch.cuda.synchronize()
    assert [compiled.hash for compiled in loads] == [aot.entry_key(item.material(arch))]


@pytest.mark.gpu
def test_gpu_every_table_variant_launches_from_the_store(tmp_path, monkeypatch):
    """The first table entry of each variant: warm it, launch it, and the launch finds warm's kernel (the key a
    launch computes from its real arguments is the one warm stored, for the Gluon and cluster variants too)."""
    from blockscope.kernels import auto, dtype_from_name, get_variant

    arch = gpu_arch()
    firsts: dict[str, dict] = {}
    for entry in auto.load_table(None)["entries"]:
        if entry["variant"] != "torch":
            firsts.setdefault(entry["variant"], entry)
    items = {
        v: warm.forward_item(v, e["dtype"], e["n_rows"], e["n_cols"], e.get("tunables", {})) for v, e in firsts.items()
    }
    report = warm.warm(arch, tmp_path, items=list(items.values()))
    assert report.failed == {}
    monkeypatch.setenv(aot.STORE_ENV, str(tmp_path))
    missed = []
    for variant, entry in firsts.items():
        loads = record_loads(monkeypatch)
        x = torch.randn(entry["n_rows"], entry["n_cols"], device="cuda", dtype=dtype_from_name(entry["dtype"]))
        y = get_variant(variant).launcher(x, **entry.get("tunables", {}))
        torch.cuda.synchronize()
        torch.testing.assert_close(y.float(), torch.softmax(x.float(), dim=-1), atol=2e-3, rtol=2e-2)
        wanted = aot.entry_key(items[variant].material(arch))
        if wanted not in [getattr(compiled, "hash", None) for compiled in loads]:
            missed.append(variant)
    assert missed == []


# ---------------------------------------------------------------- packages


@pytest.fixture(scope="module")
def package(tmp_path_factory) -> Path:
    from blockscope.kernels import auto

    source = tmp_path_factory.mktemp("table") / "nvidia-h200.json"
    table = json.loads(sorted(auto.SHIPPED_DIR.glob("*.json"))[0].read_text())
    table["entries"] = [
        {"dtype": "fp32", "n_cols": 256, "n_rows": 64, "variant": "teaching", "tunables": {"num_warps": 4}},
        {"dtype": "fp32", "n_cols": 256, "n_rows": 64, "variant": "torch", "tunables": {}},
    ]
    source.write_text(json.dumps(table))
    folder = tmp_path_factory.mktemp("package") / "pkg"
    report = warm.build_package(ARCH, folder, table_path=source, backward=False, workers=1)
    assert report.problems == [] and report.warm.failed == {}
    return folder


def copy_package(package: Path, tmp_path: Path) -> Path:
    target = tmp_path / "pkg"
    shutil.copytree(package, target)
    return target


def test_package_holds_table_kernels_and_launch_metadata(package):
    listing = json.loads((package / aot.PACKAGE).read_text())
    assert listing["triton"] == aot.triton_version() and listing["arch"] == "sm_90"
    assert (package / listing["table"]).is_file() and listing["table"] == "tuned/nvidia-h200.json"
    assert [k["attr"] for k in listing["kernels"]] == ["row_softmax_kernel"]
    kernel = listing["kernels"][0]
    assert kernel["num_warps"] == 4 and kernel["constexprs"]["BLOCK_SIZE"] == 256
    assert isinstance(kernel["shared_bytes"], int)
    assert (package / kernel["entry"] / "row_softmax_kernel.cubin").read_bytes().startswith(aot.ELF_MAGIC)
    assert aot.check_package(package, load=True) == []
    record = json.loads((package / "kernels" / "launches" / "nvidia-h200" / "fp32-64x256.json").read_text())
    assert record["variant"] == "teaching" and record["function"] == "row_softmax_kernel"  # planned, first entry


def test_package_check_cli(package, capsys):
    assert main(["package", "--check", str(package)]) == 0
    assert capsys.readouterr().out.strip().endswith("usable")
    assert main(["package", "--arch", "sm_90"]) == 2
    assert "allowed:" in capsys.readouterr().err


def test_package_cli_builds_a_usable_folder(package, tmp_path, capsys):
    out = tmp_path / "cli-pkg"
    table = package / "tuned" / "nvidia-h200.json"
    assert main(["package", "--arch", "sm_90", "--out", str(out), "--table", str(table), "--no-backward"]) == 0
    printed = capsys.readouterr().out
    assert "1 compiled, 0 cached" in printed and printed.strip().endswith("usable")
    assert "1 launch records planned (0 of them torch.softmax), 1 not planned" in printed
    assert "not planned fp32 64x256 (torch): a second entry for this shape: auto takes the first" in printed
    assert aot.check_package(out, load=True) == []
    assert main(["package", "--arch", "sm_90", "--out", str(out), "--table", str(tmp_path / "none.json")]) == 2
    assert "allowed:" in capsys.readouterr().err


def test_use_package_points_auto_and_launches_at_it(package, monkeypatch):
    from blockscope.kernels import auto

    monkeypatch.setattr(auto, "PACKAGE_TABLE_DIRS", [])
    monkeypatch.setenv(aot.STORE_ENV, "elsewhere")
    listing = aot.use_package(package)
    assert listing["arch"] == "sm_90"
    assert os.environ[aot.STORE_ENV] == str(package.resolve() / "kernels")
    assert auto.load_table("NVIDIA H200")["entries"][0]["variant"] == "teaching"
    assert len(auto.load_table("NVIDIA H200")["entries"]) == 2  # the package's table, not the shipped one
    item = warm.forward_item("teaching", "fp32", 64, 256, {"num_warps": 4})
    kernel, material = item.kernel(), item.material(ARCH)
    compiled, reports = load_quietly(aot.store_dir(ARCH), kernel, material)
    assert compiled is not None and reports == []


@pytest.mark.parametrize("damage", ["table", "cubin", "triton", "listing", "missing"])
def test_a_damaged_package_is_refused_in_one_line(package, tmp_path, monkeypatch, damage):
    from blockscope.kernels import auto

    folder = copy_package(package, tmp_path)
    listing_file = folder / aot.PACKAGE
    listing = json.loads(listing_file.read_text())
    if damage == "table":
        (folder / listing["table"]).write_text(json.dumps({"format": 1, "entries": []}))
    elif damage == "cubin":
        cubin = folder / listing["kernels"][0]["entry"] / "row_softmax_kernel.cubin"
        cubin.write_bytes(cubin.read_bytes()[:-10])
    elif damage == "triton":
        listing["triton"] = "0.0.1"
        listing_file.write_text(json.dumps(listing))
    elif damage == "listing":
        listing["kernels"][0]["attr"] = "no_such_kernel"
        listing_file.write_text(json.dumps(listing))
    else:
        listing_file.unlink()
    problems = aot.check_package(folder, load=True)
    assert len(problems) == 1 and "\n" not in problems[0]
    monkeypatch.setattr(auto, "PACKAGE_TABLE_DIRS", [])
    monkeypatch.delenv(aot.STORE_ENV, raising=False)
    with pytest.raises(ValueError, match="allowed: a folder written by") as caught:
        aot.use_package(folder)
    assert "\n" not in str(caught.value)
    assert auto.PACKAGE_TABLE_DIRS == [] and aot.STORE_ENV not in os.environ  # nothing half-applied


def test_a_slow_jit_compile_is_said_once_per_process(monkeypatch):
    import warnings

    from blockscope.kernels import _common

    ticks = iter([0.0, 2.5, 10.0, 13.0, 20.0, 20.1])
    monkeypatch.setattr(_common, "_clock", lambda: next(ticks))
    monkeypatch.setattr(_common, "_SLOW_COMPILE_SAID", False)
    monkeypatch.setattr(_common.aot, "load", lambda *args: None)

    class Kernel:
        __name__ = "_fake_kernel"

        def warmup(self, *args, **kwargs):
            return "compiled"

    x = torch.empty(1)
    with pytest.warns(RuntimeWarning, match=r"compiling _fake_kernel for this GPU took 2\.5 s.*blockscope warm"):
        assert _common.compile_or_load(Kernel(), (x,), {}, 4) == "compiled"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _common.compile_or_load(Kernel(), (x,), {}, 4) == "compiled"  # 3 s, but said already
        monkeypatch.setattr(_common, "_SLOW_COMPILE_SAID", False)
        assert _common.compile_or_load(Kernel(), (x,), {}, 4) == "compiled"  # 0.1 s: nothing to say


def test_warm_compiles_staged_split_as_the_cooperative_grid_it_launches():
    """staged_split launches CHUNKS > 1 programs per row as a cooperative grid (launch_cooperative_grid compiled in,
    as splitrow): warm's item carries the option, so the table's staged_split shape loads from the store (its key
    missed it before: the H200 GPU test said `['staged_split']` were JIT-compiled)."""
    from blockscope.kernels import auto

    entry = next(e for e in auto.load_table(None)["entries"] if e["variant"] == "staged_split")
    item = warm.forward_item("staged_split", entry["dtype"], entry["n_rows"], entry["n_cols"], entry["tunables"])
    assert dict(item.options).get("launch_cooperative_grid") is True
    one_chunk = warm.forward_item("staged_split", "fp32", 64, 4096, {"chunks": 1})
    assert "launch_cooperative_grid" not in dict(one_chunk.options)
