"""`coldstart` (issue 36 item 1): fresh-process import / CUDA init / first and second call rows, cold and warm caches.

The real children run on CPU (--device cpu: torch, and Blockscope on the Triton interpreter), one small shape, one
rep; the row building, cache folders and failures are checked with a fake child runner.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from blockscope.profiling.cli import main as entry
from blockscope.profiling.measure import coldstart
from blockscope.profiling.results import COLD_START, ResultsError, load_results, normalize, save_results, validate

NO_CUDA = not torch.cuda.is_available()


@pytest.fixture
def only_coldstart(monkeypatch):
    monkeypatch.setattr(entry, "COMMAND_MODULES", ("blockscope.profiling.cli.coldstart",))


def run_cli(capsys, argv: list[str]) -> tuple[int, str, str]:
    try:
        status = entry.main(argv)
    except SystemExit as exit_:
        status = exit_.code
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def fail(capsys, argv: list[str]) -> str:
    status, out, err = run_cli(capsys, argv)
    assert status == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err and out == ""
    return lines[0]


# --- input checks -------------------------------------------------------------------------------------------------


def test_parse_shapes() -> None:
    assert coldstart.parse_shapes("4096x1024, 1X32768,") == [(4096, 1024), (1, 32768)]
    for bad in ("4096", "4096x", "0x128", "ax128", "2x3x4", "-1x8", "4096*1024"):
        with pytest.raises(ValueError, match="allowed: RxN with positive integers"):
            coldstart.parse_shapes(bad)
    with pytest.raises(ValueError, match="no shape"):
        coldstart.parse_shapes(" , ")


def test_resolve_backends() -> None:
    assert coldstart.resolve_backends(["blockscope", "torch", "auto"], "cuda") == ["auto", "torch"]
    assert coldstart.resolve_backends(["torch", "teaching"], "cpu") == ["torch", "teaching"]
    with pytest.raises(ValueError, match=r"unknown backend 'nope'; allowed: blockscope \(= auto\), torch, inductor"):
        coldstart.resolve_backends(["nope"], "cuda")
    with pytest.raises(ValueError, match="with --device cpu .*allowed: blockscope"):
        coldstart.resolve_backends(["inductor"], "cpu")
    with pytest.raises(ValueError, match="with --device cpu"):
        coldstart.resolve_backends(["staged"], "cpu")  # Gluon: GPU only
    with pytest.raises(ValueError, match="unknown device 'tpu'; allowed: cuda, cpu"):
        coldstart.resolve_backends(["torch"], "tpu")


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["--backends", "torch,nope"], "unknown backend 'nope' with --device cpu"),
        (["--shapes", "4096by1024"], "bad shape '4096by1024'; allowed: RxN"),
        (["--shapes", "0x8"], "bad shape '0x8'"),
        (["--dtype", "fp8"], "unknown dtype 'fp8'; allowed: fp16, bf16, fp32"),
        (["--device", "tpu"], "unknown device 'tpu'; allowed: cuda, cpu"),
        (["--out", "rows.json"], "unsupported suffix '.json'; allowed: .parquet, .csv"),
        (["--reps", "0"], "0 is not positive"),
        (["--store", "/no/such/store"], "--store /no/such/store: no such folder; allowed: a kernel store"),
    ],
)
def test_bad_input_is_one_line(capsys, only_coldstart, argv, expected) -> None:
    device = [] if "--device" in argv else ["--device", "cpu"]
    line = fail(capsys, ["coldstart", *device, *argv])
    assert expected in line


@pytest.mark.skipif(not NO_CUDA, reason="this machine has a CUDA GPU")
def test_without_cuda_says_so(capsys, only_coldstart) -> None:
    line = fail(capsys, ["coldstart", "--backends", "torch"])
    assert "coldstart needs a CUDA GPU and none is available here; allowed: --device cpu" in line


# --- rows, caches and failures with a fake child ------------------------------------------------------------------


def fake_runner(calls: list[tuple], fail_backend: str | None = None):
    def run(backend, n_rows, n_cols, dtype, device, root, timeout_s):
        calls.append((backend, n_rows, n_cols, Path(root), root.is_dir(), sorted(p.name for p in root.iterdir())))
        (root / "marker").write_text("x")  # what a cold run leaves in its caches
        if backend == fail_backend:
            return coldstart.Sample(phases={"torch_import": 1.0}, error="first_call: RuntimeError: boom")
        warm = len(calls) % 2 == 0
        return coldstart.Sample(
            phases={"torch_import": 1.0, "import": 0.0, "first_call": 0.05 if warm else 2.0, "second_call": 1e-4},
            max_abs_error=1e-7,
        )

    return run


def test_measure_rows_and_cache_folders() -> None:
    calls: list[tuple] = []
    df = coldstart.measure(["torch", "auto"], [(4, 64)], "fp32", reps=2, device="cpu", runner=fake_runner(calls))
    assert len(calls) == 2 * 2 * 2  # reps x backends x (cold, warm)
    for cold, warm in zip(calls[::2], calls[1::2], strict=True):
        assert cold[3] == warm[3]  # warm reuses the cold run's private folders
        assert cold[5] == [] and warm[5] == ["marker"]  # cold starts empty, warm sees what cold left
        assert not cold[3].exists()  # removed after the pair
    assert len({c[3] for c in calls}) == 4  # new folders per rep and backend
    validate(df)
    assert set(df["method"]) == {COLD_START}
    assert set(df["cache_state"]) == {"cold", "warm"}
    assert set(df["cold_phase"]) == {"torch_import", "import", "first_call", "second_call"}  # no cuda_init on cpu
    assert len(df) == 2 * 2 * 4
    first = df[(df["variant"] == "auto") & (df["cold_phase"] == "first_call")].set_index("cache_state")
    assert first.loc["cold", "median_us"] == pytest.approx(2e6)
    assert first.loc["warm", "median_us"] == pytest.approx(5e4)
    assert (df["reps"] == 2).all() and (df["error"] == "").all()
    imports = df[df["cold_phase"] == "import"]
    assert (imports["median_us"] > 0).all()  # a no-op import still makes a valid timed row
    assert df["kernel_source_hash"].notna().all()
    lines = coldstart.summary_lines(df)
    assert any(line.startswith("auto 4x64 cold: torch_import 1.00 s") and "first_call 2.00 s" in line for line in lines)


def test_a_store_adds_a_store_child_for_blockscope_backends_only(tmp_path) -> None:
    calls: list[tuple] = []
    envs: list[dict | None] = []
    inner = fake_runner(calls)

    def run(backend, n_rows, n_cols, dtype, device, root, timeout_s, extra_env=None):
        envs.append(extra_env)
        return inner(backend, n_rows, n_cols, dtype, device, root, timeout_s)

    store = tmp_path / "store"
    store.mkdir()
    df = coldstart.measure(["torch", "auto"], [(4, 64)], "fp32", reps=1, device="cpu", runner=run, store=store)
    assert len(calls) == 2 + 3  # torch: cold, warm (a peer of the store's kernels: none); auto: cold, warm, store
    assert calls[4][5] == ["store"]  # the store child starts from empty caches again, with a copy of the store
    assert envs[:4] == [None, None, None, None] and Path(envs[4]["BLOCKSCOPE_KERNEL_CACHE"]).name == "store"
    assert Path(envs[4]["BLOCKSCOPE_KERNEL_CACHE"]) != store.resolve()  # never the user's own store
    validate(df)
    assert set(df[df["variant"] == "auto"]["cache_state"]) == {"cold", "warm", "store"}
    assert set(df[df["variant"] == "torch"]["cache_state"]) == {"cold", "warm"}
    with pytest.raises(ValueError, match="no such folder"):
        coldstart.measure(["auto"], [(4, 64)], "fp32", device="cpu", runner=run, store=tmp_path / "none")


def test_failed_child_and_unavailable_peer_rows(monkeypatch) -> None:
    monkeypatch.setattr(
        coldstart, "unavailable_reason", lambda b: "liger-kernel is not installed" if b == "liger" else None
    )
    calls: list[tuple] = []
    df = coldstart.measure(
        ["torch", "auto", "liger"], [(4, 64)], "fp16", reps=1, device="cuda", runner=fake_runner(calls, "auto")
    )
    assert {c[0] for c in calls} == {"torch", "auto"}
    liger = df[df["variant"] == "liger"]
    assert list(liger["error"]) == ["unavailable: liger: liger-kernel is not installed"]
    auto = df[df["variant"] == "auto"]
    assert len(auto) == 2 and all(
        e.startswith("cold start failed (cuda): first_call: RuntimeError") for e in auto["error"]
    )
    validate(df)


def test_measure_refuses_bad_arguments() -> None:
    with pytest.raises(ValueError, match="unknown dtype 'fp8'"):
        coldstart.measure(["torch"], [(1, 8)], "fp8", device="cpu")
    with pytest.raises(ValueError, match="reps = 0"):
        coldstart.measure(["torch"], [(1, 8)], "fp32", reps=0, device="cpu")


def test_child_env_never_touches_the_users_caches(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TRITON_CACHE_DIR", "/users/own/cache")
    env = coldstart.child_env(tmp_path, "cpu")
    for variable, folder in coldstart.CACHE_ENV.items():
        assert env[variable] == str(tmp_path / folder) and (tmp_path / folder).is_dir()
    assert env["TRITON_INTERPRET"] == "1"
    import os

    assert os.environ["TRITON_CACHE_DIR"] == "/users/own/cache"


def test_child_timeout_is_an_error_sample(tmp_path) -> None:
    sample = coldstart.run_child("torch", 2, 8, "fp32", "cpu", tmp_path, timeout_s=0.01)
    assert sample.error == "timeout: the child ran over 0.01 s" and not sample.phases


def test_schema_old_rows_and_bad_values() -> None:
    old = normalize(
        __import__("pandas").DataFrame(
            [{"variant": "torch", "dtype": "fp16", "n_rows": 1, "n_cols": 8, "method": "cuda_graph", "median_us": 2.0}]
        )
    )
    validate(old)
    assert old["cold_phase"].isna().all() and old["cache_state"].isna().all()
    bad = old.assign(method="cold_start", cold_phase="warmup", cache_state="hot")
    with pytest.raises(ResultsError, match="cold_phase outside torch_import.*cache_state outside cold, warm"):
        validate(normalize(bad))


# --- real children on CPU -----------------------------------------------------------------------------------------


def test_real_child_failure_is_reported(tmp_path, monkeypatch) -> None:
    monkeypatch.setitem(coldstart.IMPORTS, "torch", ("no_such_module_for_coldstart",))
    sample = coldstart.run_child("torch", 2, 8, "fp32", "cpu", tmp_path, timeout_s=300)
    assert sample.error.startswith("import: ModuleNotFoundError"), sample.error
    assert "torch_import" in sample.phases


def test_cli_on_cpu_saves_rows(capsys, only_coldstart, tmp_path) -> None:
    out = tmp_path / "cold.parquet"
    status, stdout, err = run_cli(
        capsys,
        [
            "coldstart",
            "--device",
            "cpu",
            "--backends",
            "torch,blockscope",
            "--shapes",
            "4x64",
            "--reps",
            "1",
            "--out",
            str(out),
        ],
    )
    assert status == 0, (stdout, err)
    assert "Traceback" not in err
    df = load_results(out)
    assert set(df["variant"]) == {"torch", "auto"} and set(df["method"]) == {COLD_START}
    assert (df["error"] == "").all(), df["error"].tolist()
    assert set(df["cache_state"]) == {"cold", "warm"}
    assert set(df["cold_phase"]) == {"torch_import", "import", "first_call", "second_call"}
    assert len(df) == 2 * 2 * 4 and (df["reps"] == 1).all()
    assert (df["max_abs_error"] < 1e-5).all()
    assert "auto 4x64 cold: torch_import" in stdout and f"saved 16 rows to {out}" in stdout
    again = save_results(df, tmp_path / "cold.csv")
    assert len(load_results(again)) == 16


# --- the view -----------------------------------------------------------------------------------------------------


def test_cold_start_table() -> None:
    from blockscope.profiling.views.coldstart import cold_start_table

    calls: list[tuple] = []
    rows = coldstart.measure(["torch", "auto"], [(4, 64)], "fp32", reps=1, device="cpu", runner=fake_runner(calls))
    other = normalize(
        __import__("pandas").DataFrame(
            [{"variant": "torch", "dtype": "fp16", "n_rows": 1, "n_cols": 8, "method": "cuda_graph", "median_us": 2.0}]
        )
    )
    table = cold_start_table(__import__("pandas").concat([other, rows], ignore_index=True))
    assert list(table["variant"]) == ["torch", "torch", "auto", "auto"]
    assert list(table["cache_state"]) == ["cold", "warm", "cold", "warm"]
    auto_cold = table.iloc[2]
    assert auto_cold["first_call_s"] == pytest.approx(2.0) and auto_cold["torch_import_s"] == pytest.approx(1.0)
    assert auto_cold["to_first_result_s"] == pytest.approx(2.0, abs=1e-6)  # import ~0 + no cuda_init on cpu
    assert table["cuda_init_s"].isna().all() and (table["error"] == "").all()
    assert cold_start_table(other).empty and cold_start_table(None).empty
    failed = coldstart.measure(["auto"], [(4, 64)], "fp32", reps=1, device="cpu", runner=fake_runner([], "auto"))
    shown = cold_start_table(failed)
    assert len(shown) == 2 and shown["error"].str.startswith("cold start failed").all()
    assert shown["first_call_s"].isna().all()


def test_cli_failed_children_exit_1_without_traceback(capsys, only_coldstart, monkeypatch) -> None:
    import functools

    monkeypatch.setattr(coldstart, "measure", functools.partial(coldstart.measure, runner=fake_runner([], "torch")))
    status, out, err = run_cli(capsys, ["coldstart", "--device", "cpu", "--backends", "torch", "--shapes", "2x8"])
    assert status == 1 and "Traceback" not in err
    assert "torch 2x8 cold: cold start failed (cpu): first_call: RuntimeError: boom" in out
