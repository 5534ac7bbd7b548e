"""Side-by-side GPU time of chosen kernel configs and backends on chosen shapes (one run, ratios within it).

python3 scripts/probe_kernels.py --shapes fp16:4096:1000,bf16:777:5000 \
    --configs "auto;torch;quack;multirow:rows_per_program=4,num_warps=4" --out probe.csv

Each config is `name` (a backend: torch, inductor, liger, quack, auto, or a variant with its default tunables) or
`variant:k=v,k=v`. Per shape every config is checked against the float64 softmax (max abs error) and timed with
CUDA-graph replay and with L2-flushed back-to-back launches (profiling.timing, median of adaptive reps); the copy
bandwidth of the same run gives each time's fraction of copy. Printed: one markdown table per method with each
config's time, its ratio to the fastest config of the shape and its fraction of copy.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pandas as pd  # noqa: E402
import torch  # noqa: E402

import kernels  # noqa: E402
from profiling import timing  # noqa: E402
from profiling.backends import backend_names, get_backend, unsupported_reason  # noqa: E402

METHODS = ("cuda_graph", "back_to_back_flushed")


def parse_shapes(text: str) -> list[tuple[str, int, int]]:
    shapes = []
    for part in text.split(","):
        dtype, rows, cols = part.strip().split(":")
        shapes.append((dtype, int(rows), int(cols)))
    return shapes


def parse_configs(text: str) -> list[tuple[str, str, dict[str, int]]]:
    """'auto;multirow:rows_per_program=4,num_warps=4' -> [(label, name, tunables)]."""
    configs = []
    for part in text.split(";"):
        part = part.strip()
        name, _, rest = part.partition(":")
        tunables = {k: int(v) for k, v in (item.split("=") for item in rest.split(",") if item)}
        configs.append((part, name, tunables))
    return configs


def closure(name: str, tunables: dict[str, int], x: torch.Tensor):
    if name in backend_names() and not tunables:
        return get_backend(name).prepare(x)
    return lambda: kernels.softmax(x, variant=name, **tunables)


def timed_rows(fn, x: torch.Tensor, record: dict, copy_gbps: float) -> list[dict]:
    """`record` once per timing method with fn's median/p20/p80 us and its fraction of the same-run copy GB/s."""
    rows = []
    for method in METHODS:
        stats = timing.benchmark(fn, method)
        gbps = 2 * x.numel() * x.element_size() / (stats.median_us * 1e-6) / 1e9
        rows.append({**record, "method": method, "median_us": stats.median_us, "p20_us": stats.p20_us,
                     "p80_us": stats.p80_us, "copy_fraction": gbps / copy_gbps, "error": ""})
    return rows


def write_table(rows: list[dict], copy_gbps: float, out: Path) -> pd.DataFrame:
    """The probe's rows with the run's copy GB/s, written to `out` (CSV) and returned."""
    table = pd.DataFrame(rows)
    table["copy_gbps"] = copy_gbps
    out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(out, index=False)
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", required=True)
    parser.add_argument("--configs", required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    copy_gbps = timing.measure_copy_gbps()
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, copy {copy_gbps:.0f} GB/s")
    rows = []
    for dtype_name, n_rows, n_cols in parse_shapes(args.shapes):
        dtype = kernels.dtype_from_name(dtype_name)
        x = torch.randn(n_rows, n_cols, device="cuda", dtype=dtype) * 3
        expected = torch.softmax(x.double(), -1)
        for label, name, tunables in parse_configs(args.configs):
            record = {"dtype": dtype_name, "n_rows": n_rows, "n_cols": n_cols, "config": label}
            reason = unsupported_reason(name, n_rows, n_cols, dtype) if name in backend_names() else None
            if reason:
                rows.append({**record, "error": reason})
                continue
            try:
                fn = closure(name, tunables, x)
                error = (fn().double() - expected).abs().max().item()
                record["max_abs_error"] = error
                rows += timed_rows(fn, x, record, copy_gbps)
            except Exception as exc:  # noqa: BLE001 - a failing config is a row, not the end of the probe
                rows.append({**record, "error": f"{type(exc).__name__}: {exc}"[:300]})
    table = write_table(rows, copy_gbps, args.out)
    timed = table[table["error"] == ""].copy()
    shape_keys = ["method", "dtype", "n_rows", "n_cols"]
    timed["vs_best"] = timed["median_us"] / timed.groupby(shape_keys)["median_us"].transform("min")
    for method in METHODS:
        print(f"\n### {method}: us (x fastest config, fraction of copy)")
        part = timed[timed["method"] == method]
        cells = part.assign(cell=[f"{u:.2f} ({r:.2f}x, {c:.0%})" for u, r, c in
                                  zip(part["median_us"], part["vs_best"], part["copy_fraction"], strict=True)])
        print(cells.pivot_table(index=["dtype", "n_rows", "n_cols"], columns="config", values="cell",
                                aggfunc="first").to_string())
    failed = table[table["error"] != ""]
    if len(failed):
        print("\nnot timed:")
        print(failed[["dtype", "n_rows", "n_cols", "config", "error"]].to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
