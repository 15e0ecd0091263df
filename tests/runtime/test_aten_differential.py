"""The ``aten`` forwards (torch CPU kernels) against the ``reference`` forwards, op by op.

This is the value evidence of every ``aten.<op>`` capsule (DESIGN.md §1.8). For each of the 40 ops
(the cases of ``aten_cases.py``, checked below to cover ``ATEN_OPS`` exactly):

* the aten forward equals the reference forward (numpy left folds, an implementation independent
  of torch) to 1e-10 relative in float64 and 1e-5 in float32 (max-norm, relative to the largest
  reference entry), NaN at the same places, with the same shape and dtype (float32 stays
  float32), in a C-contiguous array; the inputs are never written;
* no result aliases an input, ``reshape``/``permute``/``broadcast``/``concat``/``slice`` included
  (they copy, as the
  reference and native-cuda kernels do), so an in-place write gives the same values under
  ``fast_cpu`` as under ``checked_cpu``;
* IEEE-exact elementwise ops and data movement (``concat``, ``slice`` and ``gather`` included:
  copies and selections bit for bit, one or several operands, zero-size operands, one array
  passed twice, duplicate indices, zero-size and one-element inputs, int64 and bool data moved
  by ``concat`` and ``slice``) are bit-identical to the reference, special values
  (NaN, +-inf, +-0) propagate as in the reference, zero-size, one-element and rank-0 inputs work;
* the shape guards refuse bad input with the reference's GuardError and message, and the named
  guards (shape and layout) run on every kernel path;
* ``fast_cpu`` plans ``aten.*`` for every covered op and ``reference.*`` otherwise.
Gradients are in ``test_aten_gradients.py``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from aten_cases import (
    CASES,
    DTYPE_IDS,
    DTYPES,
    IDS,
    MASK,
    TOLERANCE,
    Array,
    Builder,
    assert_close,
    aten_forward,
    normal,
    reference_forward,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import torchlean as tl
from torchlean.autograd.dispatch import linked_kernels, select_linked
from torchlean.backend import profiles
from torchlean.backend.errors import GuardError, PlanningError
from torchlean.backend.policy import AssurancePolicy
from torchlean.backend.providers.aten import _common, pointwise
from torchlean.backend.providers.aten import capsules as aten_capsules
from torchlean.backend.providers.aten import guards as aten_guards
from torchlean.backend.providers.aten import kernels as aten
from torchlean.backend.providers.aten import spatial as aten_spatial
from torchlean.backend.providers.reference import capsules as reference_capsules
from torchlean.backend.providers.reference import kernels as reference
from torchlean.backend.providers.reference import spatial
from torchlean.backend.vocabulary import BackendOp, Device, Provider, ReductionPolicy

SUBJECT_PROVIDERS = ("aten",)
"""The providers whose capsules this module tests (not those it uses as oracles): the
capsule evidence that names it must be of one of them (tests/backend/test_evidence_names.py)."""

COVERED_LABELS = (
    "matmul", "linear", "mse_loss", "relu", "gelu", "add", "sub", "mul", "scale", "abs", "sqrt",
    "clamp", "max", "min", "sigmoid", "tanh", "softplus", "exp", "log", "sin", "cos", "inv",
    "safe_log", "log_softmax", "softmax", "reduce_sum", "reduce_mean", "reshape", "permute",
    "broadcast", "concat", "slice", "gather", "layer_norm", "batch_norm", "conv", "conv_transpose",
    "max_pool", "avg_pool", "scaled_dot_product_attention",
)  # fmt: skip


def test_cases_cover_every_aten_op_in_catalog_order() -> None:
    assert tuple(op.label for op in aten_capsules.ATEN_OPS) == COVERED_LABELS
    assert {op for _, op, _ in CASES} == set(aten_capsules.ATEN_OPS)
    assert [c.name for c in aten_capsules.CAPSULES] == [f"aten.{label}" for label in COVERED_LABELS]
    catalog = [c.op for c in reference_capsules.CAPSULES]
    positions = [catalog.index(op) for op in aten_capsules.ATEN_OPS]
    assert positions == sorted(positions)


# ----------------------------------------------------------------------------------- forward


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(("case_id", "op", "build"), CASES, ids=IDS)
def test_forward_matches_reference(case_id: str, op: BackendOp, build: Builder, dtype: type) -> None:
    inputs, params = build(np.random.default_rng(len(case_id)), dtype)
    frozen = [None if x is None else x.copy() for x in inputs]
    got = aten_forward(op)(*inputs, **params)
    want = reference_forward(op)(*inputs, **params)
    assert isinstance(got, np.ndarray)
    assert_close(got, want, TOLERANCE[dtype], case_id)
    assert got.flags.c_contiguous and got.flags.writeable
    for x, before in zip(inputs, frozen, strict=True):
        if x is not None:
            np.testing.assert_array_equal(x, before)  # inputs are never written
            if x.size and got.size:
                assert not np.may_share_memory(got, x), case_id


BIT_EXACT = [c for c in CASES if c[1].label in {
    "add", "sub", "mul", "scale", "abs", "clamp", "max", "min", "relu", "inv",
    "reshape", "permute", "broadcast", "concat", "slice", "gather", "max_pool",
}]  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(("case_id", "op", "build"), BIT_EXACT, ids=[c[0] for c in BIT_EXACT])
def test_ieee_exact_ops_are_bit_identical(case_id: str, op: BackendOp, build: Builder, dtype: type) -> None:
    # One correctly rounded operation per element (or none) leaves no room for an order: torch and
    # numpy agree bitwise, up to the sign of a zero (torch's relu/maximum/minimum/clamp may pick the
    # other one). Not sqrt: torch's vectorised float32 sqrt is not correctly rounded (1 ulp off).
    inputs, params = build(np.random.default_rng(3), dtype)
    np.testing.assert_array_equal(
        aten_forward(op)(*inputs, **params), reference_forward(op)(*inputs, **params)
    )


SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 30.0, -30.0, 1e-30])
UNARY = ["relu", "gelu", "abs", "sqrt", "sigmoid", "tanh", "softplus", "exp", "log", "sin", "cos", "inv"]
UNARY_PARAMS: dict[str, dict[str, Any]] = {
    "scale": {"factor": -3.0},
    "clamp": {"lo": -1.0, "hi": 2.0},
    "safe_log": {"eps": 1e-6},
}


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("label", UNARY + list(UNARY_PARAMS))
def test_unary_special_values_propagate_like_the_reference(label: str, dtype: type) -> None:
    x: Array = SPECIAL.astype(dtype)
    params = UNARY_PARAMS.get(label, {})
    got = getattr(pointwise, label)(x, **params)
    want = getattr(reference, label)(x, **params)
    assert_close(got, want, 8 * float(np.finfo(dtype).eps), label)


@pytest.mark.parametrize("label", ["add", "sub", "mul", "max", "min"])
def test_binary_special_values_propagate_like_the_reference(label: str) -> None:
    a = SPECIAL[:, None]
    b = SPECIAL[None, :]
    got = getattr(pointwise, label)(a, b)
    np.testing.assert_array_equal(got, getattr(reference, label)(a, b))
    assert got.shape == (SPECIAL.size, SPECIAL.size)


def test_max_pool_propagates_nan_and_never_selects_padding() -> None:
    x = np.array([[[1.0, np.nan, 3.0, 0.0, -np.inf, -np.inf]]])
    got = aten_spatial.max_pool(x, kernel_size=2, padding=1)
    want = spatial.max_pool(x, kernel_size=2, padding=1)
    np.testing.assert_array_equal(got, want)
    assert np.isnan(got[0, 0, 1]) and got[0, 0, 3] == -np.inf


def test_rank0_and_empty_edge_cases_follow_the_reference() -> None:
    scalar = np.array(2.5)
    assert aten.softmax(scalar, axis=0) == 1.0 and aten.log_softmax(scalar, axis=-1) == 0.0
    assert aten.reduce_sum(scalar) == 2.5 and aten.reduce_mean(scalar, axis=None) == 2.5
    assert not np.may_share_memory(aten.reduce_sum(scalar), scalar)
    assert pointwise.relu(np.array(-1.0)).shape == () and pointwise.exp(np.array(0.0)) == 1.0
    empty = np.zeros((3, 0))
    np.testing.assert_array_equal(aten.reduce_sum(empty, axis=1), np.zeros(3))
    assert np.all(np.isnan(aten.reduce_mean(empty, axis=1)))
    np.testing.assert_array_equal(aten.matmul(np.zeros((2, 0)), np.zeros((0, 3))), np.zeros((2, 3)))
    assert np.isnan(aten.mse_loss(empty, empty))
    assert aten.softmax(empty, axis=1).shape == (3, 0)
    assert pointwise.add(empty, np.ones((1, 1))).shape == (3, 0)


@settings(max_examples=30, deadline=None)
@given(
    batch_a=st.lists(st.sampled_from([1, 2, 3]), max_size=2),
    batch_b=st.lists(st.sampled_from([1, 2, 3]), max_size=2),
    m=st.integers(1, 5),
    k=st.integers(0, 6),
    n=st.integers(1, 5),
    seed=st.integers(0, 2**16),
)
def test_matmul_property_any_broadcast_batch(
    batch_a: list[int], batch_b: list[int], m: int, k: int, n: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((*batch_a, m, k))
    b = rng.standard_normal((*batch_b, k, n))
    try:
        want = reference.matmul(a, b)
    except GuardError:
        with pytest.raises(GuardError):
            aten.matmul(a, b)
        return
    assert_close(aten.matmul(a, b), want, 1e-10, "matmul")


@settings(max_examples=30, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=4),
    data=st.data(),
    keepdims=st.booleans(),
)
def test_reductions_property_any_axes(shape: list[int], data: st.DataObject, keepdims: bool) -> None:
    axes = data.draw(st.sets(st.integers(-len(shape), len(shape) - 1), min_size=1, max_size=len(shape)))
    normal_axes = {a % len(shape) for a in axes}
    if len(normal_axes) != len(axes):
        return  # a repeated axis; the shared guard refuses it for both providers
    x = np.random.default_rng(len(shape)).standard_normal(shape)
    pairs = ((aten.reduce_sum, reference.reduce_sum), (aten.reduce_mean, reference.reduce_mean))
    for got_fn, want_fn in pairs:
        got = got_fn(x, axis=tuple(axes), keepdims=keepdims)
        assert_close(got, want_fn(x, axis=tuple(axes), keepdims=keepdims), 1e-10, got_fn.__name__)


def _broadcast_pair(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...]]:
    out = draw(st.lists(st.integers(0, 3), max_size=3))
    shapes = []
    for _ in range(2):
        rank = draw(st.integers(0, len(out)))
        tail = out[len(out) - rank :]
        shapes.append(tuple(s if draw(st.booleans()) else 1 for s in tail))
    return shapes[0], shapes[1]


@settings(max_examples=40, deadline=None)
@given(pair=st.composite(_broadcast_pair)(), label=st.sampled_from(["add", "sub", "mul", "max", "min"]))
def test_binary_ops_broadcast_like_the_reference(
    pair: tuple[tuple[int, ...], tuple[int, ...]], label: str
) -> None:
    rng = np.random.default_rng(sum(pair[0]) + 7 * sum(pair[1]))
    a, b = normal(rng, np.float32, *pair[0]), normal(rng, np.float32, *pair[1])
    got = getattr(pointwise, label)(a, b)
    want = getattr(reference, label)(a, b)
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_array_equal(got, want)


# ------------------------------------------------------------------------------------ guards

BAD_CALLS: list[tuple[str, str, tuple[Any, ...], dict[str, Any]]] = [
    ("matmul", "kernels", (np.ones((2, 3)), np.ones((4, 2))), {}),
    ("linear", "kernels", (np.ones((2, 3), np.float32), np.ones((4, 3)), None), {}),
    ("mse_loss", "kernels", (np.ones((2, 3)), np.ones((3, 2))), {}),
    ("relu", "pointwise", (np.arange(3),), {}),
    ("gelu", "pointwise", ([1.0, 2.0],), {}),
    ("add", "pointwise", (np.ones((3, 4)), np.ones(5)), {}),
    ("sub", "pointwise", (np.ones(3), np.ones(3, np.float32)), {}),
    ("mul", "pointwise", (np.ones((2, 3)), np.ones((3, 2))), {}),
    ("scale", "pointwise", (np.ones(3),), {"factor": np.inf}),
    ("abs", "pointwise", (np.ones(3, bool),), {}),
    ("sqrt", "pointwise", (np.ones(3, np.float16),), {}),
    ("clamp", "pointwise", (np.ones(3),), {"lo": 1.0, "hi": 0.0}),
    ("max", "pointwise", (np.ones(3, np.float32), np.ones(3)), {}),
    ("min", "pointwise", (np.ones(2), np.ones(3)), {}),
    ("sigmoid", "pointwise", (np.arange(2),), {}),
    ("tanh", "pointwise", (np.ones(2, np.complex128),), {}),
    ("softplus", "pointwise", (np.arange(2),), {}),
    ("exp", "pointwise", (3.0,), {}),
    ("log", "pointwise", (np.arange(2),), {}),
    ("sin", "pointwise", (np.arange(2),), {}),
    ("cos", "pointwise", (np.arange(2),), {}),
    ("inv", "pointwise", (np.arange(2),), {}),
    ("safe_log", "pointwise", (np.ones(3),), {"eps": 0.0}),
    ("log_softmax", "kernels", (np.ones((2, 3)),), {"axis": 2}),
    ("softmax", "kernels", (np.ones((2, 3)),), {"axis": -3}),
    ("reduce_sum", "kernels", (np.ones((2, 3)),), {"axis": ()}),
    ("reduce_mean", "kernels", (np.ones((2, 3)),), {"axis": (0, -2)}),
    ("reshape", "kernels", (np.ones((2, 3)),), {"shape": (4, 2)}),
    ("permute", "kernels", (np.ones((2, 3)),), {"perm": (0, 0)}),
    ("broadcast", "kernels", (np.ones(3),), {"shape": (4,)}),
    ("concat", "kernels", (np.ones((2, 3)), np.ones((2, 4))), {"axis": 0}),
    ("slice", "kernels", (np.ones((2, 3)),), {"starts": (0, 2), "stops": (2, 1)}),
    ("gather", "kernels", (np.ones((3, 2)), np.array([[0, 3]])), {"axis": 0}),
    ("layer_norm", "spatial", (np.ones((2, 3)), np.ones(2), None), {}),
    ("batch_norm", "spatial", (np.ones((2, 3)), None, None, None, None), {"training": False}),
    ("conv", "spatial", (np.ones((1, 3, 5)), np.ones((2, 2, 3))), {"groups": 2}),
    ("conv_transpose", "spatial", (np.ones((1, 2, 5)), np.ones((2, 2, 3, 3))), {}),
    ("max_pool", "spatial", (np.ones((1, 1, 6)),), {"kernel_size": 2, "padding": 2}),
    ("avg_pool", "spatial", (np.ones((2, 6)),), {"kernel_size": 2}),
    (
        "scaled_dot_product_attention",
        "kernels",
        (np.ones((3, 2)), np.ones((4, 2)), np.ones((4, 2)), np.ones((3, 4))),
        {},
    ),
]


@pytest.mark.parametrize(("label", "where", "inputs", "params"), BAD_CALLS, ids=[c[0] for c in BAD_CALLS])
def test_guards_refuse_bad_input_like_the_reference(
    label: str, where: str, inputs: tuple[Any, ...], params: dict[str, Any]
) -> None:
    mine = {"kernels": aten, "pointwise": pointwise, "spatial": aten_spatial}[where]
    theirs = spatial if where == "spatial" else reference
    with pytest.raises(GuardError) as refused:
        getattr(theirs, label)(*inputs, **params)
    with pytest.raises(GuardError) as also_refused:
        getattr(mine, label)(*inputs, **params)
    assert type(also_refused.value) is type(refused.value)
    assert str(also_refused.value) == str(refused.value)
    assert str(refused.value).startswith(label)


def test_bad_calls_cover_every_aten_op() -> None:
    assert {label for label, _, _, _ in BAD_CALLS} == set(COVERED_LABELS)


# ------------------------------------------------------------------------ slice and gather

_BYTE_SWAPPED = np.arange(6.0).reshape(2, 3).astype(np.dtype(">f8"))

SLICE_GATHER_REFUSALS: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("slice", (np.ones((2, 3)),), {"starts": (-1, 0), "stops": (2, 3)}),  # negative start
    ("slice", (np.ones((2, 3)),), {"starts": (0, 0), "stops": (2, 4)}),  # stop past the extent
    ("slice", (np.ones((2, 3)),), {"starts": (0, 0), "stops": (2, -1)}),  # negative stop
    ("slice", (np.ones((2, 3)),), {"starts": (0, 0), "stops": (2, 3), "steps": (1, 0)}),
    ("slice", (np.ones((2, 3)),), {"starts": (0, 0), "stops": (2, 3), "steps": (-1, 1)}),
    ("slice", (np.ones((2, 3)),), {"starts": (0,), "stops": (2, 3)}),  # one bound short
    ("slice", (np.ones((2, 3)),), {"starts": (0, 0.5), "stops": (2, 3)}),  # GuardTypeError
    ("slice", (np.ones((2, 3)),), {"starts": (0, True), "stops": (2, 3)}),  # GuardTypeError
    ("slice", (np.ones((2, 3)),), {"starts": "00", "stops": (2, 3)}),
    ("slice", (np.ones(3, np.float16),), {"starts": (0,), "stops": (1,)}),
    ("slice", (_BYTE_SWAPPED,), {"starts": (0, 0), "stops": (1, 1)}),
    ("slice", ([1.0, 2.0],), {"starts": (0,), "stops": (1,)}),
    ("slice", (np.array(1.0),), {"starts": (0,), "stops": (1,)}),  # rank 0 takes no bounds
    ("gather", (np.ones((3, 2)), np.array([[-1, 0]])), {"axis": 0}),  # negative index
    ("gather", (np.ones((3, 2)), np.array([[0, 3]])), {"axis": 0}),  # index == extent
    ("gather", (np.ones((3, 2)), np.array([[0, 2**62]])), {"axis": 0}),
    ("gather", (np.ones((0, 2)), np.zeros((1, 2), np.int64)), {"axis": 0}),  # empty axis
    ("gather", (np.ones((3, 2)), np.array([[0.0, 1.0]])), {"axis": 0}),  # float index
    ("gather", (np.ones((3, 2)), np.array([[0, 1]], np.int32)), {"axis": 0}),  # int32 index
    ("gather", (np.ones((3, 2)), np.array([[0, 1]], np.uint64)), {"axis": 0}),
    ("gather", (np.ones((3, 2)), np.array([0, 1])), {"axis": 0}),  # rank mismatch
    ("gather", (np.ones((3, 2)), np.zeros((1, 3), np.int64)), {"axis": 0}),  # too wide off-axis
    ("gather", (np.ones((3, 2)), np.zeros((1, 2), np.int64)), {"axis": 2}),  # axis out of range
    ("gather", (np.ones((3, 2)), np.zeros((1, 2), np.int64)), {"axis": -3}),
    ("gather", (np.ones((3, 2)), np.zeros((1, 2), np.int64)), {"axis": 0.0}),  # GuardTypeError
    ("gather", (np.arange(6).reshape(3, 2), np.zeros((1, 2), np.int64)), {"axis": 0}),  # int64 x
    ("gather", (np.array(1.0), np.array(0)), {"axis": 0}),  # rank 0
    ("gather", (_BYTE_SWAPPED, np.zeros((1, 3), np.int64)), {"axis": 0}),
    ("gather", (np.ones((3, 2)), [[0, 1]]), {"axis": 0}),  # a list index
    ("gather", (np.ones((3, 2), np.float32), np.zeros((1, 2), np.int64).astype(">i8")), {"axis": 0}),
]


@pytest.mark.parametrize(
    ("label", "inputs", "params"),
    SLICE_GATHER_REFUSALS,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(SLICE_GATHER_REFUSALS)],
)
def test_slice_and_gather_refuse_bad_operands_like_the_reference(
    label: str, inputs: tuple[Any, ...], params: dict[str, Any]
) -> None:
    """Out-of-range and negative bounds and indices, bad dtypes, ranks and axes: aten.slice and
    aten.gather raise the reference's error (same type, same message), before torch sees them."""
    with pytest.raises(GuardError) as refused:
        getattr(reference, label)(*inputs, **params)
    with pytest.raises(GuardError) as also_refused:
        getattr(aten, label)(*inputs, **params)
    assert type(also_refused.value) is type(refused.value)
    assert str(also_refused.value) == str(refused.value)
    assert str(refused.value).startswith(f"{label}: ")


def test_slice_and_gather_refusal_messages_name_the_value_and_the_accepted_range() -> None:
    with pytest.raises(
        GuardError,
        match=r"^slice: axis 1: start 0, stop 4 out of range for extent 3 "
        r"\(accepted: 0 <= start <= stop <= 3\)$",
    ):
        aten.slice(np.ones((2, 3)), starts=(0, 0), stops=(2, 4))
    with pytest.raises(
        GuardError,
        match=r"^gather: index value -1 is out of range for extent 3 along "
        r"axis 0 \(accepted: 0 <= index < 3\)$",
    ):
        aten.gather(np.ones((3, 2)), np.array([[-1, 0]]), axis=0)
    with pytest.raises(GuardError, match=r"^gather: index has dtype int32; accepted: int64$"):
        aten.gather(np.ones((3, 2)), np.array([[0, 1]], np.int32), axis=0)


def _same_bits(got: Array, want: Array) -> None:
    """Equal shape, dtype and bytes: -0.0 is not +0.0 and a NaN keeps its payload."""
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes()


def test_slice_and_gather_move_special_values_bit_for_bit() -> None:
    payload = np.array([0x7FF8_0000_0000_1234], np.uint64).view(np.float64)[0]  # a NaN with a payload
    x = np.array([[payload, -0.0, np.inf], [-np.inf, 0.0, 5e-324], [1.0, -1.0, np.nan]])
    got = aten.slice(x, starts=(0, 0), stops=(3, 3), steps=(1, 1))
    _same_bits(got, x)
    _same_bits(aten.slice(x, starts=(0, 1), stops=(3, 2)), np.array([[-0.0], [0.0], [-1.0]]))
    index = np.array([[0, 0, 2], [1, 2, 0], [0, 1, 1]])
    _same_bits(aten.gather(x, index, axis=0), reference.gather(x, index, axis=0))
    _same_bits(aten.gather(x, index, axis=1), reference.gather(x, index, axis=1))
    assert np.signbit(aten.gather(x, index, axis=0)[0, 1])  # x[0, 1] is -0.0
    assert aten.gather(x, index, axis=0).view(np.uint64)[0, 0] == 0x7FF8_0000_0000_1234


def test_slice_and_gather_by_hand() -> None:
    """Hand oracles: torch basic slicing and ``torch.gather``'s definition."""
    x = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(
        aten.slice(x, starts=(1, 0, 1), stops=(2, 3, 4), steps=(1, 2, 2)), [[[13.0, 15.0], [21.0, 23.0]]]
    )
    table = np.array([[0.5, 1.5], [2.5, 3.5], [4.5, 5.5]], np.float32)
    ids = np.array([2, 0, 2, 2])
    out = aten.gather(table, np.repeat(ids[:, None], 2, axis=1), axis=0)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [[4.5, 5.5], [0.5, 1.5], [4.5, 5.5], [4.5, 5.5]])
    # out[i][j] = x[i][index[i][j]] along axis 1, an index shorter than x on axis 0
    np.testing.assert_array_equal(aten.gather(x[0], np.array([[3, 3, 0]]), axis=-1), [[3.0, 3.0, 0.0]])
    one = np.array([7.25])
    np.testing.assert_array_equal(aten.gather(one, np.array([0, 0, 0]), axis=0), [7.25, 7.25, 7.25])
    assert aten.gather(np.ones((3, 2)), np.zeros((0, 2), np.int64), axis=0).shape == (0, 2)
    assert aten.gather(np.ones((3, 0)), np.zeros((5, 0), np.int64), axis=0).shape == (5, 0)
    scalar = aten.slice(np.array(2.5), starts=(), stops=())
    assert scalar.shape == () and scalar == 2.5


def test_slice_moves_int64_and_bool_data_like_the_reference() -> None:
    x = np.random.default_rng(4).integers(-(2**62), 2**62, size=(3, 4), dtype=np.int64)
    got = aten.slice(x, starts=(1, 0), stops=(3, 4), steps=(1, 3))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, reference.slice(x, starts=(1, 0), stops=(3, 4), steps=(1, 3)))
    mask = x > 0
    got_mask = aten.slice(mask, starts=(0, 1), stops=(2, 4))
    assert got_mask.dtype == np.bool_
    np.testing.assert_array_equal(got_mask, mask[0:2, 1:4])


@settings(max_examples=40, deadline=None)
@given(
    shape=st.lists(st.integers(0, 4), min_size=1, max_size=3),
    data=st.data(),
    dtype=st.sampled_from([np.float32, np.float64]),
)
def test_gather_and_slice_property_bit_identical_to_the_reference(
    shape: list[int], data: st.DataObject, dtype: type
) -> None:
    rng = np.random.default_rng(sum(shape) + len(shape))
    x = normal(rng, dtype, *shape)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    index_shape = [data.draw(st.integers(0, s)) for s in shape]
    index_shape[axis] = data.draw(st.integers(0, 5)) if shape[axis] else 0
    index = rng.integers(0, max(shape[axis], 1), size=index_shape, dtype=np.int64)
    _same_bits(aten.gather(x, index, axis=axis), reference.gather(x, index, axis=axis))
    starts = [data.draw(st.integers(0, s)) for s in shape]
    stops = [data.draw(st.integers(a, s)) for a, s in zip(starts, shape, strict=True)]
    steps = [data.draw(st.integers(1, 4)) for _ in shape]
    bounds = {"starts": starts, "stops": stops, "steps": steps}
    _same_bits(aten.slice(x, **bounds), reference.slice(x, **bounds))


# ---------------------------------------------------------------------------------- concat

CONCAT_REFUSALS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    ((), {"axis": 0}),  # no operands
    ((np.ones((2, 3)), np.ones((1, 3), np.float32)), {"axis": 0}),  # float64 with float32
    ((np.ones((2, 3), np.float32), np.ones((1, 3))), {"axis": 0}),
    ((np.ones((2, 3)), np.ones((1, 3), np.int64)), {"axis": 0}),  # float64 with int64
    ((np.ones((2, 3), np.int64), np.ones((1, 3), bool)), {"axis": 0}),  # int64 with bool
    ((np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 3), np.float32)), {"axis": 1}),  # the third
    ((np.ones((2, 3)), np.ones(3)), {"axis": 0}),  # rank mismatch
    ((np.ones((2, 3)), np.ones((2, 4))), {"axis": 0}),  # extents differ off the axis
    ((np.ones((2, 3, 4)), np.ones((2, 5, 4)), np.ones((3, 5, 4))), {"axis": 1}),
    ((np.ones((2, 3)), np.ones((2, 3))), {"axis": 2}),  # axis = rank
    ((np.ones((2, 3)), np.ones((2, 3))), {"axis": -3}),
    ((np.ones((2, 3)),), {"axis": 5}),  # one operand, axis out of range
    ((np.ones((2, 3)), np.ones((2, 3))), {"axis": 0.0}),  # GuardTypeError
    ((np.ones((2, 3)), np.ones((2, 3))), {"axis": True}),  # GuardTypeError
    ((np.ones((2, 3)), np.ones((2, 3))), {"axis": None}),  # GuardTypeError
    ((np.array(1.0), np.array(2.0)), {"axis": 0}),  # rank 0
    ((np.ones(3, np.float16), np.ones(3, np.float16)), {"axis": 0}),
    ((np.ones(3, np.complex128),), {"axis": 0}),
    ((np.ones(3, np.int32), np.ones(3, np.int32)), {"axis": 0}),
    ((_BYTE_SWAPPED, _BYTE_SWAPPED), {"axis": 0}),
    ((np.ones((2, 3)), _BYTE_SWAPPED), {"axis": 0}),
    ((np.ones(2), [1.0, 2.0]), {"axis": 0}),  # a list operand
    ((np.ones(2), 3.0), {"axis": 0}),  # a scalar operand
]


@pytest.mark.parametrize(
    ("inputs", "params"), CONCAT_REFUSALS, ids=[f"concat-{i}" for i in range(len(CONCAT_REFUSALS))]
)
def test_concat_refuses_bad_operands_like_the_reference(
    inputs: tuple[Any, ...], params: dict[str, Any]
) -> None:
    """No operands, mixed dtypes (never promoted), ranks or extents that differ off the axis, an
    axis out of range or not an integer, rank-0, float16, complex, int32, byte-swapped and
    non-array operands: aten.concat raises the reference's error (same type, same message)."""
    with pytest.raises(GuardError) as refused:
        reference.concat(*inputs, **params)
    with pytest.raises(GuardError) as also_refused:
        aten.concat(*inputs, **params)
    assert type(also_refused.value) is type(refused.value)
    assert str(also_refused.value) == str(refused.value)
    assert str(refused.value).startswith("concat: ")


def test_concat_refuses_before_torch_is_called(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference guard refuses a bad call before torch.cat runs (torch would promote float32
    with float64 and accept the mixed call)."""
    import torch

    def cat(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("torch.cat ran on operands the guard refuses")

    monkeypatch.setattr(torch, "cat", cat)
    for inputs, params in CONCAT_REFUSALS:
        with pytest.raises(GuardError):
            aten.concat(*inputs, **params)


def test_concat_refusal_messages_name_the_value_and_the_accepted_ones() -> None:
    with pytest.raises(
        GuardError,
        match=r"^concat: input 1 has dtype float32 but input 0 has dtype float64; torchlean kernels "
        r"do not promote dtypes, whatever the provider \(accepted: operands of one dtype\)$",
    ):
        aten.concat(np.ones((2, 3)), np.ones((1, 3), np.float32), axis=0)
    with pytest.raises(
        GuardError,
        match=r"^concat: input 1 \(2, 4\) does not match input 0 \(2, 3\) outside axis 0 "
        r"\(accepted: equal rank and equal extents on every other axis\)$",
    ):
        aten.concat(np.ones((2, 3)), np.ones((2, 4)), axis=0)
    with pytest.raises(
        GuardError,
        match=r"^concat: axis 2 is out of range for a rank-2 input \(accepted: an integer in \[-2, 1\]\)$",
    ):
        aten.concat(np.ones((2, 3)), np.ones((2, 3)), axis=2)
    with pytest.raises(GuardError, match=r"^concat: no inputs \(accepted: at least one array\)$"):
        aten.concat(axis=0)


def test_concat_moves_special_values_bit_for_bit() -> None:
    payload = np.array([0x7FF8_0000_0000_1234], np.uint64).view(np.float64)[0]  # a NaN with a payload
    a = np.array([[payload, -0.0, np.inf], [-np.inf, 0.0, 5e-324]])
    b = np.array([[1.0, -1.0, np.nan]])
    got = aten.concat(a, b, axis=0)
    _same_bits(got, reference.concat(a, b, axis=0))
    _same_bits(got, np.vstack([a, b]))
    assert got.view(np.uint64)[0, 0] == 0x7FF8_0000_0000_1234 and np.signbit(got[0, 1])
    small = np.array([[np.float32(1e-45), -np.float32(0.0)]], np.float32)  # a float32 subnormal
    _same_bits(aten.concat(small, small, axis=1), reference.concat(small, small, axis=1))


def test_concat_by_hand() -> None:
    """Hand oracles: torch.cat's definition (operands one after the other along the axis)."""
    a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    b = np.array([[5.0, 6.0]], np.float32)
    out = aten.concat(a, b, axis=0)
    assert out.dtype == np.float32 and out.flags.c_contiguous
    np.testing.assert_array_equal(out, [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    np.testing.assert_array_equal(aten.concat(a, a, axis=-1), [[1.0, 2.0, 1.0, 2.0], [3.0, 4.0, 3.0, 4.0]])
    x = np.arange(12.0).reshape(2, 3, 2)
    np.testing.assert_array_equal(
        aten.concat(x[:, :1], x, axis=1),
        [
            [[0.0, 1.0], [0.0, 1.0], [2.0, 3.0], [4.0, 5.0]],
            [[6.0, 7.0], [6.0, 7.0], [8.0, 9.0], [10.0, 11.0]],
        ],
    )
    one = aten.concat(a, axis=0)  # one operand: a copy
    np.testing.assert_array_equal(one, a)
    assert not np.may_share_memory(one, a)
    assert aten.concat(np.zeros((0, 2)), np.zeros((0, 2)), axis=0).shape == (0, 2)
    assert aten.concat(np.zeros((3, 0)), np.zeros((3, 0)), axis=1).shape == (3, 0)
    np.testing.assert_array_equal(aten.concat(np.zeros((0, 2)), a.astype(np.float64), axis=0), a)
    assert aten.concat(np.zeros((0, 2)), np.zeros((0, 5)), axis=1).shape == (0, 7)
    axis: Any = np.int64(-1)  # a numpy integer axis, as the reference guard accepts
    assert aten.concat(x, x, axis=axis).shape == (2, 3, 4)


def test_concat_moves_int64_and_bool_data_like_the_reference() -> None:
    x = np.random.default_rng(5).integers(-(2**62), 2**62, size=(3, 4), dtype=np.int64)
    got = aten.concat(x, x[:1] + 1, axis=0)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, reference.concat(x, x[:1] + 1, axis=0))
    np.testing.assert_array_equal(got[3], x[0] + 1)
    mask = x > 0
    got_mask = aten.concat(mask, ~mask, axis=1)
    assert got_mask.dtype == np.bool_
    np.testing.assert_array_equal(got_mask, np.hstack([mask, ~mask]))


@settings(max_examples=40, deadline=None)
@given(
    shape=st.lists(st.integers(0, 3), min_size=1, max_size=3),
    data=st.data(),
    dtype=st.sampled_from([np.float32, np.float64, np.int64, np.bool_]),
)
def test_concat_property_bit_identical_to_the_reference(
    shape: list[int], data: st.DataObject, dtype: type
) -> None:
    """One to four operands, each with its own extent along a random axis (zero included): the
    same bytes as the reference's np.concatenate, a fresh C-contiguous array."""
    rng = np.random.default_rng(sum(shape) + 3 * len(shape))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    count = data.draw(st.integers(1, 4))
    xs: list[Array] = []
    for _ in range(count):
        own = list(shape)
        own[axis] = data.draw(st.integers(0, 3))
        xs.append(np.asarray(rng.standard_normal(own) * 100).astype(dtype))
    got = aten.concat(*xs, axis=axis)
    _same_bits(got, reference.concat(*xs, axis=axis))
    assert got.flags.c_contiguous
    for x in xs:
        assert got.size == 0 or x.size == 0 or not np.may_share_memory(got, x)


def _resolve(dotted: str) -> tuple[Any, str]:
    module, _, name = dotted.rpartition(".")
    return importlib.import_module(module), name


@pytest.mark.parametrize(("case_id", "op", "build"), CASES, ids=IDS)
def test_named_guards_run_on_the_forward_path(
    case_id: str, op: BackendOp, build: Builder, monkeypatch: pytest.MonkeyPatch
) -> None:
    capsule = next(c for c in aten_capsules.CAPSULES if c.op is op)
    called: list[str] = []
    for descriptor in (capsule.shape_contract, capsule.layout_contract):
        name = descriptor.evidence.name
        assert name is not None
        module, function = _resolve(name)
        original = getattr(module, function)

        def spy(*args: Any, _original: Any = original, _name: str = name, **kwargs: Any) -> Any:
            called.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(module, function, spy)
    inputs, params = build(np.random.default_rng(0), np.float64)
    linked = select_linked(op, capsule, linked_kernels(op))
    linked.forward(capsule, inputs, params)
    assert called[0] == capsule.shape_contract.evidence.name  # the shape guard runs first
    assert set(called) == {capsule.shape_contract.evidence.name, capsule.layout_contract.evidence.name}


def test_layout_guard_refuses_non_canonical_operands() -> None:
    with pytest.raises(GuardError, match=r"matmul: operand 1 must be a numpy\.ndarray"):
        aten_guards.check_aten_layout("matmul", np.ones(2), [1.0, 2.0])  # type: ignore[arg-type]
    with pytest.raises(GuardError, match="operand 0 has dtype int64"):
        aten_guards.check_aten_layout("softmax", np.arange(3))
    with pytest.raises(GuardError, match="native-byte-order"):
        aten_guards.check_aten_layout("softmax", np.ones(3, dtype=np.dtype(">f8")))


def test_aten_shape_ops_move_int64_data_as_the_reference_does() -> None:
    """aten.reshape, aten.permute and aten.broadcast take the int64 data the reference guards
    admit (a label tensor); equal to the reference kernels element for element, values near
    2**62 included. The layout guard admits int64 only where a shape op asks for it."""
    from torchlean.backend.providers.reference import kernels as reference

    x = np.random.default_rng(3).integers(-(2**62), 2**62, size=(2, 1, 4), dtype=np.int64)
    pairs = [
        (aten.reshape(x, shape=(4, -1)), reference.reshape(x, shape=(4, -1))),
        (aten.permute(x, perm=(2, 0, 1)), reference.permute(x, perm=(2, 0, 1))),
        (aten.broadcast(x, shape=(3, 2, 5, 4)), reference.broadcast(x, shape=(3, 2, 5, 4))),
    ]
    for ours, theirs in pairs:
        assert ours.dtype == np.int64
        np.testing.assert_array_equal(ours, theirs)
    (tensor,) = aten_guards.check_aten_layout("reshape", x, int64=True)
    assert str(tensor.dtype) == "torch.int64"
    with pytest.raises(GuardError, match=r"accepted: native-byte-order float32, float64 or bool$"):
        aten_guards.check_aten_layout("softmax", x)


def test_layout_guard_copies_views_and_shares_contiguous_storage() -> None:
    base = np.arange(12.0).reshape(3, 4)
    view = base.T
    readonly = np.arange(3.0)
    readonly.flags.writeable = False
    shared, copied, frozen, mask = aten_guards.check_aten_layout("matmul", base, view, readonly, MASK)
    assert np.shares_memory(shared.numpy(), base) and np.shares_memory(mask.numpy(), MASK)
    assert not np.shares_memory(copied.numpy(), base)
    np.testing.assert_array_equal(copied.numpy(), view)
    assert not np.shares_memory(frozen.numpy(), readonly)
    assert not shared.requires_grad


def test_results_come_back_from_torch_without_a_copy() -> None:
    import torch

    result = torch.arange(6.0).reshape(2, 3)
    array = _common.host(result)
    assert np.shares_memory(array, result.numpy())
    transposed = _common.host(result.mT)  # a non-contiguous result is made C-contiguous
    assert transposed.flags.c_contiguous and not np.shares_memory(transposed, result.numpy())
    np.testing.assert_array_equal(transposed, result.numpy().T)


def test_scalar_parameters_are_rounded_to_the_dtype_first() -> None:
    x = np.array([1.0, 3.0], np.float32)
    np.testing.assert_array_equal(pointwise.scale(x, factor=0.1), reference.scale(x, factor=0.1))
    assert _common.scalar_in(1e39, np.dtype(np.float32)) == np.inf
    assert _common.scalar_in(0.1, np.dtype(np.float32)) == float(np.float32(0.1))
    assert _common.scalar_in(0.1, np.dtype(np.float64)) == 0.1


# ----------------------------------------------------------------------- views in the runtime


@pytest.mark.parametrize(
    ("name", "view"),
    [
        ("reshape", lambda t: tl.reshape(t, (4,))),
        ("permute", lambda t: tl.permute(t, (0, 1))),
        ("broadcast", lambda t: tl.broadcast_to(t, (2, 2))),
        ("concat", lambda t: tl.concat([t], 0)),
        ("slice", lambda t: t[0:2, 1:]),
    ],
)
def test_view_ops_copy_under_every_cpu_profile(name: str, view: Callable[[tl.Tensor], tl.Tensor]) -> None:
    """Writing into the result of reshape/permute/broadcast/concat/slice never changes the input, under
    fast_cpu (aten) exactly as under checked_cpu (reference): values do not depend on the profile."""
    for profile in ("checked_cpu", "fast_cpu"):
        with tl.session(profile) as s:
            c = tl.tensor(np.zeros((2, 2)))
            v = view(c)
            v.copy_(np.ones(v.shape))
            np.testing.assert_array_equal(c.numpy(), np.zeros((2, 2)), err_msg=f"{profile} {name}")
            provider = "aten" if profile == "fast_cpu" else "reference"
            assert [k.capsule.name for k in s.selected] == [f"{provider}.{name}"]


# ----------------------------------------------------------------------------------- attention


def _attend(profile: str, q: Array, k: Array, v: Array, mask: Array) -> tuple[tl.Tensor, list[tl.Tensor]]:
    inputs = [tl.tensor(x, requires_grad=True) for x in (q, k, v)]
    with tl.session(profile) as s:
        out = tl.scaled_dot_product_attention(inputs[0], inputs[1], inputs[2], mask=mask)
    assert [c.capsule.name for c in s.selected] == [
        "aten.scaled_dot_product_attention" if profile == "fast_cpu" else "reference.attention"
    ]
    return out, inputs


def test_attention_blocked_entries_contribute_exactly_nothing() -> None:
    rng = np.random.default_rng(12)
    q, k, v = normal(rng, np.float64, 3, 4), normal(rng, np.float64, 5, 4), normal(rng, np.float64, 5, 6)
    base = aten.scaled_dot_product_attention(q, k, v, MASK)
    k2, v2 = k.copy(), v.copy()
    k2[[1, 4]], v2[[1, 4]] = 1e6, -1e6  # keys 1 and 4 are blocked for queries 0 and 1
    np.testing.assert_array_equal(aten.scaled_dot_product_attention(q, k2, v2, MASK)[:2], base[:2])
    assert np.all(base[1] == 0.0)  # query 1 is fully blocked


def test_attention_non_finite_keys_blocked_everywhere_never_leak() -> None:
    rng = np.random.default_rng(13)
    q, k, v = normal(rng, np.float64, 3, 4), normal(rng, np.float64, 5, 4), normal(rng, np.float64, 5, 6)
    mask = MASK.copy()
    mask[:, [1, 4]] = False  # keys 1 and 4 are blocked for every query
    k[1, 0], v[1, 3], v[4, 2], k[4, 1] = np.nan, np.nan, np.inf, -np.inf
    clean_k, clean_v = k.copy(), v.copy()
    clean_k[[1, 4]], clean_v[[1, 4]] = 0.0, 0.0
    got = aten.scaled_dot_product_attention(q, k, v, mask)
    assert np.all(np.isfinite(got)) and np.all(got[1] == 0.0)
    assert_close(got, reference.scaled_dot_product_attention(q, clean_k, clean_v, mask), 1e-10, "value")


def test_attention_query_attending_a_non_finite_value_is_the_only_non_finite_row() -> None:
    rng = np.random.default_rng(14)
    q, k, v = normal(rng, np.float64, 3, 4), normal(rng, np.float64, 5, 4), normal(rng, np.float64, 5, 6)
    v[1, 3] = np.nan  # keys 1 and 4: blocked for queries 0 and 1, allowed for query 2
    v[4, 2] = np.inf
    got = aten.scaled_dot_product_attention(q, k, v, MASK)
    want = reference.scaled_dot_product_attention(q, k, v, MASK)
    assert np.all(np.isfinite(got[0])) and np.all(got[1] == 0.0)
    assert_close(got, want, 1e-10, "attention with non-finite values")
    assert not np.all(np.isfinite(want[2]))


# ---------------------------------------------------------------------------------- planning


def test_fast_cpu_profile_policy_and_availability() -> None:
    fast = profiles.get("fast_cpu")
    assert fast.summary() == "profile=fast_cpu device=cpu assurance=checked vjp=torchlean-tape"
    assert fast.policy.provider.label == "prefer aten"
    assert fast.availability.devices == (Device.CPU,)
    assert fast.availability.providers == (Provider.REFERENCE, Provider.TORCHLEAN, Provider.ATEN)
    assert [m.name for m in fast.capsule_modules] == ["attention", "native-cuda", "reference", "aten"]


UNREDUCED = frozenset(
    BackendOp.parse(label)
    for label in (
        "relu", "gelu", "scale", "abs", "sqrt", "clamp", "sigmoid", "tanh", "softplus", "exp", "log", "sin",
        "cos", "inv", "safe_log", "reshape", "permute", "concat", "slice",
    )
)  # fmt: skip
"""The aten ops whose forward and VJP sum nothing (checked by reading aten/pointwise.py and
kernels.py: no torch.sum / reduce_to in their VJPs): ``n/a``, like the reference capsules."""


def test_fast_cpu_plans_aten_where_available_and_reference_otherwise() -> None:
    checked = profiles.get("checked_cpu")
    fast = profiles.get("fast_cpu")
    ops = [op for op in BackendOp if op not in (BackendOp.FFT_FNO, BackendOp.SELECTIVE_SCAN)]
    checked_plan = checked.plan_ops(ops)
    fast_plan = fast.plan_ops(ops)
    for op, mine, theirs in zip(ops, fast_plan.kernels, checked_plan.kernels, strict=True):
        if op in aten_capsules.ATEN_OPS:
            assert mine.capsule.name == f"aten.{op.label}"
            reduces = op not in UNREDUCED
            assert mine.capsule.numerical_policy.reduction is (
                ReductionPolicy.IMPLEMENTATION_DEFINED if reduces else ReductionPolicy.NOT_APPLICABLE
            )
        else:
            assert mine.capsule.name == theirs.capsule.name
            assert mine.capsule.provider is Provider.REFERENCE
    assert fast_plan.audit().check_contracts(AssurancePolicy.CHECKED).accepted
    assert not any(k.capsule.provider is Provider.ATEN for k in checked_plan.kernels)
    assert sum(k.capsule.provider is Provider.ATEN for k in fast_plan.kernels) == len(COVERED_LABELS)


def test_fast_cpu_still_refuses_ops_without_cpu_capsules() -> None:
    with pytest.raises(PlanningError, match="no admissible kernel capsule for op fft_fno on device cpu"):
        profiles.get("fast_cpu").plan_ops([BackendOp.FFT_FNO])


def test_plan_report_names_the_aten_capsule() -> None:
    text = profiles.get("fast_cpu").plan_report([BackendOp.CONV, BackendOp.RELU])
    lines = text.splitlines()
    for label, reduction in (("conv", "implementation-defined"), ("relu", "n/a")):
        assert (  # ATen's backward kernels compute their VJPs (review134 F1)
            f"  {label}: aten.{label} provider=aten trust=checked vjp=backend-vjp reduction={reduction}"
        ) in lines
    # the layout evidence is the guard that refuses on the aten path (check_aten_layout only converts)
    assert "guarded at runtime by torchlean.backend.providers.reference.guards.check_canonical_layout" in text
    assert "check_aten_layout" not in text


@pytest.mark.parametrize(
    ("call", "refusal"),
    [
        (lambda: aten.softmax(np.ones(3, dtype=np.dtype(">f8")), axis=0), r"softmax: input x has dtype >f8"),
        (
            lambda: aten_spatial.max_pool(np.ones((1, 1, 4), dtype=np.dtype(">f4")), kernel_size=2),
            r"max_pool: .*x has dtype >f4",
        ),
    ],
    ids=["softmax", "max_pool"],
)
def test_the_reference_layout_guard_refuses_before_the_hand_over_to_torch(call: Any, refusal: str) -> None:
    """A byte-swapped operand on an aten path is refused by ``check_canonical_layout`` (the
    capsules' layout evidence), never reaching ``check_aten_layout``'s own refusal."""
    with pytest.raises(GuardError, match=refusal) as refused:
        call()
    assert "native-byte-order" not in str(refused.value)  # check_aten_layout's wording


def test_every_aten_capsule_has_one_linked_kernel_with_a_vjp() -> None:
    for capsule in aten_capsules.CAPSULES:
        kernel = select_linked(capsule.op, capsule, linked_kernels(capsule.op))
        assert kernel.name == "TorchLean ATen CPU"
        assert (kernel.provider, kernel.device) == (Provider.ATEN, Device.CPU)
        assert kernel.vjp is not None
        assert capsule.value_contract.provenance[0].path == aten_capsules.kernel_path(capsule.op)


def test_importing_the_aten_handlers_does_not_import_torch() -> None:
    import subprocess
    import sys

    code = (
        "import sys; import torchlean.backend.providers.aten.handlers as h; "
        "assert len(h.LINKED_KERNELS) == 40; print('torch' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("label", "call"),
    [
        ("add", lambda a, b: tl.add(a, b)),
        ("layer_norm", lambda a, b: tl.layer_norm(a, weight=tl.tensor(np.ones(3)))),
    ],
)
def test_dtype_mismatch_message_does_not_blame_the_reference_provider(
    label: str, call: Callable[[Any, Any], Any]
) -> None:
    """The aten capsules run the reference guards: under ``fast_cpu`` the refusal of mixed dtypes
    names no provider it did not use."""
    a, b = tl.tensor(np.ones((2, 3), np.float32)), tl.tensor(np.ones((2, 3)))
    with tl.session("fast_cpu"), pytest.raises(GuardError) as caught:
        call(a, b)
    message = str(caught.value)
    assert message.startswith(f"{label}: ") and "do not promote" in message
    assert "torchlean kernels do not promote" in message and "reference" not in message


@pytest.mark.parametrize(
    ("row", "aten_row"),
    [
        ([0.0, 2e19, 2e19, 0.0], [0.0, 0.0, 0.0, 0.0]),  # the squared deviations overflow: 1/sqrt(inf)
        ([3e38, 3e38], [np.nan, np.nan]),  # the sum itself overflows
    ],
)
def test_norms_where_finite_statistics_overflow_diverge_as_their_value_claims_say(
    row: list[float], aten_row: list[float]
) -> None:
    # The aten layer_norm / batch_norm value claims are limited to rows whose statistics are finite,
    # and name these two rows; the reference rescales them (hand values: [-1, 1, 1, -1] and [0, 0]).
    x = np.array([row], np.float32)
    expected = {(0.0, 2e19): [-1.0, 1.0, 1.0, -1.0], (3e38, 3e38): [0.0, 0.0]}[(row[0], row[1])]
    channels = x.reshape(-1, 1)
    np.testing.assert_array_equal(spatial.layer_norm(x, eps=1e-5), np.array([expected], np.float32))
    np.testing.assert_array_equal(aten_spatial.layer_norm(x, eps=1e-5), np.array([aten_row], np.float32))
    normalised = aten_spatial.batch_norm(channels, None, None, None, None, training=True, eps=1e-5)
    np.testing.assert_array_equal(normalised.ravel(), np.array(aten_row, np.float32))
    for capsule in aten_capsules.CAPSULES:
        if capsule.op in (BackendOp.LAYER_NORM, BackendOp.BATCH_NORM):
            claim = capsule.value_contract.summary
            assert "[0, 2e19, 2e19, 0]" in claim and "[3e38, 3e38]" in claim


def test_batch_norm_of_a_constant_channel_shows_torchs_rounded_mean_as_its_value_claim_says() -> None:
    # Every value equal: x - mean is exactly 0 (the reference's left-fold mean of equal values is
    # the value itself); torch's float32 mean is rounded, and the error is divided by sqrt(eps).
    x = np.full((100, 1), 12345.678, np.float32)
    np.testing.assert_array_equal(spatial.batch_norm(x, None, None, None, None, training=True), 0.0)
    threads = torch.get_num_threads()
    try:  # review73 F3: 0.73 on one thread, -0.83 on two with torch 2.13's CPU kernel here
        for count in (1, 2):
            torch.set_num_threads(count)
            torch_result = aten_spatial.batch_norm(x, None, None, None, None, training=True)
            assert np.all(np.abs(torch_result) > 0.05), (count, torch_result[0])
    finally:
        torch.set_num_threads(threads)
    (claim,) = [c.value_contract.summary for c in aten_capsules.CAPSULES if c.op is BackendOp.BATCH_NORM]
    assert "100 x 12345.678" in claim and "sqrt(var + eps)" in claim


def test_layer_norm_backward_of_a_constant_row_shows_torchs_rounded_mean_as_its_vjp_claim_says() -> None:
    """review108 F2: the README listed this deviation, the capsule's VJP summary did not. A row of
    equal values: the reference's mean is the value itself, so y = 0, the weight gradient sum(g * y)
    is 0 and dx is the exact gradient; ATen's backward recomputes torch's rounded mean."""
    x = np.full((1, 100), 12345.678, np.float32)
    weight, bias = np.ones(100, np.float32), np.zeros(100, np.float32)
    g = np.arange(100, dtype=np.float32).reshape(1, 100)
    out = spatial.layer_norm(x, weight, bias)
    np.testing.assert_array_equal(out, 0.0)
    dx, dw, _ = spatial.layer_norm_vjp(g, x, weight, bias, out=out)
    np.testing.assert_array_equal(dw, 0.0)
    torch_out = aten_spatial.layer_norm(x, weight, bias)
    torch_dx, torch_dw, _ = aten_spatial.layer_norm_vjp(g, x, weight, bias, out=torch_out)
    assert abs(float(np.abs(torch_dw).max()) - 5.16) < 0.01  # the summary's number (torch 2.13, CPU)
    relative = np.linalg.norm(torch_dx - dx) / np.linalg.norm(dx)
    assert 0.03 < relative < 0.045  # "3.7 % off"
    (claim,) = [c.vjp_contract.summary for c in aten_capsules.CAPSULES if c.op is BackendOp.LAYER_NORM]
    assert "1 x 100 of 12345.678" in claim and "5.16" in claim and "3.7 %" in claim
