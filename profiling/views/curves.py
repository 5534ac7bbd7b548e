"""How a line chart over N is drawn: which N are power-of-two edge points and where a line must break.

The default sweep (profiling.measure.sweep.default_n_values) times each power of two p with its neighbours p-1 and
p+1, where BLOCK_SIZE = next_pow2(N) doubles: p+1 pays for twice the lanes of p. Drawn through one curve
those points zig-zag, so an edge point (p-1 or p+1 next to a measured p) is a separate marker and the curve
goes through the other N. A series is laid on the chart's N grid (every N the chart's table holds) with a gap
(NaN) where the series has no value, so no line crosses an N it never measured. Pure pandas, no plotly.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd


def is_power_of_two(n: int) -> bool:
    """True for 1, 2, 4, 8, ..."""
    return n >= 1 and n & (n - 1) == 0


def edge_points(n_values: Iterable[int]) -> set[int]:
    """The N of `n_values` that are p-1 or p+1 for a power of two p that `n_values` also holds (N itself not
    a power of two): {255, 257} of (128, 255, 256, 257, 1000); 255 alone (no 256) is not an edge."""
    values = {int(n) for n in n_values}

    def next_to_measured_power(n: int) -> bool:
        return any(m in values and is_power_of_two(m) for m in (n - 1, n + 1) if m >= 1)

    return {n for n in values if not is_power_of_two(n) and next_to_measured_power(n)}


def curve_grid(n_values: Iterable[int]) -> list[int]:
    """The sorted N a curve passes through: `n_values` without their edge points."""
    values = {int(n) for n in n_values}
    return sorted(values - edge_points(values))


def split_series(rows: pd.DataFrame, grid: Sequence[int], x: str = "n_cols") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(curve, edges) of one series' rows (one row per N).

    curve: one row per N of curve_grid(`grid`), NaN in every other column where the series has no row at that
    N (a line breaks there); edges: the series' rows at edge points of `grid`. Rows at N outside `grid` are
    dropped. ValueError when `rows` has several rows for one N (pick one config per N first)."""
    if rows[x].duplicated().any():
        raise ValueError(
            f"split_series needs one row per {x}; got duplicates at "
            f"{sorted(set(rows.loc[rows[x].duplicated(), x].astype(int)))[:5]}"
        )
    edges_at = edge_points(grid)
    curve_at = curve_grid(grid)
    indexed = rows.assign(**{x: rows[x].astype(int)}).set_index(x)
    curve = indexed.reindex(curve_at).rename_axis(x).reset_index()
    edges = indexed[indexed.index.isin(edges_at)].sort_index().reset_index()
    return curve, edges
