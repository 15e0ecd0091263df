"""``Tensor.produced_by``: the accepted kernel whose forward computed a tensor's values.

Oracles: the session's own audit (``session.selected``, one accepted kernel per op, each the one
that ran), the typed-graph program's node kernels (``node_kernels`` of its accepted plan), and the
storage rules of in-place writes (a write by anything but a kernel result makes the answer
``None``, through the tensor or through a view sharing its storage).
"""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import torchlean as tl
from torchlean import nn
from torchlean.autograd.grad_mode import set_grad_enabled
from torchlean.autograd.session import Session
from torchlean.autograd.typed_graph import GraphProgram, node_kernels
from torchlean.backend import profiles
from torchlean.backend.acceptance import AcceptedKernel
from torchlean.backend.report import audit_line
from torchlean.nn.lowering import lower_model


def _selected(session: Session, op: str) -> AcceptedKernel:
    (kernel,) = [k for k in session.selected if k.op.label == op]
    return kernel


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu", "libtorch_forward_cpu"])
@pytest.mark.parametrize("grad", [True, False])
def test_each_result_names_the_kernel_its_session_selected(profile: str, grad: bool) -> None:
    with tl.session(profile) as session, set_grad_enabled(grad):
        x = tl.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        w = tl.tensor(np.ones((3, 2)))
        results = {"matmul": x @ w}
        results["relu"] = tl.relu(results["matmul"])
        results["softmax"] = tl.softmax(results["relu"], 1)
        results["reduce_sum"] = tl.reduce_sum(results["softmax"])
        for op, result in results.items():
            assert result.produced_by is _selected(session, op)
            assert result.produced_by.op.label == op
        assert (results["reduce_sum"].grad_fn is not None) == grad
    provider = {"checked_cpu": "reference", "fast_cpu": "aten", "libtorch_forward_cpu": "libtorch"}[profile]
    # the one line a user prints: the capsule, its provider, trust, VJP mode and reduction order
    line = audit_line(results["softmax"].produced_by.audit())
    assert line.startswith(f"  softmax: {results['softmax'].produced_by.capsule.name} ")
    assert "reduction=" in line and (provider in line or profile == "libtorch_forward_cpu")


def test_data_gradients_and_parameters_have_no_producer() -> None:
    with tl.session("checked_cpu"):
        x = tl.tensor(np.ones(3), requires_grad=True)
        assert x.produced_by is None
        tl.reduce_sum(tl.exp(x)).backward()
        assert x.grad is not None and x.grad.produced_by is None
        assert tl.tensor(tl.exp(x).detach()).produced_by is None  # a new tensor from data
    model = nn.build(nn.linear(2, 2), seed=0)
    assert all(t.produced_by is None for t in model.tensors())


def test_detach_and_to_keep_it_and_in_place_updates_take_the_ops_kernel() -> None:
    with tl.session("checked_cpu") as session, tl.no_grad():
        y = tl.exp(tl.tensor(np.array([1.0, 2.0])))
        exp = _selected(session, "exp")
        assert y.detach().produced_by is exp
        assert y.to("cpu").produced_by is exp
        y += 1.0
        assert y.produced_by is _selected(session, "add")
        np.testing.assert_allclose(y.numpy(), np.exp([1.0, 2.0]) + 1.0)


@pytest.mark.parametrize(
    "write",
    [
        lambda t: t.copy_(np.zeros(4)),
        lambda t: t.zero_(),
        lambda t: t.__setitem__(0, 5.0),
    ],
    ids=["copy_", "zero_", "setitem"],
)
def test_a_write_from_outside_a_kernel_clears_it_for_every_view(write) -> None:  # type: ignore[no-untyped-def]
    with tl.session("checked_cpu") as session, tl.no_grad():
        y = tl.exp(tl.tensor([0.0, 1.0, 2.0, 3.0]))
        view = y.detach()  # shares the storage and its version counter
        reshaped = tl.reshape(y, (2, 2))
        assert reshaped.produced_by is _selected(session, "reshape")
        shares = np.shares_memory(reshaped.numpy(), y.numpy())
        write(view)
        assert y.produced_by is None and view.produced_by is None
        # a reshape that is a view of y saw the write too; a copy did not
        assert (reshaped.produced_by is None) == shares


def test_typed_graph_steps_record_their_node_kernels() -> None:
    model = nn.build(nn.sequential(nn.linear(3, 4), nn.relu(), nn.linear(4, 2)), seed=0, dtype=np.float64)
    lowered = lower_model(model, (5, 3))
    plan = profiles.get("fast_cpu").accept_graph(lowered.built.graph).plan
    assert plan is not None
    program = GraphProgram(
        lowered.built.graph, lowered.built.payloads, plan, lowered.param_nodes, lowered.payload_params
    )
    with tl.session("fast_cpu"):
        params = [tl.tensor(p) for p in model.parameters]
        out = program.run([tl.tensor(np.ones((5, 3)))], params, lowered.output)
    assert out.produced_by is node_kernels(plan)[lowered.output]
    assert out.produced_by.capsule.name.startswith("aten.")


def test_a_backward_in_another_session_runs_the_recorded_kernels_vjps() -> None:
    """A graph recorded under fast_cpu and differentiated inside a checked_cpu session: the
    gradient comes from the aten VJPs, which the checked_cpu session's audit does not list; the
    tensors name them."""
    with tl.session("fast_cpu"):
        x = tl.tensor(np.array([1.0, 2.0]), requires_grad=True)
        y = tl.exp(x)
        z = tl.reduce_sum(y)
    with tl.session("checked_cpu") as checked:
        z.backward()
    assert list(checked.selected) == []
    assert y.produced_by is not None and y.produced_by.capsule.name == "aten.exp"
    assert y.produced_by.audit().vjp_mode.label == "torchlean-tape"
    assert x.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), np.exp([1.0, 2.0]), rtol=1e-15)


def test_copies_keep_it_and_pickling_drops_it() -> None:
    """copy.copy and copy.deepcopy keep the kernel (same values; the sealed kernel itself is not
    copied); a pickled tensor arrives without one (kernels are minted per process) but with its
    values (review31 F1: the sealed kernel made both fail)."""
    with tl.session("checked_cpu") as session:
        x = tl.tensor(np.arange(3.0), requires_grad=True)
        recorded = tl.exp(x)
        plain = tl.exp(x.detach())
    exp = _selected(session, "exp")
    for clone in (copy.copy(recorded), copy.copy(plain), copy.deepcopy(plain)):
        assert clone.produced_by is exp
        np.testing.assert_array_equal(clone.numpy(), np.exp(np.arange(3.0)))
    # a shallow copy is a leaf, as torch's (review202 F1: it shared the tape node and .grad)
    shallow = copy.copy(recorded)
    assert shallow.grad_fn is None and shallow.requires_grad and shallow.grad is None
    deep = copy.deepcopy(plain)
    assert deep is not plain and not np.shares_memory(deep.numpy(), plain.numpy())
    with tl.no_grad():
        deep.zero_()  # its own storage: the original keeps its values and its kernel
    assert deep.produced_by is None and plain.produced_by is exp
    unpickled = pickle.loads(pickle.dumps(plain))
    assert unpickled.produced_by is None and plain.produced_by is exp
    np.testing.assert_array_equal(unpickled.numpy(), plain.numpy())


def test_a_tensor_with_a_tape_history_is_not_deep_copied_and_pickles_as_a_leaf() -> None:
    """review32 F1, F2: as torch, deepcopy of a tensor a recorded op made is refused (the copy's
    backward would fill copies of the leaves, never x.grad), and pickling keeps its values and
    requires_grad but not its tape (it arrives as a leaf; before, an internal closure error)."""
    with tl.session("checked_cpu"):
        x = tl.tensor(np.arange(3.0), requires_grad=True)
        y = tl.exp(x)
    refusal = r"copy\.deepcopy of a tensor with a tape history \(made by `exp`\)"
    with pytest.raises(tl.AutogradError, match=refusal):
        copy.deepcopy(y)
    with pytest.raises(tl.AutogradError):
        copy.deepcopy([x, y])
    leaf = copy.deepcopy(x)
    assert leaf.requires_grad and leaf.is_leaf and leaf.produced_by is None
    unpickled = pickle.loads(pickle.dumps(y))
    assert unpickled.is_leaf and unpickled.requires_grad and unpickled.grad_fn is None
    np.testing.assert_array_equal(unpickled.numpy(), np.exp(np.arange(3.0)))
    assert y.grad_fn == "exp"  # the original keeps its tape
    tl.reduce_sum(y).backward()
    assert x.grad is not None


def test_numpy_views_cannot_be_made_writable_behind_its_back() -> None:
    """numpy() is a view on a read-only buffer: numpy refuses flags.writeable = True on it, so the
    values cannot change while produced_by still names the kernel (review31 F2)."""
    with tl.session("checked_cpu"):
        y = tl.exp(tl.tensor(np.arange(6.0).reshape(2, 3)))
    for view in (y.numpy(), y.numpy()[:, ::2], y.numpy().T):
        assert not view.flags.writeable
        with pytest.raises(ValueError, match="cannot set WRITEABLE flag"):
            view.flags.writeable = True
    assert np.shares_memory(y.numpy(), y.numpy())  # still a view, no copy
    assert y.produced_by is not None


def test_a_shallow_copy_is_a_leaf_with_its_own_gradient_as_torch_s() -> None:
    """review202 F1: ``copy.copy(x)`` shared ``x.grad``, so a backward through the copy added into
    the original's gradient ([12, 14] where torch gives [2, 4]), and a copy of a made tensor sent
    gradients to its leaves. Oracle: torch's copy.copy, run beside it."""
    import torch

    results = []
    for make in (tl.tensor, torch.tensor):
        x = make(np.array([1.0, 2.0]), requires_grad=True)
        (x * x).sum().backward()
        z = copy.copy(x)
        (z * 10.0).sum().backward()
        leaf = make(np.array([1.0, 2.0]), requires_grad=True)
        made = copy.copy(leaf * 3.0)
        (made * made).sum().backward()
        results.append((x.grad.tolist(), z.grad.tolist(), leaf.grad, made.grad.tolist()))
    assert results[0] == results[1] == ([2.0, 4.0], [10.0, 10.0], None, [6.0, 12.0])
