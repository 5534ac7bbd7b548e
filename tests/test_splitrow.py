"""Split-row kernel under the CPU interpreter: chunks, prefetch, counter or tag waits, the aligned window,
special values and the launch-to-launch workspace (epochs), against the float64 reference."""

from __future__ import annotations

import pytest
import torch

from blockscope import kernels
from blockscope.kernels import splitrow
from blockscope.kernels._common import specialization_key
from tests.softmax_checks import assert_softmax_close

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def make_input(n_rows: int, n_cols: int, dtype: torch.dtype, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(n_rows, n_cols, generator=generator) * 4).to(dtype).to(DEVICE)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: kernels.DTYPE_NAMES[d])
@pytest.mark.parametrize("n_cols", [255, 256, 1000, 2049])  # aligned and not: both windows
@pytest.mark.parametrize("prefetch, counter", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_chunked_rows_match_reference(n_cols, dtype, prefetch, counter):
    x = make_input(5, n_cols, dtype, seed=n_cols)
    out = kernels.softmax(x, "splitrow", chunk=256, prefetch=prefetch, counter=counter)
    assert_softmax_close(out, x, f"splitrow N={n_cols} prefetch={prefetch} counter={counter}")


@pytest.mark.parametrize("window", [0, 1])
def test_window_on_and_off_agree_for_unaligned_rows(window):
    x = make_input(7, 1001, torch.float16, seed=3)  # rows start at every 2-byte offset mod 16
    plan = splitrow.plan(7, 1001, torch.float16, chunk=256, window=window)
    assert plan.constexprs["ALIGN"] == (8 if window else 1)
    assert plan.constexprs["CHUNKS"] == 4  # cdiv(1001 + 7, 256) == cdiv(1001, 256)
    assert_softmax_close(kernels.softmax(x, "splitrow", chunk=256, window=window), x, f"window={window}")


def test_window_is_16_bytes_of_elements():
    assert splitrow.plan(4, 1001, torch.float16, chunk=256).constexprs["ALIGN"] == 8
    assert splitrow.plan(4, 1001, torch.bfloat16, chunk=256).constexprs["ALIGN"] == 8
    assert splitrow.plan(4, 1001, torch.float32, chunk=256).constexprs["ALIGN"] == 4
    assert splitrow.plan(4, 1024, torch.float32, chunk=256).constexprs["ALIGN"] == 1  # rows already aligned


def test_window_adds_a_chunk_only_when_the_slack_needs_one():
    assert splitrow.plan(4, 1024, torch.float16, chunk=256).constexprs["CHUNKS"] == 4  # aligned: no window
    assert splitrow.plan(4, 1023, torch.float16, chunk=256).constexprs["CHUNKS"] == 5  # 1023 + 7 > 1024
    assert splitrow.plan(4, 1017, torch.float16, chunk=256).constexprs["CHUNKS"] == 4  # 1017 + 7 == 1024


def test_one_chunk_per_row_needs_no_exchange():
    x = make_input(6, 3000, torch.float32, seed=4)
    plan = splitrow.plan(6, 3000, torch.float32, chunk=4096)
    assert plan.constexprs["CHUNKS"] == 1
    assert_softmax_close(kernels.softmax(x, "splitrow", chunk=4096), x, "one chunk")


def test_strided_rows_fall_back_to_the_unwindowed_store():
    base = make_input(6, 1200, torch.float32, seed=5)
    x = base[:, :1001]  # row stride 1200 != output stride 1001: the window shift differs between them
    assert_softmax_close(kernels.softmax(x, "splitrow", chunk=256), x, "strided rows")


def test_special_values_match_torch():
    x = make_input(4, 700, torch.float32, seed=6)
    x[0] = -float("inf")  # all -inf row: NaN, as torch
    x[1, 5] = float("inf")
    x[2, 300:] = -float("inf")  # a whole chunk of -inf: zeros there
    x[3, 17] = float("nan")
    got = kernels.softmax(x, "splitrow", chunk=256)
    expected = torch.softmax(x.double(), dim=-1)
    assert torch.equal(torch.isnan(got), torch.isnan(expected))
    finite = ~torch.isnan(expected)
    assert torch.allclose(got.double()[finite], expected[finite], atol=1e-6)


def test_workspace_survives_launches_of_different_shapes():
    """Tags of earlier launches (other CHUNKS, other rows) must never be taken for this launch's."""
    device = torch.device(DEVICE)
    for n_rows, n_cols, chunk in [(3, 2000, 256), (9, 700, 256), (2, 5000, 512), (9, 700, 256), (3, 2000, 256)]:
        x = make_input(n_rows, n_cols, torch.float32, seed=n_rows * n_cols)
        assert_softmax_close(kernels.softmax(x, "splitrow", chunk=chunk), x, f"R={n_rows} N={n_cols}")
    stats, counters, control = splitrow.workspace(device, 1, 1)
    assert int(control[0]) >= 6 and int(control[1]) == 0  # one epoch per launch with chunks, exit count reset


def test_bad_tunables_name_what_is_allowed():
    x = make_input(2, 300, torch.float32)
    with pytest.raises(ValueError, match="prefetch=2 is not allowed; allowed: 0, 1"):
        kernels.softmax(x, "splitrow", prefetch=2)
    with pytest.raises(ValueError, match="counter='yes' is not allowed"):
        kernels.softmax(x, "splitrow", counter="yes")
    with pytest.raises(ValueError, match="unknown tunable"):
        kernels.softmax(x, "splitrow", tile=256)


def test_specialization_key_follows_what_triton_specializes():
    x = torch.zeros(64, dtype=torch.float16)
    assert specialization_key((x, 32, 33, 1)) != specialization_key((x, 33, 32, 1))
    assert specialization_key((x,)) != specialization_key((x.float(),))  # pointer dtype
    assert specialization_key((x[1:],))[0][1] is False  # 2-byte offset: not 16-byte aligned
    assert specialization_key((2**31,)) != specialization_key((2**31 - 16,))  # needs 64 bits


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: kernels.DTYPE_NAMES[d])
@pytest.mark.parametrize("n_cols", [2**23 + 1, 2**24 - 1, 2**24])
def test_default_chunk_scales_with_n_up_to_max_n(n_cols, dtype):
    """The default chunk (16384) allowed at most 2**24 - 16383 columns with the window: N = 2**24 - 1 failed."""
    plan = splitrow.plan(1, n_cols, dtype)
    chunks, chunk = plan.constexprs["CHUNKS"], plan.constexprs["CHUNK"]
    assert chunks <= splitrow.MAX_CHUNKS and chunk <= splitrow.MAX_CHUNK
    assert chunks * chunk >= n_cols + plan.constexprs["ALIGN"] - 1
    assert splitrow.plan(1, 100_000, dtype).constexprs["CHUNK"] == 16384  # unchanged where it fits
    with pytest.raises(ValueError, match="needs .* chunks of 256; allowed: at most 1024 .raise chunk."):
        splitrow.plan(1, n_cols, dtype, chunk=256)


def test_cooperative_launch_is_available_and_failures_are_recognised():
    """Triton 3.6 and 3.7 both take launch_cooperative_grid; the launcher falls back to 'online' only on errors
    from the cooperative attribute."""
    from blockscope.kernels._common import cooperative_launch_supported

    assert cooperative_launch_supported()
    assert splitrow._is_cooperative_failure(RuntimeError("Triton Error [CUDA]: too many blocks in cooperative launch"))
    assert splitrow._is_cooperative_failure(RuntimeError("Triton Error [CUDA]: operation not supported"))
    assert not splitrow._is_cooperative_failure(RuntimeError("CUDA error: an illegal memory access was encountered"))
    assert splitrow._cooperative({"CHUNKS": 4}) and not splitrow._cooperative({"CHUNKS": 1})
    assert "cooperative launch" in splitrow.__doc__ and "online" in splitrow.__doc__
