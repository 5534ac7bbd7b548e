"""The Triton softmax backward (kernels/backward.py) under the CPU interpreter against the float64 formula."""

from __future__ import annotations

import pytest
import torch

from blockscope import kernels
from blockscope.kernels import backward
from blockscope.kernels.backward import choose_backward, softmax_backward
from tests.grad_checks import assert_grad_close, backward_reference

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
EDGE_N = [1, 5, 127, 128, 129, 1000, 1024, 1025]
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def make_pair(n_rows: int, n_cols: int, dtype: torch.dtype, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """(y, dy): a softmax output of scaled normal logits and a normal output gradient, both in `dtype`."""
    generator = torch.Generator().manual_seed(seed)
    y = torch.softmax(torch.randn(n_rows, n_cols, generator=generator, dtype=torch.float64) * 3, -1)
    dy = torch.randn(n_rows, n_cols, generator=generator, dtype=torch.float64)
    return y.to(dtype).to(DEVICE), dy.to(dtype).to(DEVICE)


def check(y: torch.Tensor, dy: torch.Tensor, label: str, **kwargs) -> None:
    dx = softmax_backward(y, dy, **kwargs)
    assert dx.is_contiguous(), f"{label}: dx not contiguous"
    assert_grad_close(dx, backward_reference(y, dy), y, dy, y.dtype, label)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: kernels.DTYPE_NAMES[d])
@pytest.mark.parametrize("n_cols", EDGE_N)
@pytest.mark.parametrize("path", backward.PATHS)
def test_every_path_matches_fp64_across_power_of_two_edges(path, n_cols, dtype):
    y, dy = make_pair(3, n_cols, dtype, seed=n_cols)
    check(y, dy, f"{path} N={n_cols}", path=path)


@pytest.mark.parametrize(
    "path, tunables",
    [
        ("row", {"num_warps": 1}),
        ("multirow", {"rows_per_program": 4, "num_warps": 2}),  # 7 rows: the last tile masks one row
        ("multirow", {"rows_per_program": 1}),
        ("looped", {"tile": 16}),  # 63 steps per pass, a tail step of 8 lanes
        ("looped", {"tile": 256, "num_warps": 2}),
    ],
)
def test_tunables_keep_results(path, tunables):
    y, dy = make_pair(7, 1000, torch.float32, seed=2)
    check(y, dy, f"{path} {tunables}", path=path, **tunables)


@pytest.mark.parametrize("path", backward.PATHS)
def test_any_row_stride_for_y_dy_and_non_unit_columns(path):
    wide_y, wide_dy = make_pair(6, 300, torch.float16, seed=3)
    y, dy = wide_y[::2, 7:207], wide_dy[1::2, 50:250]  # different row strides, unaligned starts
    check(y, dy, f"{path} row-strided", path=path)
    check(y.t().contiguous().t(), dy, f"{path} column-major y", path=path)  # last-dim stride 3: copied
    expanded = wide_dy[0, :200].expand(3, 200)  # dy with row stride 0 (the grad of y.sum(0)-like graphs)
    check(y, expanded, f"{path} expanded dy", path=path)
    rank3 = torch.softmax(torch.randn(2, 3, 40, dtype=torch.float64), -1).to(torch.bfloat16).to(DEVICE)
    check(rank3.transpose(0, 1), torch.randn_like(rank3).transpose(0, 1), f"{path} rank-3 permuted", path=path)


@pytest.mark.parametrize("path", backward.PATHS)
def test_whole_vector_n_with_strides_that_are_not(path):
    """N=200 fp16 rows are whole 16-byte vectors; strides of 204 (y) and 210 (dy) elements are not: VEC drops to 1."""
    wide_y, wide_dy = make_pair(4, 210, torch.float16, seed=8)
    check(wide_y[:, 4:204], wide_dy[:, 3:203], f"{path} strides 210", path=path)
    check(wide_y[:, :200].contiguous(), wide_dy[:, :200].contiguous(), f"{path} contiguous N=200", path=path)


def test_dy_in_another_dtype_is_cast_to_ys():
    y, dy = make_pair(3, 129, torch.float16, seed=4)
    dx = softmax_backward(y, dy.float())
    assert dx.dtype == torch.float16
    assert_grad_close(dx, backward_reference(y, dy), y, dy, torch.float16, "fp32 dy")


def test_nan_rows_stay_nan_and_empty_inputs():
    y, dy = make_pair(3, 64, torch.float32, seed=5)
    y[1, 3] = float("nan")
    dx = softmax_backward(y, dy)
    assert torch.isnan(dx[1]).all() and not torch.isnan(dx[[0, 2]]).any()
    for shape in [(0, 5), (4, 0), (2, 0, 3)]:
        empty = torch.empty(shape, device=DEVICE)
        assert softmax_backward(empty, empty).shape == shape


@pytest.mark.parametrize(
    "n_cols, path",
    [
        (1, "multirow"),
        (128, "multirow"),
        (1024, "multirow"),
        (1025, "row"),
        (8192, "row"),
        (8193, "looped"),
        (65536, "looped"),
        (2**20, "looped"),
    ],
)
def test_choose_backward_by_block(n_cols, path):
    chosen, tunables = choose_backward(4096, n_cols, torch.float16)
    assert chosen == path, f"N={n_cols}: {chosen}"
    launch = backward.plan(4096, n_cols, torch.float16, chosen, **tunables)
    assert launch.variant == f"backward_{path}" and launch.num_warps in (4, 8, 16)


def test_default_plan_follows_the_chooser():
    assert backward.plan(64, 2000, torch.float32).variant == "backward_row"
    assert backward.plan(64, 2000, torch.float32).num_warps == 4
    assert backward.plan(64, 8192, torch.float32).num_warps == 16
    assert backward.plan(64, 100, torch.float32).rows_per_program == 16


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"path": "split"}, "unknown path 'split'; allowed: row, multirow, looped"),
        ({"path": "row", "tile": 64}, "unknown tunable.*tile; allowed: num_warps"),
        ({"path": "looped", "tile": 24}, "tile=24 is not allowed; allowed: a power of two"),
        ({"path": "multirow", "rows_per_program": 128}, "allowed: rows_per_program <= 64"),
        ({"path": "row", "num_warps": 3}, "num_warps=3 is not allowed"),
    ],
)
def test_bad_paths_and_tunables_name_what_is_allowed(kwargs, match):
    y, dy = make_pair(2, 1000, torch.float32)
    with pytest.raises(ValueError, match=match):
        softmax_backward(y, dy, **kwargs)


def test_limits_and_input_errors():
    with pytest.raises(ValueError, match="N=20000 is outside this path's range; allowed: 1 <= N <= 16384"):
        backward.plan(2, 20000, torch.float32, "multirow")
    with pytest.raises(ValueError, match="N=70000 .* allowed: 1 <= N <= 65536"):
        backward.plan(2, 70000, torch.float32, "row")
    y, dy = make_pair(2, 8, torch.float32)
    with pytest.raises(ValueError, match="does not match y"):
        softmax_backward(y, dy[:, :4])
    with pytest.raises(TypeError, match="unsupported dtype torch.float64"):
        softmax_backward(y.double(), dy.double())
    with pytest.raises(RuntimeError, match="raw launchers have no autograd; allowed: kernels.softmax"):
        softmax_backward(y, dy.requires_grad_())
    with torch.no_grad():
        check(y, dy, "under no_grad")
