"""review138 F3: reading ``.grad`` of a tensor a recorded op produced (not a leaf) warns, as torch
warns, with the way to read such a gradient; leaves, filled or not, and tensors without a node
(under no_grad, detached) read silently."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import torchlean as tl


def test_a_non_leafs_grad_warns_like_torch() -> None:
    x = tl.tensor(np.ones(3), requires_grad=True)
    h = x * 2.0
    tl.reduce_sum(h * h).backward()
    expected = (r"not a leaf \(made by `scale`\) is None, as torch warns too: "
                r"backward\(\) keeps gradients of leaves only; .*detach\(\)\.requires_grad_\(\)")
    with pytest.warns(UserWarning, match=expected):
        assert h.grad is None
    xt = torch.ones(3, dtype=torch.float64, requires_grad=True)
    ht = xt * 2
    (ht * ht).sum().backward()
    with pytest.warns(UserWarning, match="not a leaf Tensor"):  # the behaviour mirrored
        assert ht.grad is None


def test_leaves_and_nodeless_tensors_read_silently() -> None:
    x = tl.tensor(np.ones(3), requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x.grad is None  # a leaf before backward
        tl.reduce_sum(x * x).backward()
        np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])  # type: ignore[union-attr]
        with tl.no_grad():
            assert (x * 2.0).grad is None
        assert (x * 2.0).detach().grad is None
        assert tl.tensor(np.ones(2)).grad is None
