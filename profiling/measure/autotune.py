"""Autotuner for `auto`: measures variant x num_warps x tile x rows-per-program x stages on this GPU and
writes the tuning table kernels/auto.py reads (JSON, one file per GPU).

Every candidate is checked against the float64 reference before it is timed; a failing candidate is
recorded with its error and skipped. The fastest few and torch are then timed again, interleaved (`recheck`), so
a pick one re-measurement would reverse is not kept. The tuner reports its own cost (compile + measure seconds).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import statistics
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import torch

from blockscope import kernels
from blockscope.kernels import DTYPE_NAMES, dtype_from_name, get_variant, next_power_of_2
from blockscope.kernels.auto import TABLE_FORMAT, gpu_key, user_table_dir

Candidate = tuple[str, dict[str, int]]
Timer = Callable[[Callable[[], object]], float]  # zero-arg closure -> median microseconds
RECHECK_TOP, RECHECK_ROUNDS = 3, 3  # configs timed again after the first pass, and how many interleaved rounds
TIE_FRACTION = 0.03  # rechecked configs within 3% of the fastest are a tie for break_ties
TIEBREAK_ROUNDS = 3  # interleaved rounds of the tie-break timer; a tied config's tiebreak_us is their median


SPLITROW_SHAPES: tuple[tuple[int, int], ...] = ((2048, 2), (4096, 4), (8192, 8), (16384, 16))  # (chunk, warps)


def candidates(
    n_rows: int, n_cols: int, dtype: torch.dtype = torch.float16, variants: Iterable[str] | None = None
) -> list[Candidate]:
    """Configurations worth timing for one shape (pruned by BLOCK_SIZE and by what won on the H200; every one
    valid for the variant in `dtype`); `variants`: only those variants' configurations. GPU-only (Gluon) variants
    are offered where they can run."""
    from blockscope.kernels import cluster, splitrow, staged, staged_split, stagedrows, tinyrows, vecrows, warprows

    block = next_power_of_2(n_cols)
    found: list[Candidate] = []
    if block <= tinyrows.MAX_N:  # back-to-back tiny rows as flat spans of 2K to 16K elements
        for span in (2048, 4096, 8192, 16384):
            rows = max(tinyrows.MIN_ROWS, min(tinyrows.MAX_ROWS, span // block))
            found += [("tinyrows", {"rows_per_program": rows, "num_warps": w}) for w in (2, 4, 8)]
    if block <= 4096:
        for lanes in (1024, 4096, 16384):
            rows = min(256, max(1, lanes // block))
            for num_warps in (2, 4, 8) if block <= 2048 else (4, 8):  # 2 warps won at N=1000 (probe_vec_h200.csv)
                found.append(("multirow", {"rows_per_program": rows, "num_warps": num_warps}))
    if block <= 32768:  # one program per row (wider rows spill)
        warps = (1, 2, 4) if block <= 1024 else (4, 8, 16) if block <= 8192 else (8, 16, 32)
        found += [("teaching", {"num_warps": w}) for w in warps]
        if block >= 512:
            found += [("persistent", {"num_warps": w, "num_stages": 1}) for w in warps[1:]]
    if block <= vecrows.MAX_N and vecrows.misaligned(n_cols, dtype):  # whole vectors from the boundary below
        found += [("vecrows", {"num_warps": w}) for w in ((2, 4, 8) if block <= 2048 else (4, 8, 16))]
    if 1024 <= block < 4096 and n_cols % 8:  # rows not 16-byte aligned: one program per row through an aligned window
        found += [("splitrow", {"chunk": 2 * block, "num_warps": w, "window": 1}) for w in (4, 8)]
    if block >= 4096:  # chunks in registers: 16 elements per thread or more; the counter only pays for many chunks
        for chunk, num_warps in SPLITROW_SHAPES:
            chunks = splitrow.plan(1, n_cols, torch.float16, chunk=chunk).constexprs["CHUNKS"]
            if chunk > 2 * block or chunks > 256:
                continue
            for counter in (0,) if chunks <= 8 else (1,) if chunks > 32 else (0, 1):
                for prefetch in (0, 1):
                    found.append(
                        ("splitrow", {"chunk": chunk, "num_warps": num_warps, "prefetch": prefetch, "counter": counter})
                    )
    if block >= 65536:
        found.append(("online", {"tile": 4096, "num_warps": 8}))
    if block >= 4096:  # rows staged in shared memory (Gluon): 4 warps only where a row is small
        found += [("staged", {"num_warps": w}) for w in ((4, 8, 16) if block <= 16384 else (8, 16))]
    if block >= 32768:  # rows over a cluster of staged programs: chunks of 64 KB (the default) and 32 KB
        programs = staged.default_cluster(n_cols, dtype.itemsize)
        found.append(("staged", {"num_warps": 8, "cluster": min(cluster.MAX_CLUSTER, 2 * programs)}))
        if dtype.itemsize == 4:  # register-held chunks over a cluster: as fast as staged on fp32 rows only
            found += [("cluster", {}), ("cluster", {"chunk": 16384, "num_warps": 16})]
    if block <= warprows.MAX_N:  # rows over thread groups (Gluon): the default layout and its neighbours
        for threads in _warprows_threads(n_cols, dtype):
            found += [
                ("warprows", {"threads_per_row": threads, "num_warps": w})
                for w in ((4, 8) if threads <= 256 else (16,))
            ]
    copy = staged.copy_elements(dtype.itemsize, n_cols)
    if 1024 <= block <= stagedrows.MAX_N and copy:  # rows over thread groups staged in shared memory (Gluon)
        for threads in _threads_around(stagedrows.default_threads_per_row(n_cols, copy)):
            found += [("stagedrows", {"threads_per_row": threads, "num_warps": w}) for w in (4, 8)]
    if block >= 32768:  # chunks of 64 KB (default) and 32 KB staged, programs cooperating per row
        chunks = staged_split.default_chunks(n_cols, dtype)
        found += [("staged_split", {"num_warps": w, "chunks": chunks}) for w in (8, 16)]
        found.append(("staged_split", {"num_warps": 8, "chunks": min(staged_split.MAX_CHUNKS, 2 * chunks)}))
    unique = {(v, tuple(sorted(t.items()))): (v, t) for v, t in found}
    wanted = set(variants) if variants is not None else None
    return [c for c in unique.values() if (wanted is None or c[0] in wanted) and _valid(c, n_rows, n_cols, dtype)]


def _warprows_threads(n_cols: int, dtype: torch.dtype) -> tuple[int, ...]:
    """threads_per_row worth timing: the default (Quack's rule) and half and twice it (the H200 probe,
    experiments/2026-12-01-warprows: 8 won at N=96 and 200 where the default is 16 and 32; 256 at N=5000, not 128)."""
    from blockscope.kernels import warprows

    return _threads_around(warprows.default_threads_per_row(n_cols, warprows.vector_width(dtype.itemsize, n_cols)))


def _threads_around(default: int) -> tuple[int, ...]:
    """A threads_per_row default and half and twice it (plans refuse those that do not fit the shape)."""
    return tuple(t for t in (default // 2, default, default * 2) if 1 <= t <= 512)


def _valid(candidate: Candidate, n_rows: int, n_cols: int, dtype: torch.dtype) -> bool:
    """The variant runs here and its plan takes this shape."""
    spec = get_variant(candidate[0])
    if n_cols > spec.limit(dtype) or not spec.runs_here():
        return False
    try:
        spec.plan(n_rows, n_cols, dtype, **candidate[1])
    except ValueError:
        return False
    return True


def _check(output: torch.Tensor, x: torch.Tensor) -> str:
    expected = kernels.reference_softmax(x)
    tolerance = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}[x.dtype]
    error = (output.to(torch.float64) - expected).abs().max().item()
    return "" if error <= tolerance else f"max abs error {error:.3g} over tolerance {tolerance:g}"


def tune_shape(
    n_rows: int,
    n_cols: int,
    dtype: torch.dtype,
    timer: Timer,
    device: str = "cuda",
    candidate_list: Iterable[Candidate] | None = None,
    tiebreak: Timer | None = None,
    incumbent: Candidate | None = None,
) -> list[dict]:
    """Time torch.softmax and every candidate for one shape; one record per config (us = median). With
    `tiebreak`, a tie after the recheck is broken by that timer (break_ties). `incumbent` (a table's current pick
    when retuning it) is timed first and always rechecked, so it is never replaced without a side-by-side
    re-measurement (its record gets `incumbent`: True)."""
    x = torch.randn(n_rows, n_cols, device=device, dtype=dtype)
    records = []
    start = time.perf_counter()
    torch_us = timer(lambda: torch.softmax(x, dim=-1))  # rechecked below with the fastest configs
    records.append(
        {"variant": "torch", "tunables": {}, "median_us": torch_us, "error": "", "seconds": time.perf_counter() - start}
    )
    calls: dict[int, Callable[[], object]] = {0: lambda: torch.softmax(x, dim=-1)}
    configs = list(candidate_list) if candidate_list is not None else candidates(n_rows, n_cols, dtype)
    if incumbent is not None:
        configs = [incumbent] + [c for c in configs if c != incumbent]
    for variant, tunables in configs:
        start = time.perf_counter()
        record = {"variant": variant, "tunables": tunables, "median_us": math.nan, "error": ""}
        try:
            launcher = get_variant(variant).launcher
            record["error"] = _check(launcher(x, **tunables), x)
            if not record["error"]:
                call = calls[len(records)] = lambda launcher=launcher, tunables=tunables: launcher(x, **tunables)
                record["median_us"] = timer(call)
        except Exception as error:  # a failing config is recorded, the tuning goes on
            record["error"] = f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"
        record["seconds"] = time.perf_counter() - start
        records.append(record)
    if incumbent is not None:
        records[1]["incumbent"] = True
    recheck(records, calls, timer, always=(1,) if incumbent is not None else ())
    if tiebreak is not None:
        break_ties(records, calls, tiebreak)
    torch_us = records[0]["median_us"]
    for record in records:
        record.update(dtype=DTYPE_NAMES[dtype], n_rows=n_rows, n_cols=n_cols, torch_us=torch_us)
    return records


def interleaved_rounds(
    indices: list[int], calls: dict[int, Callable[[], object]], timer: Timer, rounds: int
) -> dict[int, list[float]]:
    """{index: us of each round}: every call in `indices` timed once per round, the order rotating each round (so
    drift over the rounds hits all alike)."""
    rounds_us: dict[int, list[float]] = {i: [] for i in indices}
    for round_index in range(rounds):
        shift = round_index % len(indices)
        for i in indices[shift:] + indices[:shift]:
            rounds_us[i].append(timer(calls[i]))
    return rounds_us


def recheck(
    records: list[dict],
    calls: dict[int, Callable[[], object]],
    timer: Timer,
    top: int = RECHECK_TOP,
    rounds: int = RECHECK_ROUNDS,
    always: Iterable[int] = (),
) -> None:
    """Time the `top` fastest configs of the first pass, torch and the records at `always` (a table's incumbent)
    again, interleaved over `rounds` rounds (the order rotating each round), and rank them by the median of their
    rounds: a choice one re-measurement would reverse is not kept. Rechecked records get `first_us` (the first pass)
    and `recheck_us` (every round's us); their `median_us` becomes the median over the rounds. Marks the first-pass
    winner `reversed` when it lost."""
    timed = [i for i, r in enumerate(records) if i in calls and not r["error"] and math.isfinite(r["median_us"])]
    if not timed:
        return
    first_winner = min(timed, key=lambda i: records[i]["median_us"])
    chosen = sorted(timed, key=lambda i: records[i]["median_us"])[:top]
    chosen += [i for i in (0, *always) if i in timed and i not in chosen]
    rounds_us = interleaved_rounds(chosen, calls, timer, rounds)
    for i in chosen:
        records[i]["first_us"] = records[i]["median_us"]
        records[i]["recheck_us"] = [round(us, 3) for us in rounds_us[i]]
        records[i]["median_us"] = statistics.median(rounds_us[i] + [records[i]["first_us"]])
    winner = min(chosen, key=lambda i: records[i]["median_us"])
    records[first_winner]["reversed"] = winner != first_winner


def break_ties(
    records: list[dict],
    calls: dict[int, Callable[[], object]],
    tiebreak: Timer,
    tie: float = TIE_FRACTION,
    rounds: int = TIEBREAK_ROUNDS,
) -> None:
    """Among the rechecked configs within `tie` (a fraction) of the fastest, mark the one `tiebreak` times fastest
    `chosen`, timed over `rounds` interleaved rounds (order rotating; each tied record gets `tiebreak_us`, the median
    of its rounds, and `tiebreak_rounds_us`: one replay timing of a ~3 us kernel moved 5% between H200 runs,
    docs/kernel-changes.md section 16): two configs the tuner's timer cannot tell apart are told apart
    by another GPU-time method (CUDA-graph replay: where the input stays in L2, a kernel's issue rate shows; H200,
    data/tuning/h200_challenge_lean16.jsonl: fp16 4096x2048 teaching 12.74 us vs warprows 12.88 us flushed, and at
    5000x1536 teaching takes 1.25x warprows' time under replay, experiments/2026-12-01-bench-offgrid)."""
    rechecked = [i for i, r in enumerate(records) if "recheck_us" in r and i in calls]
    if not rechecked:
        return
    fastest = min(records[i]["median_us"] for i in rechecked)
    tied = [i for i in rechecked if records[i]["median_us"] <= fastest * (1 + tie)]
    if len(tied) < 2:
        return
    rounds_us = interleaved_rounds(tied, calls, tiebreak, rounds)
    for i in tied:
        records[i]["tiebreak_rounds_us"] = [round(us, 3) for us in rounds_us[i]]
        records[i]["tiebreak_us"] = statistics.median(rounds_us[i])
    records[min(tied, key=lambda i: records[i]["tiebreak_us"])]["chosen"] = True


def check_off_grid(
    shapes: Iterable[tuple[str, int, int]], timer: Timer, device: str = "cuda", gpu_name: str | None = None
) -> list[dict]:
    """Per (dtype, R, N) off the tuning grid: every candidate and torch timed there (with the recheck), and the
    config `auto` picks from the table it loads now; `ratio` = pick us / fastest us (1.0: auto found the best)."""
    from blockscope.kernels import auto

    results = []
    for dtype_name, n_rows, n_cols in shapes:
        dtype = dtype_from_name(dtype_name)
        records = tune_shape(n_rows, n_cols, dtype, timer, device)
        variant, tunables = auto.choose(n_rows, n_cols, dtype, gpu_name)
        ok = [r for r in records if not r["error"] and math.isfinite(r["median_us"])]
        pick = next((r for r in ok if r["variant"] == variant and r["tunables"] == tunables), None)
        if pick is not None:
            pick_us = pick["median_us"]
        else:  # a table entry from another shape's candidates: time it here
            x = torch.randn(n_rows, n_cols, device=device, dtype=dtype)
            launcher = get_variant(variant).launcher
            pick_us = timer(lambda launcher=launcher, x=x, tunables=tunables: launcher(x, **tunables))
        best = min(ok, key=lambda r: r["median_us"])
        results.append(
            {
                "dtype": dtype_name,
                "n_rows": n_rows,
                "n_cols": n_cols,
                "pick": variant,
                "pick_tunables": tunables,
                "pick_us": pick_us,
                "best": best["variant"],
                "best_tunables": best["tunables"],
                "best_us": best["median_us"],
                "ratio": pick_us / best["median_us"],
            }
        )
    return results


def best_entries(records: list[dict]) -> list[dict]:
    """The fastest error-free config per (dtype, n_rows, n_cols), or the one a tie-break marked `chosen`; 'torch'
    where no Triton config beat it. Where a shape was rechecked, only rechecked configs compete: a config timed once
    does not win on a first-pass median against medians that include the recheck's rounds."""
    rechecked = {(r["dtype"], r["n_rows"], r["n_cols"]) for r in records if "recheck_us" in r}
    best: dict[tuple, dict] = {}
    for record in records:
        key = (record["dtype"], record["n_rows"], record["n_cols"])
        unranked = key in rechecked and "recheck_us" not in record  # timed once where others were rechecked
        if record["error"] or not math.isfinite(record["median_us"]) or unranked:
            continue
        if key in best and best[key].get("chosen"):
            continue
        if key not in best or record.get("chosen") or record["median_us"] < best[key]["median_us"]:
            best[key] = record
    return [
        {k: r[k] for k in ("dtype", "n_rows", "n_cols", "variant", "tunables", "median_us", "torch_us")}
        for r in sorted(best.values(), key=lambda r: (r["dtype"], r["n_cols"], r["n_rows"]))
    ]


def make_table(records: list[dict], seconds: float, command: str) -> dict:
    """Tuning table (format read by kernels/auto.py) with provenance."""
    import triton

    return {
        "format": TABLE_FORMAT,
        "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else "none",
        "compute_capability": ".".join(map(str, torch.cuda.get_device_capability()))
        if torch.cuda.is_available()
        else "none",
        "torch_version": torch.__version__,
        "triton_version": triton.__version__,
        "made_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "command": command,
        "tuning_seconds": round(seconds, 1),
        "timing": "back_to_back_flushed median",
        "entries": best_entries(records),
    }


def challenge(
    table: dict,
    dtypes: Iterable[str],
    variants: Iterable[str],
    timer: Timer,
    min_n: int = 1,
    on_shape: Callable[[list[dict]], None] | None = None,
    device: str = "cuda",
    max_n: int | None = None,
    tiebreak: Timer | None = None,
) -> tuple[list[dict], float]:
    """Retune part of a table against new variants: on each of its shapes with min_n <= N <= max_n (in `dtypes`), torch,
    the table's own pick and every candidate of `variants` are timed (with the recheck, which always includes the
    table's pick: it is replaced only by a config that beat it side by side). Returns the records and the seconds
    spent; `merge_table` folds the winners in."""
    start = time.perf_counter()
    variants = list(variants)
    records: list[dict] = []
    for entry in table["entries"]:
        if entry["dtype"] not in dtypes or int(entry["n_cols"]) < min_n or (max_n and int(entry["n_cols"]) > max_n):
            continue
        n_rows, n_cols, dtype = int(entry["n_rows"]), int(entry["n_cols"]), dtype_from_name(entry["dtype"])
        incumbent = None if entry["variant"] == "torch" else (entry["variant"], dict(entry.get("tunables", {})))
        challengers = [c for c in candidates(n_rows, n_cols, dtype, variants) if c != incumbent]
        if not challengers:  # nothing new runs here (odd N for 16-bit staging): the entry stands
            continue
        records += _tune_and_report(n_rows, n_cols, dtype, timer, device, on_shape, challengers, tiebreak, incumbent)
    return records, time.perf_counter() - start


def merge_table(table: dict, records: list[dict], seconds: float, command: str) -> dict:
    """`table` with the fastest config of every retuned shape in `records` replacing its entry; provenance keeps
    the table's own and adds this retune's (`retuned`: command, time, seconds, shapes)."""
    merged = {(e["dtype"], int(e["n_rows"]), int(e["n_cols"])): e for e in table["entries"]}
    new = best_entries(records)
    merged.update({(e["dtype"], int(e["n_rows"]), int(e["n_cols"])): e for e in new})
    retune = {
        "command": command,
        "made_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "seconds": round(seconds, 1),
        "shapes": len(new),
    }
    return {
        **table,
        "entries": sorted(merged.values(), key=lambda e: (e["dtype"], e["n_cols"], e["n_rows"])),
        "retuned": [*table.get("retuned", []), retune],
    }


def save_table(table: dict, directory: Path | None = None) -> Path:
    """Write the table as <gpu-key>.json into `directory` (default: the user's autotune cache)."""
    directory = Path(directory) if directory is not None else user_table_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{gpu_key(table['gpu'])}.json"
    path.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    return path


MID_TIER_BYTES = 16 * 2**20  # the mid tier's input: ~16 MB (L2-sized), where R=4096 rows of small N are far less
MID_TIER_MIN_ROWS = 8192  # ... and only where that is at least twice R=4096 (N <= 1024 in 16 bits, 512 in fp32)


def mid_tier_rows(n_cols: int, dtype: torch.dtype) -> int | None:
    """Rows giving ~16 MB of input where that is at least 8192 rows, else None (R=4096 is already that size)."""
    rows = large_set_rows(n_cols, dtype, MID_TIER_BYTES)
    return rows if rows >= MID_TIER_MIN_ROWS else None


def default_rows(n_cols: int, dtype: torch.dtype) -> list[int]:
    """Row counts `auto` is tuned at for one N: R=4096 (N <= 262144), ~16 MB of input (small N only, see
    mid_tier_rows) and ~512 MB."""
    mid = mid_tier_rows(n_cols, dtype)
    return ([4096] if n_cols <= 262144 else []) + ([mid] if mid else []) + [large_set_rows(n_cols, dtype)]


MID_BUCKET_N: tuple[int, ...] = (192, 384, 768)  # 3/4 of a power of two: small rows low in their BLOCK_SIZE bucket
# (25% masked lanes), where the pick at the bucket's power of two (no masked lanes) is not the fastest


def mid_tier_shapes(dtype: torch.dtype) -> list[tuple[int, int]]:
    """(R, N) of the mid tier: the bench's default N and MID_BUCKET_N at ~16 MB of input, where that is 8192 rows
    or more."""
    from blockscope.profiling.measure.bench import default_n_values

    n_values = sorted({*default_n_values(), *MID_BUCKET_N})
    return [(rows, n) for n in n_values if (rows := mid_tier_rows(n, dtype))]


def describe(shape_records: list[dict]) -> str:
    """One line for one shape's records: torch's time and the fastest config (us)."""
    first, best = shape_records[0], best_entries(shape_records)
    label = f"{best[0]['variant']} {best[0]['tunables']} {best[0]['median_us']:.1f} us" if best else "-"
    return f"{first['dtype']} R={first['n_rows']} N={first['n_cols']}: torch {first['median_us']:.1f} us, best {label}"


GRID_MID_N: tuple[int, ...] = (1504, 24000, 96000)  # 16-byte-aligned rows about 3/4 into the buckets the sweep's
# N leave without one (2048, 32768 and the first past 65536; the sweep has 1000, 3000, 6000, 12000, 50000): there the
# only aligned entry was the bucket's power of two, whose layout can be the slowest one for a row of two pieces
# (fp16 5000x1536 took 4096x2048's 64 threads per row: 7.3 us, where 32 threads take 6.3; kernel-changes section
# 13). Not the bench's off-grid N (1536, 32768, 100000): those stay shapes the tuner never saw.


def grid_mid_shapes(dtype: torch.dtype) -> list[tuple[int, int]]:
    """(R, N) of GRID_MID_N at the rows every N is tuned at (R=4096, ~512 MB)."""
    return [(rows, n) for n in GRID_MID_N for rows in default_rows(n, dtype)]


ODD_N: tuple[int, ...] = (1503, 3001, 6001, 12001, 24001, 48001, 96001, 192001)  # rows not 16-byte aligned (N % 8
# != 0, vocabulary-like widths) about 3/4 into the buckets: with the sweep's 2**k +- 1 they give `auto` entries of
# the odd alignment class (auto.row_alignment) at R=4096 and ~512 MB. Not the bench's off-grid N (32001, 50257, ...).


def odd_shapes(dtype: torch.dtype) -> list[tuple[int, int]]:
    """(R, N) of ODD_N at R=4096 and ~512 MB of input."""
    return [(rows, n) for n in ODD_N for rows in (4096, large_set_rows(n, dtype))]


def tiny_shapes(dtype: torch.dtype) -> list[tuple[int, int]]:
    """(R, N) of the sweep's tiny N (8-64): rows moving >= 32 MB (sweep.sweep_rows) and 10**5 rows (MoE routers)."""
    from blockscope.profiling.measure.sweep import TINY_N, sweep_rows

    return [(rows, n) for n in TINY_N for rows in (sweep_rows(n, dtype), 100000)]


GRIDS: dict[str, Callable[[torch.dtype], list[tuple[int, int]]]] = {}  # name -> (R, N) of a dtype; filled below


def bench_shapes(dtype: torch.dtype) -> list[tuple[int, int]]:
    """(R, N) `auto` is tuned on: `python -m profiling bench`'s default sweep N at R=4096 (tiny N at rows moving
    >= 32 MB) and its ~512 MB large set, plus the mid tier (~16 MB of small-N rows), the buckets' mid points
    (GRID_MID_N), the odd-width grid (ODD_N) and the tiny rows at 10**5 rows."""
    from blockscope.profiling.measure.bench import shapes

    return list(
        dict.fromkeys(
            shapes("default", dtype)
            + mid_tier_shapes(dtype)
            + grid_mid_shapes(dtype)
            + shapes("large", dtype)
            + odd_shapes(dtype)
            + tiny_shapes(dtype)
        )
    )


GRIDS.update(
    {"bench": bench_shapes, "mid": mid_tier_shapes, "odd": odd_shapes, "tiny": tiny_shapes, "grid-mid": grid_mid_shapes}
)


def tune(
    dtypes: Iterable[str],
    n_values: Iterable[int] | None,
    timer: Timer,
    rows: Iterable[int] | None = None,
    on_shape: Callable[[list[dict]], None] | None = None,
    device: str = "cuda",
    shapes_of: Callable[[torch.dtype], list[tuple[int, int]]] | None = None,
    tiebreak: Timer | None = None,
) -> tuple[list[dict], float]:
    """Tune every dtype x N x R (R: `rows`, default `default_rows`; `n_values=None`: the bench's shapes, or
    `shapes_of(dtype)`'s (R, N) where given); `on_shape` gets each shape's records as they come. Returns all
    records and the tuner's own cost in seconds."""
    start = time.perf_counter()
    records: list[dict] = []
    for dtype_name in dtypes:
        dtype = dtype_from_name(dtype_name)
        if shapes_of is not None:
            grid = shapes_of(dtype)
        elif n_values is None:
            grid = bench_shapes(dtype)
        else:
            grid = [(n_rows, n_cols) for n_cols in n_values for n_rows in rows or default_rows(n_cols, dtype)]
        for n_rows, n_cols in grid:
            records += _tune_and_report(n_rows, n_cols, dtype, timer, device, on_shape, tiebreak=tiebreak)
    return records, time.perf_counter() - start


def _tune_and_report(
    n_rows: int,
    n_cols: int,
    dtype: torch.dtype,
    timer: Timer,
    device: str,
    on_shape: Callable[[list[dict]], None] | None,
    candidate_list: list[Candidate] | None = None,
    tiebreak: Timer | None = None,
    incumbent: Candidate | None = None,
) -> list[dict]:
    """tune_shape, then hand its records to `on_shape` and give the shape's memory back."""
    shape_records = tune_shape(n_rows, n_cols, dtype, timer, device, candidate_list, tiebreak, incumbent)
    if on_shape:
        on_shape(shape_records)
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return shape_records


def large_set_rows(n_cols: int, dtype: torch.dtype, input_bytes: int = 512 * 2**20) -> int:
    """Rows giving about `input_bytes` of input (the issue's large set: ~512 MB per shape)."""
    return max(1, input_bytes // (n_cols * torch.empty(0, dtype=dtype).element_size()))
