"""`auto` vs torch.softmax and the peer backends, side by side in one run, against the copy bandwidth measured
in the same run.

Three shape sets: `default` (R=4096, the sweep's N set: powers of two 128..262144, their +-1 neighbours
and mid points), `large` (about 512 MB of input per shape, N = 1024..1048576) and `offgrid` (R and N off the
tuning grid: odd N, N not a multiple of 8, R not a power of two). Peers (`inductor`, `liger`, `quack`, see
blockscope.profiling.measure.backends) are checked against float64 before timing; a shape a peer does not run,
or gets wrong, keeps its reason in `<peer>_error` and no time. Targets: auto no slower than torch everywhere; on
the large set >= 85% of copy bandwidth for N <= 32768 and >= 75% up to N = 262144.

Directions (profiling.measure.directions, default forward only): 'backward' times dx from a saved y and dy (torch:
torch._softmax_backward_data; auto: Blockscope's Triton backward, the path choose_backward picks; peers: their
backward), 'forward_backward' one training step through autograd (auto: kernels.softmax(x, variant="auto")).
Each row carries its `direction`; dx is checked against float64 before timing; bytes moved are 3 (backward) and 5
(forward_backward) x R x N x element size.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from blockscope import kernels
from blockscope.kernels import DTYPE_NAMES, auto, dtype_from_name
from blockscope.profiling.measure import timing
from blockscope.profiling.measure.autotune import large_set_rows
from blockscope.profiling.measure.directions import (
    FORWARD,
    check_direction,
    direction_callable,
    gradient_inputs,
    parse_directions,
)
from blockscope.profiling.measure.sweep import capture_unsafe_for, check_result, default_n_values, sweep_rows
from blockscope.profiling.results import NOT_RUN_PREFIXES, WRONG_RESULT, bytes_moved

LARGE_N: tuple[int, ...] = tuple(2**k for k in range(10, 21))
OFFGRID: tuple[tuple[int, int], ...] = (  # (R, N) the tuner never saw
    (65536, 96),
    (30000, 200),
    (16384, 777),
    (4096, 1000),
    (5000, 1536),
    (3000, 5000),
    (2048, 12345),
    (4096, 32768),
    (2048, 50000),
    (777, 100000),
    (300, 300000),
    (64, 1048576),
)
SETS: tuple[str, ...] = ("default", "large", "offgrid")
PEERS: tuple[str, ...] = ("inductor", "liger", "quack")
TOLERANCE: dict[str, float] = {"fp32": 1e-5, "fp16": 2e-3, "bf16": 1.6e-2}  # max abs error vs float64


def shapes(set_name: str, dtype: torch.dtype) -> list[tuple[int, int]]:
    """(R, N) pairs of a shape set."""
    if set_name == "default":
        return [(sweep_rows(n, dtype, 4096), n) for n in default_n_values()]  # tiny N: rows moving >= 32 MB
    if set_name == "large":
        return [(large_set_rows(n, dtype), n) for n in LARGE_N]
    if set_name == "offgrid":
        return list(OFFGRID)
    raise ValueError(f"unknown shape set {set_name!r}; allowed: {', '.join(SETS)}")


def copy_target(set_name: str, n_cols: int) -> float | None:
    """Fraction of copy bandwidth the issue asks of `auto` (large set only)."""
    if set_name != "large":
        return None
    return 0.85 if n_cols <= 32768 else 0.75 if n_cols <= 262144 else None


def _max_error(y: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype) -> float:
    """max |y - expected| as the sweep measures it (in row chunks; inf for a NaN where the reference has none or
    a wrong shape)."""
    return check_result(y, expected, DTYPE_NAMES[dtype])[1]


def _peer_columns(
    peer: str,
    x: torch.Tensor,
    expected: torch.Tensor,
    tolerance: float,
    method: str,
    benchmark: Callable[..., timing.TimingStats],
    moved: int,
) -> dict[str, Any]:
    """`<peer>_us`, spread, GB/s and `<peer>_error` ('' or why it has no time: unsupported, failed, wrong)."""
    from blockscope.profiling.measure.backends import get_backend, unsupported_reason

    row: dict[str, Any] = {
        f"{peer}_us": math.nan,
        f"{peer}_p20_us": math.nan,
        f"{peer}_p80_us": math.nan,
        f"{peer}_gbps": math.nan,
        f"{peer}_error": "",
    }
    reason = unsupported_reason(peer, x.shape[0], x.shape[-1], x.dtype)
    if reason:
        row[f"{peer}_error"] = reason
        return row
    try:
        fn = get_backend(peer).prepare(x)
        error = _max_error(fn(), expected, x.dtype)  # the first call compiles (Inductor, Quack): outside the timing
        if not error <= tolerance:
            row[f"{peer}_error"] = f"wrong result: max abs error {error:.3g} over {tolerance:g}"
            return row
        stats = benchmark(fn, method)
    except Exception as error:  # a peer failing on a shape is a finding, not a crash
        text = str(error).strip().splitlines()
        row[f"{peer}_error"] = f"{type(error).__name__}: {text[0][:200] if text else ''}"
        return row
    row.update(
        {
            f"{peer}_us": stats.median_us,
            f"{peer}_p20_us": stats.p20_us,
            f"{peer}_p80_us": stats.p80_us,
            f"{peer}_gbps": moved / (stats.median_us * 1e3),
        }
    )
    return row


def bench_shape(
    set_name: str,
    n_rows: int,
    n_cols: int,
    dtype: torch.dtype,
    copy_gbps: float,
    method: str = "back_to_back_flushed",
    gpu_name: str | None = None,
    benchmark: Callable[..., timing.TimingStats] = timing.benchmark,
    device: str = "cuda",
    peers: Sequence[str] = (),
    direction: str = FORWARD,
) -> dict:
    """One shape: torch, auto and each peer timed back to back in this process (us), auto's choice, errors.
    `direction` 'backward' / 'forward_backward': their dx timed instead (bench_backward_shape)."""
    if direction != FORWARD:
        return bench_backward_shape(
            set_name,
            n_rows,
            n_cols,
            dtype,
            copy_gbps,
            method,
            direction,
            benchmark=benchmark,
            device=device,
            peers=peers,
        )
    x = torch.randn(n_rows, n_cols, device=device, dtype=dtype)
    variant, tunables = auto.choose(n_rows, n_cols, dtype, gpu_name)
    row: dict[str, Any] = {
        "set": set_name,
        "dtype": DTYPE_NAMES[dtype],
        "n_rows": n_rows,
        "n_cols": n_cols,
        "direction": FORWARD,
        "auto_variant": variant,
        "auto_tunables": json.dumps(tunables, sort_keys=True),
        "method": method,
        "error": "",
    }
    expected = kernels.reference_softmax(x)
    error = _max_error(kernels.softmax_auto(x), expected, dtype)
    tolerance = TOLERANCE[row["dtype"]]
    if not error <= tolerance:
        row["error"] = f"auto max abs error {error:.3g} over {tolerance:g}"
    moved = bytes_moved(n_rows, n_cols, row["dtype"])
    for peer in peers:
        row.update(_peer_columns(peer, x, expected, tolerance, method, benchmark, moved))
    del expected
    torch_stats = benchmark(lambda: torch.softmax(x, dim=-1), method)
    auto_stats = benchmark(lambda: kernels.softmax_auto(x), method)
    for peer in peers:
        row[f"auto_vs_{peer}"] = row[f"{peer}_us"] / auto_stats.median_us
    row.update(
        torch_us=torch_stats.median_us,
        torch_p20_us=torch_stats.p20_us,
        torch_p80_us=torch_stats.p80_us,
        auto_us=auto_stats.median_us,
        auto_p20_us=auto_stats.p20_us,
        auto_p80_us=auto_stats.p80_us,
        speedup=torch_stats.median_us / auto_stats.median_us,
        bytes_moved=moved,
        auto_gbps=moved / (auto_stats.median_us * 1e3),
        torch_gbps=moved / (torch_stats.median_us * 1e3),
    )
    row["auto_copy_fraction"] = row["auto_gbps"] / copy_gbps
    row["torch_copy_fraction"] = row["torch_gbps"] / copy_gbps
    row["copy_target"] = copy_target(set_name, n_cols)
    return row


def bench_backward_shape(
    set_name: str,
    n_rows: int,
    n_cols: int,
    dtype: torch.dtype,
    copy_gbps: float,
    method: str,
    direction: str,
    benchmark: Callable[..., timing.TimingStats] = timing.benchmark,
    device: str = "cuda",
    peers: Sequence[str] = (),
) -> dict:
    """One shape's `direction` ('backward' or 'forward_backward'): torch, auto and each peer's dx, checked against
    float64, then timed (us); the same columns as bench_shape (auto_variant names the Triton backward's path)."""
    from blockscope.kernels.backward import choose_backward
    from blockscope.profiling.measure.backends import unsupported_reason

    x = torch.randn(n_rows, n_cols, device=device, dtype=dtype)
    reference = kernels.reference_softmax(x)
    inputs = gradient_inputs(x, seed=0, reference=reference)
    path, tunables = choose_backward(n_rows, n_cols, dtype)
    name = DTYPE_NAMES[dtype]
    row: dict[str, Any] = {
        "set": set_name,
        "dtype": name,
        "n_rows": n_rows,
        "n_cols": n_cols,
        "direction": direction,
        "auto_variant": f"backward {path}",
        "auto_tunables": json.dumps(tunables, sort_keys=True),
        "method": method,
        "error": "",
    }
    moved = bytes_moved(n_rows, n_cols, name, direction)
    notes: list[str] = []

    def timed(backend: str) -> tuple[timing.TimingStats | None, str]:
        reason = unsupported_reason(backend, n_rows, n_cols, dtype, direction)
        if reason:
            return None, reason
        try:
            fn = direction_callable(direction, backend, {}, x, inputs)
            wrong, _ = check_direction(direction, fn(), inputs, reference, name)  # first call (compiles) untimed
            if wrong:
                return None, wrong
            unsafe = capture_unsafe_for(backend, direction) if method == "cuda_graph" else None
            if unsafe:  # a capture would poison the process: eager calls between events instead of a graph
                notes.append(f"{backend} not captured ({unsafe})")
                return benchmark(fn, method, capture=False), ""
            return benchmark(fn, method), ""
        except Exception as error:  # a backend failing on a shape is a finding, not a crash
            text = str(error).strip().splitlines()
            return None, f"{type(error).__name__}: {text[0][:200] if text else ''}"

    stats: dict[str, timing.TimingStats | None] = {}
    for backend in (*peers, "torch", "auto"):
        stats[backend], error = timed(backend)
        if backend in peers:
            row[f"{backend}_error"] = error
        elif error:
            row["error"] = "; ".join(filter(None, (row["error"], f"{backend}: {error}")))
    for backend, result in stats.items():
        prefix = backend
        row[f"{prefix}_us"] = result.median_us if result else math.nan
        row[f"{prefix}_p20_us"] = result.p20_us if result else math.nan
        row[f"{prefix}_p80_us"] = result.p80_us if result else math.nan
        row[f"{prefix}_gbps"] = moved / (result.median_us * 1e3) if result else math.nan
    for peer in peers:
        row[f"auto_vs_{peer}"] = row[f"{peer}_us"] / row["auto_us"]
    row.update(
        speedup=row["torch_us"] / row["auto_us"],
        bytes_moved=moved,
        auto_copy_fraction=row["auto_gbps"] / copy_gbps,
        torch_copy_fraction=row["torch_gbps"] / copy_gbps,
        copy_target=None,
        timing_note="; ".join(notes),
    )
    return row


def run_bench(
    dtypes: Sequence[str] = ("fp16", "bf16", "fp32"),
    sets: Sequence[str] = ("default", "large"),
    methods: Sequence[str] = ("back_to_back_flushed",),
    peers: Sequence[str] = (),
    progress: Callable[[int, int, tuple], None] | None = None,
    directions: Sequence[str] = (FORWARD,),
) -> tuple[pd.DataFrame, dict]:
    """Bench every shape of `sets` x `dtypes` x `methods` x `directions` on the current GPU, torch, auto and
    `peers` side by side; returns the table (one row per shape, method and direction) and the environment."""
    from blockscope.profiling.measure.env import fingerprint

    directions = parse_directions(directions)
    env = fingerprint()
    jobs = [
        (s, r, n, dtype_from_name(d), m, w)
        for d in dtypes
        for s in sets
        for r, n in shapes(s, dtype_from_name(d))
        for w in directions
        for m in methods
    ]
    rows = []
    for done, (set_name, n_rows, n_cols, dtype, method, direction) in enumerate(jobs):
        rows.append(
            bench_shape(
                set_name,
                n_rows,
                n_cols,
                dtype,
                env["copy_gbps"],
                method,
                env["gpu_name"],
                peers=peers,
                direction=direction,
            )
        )
        torch.cuda.empty_cache()
        if progress:
            progress(done + 1, len(jobs), (set_name, DTYPE_NAMES[dtype], n_rows, n_cols, method, direction))
    return pd.DataFrame(rows), env


def proton_calls(table: pd.DataFrame) -> list[tuple[str, Callable[[], Callable[[], Any]]]]:
    """(label, make) per forward shape of a bench table for torch.softmax and auto (profiling.measure.proton);
    each `make` allocates its input when called, so one shape's input lives at a time."""
    calls = []
    forward = table[table["direction"] == FORWARD] if "direction" in table.columns else table
    for dtype_name, n_rows, n_cols in forward[["dtype", "n_rows", "n_cols"]].drop_duplicates().itertuples(index=False):
        for backend in ("torch", "auto"):

            def make(backend: str = backend, shape: tuple = (int(n_rows), int(n_cols)), name: str = dtype_name):
                x = torch.randn(*shape, device="cuda", dtype=dtype_from_name(name))
                if backend == "torch":
                    return lambda: torch.softmax(x, dim=-1)
                return lambda: kernels.softmax(x, "auto")

            calls.append((f"{backend} {dtype_name} R={int(n_rows)} N={int(n_cols)}", make))
    return calls


def sections(table: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame]]:
    """(direction, method, rows) in table order; a table without a `direction` column is all forward."""
    ways = table["direction"].fillna(FORWARD) if "direction" in table.columns else pd.Series(FORWARD, table.index)
    keys = list(dict.fromkeys(zip(ways, table["method"], strict=True)))
    return [(way, method, table[(ways == way) & (table["method"] == method)]) for way, method in keys]


def peers_in(table: pd.DataFrame) -> list[str]:
    """Peer backends benched in `table` (those with a `<peer>_us` column), in PEERS order."""
    return [p for p in PEERS if f"{p}_us" in table.columns]


def peer_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per method and peer: shapes both ran, geomean of peer time / auto time (> 1: auto faster), the worst
    ratio and its shape, shapes under 0.95, and shapes the peer did not run (by reason class)."""
    rows = []
    for direction, method, part in sections(table):
        for peer in peers_in(part):
            both = part[part[f"{peer}_us"].notna() & (part["error"] == "")]
            ratios = both[f"auto_vs_{peer}"] if len(both) else pd.Series(dtype=float)
            worst = both.loc[ratios.idxmin()] if len(both) else None
            errors = part[f"{peer}_error"].fillna("")
            rows.append(
                {
                    "direction": direction,
                    "method": method,
                    "peer": peer,
                    "shapes": len(both),
                    "geomean_auto_speedup": geomean(ratios),
                    "min_auto_speedup": float(ratios.min()) if len(both) else math.nan,
                    "worst_shape": "" if worst is None else f"{worst['dtype']} {worst['n_rows']}x{worst['n_cols']}",
                    "below_0_95": int((ratios < 0.95).sum()),
                    "unsupported": int(errors.str.startswith(NOT_RUN_PREFIXES).sum()),
                    "wrong": int(errors.str.startswith(WRONG_RESULT).sum()),
                    "failed": int(((errors != "") & ~errors.str.startswith((*NOT_RUN_PREFIXES, WRONG_RESULT))).sum()),
                }
            )
    return pd.DataFrame(rows)


def geomean(values: pd.Series) -> float:
    values = values[values > 0]
    return math.exp(values.astype(float).map(math.log).mean()) if len(values) else math.nan


def summary(table: pd.DataFrame) -> dict[str, Any]:
    """Geometric-mean speedups, losses to torch and missed bandwidth targets."""
    large = table[table["set"] == "large"]
    targeted = large[large["copy_target"].notna()]
    missed = targeted[targeted["auto_copy_fraction"] < targeted["copy_target"]]
    return {
        "geomean_speedup_default": geomean(table.loc[table["set"] == "default", "speedup"]),
        "geomean_speedup_large": geomean(large["speedup"]),
        "geomean_speedup_offgrid": geomean(table.loc[table["set"] == "offgrid", "speedup"]),
        "shapes": len(table),
        "losses_to_torch": table[table["speedup"] < 1.0][["set", "dtype", "n_rows", "n_cols", "speedup"]],
        # slower even against the run-to-run spread: auto's 20th percentile above torch's 80th
        "losses_beyond_spread": table[(table["speedup"] < 1.0) & (table["auto_p20_us"] > table["torch_p80_us"])][
            ["set", "dtype", "n_rows", "n_cols", "speedup", "auto_variant"]
        ],
        "missed_targets": missed[["dtype", "n_rows", "n_cols", "auto_copy_fraction", "copy_target"]],
        "errors": table[table["error"] != ""][["set", "dtype", "n_cols", "error"]],
    }


SET_LABELS: dict[str, str] = {
    "default": "default set (R=4096)",
    "large": "large set (~512 MB input)",
    "offgrid": "off-grid set",
}
METHOD_NOTES: dict[str, str] = {
    "back_to_back_flushed": "launches queued back to back behind a GPU spin kernel, so host launch gaps stay out; "
    "L2 flushed before each rep; median",
    "cuda_graph": "CUDA-graph replay, launch cost removed; median",
    "per_call_events": "CUDA events around each call, host launch gaps included; median",
}


def to_markdown(table: pd.DataFrame, env: dict, command: str) -> str:
    """docs/benchmarks.md: provenance, then per timing method the summary, peers and one line per shape."""
    methods = list(dict.fromkeys(table["method"]))
    peers = peers_in(table)
    title = "`auto` vs torch.softmax" + (f" and {', '.join(peers)}" if peers else "")
    lines = [
        f"# Benchmarks: {title}",
        "",
        f"Made by `{command}` on {env['gpu_name']} (CC {env['compute_capability']}, {env['sm_count']} SMs, driver "
        f"{env['driver_version']}), torch {env['torch_version']}, Triton {env['triton_version']}, "
        f"{env['measured_at']}. Timing: "
        + "; ".join(f"`{m}` ({METHOD_NOTES.get(m, m)})" for m in methods)
        + f". All backends measured side by side in this one run. Copy bandwidth measured in the same run: "
        f"**{env['copy_gbps']:.0f} GB/s** (device-to-device copy, read + write bytes).",
    ]
    if peers:
        lines += [
            "",
            "Peers are checked against a float64 softmax before timing; a shape a peer does not run "
            "(its support rules) or gets wrong has no time and its reason below. `auto vs X` = X's time / "
            "auto's time (> 1: auto is faster).",
            "",
            "| method | peer | shapes both ran | geomean auto vs peer | worst | at | below 0.95 | unsupported "
            "| wrong | failed |",
            "|---|---|---:|---:|---:|---|---:|---:|---:|---:|",
        ]
        for r in peer_summary(table).itertuples():
            lines.append(
                f"| {section_label(r.direction, r.method)} | {r.peer} | {r.shapes} | "
                f"{r.geomean_auto_speedup:.2f}x | {r.min_auto_speedup:.2f}x | {r.worst_shape} | "
                f"{r.below_0_95} | {r.unsupported} | {r.wrong} | {r.failed} |"
            )
        reasons = sorted({(p, str(e)) for p in peers for e in table[f"{p}_error"].fillna("") if e})
        if reasons:
            lines += ["", "Why a peer has no time (distinct reasons):", ""]
            lines += [f"- {p}: {e}" for p, e in reasons]
    ways = {direction for direction, _, _ in sections(table)}
    if ways - {FORWARD}:
        lines += [
            "",
            "Directions: `forward` y = softmax(x); `backward` dx from a saved y and dy (auto: Blockscope's "
            "Triton backward, `auto variant` names its path; torch: `torch._softmax_backward_data`), 3 x R x N "
            "elements moved; `forward_backward` one training step through autograd (auto: `kernels.softmax(x, "
            "variant='auto')`), 5 x R x N moved. dx is checked against float64 before timing.",
        ]
    for direction, method, part in sections(table):
        info = summary(part)
        lines += [
            "",
            f"## `{section_label(direction, method)}`",
            "",
            "- Geometric-mean speedup over torch: "
            + ", ".join(
                f"{label} **{info[f'geomean_speedup_{name}']:.2f}x**"
                for name, label in SET_LABELS.items()
                if name in set(part["set"])
            )
            + f" ({info['shapes']} shapes).",
            f"- Shapes where auto is slower than torch: {len(info['losses_to_torch'])}"
            + (
                ""
                if info["losses_to_torch"].empty
                else " ("
                + ", ".join(
                    f"{r.dtype} R={r.n_rows} N={r.n_cols}: {r.speedup:.2f}x"
                    for r in info["losses_to_torch"].itertuples()
                )
                + ")"
            )
            + ".",
            f"- Of those, slower beyond the run-to-run spread (auto's p20 above torch's p80): "
            f"{len(info['losses_beyond_spread'])}"
            + (
                ""
                if info["losses_beyond_spread"].empty
                else " ("
                + ", ".join(
                    f"{r.dtype} R={r.n_rows} N={r.n_cols}: {r.speedup:.2f}x with {r.auto_variant}"
                    for r in info["losses_beyond_spread"].itertuples()
                )
                + ")"
            )
            + "; a `torch` choice runs torch.softmax "
            "itself, so its ratio is noise around 1.",
            f"- Large-set shapes under their copy-bandwidth target: {len(info['missed_targets'])}"
            + (
                ""
                if info["missed_targets"].empty
                else " ("
                + ", ".join(
                    f"{r.dtype} N={r.n_cols}: {100 * r.auto_copy_fraction:.0f}% < {100 * r.copy_target:.0f}%"
                    for r in info["missed_targets"].itertuples()
                )
                + ")"
            )
            + ".",
            "",
            "| set | dtype | R | N | torch us | auto variant | config | auto us | speedup | auto GB/s | % copy "
            "| target |" + "".join(f" {p} us | auto vs {p} |" for p in peers),
            "|---|---|---:|---:|---:|---|---|---:|---:|---:|---:|---:|" + "---:|---:|" * len(peers),
        ]
        for r in part.to_dict("records"):
            target = "" if pd.isna(r.get("copy_target")) else f"{100 * r['copy_target']:.0f}%"
            cells = "".join(
                f" {r[f'{p}_us']:.1f} | {r[f'auto_vs_{p}']:.2f} |"
                if not pd.isna(r[f"{p}_us"])
                else f" - | {_short_reason(r[f'{p}_error'])} |"
                for p in peers
            )
            lines.append(
                f"| {r['set']} | {r['dtype']} | {r['n_rows']} | {r['n_cols']} | {r['torch_us']:.1f} | "
                f"{r['auto_variant']} | `{r['auto_tunables']}` | {r['auto_us']:.1f} | {r['speedup']:.2f} | "
                f"{r['auto_gbps']:.0f} | {100 * r['auto_copy_fraction']:.0f}% | {target} |{cells}"
            )
    return "\n".join(lines) + "\n"


def section_label(direction: str, method: str) -> str:
    """'cuda_graph' for forward rows, 'cuda_graph, backward' otherwise."""
    return method if direction == FORWARD else f"{method}, {direction}"


def _short_reason(error: Any) -> str:
    text = "" if error is None or (isinstance(error, float) and math.isnan(error)) else str(error)
    for prefix in ("unsupported", "unavailable", "wrong"):
        if text.startswith(prefix):
            return prefix
    return "failed" if text else "-"


def write_outputs(table: pd.DataFrame, env: dict, command: str, markdown: Path, csv: Path | None = None) -> None:
    markdown.parent.mkdir(parents=True, exist_ok=True)
    markdown.write_text(to_markdown(table, env, command))
    if csv is not None:
        table.assign(**{k: v for k, v in env.items() if k in ("gpu_name", "copy_gbps", "measured_at")}).to_csv(
            csv, index=False
        )


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
