"""review212 F1-F3: a payload given beside a graph built by hand (``Graph(nodes)`` and a dict) is
checked against its node by both evaluators of the graph, ``torchlean.ir.evaluate`` and the
typed-graph executor (``GraphProgram``), before any kernel runs. Before, the executor ran a
``linear`` declared ``[2, 4]`` with a ``[5, 3]`` weight (loss 30), broadcast a flat ``(6,)``
``const`` of ``value_shape`` ``(6, 1)`` to ``(6, 6)`` (126 for 21), and ran a conv weight that
did not fit its ``ConvConfig``, which ``evaluate`` then reshaped into the declared shape; a const
without a payload was a bare ``KeyError``, and ``evaluate`` let numpy's ``ValueError`` out.

Oracles: sums by hand; the two evaluators against each other where the payload fits.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import torchlean as tl
from torchlean import ir
from torchlean.autograd.typed_graph import GraphProgram
from torchlean.backend import profiles
from torchlean.backend.errors import SessionError
from torchlean.ir import ConvConfig
from torchlean.ir import ops as K
from torchlean.ir.errors import IRError
from torchlean.ir.graph import Graph, Node
from torchlean.ir.payloads import ConvParams, LayerNormParams, LinearParams

PROFILE = profiles.get("checked_cpu")


def _program(graph: Graph, payloads: dict[int, Any]) -> GraphProgram:
    result = PROFILE.accept_graph(graph)
    assert result.plan is not None
    return GraphProgram(graph, payloads, result.plan, {}, {})


def _run(graph: Graph, payloads: dict[int, Any], inputs: list[np.ndarray], output: int) -> np.ndarray:
    with tl.session("checked_cpu"):
        return _program(graph, payloads).run([tl.tensor(x) for x in inputs], [], output).numpy()


def _refused_by_both(
    graph: Graph, payloads: dict[int, Any], inputs: dict[int, np.ndarray], fault: str
) -> None:
    """Both evaluators refuse, naming the node and ``fault`` (a literal)."""
    with pytest.raises(SessionError, match=rf"^typed graph: node \d+ \([^)]*\): {re.escape(fault)}$"):
        _program(graph, payloads)
    with pytest.raises(IRError, match=rf"^IR eval: (node \d+ \([^)]*\): )?{re.escape(fault)}"):
        ir.evaluate(graph, inputs, payloads)


LINEAR = Graph([
    Node(0, (), K.Input(), (2, 3)), Node(1, (0,), K.Linear(), (2, 4)), Node(2, (1,), K.Sum(), ())
])


def test_a_linear_weight_that_does_not_fit_is_refused() -> None:
    x = {0: np.ones((2, 3), np.float32)}
    _refused_by_both(LINEAR, {1: LinearParams(np.ones((5, 3), np.float32), None)}, x,
                     "its LinearParams.weight has shape [5, 3] (accepted: [4, 3])")
    _refused_by_both(LINEAR, {1: LinearParams(np.ones((4, 3), np.float32), np.ones(5, np.float32))}, x,
                     "its LinearParams.bias has shape [5] (accepted: [4])")
    # a weight that fits: 2 rows x 4 outputs x (3 ones + bias 0.5)
    fits = {1: LinearParams(np.ones((4, 3), np.float32), np.full(4, 0.5, np.float32))}
    assert _run(LINEAR, fits, [x[0]], 2) == ir.evaluate(LINEAR, x, fits)[2] == 2 * 4 * 3.5


CONST = Graph([Node(0, (), K.Input(), (6, 1)), Node(1, (), K.Const(value_shape=(6, 1)), (6, 1)),
               Node(2, (0, 1), K.Add(), (6, 1)), Node(3, (2,), K.Sum(), ())])


def test_a_const_is_read_row_major_into_its_value_shape_by_both() -> None:
    x = np.ones((6, 1), np.float32)
    flat = {1: np.arange(6, dtype=np.float32)}
    assert _run(CONST, flat, [x], 3) == ir.evaluate(CONST, {0: x}, flat)[3] == 6 + 15  # not 126
    wrong = {1: np.arange(3, dtype=np.float32).reshape(1, 3)}
    with pytest.raises(SessionError, match=re.escape(
            "typed graph: node 1 (const [6, 1]): payload of shape [1, 3] holds 3 values (accepted: 6, "
            "value_shape [6, 1], read row-major)")):
        _program(CONST, wrong)
    with pytest.raises(IRError, match=r"^IR eval: const 1: flat length mismatch: have 3, expected 6$"):
        ir.evaluate(CONST, {0: x}, wrong)


@pytest.mark.parametrize(("payloads", "fault"), [
    ({}, "has no payload (accepted: a numpy array)"),
    ({1: [1.0] * 6}, "payload must be a numpy array, got list"),
    ({1: LinearParams(np.ones(6), None)}, "payload must be a numpy array, got LinearParams"),
])
def test_a_const_without_an_array_is_refused_naming_it(payloads: dict[int, Any], fault: str) -> None:
    with pytest.raises(SessionError, match=rf"^typed graph: node 1 \(const \[6, 1\]\): {re.escape(fault)}$"):
        _program(CONST, payloads)


def test_a_conv_weight_that_does_not_fit_its_config_is_refused() -> None:
    config = ConvConfig(in_channels=1, out_channels=2, kernel=(3,), channel_axis=1)
    graph = Graph([Node(0, (), K.Input(), (1, 1, 5)), Node(1, (0,), K.Conv(config), (1, 2, 3))])
    x = {0: np.arange(5, dtype=np.float32).reshape(1, 1, 5)}
    for shape in ((3, 1, 4), (3, 1, 3), (2, 1, 2)):  # (3, 1, 3): numpy's reshape error escaped
        weight = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
        _refused_by_both(graph, {1: ConvParams(weight, None)}, x,
                         f"its ConvParams.weight has shape {list(shape)} (accepted: [2, 1, 3])")
    fits = {1: ConvParams(np.ones((2, 1, 3), np.float32), np.zeros(2, np.float32))}
    expected = [[[3.0, 6.0, 9.0], [3.0, 6.0, 9.0]]]  # windows of 0..4 summed
    np.testing.assert_array_equal(_run(graph, fits, [x[0]], 1), expected)
    np.testing.assert_array_equal(ir.evaluate(graph, x, fits)[1], expected)


def test_a_layer_norm_affine_of_another_shape_is_refused() -> None:
    graph = Graph([Node(0, (), K.Input(), (2, 3)), Node(1, (0,), K.LayerNorm(axis=1), (2, 3))])
    x = {0: np.ones((2, 3), np.float32)}
    _refused_by_both(graph, {1: LayerNormParams(np.ones(4, np.float32), None)}, x,
                     "its LayerNormParams.weight has shape [4] (accepted: [3])")


def test_a_failed_acceptance_s_plan_is_refused_saying_what_to_pass() -> None:
    """review212 F4: ``GraphProgram(graph, payloads, result.plan, ...)`` with ``result.plan`` None
    (acceptance failed), or the result itself, was a beartype violation about ``node_kernels``."""
    result = PROFILE.accept_graph(LINEAR)
    payloads = {1: LinearParams(np.ones((4, 3), np.float32), None)}
    for given, got in (
        (None, "None: the .plan of profile.accept_graph(graph) is None when acceptance failed"),
        (result, "a GraphKernelPlanResult: pass its .plan (None when acceptance failed"),
    ):
        with pytest.raises(SessionError, match=re.escape(
                f"typed graph: expected the AcceptedGraphKernelPlan of an accepted graph, got {got}")):
            GraphProgram(LINEAR, payloads, given, {}, {})  # type: ignore[arg-type]


def test_a_scalar_loss_that_needs_no_gradient_is_named_so() -> None:
    """review212 F5: a scalar loss that depends on nothing requiring a gradient was "not a scalar
    that requires a gradient (shape ())"."""
    from torchlean.autograd.tape import AutogradError

    payloads = {1: LinearParams(np.ones((4, 3), np.float32), None)}
    with tl.session("checked_cpu"):
        program = _program(LINEAR, payloads)
        refusal = r"^typed graph: node 2 requires no gradient: it depends on no "
        with pytest.raises(AutogradError, match=refusal):
            program.run_and_backward([tl.tensor(np.ones((2, 3), np.float32))], [], 2)


def test_a_payload_keyed_at_a_node_that_takes_none_is_refused_by_both() -> None:
    """review213 F2: the executor ignored it, where ir.evaluate refuses it; a layer norm's affine
    keyed at the relu before it ran without the affine (0.0 where keyed right gives 30.0)."""
    graph = Graph([Node(0, (), K.Input(), (2, 3)), Node(1, (0,), K.Relu(), (2, 3)),
                   Node(2, (1,), K.LayerNorm(axis=1), (2, 3)), Node(3, (2,), K.Sum(), ())])
    affine = LayerNormParams(np.full(3, 2.0, np.float32), np.full(3, 5.0, np.float32))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    fault = ("payloads has keys that are not nodes taking a payload: [1] (nodes taking one: [2]; kinds "
             "const, linear, conv, batch_norm_eval, batch_norm_train, layernorm)")
    with pytest.raises(SessionError, match=f"^typed graph: {re.escape(fault)}$"):
        _program(graph, {1: affine})
    with pytest.raises(IRError, match=f"^IR eval: {re.escape(fault)}$"):
        ir.evaluate(graph, {0: x}, {1: affine})
    # keyed right: each normalised row sums to 0, so the sum is 6 bias values of 5
    assert _run(graph, {2: affine}, [x], 3) == ir.evaluate(graph, {0: x}, {2: affine})[3] == 30.0


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_a_list_weight_and_a_matrix_const_are_named_and_read_alike() -> None:
    """review213 F7: a list weight was "has shape list"; an np.matrix const of value_shape (6, 1)
    ran as its (1, 6) matrix shape in the executor (a numpy matrix keeps two axes)."""
    x = {0: np.ones((2, 3), np.float32)}
    _refused_by_both(LINEAR, {1: LinearParams([[1.0] * 3] * 4, None)}, x,  # type: ignore[arg-type]
                     "its LinearParams.weight must be a numpy array, got list (accepted: an array of shape "
                     "[4, 3])")
    matrix = {1: np.asmatrix(np.arange(6, dtype=np.float32))}
    ones = np.ones((6, 1), np.float32)
    assert _run(CONST, matrix, [ones], 3) == ir.evaluate(CONST, {0: ones}, matrix)[3] == 21.0


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_a_matrix_array_field_and_a_list_of_payloads_are_refused_by_name() -> None:
    """review218 F6: an np.matrix layer-norm affine ran in the executor and raised numpy's error in
    ir.evaluate (a matrix's * is a matrix product); a list of payloads was read as its keys."""
    graph = Graph([Node(0, (), K.Input(), (2, 3)), Node(1, (0,), K.LayerNorm(axis=1), (2, 3))])
    _refused_by_both(graph, {1: LayerNormParams(np.asmatrix(np.ones((1, 3), np.float32)), None)},
                     {0: np.ones((2, 3), np.float32)},
                     "its LayerNormParams.weight must be a numpy array, got matrix (accepted: an array of "
                     "shape [3]; np.asarray of it)")
    with pytest.raises(SessionError, match=r"^typed graph: payloads must be a mapping from node id to "
                                           r"payload, got list$"):
        _program(LINEAR, [LinearParams(np.ones((4, 3), np.float32), None)])  # type: ignore[arg-type]


def test_a_memmap_payload_field_is_accepted(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """review219 F2: the matrix refusal refused every ndarray subclass, np.memmap too (weights read
    with np.load(..., mmap_mode="r")), which both evaluators compute as arrays."""
    np.save(tmp_path / "w.npy", np.ones((4, 3), np.float32))
    weight = np.load(tmp_path / "w.npy", mmap_mode="r")
    assert isinstance(weight, np.memmap)
    x = {0: np.ones((2, 3), np.float32)}
    payloads = {1: LinearParams(weight, None)}
    assert _run(LINEAR, payloads, [x[0]], 2) == ir.evaluate(LINEAR, x, payloads)[2] == 2 * 4 * 3
