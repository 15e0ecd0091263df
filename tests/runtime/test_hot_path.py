"""The eager hot path and the typed-graph schedule (issue 8): bind once, check on every call.

Oracles: counting calls of the real gates (``bind``, ``accept``), the sealed-object validator's
refusal of a kernel mutated after binding, and values computed by the eager path and by hand.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import torchlean as tl
from torchlean import nn
from torchlean.autograd import dispatch
from torchlean.autograd import session as session_module
from torchlean.autograd.tape import AutogradError
from torchlean.autograd.typed_graph import GraphProgram, StepKind
from torchlean.backend import profiles
from torchlean.backend.errors import SessionError
from torchlean.backend.sealed import UnmintedError
from torchlean.backend.vocabulary import BackendOp
from torchlean.nn.lowering import GraphOps, lower_model
from torchlean.tensor import DeviceError, TensorTypeError

# The one refusal of an unminted value, with or without python -O: ``<where>: <Class> was not minted
# by its gate (<gates>) or was changed since`` (review48 F2).
UNMINTED = r"^[\w.]+: \w+ was not minted by its gate \(torchlean\.backend\.[\w., ]+\) or was changed since$"


def _count_binds(monkeypatch: pytest.MonkeyPatch) -> list[BackendOp]:
    seen: list[BackendOp] = []
    original = dispatch.bind

    def spy(accepted: Any, handler: Any) -> Any:
        seen.append(handler.op)
        return original(accepted, handler)

    monkeypatch.setattr(dispatch, "bind", spy)
    return seen


def test_a_session_binds_each_selected_kernel_once_per_grad_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    binds = _count_binds(monkeypatch)
    x = tl.tensor([1.0, -2.0, 3.0], requires_grad=True)
    with tl.session():
        for _ in range(5):
            y = tl.relu(x)
        with tl.no_grad():
            for _ in range(3):
                tl.relu(x)
    assert binds == [BackendOp.RELU, BackendOp.RELU]  # one per gradient mode, not one per call
    np.testing.assert_array_equal(y.numpy(), [1.0, 0.0, 3.0])


def test_the_cached_kernel_is_still_validated_on_every_call() -> None:
    x = tl.tensor([1.0, -1.0])
    with tl.session() as s:
        tl.relu(x)
        bound = s.resolve(BackendOp.RELU)
        other = s.resolve(BackendOp.SIGMOID)
        # rebinding a field of the minted executable after binding breaks its fingerprint
        object.__setattr__(bound.executable, "handler", other.executable.handler)
        with pytest.raises(UnmintedError, match=UNMINTED):
            tl.relu(x)


def test_the_fast_path_keeps_operand_and_device_errors() -> None:
    with tl.session():
        tl.relu(tl.tensor([1.0]))
        with pytest.raises(TensorTypeError, match=r"^relu: input 0 must be a torchlean Tensor; got ndarray"):
            tl.relu(np.ones(2))  # type: ignore[arg-type]
        import torch

        expected = "for device `cpu`, but its inputs are on cpu \\(torch storage\\)"
        with pytest.raises(DeviceError, match=expected):
            dispatch.execute_bound(
                session_module.current_session().resolve(BackendOp.RELU),
                [tl.Tensor._make(torch.ones(2), False)],
                {},
            )


def _program(profile: str) -> tuple[GraphProgram, Any, list[tl.Tensor]]:
    model = nn.build(nn.sequential(nn.linear(3, 4), nn.relu(), nn.linear(4, 2)), seed=0, dtype=np.float64)
    lowered = lower_model(model, (5, 3))
    result = profiles.get(profile).accept_graph(lowered.built.graph)
    assert result.plan is not None
    program = GraphProgram(
        lowered.built.graph, lowered.built.payloads, result.plan, lowered.param_nodes, lowered.payload_params
    )
    params = [tl.tensor(p, requires_grad=True) for p in model.parameters]
    return program, lowered, params


def test_the_schedule_is_bound_once_per_plan_and_matches_eager(monkeypatch: pytest.MonkeyPatch) -> None:
    binds = _count_binds(monkeypatch)
    program, lowered, params = _program("checked_cpu")
    kernel_steps = [s for s in program.steps if s.kind is StepKind.KERNEL]
    assert len(binds) == len({id(k) for k in program.plan.kernels})  # one bind per distinct kernel
    assert len(program.steps) == len(lowered.built.graph.nodes)
    assert len(kernel_steps) == len(program.plan.node_ids)
    x = np.random.default_rng(1).standard_normal((5, 3))
    before = len(binds)
    for _ in range(3):
        out = program.run([tl.tensor(x)], params, lowered.output)
    assert len(binds) == before  # running does not bind again
    w1, b1, w2, b2 = (p.numpy() for p in params)
    expected = np.maximum(x @ w1.T + b1, 0.0) @ w2.T + b2  # float64 oracle, any summation order
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-12)
    tl.reduce_sum(out).backward()
    assert all(p.grad is not None for p in params)


def test_the_schedule_refuses_a_wrong_number_of_inputs() -> None:
    program, lowered, params = _program("fast_cpu")
    with pytest.raises(SessionError, match="expected 1 inputs, got 0"):
        program.run([], params, lowered.output)


def test_the_schedule_refuses_inputs_of_another_shape_than_declared() -> None:
    """A (2, 3) batch fed to a graph declared for (5, 3) used to run and return a (2, 2) result
    where the graph says (5, 2); each input is now compared with its node's declared shape."""
    program, lowered, params = _program("checked_cpu")
    assert lowered.built.graph.nodes[lowered.output].out_shape == (5, 2)
    with tl.session("checked_cpu"):
        for shape in [(2, 3), (7, 3), (5, 4), (15,)]:
            expected = (
                rf"^typed graph: input 0 \(node 0\) has shape {re.escape(str(shape))}, "
                r"but the graph declares \(5, 3\)"
            )
            with pytest.raises(SessionError, match=expected):
                program.run([tl.tensor(np.ones(shape))], params, lowered.output)
            with pytest.raises(SessionError, match=expected):
                program.run_and_backward([tl.tensor(np.ones(shape))], params, lowered.output)
        assert program.run([tl.tensor(np.ones((5, 3)))], params, lowered.output).shape == (5, 2)


def test_the_schedule_refuses_missing_or_misshapen_parameters() -> None:
    program, lowered, params = _program("checked_cpu")
    x = tl.tensor(np.ones((5, 3)))
    with tl.session("checked_cpu"):
        for count in (0, 2, 3):
            with pytest.raises(
                SessionError,
                match=rf"^typed graph: expected at least 4 parameters \(the graph reads model parameters "
                rf"0\.\.3\), got {count}$",
            ):
                program.run([x], params[:count], lowered.output)
        swapped = [tl.tensor(np.ones((3, 4))), *params[1:]]
        with pytest.raises(
            SessionError, match=r"^typed graph: parameter 0 has shape \(3, 4\), but the graph was lowered "
            r"with shape \(4, 3\)$"
        ):
            program.run([x], swapped, lowered.output)
    # a fused program's linear weights are payload parameters: checked the same way
    fused, output, model = _weighted_sum_program(nn.relu(), seed=0, weight=1.0)
    bad_bias = [tl.tensor(p) for p in model.parameters]
    bad_bias[1] = tl.tensor(np.ones(1))
    with tl.session("checked_cpu"), pytest.raises(SessionError, match=r"parameter 1 has shape \(1,\)"):
        fused.run([tl.tensor(np.ones((5, 3)))], bad_bias, output)


@pytest.mark.parametrize("output", [999, 14, -1, True, 1.5, "3"])
def test_the_schedule_refuses_an_output_that_is_not_a_node(output: Any) -> None:
    program, _, params = _program("checked_cpu")
    assert len(program.steps) == 14
    x = tl.tensor(np.ones((5, 3)))
    expected = rf"^typed graph: output must be a node id in 0\.\.13 \(an int\), got {re.escape(repr(output))}"
    with tl.session("checked_cpu"):
        with pytest.raises(SessionError, match=expected):
            program.run([x], params, output)
        with pytest.raises(SessionError, match=expected):
            program.run_and_backward([x], params, output)
        assert program.run([x], params, np.int64(13)).shape == (5, 2)


def _weighted_sum_program(activation: Any, seed: int, weight: float) -> tuple[GraphProgram, int, Any]:
    """A fused typed-graph program of ``sum(weight * mlp(x))`` for x ``(5, 3)``, mlp 3-4-2 with
    ``activation``; returns the program, its output node and the model."""
    model = nn.build(nn.sequential(nn.linear(3, 4), activation, nn.linear(4, 2)), seed=seed, dtype=np.float64)
    ops = GraphOps(fuse_linear=True)
    x_ref = ops.input((5, 3))
    prediction = model.layer.forward(ops, list(ops.params(model)), x_ref, training=True)
    lowered = ops.lowered(ops.sum(ops.mul(prediction, ops.constant(np.full((5, 2), weight)))))
    plan = profiles.get("checked_cpu").accept_graph(lowered.built.graph).plan
    assert plan is not None
    program = GraphProgram(
        lowered.built.graph, lowered.built.payloads, plan, lowered.param_nodes, lowered.payload_params
    )
    return program, lowered.output, model


def test_backward_in_the_precomputed_order_equals_the_tape_search() -> None:
    """``run_and_backward`` (reverse schedule order, no graph search) accumulates bit for bit the
    gradients that ``run(...)`` followed by ``Tensor.backward`` (DFS over the tape) gives."""
    program, output, model = _weighted_sum_program(nn.tanh(), seed=2, weight=0.5)
    x = tl.tensor(np.random.default_rng(3).standard_normal((5, 3)))
    searched = [tl.tensor(p, requires_grad=True) for p in model.parameters]
    program.run([x], searched, output).backward()
    ordered = [tl.tensor(p, requires_grad=True) for p in model.parameters]
    loss = program.run_and_backward([x], ordered, output)
    assert loss.shape == ()
    for a, b in zip(searched, ordered, strict=True):
        assert a.grad is not None and b.grad is not None
        assert a.grad.numpy().tobytes() == b.grad.numpy().tobytes()
    # the oracle: d/dW2 of sum(0.5 * (tanh(x W1^T + b1) W2^T + b2)) = 0.5 * sum over rows of h
    w1, b1 = model.parameters[0], model.parameters[1]
    h = np.tanh(x.numpy() @ w1.T + b1)
    np.testing.assert_allclose(ordered[2].grad.numpy(), np.tile(0.5 * h.sum(0), (2, 1)), rtol=1e-12)


def test_run_and_backward_refuses_a_non_scalar_output() -> None:
    program, lowered, params = _program("checked_cpu")
    with pytest.raises(AutogradError, match=r"is not a scalar \(shape \(5, "):
        program.run_and_backward([tl.tensor(np.ones((5, 3)))], params, lowered.output)


def test_run_and_backward_reaches_through_the_history_of_a_fed_input() -> None:
    program, lowered, params = _program("checked_cpu")
    a = tl.tensor(np.linspace(-1.0, 1.0, 15).reshape(5, 3), requires_grad=True)
    b = tl.tensor(a.numpy(), requires_grad=True)
    weights = tl.tensor(np.full((5, 2), 0.25))
    # a scalar loss on top of the program's output: build it as a graph-free composition
    out_searched = program.run([tl.scale(a, 2.0)], params, lowered.output)
    tl.reduce_sum(tl.mul(out_searched, weights)).backward()
    assert a.grad is not None
    # the same loss, the input computed from b, through run_and_backward on a scalar-output program
    scalar, output, model = _weighted_sum_program(nn.relu(), seed=0, weight=0.25)
    fresh = [tl.tensor(p, requires_grad=True) for p in model.parameters]
    scalar.run_and_backward([tl.scale(b, 2.0)], fresh, output)
    assert b.grad is not None  # reached through scale, which the schedule does not contain
    np.testing.assert_array_equal(b.grad.numpy(), a.grad.numpy())


def test_a_cached_kernel_of_another_op_is_refused() -> None:
    x = tl.tensor([1.0, -1.0])
    with tl.session() as s:
        tl.relu(x)
        s._resolved[(BackendOp.RELU, True)] = s.resolve(BackendOp.EXP)
        with pytest.raises(SessionError, match=r"kernel for `relu` is bound to capsule `reference\.exp`"):
            tl.relu(x)


def test_one_session_entered_from_two_threads() -> None:
    """The session's context tokens are per thread, so two threads may enter the same session."""
    import threading

    s = tl.session("checked_cpu")
    errors: list[BaseException] = []
    results: list[float] = []

    def work() -> None:
        try:
            for _ in range(300):
                with s:
                    results.append(float(tl.reduce_sum(tl.relu(tl.tensor([1.0, -2.0, 3.0]))).numpy()))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert results == [4.0] * 600
