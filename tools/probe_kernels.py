"""Side-by-side GPU time of chosen kernel configs and backends on chosen shapes (one run, ratios within it).

python3 -m tools.probe_kernels --shapes fp16:4096:1000,bf16:777:5000 \
    --configs "auto;torch;quack;multirow:rows_per_program=4,num_warps=4" --out probe.csv
python3 -m tools.probe_kernels ... --alt base=/tmp/base --configs "staged;base/staged" --ulp normal,scale30

Each config is `name` (a backend: torch, inductor, liger, quack, auto, or a variant with its default tunables) or
`variant:k=v,k=v`; `ALT/variant...` runs the `kernels` package found in the directory given as `--alt ALT=DIR`
(another revision's, e.g. `git archive REV kernels | tar -x -C DIR`), so a change and what it replaced are timed
side by side in one run. Per shape every config is checked against the float64 softmax (max abs error) and timed
with CUDA-graph replay and with L2-flushed back-to-back launches (profiling.measure.timing, median of adaptive
reps); the copy bandwidth of the same run gives each time's fraction of copy. `--ulp INPUTS` adds each config's largest
ULP error on those seeded inputs (profiling.inspect.numerics; min(R, 64) rows of the shape, float64 reference). Printed:
one markdown table per method with each config's time, its ratio to the fastest config of the shape and its fraction of
copy.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

import pandas as pd
import torch

from blockscope import kernels
from blockscope.kernels import native
from blockscope.profiling.inspect.numerics.measure import measure as measure_ulp
from blockscope.profiling.measure import timing
from blockscope.profiling.measure.backends import backend_names, get_backend, unsupported_reason

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


def load_alternates(items: list[str]) -> dict[str, object]:
    """{'NAME': kernels package imported from DIR/kernels} for each 'NAME=DIR' (relative imports only, as ours)."""
    packages = {}
    for item in items:
        name, _, directory = item.partition("=")
        init = Path(directory) / "kernels" / "__init__.py"
        if not name.isidentifier() or not init.is_file():
            raise SystemExit(f"--alt {item}: expected NAME=DIR with DIR/kernels/__init__.py (NAME an identifier)")
        spec = importlib.util.spec_from_file_location(
            f"alt_{name}", init, submodule_search_locations=[str(init.parent)]
        )
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        packages[name] = module
    return packages


def closure(name: str, tunables: dict[str, int], x: torch.Tensor, packages: dict[str, object]):
    if name in backend_names() and not tunables:
        return get_backend(name).prepare(x)
    package, _, variant = name.rpartition("/")
    if package and package not in packages:
        raise ValueError(f"{name}: no --alt {package}=DIR given")
    softmax = packages[package].softmax if package else kernels.softmax
    return lambda: softmax(x, variant=variant, **tunables)


def ulp_columns(
    name: str,
    tunables: dict[str, int],
    dtype_name: str,
    n_rows: int,
    n_cols: int,
    inputs: list[str],
    packages: dict[str, object],
) -> dict[str, float]:
    """{'ulp_max_<input>': largest ULP error of the config on min(R, 64) rows of that seeded input}."""
    columns = {}
    for input_name in inputs:
        summary, _ = measure_ulp(
            lambda t: closure(name, tunables, t, packages)(),
            dtype_name,
            min(n_rows, 64),
            n_cols,
            input_name,
            device="cuda",
        )
        columns[f"ulp_max_{input_name}"] = summary.ulp_max
    return columns


def timed_rows(fn, x: torch.Tensor, record: dict, copy_gbps: float) -> list[dict]:
    """`record` once per timing method with fn's median/p20/p80 us and its fraction of the same-run copy GB/s."""
    rows = []
    for method in METHODS:
        stats = timing.benchmark(fn, method)
        gbps = 2 * x.numel() * x.element_size() / (stats.median_us * 1e-6) / 1e9
        rows.append(
            {
                **record,
                "method": method,
                "median_us": stats.median_us,
                "p20_us": stats.p20_us,
                "p80_us": stats.p80_us,
                "copy_fraction": gbps / copy_gbps,
                "error": "",
            }
        )
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
    parser.add_argument(
        "--alt",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="a kernels package of another revision: configs NAME/variant run it",
    )
    parser.add_argument("--ulp", default="", help="comma-separated numerics inputs (normal, scale30, dominant, ...)")
    args = parser.parse_args()
    if args.alt:  # one native module per process: an alternate's `auto` would replay the launch ours registered
        os.environ[native.ENV] = "0"  # for the same shape (and vice versa), so both take the Python replay
        print(f"--alt given: {native.ENV}=0 (the native replay's registry is shared by every kernels package)")
    packages = load_alternates(args.alt)
    inputs = [name for name in args.ulp.split(",") if name]
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
                fn = closure(name, tunables, x, packages)
                error = (fn().double() - expected).abs().max().item()
                record["max_abs_error"] = error
                if inputs:
                    record.update(ulp_columns(name, tunables, dtype_name, n_rows, n_cols, inputs, packages))
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
        cells = part.assign(
            cell=[
                f"{u:.2f} ({r:.2f}x, {c:.0%})"
                for u, r, c in zip(part["median_us"], part["vs_best"], part["copy_fraction"], strict=True)
            ]
        )
        print(
            cells.pivot_table(
                index=["dtype", "n_rows", "n_cols"], columns="config", values="cell", aggfunc="first"
            ).to_string()
        )
    ulp = [column for column in table.columns if column.startswith("ulp_max_")]
    if ulp:
        print("\n### largest ULP error (min(R, 64) rows)")
        print(
            timed[timed["method"] == METHODS[0]]
            .pivot_table(index=["dtype", "n_rows", "n_cols", "config"], values=ulp, aggfunc="first")
            .to_string()
        )
    failed = table[table["error"] != ""]
    if len(failed):
        print("\nnot timed:")
        print(failed[["dtype", "n_rows", "n_cols", "config", "error"]].to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
