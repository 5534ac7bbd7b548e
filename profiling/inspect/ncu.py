"""Nsight Compute imports matched to Blockscope configs: kernel name -> variant, (grid, block) -> config.

`import_ncu(path, configs)` reads `ncu --csv` output (profiling.results.ncu) or a `.ncu-rep` report (through the
`ncu` tool: `ncu --import FILE --csv --page raw`) and adds `variant` (from the kernel name; empty for kernels
that are not ours) and, when `configs` (a results table) is given, the config each launch matches: the rows of
`configs` whose plan launches the same kernel with the same grid (programs) and block (threads), narrowed by
registers per thread when the configs record `n_regs` and several configs share grid and block. Persistent
kernels size their grid on the GPU, so they match on kernel name and block only.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pandas as pd

from blockscope.profiling.results.ncu import NcuError, finish, read_ncu_csv

MATCH_KEYS = ("variant", "dtype", "n_rows", "n_cols", "tunables")
NCU_TIMEOUT_S = 300


def kernel_variants() -> dict[str, str]:
    """Kernel function name -> variant name, for every registered variant with a kernel of its own."""
    from blockscope import kernels

    names = {}
    for name, variant in kernels.VARIANTS.items():
        if variant.kernel is not None:
            names[variant.kernel_function.__name__] = name
    return names


def read_report(path: str | Path, ncu: str = "ncu") -> pd.DataFrame:
    """A `.ncu-rep` report through `ncu --import FILE --csv --page raw`; NcuError when ncu is not installed."""
    path = Path(path)
    if not path.is_file():
        raise NcuError(f"{path}: no such file; allowed: an existing .ncu-rep report")
    tool = shutil.which(ncu)
    if tool is None:
        raise NcuError(
            f"{path}: reading .ncu-rep needs Nsight Compute's `{ncu}` on PATH; allowed here: the CSV that "
            f"`ncu --import {path.name} --csv --page raw` writes on a machine with ncu"
        )
    try:
        done = subprocess.run(
            [tool, "--import", str(path), "--csv", "--page", "raw"],
            capture_output=True,
            timeout=NCU_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise NcuError(f"{path}: ncu --import ran past {NCU_TIMEOUT_S} s") from None
    if done.returncode != 0:
        message = (done.stderr or done.stdout).decode(errors="replace").strip().splitlines()
        raise NcuError(f"{path}: ncu --import failed: {message[-1] if message else f'exit {done.returncode}'}")
    return read_ncu_csv(done.stdout, f"{path} (ncu --import)")


def read_any(path: str | Path) -> pd.DataFrame:
    """`ncu --csv` text or a `.ncu-rep` report (by suffix) as profiling.results.ncu.NCU_COLUMNS."""
    if Path(path).suffix.lower() == ".ncu-rep":
        return read_report(path)
    return read_ncu_csv(path)


def _plan_keys(configs: pd.DataFrame) -> list[tuple[dict, str, int | None, int]]:
    """(config, kernel name, grid programs or None when resolved on the GPU, block threads) per distinct config."""
    from blockscope import kernels

    keys = []
    seen = set()
    for row in configs.itertuples(index=False):
        config = {k: getattr(row, k) for k in MATCH_KEYS}
        marker = tuple(str(config[k]) for k in MATCH_KEYS)
        if marker in seen or config["variant"] not in kernels.VARIANTS:
            continue
        seen.add(marker)
        try:
            tunables = json.loads(config["tunables"]) if config["tunables"] else {}
            plan = kernels.get_variant(config["variant"]).plan(
                int(config["n_rows"]), int(config["n_cols"]), kernels.dtype_from_name(config["dtype"]), **tunables
            )
        except (ValueError, TypeError, KeyError):  # a config the kernels refuse: cannot be in the report
            continue
        programs = None if plan.grid_resolved_at_launch else plan.programs
        regs = getattr(row, "n_regs", None)
        config["n_regs"] = None if regs is None or pd.isna(regs) else int(regs)
        keys.append((config, plan.kernel_name, programs, plan.num_warps * 32))
    return keys


def match_configs(table: pd.DataFrame, configs: pd.DataFrame | None = None) -> pd.DataFrame:
    """`table` (NCU_COLUMNS) plus `variant` and, with `configs`, the matched dtype, n_rows, n_cols, tunables and
    `config_variant` (the config's own variant: 'auto' runs another's kernel) and
    `match`: 'matched', 'ambiguous: K configs' (listed in `candidates`, JSON), 'no config' or 'not ours'."""
    if configs is not None:
        missing = [k for k in MATCH_KEYS if k not in configs.columns]
        if missing:
            raise NcuError(f"configs lack {', '.join(missing)}; allowed: a Blockscope results table")
    names = kernel_variants()
    table = table.copy()
    table["variant"] = [names.get(str(name).strip(), "") for name in table["kernel_name"]]
    keys = _plan_keys(configs) if configs is not None else []
    out = {k: [] for k in ("config_variant", "dtype", "n_rows", "n_cols", "tunables", "match", "candidates")}
    for row in table.itertuples(index=False):
        if not row.variant:
            found, status = [], "not ours"
        else:
            found = [
                config
                for config, kernel_name, programs, threads in keys
                if kernel_name == str(row.kernel_name).strip()
                and threads == row.block_threads
                and (programs is None or programs == row.grid_programs)
            ]
            if len(found) > 1 and not pd.isna(row.registers_per_thread):  # compiled registers tell dtypes/N apart
                same_regs = [c for c in found if c["n_regs"] == row.registers_per_thread]
                found = same_regs or found
            status = "matched" if len(found) == 1 else "no config" if not found else f"ambiguous: {len(found)} configs"
        one = found[0] if len(found) == 1 else {}
        out["config_variant"].append(one.get("variant", pd.NA))  # 'auto' configs run another variant's kernel
        for key in ("dtype", "n_rows", "n_cols", "tunables"):
            out[key].append(one.get(key, pd.NA))
        out["match"].append(status)
        out["candidates"].append(json.dumps([{k: str(c[k]) for k in MATCH_KEYS} for c in found]) if found else "")
    for key, values in out.items():
        table[key] = values
    table["n_rows"] = pd.array(table["n_rows"], dtype="Int64")
    table["n_cols"] = pd.array(table["n_cols"], dtype="Int64")
    for key in ("config_variant", "dtype", "tunables", "match", "candidates", "variant"):
        table[key] = table[key].astype("string")
    return finish(table)


def import_ncu(path: str | Path, configs: pd.DataFrame | None = None) -> pd.DataFrame:
    """read_any + match_configs: one row per profiled launch, ready for profiling.results.ncu.save_ncu."""
    return match_configs(read_any(path), configs)
