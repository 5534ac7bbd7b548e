"""Offline (this machine's Triton, sm_90) vs live (Triton on the H200) compile facts for the same configs.

python -m tools.offline_vs_live [--out data/offline_vs_live.csv]

Live facts come from data/occupancy_h200.csv (46 configs) and data/ncu_validation.csv (27 configs), both
captured on the H200; offline facts are compiled here with profiling.inspect.compiled.inspect_many (cached on disk).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd
import triton

from blockscope.profiling.inspect import compiled

ROOT = Path(__file__).resolve().parents[1]


def live_configs() -> pd.DataFrame:
    """One row per distinct live config: variant, dtype, n_cols, tunables JSON, live regs/spills/shared, triton."""
    occupancy = pd.read_csv(ROOT / "data" / "occupancy_h200.csv")
    occupancy = occupancy[occupancy["error"].isna()].assign(live_source="occupancy_h200.csv")
    occupancy = occupancy.rename(columns={"spill_store_bytes": "live_spill_store_bytes"})
    ncu = pd.read_csv(ROOT / "data" / "ncu_validation.csv")
    ncu = ncu[ncu["error"].isna() & (ncu["variant"] != "auto")].assign(
        live_source="ncu_validation.csv", triton_version="3.6.0"
    )
    keep = ["variant", "dtype", "n_cols", "tunables", "n_regs", "shared_bytes", "triton_version", "live_source"]
    table = pd.concat([occupancy[keep + ["live_spill_store_bytes"]], ncu[keep]], ignore_index=True)
    table = table.rename(
        columns={"n_regs": "live_n_regs", "shared_bytes": "live_shared_bytes", "triton_version": "live_triton"}
    )
    return table.drop_duplicates(["variant", "dtype", "n_cols", "tunables"]).reset_index(drop=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "data" / "offline_vs_live.csv"))
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    table = live_configs()
    requests = [
        {
            "variant": r.variant,
            "dtype": r.dtype,
            "n_cols": int(r.n_cols),
            "arch": "sm_90",
            "tunables": json.loads(r.tunables),
        }
        for r in table.itertuples()
    ]
    results = compiled.inspect_many(requests, workers=args.workers)
    offline = []
    for result in results:
        if isinstance(result, dict):
            offline.append({"offline_error": result["error"]})
        else:
            offline.append(
                {
                    "offline_n_regs": result.n_regs,
                    "offline_spill_store_bytes": result.spill_store_bytes,
                    "offline_shared_bytes": result.shared_bytes,
                    "offline_error": "",
                }
            )
    table = pd.concat([table, pd.DataFrame(offline)], axis=1)
    table["offline_triton"] = triton.__version__
    table["regs_difference"] = table["offline_n_regs"] - table["live_n_regs"]
    table.to_csv(args.out, index=False)
    same = int((table["regs_difference"] == 0).sum())
    print(
        f"wrote {args.out}: {len(table)} configs; registers equal on {same}, "
        f"shared bytes equal on {int((table['offline_shared_bytes'] == table['live_shared_bytes']).sum())}"
    )


if __name__ == "__main__":
    main()
