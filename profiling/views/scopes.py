"""A Proton instrumentation trace (`bench --proton-scopes`, profiling/measure/proton_scopes.py) as a breakdown per
scope: how many cycles each warp spends loading, exchanging partial max/sum with the other programs, storing.

The trace is Proton's Chrome-trace JSON, `{"displayTimeUnit": "ns", "traceEvents": [...]}`, with one "X" event per
scope instance per warp per CTA: `name` the scope, `cat` the kernel, `pid` "<kernel> Core<SM> CTA<block id>", `tid`
"warp <id> (line <n>)", `ts`/`dur` in cycles / 1000 (Proton assumes a 1 GHz clock; `args["Frequency (MHz)"]` says
which). `scope_events` reads it (files are untrusted: size and event count bounded, anything else a
ScopeTraceError, a ValueError, with one line); `scope_breakdown` sums each warp's instances of a scope (splitrow
runs its scopes once per row) and gives per scope the median and p90 of those per-warp cycles over every warp of
every CTA, the scope's share of the `kernel` scope's cycles, and the CTAs and warps seen; `other` is each warp's
`kernel` cycles not in a named scope. Pure pandas.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from blockscope.profiling.results.bounded import load_json
from blockscope.profiling.results.sidecars import proton_files

MAX_TRACE_BYTES = 128 * 1024 * 1024
MAX_EVENTS = 2_000_000
MAX_TRACE_FILES = 200  # per page: scope files listed beside the loaded results
KERNEL_SCOPE = "kernel"
OTHER_SCOPE = "other"
SCOPES_SUFFIX = "_scopes"
PID = re.compile(r"^(?P<kernel>.*?)\s*Core(?P<sm>\d+)\s+CTA(?P<cta>\d+)$")
TID = re.compile(r"^warp\s+(?P<warp>\d+)")
CONFIG = re.compile(r"^(?P<variant>[a-z_]+)-(?P<dtype>[a-z0-9]+)-N(?P<n_cols>\d+)-R(?P<n_rows>\d+)(?P<extra>.*)$")
EVENT_COLUMNS = ("kernel", "sm", "cta", "warp", "scope", "start_cycles", "cycles")
BREAKDOWN_COLUMNS = (
    "kernel",
    "scope",
    "median_cycles",
    "p90_cycles",
    "mean_cycles",
    "share_of_kernel",
    "ctas",
    "warps",
    "instances_per_warp",
)


class ScopeTraceError(ValueError):
    """Not a readable Proton instrumentation trace; the message is one line."""


def scopes_dir(proton_dir: str | Path, run_id: str) -> Path:
    """The folder of one run's scope traces inside a `<results stem>_proton/` folder: '<run id>_scopes/'."""
    return Path(proton_dir) / f"{run_id}{SCOPES_SUFFIX}"


def find_scope_traces(results_paths: Iterable[str | Path | None]) -> list[Path]:
    """Scope traces (`<stem>_proton/*_scopes/*.json`) beside each results path given (None entries skipped), inside
    the folders the dashboard may read, sorted, at most MAX_TRACE_FILES."""
    return proton_files(results_paths, f"*{SCOPES_SUFFIX}/*.json", MAX_TRACE_FILES)


def config_label(stem: str) -> dict[str, Any]:
    """variant, dtype, n_cols, n_rows and the rest ('extra') of a scope file's stem ('splitrow-fp16-N65536-R512');
    only `config` (the stem) for other names."""
    m = CONFIG.match(stem)
    if m is None:
        return {"config": stem}
    return {
        "config": stem,
        "variant": m["variant"],
        "dtype": m["dtype"],
        "n_cols": int(m["n_cols"]),
        "n_rows": int(m["n_rows"]),
        "extra": m["extra"].lstrip("-"),
    }


def _load(source: str | Path | bytes, label: str) -> Any:
    return load_json(source, label, MAX_TRACE_BYTES, ScopeTraceError, "a Proton instrumentation trace (.json)")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value or abs(value) == float("inf"):
        return None
    return float(value)


def scope_events(source: str | Path | bytes, name: str | None = None) -> pd.DataFrame:
    """One row per scope instance per warp: EVENT_COLUMNS, cycles from `dur` (x the trace's frequency in MHz, 1000
    when absent); ScopeTraceError when the file is too large, not a trace, or has no scope events."""
    label = name or (str(source) if isinstance(source, str | Path) else "trace")
    data = _load(source, label)
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise ScopeTraceError(f"{label}: no traceEvents list; allowed: a Proton trace (data='trace')")
    if len(events) > MAX_EVENTS:
        raise ScopeTraceError(f"{label}: {len(events)} events, over {MAX_EVENTS}")
    rows = []
    for event in events:
        if not isinstance(event, dict) or event.get("ph") != "X":
            continue
        scope, pid, tid = event.get("name"), event.get("pid"), event.get("tid")
        dur, ts = _number(event.get("dur")), _number(event.get("ts"))
        if not isinstance(scope, str) or not scope or dur is None or dur < 0:
            continue
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        mhz = _number(args.get("Frequency (MHz)"))
        scale = mhz if mhz is not None and mhz > 0 else 1000.0
        pid_match = PID.match(pid) if isinstance(pid, str) else None
        tid_match = TID.match(tid) if isinstance(tid, str) else None
        kernel = event.get("cat") if isinstance(event.get("cat"), str) else None
        rows.append(
            (
                kernel or (pid_match["kernel"] if pid_match else ""),
                int(pid_match["sm"]) if pid_match else -1,
                int(pid_match["cta"]) if pid_match else str(pid)[:200],
                int(tid_match["warp"]) if tid_match else str(tid)[:200],
                scope[:200],
                (ts or 0.0) * scale,
                dur * scale,
            )
        )
    if not rows:
        raise ScopeTraceError(f'{label}: no scope events ("X" events with a name and a duration)')
    table = pd.DataFrame(rows, columns=list(EVENT_COLUMNS))
    for column in ("cta", "warp"):  # mixed labels (a foreign pid or tid) stay text
        if table[column].map(type).eq(int).all():
            table[column] = table[column].astype("int64")
        else:
            table[column] = table[column].astype(str)
    return table


def per_warp_cycles(events: pd.DataFrame) -> pd.DataFrame:
    """Cycles per (kernel, cta, warp, scope) summed over the scope's instances, with their count; plus `other`
    (the warp's `kernel` cycles less its other scopes', at least 0) where a `kernel` scope was recorded."""
    keys = ["kernel", "cta", "warp", "scope"]
    warps = events.groupby(keys, sort=False).agg(cycles=("cycles", "sum"), instances=("cycles", "size")).reset_index()
    whole = warps[warps["scope"] == KERNEL_SCOPE].set_index(keys[:3])["cycles"]
    if len(whole):
        inner = warps[warps["scope"] != KERNEL_SCOPE].groupby(keys[:3])["cycles"].sum()
        other = (whole - inner.reindex(whole.index).fillna(0.0)).clip(lower=0.0)
        extra = other.rename("cycles").reset_index().assign(scope=OTHER_SCOPE, instances=1)
        warps = pd.concat([warps, extra[warps.columns]], ignore_index=True)
    return warps


def scope_breakdown(source: str | Path | bytes | pd.DataFrame, name: str | None = None) -> pd.DataFrame:
    """BREAKDOWN_COLUMNS per (kernel, scope), in the order the scopes start (`kernel` first, `other` last): cycles
    per warp (median, p90, mean over every warp of every CTA), share_of_kernel (the scope's cycles summed over warps
    / the `kernel` scope's; without one, / all scopes'), CTAs and warps seen, median instances per warp."""
    events = source if isinstance(source, pd.DataFrame) else scope_events(source, name)
    warps = per_warp_cycles(events)
    order = events.groupby("scope")["start_cycles"].median().sort_values()
    rank = {scope: i for i, scope in enumerate(order.index)}
    rank[KERNEL_SCOPE], rank[OTHER_SCOPE] = -1, len(rank) + 1
    out = []
    for (kernel, scope), part in warps.groupby(["kernel", "scope"], sort=False):
        everything = warps[warps["kernel"] == kernel]
        whole = everything.loc[everything["scope"] == KERNEL_SCOPE, "cycles"].sum()
        if not whole:
            whole = everything.loc[everything["scope"] != OTHER_SCOPE, "cycles"].sum()
        cycles = part["cycles"]
        out.append(
            {
                "kernel": kernel,
                "scope": scope,
                "median_cycles": float(cycles.median()),
                "p90_cycles": float(cycles.quantile(0.9)),
                "mean_cycles": float(cycles.mean()),
                "share_of_kernel": float(cycles.sum() / whole) if whole else float("nan"),
                "ctas": int(part["cta"].nunique()),
                "warps": int(len(part)),
                "instances_per_warp": float(part["instances"].median()),
                "_rank": rank.get(scope, len(rank)),
            }
        )
    table = pd.DataFrame(out).sort_values(["kernel", "_rank"], kind="stable").drop(columns="_rank")
    return table.reset_index(drop=True)[list(BREAKDOWN_COLUMNS)]


def breakdowns(sources: Iterable[str | Path]) -> tuple[pd.DataFrame, dict[str, str]]:
    """The breakdowns of several scope files, one table with config_label's columns in front; and per file that
    could not be read, its error (one line)."""
    tables, errors = [], {}
    for source in sources:
        path = Path(source)
        try:
            table = scope_breakdown(path, path.name)
        except ScopeTraceError as error:
            errors[path.name] = str(error)
            continue
        label = config_label(path.stem)
        tables.append(table.assign(**{k: v for k, v in label.items()}))
    if not tables:
        return pd.DataFrame(columns=["config", *BREAKDOWN_COLUMNS]), errors
    table = pd.concat(tables, ignore_index=True)
    front = [c for c in ("config", "variant", "dtype", "n_cols", "n_rows", "extra") if c in table.columns]
    return table[front + list(BREAKDOWN_COLUMNS)], errors


def format_breakdown(table: pd.DataFrame) -> str:
    """A plain-text table of one breakdown (the CLI's print): scope, median and p90 cycles per warp, % of the
    kernel, CTAs, warps."""
    lines = [f"{'scope':12} {'median cyc/warp':>16} {'p90 cyc/warp':>13} {'% kernel':>9} {'CTAs':>6} {'warps':>7}"]
    for r in table.itertuples():
        share = f"{100 * r.share_of_kernel:8.1f}%" if r.share_of_kernel == r.share_of_kernel else f"{'-':>9}"
        lines.append(
            f"{str(r.scope)[:12]:12} {r.median_cycles:>16,.0f} {r.p90_cycles:>13,.0f} {share} {r.ctas:>6} {r.warps:>7}"
        )
    return "\n".join(lines)
