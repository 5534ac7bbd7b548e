"""docs/benchmarks-backends.md's default-sweep section, from a backends results file (no GPU needed).

python3 -m tools.backends_report [--results data/h200_sweep.parquet] [--doc docs/benchmarks-backends.md]
python3 -m tools.backends_report --headline    (README's "How fast" row-softmax numbers; prints, writes nothing)

Per timing method: `auto` against each backend (blockscope.profiling.views.backends.versus) and the fastest backend per
(dtype, N); then the median us of every backend per (dtype, N) under cuda_graph, '-' with the reason class where
a backend has no time. Rewrites the section between its markers, leaving the rest of the document.
"""

from __future__ import annotations

import argparse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

BEGIN, END = "<!-- default-sweep: begin -->", "<!-- default-sweep: end -->"


def section(results: Path) -> str:
    from blockscope.profiling.results import load_results, softmax_rows
    from blockscope.profiling.views import backends as views

    df = softmax_rows(load_results(results))  # the fused ops' rows (sweep --op) are another comparison
    env = df.iloc[0]
    backends = ", ".join(views.backend_order(list(df["variant"].dropna().unique())))
    per_dtype = df.groupby("dtype")["n_cols"].nunique()
    if per_dtype.nunique() == 1:
        grid = f"{int(per_dtype.iloc[0])} N x {len(per_dtype)} dtypes"
    else:  # a sweep stopped part way: say how far each dtype got
        grid = ", ".join(f"{dtype} {int(count)} N" for dtype, count in per_dtype.items())
    lines = [
        BEGIN,
        "",
        f"## Default sweep: {backends} at R=4096, {grid}",
        "",
        f"From `{results.relative_to(ROOT) if results.is_relative_to(ROOT) else results}` (one run, "
        f"{env['gpu_name']}, torch {env['torch_version']}, Triton {env['triton_version']}, {env['measured_at']}; "
        f"`python -m profiling sweep --variants {','.join(sorted(df['variant'].dropna().unique()))}`), "
        "rendered by `python3 -m tools.backends_report`. `backend / auto` > 1: auto is faster.",
        "",
    ]
    for method in ("cuda_graph", "back_to_back_flushed", "per_call_events"):
        against = views.versus(df, method)
        if against.empty:
            continue
        wins = views.win_counts(views.winners(df, method))
        lines += [
            f"### `{method}`",
            "",
            "| backend | (dtype, N) both ran | geomean backend / auto | worst | at | under 0.95 |",
            "|---|---:|---:|---:|---|---:|",
        ]
        lines += [
            f"| {r['backend']} | {r['points']} | {r['geomean backend / auto']:.2f}x | {r['worst']:.2f}x | "
            f"{r['worst at']} | {r['under 0.95']} |"
            for r in against.to_dict("records")
        ]
        lines += [
            "",
            "Fastest backend at each (dtype, N): "
            + ", ".join(f"{r['backend']} {r['wins']}" for r in wins.to_dict("records"))
            + f" of {int(wins['wins'].sum())}.",
            "",
        ]
    support = views.support(df)
    names = views.backend_order(list(df["variant"].unique()))
    timed = (
        df[(df["method"] == "cuda_graph") & (df["error"] == "")]
        .groupby(["dtype", "n_cols", "variant"])["median_us"]
        .min()
    )
    lines += [
        "### Median us per (dtype, N), `cuda_graph`",
        "",
        "| dtype | N | " + " | ".join(names) + " | fastest |",
        "|---|---:|" + "---:|" * len(names) + "---|",
    ]
    status = support.set_index(["dtype", "n_cols", "variant"])["status"]
    for (dtype, n), part in timed.groupby(level=[0, 1]):
        cells = []
        for name in names:
            if (dtype, n, name) in part.index:
                cells.append(f"{part[(dtype, n, name)]:.1f}")
            else:
                cells.append(f"- ({status.get((dtype, n, name), 'not run')})")
        fastest = part.droplevel([0, 1]).idxmin()
        lines.append(f"| {dtype} | {n} | " + " | ".join(cells) + f" | {fastest} |")
    lines += ["", END]
    return "\n".join(lines) + "\n"


PEERS = ("torch", "inductor", "liger", "quack")
DTYPE_GROUPS = {"16-bit": ("bf16", "fp16"), "fp32": ("fp32",)}


def headline(results: Path, methods: tuple[str, ...] = ("cuda_graph", "back_to_back_flushed")) -> list[str]:
    """Per timing method and dtype group: `auto`'s speedup over each peer (peer time / auto time, > 1: auto is
    faster) over the (dtype, N) points both ran (blockscope.profiling.views.backends.versus): range, geometric
    mean, points, and where auto is slower."""
    from blockscope.profiling.results import load_results, softmax_rows
    from blockscope.profiling.views import backends as views

    df = softmax_rows(load_results(results))  # masked/ragged rows share backend names (inductor) and N values
    lines = []
    for method in methods:
        for group, dtypes in DTYPE_GROUPS.items():
            against = views.versus(df[df["dtype"].isin(dtypes)], method)
            if against.columns.empty:  # auto timed nothing here
                continue
            rows = against.set_index("backend")
            cells = []
            for peer in (p for p in PEERS if p in rows.index):
                r = rows.loc[peer]
                slower = r["auto slower at"]
                cells.append(
                    f"{peer} {r['worst']:.2f}-{r['best']:.2f}x (geomean {r['geomean backend / auto']:.2f}x, "
                    f"{r['points']} N)" + (f"; auto slower at {slower}" if slower else "")
                )
            lines.append(f"{method} {group}: " + "; ".join(cells))
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=ROOT / "data" / "h200_sweep.parquet")
    parser.add_argument("--doc", type=Path, default=ROOT / "docs" / "benchmarks-backends.md")
    parser.add_argument("--headline", action="store_true", help="print README's row-softmax speedups, write nothing")
    args = parser.parse_args()
    if args.headline:
        print("\n".join(headline(args.results.resolve())))
        return 0
    text = args.doc.read_text() if args.doc.exists() else ""
    new = section(args.results.resolve())
    if BEGIN in text and END in text:
        text = text[: text.index(BEGIN)] + new + text[text.index(END) + len(END) + 1 :]
    else:
        text = text.rstrip("\n") + "\n\n" + new
    args.doc.write_text(text)
    print(f"wrote the default-sweep section of {args.doc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
