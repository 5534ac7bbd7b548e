"""In one tree (PYTHONPATH=<tree>): for each auto config of a results file, auto.choose's pick and the picked
variant's kernel source hash. Prints JSON."""

import json
import os
import sys

os.environ.pop("TRITON_INTERPRET", None)
import importlib

try:
    kernels = importlib.import_module("blockscope.kernels")
    revision = importlib.import_module("blockscope.profiling.results.revision")
    results = importlib.import_module("blockscope.profiling.results")
except ImportError:
    raise
auto = importlib.import_module(kernels.__name__ + ".auto")
df = results.load_results(sys.argv[1])
rows = df[df["variant"] == "auto"][["dtype", "n_rows", "n_cols", "gpu_name"]].drop_duplicates()
out = {}
for r in rows.itertuples():
    v, t = auto.choose(int(r.n_rows), int(r.n_cols), kernels.dtype_from_name(r.dtype), r.gpu_name)
    h = revision.kernel_source_hash(v) if v != "torch" else "torch"
    out[f"{r.dtype}|{r.n_rows}|{r.n_cols}|{r.gpu_name}"] = [v, json.dumps(t, sort_keys=True), h]
print(json.dumps({"auto_hash": revision.kernel_source_hash("auto"), "picks": out}))
