"""Registers and blocks per SM of every fp32 tuning-table pick (N >= 1000) with the exact exp (as shipped) and with
fast_exp=1, and of the exact kernel compiled under a register cap (Triton's maxnreg) chosen to fit one more block per
SM; offline sm_90 compiles (ptxas from the Triton wheel), no GPU. Writes the table and caps.json (the spill-free caps)
for probe_caps_gpu.py.

    python3 experiments/2026-12-04-exact-regs/regs_offline.py --out-dir experiments/2026-12-04-exact-regs
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REGISTERS_PER_SM = 65536


def facts(variant: str, n_rows: int, n_cols: int, tunables: dict, cap: int = 0) -> tuple[int, int, int]:
    """(registers per thread, spill store bytes, blocks per SM) of the offline sm_90 compile, under maxnreg `cap`."""
    from blockscope.profiling.inspect import compiled
    from blockscope.profiling.inspect import occupancy as occ

    arch, spec, plan, torch_dtype, _name, _path = compiled._prepare(
        variant, n_cols, "fp32", "sm_90", n_rows, tunables, None
    )
    if cap:
        plan = dataclasses.replace(plan, compile_options={**plan.compile_options, "maxnreg": cap})
    found = compiled._compile_facts(spec, plan, torch_dtype, arch)
    blocks = occ.occupancy("sm_90", found["n_regs"], plan.num_warps, found["shared_bytes"]).blocks_per_sm
    return found["n_regs"], found["spill_store_bytes"] or 0, blocks


def cap_for_one_more_block(blocks: int, num_warps: int) -> int:
    """The largest multiple of 8 registers per thread at which blocks + 1 blocks of num_warps warps fit (0: none
    of at least 32)."""
    cap = REGISTERS_PER_SM // (32 * num_warps * (blocks + 1)) // 8 * 8
    return cap if cap >= 32 else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", required=True, type=Path)
    args = parser.parse_args()
    table = json.loads((ROOT / "kernels/tuned/nvidia-h200.json").read_text())
    seen, lines, caps = set(), [], []
    for entry in sorted(table["entries"], key=lambda e: (e["n_cols"], e["n_rows"])):
        if entry["dtype"] != "fp32" or entry["variant"] in ("torch", "staged_split") or entry["n_cols"] < 1000:
            continue
        variant, tunables = entry["variant"], dict(entry["tunables"])
        key = (variant, entry["n_cols"], json.dumps(tunables, sort_keys=True))
        if key in seen:
            continue
        seen.add(key)
        n_rows, n_cols = entry["n_rows"], entry["n_cols"]
        exact = facts(variant, n_rows, n_cols, tunables)
        fast = facts(variant, n_rows, n_cols, {**tunables, "fast_exp": 1})
        warps = tunables.get("num_warps", 4)
        cap = cap_for_one_more_block(exact[2], warps)
        capped = facts(variant, n_rows, n_cols, tunables, cap) if cap else None
        line = (
            f"{variant:9s} {n_rows:6d} x {n_cols:7d} {json.dumps(tunables, sort_keys=True):70s} "
            f"exact {exact[0]:3d} regs {exact[2]:2d} blocks | fast_exp {fast[0]:3d} regs {fast[2]:2d} blocks | "
            + (f"maxnreg {cap}: {capped[0]} regs, spill {capped[1]} B, {capped[2]} blocks" if capped else "no cap")
        )
        print(line, flush=True)
        lines.append(line)
        if capped and capped[1] == 0 and capped[2] > exact[2]:
            caps.append({"variant": variant, "n_rows": n_rows, "n_cols": n_cols, "tunables": tunables, "maxnreg": cap,
                         "blocks": [exact[2], capped[2]], "fast_exp_blocks": fast[2]})  # fmt: skip
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "regs_offline.txt").write_text("\n".join(lines) + "\n")
    (args.out_dir / "caps.json").write_text(json.dumps(caps, indent=1) + "\n")
    print(f"{len(caps)} spill-free caps that fit one more block -> {args.out_dir / 'caps.json'}")
    return 0


if __name__ == "__main__":
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
