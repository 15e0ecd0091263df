"""``Tensor.add/sub/mul/div/square`` against torch float64 (values and gradients), ``pow`` refused
as ``**`` is, and the hints an absent torch attribute (``t.argmax``, ``t.float()``) gets
(review27_user F4); unknown attributes stay plain ``AttributeError``s, so copying and pickling
are unaffected."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
import torch

import torchlean as tl

CASES = [
    ("add", lambda a, b: a.add(b)),
    ("sub", lambda a, b: a.sub(b)),
    ("mul", lambda a, b: a.mul(b)),
    ("div", lambda a, b: a.div(b)),
    ("square", lambda a, b: a.square() + b),
    ("add-number", lambda a, b: a.add(0.5) * b),
]


@pytest.mark.parametrize(("name", "call"), CASES, ids=[c[0] for c in CASES])
def test_arithmetic_methods_match_torch(name, call):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((3, 4)), rng.uniform(0.5, 2.0, (3, 4))
    cot = rng.standard_normal((3, 4))
    with tl.session(profile="checked_cpu"):
        ta, tb = tl.tensor(a, requires_grad=True), tl.tensor(b, requires_grad=True)
        out = call(ta, tb)
        (out * tl.tensor(cot)).sum().backward()
    pa, pb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    expected = call(pa, pb)
    (expected * torch.tensor(cot)).sum().backward()
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=2e-16 * 4, atol=0)
    assert ta.grad is not None and tb.grad is not None
    np.testing.assert_allclose(ta.grad.numpy(), pa.grad.numpy(), rtol=1e-15, atol=1e-16)
    np.testing.assert_allclose(tb.grad.numpy(), pb.grad.numpy(), rtol=1e-15, atol=1e-16)


def test_pow_is_refused_as_the_operator_is():
    x = tl.tensor(np.ones(2))
    with pytest.raises(tl.TensorTypeError, match=r"not an op of the backend catalog.*t \* t for t \*\* 2"):
        x.pow(2)


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("argmax", r"np\.argmax\(t\.numpy\(\), axis\)"),
        ("max", r"no max reduction.*np\.max\(t\.numpy\(\), axis\)"),
        ("float", r"torchlean\.tensor\(t\.numpy\(\), dtype='float32'\)"),
        ("double", r"dtype='float64'"),
        ("norm", r"\(t \* t\)\.sum\(\)\.sqrt\(\)"),
        ("mT", r"t\.transpose\(-2, -1\)"),
    ],
)
def test_absent_torch_attributes_get_a_hint(name, hint):
    x = tl.tensor(np.ones((2, 2)))
    with pytest.raises(AttributeError, match=rf"^'Tensor' object has no attribute '{name}': .*{hint}"):
        getattr(x, name)


def test_the_hinted_spellings_work():
    x = tl.tensor(np.array([[3.0, 4.0]]))
    assert float((x * x).sum().sqrt()) == 5.0
    assert x.transpose(-2, -1).shape == (2, 1)


def test_other_attributes_stay_plain_and_copies_work():
    x = tl.tensor(np.arange(3.0))
    with pytest.raises(AttributeError, match=r"^'Tensor' object has no attribute 'nonsense'$"):
        _ = x.nonsense
    assert not hasattr(x, "__array_interface__")
    assert np.array_equal(copy.deepcopy(x).numpy(), x.numpy())
    assert np.array_equal(pickle.loads(pickle.dumps(x)).numpy(), x.numpy())
