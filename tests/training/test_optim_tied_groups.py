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


def test_a_tie_whose_positions_state_differs_is_refused_and_changes_nothing():
    """review89 F3: an untied run's state (positions 0 and 3 with their own moments) loaded into an
    optimizer that ``step_`` then uses with the tie: each position updated its own moments and the
    tensor took the last position's update. Now refused before any change; a tie stepped from a
    fresh optimizer, and its state loaded again, keeps equal states and is never refused."""
    params, untied = _tied_step_ready(optim.adam(0.05), [])
    params[3] = tl.tensor(params[0].numpy().copy(), requires_grad=True)  # untie: its own tensor
    for _ in range(2):
        with tl.session():
            tl.cross_entropy(nn_forward(params), NEXT, axis=-1).backward()
        untied.step_(params)
    state = untied.state_dict()
    assert not np.array_equal(state["first.0"], state["first.3"])
    tied, opt = _tied_step_ready(optim.adam(0.05), [])
    opt.load_state_dict(state)
    values = [p.numpy().copy() for p in tied]
    with pytest.raises(OptimizerError) as caught:
        opt.step_(tied)
    assert str(caught.value) == (
        "optimizer: parameters 0 ('0.weight') and 3 ('2.weight') are one tensor (tied weights), so one "
        "parameter, but their optimizer states differ (their first state buffers): a state made where they "
        "were separate parameters (an untied run's state_dict) would update each position's state apart and "
        "leave the tensor the last position's update; create the optimizer afresh for the tied parameters, "
        "or load a state saved with the tie"
    )
    for param, value in zip(tied, values, strict=True):
        np.testing.assert_array_equal(param.numpy(), value)
    for key, value in state.items():
        np.testing.assert_array_equal(opt.state_dict()[key], value, err_msg=key)
    # step counts differing is named first (a position whose gradient was None in the untied run)
    counted, fresh = _tied_step_ready(optim.adam(0.05), [])
    fresh.param_steps[3] += 1
    with pytest.raises(OptimizerError, match=r"optimizer states differ \(step counts 0 and 1\)"):
        fresh.step_(counted)
    # a tie from a fresh optimizer: three steps, a state round trip, a fourth step; never refused
    tied, opt = _tied_step_ready(optim.adam(0.05, amsgrad=True), [])
    for step in range(4):
        if step:
            with tl.session():
                tl.cross_entropy(nn_forward(tied), NEXT, axis=-1).backward()
        opt.step_(tied)
        if step == 2:
            saved = opt.state_dict()
            opt = optim.adam(0.05, amsgrad=True).create([p.numpy() for p in tied], names=opt.names)
            opt.load_state_dict(saved)
    final = opt.state_dict()
    for buffer in ("first", "second", "third"):
        np.testing.assert_array_equal(final[f"{buffer}.0"], final[f"{buffer}.3"])


def nn_forward(params):
    """The review's model (as :func:`_tied_step_ready` builds it) run on ``IDS`` with ``params``."""
    layer = nn.sequential(nn.embedding(V, D), nn.layer_norm(D), nn.linear(D, V, False))
    model = nn.build(layer, input_shape=(T,), seed=0, dtype="float64")
    return model(tl.tensor(IDS), params, training=True)
