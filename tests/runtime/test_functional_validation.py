"""Argument validation at the functional/dispatch boundary (the operand rule of
``torchlean.functional``'s module docstring), tensor construction and ``backward`` seeds, session
profiles, and the mask refusal being a ``TypeError`` on every runtime path.

Oracles: hand-computed values for the accepted mixed operands (and torch's ``x / 0``), the
refusals named by the operand rule, the specification's ``SpecTypeError`` for a float mask.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import torchlean as tl
from torchlean.autograd import dispatch
from torchlean.backend import profiles
from torchlean.backend.errors import GuardError, GuardTypeError, SessionError, SessionTypeError
from torchlean.backend.providers import attention_kernels
from torchlean.backend.providers.libtorch import sdpa
from torchlean.backend.providers.native_cuda import extension
from torchlean.backend.providers.native_cuda import guards as native_guards
from torchlean.backend.providers.reference import guards
from torchlean.backend.vocabulary import BackendOp
from torchlean.tensor import DeviceError, TensorError, TensorTypeError

F32 = np.float32


def _x() -> tl.Tensor:
    return tl.tensor(np.array([[1.0, -2.0], [3.0, 0.5]], dtype=F32))


def _ones(*shape: int) -> np.ndarray[Any, Any]:
    return np.ones(shape, dtype=F32)


# --------------------------------------------------------------- 1. non-Tensor operands


NON_TENSOR_CALLS: list[tuple[str, Callable[[], object], str, int, str]] = [
    ("relu-ndarray", lambda: tl.relu(_ones(3)), "relu", 0, "ndarray"),
    ("matmul-ndarray", lambda: tl.matmul(_x(), _ones(2, 2)), "matmul", 1, "ndarray"),
    ("matmul-operator-float", lambda: _x() @ 3.0, "matmul", 1, "float"),
    ("rmatmul-list", lambda: [[1.0, 2.0]] @ _x(), "matmul", 0, "list"),
    ("conv-ndarrays", lambda: tl.conv(_ones(1, 1, 4), _ones(1, 1, 2)), "conv", 0, "ndarray"),
    (
        "layer_norm-weight-ndarray",
        lambda: tl.layer_norm(tl.tensor(_ones(3, 2)), _ones(2)),
        "layer_norm",
        1,
        "ndarray",
    ),
    ("linear-bias-list", lambda: tl.linear(_x(), _x(), [1.0, 2.0]), "linear", 2, "list"),
    ("concat-mixed", lambda: tl.concat([_x(), _ones(2, 2)]), "concat", 1, "ndarray"),
    (
        "sdpa-value-ndarray",
        lambda: tl.scaled_dot_product_attention(_x(), _x(), _ones(2, 2)),
        "scaled_dot_product_attention",
        2,
        "ndarray",
    ),
]


@pytest.mark.parametrize(
    ("call", "op", "position", "kind"),
    [c[1:] for c in NON_TENSOR_CALLS],
    ids=[c[0] for c in NON_TENSOR_CALLS],
)
def test_non_tensor_operands_are_refused_naming_op_position_and_type(
    call: Callable[[], object], op: str, position: int, kind: str
) -> None:
    with pytest.raises(TensorTypeError) as info:
        call()
    message = str(info.value)
    assert message.startswith(f"{op}: input {position} must be a torchlean Tensor; got {kind} (accepted: ")
    assert "accepted: a torchlean Tensor" in message and "torchlean.tensor(" in message
    assert isinstance(info.value, TensorError) and isinstance(info.value, TypeError)


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
def test_none_is_refused_at_a_required_input_and_accepted_at_an_optional_one(profile: str) -> None:
    attention = "scaled_dot_product_attention"
    x, w = tl.tensor(np.ones((2, 3))), tl.tensor(np.ones((4, 3)))
    with tl.session(profile):
        for call, op, position in (
            (lambda: tl.matmul(x, None), "matmul", 1),  # type: ignore[arg-type]
            (lambda: tl.linear(None, w), "linear", 0),  # type: ignore[arg-type]
            (lambda: tl.scaled_dot_product_attention(x, x, None), attention, 2),  # type: ignore[arg-type]
        ):
            with pytest.raises(TensorTypeError) as info:
                call()
            assert str(info.value) == (
                f"{op}: input {position} is required: got None (accepted: a torchlean Tensor)"
            )
        # optional positions (dispatch.OPTIONAL_INPUTS): an absent bias or mask, by hand
        np.testing.assert_array_equal(tl.linear(x, w, None).numpy(), np.full((2, 4), 3.0))
        attended = tl.scaled_dot_product_attention(x, x, x, None)  # every value row is ones
        np.testing.assert_array_equal(attended.numpy(), np.ones((2, 3)))


def test_optional_inputs_are_the_kernel_parameters_that_take_none() -> None:
    """``dispatch.OPTIONAL_INPUTS`` against the reference kernels' signatures: the positional
    parameters annotated ``... | None`` (absent bias, affine weights, running statistics, mask)."""
    import inspect

    from torchlean.backend.providers.reference import kernels, spatial

    checked = 0
    for op in BackendOp:
        kernel = getattr(kernels, op.label, None) or getattr(spatial, op.label, None)
        if kernel is None:  # fft_fno and selective_scan have native-cuda kernels only
            assert op.label in ("fft_fno", "selective_scan") and op not in dispatch.OPTIONAL_INPUTS
            continue
        positional = [
            p for p in inspect.signature(kernel).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        optional = {i for i, p in enumerate(positional) if "None" in str(p.annotation)}
        assert optional == set(dispatch.OPTIONAL_INPUTS.get(op, ())), op.label
        checked += 1
    assert checked == len(BackendOp) - 2


def test_the_operand_check_runs_once_in_the_dispatcher(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[BackendOp, int]] = []
    original = dispatch.check_operands

    def spy(op: BackendOp, inputs: Any) -> None:
        calls.append((op, len(inputs)))
        original(op, inputs)

    monkeypatch.setattr(dispatch, "check_operands", spy)
    tl.relu(_x())  # host tensors on a cpu capsule: the dispatcher's inlined fast check accepts them
    with pytest.raises(TensorTypeError):
        tl.sigmoid(_ones(2))
    assert calls == [(BackendOp.SIGMOID, 1)]


def test_none_is_left_to_the_guard_and_optional_inputs_accept_it() -> None:
    dispatch.check_operands(BackendOp.LINEAR, [_x(), _x(), None])
    out = tl.linear(_x(), _x(), None)
    np.testing.assert_array_equal(out.numpy(), [[5.0, 2.0], [2.0, 9.25]])  # x @ x.T by hand


def test_binary_arithmetic_still_accepts_numbers_and_arrays() -> None:
    x = _x()
    np.testing.assert_array_equal((x + 1).numpy(), [[2.0, -1.0], [4.0, 1.5]])
    np.testing.assert_array_equal((2.0 - x).numpy(), [[1.0, 4.0], [-1.0, 1.5]])
    np.testing.assert_array_equal((x * np.array([2.0, 10.0])).numpy(), [[2.0, -20.0], [6.0, 5.0]])
    np.testing.assert_array_equal((x / 2).numpy(), [[0.5, -1.0], [1.5, 0.25]])
    np.testing.assert_array_equal((x - [1, 2]).numpy(), [[0.0, -4.0], [2.0, -1.5]])
    np.testing.assert_array_equal((x + True).numpy(), [[2.0, -1.0], [4.0, 1.5]])  # as torch: True is 1
    np.testing.assert_array_equal(tl.maximum(x, 0.75).numpy(), [[1.0, 0.75], [3.0, 0.75]])
    np.testing.assert_array_equal(tl.minimum(np.float32(0.75), x).numpy(), [[0.75, -2.0], [0.75, 0.5]])
    assert tl.mse_loss(x, [[1.0, -2.0], [3.0, 1.5]]).item() == 0.25
    assert (x + 1).dtype == np.float32


def test_division_by_the_number_zero_follows_torch() -> None:
    x = tl.tensor(np.array([1.0, -2.0, 0.0], dtype=np.float64))
    expected = (torch.tensor([1.0, -2.0, 0.0], dtype=torch.float64) / 0).numpy()
    np.testing.assert_array_equal((x / 0).numpy(), expected)
    np.testing.assert_array_equal((x / 0.0).numpy(), expected)


# --------------------------------------------------------------- 2./3. non-numeric and ragged constants


@pytest.mark.parametrize(
    "call",
    [
        lambda x: x + None,
        lambda x: x * None,
        lambda x: None - x,
        lambda x: x / None,
        lambda x: tl.maximum(x, None),
        lambda x: x + "a",
        lambda x: x - [1, "b"],
        lambda x: x * {"a": 1},
        lambda x: x + 1j,
        lambda x: tl.mse_loss(x, "target"),
    ],
    ids=[
        "add-None",
        "mul-None",
        "rsub-None",
        "div-None",
        "maximum-None",
        "add-str",
        "sub-mixed-list",
        "mul-dict",
        "add-complex",
        "mse-str",
    ],
)
def test_non_numeric_constants_are_type_errors(call: Callable[[tl.Tensor], object]) -> None:
    with pytest.raises(TensorTypeError, match=r"as a constant operand: it is not numeric \(accepted: "):
        call(_x())


def test_a_ragged_constant_is_a_tensor_error() -> None:
    with pytest.raises(
        TensorError,
        match=r"cannot use \[\[1, 2\], \[3\]\] as a constant operand: .*"
        r"rectangular shape",
    ):
        tl.add(_x(), [[1, 2], [3]])


@pytest.mark.parametrize(
    ("data", "dtype", "match"),
    [
        ([[1, 2], [3]], None, r"cannot create a tensor from list data: .*inhomogeneous.* rectangular shape"),
        ([[1.0], [2.0, 3.0]], "float64", r"cannot create a tensor from list data"),
        ("a", "float32", r"^cannot create a tensor from 'a' of type str: it is not numeric data"),
        (None, "float32", r"^cannot create a tensor from None of type NoneType: it is not numeric data"),
        (["1.5"], "float64", r"^cannot create a tensor from \['1.5'\]: its element '1.5' of type str is not"),
        ([1 + 2j], "float32", r"unsupported tensor dtype complex128"),
    ],
    ids=["ragged", "ragged-dtype", "str-cast", "None-cast", "numeric-str-cast", "complex-cast"],
)
def test_tensor_refuses_ragged_and_non_numeric_data(data: object, dtype: str | None, match: str) -> None:
    with pytest.raises(TensorError, match=match):
        tl.tensor(data, dtype=dtype)


@pytest.mark.parametrize(
    ("gradient", "match"),
    [
        ("a", r"gradient 'a' of type str is not numeric array data; accepted: a Tensor or a numeric"),
        (
            [[1, 2], [3]],
            r"gradient \[\[1, 2\], \[3\]\] of type list is not numeric array data \(.*inhomogeneous",
        ),
        ([None, None, None], r"gradient \[None, None, None\] of type list is not numeric array data"),
    ],
    ids=["str", "ragged", "None-entries"],
)
def test_backward_refuses_a_non_numeric_seed(gradient: object, match: str) -> None:
    leaf = tl.tensor(np.array([1.0, 2.0, 3.0], dtype=F32), requires_grad=True)
    y = leaf * 2.0
    with pytest.raises(TensorError, match=match + r".* shape \(3,\)"):
        y.backward(gradient=gradient)
    assert leaf.grad is None
    y.backward(gradient=[1, 0, 1])  # the graph is intact: integers are numeric
    assert leaf.grad is not None
    np.testing.assert_array_equal(leaf.grad.numpy(), [2.0, 0.0, 2.0])

def test_backward_refuses_a_torch_gradient_on_another_device() -> None:
    """As torch refuses ``y.backward(g)`` for ``g`` on another device ("invalid gradient ... expected
    device"), a torch cotangent is not copied across devices; a meta-storage output stands for a
    device other than the host here (there is no GPU)."""
    leaf = tl.Tensor._make(torch.zeros(3, device="meta"))
    leaf.requires_grad = True
    wrong_device = r"^autograd: backward\(\) got a gradient on cpu for an output on meta"
    with pytest.raises(DeviceError, match=wrong_device):
        leaf.backward(gradient=torch.ones(3))
    assert leaf.grad is None
    host = tl.tensor(np.array([1.0, 2.0, 3.0], dtype=F32), requires_grad=True)
    with pytest.raises(DeviceError, match=r"got a gradient on meta for an output on cpu; move it"):
        (host * 2.0).backward(gradient=tl.Tensor._make(torch.ones(3, device="meta")))
    with pytest.raises(TensorError, match=r"cannot copy a meta torch tensor"):
        (host * 2.0).backward(gradient=torch.ones(3, device="meta"))
    assert host.grad is None
    # a 0-d gradient is moved to the output's device, as torch moves it (and torch agrees)
    scalar = tl.Tensor._make(torch.zeros((), device="meta"))
    scalar.requires_grad = True
    scalar.backward(gradient=torch.tensor(2.0))
    assert scalar.grad is not None and scalar.grad.device == "meta" and scalar.grad.shape == ()
    torch_leaf = torch.zeros((), device="meta", requires_grad=True)
    torch_leaf.backward(torch.tensor(2.0))
    assert torch_leaf.grad is not None and torch_leaf.grad.device.type == "meta"
    with pytest.raises(RuntimeError, match=r"invalid gradient"):
        torch.zeros(3, device="meta", requires_grad=True).backward(torch.ones(3))



# --------------------------------------------------------------- 4. integer and real parameters


INT_PARAM_CALLS: list[tuple[str, Callable[[tl.Tensor], object], str]] = [
    ("reshape-float", lambda x: tl.reshape(x, (2.5, 2)), r"reshape: shape\[0\] must be an integer; got 2.5"),
    ("reshape-bool", lambda x: tl.reshape(x, (True, 4)), r"reshape: shape\[0\] must be an integer; got True"),
    ("reshape-method", lambda x: x.reshape(4.0, 1), r"reshape: shape\[0\] must be an integer; got 4.0"),
    ("reshape-int", lambda x: tl.reshape(x, 4), r"reshape: shape must be a sequence of integers; got 4"),
    ("softmax-float", lambda x: tl.softmax(x, 1.5), r"softmax: axis must be an integer; got 1.5"),
    ("softmax-bool", lambda x: tl.softmax(x, True), r"softmax: axis must be an integer; got True"),
    ("log_softmax", lambda x: tl.log_softmax(x, 0.0), r"log_softmax: axis must be an integer"),
    ("masked-softmax", lambda x: tl.hard_masked_softmax(x, [True, True], 1.0), r"hard_masked_softmax: axis"),
    ("reduce_sum", lambda x: tl.reduce_sum(x, 1.5), r"reduce_sum: axis must be an integer; got 1.5"),
    ("reduce_mean-tuple", lambda x: x.mean((0, 1.0)), r"reduce_mean: axis\[1\] must be an integer"),
    # a 0-d tensor is iterable to Python; iterating it raised "iteration over a 0-d tensor" (review236 F1)
    (
        "reduce_sum-torch-0d",
        lambda x: tl.reduce_sum(x, torch.tensor(1)),
        r"reduce_sum: axis must be an integer; got tensor\(1\)",
    ),
    ("reduce_mean-0d", lambda x: x.mean(dim=tl.tensor(1)), r"reduce_mean: axis must be an integer; got Ten"),
    ("logsumexp-0d", lambda x: tl.logsumexp(x, torch.tensor(0)), r"logsumexp: axis must be an integer"),
    ("reduce_sum-0d-in-tuple", lambda x: x.sum((torch.tensor(0),)), r"reduce_sum: axis\[0\] must be an"),
    ("permute", lambda x: x.permute(1, 0.0), r"permute: perm\[1\] must be an integer; got 0.0"),
    ("transpose", lambda x: tl.transpose(x, 0, 1.0), r"transpose: axis1 must be an integer"),
    (
        "broadcast_to",
        lambda x: tl.broadcast_to(x, (1, 2.0, 2)),
        r"broadcast_to: shape\[1\] must be an integer",
    ),
    ("concat", lambda x: tl.concat([x, x], axis=False), r"concat: axis must be an integer; got False"),
    ("slice", lambda x: tl.slice(x, (0, 0.5), (2, 2)), r"slice: starts\[1\] must be an integer; got 0.5"),
    ("gather", lambda x: tl.gather(x, [[0, 1]], 1.0), r"gather: axis must be an integer"),
    ("cross_entropy", lambda x: tl.cross_entropy(x, [0, 1], axis=-1.0), r"cross_entropy: axis must be"),
    ("layer_norm", lambda x: tl.layer_norm(x, normalized_ndim=1.0), r"layer_norm: normalized_ndim must be"),
    (
        "conv-groups",
        lambda x: tl.conv(tl.tensor(_ones(1, 1, 4)), tl.tensor(_ones(1, 1, 2)), groups=1.5),
        r"conv: groups must be an integer; got 1.5",
    ),
    ("rand_uniform", lambda x: tl.rand_uniform((2.0,)), r"rand_uniform: shape\[0\] must be an integer"),
    ("bernoulli-seed", lambda x: tl.bernoulli_mask((2,), 0.5, seed=1.0), r"bernoulli_mask: seed must be"),
]


@pytest.mark.parametrize(
    ("call", "match"), [c[1:] for c in INT_PARAM_CALLS], ids=[c[0] for c in INT_PARAM_CALLS]
)
def test_non_integer_axes_and_shapes_are_refused_not_truncated(
    call: Callable[[tl.Tensor], object], match: str
) -> None:
    counter = tl.current_session().random_counter
    with pytest.raises(TensorTypeError, match=match):
        call(_x())
    assert tl.current_session().random_counter == counter  # a refused random op draws nothing


HUGE_VIEW = np.broadcast_to(np.int64(1), (2**40,))  # 8 bytes of memory, 2**40 entries


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        # review239 F1: a set or a mapping was read in hash order (tl.permute(x, {2, 0, 1}) was the
        # identity permutation)
        (lambda x: tl.permute(x, {1, 0}), TensorTypeError,
         "permute: perm must be a sequence of integers; got {0, 1} of type set, which has no order "
         "(accepted: a tuple or a list)"),
        (lambda x: tl.reshape(x, {4: 0, 1: 0}), TensorTypeError, "reshape: shape must be a sequence of "
         "integers; got {4: 0, 1: 0} of type dict, which has no order (accepted: a tuple or a list)"),
        (lambda x: tl.reshape(x, {4: 0}.keys()), TensorTypeError, "of type dict_keys, which has no order"),
        (lambda x: tl.slice(x, frozenset({0}), (1, 1)), TensorTypeError, "slice: starts must be a sequence"),
        (lambda x: tl.rand_uniform({2, 3}), TensorTypeError, "rand_uniform: shape must be a sequence"),
        # review239 F4: a 0-d array raised numpy's "iteration over a 0-d array"
        (lambda x: tl.reshape(x, np.array(4)), TensorTypeError,
         "reshape: shape must be a sequence of integers; got array(4) of type ndarray"),
        (lambda x: tl.broadcast_to(x, torch.tensor(4)), TensorTypeError, "broadcast_to: shape must be a"),
        # review239 F2: a huge sequence was iterated entry by entry (minutes)
        (lambda x: tl.reshape(x, HUGE_VIEW), TensorError,
         "reshape: shape has 1099511627776 entries; got array([1, 1, 1, ..., 1, 1, 1], "
         "shape=(1099511627776,)) (accepted: at most 64, numpy's most axes)"),
        (lambda x: tl.permute(x, HUGE_VIEW), TensorError, "permute: perm has 1099511627776 entries"),
        (lambda x: tl.reduce_sum(x, HUGE_VIEW), TensorError, "reduce_sum: axis has 1099511627776 entries"),
        (lambda x: tl.bernoulli_mask(HUGE_VIEW, 0.5), TensorError, "bernoulli_mask: shape has 1099511627776"),
        (lambda x: tl.reshape(x, iter(range(10**12))), TensorError,
         "reshape: shape has more than 64 entries"),
    ],
)
def test_shapes_and_axes_are_ordered_sequences_of_at_most_64_entries(
    call: Callable[[tl.Tensor], object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as caught:
        call(_x())
    assert type(caught.value) is error and message in str(caught.value)


def test_generators_and_sixty_four_entries_are_still_shapes() -> None:
    x = _x()
    assert tl.reshape(x, (n for n in x.shape[::-1])).shape == x.shape[::-1]
    ones = tl.tensor(np.zeros((1,) * 64))
    assert tl.permute(ones, tuple(range(63, -1, -1))).shape == (1,) * 64


def test_numpy_integers_are_integers() -> None:
    x = _x()
    np.testing.assert_array_equal(tl.reshape(x, np.array([4, 1])).numpy(), x.numpy().reshape(4, 1))
    np.testing.assert_array_equal(tl.softmax(x, np.int64(0)).numpy(), tl.softmax(x, 0).numpy())
    np.testing.assert_array_equal(x.sum(np.int32(1)).numpy(), [-1.0, 3.5])


GATHER_TORCH_ORDER = (
    r"(?s)gather: axis must be an integer; got .* of type {kind} \(accepted: int or a numpy integer; "
    r"floats are not truncated and bools are refused\); index is the integer 1 and axis is array "
    r"data: tl\.gather takes \(x, index, axis\), axis last, unlike torch\.gather\(x, dim, index\) "
    r"and the method t\.gather\(dim, index\)$"
)
SCATTER_TORCH_ORDER = (
    r"(?s)scatter_add: axis must be an integer; got .* of type {kind} \(accepted: int or a numpy "
    r"integer; floats are not truncated and bools are refused\); index is the integer 0 and axis "
    r"is array data: tl\.scatter_add takes \(base, index, src, axis\), axis last, unlike "
    r"torch\.scatter_add\(base, dim, index, src\) and the method t\.scatter_add\(dim, index, src\)$"
)


def test_gather_and_scatter_add_in_torch_argument_order_are_refused_naming_both_orders() -> None:
    """review46 F2: ``tl.gather(x, index, axis)`` and ``tl.scatter_add(base, index, src, axis)``
    take the axis last; a call ported in torch's order (an integer where the index goes, array
    data where the axis goes) keeps the integer-axis refusal and adds both orders. Oracle: torch
    accepts exactly those calls in its own order, and the same data in torchlean's order gives
    torch's values."""
    data = np.arange(12.0).reshape(3, 4)
    x = tl.tensor(data)
    idx = np.array([[0, 2], [1, 1], [3, 0]])
    want = torch.gather(torch.tensor(data), 1, torch.tensor(idx)).numpy()
    np.testing.assert_array_equal(tl.gather(x, idx, 1).numpy(), want)
    np.testing.assert_array_equal(x.gather(1, idx).numpy(), want)  # the method keeps torch's order
    for axis, kind in ((idx, "ndarray"), (tl.tensor(idx), "Tensor"), (idx.tolist(), "list")):
        with pytest.raises(TensorTypeError, match=GATHER_TORCH_ORDER.format(kind=kind)):
            tl.gather(x, 1, axis)  # type: ignore[arg-type]
    with pytest.raises(TensorTypeError, match=GATHER_TORCH_ORDER.format(kind="ndarray")):
        x.gather(idx, 1)  # type: ignore[arg-type]  # the functional order given to the method
    with pytest.raises(TensorTypeError, match=GATHER_TORCH_ORDER.format(kind="list")):
        tl.gather(x, np.int64(1), [[0]])  # type: ignore[arg-type]  # a numpy integer index too

    base = tl.tensor(np.zeros((2, 3)))
    src = tl.tensor(np.ones((2, 3)))
    scatter_idx = np.array([[0, 1, 1], [1, 0, 0]])
    expected = torch.scatter_add(torch.zeros(2, 3, dtype=torch.float64), 0, torch.tensor(scatter_idx),
                                 torch.ones(2, 3, dtype=torch.float64)).numpy()
    np.testing.assert_array_equal(tl.scatter_add(base, scatter_idx, src, 0).numpy(), expected)
    with pytest.raises(TensorTypeError, match=SCATTER_TORCH_ORDER.format(kind="Tensor")):
        tl.scatter_add(base, 0, scatter_idx, src)  # type: ignore[arg-type]
    with pytest.raises(TensorTypeError, match=SCATTER_TORCH_ORDER.format(kind="ndarray")):
        base.scatter_add(scatter_idx, 0, src)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "call",
    [
        lambda x: tl.gather(x, [[0, 1]], 1.0),  # type: ignore[arg-type]  # a float axis
        lambda x: tl.gather(x, 1, 1.0),  # type: ignore[arg-type]  # no array data as axis
        lambda x: tl.gather(x, True, np.array([[0, 1]])),  # type: ignore[arg-type]  # a bool index
        lambda x: tl.scatter_add(x, [[0, 1]], x, x),  # array data in both slots
    ],
)
def test_other_non_integer_axes_of_gather_and_scatter_add_get_no_order_hint(
    call: Callable[[tl.Tensor], object],
) -> None:
    with pytest.raises(TensorTypeError, match=r"axis must be an integer") as info:
        call(_x())
    assert "axis last" not in str(info.value) and "torch." not in str(info.value)


REAL_PARAM_CALLS: list[tuple[str, Callable[[tl.Tensor], object], str]] = [
    ("scale-str", lambda x: tl.scale(x, "2"), r"scale: factor must be a real number; got '2' of type str"),
    ("scale-None", lambda x: tl.scale(x, None), r"scale: factor must be a real number; got None"),
    ("clamp-bool", lambda x: tl.clamp(x, lo=True), r"clamp: lo must be a real number; got True"),
    ("safe_log", lambda x: tl.safe_log(x, "1e-3"), r"safe_log: eps must be a real number"),
    ("dropout-str", lambda x: tl.dropout(x, "0.5"), r"dropout: p must be a real number"),
    ("sdpa-scale", lambda x: tl.scaled_dot_product_attention(x, x, x, scale="1"), r"scale must be a real"),
]


@pytest.mark.parametrize(
    ("call", "match"), [c[1:] for c in REAL_PARAM_CALLS], ids=[c[0] for c in REAL_PARAM_CALLS]
)
def test_real_parameters_are_not_parsed_from_strings(call: Callable[[tl.Tensor], object], match: str) -> None:
    with pytest.raises(TensorTypeError, match=match):
        call(_x())


# --------------------------------------------------------------- 5. session profiles


@pytest.mark.parametrize("profile", [123, None, 1.5, object()], ids=["int", "None", "float", "object"])
def test_session_refuses_a_profile_that_is_neither_a_name_nor_a_profile(profile: object) -> None:
    with pytest.raises(SessionTypeError) as info:
        tl.session(profile)
    assert isinstance(info.value, SessionError) and isinstance(info.value, TypeError)
    message = str(info.value)
    assert f"profile {profile!r} of type {type(profile).__name__} is not accepted" in message
    assert " | ".join(profiles.names()) in message and "or a BackendProfile" in message


def test_session_still_accepts_names_and_profiles() -> None:
    with tl.session(profiles.get("checked_cpu")) as s:
        tl.relu(_x())
    assert s.profile.name == "checked_cpu"


# --------------------------------------------------------------- 7. non-boolean masks are TypeErrors


FLOAT_MASK = np.ones((2, 2), dtype=F32)


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu", "libtorch_forward_cpu"])
@pytest.mark.parametrize(
    ("mask", "message"),
    [
        (FLOAT_MASK, "mask has dtype float32; accepted: bool; a mask must be boolean (True = allowed, "
         "False = blocked): a float array is an additive bias, not a mask (convert torch's additive "
         "mask, 0 = attend and -inf = blocked, with mask == 0, and a 0/1 keep-mask, 1 = attend, with "
         "mask == 1; or add the bias to the scores)"),
        (np.ones((2, 2), dtype=np.int64), "mask has dtype int64; accepted: bool; a mask must be boolean "
         "(True = allowed, False = blocked; convert 0/1 integers with mask.astype(bool))"),
    ],
)  # fmt: skip
def test_a_non_boolean_attention_mask_is_a_type_error_in_every_cpu_profile(
    profile: str, mask: np.ndarray, message: str
) -> None:
    """The same words in every CPU profile: the LibTorch bridge runs ``reference.attention``'s
    guard on numpy operands first."""
    x = _x()
    with tl.session(profile), pytest.raises(GuardTypeError) as info:
        tl.scaled_dot_product_attention(x, x, x, mask=mask)
    assert str(info.value) == f"scaled_dot_product_attention: {message}"
    assert isinstance(info.value, TypeError) and isinstance(info.value, GuardError)


def test_the_float_mask_hint_converts_torchs_additive_and_keep_masks_to_torchs_results() -> None:
    """review89 F1: the hint said ``mask.astype(bool)``, which turns torch's additive mask (0 = attend,
    -inf = blocked) into True where it is blocked. Following the hint must give torch's float64 result
    for both float forms the message names."""
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 4, 4)) for _ in range(3))
    additive = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)  # 0 / -inf
    keep = np.tril(np.ones((4, 4)))  # 0/1, 1 = attend
    with pytest.raises(GuardTypeError) as info:
        tl.scaled_dot_product_attention(tl.tensor(q), tl.tensor(k), tl.tensor(v), additive.numpy())
    assert "with mask == 0" in str(info.value) and "with mask == 1" in str(info.value)
    t = [torch.tensor(a) for a in (q, k, v)]
    expected = torch.nn.functional.scaled_dot_product_attention(*t, attn_mask=additive).numpy()
    for converted in (additive.numpy() == 0, keep == 1):
        out = tl.scaled_dot_product_attention(tl.tensor(q), tl.tensor(k), tl.tensor(v), converted).numpy()
        np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
    x = rng.standard_normal((3, 4, 4))
    with pytest.raises(GuardTypeError, match="with mask == 0"):
        tl.hard_masked_softmax(tl.tensor(x), additive.numpy())
    softmax = tl.hard_masked_softmax(tl.tensor(x), additive.numpy() == 0).numpy()
    np.testing.assert_allclose(softmax, torch.softmax(torch.tensor(x) + additive, -1).numpy(), atol=1e-15)
    with pytest.raises(GuardTypeError, match=r"with mask == 0, and a 0/1 keep-mask with mask == 1\)"):
        sdpa.check_sdpa_inputs(*t, additive)  # torch tensors (the CUDA bridge) say it too


def test_a_float_softmax_mask_is_a_type_error_like_the_spec() -> None:
    from torchlean.spec import masks
    from torchlean.spec.errors import SpecTypeError

    x = _x()
    with pytest.raises(TypeError) as runtime:
        tl.hard_masked_softmax(x, FLOAT_MASK)
    assert isinstance(runtime.value, GuardTypeError)
    assert "hard_masked_softmax: mask has dtype float32; accepted: bool; a mask must be boolean" in str(
        runtime.value
    )
    with pytest.raises(SpecTypeError):  # the specification refuses the same input as a TypeError
        masks.hard_masked_softmax(x.numpy(), FLOAT_MASK)


def test_a_missing_softmax_mask_names_none_and_the_maskless_op() -> None:
    """``hard_masked_softmax(x, None)`` said "mask has dtype object" (None became an object array);
    the specification reads None as no mask, the runtime op requires one and names ``softmax``."""
    with pytest.raises(GuardTypeError) as info:
        tl.hard_masked_softmax(_x(), None)  # type: ignore[arg-type]
    assert str(info.value).startswith("hard_masked_softmax: mask is None; accepted: a boolean mask")
    assert "softmax(x, axis)" in str(info.value) and "object" not in str(info.value)


def test_every_mask_guard_refuses_with_a_guard_type_error(monkeypatch: pytest.MonkeyPatch) -> None:
    q = np.ones((2, 3, 4), dtype=F32)
    with pytest.raises(GuardTypeError, match=r"mask has dtype float32; accepted: bool"):
        guards.check_scaled_dot_product_attention(q, q, q, np.ones((3, 3), dtype=F32))
    with pytest.raises(GuardTypeError, match=r"mask has dtype int64; accepted: bool"):
        guards.check_canonical_layout(np.ones(3, dtype=np.int64), op="op", name="mask", role="mask")
    with pytest.raises(GuardError) as not_a_mask:  # other dtype refusals stay plain GuardErrors
        guards.check_canonical_layout(np.ones(3, dtype=np.int64), op="op", name="x", role="float")
    assert not isinstance(not_a_mask.value, TypeError)
    with pytest.raises(GuardTypeError, match=r"^scaled_dot_product_attention: mask has dtype float32"):
        sdpa.check_sdpa_inputs(q, q, q, np.ones((3, 3), dtype=F32))  # numpy: reference.attention's guard
    with pytest.raises(GuardTypeError) as text_mask:  # no conversion hint: '0'.astype(bool) is True
        guards.check_canonical_layout(np.array(["0", "1"]), op="op", name="mask", role="mask")
    assert str(text_mask.value) == (
        "op: mask has dtype <U1; accepted: bool; a mask must be boolean (True = allowed, False = blocked)"
    )
    t = torch.ones(2, 3, 4)
    with pytest.raises(GuardTypeError, match=r"^LibTorch SDPA: the mask must be a boolean array"):
        sdpa.check_sdpa_inputs(t, t, t, torch.ones(3, 3))  # torch tensors (the CUDA bridge)
    with pytest.raises(GuardTypeError) as int_mask:  # an integer mask is no additive bias
        sdpa.check_sdpa_inputs(t, t, t, torch.ones(3, 3, dtype=torch.int64))
    assert str(int_mask.value).endswith("got tensor of shape (3, 3) and dtype int64 on cpu")
    with pytest.raises(GuardTypeError, match=r"mask has dtype float32 \(accepted: bool, True = allowed"):
        attention_kernels.check_composed_attention(t, t, t, torch.ones(3, 3))
    monkeypatch.setattr(extension, "expected_device_type", lambda: "cpu")  # CPU tensors pass as the device
    with pytest.raises(
        GuardTypeError, match=r"native_cuda.hard_masked_softmax: mask has dtype float32 \(accepted: bool"
    ):
        native_guards.check_launch("hard_masked_softmax", {"x": t, "mask": t}, masks=("mask",))


@pytest.mark.parametrize(
    ("call", "prefix"),
    [
        (lambda: tl.cross_entropy(1.0, [0]), "cross_entropy: logits must be a torchlean Tensor; got float"),
        (
            lambda: tl.cross_entropy([[1.0, 2.0]], [0]),
            "cross_entropy: logits must be a torchlean Tensor; got list",
        ),
        (lambda: tl.transpose(np.ones((2, 2)), 0, 1), "transpose: x must be a torchlean Tensor; got ndarray"),
        (lambda: tl.gather(np.ones(3), [0], 0), "gather: x must be a torchlean Tensor; got ndarray"),
        (
            lambda: tl.hard_masked_softmax(np.ones(3), [True, True, True]),
            "hard_masked_softmax: x must be a torchlean Tensor; got ndarray",
        ),
        (
            lambda: tl.scatter_add(np.ones(3), [0], tl.tensor([1.0]), 0),
            "scatter_add: base must be a torchlean Tensor; got ndarray",
        ),
    ],
)
def test_functions_that_read_their_first_operand_refuse_non_tensors(
    call: Callable[[], object], prefix: str
) -> None:
    with pytest.raises(TensorTypeError) as info:
        call()
    assert str(info.value).startswith(prefix)


# --------------------------------------------------------------- 6. axes are refused, never wrapped


def _logits() -> tl.Tensor:
    return tl.tensor(np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=np.float64))


AXIS_CALLS: list[tuple[str, Callable[[], object], Callable[[], object], str]] = [
    ("transpose-0-5", lambda: tl.transpose(_x(), 0, 5), lambda: torch.ones(2, 2).transpose(0, 5), "axis1 5"),
    ("method-7-8", lambda: _x().transpose(7, 8), lambda: torch.ones(2, 2).transpose(7, 8), "axis0 7"),
    (
        "transpose--3",
        lambda: tl.transpose(_x(), -3, 0),
        lambda: torch.ones(2, 2).transpose(-3, 0),
        "axis0 -3",
    ),
    (
        "cross_entropy-5",
        lambda: tl.cross_entropy(_logits(), np.array([0, 1]), axis=5),
        lambda: torch.log_softmax(torch.ones(2, 3), 5),
        "axis 5",
    ),
    (
        "cross_entropy--4",
        lambda: tl.cross_entropy(_logits(), np.array([0, 1, 1]), axis=-4),
        lambda: torch.log_softmax(torch.ones(2, 3), -4),
        "axis -4",
    ),
]


@pytest.mark.parametrize(
    ("call", "torch_call", "what"), [c[1:] for c in AXIS_CALLS], ids=[c[0] for c in AXIS_CALLS]
)
def test_out_of_range_axes_are_refused_like_softmax(
    call: Callable[[], object], torch_call: Callable[[], object], what: str
) -> None:
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch_call()
    expected = rf"{what} is out of range for a rank-2 input \(accepted: an integer in \[-2, 1\]\)"
    with pytest.raises(GuardError, match=expected):
        call()
    with pytest.raises(GuardError, match=r"softmax: axis 5 is out of range for a rank-2 input \(accepted"):
        tl.softmax(_x(), 5)  # the wording reused


def test_transpose_matches_torch_on_every_axis_pair_and_refuses_the_rest() -> None:
    base = np.arange(24.0).reshape(2, 3, 4)
    x, tx = tl.tensor(base), torch.from_numpy(base)
    for a in range(-3, 3):
        for b in range(-3, 3):
            np.testing.assert_array_equal(tl.transpose(x, a, b).numpy(), tx.transpose(a, b).numpy())
    for a, b, what in [(3, 0, "axis0 3"), (0, -4, "axis1 -4"), (1, 9, "axis1 9")]:
        with pytest.raises(GuardError, match=rf"transpose: {what} is out of range for a rank-3 input"):
            x.transpose(a, b)
    # a rank-0 input takes [-1, 0], as torch's (review52 F10); outside it is refused
    assert tl.transpose(tl.tensor(1.0), 0, -1).tolist() == torch.tensor(1.0).transpose(0, -1).tolist()
    expected = r"transpose: axis0 1 is out of range for a rank-0 input \(accepted: an integer in \[-1, 0\]\)"
    with pytest.raises(GuardError, match=expected):
        tl.transpose(tl.tensor(1.0), 1, 0)



def test_transpose_checks_its_axes_by_the_tensor_dims_rule_at_every_rank() -> None:
    """transpose's range check is the tensor methods' (``tensor._dim``, torch's 0-d range ``[-1, 0]``
    from ``extent = max(ndim, 1)``) at rank 0 and above: one wording, each axis checked in turn, an
    axis of thousands of digits named by its size (before, Python's int-to-str limit raised a bare
    ValueError while the message was formatted)."""
    huge = 10**5000
    rank2, rank0 = tl.tensor(np.ones((2, 3))), tl.tensor(1.0)
    for x, rank, accepted in ((rank2, 2, r"\[-2, 1\]"), (rank0, 0, r"\[-1, 0\]")):
        expected = (
            rf"^transpose: axis1 an integer of about 5001 digits is out of range for a rank-{rank} input "
            rf"\(accepted: an integer in {accepted}\)$"
        )
        with pytest.raises(GuardError, match=expected):
            tl.transpose(x, 0, huge)
    with pytest.raises(GuardError, match=r"^transpose: axis1 -2 is out of range for a rank-0 input \("):
        tl.transpose(rank0, np.int64(0), np.int64(-2))
    with pytest.raises(TensorTypeError, match=r"^transpose: axis0 must be an integer; got 0.0 of type"):
        tl.transpose(rank0, 0.0, 5)  # axis0's type is checked before axis1's range
    swapped = tl.transpose(tl.tensor(np.arange(6.0).reshape(2, 3)), -1, 0)
    assert swapped.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]


def test_cross_entropy_axes_match_torch_in_range_and_are_refused_outside() -> None:
    logits, target = _logits(), np.array([2, 0])
    tlog = torch.from_numpy(np.array(logits.numpy()))
    want = torch.nn.functional.cross_entropy(tlog, torch.from_numpy(target)).item()
    for axis in (1, -1):
        assert tl.cross_entropy(logits, target, axis=axis).item() == pytest.approx(want, rel=1e-15)
    # classes on axis 0 (= -2): torch's class axis is 1, so transpose the torch input
    columns = np.array([0, 1, 1])
    want0 = torch.nn.functional.cross_entropy(tlog.T, torch.from_numpy(columns)).item()
    for axis in (0, -2):
        assert tl.cross_entropy(logits, columns, axis=axis).item() == pytest.approx(want0, rel=1e-15)
    for axis in (2, -3):
        with pytest.raises(GuardError, match=rf"cross_entropy: axis {axis} is out of range for a rank-2"):
            tl.cross_entropy(logits, columns, axis=axis)


@pytest.mark.parametrize("shape", [(5,), (2, 3), (2, 3, 5), (2, 4, 4, 4)], ids=str)
def test_cross_entropy_defaults_to_torchs_class_axis(shape: tuple[int, ...]) -> None:
    """Classes on axis 1 (axis 0 unbatched) by default, as torch: (2, 4, 4, 4) logits with (2, 4, 4)
    indices fit the last axis too, and probabilities fit any axis, so only the values can tell."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal(shape)
    class_axis = 1 if len(shape) >= 2 else 0
    indices = rng.integers(0, shape[class_axis], size=shape[:class_axis] + shape[class_axis + 1 :])
    probabilities = rng.random(shape)
    probabilities /= probabilities.sum(axis=class_axis, keepdims=True)
    for target in (indices, probabilities):
        want = torch.nn.functional.cross_entropy(torch.from_numpy(x), torch.from_numpy(target)).item()
        assert tl.cross_entropy(tl.tensor(x), target).item() == pytest.approx(want, rel=1e-13)


def test_cross_entropy_index_misfit_names_the_class_axis() -> None:
    """Indices laid out for classes on the last axis (torchlean's default before) say which axis
    the classes are read from and how to choose another."""
    with pytest.raises(tl.TensorError) as info:
        tl.cross_entropy(tl.tensor(np.zeros((2, 5, 7))), np.zeros((2, 5), dtype=np.int64))
    assert str(info.value) == (
        "cross_entropy: class indices of shape (2, 5) do not fit logits of shape (2, 5, 7) with classes "
        "along axis 1 (expected (2, 7); pass axis= for another class axis)"
    )
    last = tl.cross_entropy(tl.tensor(np.zeros((2, 5, 7))), np.zeros((2, 5), dtype=np.int64), axis=-1)
    assert last.item() == pytest.approx(np.log(7.0), rel=1e-15)  # uniform over 7 classes


def test_cross_entropy_of_class_ids_read_as_floats_names_the_cast() -> None:
    """review123 F3: ids read with np.loadtxt are float64, which cross_entropy (as torch) reads as
    probabilities; whole numbers of one rank fewer than the logits get the cast that Trainer.fit
    names, other float targets of the wrong shape only the shape."""
    logits = tl.tensor(np.zeros((4, 3), dtype=np.float32))
    shapes = "cross_entropy: class probabilities of shape (4,) must have the logits' shape (4, 3)"
    cast = "; these hold whole numbers, as class indices do: integral values can be cast with "
    cast += ".astype(np.int64)"
    with pytest.raises(TensorError, match=re.escape(shapes + cast)):
        tl.cross_entropy(logits, np.array([0.0, 1.0, 2.0, 1.0]))
    for target in (np.array([0.5, 1.0, 2.0, 1.0]), np.array([0.0, np.nan, 2.0, 1.0])):
        with pytest.raises(TensorError, match=re.escape(shapes) + "$"):
            tl.cross_entropy(logits, target)
    with pytest.raises(TensorError, match=r"shape \(4, 2\) must have the logits' shape \(4, 3\)$"):
        tl.cross_entropy(logits, np.zeros((4, 2)))
    # review126 F2: only where the cast is all it takes (the logits' shape without the class axis)
    for wrong, target in (
        (logits, np.array([0.0, 1.0, 2.0])),  # 3 ids for 4 rows
        (tl.tensor(np.zeros((2, 3, 5), dtype=np.float32)), np.ones((2, 3))),  # classes on axis 1: (2, 5)
        (logits, np.zeros((0,))),  # empty: whole numbers only vacuously
    ):
        with pytest.raises(TensorError, match=r"must have the logits' shape \([0-9, ]*\)$"):
            tl.cross_entropy(wrong, target)
    with pytest.raises(TensorError, match=re.escape(cast)):  # classes on axis 1 of (2, 3, 5): ids (2, 5)
        tl.cross_entropy(tl.tensor(np.zeros((2, 3, 5), dtype=np.float32)), np.ones((2, 5)))
    assert tl.cross_entropy(logits, np.array([0, 1, 2, 1])).item() == pytest.approx(math.log(3))


def test_cross_entropy_of_0d_logits_says_they_need_a_class_axis() -> None:
    with pytest.raises(IndexError, match="no dimensions"):  # torch refuses 0-d logits too
        torch.nn.functional.cross_entropy(torch.tensor(1.0), torch.tensor(0.5))
    with pytest.raises(tl.TensorError) as info:
        tl.cross_entropy(tl.tensor(1.0), np.array(0))
    assert str(info.value) == (
        "cross_entropy: logits must have a class axis (accepted: rank >= 1, as (C,), (N, C) or "
        "(N, C, d1, ...)); got a 0-d tensor"
    )


def test_cross_entropy_probabilities_of_another_dtype_are_named_as_the_target() -> None:
    """A float32 probability Tensor against float64 logits is refused as the target's dtype (it
    read as the inner ``mul``'s operands, seemingly blaming the logits); numpy probabilities are
    cast."""
    logits = tl.tensor(np.zeros((2, 3)))
    with pytest.raises(GuardError) as info:
        tl.cross_entropy(logits, tl.tensor(np.full((2, 3), 1 / 3, dtype=np.float32)))
    assert str(info.value) == (
        "cross_entropy: the class probabilities have dtype float32 but the logits float64 (accepted: a "
        "probability Tensor of the logits' dtype, or numpy probabilities, which are cast to it)"
    )
    cast = tl.cross_entropy(logits, np.full((2, 3), 1 / 3, dtype=np.float32)).item()
    assert cast == pytest.approx(np.log(3.0), rel=1e-7)  # uniform logits: log 3 (float32 1/3 in the target)


# --------------------------------------------------------------- 7. non-finite and huge Python factors


VALUES = [0.0, 1.0, -2.0, np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("c", [math.inf, -math.inf, math.nan], ids=["inf", "-inf", "nan"])
def test_non_finite_number_factors_follow_torch(dtype: type, c: float) -> None:
    x = tl.tensor(np.array(VALUES, dtype=dtype))
    tx = torch.tensor(VALUES, dtype=torch.float32 if dtype is np.float32 else torch.float64)
    for ours, theirs in [
        (x * c, tx * c),
        (c * x, c * tx),
        (tl.mul(x, c), torch.mul(tx, c)),
        (x / c, tx / c),
    ]:
        assert ours.dtype == dtype
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_a_non_finite_factor_records_mul_and_a_finite_one_scale() -> None:
    x = tl.tensor([0.0, 1.0])
    with tl.session() as s:
        x * math.inf
    assert [k.op.label for k in s.selected] == ["mul"]
    with tl.session() as s:
        x / math.nan
    assert [k.op.label for k in s.selected] == ["inv", "mul"]
    with tl.session() as s:
        x * 2.5
        x / 4
    assert [k.op.label for k in s.selected] == ["scale"]


def test_the_gradient_through_an_infinite_factor_is_torchs() -> None:
    x = tl.tensor(np.array([0.5, -1.0]), requires_grad=True)
    tx = torch.tensor([0.5, -1.0], dtype=torch.float64, requires_grad=True)
    (x * math.inf).sum().backward()
    (tx * math.inf).sum().backward()
    assert x.grad is not None and tx.grad is not None
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())  # [inf, inf]


def test_division_by_a_number_beyond_float32_follows_torch() -> None:
    values = [0.0, 1.0, -3.0, np.inf]
    x, tx = tl.tensor(np.array(values, dtype=F32)), torch.tensor(values, dtype=torch.float32)
    for divisor in (1e39, -1e300):  # finite in float64, inf once rounded to float32 (as torch rounds it)
        np.testing.assert_array_equal((x / divisor).numpy(), (tx / divisor).numpy())


HUGE_INT_CALLS: list[tuple[str, Callable[[tl.Tensor], object]]] = [
    ("mul", lambda x: x * 10**400),
    ("rmul", lambda x: 10**400 * x),
    ("div", lambda x: x / 10**400),
    ("rdiv", lambda x: 10**400 / x),
    ("add", lambda x: x + 10**400),
    ("sub-list", lambda x: x - [1, 10**400]),
    ("maximum", lambda x: tl.maximum(x, -(10**400))),
    ("mse", lambda x: tl.mse_loss(x, 10**400)),
]


@pytest.mark.parametrize("call", [c[1] for c in HUGE_INT_CALLS], ids=[c[0] for c in HUGE_INT_CALLS])
def test_integers_that_do_not_fit_the_dtype_are_tensor_errors(call: Callable[[tl.Tensor], object]) -> None:
    x = tl.tensor(np.array([1.0, 2.0], dtype=np.float64))
    with pytest.raises(OverflowError):  # torch refuses them too
        torch.ones(2, dtype=torch.float64) * 10**400
    refusal = (
        r"the integer -?1000000.* \(40[12] digits\) does not fit the tensor's dtype float64 \(accepted: "
        r"integers that round to a finite float64, of magnitude below about 1\.7976931e\+308\)"
    )
    with pytest.raises(TensorError, match=refusal):
        call(x)


def test_an_integer_beyond_float32_does_not_fit_a_float32_tensor() -> None:
    x = _x()
    for call in (lambda: x * 2**200, lambda: x + 2**200, lambda: x / -(2**200)):
        with pytest.raises(TensorError, match=r"\(61 digits\) does not fit the tensor's dtype float32"):
            call()
    with pytest.raises(TensorError, match=r"scale: factor = 1000.* does not fit a float64"):
        tl.scale(x, 10**400)
    with pytest.raises(TensorError) as info:  # past Python's 4300-digit str limit: named by size
        x * -(10**5000)
    assert str(info.value).startswith(
        "a negative integer of about 5001 digits does not fit the tensor's dtype"
    )


def test_integers_beyond_int64_that_fit_the_dtype_are_values() -> None:
    x = _x()
    big = 2**70  # numpy holds it only as an object; it is exactly representable in float32
    np.testing.assert_array_equal((x + big).numpy(), x.numpy() + np.float32(big))
    np.testing.assert_array_equal((x - [big, 1]).numpy(), x.numpy() - np.array([big, 1], dtype=F32))
    np.testing.assert_array_equal((x * big).numpy(), x.numpy() * np.float32(big))


# --------------------------------------------------------------- 8. mse_loss with a number target


@pytest.mark.parametrize("target", [1.0, 2, np.float64(-0.5), np.float32(0.25)], ids=repr)
def test_mse_loss_broadcasts_a_number_target_like_torch(target: float) -> None:
    data = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 4.0]])
    x = tl.tensor(data, requires_grad=True)
    tx = torch.tensor(data, requires_grad=True)
    with tl.session() as s:
        loss = tl.mse_loss(x, target)
    assert [k.op.label for k in s.selected] == ["mse_loss"]
    want = torch.nn.functional.mse_loss(tx, torch.full_like(tx, float(target)))
    loss.backward()
    want.backward()
    assert loss.shape == () and loss.dtype == np.float64
    assert loss.item() == pytest.approx(want.item(), rel=1e-15)
    assert x.grad is not None and tx.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-15)
    # the number may stand on either side (squared differences are symmetric)
    assert tl.mse_loss(target, x.detach()).item() == pytest.approx(want.item(), rel=1e-15)
    with pytest.raises(GuardError, match=r"mse_loss does not broadcast"):  # arrays still must match
        tl.mse_loss(x, [1.0, 2.0])


# --------------------------------------------------------------- 9. seeds below 2**64


@pytest.mark.parametrize(
    "call",
    [
        lambda seed: tl.rand_uniform((3,), seed=seed),
        lambda seed: tl.bernoulli_mask((3,), 0.5, seed=seed),
        lambda seed: tl.dropout(_x(), 0.5, seed=seed),
    ],
    ids=["rand_uniform", "bernoulli_mask", "dropout"],
)
def test_seeds_at_or_beyond_2_pow_64_are_refused_not_wrapped(call: Callable[[int], object]) -> None:
    counter = tl.current_session().random_counter
    for seed in (2**64, 2**64 + 5):
        expected = rf"seed = {seed} is out of range \(accepted: integers in \[0, 2\*\*64 - 1\]"
        with pytest.raises(GuardError, match=expected):
            call(seed)
    assert tl.current_session().random_counter == counter  # a refused call draws nothing
    call(2**64 - 1)  # the largest accepted seed
    with pytest.raises(GuardError, match=r"seed = -1 is negative"):
        call(-1)


def test_a_session_seed_beyond_2_pow_64_is_refused_at_the_random_op() -> None:
    """Opening refuses such a seed and a session's seed cannot be assigned (review152 F1); one
    written past both into the private field is still refused at the op."""
    with tl.session() as s:
        with pytest.raises(AttributeError, match=r"Session\.seed is fixed when the session opens"):
            s.seed = 2**64 + 5  # type: ignore[assignment]
        assert s.seed == 0
        s._seed = 2**64 + 5
        with pytest.raises(GuardError, match=r"rand_uniform: session seed = 1844"):
            tl.rand_uniform((2,))


# --------------------------------------------------------------- 10. flags must be bools


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda x: tl.reduce_sum(x, 0, keepdims="yes"), r"reduce_sum: keepdims must be a bool; got 'yes'"),
        (lambda x: x.mean(0, keepdims=1), r"reduce_mean: keepdims must be a bool; got 1 of type int"),
        (lambda x: tl.dropout(x, 0.5, training="no"), r"dropout: training must be a bool; got 'no'"),
        (
            lambda x: tl.batch_norm(tl.reshape(x, (2, 2, 1)), training=0),
            r"batch_norm: training must be a bool; got 0",
        ),
    ],
    ids=["reduce_sum", "mean-method", "dropout", "batch_norm"],
)
def test_flags_accept_only_bools(call: Callable[[tl.Tensor], object], match: str) -> None:
    with pytest.raises(TypeError):
        torch.sum(torch.ones(2, 2), 0, keepdim="yes")  # type: ignore[call-overload]
    with pytest.raises(TensorTypeError, match=match):
        call(_x())
    x = _x()  # numpy bools are bools
    assert tl.reduce_sum(x, 0, keepdims=np.True_).shape == (1, 2)
    assert tl.dropout(x, 0.5, training=np.False_) is x


def test_a_torch_tensor_operand_is_named_with_its_conversion():
    """review27_user F3: 'got Tensor (accepted: a Tensor ...)' contradicted itself for a torch tensor."""
    x = tl.tensor(np.ones((2, 3)))
    with pytest.raises(tl.TensorTypeError, match=r"got torch\.Tensor \(a torch tensor: convert it with "
                       r"torchlean\.from_torch\(t\)\) \(accepted: a torchlean Tensor"):
        tl.matmul(x, torch.ones(3, dtype=torch.float64))
    with pytest.raises(tl.TensorTypeError, match=r"x must be a torchlean Tensor; got torch\.Tensor \(a "):
        tl.transpose(torch.ones(2, 2), 0, 1)


# ------------------------------------- review46 F1: the elementwise ops raise what they document

UNARY_ELEMENTWISE = ["abs", "exp", "log", "sqrt", "neg", "relu", "gelu", "tanh", "sigmoid", "sin",
                     "cos", "inv", "softplus"]
BINARY_ELEMENTWISE = ["add", "sub", "maximum", "minimum"]


@pytest.mark.parametrize("name", UNARY_ELEMENTWISE)
def test_unary_elementwise_ops_raise_what_their_docstrings_list(name: str) -> None:
    """Each documented ``Raises`` entry, run: int64 and bool inputs are ``GuardError`` s naming the
    dtype and the function (``neg``'s also ``scale``, the op it records), a non-Tensor is a
    ``TensorTypeError``; a float input keeps its shape and dtype."""
    fn = getattr(tl, name)
    doc = " ".join(fn.__doc__.split())
    assert "GuardError: an int64" in doc and "TensorTypeError: ``x`` is not a Tensor" in doc
    assert "Returns x's shape and dtype (float32 or float64)" in doc
    for data, dtype in (([1, 2], "int64"), ([True, False], "bool")):
        recorded = r" \(neg records scale by -1" if name == "neg" else ""
        refusal = rf"^{name}: input x has dtype {dtype}; accepted: float32 or float64{recorded}"
        with pytest.raises(GuardError, match=refusal):
            fn(tl.tensor(data))
    for operand in (np.ones(3), 1.5, torch.ones(3)):
        with pytest.raises(TensorTypeError, match="must be a torchlean Tensor"):
            fn(operand)
    for dtype in (np.float32, np.float64):
        out = fn(tl.tensor(np.full((2, 3), 0.5, dtype=dtype)))
        assert (out.shape, out.dtype) == ((2, 3), np.dtype(dtype))


def test_an_int_tensor_times_a_number_is_refused_naming_mul_and_the_conversion() -> None:
    """review153 L3: ``t * 0.5`` on an int64 tensor was refused naming ``scale``, an op the user
    never called, without the conversion ``/`` and ``-`` name."""
    refusal = ("mul: operand {which} has dtype {dtype}; accepted: float32 or float64 (`*` records mul, "
               "or scale by a number, on floats only; convert with tl.tensor(t.numpy(), dtype='float32'))")
    for data, dtype in (([1, 2, 3], "int64"), ([True, False, True], "bool")):
        t = tl.tensor(data)
        calls = ((lambda t=t: t * 0.5, "a"), (lambda t=t: 2 * t, "b"), (lambda t=t: tl.mul(t, 3), "a"),
                 (lambda t=t: t * np.int64(2), "a"), (lambda t=t: t * True, "a"), (lambda t=t: t * t, "a"))
        for call, which in calls:
            expected = f"^{re.escape(refusal.format(which=which, dtype=dtype))}$"
            with pytest.raises(GuardError, match=expected) as info:
                call()
            assert info.value.__suppress_context__  # one error in the traceback, not two
    assert (tl.tensor([1.0, 2.0]) * 0.5).numpy().tolist() == [0.5, 1.0]
    # a number the int64 tensor's dtype cannot hold is refused by the cast, naming it, as add's
    # constants are (test_int64_casts.py)
    for number in (math.nan, 2**70):
        with pytest.raises(tl.TensorError, match="does not fit"):
            tl.tensor([1, 2, 3]) * number


@pytest.mark.parametrize("name", BINARY_ELEMENTWISE)
def test_binary_elementwise_ops_raise_what_their_docstrings_list(name: str) -> None:
    """Each documented ``Raises`` entry, run, against torch where torch answers otherwise: torch
    promotes float32 with float64 (to float64); torchlean refuses, naming both dtypes."""
    fn = getattr(tl, name)
    recorded = {"maximum": "max", "minimum": "min"}.get(name, name)
    doc = " ".join(fn.__doc__.split())
    assert "Raises:" in doc and "operands of different dtypes" in doc and "promot" in doc
    assert getattr(torch, name)(torch.ones(3), torch.ones(3, dtype=torch.float64)).dtype == torch.float64
    a32, a64 = tl.tensor(np.ones(3, np.float32)), tl.tensor(np.ones(3))
    with pytest.raises(GuardError, match=rf"^{recorded}: operand b has dtype float64 but operand a has "
                       "dtype float32; torchlean kernels do not promote dtypes"):
        fn(a32, a64)
    for data, dtype in (([1, 2, 3], "int64"), ([True, False, True], "bool")):
        with pytest.raises(GuardError, match=rf"^{recorded}: operand a has dtype {dtype}"):
            fn(tl.tensor(data), a64)
    with pytest.raises(GuardError, match=rf"^{recorded}: shapes are not broadcastable: a \(3,\), b \(4,\)"):
        fn(a64, tl.tensor(np.ones(4)))
    with pytest.raises(TensorError, match="at least one operand must be a Tensor"):
        fn(np.ones(3), np.ones(3))
    for constant in ("x", None, 1j):
        with pytest.raises(TensorTypeError, match="as a constant operand: it is not numeric"):
            fn(a64, constant)
    with pytest.raises(TensorTypeError, match="requires grad"):
        fn(a64, torch.ones(3, requires_grad=True))
    with pytest.raises(TensorError, match="does not fit the tensor's dtype float32"):
        fn(a32, 10**40)
    with pytest.raises(DeviceError, match="different devices"):
        fn(a64, tl.Tensor._make(torch.zeros(3, device="meta", dtype=torch.float64)))
    out = fn(tl.tensor(np.ones((2, 1), np.float32)), tl.tensor(np.ones(3, np.float32)))
    assert (out.shape, out.dtype) == ((2, 3), np.dtype(np.float32))  # the broadcast shape, one dtype
    assert fn(a32, np.ones(3)).dtype == np.float32  # array data takes the tensor operand's dtype


def test_dropout_of_integer_data_names_dropout_and_the_dtype() -> None:
    """review109 F5: it failed as ``bernoulli_mask: dtype dtype('int64') is not accepted``, naming
    an op the caller did not write; outside training it is the identity, as torch's."""
    ids = tl.tensor(np.array([1, 2, 3]))
    for p in (0.5, 1.0):  # a GuardError, as documented and as every op's dtype refusal (review160 F3)
        with pytest.raises(GuardTypeError, match=re.escape(  # a GuardError and a TypeError
            "dropout: input x has dtype int64; accepted: float32 or float64 (the mask is drawn in x's dtype "
            "and the kept values are scaled by 1 / (1 - p)): give x a float dtype"
        )):
            tl.dropout(ids, p)
    assert tl.dropout(ids, 0.5, training=False) is ids


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda x: x + np.broadcast_to(np.float64(0), (2**40,)),
         "add: shapes are not broadcastable: a (2, 2), b (1099511627776,)"),
        (lambda x: np.zeros(5) - x, "sub: shapes are not broadcastable: a (5,), b (2, 2)"),
        (lambda x: tl.maximum(np.zeros(3), x), "maximum: shapes are not broadcastable: a (3,), b (2, 2)"),
        (lambda x: tl.div(x, np.broadcast_to(np.float32(1), (3, 2**40))),
         "div: shapes are not broadcastable"),
    ],
)
def test_a_constant_whose_shape_does_not_broadcast_is_refused_before_it_is_copied(
    call: Callable[[tl.Tensor], object], message: str
) -> None:
    """review239 F10: the constant was copied into the tensor's dtype first, so a stride-0 view of
    2**40 entries raised numpy's "Unable to allocate 4.00 TiB" instead of the shape refusal."""
    with pytest.raises(GuardError) as caught:
        call(_x())
    assert str(caught.value).startswith(message)
    assert str(caught.value).endswith("(accepted: shapes that agree on each trailing axis or have extent 1 "
                                      "there, numpy/PyTorch broadcasting)")


_HUGE = np.broadcast_to(np.float64(0), (2**40,))  # declares 8 TiB, holds 8 bytes


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda x: x * torch.zeros(1, dtype=torch.float64).expand(2**40), GuardError,
         "mul: shapes are not broadcastable: a (2, 2), b (1099511627776,)"),
        (lambda x: tl.mse_loss(x, _HUGE), GuardError,
         "mse_loss: prediction (2, 2) and target (1099511627776,) differ"),
        (lambda x: tl.mse_loss(torch.zeros(1, dtype=torch.float64).expand(2**40), x), GuardError,
         "mse_loss: prediction (1099511627776,) and target (2, 2) differ"),
        (lambda x: tl.hard_masked_softmax(x, np.broadcast_to(np.True_, (2**40,))), GuardError,
         "hard_masked_softmax: shapes are not broadcastable: scores (2, 2), mask (1099511627776,)"),
        (lambda x: tl.hard_masked_softmax(x, torch.ones(1, dtype=torch.bool).expand(3, 2, 2)), GuardError,
         "hard_masked_softmax: mask (3, 2, 2) does not broadcast to the scores' shape (2, 2)"),
        (lambda x: (x * 2).backward(gradient=_HUGE), tl.AutogradError,
         "autograd: seed gradient shape mismatch for output (seed (1099511627776,), output (2, 2))"),
        (lambda x: x.backward(gradient=torch.zeros(1, dtype=torch.float64).expand(2**40)), tl.AutogradError,
         "autograd: seed gradient shape mismatch for output (seed (1099511627776,), output (2, 2))"),
        (lambda x: (x * 2).backward(gradient=torch.zeros(1, dtype=torch.bfloat16).expand(2**40)),
         tl.AutogradError,  # review242 F5: widened (copied) to float64 first, torch's 8 TiB allocation
         "autograd: seed gradient shape mismatch for output (seed (1099511627776,), output (2, 2))"),
    ],
)
def test_array_data_of_the_wrong_shape_is_refused_before_it_is_copied(
    call: Callable[[tl.Tensor], object], error: type[Exception], message: str
) -> None:
    """review240 F4: torch-tensor constants, ``mse_loss``'s operands, masks and ``backward``'s
    ``gradient=`` were copied before their shape was compared: a view declaring 2**40 entries
    raised numpy's "Unable to allocate" MemoryError instead of the shape refusal."""
    x = tl.tensor(np.ones((2, 2)), requires_grad=True)
    with pytest.raises(error) as caught:
        call(x)
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize(
    "mask",
    [np.ones((3, 2, 2)), torch.ones((3, 2, 2), dtype=torch.float64), [[[1.0, 1.0], [1.0, 1.0]]] * 3],
    ids=["numpy", "torch", "list"],
)
def test_a_float_mask_of_the_wrong_shape_gets_the_dtype_refusal_in_every_container(mask: object) -> None:
    """review242 F6: the shape check made before the copy (review240 F4) answered a float numpy or
    torch mask with the shape refusal, while a list got the dtype refusal (with its "additive bias"
    hint); the dtype comes first for all, as torch's ``masked_fill`` checks it first."""
    x = tl.tensor(np.zeros((2, 2)))
    with pytest.raises(GuardTypeError, match=r"^hard_masked_softmax: mask has dtype float64; accepted: bool"):
        tl.hard_masked_softmax(x, mask)  # type: ignore[arg-type]
