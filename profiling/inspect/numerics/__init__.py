"""Numerics in ULP: how far each softmax output is from the exact (float64, correctly rounded) answer.

Modules: ulp (ordered-integer ULP distance, correct rounding, row sums), inputs (seeded distributions and
the special-values matrix), measure (per-config summaries, results rows), resolve (softmax by name),
probe (a numerics-only kernel: tl.exp vs tl.exp2), compare (each variant vs torch.softmax). Imports torch
(and triton for the probe, lazily); never streamlit or plotly.
"""

from blockscope import paths
from blockscope.profiling.inspect.numerics.compare import summary_lines, versus_torch
from blockscope.profiling.inspect.numerics.inputs import (
    INPUTS,
    SPECIAL_DESCRIPTIONS,
    SPECIAL_ROWS,
    check_input_name,
    make_input,
    special_matrix,
)
from blockscope.profiling.inspect.numerics.measure import (
    CPU_MAX_N,
    DEFAULT_ROWS,
    DTYPES,
    NUMERICS_COLUMNS,
    NumericsResult,
    PreparedInput,
    UlpSummary,
    describe_difference,
    measure,
    measure_prepared,
    prepare_input,
    reference_softmax,
    result_key,
    results_frame,
    run_numerics,
    special_values_table,
    summarize,
    sweep_columns,
    ulp_counts,
)
from blockscope.profiling.inspect.numerics.resolve import TORCH, allowed_names, max_n, softmax_callable
from blockscope.profiling.inspect.numerics.ulp import (
    NAN_MISMATCH,
    from_ordered,
    ordered_int,
    round_to_dtype,
    row_sum_error,
    ulp_distance,
)

BUNDLED_PATH = paths.BUNDLED_NUMERICS  # the H200 capture

__all__ = [
    "BUNDLED_PATH",
    "CPU_MAX_N",
    "DEFAULT_ROWS",
    "DTYPES",
    "INPUTS",
    "NAN_MISMATCH",
    "NUMERICS_COLUMNS",
    "SPECIAL_DESCRIPTIONS",
    "SPECIAL_ROWS",
    "TORCH",
    "NumericsResult",
    "PreparedInput",
    "UlpSummary",
    "allowed_names",
    "check_input_name",
    "describe_difference",
    "from_ordered",
    "make_input",
    "max_n",
    "measure",
    "measure_prepared",
    "ordered_int",
    "prepare_input",
    "reference_softmax",
    "result_key",
    "results_frame",
    "round_to_dtype",
    "row_sum_error",
    "run_numerics",
    "softmax_callable",
    "special_matrix",
    "special_values_table",
    "summarize",
    "summary_lines",
    "sweep_columns",
    "ulp_counts",
    "ulp_distance",
    "versus_torch",
]
