"""Per-config ULP summaries of a softmax against the exact reference, and the rows they add to the results table.

The reference is softmax in float64 on the upcast input, rounded once (to nearest-even) into the output
dtype; each output element's error is its ULP distance from that (`ulp.ulp_distance`). Summaries:

* ulp_max: largest distance; +inf when an element is NaN on one side only (a NaN mismatch).
* ulp_mean: mean distance over the elements without a NaN mismatch.
* ulp_frac_0 / ulp_frac_1 / ulp_frac_gt1: fractions of all elements at 0, 1 and more than 1 ULP (NaN
  mismatches count as > 1; NaN on both sides as 0).
* rowsum_err_max: largest |sum of a row's outputs - 1| (summed in float64), over rows whose reference has
  no NaN; +inf when such a row sums to NaN.
* the worst element's (row, col), input value, output and reference; the count of NaN mismatches.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch

from blockscope.profiling.inspect.numerics.inputs import make_input, special_matrix
from blockscope.profiling.inspect.numerics.ulp import NAN_MISMATCH, round_to_dtype, ulp_distance

CHUNK_ELEMENTS = 1 << 24  # rows are summarised in chunks of about this many elements (bounded device memory)
CPU_MAX_N = 8192  # widest row the CPU interpreter is asked to run (it is ~100x slower than a GPU)
DEFAULT_ROWS = 64
NUMERICS_COLUMNS: tuple[str, ...] = (
    "ulp_max",
    "ulp_mean",
    "ulp_frac_0",
    "ulp_frac_1",
    "ulp_frac_gt1",
    "rowsum_err_max",
    "numerics_input",
)
DTYPES: dict[str, torch.dtype] = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
SWEEP_INPUT = "normal"  # the sweep's input is torch.randn: the standard-normal distribution


@dataclass
class UlpSummary:
    """ULP error of one output against the reference (see the module docstring); distances in ULPs."""

    n_elements: int
    ulp_max: float
    ulp_mean: float
    frac_0: float
    frac_1: float
    frac_gt1: float
    rowsum_err_max: float
    nan_mismatches: int
    worst_row: int | None = None
    worst_col: int | None = None
    worst_input: float | None = None
    worst_output: float | None = None
    worst_expected: float | None = None

    def columns(self, input_name: str) -> dict[str, Any]:
        """The results-table columns (profiling.results): ulp_*, rowsum_err_max, numerics_input."""
        return {
            "ulp_max": self.ulp_max,
            "ulp_mean": self.ulp_mean,
            "ulp_frac_0": self.frac_0,
            "ulp_frac_1": self.frac_1,
            "ulp_frac_gt1": self.frac_gt1,
            "rowsum_err_max": self.rowsum_err_max,
            "numerics_input": input_name,
        }

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _rows(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(-1, t.shape[-1])


def summarize(
    output: torch.Tensor, reference: torch.Tensor, x: torch.Tensor | None = None, chunk_elements: int = CHUNK_ELEMENTS
) -> UlpSummary:
    """ULP summary of `output` (fp16/bf16/fp32) against the float64 `reference` softmax; `x` names the worst input.

    Rows are processed in chunks of about `chunk_elements` on the output's device."""
    if output.shape != reference.shape:
        raise ValueError(f"output shape {tuple(output.shape)} differs from the reference's {tuple(reference.shape)}")
    if output.numel() == 0:
        raise ValueError("an empty output has no ULP error; allowed: at least one element")
    out_rows, ref_rows = _rows(output), _rows(reference)
    x_rows = _rows(x) if x is not None else None
    n_rows, n_cols = out_rows.shape
    step = max(1, chunk_elements // n_cols)
    total = finite_sum = 0.0
    finite_count = at_0 = at_1 = above_1 = mismatches = 0
    worst, worst_flat = -1.0, 0
    rowsum_worst = 0.0
    any_defined_row = False
    for start in range(0, n_rows, step):
        got = out_rows[start : start + step]
        want64 = ref_rows[start : start + step].to(device=got.device, dtype=torch.float64)
        distance = ulp_distance(got, round_to_dtype(want64, got.dtype))
        mismatch = distance == NAN_MISMATCH
        mismatches += int(mismatch.sum())
        finite = distance[~mismatch]
        finite_sum += float(finite.sum())
        finite_count += finite.numel()
        at_0 += int((distance == 0).sum())
        at_1 += int((distance == 1).sum())
        above_1 += int((distance > 1).sum())
        chunk_max, chunk_arg = torch.max(distance.reshape(-1), dim=0)
        if float(chunk_max) > worst:
            worst, worst_flat = float(chunk_max), start * n_cols + int(chunk_arg)
        defined = ~torch.isnan(want64).any(dim=-1)
        if bool(defined.any()):
            any_defined_row = True
            sums = got.to(torch.float64).sum(dim=-1)[defined] - 1.0
            err = torch.where(torch.isnan(sums), torch.full_like(sums, math.inf), sums.abs())
            rowsum_worst = max(rowsum_worst, float(err.max()))
        total += distance.numel()
    row, col = divmod(worst_flat, n_cols)
    return UlpSummary(
        n_elements=int(total),
        ulp_max=worst,
        ulp_mean=finite_sum / finite_count if finite_count else math.nan,
        frac_0=at_0 / total,
        frac_1=at_1 / total,
        frac_gt1=above_1 / total,
        rowsum_err_max=rowsum_worst if any_defined_row else math.nan,
        nan_mismatches=mismatches,
        worst_row=row,
        worst_col=col,
        worst_input=float(x_rows[row, col]) if x_rows is not None else None,
        worst_output=float(out_rows[row, col]),
        worst_expected=float(ref_rows[row, col]),
    )


def reference_softmax(x: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dim in float64 on the upcast input (the exact reference, before rounding)."""
    return torch.softmax(x.to(torch.float64), dim=-1)


def ulp_counts(output: torch.Tensor, reference: torch.Tensor) -> dict[float, int]:
    """{ULP distance: element count} of `output` against the float64 `reference` (inf: NaN mismatches)."""
    distance = ulp_distance(output, round_to_dtype(reference.to(output.device, torch.float64), output.dtype))
    values, counts = torch.unique(distance.reshape(-1).cpu(), return_counts=True)
    return {float(v): int(c) for v, c in zip(values.tolist(), counts.tolist(), strict=True)}


def sweep_columns(output: torch.Tensor, reference: torch.Tensor) -> dict[str, Any]:
    """Numerics columns for a sweep row (its standard-normal input, float64 reference); {} if anything fails."""
    try:
        return summarize(output, reference).columns(SWEEP_INPUT)
    except Exception:  # numerics are evidence, never a reason for a sweep row to fail
        return {}


def describe_difference(output: torch.Tensor, expected: torch.Tensor, label: str = "torch") -> str:
    """How `output` differs from `expected` (same dtype), e.g. 'NaN where torch gives 0 (8 elements)'."""
    nan_o, nan_e = torch.isnan(output), torch.isnan(expected)
    parts = []
    only_here = nan_o & ~nan_e
    if bool(only_here.any()):
        theirs = expected[only_here]
        what = "0" if bool((theirs == 0).all()) else "a number"
        parts.append(f"NaN where {label} gives {what} ({int(only_here.sum())} elements)")
    only_there = ~nan_o & nan_e
    if bool(only_there.any()):
        ours = output[only_there]
        what = "0" if bool((ours == 0).all()) else "numbers"
        parts.append(f"{what} where {label} gives NaN ({int(only_there.sum())} elements)")
    both = ~nan_o & ~nan_e
    if bool(both.any()):
        distance = ulp_distance(output[both], expected[both])
        differ = int((distance > 0).sum())
        if differ:
            parts.append(f"{differ} elements differ from {label} by up to {float(distance.max()):g} ULP")
    return "; ".join(parts) or f"same as {label}"


@dataclass
class PreparedInput:
    """One input with its float64 reference softmax (and torch.softmax's answer for 'special'), shared by
    every softmax measured on it."""

    name: str
    x: torch.Tensor
    reference: torch.Tensor
    torch_output: torch.Tensor | None = None


def prepare_input(
    input_name: str,
    dtype: str,
    n_rows: int,
    n_cols: int,
    *,
    seed: int = 0,
    device: str | torch.device = "cpu",
    torch_fn: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> PreparedInput:
    """The seeded input on `device`, its float64 reference, and torch.softmax's answer when it is 'special'."""
    x = make_input(input_name, n_rows, n_cols, DTYPES[dtype], seed=seed, device=device)
    torch_output = None
    if input_name == "special":
        torch_output = (torch_fn or (lambda t: torch.softmax(t, dim=-1)))(x)
    return PreparedInput(input_name, x, reference_softmax(x), torch_output)


def measure_prepared(fn: Callable[[torch.Tensor], torch.Tensor], prepared: PreparedInput) -> tuple[UlpSummary, str]:
    """(ULP summary, difference from torch.softmax) of `fn` on a prepared input ('' unless it is 'special')."""
    x = prepared.x
    output = fn(x)
    if output.shape != x.shape or output.dtype != x.dtype:
        raise ValueError(
            f"the softmax returned {tuple(output.shape)} {output.dtype}; expected {tuple(x.shape)} {x.dtype}"
        )
    summary = summarize(output, prepared.reference, x)
    versus = describe_difference(output, prepared.torch_output) if prepared.torch_output is not None else ""
    return summary, versus


def measure(
    fn: Callable[[torch.Tensor], torch.Tensor],
    dtype: str,
    n_rows: int,
    n_cols: int,
    input_name: str,
    *,
    seed: int = 0,
    device: str | torch.device = "cpu",
    torch_fn: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> tuple[UlpSummary, str]:
    """(ULP summary, difference from torch.softmax on the same input and device) for one config.

    The difference text is '' unless `input_name` is 'special' (there torch's answers are the comparison:
    the float64 reference is NaN on the undefined rows)."""
    prepared = prepare_input(input_name, dtype, n_rows, n_cols, seed=seed, device=device, torch_fn=torch_fn)
    return measure_prepared(fn, prepared)


def _fmt(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.3g}"


def special_values_table(
    fn: Callable[[torch.Tensor], torch.Tensor],
    label: str,
    dtype: str,
    n_cols: int = 8,
    *,
    seed: int = 0,
    device: str | torch.device = "cpu",
) -> list[dict[str, str]]:
    """One record per special-values case: how `label` differs from torch.softmax, the input row, both answers.

    Values are formatted with 3 significant digits; the comparison itself is exact (bits)."""
    kinds, x = special_matrix(n_cols, DTYPES[dtype], seed=seed, device=device)
    expected = torch.softmax(x, dim=-1)
    try:
        output = fn(x)
        error = ""
    except Exception as exc:  # show the failure in the table rather than fail the page
        output, error = None, f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
    records = []
    for i, kind in enumerate(kinds):
        difference = error if output is None else describe_difference(output[i], expected[i])
        records.append(
            {
                "case": kind,
                "difference": difference,
                "input": "  ".join(_fmt(float(v)) for v in x[i].cpu()),
                "torch.softmax": "  ".join(_fmt(float(v)) for v in expected[i].cpu()),
                label: "" if output is None else "  ".join(_fmt(float(v)) for v in output[i].cpu()),
            }
        )
    return records


@dataclass
class NumericsResult:
    """One (softmax, dtype, N, input) measurement: its results row and, when it ran, its summary."""

    row: dict[str, Any]
    summary: UlpSummary | None
    versus_torch: str = ""

    @property
    def error(self) -> str:
        return self.row.get("error") or ""


def result_key(name: str, dtype: str, n_rows: int, n_cols: int, input_name: str) -> tuple:
    return (str(name), str(dtype), int(n_rows), int(n_cols), str(input_name))


def _config_columns(name: str, dtype: str, n_rows: int, n_cols: int) -> dict[str, Any]:
    """num_warps / tile_width / ... of a registered variant's default plan (empty for others or on failure)."""
    from blockscope import kernels

    if name not in kernels.VARIANTS or name == "auto":
        return {}
    try:
        plan = kernels.get_variant(name).plan(n_rows, n_cols, DTYPES[dtype])
    except Exception:
        return {}
    return {
        "num_warps": plan.num_warps,
        "num_stages": plan.num_stages,
        "tile_width": plan.tile_width,
        "rows_per_program": plan.rows_per_program,
        "programs": plan.programs,
    }


def run_numerics(
    names: Sequence[str],
    dtypes: Sequence[str],
    n_values: Sequence[int],
    n_rows: int,
    inputs: Sequence[str],
    *,
    device: str | torch.device = "cpu",
    seed: int = 0,
    env: Mapping[str, Any] | None = None,
    skip: Iterable[tuple] = (),
    progress: Callable[[int, int, str], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    resolve: Callable[[str], Callable[[torch.Tensor], torch.Tensor]] | None = None,
    within_limits: bool = False,
) -> list[NumericsResult]:
    """Measure every name x dtype x N x input at `n_rows` rows; one NumericsResult each, failures included.

    Rows follow the results schema (method 'none', `error` '' or why it failed, `env` columns copied).
    Keys in `skip` (see `result_key`) are not measured; `cancel()` True stops before the next one. A name
    that does not resolve gives error rows; a softmax that raises gives an error row and the run goes on.
    `within_limits`: leave out N over a name's limit (`resolve.max_n`) instead of recording its error row."""
    from blockscope.profiling.inspect.numerics.resolve import max_n, softmax_callable

    resolve = resolve or softmax_callable
    env_row = dict(env or {})
    skip = set(skip)
    jobs = [
        (name, dtype, n, inp)
        for dtype in dtypes
        for n in n_values
        for inp in inputs
        for name in names
        if result_key(name, dtype, n_rows, n, inp) not in skip and not (within_limits and n > max_n(name))
    ]
    callables: dict[str, Any] = {}
    results: list[NumericsResult] = []
    prepared: dict[tuple, PreparedInput] = {}  # the current (dtype, N, input) only: one input in memory
    for done, (name, dtype, n_cols, input_name) in enumerate(jobs, start=1):
        if cancel is not None and cancel():
            break
        row: dict[str, Any] = {
            "variant": name,
            "dtype": dtype,
            "n_rows": n_rows,
            "n_cols": n_cols,
            "tunables": "{}",
            "method": "none",
            "error": "",
            "numerics_input": input_name,
            **_config_columns(name, dtype, n_rows, n_cols),
            **env_row,
        }
        summary, versus = None, ""
        try:
            if name not in callables:
                try:
                    callables[name] = resolve(name)
                except ValueError as error:
                    callables[name] = error
            fn = callables[name]
            if isinstance(fn, Exception):
                raise fn
            key = (dtype, n_cols, input_name)
            if key not in prepared:
                prepared.clear()
                prepared[key] = prepare_input(input_name, dtype, n_rows, n_cols, seed=seed, device=device)
            summary, versus = measure_prepared(fn, prepared[key])
            row.update(summary.columns(input_name))
        except Exception as error:  # a failing softmax is a result (error row), not the end of the run
            lines = str(error).strip().splitlines()
            row["error"] = f"{type(error).__name__}: {lines[0][:300] if lines else ''}".rstrip(": ")
        results.append(NumericsResult(row, summary, versus))
        if progress is not None:
            progress(done, len(jobs), f"{name} {dtype} N={n_cols} {input_name}")
    return results


def results_frame(results: Sequence[NumericsResult]):
    """The results rows as a normalized results table (profiling.results schema)."""
    import pandas as pd

    from blockscope.profiling.results import COLUMNS, normalize

    return normalize(pd.DataFrame([r.row for r in results], columns=list(COLUMNS)))
