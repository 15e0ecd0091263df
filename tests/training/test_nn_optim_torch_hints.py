"""torch idioms on ``Model``, ``Optimizer`` and ``cross_entropy`` name torchlean's spelling
(review85 F2), as ``Tensor``'s attribute hints do.

Oracles: the messages, written out; each claim a hint makes checked against the object (the
``training=`` default, the methods it names, ``step_`` clearing the gradients); the refusal's
spelling of ``reduction="sum"``/``"none"`` against torch's ``cross_entropy`` in float64.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle

import numpy as np
import pytest
import torch

import torchlean as tl
from torchlean import nn, optim
from torchlean.tensor import TensorError


def _model() -> nn.Model:
    return nn.build(nn.sequential(nn.linear(3, 2)), seed=0, dtype="float64")


MODEL_HINTS = {
    "train": "a Model keeps no train/eval mode: each call says which, model(x, params, training=True) for "
             "torch's model.train()",
    "eval": "and training=False, the default, for torch's model.eval() (so a call without it evaluates, the "
            "opposite of a fresh torch module)",
    "state_dict": "model.state() gives the parameters and buffers by name",
    "load_state_dict": "model.load_state(state, strict=True) loads a model.state() mapping or a torch "
                       "state_dict()",
    "named_parameters": "zip(model.names, model.parameters) gives the names and numpy arrays in state order",
    "zero_grad": "the optimizer's step_(params) sets every .grad to None after its update",
    "to": "model.tensors(device='cuda') gives its parameters on a device",
    "double": "nn.build(layer, ..., dtype='float64')",
}


OPTIMIZER_HINTS = {
    "zero_grad": "step_(params) sets every tensor's .grad to None after its update (torch's step() then "
                 "zero_grad()); to clear them without a step, set p.grad = None for each tensor p",
    "param_groups": "groups are optim.group(...) records given to create(params, names=model.names",
    "add_param_group": "an optimizer's parameters and groups are fixed when it is created",
    "state": "state_dict() gives the state as numpy arrays",
    "defaults": "optimizer.config is the record it was created from",
    "lr": "the learning rate in effect is optimizer.config.lr; set_lr(lr) changes it",  # review132 F11
}


CASES = [("Model", name, hint) for name, hint in MODEL_HINTS.items()] + [
    ("Optimizer", name, hint) for name, hint in OPTIMIZER_HINTS.items()
]


@pytest.mark.parametrize(("owner", "name", "hint"), CASES, ids=[f"{o}.{n}" for o, n, _ in CASES])
def test_model_and_optimizer_answer_torch_attributes_with_torchleans_spelling(owner, name, hint):
    model = _model()
    target = model if owner == "Model" else optim.adam(1e-3).create(model.parameters)
    with pytest.raises(AttributeError) as caught:
        getattr(target, name)
    message = str(caught.value)
    assert message.startswith(f"{owner!r} object has no attribute {name!r}: ")
    assert hint in message


def test_what_the_hints_claim_holds():
    """The ``training=`` default is False (eval), the named methods and attributes exist, and
    ``step_`` leaves every gradient ``None``."""
    model = _model()
    assert inspect.signature(nn.Model.forward).parameters["training"].default is False
    assert inspect.signature(nn.Model.__call__).parameters["training"].default is False
    assert callable(model.state) and callable(model.load_state) and callable(model.tensors)
    assert len(model.names) == len(model.parameters) == len(model.specs)
    opt = optim.sgd(0.1).create(model.parameters)
    assert opt.groups == () and opt.config == optim.sgd(0.1) and callable(opt.set_lr)
    params = model.tensors()
    with tl.session():
        tl.reduce_sum(model(tl.tensor(np.ones((2, 3))), params)).backward()
    assert all(p.grad is not None for p in params)
    opt.step_(params)
    assert all(p.grad is None for p in params)


def test_other_attributes_keep_pythons_error_and_objects_still_copy_and_pickle():
    """A regression guard (as before the hints): an unhinted name keeps Python's message and
    ``name``, so a traceback still suggests ``state`` for ``stat``; dunder probes get no hint."""
    model = _model()
    opt = optim.adam(1e-3).create(model.parameters)
    typo = "stat"
    for obj, kind in ((model, "Model"), (opt, "Optimizer")):
        with pytest.raises(AttributeError) as caught:
            getattr(obj, typo)
        assert str(caught.value) == f"'{kind}' object has no attribute 'stat'"
        assert caught.value.name == "stat"
        assert not hasattr(obj, "__array_interface__")
        for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
            assert type(pickle.loads(pickle.dumps(obj, protocol))) is type(obj)
        assert type(copy.deepcopy(obj)) is type(obj)


@pytest.mark.parametrize("reduction", ["sum", "none", "elementwise_mean", None])
def test_cross_entropy_reduction_other_than_mean_is_refused_with_its_spelling(reduction):
    """The refusal's spelling, run: the per-sample losses and their sum equal torch's
    ``reduction="none"`` and ``"sum"`` (class ids and probabilities); ``"mean"`` is the default."""
    rng = np.random.default_rng(3)
    x, ids, probs = rng.standard_normal((5, 3)), rng.integers(0, 3, 5), rng.dirichlet(np.ones(3), 5)
    with tl.session():
        logits = tl.tensor(x)
        with pytest.raises(TensorError) as caught:
            tl.cross_entropy(logits, ids, reduction=reduction)
        message = str(caught.value)
        assert message.startswith(
            f"cross_entropy: reduction={reduction!r} is not supported (accepted: 'mean', torch's default"
        )
        assert "tl.reshape(-tl.gather(tl.log_softmax(logits, axis), ids with the class axis kept" in message
        assert "axis), ids.shape) for class ids" in message
        assert "-tl.reduce_sum(probs * tl.log_softmax(logits, axis), axis) for probabilities" in message
        assert "reduction='sum' is tl.reduce_sum of them" in message
        np.testing.assert_array_equal(
            tl.cross_entropy(logits, ids, reduction="mean").numpy(), tl.cross_entropy(logits, ids).numpy()
        )
        per_id = tl.reshape(-tl.gather(tl.log_softmax(logits, 1), ids[:, None], 1), ids.shape)
        per_prob = -tl.reduce_sum(probs * tl.log_softmax(logits, 1), 1)
        for per, target in ((per_id, torch.tensor(ids)), (per_prob, torch.tensor(probs))):
            none = torch.nn.functional.cross_entropy(torch.tensor(x), target, reduction="none").numpy()
            total = torch.nn.functional.cross_entropy(torch.tensor(x), target, reduction="sum").item()
            assert per.shape == none.shape  # review89 F2: (N,), not (N, 1), which broadcasts against (N,)
            np.testing.assert_allclose(per.numpy(), none, rtol=1e-14, atol=0)
            assert tl.reduce_sum(per).numpy() == pytest.approx(total, rel=1e-14)


def test_cross_entropy_per_position_losses_of_the_hint_have_torchs_shape() -> None:
    """review89 F2: for (N, C, d) logits the hint's losses are (N, d), torch's reduction='none'."""
    rng = np.random.default_rng(4)
    x, ids = rng.standard_normal((4, 3, 2)), rng.integers(0, 3, (4, 2))
    with tl.session():
        per = tl.reshape(-tl.gather(tl.log_softmax(tl.tensor(x), 1), ids[:, None], 1), ids.shape)
    none = torch.nn.functional.cross_entropy(torch.tensor(x), torch.tensor(ids), reduction="none").numpy()
    assert per.shape == none.shape == (4, 2)
    np.testing.assert_allclose(per.numpy(), none, rtol=1e-14, atol=0)


@pytest.mark.parametrize("make", [optim.sgd, optim.adam, optim.adamw, optim.rmsprop, optim.adagrad])
def test_parameters_in_the_learning_rates_place_name_create(make):
    """review89 F5: ``optim.sgd(model.parameters, 0.1)`` (torch's ``SGD(params, lr)``) printed every
    weight and never named ``create``; it now names the list by its length and gives the spelling,
    which, run, builds an optimizer for those parameters."""
    model = nn.build(nn.sequential(nn.linear(4, 3), nn.tanh(), nn.linear(3, 2)), seed=0)
    for params in (model.parameters, tuple(model.parameters)):
        with pytest.raises(optim.OptimizerError) as caught:
            make(params, 0.1)
        kind = type(params).__name__
        assert str(caught.value) == (
            f"optimizer: learning rate must be a real number (int or float), got a {kind} of 4 arrays: "
            "parameters in the learning rate's place are torch's Optimizer(params, lr) order; torchlean's "
            f"optimizers take no params: build the record, then create the optimizer with them, "
            f"optim.{make.__name__}(lr).create(model.parameters)"
        )
    with pytest.raises(optim.OptimizerError, match=r"got a list of 4 tensors: parameters in the learning"):
        make(model.tensors(), 0.1)  # review90 F9: Tensors are not called arrays
    created = make(0.1).create(model.parameters)
    assert len(created.step(model.parameters, [np.ones_like(p) for p in model.parameters])) == 4
    with pytest.raises(optim.OptimizerError) as text:  # not a parameter list: no such hint
        make("0.1")
    assert str(text.value) == "optimizer: learning rate must be a real number (int or float), got '0.1'"


@pytest.mark.parametrize("make", [optim.sgd, optim.adam, optim.adamw, optim.rmsprop, optim.adagrad])
def test_torchs_params_first_with_the_rate_by_keyword_gets_the_create_hint(make):
    """review90 F9: ``optim.adam(model.parameters, lr=1e-3)``, torch's commonest form, was Python's
    "got multiple values for argument 'lr'"; the record's own keyword calls are unchanged."""
    model = nn.build(nn.sequential(nn.linear(4, 3), nn.tanh(), nn.linear(3, 2)), seed=0)
    for params, kind in ((model.parameters, "a list of 4 arrays"), (model.tensors(), "a list of 4 tensors")):
        with pytest.raises(optim.OptimizerError) as caught:
            make(params, lr=1e-3)
        assert str(caught.value) == (
            f"optimizer: {make.__name__}() got {kind} before lr=: parameters in the learning rate's place "
            "are torch's Optimizer(params, lr) order; torchlean's optimizers take no params: build the "
            f"record, then create the optimizer with them, optim.{make.__name__}(lr).create(model.parameters)"
        )
    assert make(lr=1e-3).lr == 1e-3 and make(1e-3) == make(lr=1e-3)
    assert make.__doc__ and make.__doc__ == make.__wrapped__.__doc__  # help() shows the factory's own
    with pytest.raises(TypeError) as twice:  # not parameters: a TypeError, as Python's (review196 F1)
        make(0.1, lr=1e-3)
    assert isinstance(twice.value, optim.OptimizerError)
    assert str(twice.value) == f"optimizer: {make.__name__}() got lr both by position and by keyword"


def test_more_torch_forms_of_params_first_get_the_hint_and_a_0d_rate_is_told_to_be_a_number():
    """review91 F8: an iterator (torch's model.parameters() kind), torch's parameter-group dicts and
    an empty list before lr= were Python's "multiple values for argument 'lr'"; a 0-d array or
    Tensor rate (torch takes a Tensor lr) was told that parameters were in its place."""
    model = nn.build(nn.sequential(nn.linear(4, 3), nn.tanh(), nn.linear(3, 2)), seed=0)
    groups = [{"params": model.parameters, "lr": 0.1}]
    for first, shown in ((iter(model.parameters), "an iterator"), ([], "a list of 0 arrays"),
                         (groups, "torch's parameter groups (dicts with 'params'; optim.group(pattern, ...) "
                                  "gives settings)")):
        with pytest.raises(optim.OptimizerError) as caught:
            optim.adam(first, lr=0.1)
        assert str(caught.value).startswith(f"optimizer: adam() got {shown} before lr=: parameters in the")
    with pytest.raises(optim.OptimizerError, match=r"got an iterator: parameters in the learning rate's"):
        optim.sgd(iter(model.parameters))
    for rate in (np.array(0.01), tl.tensor(0.01)):
        with pytest.raises(optim.OptimizerError) as caught:
            optim.adam(rate)
        assert str(caught.value).endswith(": pass it as a number, float(lr)")
        assert "parameters in the learning rate's place" not in str(caught.value)
        assert optim.adam(float(rate)).lr == pytest.approx(0.01)


def test_torchs_params_first_with_other_keywords_and_torch_tensors_get_the_hint():
    """review92 F5, F6: (params, 0.1, momentum=0.9) was Python's "multiple values"; (params, 1e-3,
    betas=...) said "pass betas or beta1/beta2, not both"; params= and torch tensors got plain
    TypeErrors; a 0-d torch.Tensor rate got no "number" hint. The records' own forms still build."""
    model = nn.build(nn.sequential(nn.linear(4, 3), nn.tanh(), nn.linear(3, 2)), seed=0)
    params = model.parameters
    cases = [
        (lambda: optim.sgd(params, 0.1, momentum=0.9), "sgd() got a list of 4 arrays in the learning rate's"),
        (lambda: optim.adagrad(params, 0.01, lr_decay=0.1), "adagrad() got a list of 4 arrays in the"),
        (lambda: optim.adam(params, 1e-3, betas=(0.9, 0.99)), "adam() got a list of 4 arrays in the"),
        (lambda: optim.rmsprop(params, 0.01, alpha=0.9), "rmsprop() got a list of 4 arrays in the"),
        (lambda: optim.adam(params=params, lr=1e-3), "adam() got a list of 4 arrays as params="),
        (lambda: optim.adam([torch.zeros(2, requires_grad=True)], lr=0.1), "adam() got a list of 1 torch"),
    ]
    for call, start in cases:
        with pytest.raises(optim.OptimizerError) as caught:
            call()
        assert str(caught.value).startswith(f"optimizer: {start}"), str(caught.value)
        assert str(caught.value).endswith(".create(model.parameters)")
    with pytest.raises(optim.OptimizerError, match=r"got tensor\(0.0100\): pass it as a number, float\(lr\)"):
        optim.adam(torch.tensor(0.01))
    assert optim.sgd(0.1, momentum=0.9).momentum == 0.9
    assert optim.adam(1e-3, betas=(0.9, 0.99)).beta2 == 0.99
    assert optim.rmsprop(0.01, alpha=0.9).decay == 0.9  # torch's alpha


@pytest.mark.parametrize(("record", "builder"), [
    (optim.SGD, "sgd"), (optim.Adam, "adam"), (optim.AdamW, "adamw"), (optim.RMSprop, "rmsprop"),
    (optim.Adagrad, "adagrad"),
])
def test_the_record_classes_refuse_torchs_forms_as_the_factories_do(record, builder):
    """review196 F1: ``optim.Adam(model.parameters, lr=1e-3)``, torch's commonest line written with
    torch's class name, was Python's bare "got multiple values for argument 'lr'"; it gets the
    factories' hint, naming the factory, and the record still builds from keywords."""
    model = nn.build(nn.sequential(nn.linear(4, 3), nn.tanh(), nn.linear(3, 2)), seed=0)
    with pytest.raises(optim.OptimizerError) as caught:
        record(model.parameters, lr=1e-3)
    assert str(caught.value) == (
        f"optimizer: optim.{record.__name__}() got a list of 4 arrays before lr=: parameters in the learning "
        "rate's place are torch's Optimizer(params, lr) order; torchlean's optimizers take no params: build "
        f"the record, then create the optimizer with them, optim.{builder}(lr).create(model.parameters)"
    )
    assert isinstance(caught.value, TypeError)
    with pytest.raises(TypeError) as unknown:
        record(lr=0.1, foo=1)
    accepted = ", ".join(f.name for f in dataclasses.fields(record))
    assert str(unknown.value) == (f"optimizer: optim.{record.__name__}() got an unexpected keyword argument "
                                  f"'foo' (accepted: {accepted})")
    assert record(lr=0.5).lr == 0.5 and dataclasses.replace(record(lr=0.5), lr=0.25).lr == 0.25


def test_torchs_betas_and_alpha_on_the_record_classes_name_the_fields_and_the_factory():
    """review196 F1: ``optim.Adam(betas=...)`` and ``optim.RMSprop(alpha=...)`` were bare
    TypeErrors; the message names the fields they are and the factory that takes torch's spelling."""
    for record, builder in ((optim.Adam, "adam"), (optim.AdamW, "adamw")):
        with pytest.raises(optim.OptimizerError) as caught:
            record(lr=3e-4, betas=(0.9, 0.95))
        assert str(caught.value) == (
            f"optimizer: optim.{record.__name__}() got an unexpected keyword argument 'betas' (accepted: lr, "
            "beta1, beta2, eps, weight_decay, amsgrad): torch's betas= is beta1= and beta2= here; "
            f"optim.{builder}(betas=(b1, b2)) takes torch's spelling"
        )
        assert record(lr=3e-4, beta1=0.9, beta2=0.95) == getattr(optim, builder)(3e-4, betas=(0.9, 0.95))
    with pytest.raises(optim.OptimizerError) as caught:
        optim.RMSprop(lr=0.01, alpha=0.9)
    assert str(caught.value) == (
        "optimizer: optim.RMSprop() got an unexpected keyword argument 'alpha' (accepted: lr, decay, eps, "
        "weight_decay, momentum, centered): torch's alpha= is decay= here; optim.rmsprop(alpha=...) takes "
        "torch's spelling"
    )
    with pytest.raises(optim.OptimizerError,
                       match=r"'betas' \(accepted: lr, momentum, dampening, weight_decay, nesterov\)$"):
        optim.SGD(betas=(0.9, 0.99))  # no betas hint where there are no betas


def test_torchs_positional_sgd_arguments_name_the_keywords():
    """review196 F1: ``optim.sgd(0.1, 0.9, 0.0, 5e-4, True)`` (torch's SGD order after params) was
    Python's "takes from 0 to 2 positional arguments"; the class takes them all by position."""
    with pytest.raises(TypeError) as caught:
        optim.sgd(0.1, 0.9, 0.0, 5e-4, True)
    assert str(caught.value) == ("optimizer: sgd() takes at most 2 arguments by position (lr, momentum), "
                                 "got 5; pass dampening=, weight_decay=, nesterov= by keyword")
    assert optim.SGD(0.1, 0.9, 0.0, 5e-4, True) == optim.sgd(0.1, 0.9, weight_decay=5e-4, nesterov=True)
