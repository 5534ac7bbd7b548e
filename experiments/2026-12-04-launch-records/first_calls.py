"""First and second call of `auto` at every shape of the H200 table, in fresh processes that find launch records.

    python3 experiments/2026-12-04-launch-records/first_calls.py STORE OUT_DIR [NATIVE_DIR]

STORE: a kernel store made by `python -m profiling warm --arch sm_90 --out STORE --record`. NATIVE_DIR (optional):
a BLOCKSCOPE_CACHE_DIR holding a built native module; the eager child then runs again with it (`auto+native` rows).
One fresh child per dtype (BLOCKSCOPE_KERNEL_CACHE = a private copy of STORE, other caches private and empty,
native replay off) calls `kernels.softmax(x, variant="auto")` twice at each table shape of that dtype (R x N x
itemsize <= 2 GiB), each call timed with time.perf_counter around the call and a torch.cuda.synchronize(); it also
says whether Triton was imported by then. A torch child does the same with torch.softmax. An eager child times
2000 back-to-back calls per shape (wall per call, synchronized once; medians of 5 rounds) of auto on its records
and of torch.softmax (not with NO_EAGER=1).
Writes OUT_DIR/first_calls.jsonl (one line per child and shape) and prints a summary.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import json, sys, time
spec = json.loads(sys.argv[1])
import torch
torch.zeros(1, device="cuda"); torch.cuda.synchronize()
if spec["backend"] == "auto":
    from blockscope import kernels
    fn = lambda x: kernels.softmax(x, variant="auto")
else:
    fn = lambda x: torch.softmax(x, -1)
for dtype, n_rows, n_cols in spec["shapes"]:
    x = torch.randn(n_rows, n_cols, device="cuda", dtype=getattr(torch, dtype))
    torch.cuda.synchronize()
    row = {"backend": spec["backend"], "dtype": dtype, "n_rows": n_rows, "n_cols": n_cols}
    if spec["mode"] == "first":
        for phase in ("first_s", "second_s"):
            t = time.perf_counter()
            y = fn(x)
            torch.cuda.synchronize()
            row[phase] = time.perf_counter() - t
        row["triton_imported"] = "triton" in sys.modules
        row["max_abs_error"] = float((y.double() - torch.softmax(x.double(), -1)).abs().max())
    else:
        for _ in range(20):
            fn(x)
        torch.cuda.synchronize()
        rounds = []
        for _ in range(5):
            t = time.perf_counter()
            for _ in range(2000):
                fn(x)
            torch.cuda.synchronize()
            rounds.append((time.perf_counter() - t) / 2000 * 1e6)
        row["per_call_us"] = sorted(rounds)[2]
        row["rounds_us"] = rounds
        row["triton_imported"] = "triton" in sys.modules
    print("ROW " + json.dumps(row), flush=True)
    del x
"""


def child(backend: str, mode: str, shapes: list, store: Path | None, native_dir: Path | None = None) -> list[dict]:
    root = Path(tempfile.mkdtemp(prefix="launch-records-"))
    try:
        env = dict(os.environ)
        for name, folder in (("TRITON_CACHE_DIR", "triton"), ("TRITON_HOME", "th"), ("BLOCKSCOPE_CACHE_DIR", "bs")):
            (root / folder).mkdir()
            env[name] = str(root / folder)
        env["BLOCKSCOPE_NATIVE"] = "0" if native_dir is None else "1"
        if native_dir is not None:  # a native module built before (what the automatic background build leaves)
            env["BLOCKSCOPE_CACHE_DIR"] = str(native_dir)
        if store is not None:
            shutil.copytree(store, root / "store")
            env["BLOCKSCOPE_KERNEL_CACHE"] = str(root / "store")
        spec = {"backend": backend, "mode": mode, "shapes": shapes}
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, json.dumps(spec)],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=500,
        )
        rows = [json.loads(line[4:]) for line in proc.stdout.splitlines() if line.startswith("ROW ")]
        if proc.returncode:
            print(f"{backend} {mode}: exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}", flush=True)
        return rows
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> int:
    store, out = Path(sys.argv[1]), Path(sys.argv[2])
    native_dir = Path(sys.argv[3]) if len(sys.argv) > 3 else None
    out.mkdir(parents=True, exist_ok=True)
    table = json.loads((ROOT / "kernels" / "tuned" / "nvidia-h200.json").read_text())
    names = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}
    size = {"fp16": 2, "bf16": 2, "fp32": 4}
    shapes = {d: [] for d in names}
    for e in table["entries"]:
        if e["n_rows"] * e["n_cols"] * size[e["dtype"]] <= 2**31:
            shapes[e["dtype"]].append([names[e["dtype"]], e["n_rows"], e["n_cols"]])
    rows = []
    for items in shapes.values():
        rows += child("auto", "first", items, store)
        rows += child("torch", "first", items, None)
    eager = [
        ["float16", 4096, 128],
        ["float16", 4096, 1024],
        ["bfloat16", 1024, 4096],
        ["float32", 100000, 16],
        ["float32", 4096, 4096],
        ["float16", 16384, 16384],
    ]
    if os.environ.get("NO_EAGER") == "1":  # run 4: first calls only
        eager = []
    rows += child("auto", "eager", eager, store) if eager else []
    if native_dir is not None:
        rows += [{**r, "backend": "auto+native"} for r in child("auto", "eager", eager, store, native_dir)]
    rows += child("torch", "eager", eager, None) if eager else []
    with open(out / "first_calls.jsonl", "w") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
    auto = [r for r in rows if r["backend"] == "auto" and "first_s" in r]
    torch_rows = {(r["dtype"], r["n_rows"], r["n_cols"]): r for r in rows if r["backend"] == "torch" and "first_s" in r}
    firsts = sorted(r["first_s"] * 1e3 for r in auto)
    print(
        f"auto first calls: {len(auto)} shapes, triton imported in {sum(r['triton_imported'] for r in auto)}; "
        f"ms min {firsts[0]:.2f} median {firsts[len(firsts) // 2]:.2f} max {firsts[-1]:.2f}"
    )
    over = [r for r in auto if r["first_s"] > 0.030]
    for r in over:
        print(f"  over 30 ms: {r['dtype']} {r['n_rows']}x{r['n_cols']} {r['first_s'] * 1e3:.1f} ms")
    worst_error = max(r["max_abs_error"] for r in auto)
    print(f"auto max abs error {worst_error:.2e}")
    for dtype in names.values():
        a = [r for r in auto if r["dtype"] == dtype]
        if a:
            first = a[0]
            t = torch_rows.get((first["dtype"], first["n_rows"], first["n_cols"]))
            print(
                f"{dtype}: first shape {first['n_rows']}x{first['n_cols']}: auto {first['first_s'] * 1e3:.1f} ms, "
                f"torch {t['first_s'] * 1e3 if t else float('nan'):.1f} ms; second call auto "
                f"{first['second_s'] * 1e3:.2f} ms"
            )
    for r in rows:
        if "per_call_us" in r:
            print(
                f"eager {r['backend']} {r['dtype']} {r['n_rows']}x{r['n_cols']}: {r['per_call_us']:.2f} us/call "
                f"(triton imported {r['triton_imported']})"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
