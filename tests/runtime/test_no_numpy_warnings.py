"""Non-finite inputs give IEEE results without numpy ``RuntimeWarning``s.

A user running with ``warnings.simplefilter("error")`` (or ``pytest -W error``) must get the
values torch gives (``inf``, ``nan``), not an exception from numpy's ``overflow`` / ``invalid
value`` / ``divide by zero`` warnings. Covered: every ``checked_cpu`` spatial and normalisation
kernel, forward and backward through the tape, and the public ``torchlean.spec`` functions.
Oracle for the values: torch float64 on the same inputs, NaN positions included.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import torchlean as tl
from torchlean import spec

X = np.array([[[np.inf, 0.0, 1.0, -np.inf, np.nan, 2.0, 1e308, 1e308]]])
"""(N, C, L) = (1, 1, 8): +inf, -inf, NaN and values whose sum overflows."""

CASES: dict[str, tuple[Callable[[Any], Any], Callable[[torch.Tensor], torch.Tensor]]] = {
    "conv": (
        lambda x: tl.conv(x, tl.tensor(np.ones((1, 1, 2))), padding=1),
        lambda x: F.conv1d(x, torch.ones(1, 1, 2, dtype=torch.float64), padding=1),
    ),
    "conv_transpose": (
        lambda x: tl.conv_transpose(x, tl.tensor(np.ones((1, 1, 2)))),
        lambda x: F.conv_transpose1d(x, torch.ones(1, 1, 2, dtype=torch.float64)),
    ),
    "max_pool": (lambda x: tl.max_pool(x, 2), lambda x: F.max_pool1d(x, 2)),
    "avg_pool": (lambda x: tl.avg_pool(x, 2), lambda x: F.avg_pool1d(x, 2)),
    "smooth_max_pool": (
        lambda x: tl.smooth_max_pool(x, 2, 1.0),
        lambda x: torch.logsumexp(x.reshape(1, 1, 4, 2), dim=-1),
    ),
    "layer_norm": (lambda x: tl.layer_norm(x), lambda x: F.layer_norm(x, (8,))),
    "batch_norm": (
        lambda x: tl.batch_norm(x),
        lambda x: F.batch_norm(x, None, None, training=True),
    ),
}


@pytest.mark.parametrize("op", list(CASES))
def test_checked_cpu_spatial_kernels_are_silent_on_non_finite_inputs(op: str) -> None:
    ours, theirs = CASES[op]
    x = tl.tensor(X, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with tl.session("checked_cpu"):
            out = ours(x)
            tl.reduce_sum(out).backward()
    tx = torch.tensor(X, requires_grad=True)
    expected = theirs(tx)
    expected.sum().backward()
    np.testing.assert_array_equal(np.isnan(out.numpy()), np.isnan(expected.detach().numpy()))
    finite = np.isfinite(expected.detach().numpy())
    np.testing.assert_allclose(out.numpy()[finite], expected.detach().numpy()[finite], rtol=1e-12)
    np.testing.assert_array_equal(out.numpy()[~finite], expected.detach().numpy()[~finite])
    assert x.grad is not None and x.grad.shape == X.shape


ROWS = np.array([[np.inf, 0.0, 1.0], [np.nan, 1.0, 2.0], [-np.inf, -np.inf, 0.0], [1e308, 1e308, -1e308]])


@pytest.mark.parametrize(
    "call",
    [
        lambda: spec.hard_masked_softmax(ROWS, np.ones(ROWS.shape, dtype=bool)),
        lambda: spec.scaled_dot_product_attention(ROWS, ROWS, ROWS),
        lambda: spec.scaled_dot_product_attention_backward(ROWS, ROWS, ROWS, ROWS),
        lambda: spec.flash_attention(ROWS, ROWS, ROWS),
        lambda: spec.flash_attention_backward(
            ROWS, ROWS, ROWS, *spec.flash_attention_forward(ROWS, ROWS, ROWS), ROWS
        ),
    ],
    ids=["hard_masked_softmax", "sdpa", "sdpa_backward", "flash", "flash_backward"],
)
def test_spec_functions_are_silent_on_non_finite_inputs(call: Callable[[], Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = call()
    arrays = result if isinstance(result, tuple) else (result,)
    assert any(np.isnan(np.asarray(a, dtype=np.float64)).any() for a in arrays)  # NaN propagated


def test_hard_masked_softmax_row_with_inf_is_nan_like_torch() -> None:
    """The value behind the silence: an allowed ``+inf`` score makes the row NaN (``inf - inf``),
    as ``torch.softmax`` gives; a row without one is the ordinary softmax."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = spec.hard_masked_softmax(ROWS, np.ones(ROWS.shape, dtype=bool))
    expected = torch.softmax(torch.tensor(ROWS), dim=-1).numpy()
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(expected))
    np.testing.assert_allclose(ours[~np.isnan(expected)], expected[~np.isnan(expected)], rtol=1e-15)
