"""The test helpers' mismatch messages: how many elements differ and the first bad index with its inputs."""

from __future__ import annotations

import pytest
import torch

from tests.grad_checks import assert_grad_close
from tests.softmax_checks import assert_softmax_close


def test_softmax_mismatch_names_the_first_bad_index_and_its_input():
    x = torch.zeros(2, 4)
    wrong = torch.full_like(x, 0.25)
    wrong[1, 2] = 0.5
    assert_softmax_close(torch.full_like(x, 0.25), x, "ok")
    with pytest.raises(
        AssertionError,
        match=r"^bad: 1 of 8 elements differ \(rtol=2e-05, atol=1e-07\); first at "
        r"index \(1, 2\): got 0.5, expected 0.25, input 0$",
    ):
        assert_softmax_close(wrong, x, "bad")
    with pytest.raises(AssertionError, match="1 of 8 elements differ"):  # NaN where the reference has none
        assert_softmax_close(torch.where(wrong == 0.5, torch.nan, wrong), x, "nan")


def test_gradient_mismatch_names_y_and_dy_there():
    y, dy = torch.full((1, 4), 0.25), torch.tensor([[1.0, 0.0, 0.0, 0.0]])
    want = (y * (dy - (y * dy).sum(-1, keepdim=True))).to(torch.float64)
    assert_grad_close(want.float(), want, y, dy, torch.float32, "ok")
    with pytest.raises(
        AssertionError,
        match=r"^g: 1 of 4 gradient elements differ .* first at index \(0, 3\): "
        r"got 1, expected -0.0625, y 0.25, dy 0$",
    ):
        assert_grad_close(torch.where(torch.arange(4) == 3, 1.0, want.float()), want, y, dy, torch.float32, "g")
