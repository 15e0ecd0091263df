"""``Tensor.lineage()`` / ``torchlean.autograd.lineage.lineage``: the kernels of the recorded ops
behind a tensor (review62 F5: ``produced_by`` names the last op only, ``grad_fn`` is a string).

Oracles: the session's own record (``session.selected``: the one accepted kernel per op that ran),
the kernel profiler's per-capsule call counts (every forward kernel run inside the block, and every
VJP a backward runs: an independent count of the ops), the typed-graph plan's node kernels, and
hand-written op sequences. The limits the docstrings state are tested as stated: no tape, inputs
that do not require a gradient, forward-only random ops, leaves, freed graphs, in-place writes.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import torchlean as tl
from torchlean import functional as F
from torchlean import nn, profiler
from torchlean.autograd.lineage import lineage
from torchlean.autograd.session import Session
from torchlean.autograd.typed_graph import GraphProgram, node_kernels
from torchlean.backend import profiles
from torchlean.backend.acceptance import AcceptedKernel
from torchlean.nn.lowering import lower_model


def _selected(session: Session, op: str) -> AcceptedKernel:
    (kernel,) = [k for k in session.selected if k.op.label == op]
    return kernel


def _ops(kernels: tuple[AcceptedKernel, ...]) -> list[str]:
    return [k.op.label for k in kernels]


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
def test_the_review_example_lists_every_kernel_that_ran_for_the_view(profile: str) -> None:
    """``v = relu(x)[0]``: produced_by names reshape only; slice ran for it too (review62 F5)."""
    with tl.session(profile) as s:
        x = tl.tensor(np.array([[-1.0, 2.0, 3.0], [4.0, -5.0, 6.0]]), requires_grad=True)
        v = tl.relu(x)[0]
    assert v.produced_by is _selected(s, "reshape")
    got = v.lineage()
    assert got == tuple(_selected(s, op) for op in ("relu", "slice", "reshape"))
    assert all(a is b for a, b in zip(got, (_selected(s, "relu"), _selected(s, "slice"), v.produced_by),
                                      strict=True))
    assert lineage(v) == got  # the function and the method are one
    provider = "reference" if profile == "checked_cpu" else "aten"
    assert {k.capsule.provider.label for k in got} == {provider}
    np.testing.assert_array_equal(v.numpy(), [0.0, 2.0, 3.0])  # the values are the ops' (hand oracle)


def test_each_op_once_in_recording_order_with_repeated_kernels_once_per_op() -> None:
    """``h * h`` reads h twice (one relu op, listed once); two relu layers are two ops (the same
    kernel twice); the result's own op is last, and the order is the order the ops ran."""
    with tl.session("checked_cpu") as s:
        x = tl.tensor(np.arange(6.0).reshape(2, 3) - 2.0, requires_grad=True)
        w = tl.tensor(np.ones((3, 3)), requires_grad=True)
        h = tl.relu(x)
        loss = tl.reduce_sum(tl.relu(h @ w) * h)
    assert _ops(loss.lineage()) == ["relu", "matmul", "relu", "mul", "reduce_sum"]
    assert loss.lineage()[-1] is loss.produced_by
    assert loss.lineage()[0] is loss.lineage()[2] is _selected(s, "relu")
    assert list(dict.fromkeys(loss.lineage())) == s.selected  # distinct kernels, first-use order
    assert loss.grad_fn == "reduce_sum" and isinstance(loss.grad_fn, str)  # a label, not a node


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu", "libtorch_forward_cpu"])
def test_the_lineage_counts_the_kernels_the_profiler_saw_run_and_the_vjps_backward_runs(profile: str) -> None:
    """Independent count: the profiler counts each forward kernel call per capsule; a model whose
    every op records a node gives the same counts from the lineage, and its backward runs one VJP
    per listed op."""
    rng = np.random.default_rng(0)
    with tl.session(profile):
        x = tl.tensor(rng.standard_normal((4, 3)))
        w1 = tl.tensor(rng.standard_normal((3, 5)), requires_grad=True)
        w2 = tl.tensor(rng.standard_normal((5, 2)), requires_grad=True)
        with profiler.profile() as timed:  # a VJP is counted when its node was recorded inside
            z = tl.softmax(tl.relu(x @ w1) @ w2, 1)
            loss = tl.reduce_mean(tl.log(z))
            kernels = loss.lineage()
            loss.backward()
    ran = Counter({k.capsule: k.forward_calls for k in timed.kernels})
    assert Counter(k.capsule.name for k in kernels) == ran
    assert _ops(kernels) == ["matmul", "relu", "matmul", "softmax", "log", "reduce_mean"]  # by hand
    assert Counter({k.capsule: k.vjp_calls for k in timed.kernels}) == ran


def test_without_a_tape_the_lineage_is_the_last_kernel_or_empty() -> None:
    """Ops run under no_grad or on inputs none of which requires a gradient record no node: the
    lineage is ``(produced_by,)``; data, gradients and optimizer-written parameters give ``()``."""
    with tl.session("checked_cpu") as s:
        x = tl.tensor(np.array([[-1.0, 2.0], [3.0, -4.0]]), requires_grad=True)
        with tl.no_grad():
            v = tl.relu(x)[0]
        assert v.grad_fn is None and v.lineage() == (_selected(s, "reshape"),)
        c = tl.tensor(np.ones((2, 2)))  # requires no gradient: no node anywhere
        u = tl.reduce_sum(tl.exp(c))
        assert u.grad_fn is None and u.lineage() == (_selected(s, "reduce_sum"),)
        assert c.lineage() == () and x.lineage() == ()  # data, a leaf
        loss = tl.reduce_sum(tl.relu(x))
        loss.backward()
        assert x.grad is not None and x.grad.lineage() == ()  # a gradient: no node, no kernel
        with tl.no_grad():
            written = tl.exp(x)
            kernel = written.produced_by
            assert kernel is not None and kernel.op.label == "exp" and written.lineage() == (kernel,)
            written.copy_(tl.tensor(np.zeros((2, 2))))  # values from outside a kernel (an update)
        assert written.produced_by is None and written.lineage() == ()


def test_inputs_without_a_gradient_forward_only_ops_and_leaves_end_the_walk() -> None:
    """As documented: an input that requires no gradient is not followed (the tape keeps no edge
    to it), the random sources record no node, and a leaf's own producer is not listed."""
    with tl.session("checked_cpu", seed=3) as s:
        x = tl.tensor(np.ones((2, 3)), requires_grad=True)
        computed = tl.exp(tl.tensor(np.ones((2, 3))))  # by exp, but requires no gradient
        y = x * computed
        assert y.lineage() == (_selected(s, "mul"),)  # exp is not reached
        mask = tl.bernoulli_mask((2, 3), 0.5, dtype=np.float64)
        assert mask.lineage() == (_selected(s, "bernoulli_mask"),)  # its own result: the one kernel
        dropped = tl.relu(x) * mask
        assert _ops(dropped.lineage()) == ["relu", "mul"]  # the mask's kernel is not on the tape
        leaf = tl.exp(x).detach().requires_grad_()
        assert leaf.produced_by is _selected(s, "exp") and leaf.lineage() == (leaf.produced_by,)  # no node
        z = tl.relu(leaf)
        assert z.lineage() == (_selected(s, "relu"),)  # the leaf ends the walk: exp is not listed


def test_a_freed_graph_is_refused_and_retain_graph_keeps_it() -> None:
    with tl.session("checked_cpu") as s:
        x = tl.tensor(np.arange(4.0), requires_grad=True)
        kept = tl.reduce_sum(tl.exp(x))
        before = kept.lineage()
        kept.backward(retain_graph=True)
        assert kept.lineage() == before == (_selected(s, "exp"), _selected(s, "reduce_sum"))
        kept.backward()  # frees it
        freed = (r"^lineage: the graph behind this tensor was freed by an earlier backward\(\) \(node "
                 r"`reduce_sum`\); call lineage\(\) before backward\(\), or pass retain_graph=True to it$")
        with pytest.raises(tl.AutogradError, match=freed):
            kept.lineage()


def test_a_tensor_written_in_place_after_its_op_recorded_it_is_refused_as_backward_refuses() -> None:
    with tl.session("checked_cpu"):
        x = tl.tensor(np.arange(4.0), requires_grad=True)
        h = tl.exp(x)
        y = tl.reduce_sum(h * 2.0)
        with tl.no_grad():
            h += 1.0  # h.produced_by is now the add kernel, not exp's
        assert h.produced_by is not None and h.produced_by.op.label == "add"
        message = r"^lineage: the output of `exp` was written in place after the op recorded it"
        with pytest.raises(tl.AutogradError, match=message):
            y.lineage()
        with pytest.raises(tl.AutogradError, match=message):
            h.lineage()
        with pytest.raises(tl.AutogradError, match="modified in place"):
            y.backward()


def test_typed_graph_steps_give_the_plan_node_kernels_in_node_order() -> None:
    model = nn.build(nn.sequential(nn.linear(3, 4), nn.relu(), nn.linear(4, 2)), seed=0, dtype=np.float64)
    lowered = lower_model(model, (5, 3))
    plan = profiles.get("fast_cpu").accept_graph(lowered.built.graph).plan
    assert plan is not None
    program = GraphProgram(
        lowered.built.graph, lowered.built.payloads, plan, lowered.param_nodes, lowered.payload_params
    )
    with tl.session("fast_cpu"):
        params = [tl.tensor(p, requires_grad=True) for p in model.parameters]
        out = program.run([tl.tensor(np.ones((5, 3)))], params, lowered.output)
    by_node = node_kernels(plan)
    expected = tuple(by_node[node_id] for node_id in sorted(by_node) if node_id <= lowered.output)
    assert out.lineage() == expected and len(expected) >= 3
    assert out.lineage()[-1] is out.produced_by


def test_a_long_chain_is_walked_without_recursion() -> None:
    with tl.session("checked_cpu") as s:
        t = tl.tensor(np.ones(2), requires_grad=True)
        for _ in range(3000):
            t = tl.relu(t)
    got = t.lineage()
    assert len(got) == 3000 and set(got) == {_selected(s, "relu")}


@pytest.mark.parametrize("value", [None, np.ones(3), [1.0], 2.0, "t"])
def test_anything_but_a_tensor_is_a_type_error_naming_what_is_accepted(value: object) -> None:
    with pytest.raises(tl.TensorTypeError, match=r"^lineage: expected a torchlean Tensor, got .*accepted: a "
                       r"torchlean Tensor") as info:
        lineage(value)  # type: ignore[arg-type]
    assert isinstance(info.value, TypeError)


def test_grad_fn_documents_a_label_string_and_produced_by_points_to_lineage() -> None:
    grad_fn = tl.Tensor.grad_fn.__doc__ or ""
    assert "label" in grad_fn and "not a graph node" in grad_fn and "lineage" in grad_fn
    assert "last op only" in (tl.Tensor.produced_by.__doc__ or "")
    with tl.session("checked_cpu"):
        t = F.relu(tl.tensor(np.ones(2), requires_grad=True))
    assert type(t.grad_fn) is str
