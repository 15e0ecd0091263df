"""The TorchLean tape: traversal, accumulation, detach, freeing, version checks, depth.

Oracles: the original's worked examples (anchor-runtime.md §1.2, hand-computed), torch.autograd
in float64 for random programs (hypothesis), and hand-derived gradients.
"""

from __future__ import annotations

import asyncio
import gc
import re
import warnings
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import torchlean as tl
from torchlean.autograd import set_grad_enabled
from torchlean.autograd.grad_mode import GradMode
from torchlean.autograd.tape import AutogradError, Node, SavedArray, VersionCounter, run_backward


def _f64(values: Any, requires_grad: bool = False) -> tl.Tensor:
    return tl.tensor(np.asarray(values, dtype=np.float64), requires_grad=requires_grad)


def test_original_worked_example_both_branches_live() -> None:
    x = _f64([3.0, -1.5], requires_grad=True)
    z = x * x + x * x
    loss = tl.reduce_sum(z)
    assert loss.item() == 22.5
    loss.backward()
    assert x.grad is not None
    np.testing.assert_array_equal(x.grad.numpy(), [12.0, -6.0])


def test_original_worked_example_one_branch_detached() -> None:
    x = _f64([3.0, -1.5], requires_grad=True)
    z = x * x + (x * x).detach()
    tl.reduce_sum(z).backward()
    assert x.grad is not None
    np.testing.assert_array_equal(x.grad.numpy(), [6.0, -3.0])


def test_duplicate_parents_are_recorded_per_argument_position() -> None:
    x = _f64([2.0], requires_grad=True)
    y = x * x
    assert y._node is not None
    assert y._node.parents == (x, x)
    assert y.grad_fn == "mul"


def test_leaf_gradients_accumulate_across_backward_calls() -> None:
    x = _f64([1.0, 2.0], requires_grad=True)
    tl.reduce_sum(x * 3.0).backward()
    tl.reduce_sum(x * x).backward()
    assert x.grad is not None
    np.testing.assert_array_equal(x.grad.numpy(), [3.0 + 2.0, 3.0 + 4.0])


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
@pytest.mark.parametrize("through_a_node", [False, True], ids=["leaf", "non-leaf"])
@pytest.mark.parametrize(
    "coefficients", [(1e8, 1.0, -1e8), (1.0, 1e8, -1e8), (1e8, -1e8, 1.0)], ids=["a", "b", "c"]
)
def test_gradient_contributions_are_a_left_fold_in_reverse_recording_order(
    profile: str, through_a_node: bool, coefficients: tuple[float, float, float]
) -> None:
    """A tensor read by three ``mul``s receives ``((g2 + g1) + g0)``: the tape module's stated
    order (the last-recorded consumer first). In float32 the three orders give 0 or 1 (the exact
    sum is 1), so the expected value is the hand fold, and one arrangement tells the stated order
    from the recording order."""
    f32 = np.float32
    with tl.session(profile):
        leaf = tl.tensor(np.ones(1, f32), requires_grad=True)
        x = leaf * 1.0 if through_a_node else leaf  # a node's cotangent slot, or the leaf's sum
        c0, c1, c2 = (tl.tensor(np.full(1, c, f32)) for c in coefficients)
        loss = tl.reduce_sum(x * c0) + tl.reduce_sum(x * c1) + tl.reduce_sum(x * c2)
        loss.backward()
    g0, g1, g2 = (f32(c) for c in coefficients)
    assert leaf.grad is not None
    np.testing.assert_array_equal(leaf.grad.numpy(), [(g2 + g1) + g0])
    if coefficients == (1.0, 1e8, -1e8):  # recording order would give (1 + 1e8) - 1e8 = 0
        assert leaf.grad.numpy()[0] == 1.0 and (g0 + g1) + g2 == 0.0


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
def test_one_nodes_contributions_to_a_repeated_parent_fold_in_input_position_order(profile: str) -> None:
    """``concat([x, x, x])`` hands ``x`` three contributions from one node: ``((g0 + g1) + g2)``,
    input position order (review24 diff F4). With float32 cotangents 1, 1e8, -1e8 that is 0; the
    reverse order would give 1. Oracle: the hand fold."""
    f32 = np.float32
    with tl.session(profile):
        x = tl.tensor(np.ones(1, f32), requires_grad=True)
        tl.reduce_sum(tl.concat([x, x, x]) * tl.tensor(np.array([1.0, 1e8, -1e8], f32))).backward()
    assert x.grad is not None
    assert x.grad.numpy().tolist() == [float((f32(1) + f32(1e8)) + f32(-1e8))] == [0.0]
    assert (f32(-1e8) + f32(1e8)) + f32(1) == 1.0  # the order it is not


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
def test_zero_dim_leaf_accumulates_within_and_across_backward_calls(profile: str) -> None:
    """numpy adds two 0-d arrays to a scalar; the gradient must stay a 0-d tensor (hand values:
    d(x*x)/dx = 2x = 6 at x = 3, plus d(x*x*x)/dx = 3x^2 = 27 from a second backward)."""
    with tl.session(profile):
        x = _f64(3.0, requires_grad=True)
        (x * x).backward()
        assert x.grad is not None
        assert x.grad.shape == ()
        assert x.grad.item() == 6.0
        (x * x * x).backward()
        assert x.grad.shape == ()
        assert x.grad.item() == 33.0
        y = _f64(2.0, requires_grad=True)
        z = tl.relu(y)
        (z * z + z).backward()  # an interior 0-d node collects two contributions: 2z + 1 = 5
        assert y.grad is not None
        assert y.grad.item() == 5.0


def test_non_leaves_keep_no_grad_and_leaves_without_requires_grad_get_none() -> None:
    x = _f64([1.0, -2.0], requires_grad=True)
    c = _f64([5.0, 5.0])
    h = x * c
    loss = tl.reduce_sum(tl.relu(h))
    loss.backward()
    with pytest.warns(UserWarning, match="not a leaf"):  # as torch (review138 F3)
        assert h.grad is None
    assert not h.is_leaf
    assert c.grad is None and c.is_leaf
    assert x.grad is not None
    np.testing.assert_array_equal(x.grad.numpy(), [5.0, 0.0])


def test_gradient_does_not_alias_between_leaves() -> None:
    a = _f64([1.0, 2.0], requires_grad=True)
    b = _f64([3.0, 4.0], requires_grad=True)
    (a + b).backward(np.ones(2))
    assert a.grad is not None and b.grad is not None
    a.grad.zero_()
    np.testing.assert_array_equal(b.grad.numpy(), [1.0, 1.0])


def test_broadcast_backward_reduces_to_input_shape() -> None:
    a = _f64(np.ones((3, 1)), requires_grad=True)
    b = _f64(np.arange(4.0), requires_grad=True)
    (a * b).backward(np.ones((3, 4)))
    assert a.grad is not None and b.grad is not None
    np.testing.assert_array_equal(a.grad.numpy(), [[6.0], [6.0], [6.0]])
    np.testing.assert_array_equal(b.grad.numpy(), [3.0, 3.0, 3.0, 3.0])


def test_detach_shares_storage_and_cuts_the_tape() -> None:
    x = _f64([1.0, 2.0], requires_grad=True)
    y = x * 2.0
    d = y.detach()
    assert d.is_leaf and not d.requires_grad
    assert np.shares_memory(d.numpy(), y.numpy())
    assert d._version is y._version


def test_no_grad_records_nothing_and_enable_grad_restores() -> None:
    x = _f64([1.0], requires_grad=True)
    with tl.no_grad():
        y = x * x
        with tl.enable_grad():
            z = x * x
    assert not y.requires_grad and y.is_leaf
    assert z.requires_grad and not z.is_leaf
    assert tl.is_grad_enabled()


def test_no_grad_and_enable_grad_decorate_with_or_without_parentheses() -> None:
    """As torch.no_grad: ``@no_grad`` and ``@no_grad()`` both run every call without recording,
    and ``@enable_grad`` records again inside a ``no_grad`` block."""
    x = _f64([2.0], requires_grad=True)

    @tl.no_grad
    def bare(t: tl.Tensor) -> tl.Tensor:
        return t * t

    @tl.no_grad()
    def called(t: tl.Tensor) -> tl.Tensor:
        return t * t

    @tl.enable_grad
    def recording(t: tl.Tensor) -> tl.Tensor:
        return t * t

    for _ in range(2):  # the decorator is reusable
        assert not bare(x).requires_grad and not called(x).requires_grad
    assert tl.is_grad_enabled() and (x * x).requires_grad
    with tl.no_grad():
        assert recording(x).requires_grad
        assert not (x * x).requires_grad


def test_a_grad_mode_object_is_reusable_and_reentrant() -> None:
    """As torch's: one ``no_grad()`` object may be entered again, and nested in itself."""
    x = _f64([2.0], requires_grad=True)
    mode = tl.no_grad()
    for _ in range(2):
        with mode:
            with mode:
                assert not (x * x).requires_grad
            assert not tl.is_grad_enabled()
        assert tl.is_grad_enabled()


def test_a_decorated_generator_runs_its_body_under_the_mode() -> None:
    """Each step of a decorated generator's body runs without recording (as torch.no_grad); the
    caller's code between steps keeps the caller's mode."""
    x = _f64([2.0], requires_grad=True)

    @tl.no_grad
    def squares(n: int) -> Iterator[bool]:
        for _ in range(n):
            sent = yield (x * x).requires_grad
            assert sent is None

    seen = []
    for recorded in squares(3):
        seen.append(recorded)
        assert tl.is_grad_enabled() and (x * x).requires_grad
    assert seen == [False, False, False]


def test_a_decorated_coroutine_function_runs_its_body_under_the_mode_in_its_own_task() -> None:
    """review104 L5: ``@no_grad`` on an ``async def`` set the mode only while the coroutine object
    was made (as torch's decorator does), so its body recorded. Now the body runs under the mode
    across its awaits, and a task running beside it (same thread, interleaved) keeps its own."""
    x = _f64([2.0], requires_grad=True)
    seen: dict[str, list[bool]] = {"decorated": [], "beside": []}

    @tl.no_grad
    async def decorated() -> bool:
        for _ in range(3):
            seen["decorated"].append((x * x).requires_grad)
            await asyncio.sleep(0)  # the other task runs here
        return tl.is_grad_enabled()

    async def beside() -> None:
        for _ in range(3):
            seen["beside"].append((x * x).requires_grad)
            await asyncio.sleep(0)

    async def both() -> bool:
        inside, _ = await asyncio.gather(decorated(), beside())
        assert tl.is_grad_enabled()  # the awaiting task's mode is its own again
        return inside

    assert asyncio.run(both()) is False
    assert seen == {"decorated": [False, False, False], "beside": [True, True, True]}
    assert decorated.__name__ == "decorated" and asyncio.iscoroutinefunction(decorated)
    assert tl.is_grad_enabled()


def test_set_grad_enabled_refuses_with_its_type_error_whatever_the_values_repr_does() -> None:
    """review126 F1: naming the value (review122 F1) let a raising ``__repr__`` replace the
    TypeError, and a multi-line one split the message; the refusal stays one TypeError line."""

    class Raising:
        def __repr__(self) -> str:
            raise RuntimeError("repr failed")

    class TwoLines:
        def __repr__(self) -> str:
            return "a\nb"

    with pytest.raises(TypeError, match=r"^set_grad_enabled: enabled must be a bool; got a "
                       r"test_set_grad_enabled_refuses_.*\.Raising object of type "):
        set_grad_enabled(Raising())  # type: ignore[arg-type]
    with pytest.raises(TypeError) as caught:
        set_grad_enabled(TwoLines())  # type: ignore[arg-type]
    assert "\n" not in str(caught.value) and "got a b of type" in str(caught.value)  # line break folded


def test_a_grad_mode_decorates_only_callables() -> None:
    with pytest.raises(TypeError, match=r"^a grad mode decorates a function, got 3 of type int$"):
        tl.no_grad(3)  # type: ignore[call-overload]


@pytest.mark.parametrize(
    "enabled", ["False", 0, None, np.bool_(True), 10**5000], ids=lambda v: type(v).__name__
)
def test_set_grad_enabled_takes_only_a_bool(enabled: object) -> None:
    """As torch's ``set_grad_enabled`` (``"False"`` would otherwise read as true)."""
    kind = type(enabled)  # qualified outside builtins: numpy 2 names np.bool_ "bool"
    named = kind.__name__ if kind.__module__ == "builtins" else f"numpy.{kind.__name__}"
    # the value is named too (review122 F1), a huge integer by its size
    value = "an integer of about 5001 digits" if type(enabled) is int and enabled > 1 else repr(enabled)
    refusal = rf"^set_grad_enabled: enabled must be a bool; got {re.escape(value)} of type {named} "
    with pytest.raises(tl.TensorTypeError, match=refusal):  # a TypeError too (review239 F13)
        set_grad_enabled(enabled)  # type: ignore[arg-type]
    with pytest.raises(tl.TensorTypeError, match=refusal):
        GradMode(enabled)  # type: ignore[arg-type]
    assert isinstance(enabled, np.bool_) == (named == "numpy.bool")
    with pytest.raises(TypeError, match=r"must be bool"):
        torch.set_grad_enabled(enabled)  # type: ignore[arg-type]
    assert tl.is_grad_enabled()
    x = tl.tensor([1.0], requires_grad=True)
    with set_grad_enabled(False):
        assert not tl.is_grad_enabled() and not (x * 2.0).requires_grad
        with set_grad_enabled(True):
            assert (x * 2.0).requires_grad
    assert tl.is_grad_enabled()


def test_a_torch_tensor_cotangent_is_read_detached_and_widened() -> None:
    """torch accepts a cotangent that requires grad, or is bfloat16; so does backward here.
    Oracle: d(sum(g * x * x))/dx = 2 * g * x, with g's bfloat16 values exact in float64."""
    x = _f64([1.5, -2.0, 3.0], requires_grad=True)
    g = torch.tensor([0.5, 1.25, -3.0], dtype=torch.float64, requires_grad=True)
    (x * x).backward(g)
    assert x.grad is not None
    expected = 2 * np.array([0.5, 1.25, -3.0]) * np.array([1.5, -2.0, 3.0])
    np.testing.assert_array_equal(x.grad.numpy(), expected)
    y = _f64([1.5, -2.0, 3.0], requires_grad=True)
    (y * y).backward(torch.tensor([0.5, 1.25, -3.0], dtype=torch.bfloat16))
    assert y.grad is not None
    np.testing.assert_array_equal(y.grad.numpy(), x.grad.numpy())


def test_a_cotangent_beyond_float32_is_inf_without_a_numpy_warning() -> None:
    """1e40 is inf in float32 (as torch casts it); numpy's overflow warning is not shown."""
    x = tl.tensor(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (x * 3.0).backward(np.array([1e40, 1.0]))
        big = tl.tensor([1e40, -1e40])
    assert x.grad is not None
    np.testing.assert_array_equal(x.grad.numpy(), np.array([np.inf, 3.0], dtype=np.float32))
    np.testing.assert_array_equal(big.numpy(), np.array([np.inf, -np.inf], dtype=np.float32))


def test_second_backward_over_freed_graph_is_a_clear_error() -> None:
    x = _f64([1.0, 2.0], requires_grad=True)
    loss = tl.reduce_sum(x * x)
    loss.backward()
    with pytest.raises(AutogradError, match=r"freed by an earlier backward\(\).*retain_graph=True"):
        loss.backward()


def test_retain_graph_allows_a_second_backward() -> None:
    x = _f64([1.0, 2.0], requires_grad=True)
    loss = tl.reduce_sum(x * x)
    loss.backward(retain_graph=True)
    loss.backward()
    assert x.grad is not None
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 8.0])


def test_in_place_mutation_of_a_saved_tensor_is_refused_at_backward() -> None:
    x = _f64([1.0, 2.0])
    w = _f64([3.0, 4.0], requires_grad=True)
    loss = tl.reduce_sum(x * w)
    x.copy_(np.array([10.0, 20.0]))
    with pytest.raises(
        AutogradError, match=r"input 0 saved by `mul`.*modified in place.*version 1, saved at version 0"
    ):
        loss.backward()
    assert w.grad is None


def test_each_saved_array_is_named_by_its_place_when_modified_in_place() -> None:
    """The version check of every saved array, named by its operand index (absent operands
    counted) or as the output: a write to a saved output would otherwise give exp's gradient
    from zeros, silently."""
    x = _f64([1.0, 2.0, 3.0], requires_grad=True)
    y = tl.exp(x)
    with tl.no_grad():
        y.zero_()
    with pytest.raises(AutogradError, match=r"^autograd: the output saved by `exp` for backward was"):
        y.backward(np.ones(3))
    assert x.grad is None
    c = _f64([2.0, 3.0])
    loss = tl.reduce_sum(_f64([1.0, 1.0], requires_grad=True) * c)
    c.copy_(np.zeros(2))
    with pytest.raises(AutogradError, match=r"^autograd: the input 1 saved by `mul` for backward"):
        loss.backward()
    xs = _f64([[1.0, 2.0, 4.0]], requires_grad=True)
    bias = _f64([0.5, 0.0, -0.5])
    normed = tl.layer_norm(xs, None, bias)  # the absent weight is operand 1: the bias is input 2
    bias.copy_(np.zeros(3))
    with pytest.raises(AutogradError, match=r"^autograd: the input 2 \(bias\) saved by `layer_norm` for "):
        normed.backward(np.ones((1, 3)))


def test_a_batch_norm_layers_running_statistics_written_by_a_training_forward_are_named() -> None:
    """review236 F3: an eval forward then a training forward of a batch-norm model in one graph is
    refused (torch runs it and its gradient reads the updated running variance); the refusal named
    "input 3" and an in-place change the user never wrote."""
    model = tl.nn.build(tl.nn.sequential(tl.nn.linear(3, 4), tl.nn.batch_norm1d(4, 1e-5, 0.2)),
                        input_shape=(3,), dtype="float64")
    params = model.tensors()
    rng = np.random.default_rng(14)
    evaluated = tl.reduce_sum(model(tl.tensor(rng.standard_normal((5, 3))), params, training=False))
    trained = tl.reduce_sum(model(tl.tensor(rng.standard_normal((3, 3))), params, training=True))
    with pytest.raises(AutogradError) as caught:
        (evaluated + trained).backward()
    assert str(caught.value).startswith(
        "autograd: the input 3 (running_mean, which an nn batch_norm layer's training forward updates in "
        "place) saved by `batch_norm` for backward was modified in place (now at version 1, saved at "
        "version 0)"
    )


def test_in_place_write_through_a_detached_view_is_detected() -> None:
    w = _f64([3.0, 4.0], requires_grad=True)
    h = w * w
    loss = tl.reduce_sum(tl.exp(h))
    h.detach()[0] = 0.0
    with pytest.raises(AutogradError, match="modified in place"):
        loss.backward()


def test_in_place_on_a_tensor_requiring_grad_needs_no_grad() -> None:
    w = _f64([1.0, 2.0], requires_grad=True)
    with pytest.raises(AutogradError, match=r"torchlean\.no_grad"):
        w.copy_(np.zeros(2))
    with pytest.raises(AutogradError, match="requires grad"):
        w.zero_()
    with tl.no_grad():
        w.copy_(np.array([5.0, 6.0]))
    np.testing.assert_array_equal(w.numpy(), [5.0, 6.0])
    assert w._version.value == 1


def test_backward_needs_a_gradient_for_multi_element_outputs() -> None:
    x = _f64([1.0, 2.0], requires_grad=True)
    y = x * x
    with pytest.raises(AutogradError, match="one-element output"):
        y.backward()
    with pytest.raises(AutogradError, match="seed gradient shape mismatch for output"):
        y.backward(np.ones(3))


def test_backward_on_a_tensor_without_grad_is_refused() -> None:
    with pytest.raises(AutogradError, match="does not require grad"):
        _f64([1.0]).backward()


def test_backward_on_a_leaf_seeds_its_own_grad() -> None:
    x = _f64(2.0, requires_grad=True)
    x.backward()
    assert x.grad is not None and x.grad.item() == 1.0


def test_contribution_with_wrong_shape_is_refused() -> None:
    leaf = _f64([1.0, 2.0], requires_grad=True)
    out = np.zeros(3)

    def rule(g: Any, inputs: Any, o: Any) -> list[Any]:
        return [np.zeros(3)]

    node = Node(
        "bad", (leaf,), (SavedArray(leaf._data, leaf._version),), SavedArray(out, VersionCounter()), rule
    )
    with pytest.raises(AutogradError, match="gradient contribution has wrong shape for parent"):
        run_backward(node, np.ones(3))


def test_chain_of_depth_100_000_backward_is_iterative() -> None:
    x = _f64([1.5], requires_grad=True)
    y = x
    for _ in range(100_000):
        y = tl.scale(y, 1.0)
    y.backward(np.ones(1))
    assert x.grad is not None
    np.testing.assert_array_equal(x.grad.numpy(), [1.0])


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
def test_deep_unused_graph_is_released_without_recursion_error() -> None:
    """A 100 000-op chain nobody runs backward through is freed, and freeing it raises nothing: a
    RecursionError in a finaliser is only reported as unraisable, which this test makes an error
    (review148 F3: the test asserted nothing before)."""
    x = _f64([1.0], requires_grad=True)
    first = tl.scale(x, 1.0)
    alive = weakref.ref(first)  # held by the second node's parents until the chain is freed
    y = first
    del first
    for _ in range(99_999):
        y = tl.scale(y, 1.0)
    assert alive() is not None
    del y
    gc.collect()
    assert alive() is None


# ----------------------------------------------------------------------- random programs vs torch

_BINARY = ("add", "sub", "mul")
_UNARY = ("tanh", "sin", "scale")


@st.composite
def _programs(draw: st.DrawFn) -> list[tuple[str, int, int]]:
    steps = draw(st.integers(min_value=1, max_value=12))
    program = []
    for i in range(steps):
        pool = 2 + i  # two leaves, then one value per step
        op = draw(st.sampled_from(_BINARY + _UNARY))
        a = draw(st.integers(0, pool - 1))
        b = draw(st.integers(0, pool - 1))
        program.append((op, a, b))
    return program


def _run(program: list[tuple[str, int, int]], values: list[Any], lib: str) -> Any:
    for op, a, b in program:
        x, y = values[a], values[b]
        if op == "add":
            values.append(x + y)
        elif op == "sub":
            values.append(x - y)
        elif op == "mul":
            values.append(x * y)
        elif op == "scale":
            values.append(x * 0.5)
        elif op == "tanh":
            values.append(tl.tanh(x) if lib == "tl" else torch.tanh(x))
        else:
            values.append(tl.sin(x) if lib == "tl" else torch.sin(x))
    out = values[-1]
    return tl.reduce_sum(out) if lib == "tl" else out.sum()


@settings(max_examples=40, deadline=None)
@given(_programs(), st.integers(0, 2**31 - 1))
def test_random_programs_with_reuse_match_torch_autograd(
    program: list[tuple[str, int, int]], seed: int
) -> None:
    rng = np.random.default_rng(seed)
    a0, b0 = rng.standard_normal((2, 3)), rng.standard_normal(3)
    leaves = [_f64(a0, True), _f64(b0, True)]
    t_leaves = [torch.tensor(a0, requires_grad=True), torch.tensor(b0, requires_grad=True)]
    out = _run(program, list(leaves), "tl")
    t_out = _run(program, list(t_leaves), "torch")
    np.testing.assert_allclose(out.item(), t_out.item(), rtol=1e-12, atol=1e-12)
    out.backward()
    t_out.backward()
    for leaf, t_leaf in zip(leaves, t_leaves, strict=True):
        if t_leaf.grad is None:
            assert leaf.grad is None
            continue
        assert leaf.grad is not None
        np.testing.assert_allclose(leaf.grad.numpy(), t_leaf.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_backward_without_gradient_on_an_empty_output_is_refused() -> None:
    """Only a one-element output gets the implicit seed 1; torch refuses a (0, 3) output too
    ("grad can be implicitly created only for scalar outputs") (review20 mut X5)."""
    x = tl.tensor(np.zeros((0, 3)), requires_grad=True)
    with pytest.raises(RuntimeError, match="only for scalar outputs"):
        (torch.zeros((0, 3), requires_grad=True) * 2.0).backward()
    with pytest.raises(AutogradError, match=r"needs a one-element output \(got shape \(0, 3\)\)"):
        (x * 2.0).backward()


def test_leaf_backward_with_a_gradient_of_another_shape_is_refused() -> None:
    """A leaf's seed must have its shape, as torch's "Mismatch in shape" (review20 mut X6: the
    wrong-shaped seed became ``.grad``)."""
    leaf = tl.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        torch.tensor([1.0, 2.0, 3.0], requires_grad=True).backward(gradient=torch.ones(2))
    message = r"seed gradient shape mismatch for output \(seed \(2,\), output \(3,\)\)"
    with pytest.raises(AutogradError, match=message):
        leaf.backward(gradient=np.ones(2))
    assert leaf.grad is None


def test_a_leaf_that_stopped_requiring_grad_gets_no_gradient():
    # review21 mut T7; oracle: torch — a leaf whose requires_grad is switched off after use gets no .grad
    x = tl.tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = (x * x).sum()
    x.requires_grad = False
    y.backward()
    xt = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    yt = (xt * xt).sum()
    xt.requires_grad_(False)
    yt.backward()
    assert xt.grad is None
    assert x.grad is None


def test_a_contribution_of_another_dtype_is_refused():
    # review21 mut T11; oracle: run_backward's documented Raises ("a contribution whose shape or dtype
    # differs")
    from torchlean.autograd.tape import AutogradError, Node, SavedArray, VersionCounter, run_backward

    x = tl.tensor(np.array([1.0, 2.0]), requires_grad=True)  # float64 leaf
    rule = lambda g, ins, o: (np.ones(2, dtype=np.float32),)  # noqa: E731 — a rule giving float32
    saved = (SavedArray(x._data, x._version),)
    node = Node("bad", (x,), saved, SavedArray(np.array(3.0), VersionCounter()), rule)
    with pytest.raises(AutogradError, match="wrong dtype for parent"):
        run_backward(node, np.array(1.0))
    assert x.grad is None


def test_an_op_on_inputs_that_need_no_gradient_records_nothing():
    # review21 mut D4; oracle: torch — the product of two tensors without requires_grad is a leaf without
    # grad_fn
    yt = torch.tensor([1.0, 2.0]) * torch.tensor([3.0, 4.0])
    y = tl.tensor(np.array([1.0, 2.0])) * tl.tensor(np.array([3.0, 4.0]))
    expected = (yt.requires_grad, yt.grad_fn, yt.is_leaf)
    assert (y.requires_grad, y.grad_fn, y.is_leaf) == expected == (False, None, True)


def test_an_exception_thrown_into_a_decorated_generator_is_handled_under_its_mode():
    # review21 mut G3; oracle: torch.no_grad on a generator function runs every step of the body under the
    # mode,
    # generator.throw included
    @tl.no_grad
    def tl_gen():
        while True:
            try:
                yield "sent", tl.is_grad_enabled()
            except ValueError:
                yield "thrown", tl.is_grad_enabled()

    @torch.no_grad()
    def torch_gen():
        while True:
            try:
                yield "sent", torch.is_grad_enabled()
            except ValueError:
                yield "thrown", torch.is_grad_enabled()

    t = torch_gen()
    next(t)
    assert t.throw(ValueError("x")) == ("thrown", False)
    g = tl_gen()
    next(g)
    assert g.throw(ValueError("x")) == ("thrown", False)


def test_set_grad_enabled_switches_the_mode_as_torchs_does() -> None:
    """review100 L2: a bare ``set_grad_enabled(False)`` changed nothing (and ``tl.set_grad_enabled``
    did not exist), where torch's switches the mode. Oracle: torch's own grad mode, driven by the
    same calls side by side."""
    x = tl.tensor([1.0], requires_grad=True)

    def both() -> tuple[bool, bool]:
        return tl.is_grad_enabled(), torch.is_grad_enabled()

    try:
        tl.set_grad_enabled(False)
        torch.set_grad_enabled(False)
        assert both() == (False, False) and not (x * 2.0).requires_grad
        with tl.set_grad_enabled(True), torch.set_grad_enabled(True):
            assert both() == (True, True) and (x * 2.0).requires_grad
        assert both() == (False, False)  # the mode found before the with statement's call
        tl.set_grad_enabled(True)
        torch.set_grad_enabled(True)
        with tl.no_grad(), torch.no_grad():
            tl.set_grad_enabled(True)
            torch.set_grad_enabled(True)
            assert both() == (True, True)
        assert both() == (True, True)  # no_grad's exit restores what it found

        @tl.set_grad_enabled(False)
        def ours() -> bool:
            return tl.is_grad_enabled()

        @torch.set_grad_enabled(False)
        def theirs() -> bool:
            return torch.is_grad_enabled()

        assert both() == (True, True)  # decorating leaves the mode as it was
        assert (ours(), theirs()) == (False, False) and both() == (True, True)
        mode = tl.set_grad_enabled(False)
        refusal = r"^set_grad_enabled\(False\) \(a GradMode\): __exit__ without"
        with pytest.raises(RuntimeError, match=refusal):
            mode.__exit__(None, None, None)
    finally:
        tl.set_grad_enabled(True)
        torch.set_grad_enabled(True)
    assert both() == (True, True)


def test_backward_without_a_graph_names_the_likely_causes() -> None:
    """review230 F3: the refusal said only "no recorded node"."""
    from torchlean.autograd.tape import AutogradError

    plain = tl.reduce_sum(tl.tensor(np.ones(3)))
    with tl.no_grad():
        unrecorded = tl.reduce_sum(tl.tensor(np.ones(3), requires_grad=True))
    for y in (plain, unrecorded):
        with pytest.raises(AutogradError) as caught:
            y.backward()
        assert str(caught.value) == (
            "autograd: backward() on a tensor that does not require grad (no recorded node): none of the "
            "tensors it was computed from requires grad (create the leaves with requires_grad=True), or it "
            "was computed under no_grad() or detached"
        )
