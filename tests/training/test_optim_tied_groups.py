"""Tied weights (one tensor at two positions of ``step_``) and parameter groups (review85 F1).

The model is review85's: an embedding table tied to the LM head (``0.weight`` and ``2.weight``).
Oracles: a refusal that names both positions and groups, with every tensor, gradient and the
optimizer's state as they were before the call; for groups that agree, SGD's step worked out by
hand from the gradient the tied tensor holds (``p - lr * lr_scale * (g + weight_decay * p)``).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import torchlean as tl
from torchlean import nn, optim
from torchlean.optim import OptimizerError

V, T, D = 7, 4, 5
IDS = np.random.default_rng(0).integers(0, V, (8, T))
NEXT = np.roll(IDS, -1, axis=1)


def _tied_step_ready(config: optim.OptimizerConfig, groups: list[optim.ParamGroup]):
    """The review's model with its head tied to the table, its gradients computed, and the
    optimizer; nothing stepped yet."""
    layer = nn.sequential(nn.embedding(V, D), nn.layer_norm(D), nn.linear(D, V, False))
    model = nn.build(layer, input_shape=(T,), seed=0, dtype="float64")
    params = model.tensors()
    params[3] = params[0]  # tie the head (2.weight) to the table (0.weight)
    opt = config.create(model.parameters, names=model.names, groups=groups)
    with tl.session():
        tl.cross_entropy(model(tl.tensor(IDS), params, training=True), NEXT, axis=-1).backward()
    return params, opt


DISAGREEING = [
    (
        [optim.group(r"^0\.", weight_decay=0.0)],
        "0 is in optim.group('^0\\\\.', weight_decay=0.0), 3 in no group",
    ),
    ([optim.group(r"^2\.", weight_decay=0.0)], "0 is in no group (the optimizer's own settings), 3 in "
                                               "optim.group('^2\\\\.', weight_decay=0.0)"),
    ([optim.group(r"^0\.", lr_scale=2.0)], "0 is in optim.group('^0\\\\.', lr_scale=2.0), 3 in no group"),
    ([optim.group(r"^0\.", frozen=True)], "0 is in optim.group('^0\\\\.', frozen=True), 3 in no group"),
    ([optim.group(r"^2\.", frozen=True)], "3 in optim.group('^2\\\\.', frozen=True)"),
    (
        [optim.group(r"^0\.", weight_decay=0.0), optim.group(r"^2\.", weight_decay=0.1)],
        "0 is in optim.group('^0\\\\.', weight_decay=0.0), 3 in optim.group('^2\\\\.', weight_decay=0.1)",
    ),
]


@pytest.mark.parametrize("clip", [None, 1.0])
@pytest.mark.parametrize(
    ("groups", "placement"), DISAGREEING,
    ids=["no-decay-table", "no-decay-head", "lr-scale-table", "frozen-table", "frozen-head", "two-groups"],
)
def test_a_tie_across_groups_that_disagree_is_refused_and_changes_nothing(groups, placement, clip):
    """Before the fix the last position's group won (and a frozen table froze only with
    max_grad_norm); torch refuses a parameter in two parameter groups."""
    params, opt = _tied_step_ready(optim.adamw(1e-2, weight_decay=0.5), groups)
    values = [p.numpy().copy() for p in params]
    grads = [p.grad.numpy().copy() for p in params]
    state = opt.state_dict()
    with pytest.raises(OptimizerError) as caught:
        opt.step_(params, max_grad_norm=clip)
    message = str(caught.value)
    assert message.startswith(
        "optimizer: parameters 0 ('0.weight') and 3 ('2.weight') are one tensor (tied weights), so one "
        "parameter, but their groups disagree: "
    )
    assert placement in message
    assert "torch refuses a parameter in two parameter groups: put both names in one group" in message
    suggested = re.search(r"such as '(.*?)';", message)
    assert suggested is not None
    pattern = suggested.group(1).replace("\\\\", "\\")
    assert [bool(re.search(pattern, n)) for n in ("0.weight", "1.weight", "1.bias", "2.weight")] == [
        True, False, False, True
    ]
    for param, value, grad in zip(params, values, grads, strict=True):
        np.testing.assert_array_equal(param.numpy(), value)
        assert param.grad is not None
        np.testing.assert_array_equal(param.grad.numpy(), grad)
    after = opt.state_dict()
    assert after.keys() == state.keys()
    for key, value in state.items():
        np.testing.assert_array_equal(after[key], value, err_msg=key)


AGREEING = [
    ([optim.group(r"^(0|2)\.weight$", weight_decay=0.5, lr_scale=2.0)], 2.0, 0.5),  # one group
    ([optim.group(r"^0\.", weight_decay=0.5, lr_scale=2.0),
      optim.group(r"^2\.", lr_scale=2.0, weight_decay=0.5)], 2.0, 0.5),  # two groups, same settings
    ([optim.group(r"^1\.", weight_decay=0.5)], 1.0, 0.0),  # neither tied position in a group
    ([optim.group(r"^0\.", frozen=True), optim.group(r"^2\.", frozen=True)], 0.0, 0.0),  # both frozen
]


@pytest.mark.parametrize("clip", [None, 1e6])
@pytest.mark.parametrize(
    ("groups", "lr_scale", "weight_decay"), AGREEING,
    ids=["one-group", "two-groups-alike", "no-group", "both-frozen"],
)
def test_a_tie_whose_groups_agree_takes_one_hand_computed_sgd_step(groups, lr_scale, weight_decay, clip):
    """Same group, groups with the same settings (in another order), no group, or both frozen:
    the tied tensor takes SGD's step once (a regression guard: this worked before the fix too, and
    must not be refused by it). The clipping limit 1e6 is above the norm, so it scales nothing."""
    params, opt = _tied_step_ready(optim.sgd(0.1), groups)
    before = params[0].numpy().copy()
    grad = params[0].grad.numpy().copy()
    opt.step_(params, max_grad_norm=clip)
    lr = 0.1 * lr_scale
    expected = before - lr * (grad + weight_decay * before)
    assert params[3] is params[0]
    np.testing.assert_array_equal(params[0].numpy(), expected)
    assert all(p.grad is None for p in params)
    if lr_scale == 0.0:
        np.testing.assert_array_equal(params[0].numpy(), before)


def test_step_in_place_with_more_tensors_than_parameters_is_refused_by_count():
    """An extra tensor reached ``is_frozen`` first and raised a bare IndexError."""
    sgd = optim.sgd(0.1).create([np.zeros(2)])
    tensors = [tl.tensor(np.zeros(2), requires_grad=True) for _ in range(2)]
    for tensor in tensors:
        tensor.grad = tl.tensor(np.ones(2))
    with pytest.raises(OptimizerError, match=r"^optimizer: expected 1 parameters, got 2$"):
        sgd.step_(tensors)
    assert all(t.grad is not None and not t.numpy().any() for t in tensors)
