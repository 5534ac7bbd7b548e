"""Who is at least as exact as torch.softmax: per (variant, dtype), config-by-config against torch's row.

A config is (dtype, R, N, input) on one GPU; a variant 'beats' torch there when its value (ulp_max or ulp_mean)
is smaller, 'ties' when equal, 'loses' when larger. NaN mismatches (ulp_max = inf) compare like any value.
"""

from __future__ import annotations

from typing import Any

TORCH = "torch"
KEYS = ("dtype", "n_rows", "n_cols", "numerics_input")


def versus_torch(table: Any) -> Any:
    """One row per (variant, dtype): configs compared, beats/ties/loses on ulp_max and ulp_mean, the worst
    loss on ulp_max (N, input, values) and `at_least_as_exact` (no loss on either). `table`: results rows."""
    import pandas as pd

    keys = [*KEYS, *(["gpu_name"] if "gpu_name" in table.columns else [])]
    ok = table[(table["error"].fillna("") == "") & table["ulp_max"].notna()]
    ok = ok.drop_duplicates(subset=["variant", *keys])
    base = ok[ok["variant"] == TORCH][[*keys, "ulp_max", "ulp_mean"]]
    others = ok[ok["variant"] != TORCH]
    merged = others.merge(base, on=keys, suffixes=("", "_torch"))
    records = []
    for (variant, dtype), part in merged.groupby(["variant", "dtype"], sort=True):
        record: dict[str, Any] = {"variant": variant, "dtype": dtype, "configs": len(part)}
        for column in ("ulp_max", "ulp_mean"):
            ours, theirs = part[column].astype(float), part[f"{column}_torch"].astype(float)
            record[f"{column}_beats"] = int((ours < theirs).sum())
            record[f"{column}_ties"] = int((ours == theirs).sum())
            record[f"{column}_loses"] = int((ours > theirs).sum())
        gap = part["ulp_max"].astype(float) - part["ulp_max_torch"].astype(float)
        worst = part.loc[gap.fillna(0).idxmax()] if record["ulp_max_loses"] else None
        record["worst_loss"] = (
            ""
            if worst is None
            else (
                f"N={int(worst['n_cols'])} {worst['numerics_input']}: {float(worst['ulp_max']):g} vs torch "
                f"{float(worst['ulp_max_torch']):g} ULP"
            )
        )
        record["at_least_as_exact"] = record["ulp_max_loses"] == 0 and record["ulp_mean_loses"] == 0
        records.append(record)
    return pd.DataFrame(
        records,
        columns=[
            "variant",
            "dtype",
            "configs",
            "ulp_max_beats",
            "ulp_max_ties",
            "ulp_max_loses",
            "ulp_mean_beats",
            "ulp_mean_ties",
            "ulp_mean_loses",
            "worst_loss",
            "at_least_as_exact",
        ],
    )


def summary_lines(table: Any) -> list[str]:
    """Printable verdict per (variant, dtype) against torch.softmax (see `versus_torch`)."""
    verdicts = versus_torch(table)
    if verdicts.empty:
        return ["no variant has rows comparable with torch (same dtype, R, N and input, both without error)"]
    lines = []
    for r in verdicts.itertuples(index=False):
        verdict = "at least as exact as torch" if r.at_least_as_exact else "LESS exact than torch somewhere"
        lines.append(
            f"{r.variant:11} {r.dtype:5} {verdict}: max ULP beats/ties/loses {r.ulp_max_beats}/"
            f"{r.ulp_max_ties}/{r.ulp_max_loses}, mean ULP {r.ulp_mean_beats}/{r.ulp_mean_ties}/"
            f"{r.ulp_mean_loses} of {r.configs} configs" + (f"; worst: {r.worst_loss}" if r.worst_loss else "")
        )
    return lines
