"""``Model.tensors``/``forward``/``load_tensors``: a training loop of one's own around a built model.

Oracles: torch in float64 running the same loop on a module holding the same weights (its
gradients after each backward, its running statistics after each forward, its weights after each
step), and hand-made refusals.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torchlean as tl
from torchlean import nn, optim
from torchlean.nn import ShapeError, StateError
from torchlean.nn.layers import Layer, ParamSpec
from torchlean.trainer import RunConfig, Trainer


def _layer() -> Layer:
    return nn.sequential(nn.linear(3, 5), nn.batch_norm1d(5, momentum=0.3), nn.relu(), nn.linear(5, 4))


def _torch_module(model: nn.Model) -> torch.nn.Module:
    module = torch.nn.Sequential(
        torch.nn.Linear(3, 5), torch.nn.BatchNorm1d(5, momentum=0.3), torch.nn.ReLU(), torch.nn.Linear(5, 4)
    ).double()
    state = {name: torch.tensor(value) for name, value in model.state().items()}
    missing, unexpected = module.load_state_dict(state, strict=False)
    assert unexpected == [] and set(missing) <= {"1.num_batches_tracked"}
    return module


def _close(model_values: dict[str, np.ndarray], theirs: dict[str, torch.Tensor], what: str) -> None:
    for name, value in model_values.items():
        np.testing.assert_allclose(
            value, theirs[name].detach().numpy(), rtol=1e-12, atol=1e-14, err_msg=f"{what}: {name}"
        )


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
def test_own_loop_matches_torch_float64(profile):
    """Three steps of forward, cross-entropy, backward and SGD with momentum: torch's gradients
    after each backward, its running statistics after each forward (torch updates them there)
    and its weights after load_tensors, within 1e-12."""
    model = nn.build(_layer(), input_shape=[3], seed=5, dtype="float64")
    initial = model.state()
    module = _torch_module(model)
    sgd = torch.optim.SGD(module.parameters(), lr=0.2, momentum=0.9)
    params = model.tensors()
    names = [spec.name for spec in model.specs]
    ours = optim.sgd(0.2, 0.9).create([p.numpy() for p in params])
    rng = np.random.default_rng(2)
    with tl.session(profile=profile):
        for step in range(3):
            x = rng.standard_normal((6, 3)) * (step + 1) + step
            labels = rng.integers(0, 4, size=6)
            loss = tl.cross_entropy(model.forward(tl.tensor(x), params, training=True), labels)
            loss.backward()
            sgd.zero_grad()
            expected = torch.nn.functional.cross_entropy(
                module.train()(torch.tensor(x)), torch.tensor(labels)
            )
            expected.backward()
            assert float(loss.numpy()) == pytest.approx(expected.item(), rel=1e-12, abs=0)
            buffers = {
                n: p.numpy() for n, p, s in zip(names, params, model.specs, strict=True) if not s.trainable
            }
            _close(buffers, module.state_dict(), f"running statistics after forward {step}")
            grads = {n: p.grad.numpy() for n, p in zip(names, params, strict=True) if p.grad is not None}
            assert sorted(grads) == sorted(n for n, _ in module.named_parameters())
            _close(grads, {n: p.grad for n, p in module.named_parameters()}, f"gradients of step {step}")
            sgd.step()
            new = ours.step(
                [p.numpy() for p in params], [None if p.grad is None else p.grad.numpy() for p in params]
            )
            with tl.no_grad():
                for p, value in zip(params, new, strict=True):
                    p.copy_(value)
                    p.grad = None
    for name, value in model.state().items():  # the model changes only at load_tensors
        np.testing.assert_array_equal(value, initial[name], err_msg=name)
    model.load_tensors(params)
    _close(model.state(), module.state_dict(), "weights after load_tensors")
    x = rng.standard_normal((4, 3))
    with torch.no_grad():
        expected_eval = module.eval()(torch.tensor(x)).numpy()
    with tl.session(profile=profile):
        out = model.forward(tl.tensor(x))
    assert not out.requires_grad
    np.testing.assert_allclose(out.numpy(), expected_eval, rtol=1e-12, atol=1e-14)


def test_own_loop_equals_trainer_fit():
    """The README's loop (forward, cross_entropy, backward, optimizer, copy back) trains exactly as
    Trainer.fit without shuffling does, in float32 with Adam."""
    trainer = Trainer(
        _layer(), objective="cross-entropy", config=RunConfig(optimizer=optim.adam(lr=0.05)), seed=7
    )
    model = nn.build(_layer(), seed=7)
    rng = np.random.default_rng(0)
    x, labels = rng.standard_normal((10, 3)), rng.integers(0, 4, size=10)
    trainer.fit(x, labels, epochs=2, batch_size=5, shuffle=False)
    params = model.tensors()
    adam = optim.adam(lr=0.05).create([p.numpy() for p in params])
    with tl.session():
        for _ in range(2):
            for start in (0, 5):
                xb = tl.tensor(x[start : start + 5], dtype="float32")
                tl.cross_entropy(
                    model.forward(xb, params, training=True), labels[start : start + 5]
                ).backward()
                new = adam.step(
                    [p.numpy() for p in params], [None if p.grad is None else p.grad.numpy() for p in params]
                )
                with tl.no_grad():
                    for p, value in zip(params, new, strict=True):
                        p.copy_(value)
                        p.grad = None
    model.load_tensors(params)
    for name, value in trainer.model.state().items():
        np.testing.assert_array_equal(model.state()[name], value, err_msg=name)


def test_model_called_twice_accumulates_as_torch():
    """A model applied to two batches in one loss (a siamese pair): gradients add up and the running
    statistics take both updates in call order, as a torch module called twice."""
    model = nn.build(_layer(), input_shape=[3], seed=1, dtype="float64")
    module = _torch_module(model)
    params = model.tensors()
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((4, 3)), rng.standard_normal((5, 3)) + 2.0
    with tl.session():
        loss = tl.reduce_sum(model.forward(tl.tensor(a), params, training=True)) + tl.reduce_mean(
            model.forward(tl.tensor(b), params, training=True)
        )
        loss.backward()
    module.train()
    expected = module(torch.tensor(a)).sum() + module(torch.tensor(b)).mean()
    expected.backward()
    assert float(loss.numpy()) == pytest.approx(expected.item(), rel=1e-12)
    names = [spec.name for spec in model.specs]
    _close(
        {n: p.numpy() for n, p in zip(names, params, strict=True) if "running" in n},
        module.state_dict(),
        "stats",
    )
    _close(
        {n: p.grad.numpy() for n, p in zip(names, params, strict=True) if p.grad is not None},
        {n: p.grad for n, p in module.named_parameters()},
        "gradients",
    )


def test_forward_without_params_updates_the_models_own_statistics():
    """params=None, training=True under no_grad recalibrates the running statistics in the model
    itself (as torch's module.train()(x) under no_grad); the weights stay, no tape is recorded."""
    model = nn.build(_layer(), input_shape=[3], seed=3, dtype="float64")
    module = _torch_module(model)
    weights = model.state()
    x = np.random.default_rng(1).standard_normal((8, 3)) * 3.0 + 1.0
    with tl.no_grad():
        out = model.forward(tl.tensor(x), training=True)
    assert not out.requires_grad
    with torch.no_grad():
        expected = module.train()(torch.tensor(x))
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-12, atol=1e-14)
    _close(model.state(), module.state_dict(), "after recalibration")
    for name in ("0.weight", "0.bias", "1.weight", "1.bias", "3.weight", "3.bias"):
        np.testing.assert_array_equal(model.state()[name], weights[name])
    assert not np.array_equal(model.state()["1.running_mean"], weights["1.running_mean"])


def test_eval_forward_equals_predict_and_ignores_dropout():
    layer = nn.sequential(
        nn.conv2d(1, 2, 3, padding=1), nn.relu(), nn.dropout(0.5), nn.flatten(), nn.linear(32, 3)
    )
    trainer = Trainer(layer, seed=2, input_shape=(1, 4, 4))
    x = np.random.default_rng(0).standard_normal((3, 1, 4, 4)).astype(np.float32)
    out = trainer.model.forward(tl.tensor(x))
    np.testing.assert_array_equal(out.numpy(), trainer.predict(x))
    assert out.shape == (3, 3) and out.dtype == np.float32


def test_tensors_are_independent_leaf_copies():
    model = nn.build(_layer(), input_shape=[3], seed=0)
    params = model.tensors()
    assert [p.requires_grad for p in params] == [s.trainable for s in model.specs]
    assert [p.requires_grad for p in params].count(False) == 2  # running_mean, running_var
    assert all(p.is_leaf and p.dtype == np.float32 and p.device == "cpu" for p in params)
    before = model.state()["0.weight"]
    with tl.no_grad():
        params[0].copy_(np.zeros(params[0].shape))
    np.testing.assert_array_equal(model.state()["0.weight"], before)


def test_zero_and_one_sample_batches():
    model = nn.build(nn.sequential(nn.linear(2, 3), nn.tanh()), seed=0, dtype="float64")
    empty = model.forward(tl.tensor(np.zeros((0, 2))))
    assert empty.shape == (0, 3)
    x = np.array([[0.5, -1.0]])
    weight, bias = model.state()["0.weight"], model.state()["0.bias"]
    np.testing.assert_allclose(model.forward(tl.tensor(x)).numpy(), np.tanh(x @ weight.T + bias), rtol=1e-15)


def test_bad_inputs_are_refused_with_the_accepted_form():
    model = nn.build(_layer(), input_shape=[3], seed=0)
    x = tl.tensor(np.zeros((2, 3)), dtype="float32")
    with pytest.raises(ShapeError, match=r"x must be a torchlean Tensor .*got ndarray"):
        model.forward(np.zeros((2, 3), dtype=np.float32))  # type: ignore[arg-type]
    with pytest.raises(ShapeError, match=r"x has shape \[2, 4\] and dtype float32, expected shape \(b, 3\)"):
        model.forward(tl.tensor(np.zeros((2, 4)), dtype="float32"))
    with pytest.raises(ShapeError, match=r"x has shape \[3\]"):  # one unbatched sample
        model.forward(tl.tensor(np.zeros(3), dtype="float32"))
    with pytest.raises(ShapeError, match=r"dtype float64, expected shape .* and dtype float32"):
        model.forward(tl.tensor(np.zeros((2, 3))))
    # review214 F5: a type or dtype mistake is also a TypeError (the shape one is not)
    for wrong in (np.zeros((2, 3), dtype=np.float32), tl.tensor(np.zeros((2, 3)))):
        with pytest.raises(TypeError) as caught:
            model.forward(wrong)  # type: ignore[arg-type]
        assert isinstance(caught.value, ShapeError) and type(caught.value) is nn.ModelInputError
    with pytest.raises(ShapeError) as caught:
        model.forward(tl.tensor(np.zeros((2, 4)), dtype="float32"))
    assert not isinstance(caught.value, TypeError)
    for training in (1, "yes"):  # review220 F6: a TypeError too, as a torch user catches it
        with pytest.raises(nn.ModelInputError, match=f"training must be a bool, got {training!r}$"):
            model.forward(x, training=training)  # type: ignore[arg-type]
    assert nn.ArchitectureError is nn.model.ArchitectureError  # review220 F7: exported as its siblings
    params = model.tensors()
    with pytest.raises(StateError, match=r"params must be a sequence of tensors .*got Tensor"):
        model.forward(x, params[0])  # type: ignore[arg-type]
    # review33 F3: running statistics are buffers (torch's word), not parameters
    counted = r"params holds 7 tensors, the model has 8 tensors: 6 parameters and 2 buffers \(0.weight"
    with pytest.raises(StateError, match=counted):
        model.forward(x, params[:7])
    wrong = [*params[:2], tl.tensor(np.zeros(4), dtype="float32"), *params[3:]]
    with pytest.raises(
        StateError, match=r"entry 1.weight has shape \[4\], dtype float32 on cpu; expected shape \[5\]"
    ):
        model.forward(x, wrong)
    wrong = [*params[:2], tl.tensor(np.zeros(5)), *params[3:]]
    with pytest.raises(StateError, match=r"entry 1.weight has .* dtype float64 .* expected .* dtype float32"):
        model.forward(x, wrong)
    with pytest.raises(StateError, match=r"params entry 0.bias is a ndarray, not a torchlean Tensor"):
        model.forward(x, [params[0], np.zeros(5), *params[2:]])  # type: ignore[list-item]
    state = model.state()
    with pytest.raises(StateError, match="load_tensors: params holds 2 tensors"):
        model.load_tensors(params[:2])
    plain = nn.build(nn.sequential(nn.linear(3, 2)), seed=0)
    only_parameters = r"params holds 1 tensors, the model has 2 parameters \(0.weight, 0.bias;"
    with pytest.raises(StateError, match=only_parameters):
        plain.forward(x, plain.tensors()[:1])
    with pytest.raises(StateError, match=r"load_tensors: params entry 3.bias has shape \[3\]"):
        model.load_tensors([*params[:-1], tl.tensor(np.zeros(3), dtype="float32")])
    for name, value in model.state().items():
        np.testing.assert_array_equal(value, state[name])


class _Shifted(Layer):
    """Batch norm whose running statistics are a computed tensor (a broken custom layer)."""

    def describe(self) -> str:
        return "shifted"

    def output_shape(self, input_shape):
        return input_shape

    def param_specs(self):
        return (
            ParamSpec("mean", (2,), "zeros", trainable=False),
            ParamSpec("var", (2,), "ones", trainable=False),
        )

    def forward(self, ops, params, x, *, training):
        mean, var = params
        return ops.batch_norm(
            x, None, None, ops.add(mean, mean), var, training=training, eps=1e-5, momentum=0.1
        )


def test_a_layer_updating_a_computed_tensor_is_refused():
    model = nn.build(_Shifted(), input_shape=[2], seed=0)
    with pytest.raises(StateError, match="a layer updated a computed tensor as a buffer"):
        model.forward(tl.tensor(np.ones((3, 2)), dtype="float32"), model.tensors(), training=True)


def test_step_in_place_equals_step_and_clears_gradients():
    """Optimizer.step_ writes what step returns into the tensors, skips those without a gradient
    (buffers), sets every .grad to None, and with max_grad_norm clips as clip_grad_norm does."""
    model = nn.build(_layer(), input_shape=[3], seed=2, dtype="float64")
    x = np.random.default_rng(0).standard_normal((5, 3))
    runs = []
    for in_place in (True, False):
        params = model.tensors()
        adam = optim.adam(lr=0.1).create(model.parameters)
        norms = []
        for _ in range(2):
            tl.reduce_sum(model(tl.tensor(x), params, training=True)).backward()
            if in_place:
                norms.append(adam.step_(params, max_grad_norm=0.5))
                assert all(p.grad is None for p in params)
                continue
            grads = [None if p.grad is None else p.grad.numpy() for p in params]
            grads, norm = optim.clip_grad_norm(grads, 0.5)
            norms.append(norm)
            new = adam.step([p.numpy() for p in params], grads)
            with tl.no_grad():
                for p, value, grad in zip(params, new, grads, strict=True):
                    if grad is not None:
                        p.copy_(value)
                    p.grad = None
        runs.append(([p.numpy().copy() for p in params], norms))
    (mine, my_norms), (theirs, their_norms) = runs
    assert my_norms == their_norms and all(n is not None and n > 0.5 for n in my_norms)
    for a, b in zip(mine, theirs, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(mine[0], model.parameters[0])
    assert optim.sgd(0.1).create(model.parameters).step_(model.tensors()) is None  # no grads: nothing moves


def test_step_in_place_refuses_arrays():
    model = nn.build(nn.linear(2, 1), seed=0)
    sgd = optim.sgd(0.1).create(model.parameters)
    with pytest.raises(
        optim.OptimizerError, match=r"step_ takes torchlean Tensors; parameter 0 is a numpy.ndarray"
    ):
        sgd.step_(model.parameters)  # type: ignore[arg-type]
    with pytest.raises(optim.OptimizerError, match="expected 2 parameters, got 1"):
        sgd.step_(model.tensors()[:1])


def test_dropout_loop_equals_trainer_with_the_trainers_session_seed():
    from torchlean.trainer import session_seed

    layer = nn.sequential(nn.linear(3, 8), nn.relu(), nn.dropout(0.5), nn.linear(8, 2))
    trainer = Trainer(layer, config=RunConfig(optimizer=optim.sgd(0.1), dtype="float64"), seed=9)
    model = nn.build(layer, input_shape=[3], seed=9, dtype="float64")
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((8, 3)), rng.standard_normal((8, 2))
    trainer.fit(x, y, epochs=2, batch_size=4, shuffle=False)
    params = model.tensors()
    sgd = optim.sgd(0.1).create(model.parameters)
    with tl.session(seed=session_seed(9)):
        for _ in range(2):
            for start in (0, 4):
                out = model(tl.tensor(x[start : start + 4]), params, training=True)
                tl.mse_loss(out, tl.tensor(y[start : start + 4])).backward()
                sgd.step_(params)
    model.load_tensors(params)
    for name, value in trainer.model.state().items():
        np.testing.assert_array_equal(model.state()[name], value, err_msg=name)


def test_call_is_forward():
    model = nn.build(_layer(), input_shape=[3], seed=0, dtype="float64")
    x = tl.tensor(np.random.default_rng(0).standard_normal((4, 3)))
    np.testing.assert_array_equal(model(x).numpy(), model.forward(x).numpy())
    params = model.tensors()
    out = model(x, params, training=True)
    assert out.requires_grad
    mean = [spec.name for spec in model.specs].index("1.running_mean")
    assert not np.array_equal(params[mean].numpy(), model.parameters[mean])  # updated in params only


def test_buffers_that_require_grad_are_refused_in_both_modes():
    model = nn.build(_layer(), input_shape=[3], seed=0, dtype="float64")
    params = [tl.tensor(value, requires_grad=True) for value in model.parameters]
    x = tl.tensor(np.zeros((2, 3)))
    for training in (False, True):
        with pytest.raises(
            StateError, match=r"params entry 1.running_mean is a buffer and must not require grad"
        ):
            model(x, params, training=training)


def test_torch_tensors_and_strings_are_named_in_refusals():
    model = nn.build(nn.linear(3, 2), seed=0)
    with pytest.raises(ShapeError, match=r"x must be a torchlean Tensor .*got torch.Tensor"):
        model(torch.ones(2, 3))  # type: ignore[arg-type]
    with pytest.raises(StateError, match=r"params entry weight is a torch.Tensor, not a torchlean Tensor"):
        model(tl.tensor(np.ones((2, 3)), dtype="float32"), [torch.ones(2, 3), torch.ones(2)])  # type: ignore[list-item]
    for text in ("ab", b"ab"):
        with pytest.raises(StateError, match=r"params must be a sequence of tensors .*got (str|bytes)"):
            model(tl.tensor(np.ones((2, 3)), dtype="float32"), text)  # type: ignore[arg-type]
        with pytest.raises(StateError, match="load_tensors: params must be a sequence"):
            model.load_tensors(text)  # type: ignore[arg-type]


def test_eval_then_train_in_one_graph_is_refused_at_backward_and_no_grad_avoids_it():
    """The training call updates the buffers the evaluation call saved: backward refuses (torch
    would return a wrong gradient); under no_grad the evaluation call saves nothing."""
    from torchlean.autograd.tape import AutogradError

    model = nn.build(_layer(), input_shape=[3], seed=0, dtype="float64")
    rng = np.random.default_rng(0)
    a, b = tl.tensor(rng.standard_normal((4, 3))), tl.tensor(rng.standard_normal((4, 3)))
    params = model.tensors()
    evaluated = model(a, params)
    trained = model(b, params, training=True)
    with pytest.raises(AutogradError, match="modified in place"):
        (tl.reduce_sum(evaluated) + tl.reduce_sum(trained)).backward()
    params = model.tensors()
    with tl.no_grad():
        target = model(a, params)
    loss = tl.reduce_sum(model(b, params, training=True)) + tl.reduce_sum(target)
    loss.backward()
    assert params[0].grad is not None


def test_tied_weights_are_one_parameter_when_step_clips():
    """One linear applied twice by passing its tensors at both positions: the gradient counts once
    in the clipping norm and the update equals torch's shared module, clipped, with Adam."""
    model = nn.build(nn.sequential(nn.linear(3, 3), nn.tanh(), nn.linear(3, 3)), seed=4, dtype="float64")
    params = model.tensors()
    tied = [params[0], params[1], params[2], params[3]]
    tied[2:] = tied[:2]
    adam = optim.adam(lr=0.1).create(model.parameters)
    shared = torch.nn.Linear(3, 3).double()
    shared.load_state_dict(
        {"weight": torch.tensor(model.parameters[0]), "bias": torch.tensor(model.parameters[1])}
    )
    torch_adam = torch.optim.Adam(shared.parameters(), lr=0.1)
    x = np.random.default_rng(0).standard_normal((4, 3)) * 5.0
    for _ in range(2):
        tl.reduce_sum(model(tl.tensor(x), tied)).backward()
        norm = adam.step_(tied, max_grad_norm=0.5)
        torch_adam.zero_grad()
        shared(torch.tanh(shared(torch.tensor(x)))).sum().backward()
        expected = torch.nn.utils.clip_grad_norm_(shared.parameters(), 0.5)
        torch_adam.step()
        assert norm == pytest.approx(float(expected), rel=1e-12)
        np.testing.assert_allclose(tied[0].numpy(), shared.weight.detach().numpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(tied[1].numpy(), shared.bias.detach().numpy(), rtol=1e-12, atol=1e-14)


def test_step_in_place_refuses_a_single_tensor():
    sgd = optim.sgd(0.1).create([np.zeros((2, 2))])
    with pytest.raises(optim.OptimizerError, match=r"step_ takes a sequence of tensors .*got one Tensor"):
        sgd.step_(tl.tensor(np.zeros((2, 2)), requires_grad=True))  # type: ignore[arg-type]


def test_load_tensors_copies_so_later_updates_do_not_show_through():
    model = nn.build(nn.sequential(nn.linear(2, 2)), seed=0, dtype="float64")
    params = model.tensors()
    model.load_tensors(params)
    before = [p.copy() for p in model.parameters]
    assert all(p.flags.writeable for p in model.parameters)
    with tl.no_grad():
        params[0].copy_(np.full((2, 2), 5.0))
    np.testing.assert_array_equal(model.parameters[0], before[0])


def test_step_in_place_leaves_tensors_without_gradient_untouched():
    """torch's optimizer.step skips parameters without grad: a graph that saved a buffer before
    step_ still runs backward after it (a write would bump the buffer's version)."""
    m = nn.build(nn.sequential(nn.linear(2, 3), nn.batch_norm1d(3)), seed=0, dtype="float64")
    params = m.tensors()
    other = [tl.tensor(p.numpy(), requires_grad=True) if p.requires_grad else p for p in params]
    opt = optim.sgd(0.1).create(m.parameters)
    x = tl.tensor(np.random.default_rng(0).standard_normal((4, 2)))
    first = tl.reduce_sum(m(x, other))  # eval: saves the shared running statistics
    out = m(x, params)
    tl.reduce_sum(out * out).backward()
    opt.step_(params)
    first.backward()
    assert other[0].grad is not None


def test_the_readme_loop_with_clipping_equals_trainer_fit():
    """step_(params, max_grad_norm=) trains exactly as Trainer.fit with RunConfig(max_grad_norm=)
    and the same optimizer, without shuffling (every step clipped here)."""
    config = RunConfig(optimizer=optim.sgd(0.1, 0.9), max_grad_norm=0.05)
    trainer = Trainer(_layer(), objective="cross-entropy", config=config, seed=5)
    model = nn.build(_layer(), seed=5)
    rng = np.random.default_rng(8)
    x, labels = rng.standard_normal((12, 3)).astype(np.float32), rng.integers(0, 4, size=12)
    trainer.fit(x, labels, epochs=2, batch_size=4, shuffle=False)
    params = model.tensors()
    sgd = optim.sgd(0.1, 0.9).create(model.parameters)
    norms = []
    with tl.session():
        for _ in range(2):
            for start in (0, 4, 8):
                out = model(tl.tensor(x[start : start + 4]), params, training=True)
                tl.cross_entropy(out, labels[start : start + 4]).backward()
                norms.append(sgd.step_(params, max_grad_norm=0.05))
    model.load_tensors(params)
    assert norms[-1] == trainer.grad_norm and all(n is not None and n > 0.05 for n in norms)
    for name, value in trainer.model.state().items():
        np.testing.assert_array_equal(model.state()[name], value, err_msg=name)
