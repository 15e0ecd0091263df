"""torch-style ``Tensor`` methods (``t.exp()``, ``t.softmax(dim)``, ``t.flatten(1)``,
``t.squeeze((0, 2))``, ``t.expand(-1, 4)``, ``t.sum(dim=1, keepdim=True)``, ...) against
``torch.Tensor``'s, and against the ``torchlean.functional`` op each delegates to.

Oracles: torch 2.13 in float64, called with the *same* call (one lambda applied to a torchlean
and to a torch tensor, so the spellings are torch's: positional and keyword names included), for
values and for gradients (``backward`` of a random cotangent through the tape, ``torch.autograd``
for torch); and ``torchlean.functional`` itself for bit-for-bit equality (values, gradients and
the recorded op). Errors: the refusals name the method and the accepted range, and torch refuses
the same calls (apart from the deviations listed in the methods' docstrings, each tested here).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch

import torchlean as tl
from torchlean import functional as F
from torchlean.backend.errors import GuardError
from torchlean.tensor import Tensor, TensorTypeError

Array = np.ndarray[Any, Any]
Make = Callable[[np.random.Generator], Sequence[Array]]


@dataclass(frozen=True)
class Case:
    id: str
    call: Callable[..., Any]  # applied to torchlean tensors and to torch tensors alike
    functional: Callable[..., Tensor]  # the torchlean.functional spelling of the same op
    make: Make
    exact: bool = False  # values bit-identical to torch's (moves, no arithmetic) ...
    sums: bool = False  # ... but the gradient sums (expand: over the broadcast axes, a left fold)


def _n(*shape: int) -> Make:
    return lambda r: [r.standard_normal(shape)]


def _pos(*shape: int) -> Make:
    return lambda r: [r.uniform(0.3, 2.0, shape)]


def _away(*shape: int) -> Make:
    """Normal values at least 0.2 away from 0 (relu's and abs's kinks out of reach)."""

    def make(r: np.random.Generator) -> Sequence[Array]:
        x = r.standard_normal(shape)
        return [np.where(x >= 0, x + 0.2, x - 0.2)]

    return make


def _grid(*shape: int) -> Make:
    """Values on a grid of step 0.1 offset by 0.013: never equal to the clamp bounds below."""
    return lambda r: [(r.integers(-12, 12, shape) * 0.1 + 0.013).astype(np.float64)]


def _two(a: tuple[int, ...], b: tuple[int, ...]) -> Make:
    return lambda r: [r.standard_normal(a), r.standard_normal(b)]


def _like(x: Any, data: Array) -> Any:
    """``data`` as the kind of ``x``: a torch tensor for torch (an index: int64), else as is
    (numpy data, which torchlean's methods take), so one lambda serves both libraries."""
    return torch.tensor(data) if isinstance(x, torch.Tensor) else data


def _shape_donor(x: Any, shape: tuple[int, ...]) -> Any:
    """A tensor of ``shape`` of x's kind (for ``expand_as``/``reshape_as``), not a leaf of the case."""
    zeros = np.zeros(shape)
    return torch.tensor(zeros) if isinstance(x, torch.Tensor) else tl.tensor(zeros)


GATHER_1 = np.array([[0, 3, 3], [1, 0, 2]])  # (2, 3) into a (2, 4) input along dim 1, repeats
GATHER_0 = np.array([[1, 0], [1, 1], [0, 0]])  # (3, 2) into a (2, 4) input along dim 0
SCATTER_0 = np.array([[0, 2, 2, 1], [2, 2, 0, 1]])  # (2, 4) into (3, 4) along dim 0, duplicates


# shapes of the pointwise cases: ordinary, zero-size, one-element rank 1, rank 0
POINTWISE_SHAPES = [(2, 3), (0, 4), (1,), ()]

POINTWISE: list[tuple[str, Callable[..., Any], Callable[..., Tensor], Callable[..., Make]]] = [
    ("exp", lambda x: x.exp(), F.exp, _n),
    ("log", lambda x: x.log(), F.log, _pos),
    ("sqrt", lambda x: x.sqrt(), F.sqrt, _pos),
    ("abs", lambda x: x.abs(), F.abs, _away),
    ("neg", lambda x: x.neg(), F.neg, _n),
    ("relu", lambda x: x.relu(), F.relu, _away),
    ("tanh", lambda x: x.tanh(), F.tanh, _n),
    ("sigmoid", lambda x: x.sigmoid(), F.sigmoid, _n),
    ("sin", lambda x: x.sin(), F.sin, _n),
    ("cos", lambda x: x.cos(), F.cos, _n),
    ("reciprocal", lambda x: x.reciprocal(), F.inv, _away),
    ("clamp_both", lambda x: x.clamp(-0.5, 0.7), lambda x: F.clamp(x, -0.5, 0.7), _grid),
    ("clamp_min_kw", lambda x: x.clamp(min=0.1), lambda x: F.clamp(x, lo=0.1), _grid),
    ("clamp_max_kw", lambda x: x.clamp(max=-0.2), lambda x: F.clamp(x, hi=-0.2), _grid),
    ("clamp_min_positional", lambda x: x.clamp(0.0), lambda x: F.clamp(x, 0.0), _grid),
    ("clip_both_kw", lambda x: x.clip(min=-0.3, max=0.3), lambda x: F.clamp(x, -0.3, 0.3), _grid),
    ("clip_max_kw", lambda x: x.clip(max=0.4), lambda x: F.clamp(x, hi=0.4), _grid),
]

CASES: list[Case] = [
    Case(f"{name}-{shape}", call, functional, make(*shape))
    for name, call, functional, make in POINTWISE
    for shape in POINTWISE_SHAPES
] + [
    # ------------------------------------------------------------------------------- softmaxes
    Case("softmax_1", lambda x: x.softmax(1), lambda x: F.softmax(x, 1), _n(3, 5)),
    Case("softmax_dim_kw_neg", lambda x: x.softmax(dim=-2), lambda x: F.softmax(x, -2), _n(2, 3, 4)),
    Case("softmax_0_rank1", lambda x: x.softmax(0), lambda x: F.softmax(x, 0), _n(6)),
    Case("softmax_one_element", lambda x: x.softmax(-1), lambda x: F.softmax(x, -1), _n(1)),
    Case("softmax_rank0", lambda x: x.softmax(0), lambda x: F.softmax(x, 0), _n()),
    Case("softmax_rank0_neg", lambda x: x.softmax(dim=-1), lambda x: F.softmax(x, -1), _n()),
    Case("softmax_zero_size_rows", lambda x: x.softmax(1), lambda x: F.softmax(x, 1), _n(0, 3)),
    Case("softmax_zero_size_axis", lambda x: x.softmax(0), lambda x: F.softmax(x, 0), _n(0, 3)),
    Case("log_softmax_1", lambda x: x.log_softmax(1), lambda x: F.log_softmax(x, 1), _n(3, 5)),
    Case("log_softmax_kw_neg", lambda x: x.log_softmax(dim=-3), lambda x: F.log_softmax(x, -3), _n(2, 3, 4)),
    Case("log_softmax_one_element", lambda x: x.log_softmax(0), lambda x: F.log_softmax(x, 0), _n(1)),
    Case("log_softmax_rank0", lambda x: x.log_softmax(-1), lambda x: F.log_softmax(x, -1), _n()),
    Case("log_softmax_zero_size", lambda x: x.log_softmax(-1), lambda x: F.log_softmax(x, -1), _n(2, 0)),
    # ---------------------------------------------------------------------------------- matmul
    Case("matmul_2d", lambda a, b: a.matmul(b), F.matmul, _two((3, 4), (4, 2))),
    Case("matmul_other_kw", lambda a, b: a.matmul(other=b), F.matmul, _two((2, 3, 4), (4,))),
    Case("matmul_1d_1d", lambda a, b: a.matmul(b), F.matmul, _two((5,), (5,))),
    Case("matmul_batch_broadcast", lambda a, b: a.matmul(b), F.matmul, _two((2, 1, 3, 4), (5, 4, 2))),
    Case("matmul_one_element", lambda a, b: a.matmul(b), F.matmul, _two((1, 1), (1, 1))),
    Case("matmul_zero_contraction", lambda a, b: a.matmul(b), F.matmul, _two((3, 0), (0, 2))),
    Case("matmul_zero_rows", lambda a, b: a.matmul(b), F.matmul, _two((0, 4), (4, 2))),
    # ---------------------------------------------------------------------- gather, scatter_add
    Case("gather_1", lambda x: x.gather(1, _like(x, GATHER_1)), lambda x: F.gather(x, GATHER_1, 1),
         _n(2, 4), True, sums=True),
    Case("gather_0_kw", lambda x: x.gather(dim=0, index=_like(x, GATHER_0)),
         lambda x: F.gather(x, GATHER_0, 0), _n(2, 4), True, sums=True),
    Case("gather_neg_dim", lambda x: x.gather(-1, _like(x, GATHER_1)), lambda x: F.gather(x, GATHER_1, -1),
         _n(2, 4), True, sums=True),
    Case("gather_empty_index", lambda x: x.gather(1, _like(x, np.zeros((2, 0), np.int64))),
         lambda x: F.gather(x, np.zeros((2, 0), np.int64), 1), _n(2, 4), True),
    Case("scatter_add_0", lambda b, s: b.scatter_add(0, _like(b, SCATTER_0), s),
         lambda b, s: F.scatter_add(b, SCATTER_0, s, 0), _two((3, 4), (2, 4))),
    Case("scatter_add_kw_neg", lambda b, s: b.scatter_add(dim=-1, index=_like(b, SCATTER_0[:, :3]), src=s),
         lambda b, s: F.scatter_add(b, SCATTER_0[:, :3], s, -1), _two((2, 4), (2, 3))),
    # ------------------------------------------------------------------- expand_as, reshape_as
    Case("expand_as", lambda x: x.expand_as(_shape_donor(x, (2, 3, 4))),
         lambda x: F.broadcast_to(x, (2, 3, 4)), _n(3, 1), True, sums=True),
    Case("expand_as_same", lambda x: x.expand_as(_shape_donor(x, (3, 1))),
         lambda x: F.broadcast_to(x, (3, 1)), _n(3, 1), True),
    Case("expand_as_rank0", lambda x: x.expand_as(_shape_donor(x, (2,))),
         lambda x: F.broadcast_to(x, (2,)), _n(), True, sums=True),
    Case("reshape_as", lambda x: x.reshape_as(_shape_donor(x, (3, 2))),
         lambda x: F.reshape(x, (3, 2)), _n(2, 3), True),
    Case("reshape_as_rank0", lambda x: x.reshape_as(_shape_donor(x, ())),
         lambda x: F.reshape(x, ()), _n(1, 1), True),
    # ------------------------------------------------------------------------- flatten (exact)
    Case("flatten", lambda x: x.flatten(), lambda x: F.reshape(x, (24,)), _n(2, 3, 4), True),
    Case("flatten_1", lambda x: x.flatten(1), lambda x: F.reshape(x, (2, 12)), _n(2, 3, 4), True),
    Case(
        "flatten_kw_neg",
        lambda x: x.flatten(start_dim=-3, end_dim=-2),
        lambda x: F.reshape(x, (2, 12, 5)),
        _n(2, 3, 4, 5),
        True,
    ),
    Case("flatten_0_0", lambda x: x.flatten(0, 0), lambda x: F.reshape(x, (2, 3)), _n(2, 3), True),
    Case("flatten_rank0", lambda x: x.flatten(), lambda x: F.reshape(x, (1,)), _n(), True),
    Case("flatten_rank0_dims", lambda x: x.flatten(-1, 0), lambda x: F.reshape(x, (1,)), _n(), True),
    Case("flatten_one_element", lambda x: x.flatten(), lambda x: F.reshape(x, (1,)), _n(1, 1, 1), True),
    Case("flatten_rank1", lambda x: x.flatten(), lambda x: F.reshape(x, (4,)), _n(4), True),
    Case("flatten_zero_size", lambda x: x.flatten(1), lambda x: F.reshape(x, (2, 0)), _n(2, 0, 4), True),
    # ----------------------------------------------------------------------- unsqueeze (exact)
    Case("unsqueeze_0", lambda x: x.unsqueeze(0), lambda x: F.reshape(x, (1, 2, 3)), _n(2, 3), True),
    Case("unsqueeze_last", lambda x: x.unsqueeze(2), lambda x: F.reshape(x, (2, 3, 1)), _n(2, 3), True),
    Case("unsqueeze_neg1", lambda x: x.unsqueeze(-1), lambda x: F.reshape(x, (2, 3, 1)), _n(2, 3), True),
    Case(
        "unsqueeze_kw_neg3", lambda x: x.unsqueeze(dim=-3), lambda x: F.reshape(x, (1, 2, 3)), _n(2, 3), True
    ),
    Case("unsqueeze_middle", lambda x: x.unsqueeze(-2), lambda x: F.reshape(x, (2, 1, 3)), _n(2, 3), True),
    Case("unsqueeze_rank0", lambda x: x.unsqueeze(-1), lambda x: F.reshape(x, (1,)), _n(), True),
    Case("unsqueeze_zero_size", lambda x: x.unsqueeze(1), lambda x: F.reshape(x, (0, 1, 3)), _n(0, 3), True),
    # ------------------------------------------------------------------------- squeeze (exact)
    Case("squeeze_all", lambda x: x.squeeze(), lambda x: F.reshape(x, (3, 2)), _n(1, 3, 1, 2), True),
    Case("squeeze_0", lambda x: x.squeeze(0), lambda x: F.reshape(x, (3, 1, 2)), _n(1, 3, 1, 2), True),
    Case(
        "squeeze_not_one", lambda x: x.squeeze(1), lambda x: F.reshape(x, (1, 3, 1, 2)), _n(1, 3, 1, 2), True
    ),
    Case(
        "squeeze_kw_neg", lambda x: x.squeeze(dim=-2), lambda x: F.reshape(x, (1, 3, 2)), _n(1, 3, 1, 2), True
    ),
    Case("squeeze_tuple", lambda x: x.squeeze((0, 2)), lambda x: F.reshape(x, (3, 2)), _n(1, 3, 1, 2), True),
    Case(
        "squeeze_list_with_non_one",
        lambda x: x.squeeze([0, 1, -1]),
        lambda x: F.reshape(x, (3, 1, 2)),
        _n(1, 3, 1, 2),
        True,
    ),
    Case(
        "squeeze_tuple_neg",
        lambda x: x.squeeze((-4, -2)),
        lambda x: F.reshape(x, (3, 2)),
        _n(1, 3, 1, 2),
        True,
    ),
    Case("squeeze_empty_tuple", lambda x: x.squeeze(()), lambda x: F.reshape(x, (1, 3)), _n(1, 3), True),
    Case("squeeze_rank0", lambda x: x.squeeze(), lambda x: F.reshape(x, ()), _n(), True),
    Case("squeeze_rank0_dim", lambda x: x.squeeze(-1), lambda x: F.reshape(x, ()), _n(), True),
    Case("squeeze_one_element", lambda x: x.squeeze(), lambda x: F.reshape(x, ()), _n(1, 1), True),
    Case("squeeze_zero_size", lambda x: x.squeeze(), lambda x: F.reshape(x, (0,)), _n(0, 1), True),
    Case("squeeze_zero_extent_kept", lambda x: x.squeeze(0), lambda x: F.reshape(x, (0, 1)), _n(0, 1), True),
    # ------------------------------------------------------------------------------- t (exact)
    Case("t_2d", lambda x: x.t(), lambda x: F.permute(x, (1, 0)), _n(2, 3), True),
    Case("t_1d", lambda x: x.t(), lambda x: F.permute(x, (0,)), _n(3), True),
    Case("t_rank0", lambda x: x.t(), lambda x: F.permute(x, ()), _n(), True),
    Case("t_one_element", lambda x: x.t(), lambda x: F.permute(x, (1, 0)), _n(1, 1), True),
    Case("t_zero_size", lambda x: x.t(), lambda x: F.permute(x, (1, 0)), _n(0, 2), True),
    # ------------------------------------------- expand (exact values; the gradient sums, a left fold)
    Case("expand", lambda x: x.expand(3, 4), lambda x: F.broadcast_to(x, (3, 4)), _n(3, 1), True, sums=True),
    Case(
        "expand_tuple",
        lambda x: x.expand((2, 3, 4)),
        lambda x: F.broadcast_to(x, (2, 3, 4)),
        _n(3, 1),
        True,
        sums=True,
    ),
    Case(
        "expand_list",
        lambda x: x.expand([3, 4]),
        lambda x: F.broadcast_to(x, (3, 4)),
        _n(3, 1),
        True,
        sums=True,
    ),
    Case(
        "expand_keep",
        lambda x: x.expand(-1, 4),
        lambda x: F.broadcast_to(x, (3, 4)),
        _n(3, 1),
        True,
        sums=True,
    ),
    Case(
        "expand_new_and_keep",
        lambda x: x.expand(2, -1, 4),
        lambda x: F.broadcast_to(x, (2, 3, 4)),
        _n(3, 1),
        True,
        sums=True,
    ),
    Case("expand_all_keep", lambda x: x.expand(-1, -1), lambda x: F.broadcast_to(x, (3, 1)), _n(3, 1), True),
    Case("expand_rank0", lambda x: x.expand(3), lambda x: F.broadcast_to(x, (3,)), _n(), True, sums=True),
    Case("expand_rank0_to_rank0", lambda x: x.expand(()), lambda x: F.broadcast_to(x, ()), _n(), True),
    Case(
        "expand_one_element",
        lambda x: x.expand(2, 2),
        lambda x: F.broadcast_to(x, (2, 2)),
        _n(1),
        True,
        sums=True,
    ),
    Case("expand_to_zero", lambda x: x.expand(3, 0), lambda x: F.broadcast_to(x, (3, 0)), _n(3, 1), True),
    Case("expand_zero_keep", lambda x: x.expand(0, -1), lambda x: F.broadcast_to(x, (0, 1)), _n(1, 1), True),
    Case(
        "expand_numpy_ints",
        lambda x: x.expand(np.int64(2), np.int32(4)),
        lambda x: F.broadcast_to(x, (2, 4)),
        _n(1),
        True,
        sums=True,
    ),
    # --------------------------------------------------------------------------- clone (exact)
    Case("clone", lambda x: x.clone(), lambda x: F.reshape(x, (2, 3)), _n(2, 3), True),
    Case("clone_rank0", lambda x: x.clone(), lambda x: F.reshape(x, ()), _n(), True),
    Case("clone_one_element", lambda x: x.clone(), lambda x: F.reshape(x, (1,)), _n(1), True),
    Case("clone_zero_size", lambda x: x.clone(), lambda x: F.reshape(x, (0, 2)), _n(0, 2), True),
    # ----------------------------------------------------------------------------- reductions
    Case("sum_dim", lambda x: x.sum(dim=1), lambda x: F.reduce_sum(x, 1), _n(3, 4)),
    Case("sum_positional", lambda x: x.sum(1, True), lambda x: F.reduce_sum(x, 1, True), _n(3, 4)),
    Case(
        "sum_dim_keepdim_neg",
        lambda x: x.sum(dim=-1, keepdim=True),
        lambda x: F.reduce_sum(x, -1, keepdims=True),
        _n(2, 3, 4),
    ),
    Case("sum_dim_tuple", lambda x: x.sum(dim=(0, 2)), lambda x: F.reduce_sum(x, (0, 2)), _n(2, 3, 4)),
    Case(
        "sum_dim_list_keepdim",
        lambda x: x.sum(dim=[0, -1], keepdim=True),
        lambda x: F.reduce_sum(x, (0, -1), True),
        _n(2, 3, 4),
    ),
    Case("sum_dim_none", lambda x: x.sum(dim=None), lambda x: F.reduce_sum(x), _n(2, 3)),
    Case(
        "sum_axis_keepdims",
        lambda x: x.sum(axis=0, keepdims=True),
        lambda x: F.reduce_sum(x, 0, True),
        _n(2, 3),
    ),
    Case(
        "sum_axis_keepdim",
        lambda x: x.sum(axis=0, keepdim=True),
        lambda x: F.reduce_sum(x, 0, True),
        _n(2, 3),
    ),
    Case(
        "sum_dim_keepdims",
        lambda x: x.sum(dim=1, keepdims=True),
        lambda x: F.reduce_sum(x, 1, True),
        _n(2, 3),
    ),
    Case("sum_all", lambda x: x.sum(), lambda x: F.reduce_sum(x), _n(2, 3)),
    Case("sum_rank0", lambda x: x.sum(dim=0), lambda x: F.reduce_sum(x, 0), _n()),
    Case("sum_one_element", lambda x: x.sum(dim=0, keepdim=True), lambda x: F.reduce_sum(x, 0, True), _n(1)),
    Case("sum_zero_size", lambda x: x.sum(dim=0), lambda x: F.reduce_sum(x, 0), _n(0, 3)),
    Case("mean_dim", lambda x: x.mean(dim=1), lambda x: F.reduce_mean(x, 1), _n(3, 4)),
    Case(
        "mean_dim_keepdim_neg",
        lambda x: x.mean(dim=-2, keepdim=True),
        lambda x: F.reduce_mean(x, -2, keepdims=True),
        _n(2, 3, 4),
    ),
    Case("mean_dim_tuple", lambda x: x.mean(dim=(0, 1)), lambda x: F.reduce_mean(x, (0, 1)), _n(2, 3, 4)),
    Case(
        "mean_axis_keepdims",
        lambda x: x.mean(axis=1, keepdims=True),
        lambda x: F.reduce_mean(x, 1, True),
        _n(2, 3),
    ),
    Case("mean_all", lambda x: x.mean(), lambda x: F.reduce_mean(x), _n(2, 3)),
    Case("mean_rank0", lambda x: x.mean(dim=-1), lambda x: F.reduce_mean(x, -1), _n()),
    Case("mean_zero_size_nan", lambda x: x.mean(dim=0), lambda x: F.reduce_mean(x, 0), _n(0, 3)),
]


def _arrays(case: Case, dtype: str = "float64") -> list[Array]:
    return [np.asarray(a, dtype=dtype) for a in case.make(np.random.default_rng(sum(map(ord, case.id))))]


def _cotangent(shape: tuple[int, ...]) -> Array:
    return np.random.default_rng(7).standard_normal(shape)


def _run(
    call: Callable[..., Any], arrays: list[Array], profile: str = "checked_cpu"
) -> tuple[Tensor, list[Tensor]]:
    """``call`` on leaf tensors of ``arrays`` in a session of ``profile``, then backward of a
    random cotangent (:func:`_cotangent`) through the tape."""
    with tl.session(profile=profile):
        leaves = [tl.tensor(a, requires_grad=True) for a in arrays]
        out = call(*leaves)
        out.backward(_cotangent(out.shape))
    return out, leaves


def _bits(t: Tensor) -> tuple[tuple[int, ...], np.dtype[Any], bytes]:
    values = t.numpy()
    return values.shape, values.dtype, values.tobytes()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_values_and_gradients_match_torch_float64(case: Case) -> None:
    arrays = _arrays(case)
    out, leaves = _run(case.call, arrays)
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    expected = case.call(*theirs)
    expected.backward(torch.tensor(_cotangent(tuple(expected.shape))))
    assert out.shape == tuple(expected.shape)
    assert out.dtype == np.float64
    close = lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)  # noqa: E731
    (np.testing.assert_array_equal if case.exact else close)(out.numpy(), expected.detach().numpy())
    for mine, torch_leaf in zip(leaves, theirs, strict=True):
        assert mine.grad is not None and torch_leaf.grad is not None
        assert mine.grad.shape == tuple(torch_leaf.grad.shape)
        exact = case.exact and not case.sums
        (np.testing.assert_array_equal if exact else close)(mine.grad.numpy(), torch_leaf.grad.numpy())


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_method_is_the_functional_op_bit_for_bit(case: Case, dtype: str, profile: str) -> None:
    """Values, gradients, dtype and the recorded op: ``t.method(...)`` is ``F.op(t, ...)``."""
    arrays = _arrays(case, dtype)
    mine, mine_leaves = _run(case.call, arrays, profile)
    theirs, their_leaves = _run(case.functional, arrays, profile)
    assert mine.dtype == theirs.dtype == np.dtype(dtype)
    assert _bits(mine) == _bits(theirs)
    assert mine.grad_fn == theirs.grad_fn and mine.grad_fn is not None
    for a, b in zip(mine_leaves, their_leaves, strict=True):
        assert a.grad is not None and b.grad is not None
        assert _bits(a.grad) == _bits(b.grad)


def test_the_recorded_ops_are_the_ones_the_docstrings_name() -> None:
    x = tl.tensor(np.ones((1, 3)), requires_grad=True)
    recorded = {
        "exp": x.exp(),
        "clamp": x.clamp(0.0),
        "scale": x.neg(),
        "softmax": x.softmax(1),
        "reshape": x.clone(),
        "permute": x.t(),
        "broadcast": x.expand(2, 3),
        "reduce_sum": x.sum(dim=0),
    }
    for op, out in recorded.items():
        assert out.grad_fn == op
    for out in (x.flatten(), x.unsqueeze(0), x.squeeze(), x.reshape_as(x)):
        assert out.grad_fn == "reshape"
    more = {
        "sin": x.sin(),
        "cos": x.cos(),
        "inv": x.reciprocal(),
        "gather": x.gather(1, np.array([[2, 0]])),
        "scatter_add": x.scatter_add(0, np.array([[0, 0, 0]]), x),
        "broadcast": x.expand_as(tl.tensor(np.zeros((2, 3)))),
    }
    for op, out in more.items():
        assert out.grad_fn == op


# --------------------------------------------------------------------------------- requires_grad_


def test_requires_grad_underscore_follows_torchs_rules() -> None:
    """``t.requires_grad_(flag)`` (review30 F2) against ``torch.Tensor.requires_grad_``: sets a
    leaf's flag and returns the tensor; a non-leaf takes True (no change) and refuses False; an
    integer tensor refuses True and takes False; non-bools are refused."""
    data = np.array([1.0, -2.0, 3.0])
    x = tl.tensor(data)
    assert x.requires_grad_() is x and x.requires_grad and x.is_leaf
    assert x.requires_grad_(False) is x and not x.requires_grad
    assert x.requires_grad_(requires_grad=True) is x and x.requires_grad
    theirs = torch.tensor(data).requires_grad_()
    (x * x).sum().backward()
    (theirs * theirs).sum().backward()
    assert x.grad is not None and theirs.grad is not None
    np.testing.assert_array_equal(x.grad.numpy(), theirs.grad.numpy())

    y, ty = x * 2.0, theirs * 2.0
    assert y.requires_grad_() is y and y.requires_grad and not y.is_leaf
    assert ty.requires_grad_() is ty  # torch: True on a non-leaf is no change
    with pytest.raises(tl.TensorError, match=r"^requires_grad_\(False\) on a tensor produced by `scale`: "
                       r"only a leaf's flag can be changed, as in torch \(accepted: t\.detach\(\)"):
        y.requires_grad_(False)
    with pytest.raises(RuntimeError, match="only change requires_grad flags of leaf variables"):
        ty.requires_grad_(False)
    assert y.requires_grad and not y.detach().requires_grad

    ints, tints = tl.tensor(np.arange(3)), torch.arange(3)
    with pytest.raises(tl.TensorError) as caught:
        ints.requires_grad_()
    assert str(caught.value) == (  # review230 F5: the way to a float tensor
        "only float32 and float64 tensors can require gradients (got dtype int64; make a float tensor of "
        'the values: tl.tensor(values, dtype="float32", requires_grad=True))'
    )
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        tints.requires_grad_()
    assert ints.requires_grad_(False) is ints and not tints.requires_grad_(False).requires_grad
    for bad in (1, 0.0, None, "yes"):
        with pytest.raises(TensorTypeError, match=r"^requires_grad must be a bool; got"):
            x.requires_grad_(bad)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="must be bool"):
            torch.zeros(2).requires_grad_(bad)
    with tl.no_grad():  # a result under no_grad is a leaf, in torch too
        z = x * 2.0
    assert z.is_leaf and z.requires_grad_() is z and z.requires_grad


@pytest.mark.parametrize("method", ["sin", "cos", "reciprocal"])
def test_new_pointwise_methods_at_special_values_match_torch(method: str) -> None:
    """Values and gradients at ±0, ±inf, NaN, subnormals and huge arguments, bit for bit (NaN as
    NaN) in float64, checked_cpu and fast_cpu."""
    values = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -1e-310, 1e300, 1e22, -800.0, 0.3])
    theirs = torch.tensor(values, requires_grad=True)
    expected = getattr(theirs, method)()
    expected.backward(torch.ones_like(theirs))
    assert theirs.grad is not None
    for profile in ("checked_cpu", "fast_cpu"):
        with tl.session(profile=profile):
            x = tl.tensor(values, requires_grad=True)
            out = getattr(x, method)()
            out.backward(np.ones_like(values))
        assert x.grad is not None
        np.testing.assert_array_equal(out.numpy(), expected.detach().numpy())  # NaN equals NaN here
        np.testing.assert_array_equal(np.signbit(out.numpy()), np.signbit(expected.detach().numpy()))
        np.testing.assert_array_equal(x.grad.numpy(), theirs.grad.numpy())


# ----------------------------------------------------------------- contiguous, clone, view, no views


def test_contiguous_is_the_tensor_itself_as_torch_for_a_contiguous_tensor() -> None:
    x = tl.tensor(np.arange(3.0), requires_grad=True)
    assert x.contiguous() is x
    theirs = torch.arange(3.0)
    assert theirs.contiguous() is theirs  # torch: the same object for a contiguous tensor
    y = tl.tensor(np.arange(6.0).reshape(2, 3))
    with tl.no_grad():
        y.contiguous()[0, 0] = 50.0  # a write through the result reaches y, as in torch
    assert y.numpy()[0, 0] == 50.0
    assert x.contiguous().requires_grad and x.contiguous().is_leaf
    out = tl.reduce_sum(x.contiguous() * tl.tensor(np.array([1.0, 2.0, 3.0])))
    out.backward()
    assert x.grad is not None
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 2.0, 3.0])


def test_clone_is_new_storage_on_the_tape_as_torch() -> None:
    x = tl.tensor(np.arange(3.0), requires_grad=True)
    theirs = torch.arange(3.0, dtype=torch.float64, requires_grad=True)
    c, tc = x.clone(), theirs.clone()
    assert c is not x and not np.shares_memory(c.numpy(), x.numpy())
    assert (c.requires_grad, c.is_leaf) == (tc.requires_grad, tc.is_leaf) == (True, False)
    with tl.no_grad():
        assert not x.clone().requires_grad
    with torch.no_grad():
        assert not theirs.clone().requires_grad
    d = x.detach().clone()
    with tl.no_grad():
        d[0] = 9.0
    assert x.numpy()[0] == 0.0  # a write into the clone never reaches x


@pytest.mark.parametrize(
    ("dtype", "torch_dtype"), [("int64", torch.int64), ("bool", torch.bool)], ids=["int64", "bool"]
)
def test_shape_methods_move_int64_and_bool_tensors_as_torch(dtype: str, torch_dtype: torch.dtype) -> None:
    data = (np.arange(6) % 3).reshape(1, 3, 1, 2).astype(dtype)
    mine, theirs = tl.tensor(data), torch.tensor(data, dtype=torch_dtype)
    for call in (
        lambda x: x.clone(),
        lambda x: x.flatten(1),
        lambda x: x.squeeze(),
        lambda x: x.squeeze((0, 2)).t(),
        lambda x: x.unsqueeze(-1),
        lambda x: x.expand(2, -1, -1, 3, -1),
        lambda x: x.contiguous(),
    ):
        out, expected = call(mine), call(theirs)
        assert out.dtype == np.dtype(dtype) and out.shape == tuple(expected.shape)
        np.testing.assert_array_equal(out.numpy(), expected.numpy())


TORCH_KEYWORDS: list[tuple[str, Callable[[Any], Any]]] = [
    ("transpose", lambda x: x.transpose(dim0=0, dim1=1)),
    ("transpose-mixed", lambda x: x.transpose(1, dim1=0)),
    ("permute", lambda x: x.permute(dims=(1, 0))),
    ("permute-list", lambda x: x.permute(dims=[-1, 0])),
    ("reshape", lambda x: x.reshape(shape=(3, 2))),
    ("reshape-minus-one", lambda x: x.reshape(shape=(-1, 1))),
    ("expand", lambda x: x[:1].expand(size=(4, 3))),
    ("expand-keep", lambda x: x[:, :1].expand(size=(-1, 5))),
]


@pytest.mark.parametrize("call", [c for _, c in TORCH_KEYWORDS], ids=[n for n, _ in TORCH_KEYWORDS])
def test_methods_take_torchs_keyword_names(call: Callable[[Any], Any]) -> None:
    """review50 F12: torch's keywords (``dim0``/``dim1``, ``dims=``, ``shape=``, ``size=``) raised
    Python's "unexpected keyword argument"; oracle: the same call on torch."""
    data = np.arange(6.0).reshape(2, 3)
    out, expected = call(tl.tensor(data)), call(torch.tensor(data))
    assert out.shape == tuple(expected.shape)
    np.testing.assert_array_equal(out.numpy(), expected.numpy())


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda x: x.reshape(3, 2, shape=(3, 2)), "reshape: got 3, 2 and shape=(3, 2); they are one"),
        (lambda x: x.permute(1, 0, dims=(1, 0)), "permute: got 1, 0 and dims=(1, 0); they are one"),
        (lambda x: x.expand(2, 3, size=(2, 3)), "expand: got 2, 3 and size=(2, 3); they are one"),
        (lambda x: x.reshape(shape=6), "reshape: shape= takes a sequence of ints, got 6 of type int"),
        (lambda x: x.permute(dims=0), "permute: dims= takes a sequence of ints, got 0 of type int"),
        (lambda x: x[0].expand(size=3), "expand: size= takes a sequence of ints, got 3 of type int"),
    ],
    ids=["reshape", "permute", "expand", "reshape-int", "permute-int", "expand-int"],
)
def test_a_size_given_both_ways_or_a_keyword_int_is_refused(call: Callable[[Any], Any], message: str) -> None:
    """torch: "got multiple values for argument", "argument 'shape' must be tuple of ints, not
    int" (a ``TypeError`` each)."""
    data = np.arange(6.0).reshape(2, 3)
    with pytest.raises(TensorTypeError) as info:
        call(tl.tensor(data))
    assert str(info.value).startswith(message)
    with pytest.raises(TypeError, match=r"multiple values|must be tuple of ints"):
        call(torch.tensor(data))


@pytest.mark.parametrize("shape", [(3, 2), (-1,), ((6,),)], ids=str)
def test_view_is_refused_pointing_to_reshape(shape: tuple[Any, ...]) -> None:
    x = tl.tensor(np.arange(6.0))
    with pytest.raises(TensorTypeError, match=r"^view\(.*\): torchlean has no views.*t\.reshape\(\.\.\.\)"):
        x.view(*shape)
    assert torch.arange(6.0).view(*shape).shape == x.reshape(*shape).shape  # what reshape gives


# ------------------------------------------------------------------------------------- refusals


def _refused_by_torch(call: Callable[[torch.Tensor], Any], data: Array) -> bool:
    try:
        call(torch.tensor(data))
    except (RuntimeError, IndexError, TypeError, ValueError):
        return True
    return False


RANK2 = np.arange(6.0).reshape(2, 3)
SQUEEZABLE = np.zeros((1, 3, 1, 2))
COLUMN = np.zeros((3, 1))

# (id, call, input, error type, message pattern): torch refuses each of these too
REFUSALS: list[tuple[str, Callable[[Any], Any], Array, type[Exception], str]] = [
    ("softmax_dim_out_of_range", lambda x: x.softmax(2), RANK2, GuardError,
     r"^softmax: axis 2 is out of range for a rank-2 input \(accepted: an integer in \[-2, 1\]\)$"),
    ("softmax_dim_bool", lambda x: x.softmax(True), RANK2, TensorTypeError,
     r"^softmax: axis must be an integer; got True of type bool"),
    ("softmax_dim_float", lambda x: x.softmax(1.0), RANK2, TensorTypeError,
     r"^softmax: axis must be an integer; got 1\.0 of type float"),
    ("log_softmax_dim_out_of_range", lambda x: x.log_softmax(-3), RANK2, GuardError,
     r"^log_softmax: axis -3 is out of range for a rank-2 input"),
    ("flatten_start_out_of_range", lambda x: x.flatten(3), RANK2, GuardError,
     r"^flatten: start_dim 3 is out of range for a rank-2 input \(accepted: an integer in \[-2, 1\]\)$"),
    ("flatten_end_out_of_range", lambda x: x.flatten(0, -3), RANK2, GuardError,
     r"^flatten: end_dim -3 is out of range for a rank-2 input \(accepted: an integer in \[-2, 1\]\)$"),
    ("flatten_start_after_end", lambda x: x.flatten(1, 0), RANK2, GuardError,
     r"^flatten: start_dim 1 comes after end_dim 0 for a rank-2 input"),
    ("flatten_start_after_end_neg", lambda x: x.flatten(-1, -2), RANK2, GuardError,
     r"^flatten: start_dim -1 comes after end_dim -2"),
    ("flatten_rank0_out_of_range", lambda x: x.flatten(1), np.float64(1.0), GuardError,
     r"^flatten: start_dim 1 is out of range for a rank-0 input \(accepted: an integer in \[-1, 0\]\)$"),
    ("flatten_bool", lambda x: x.flatten(True), RANK2, TensorTypeError,
     r"^flatten: start_dim must be an integer; got True of type bool"),
    ("unsqueeze_out_of_range", lambda x: x.unsqueeze(3), RANK2, GuardError,
     r"^unsqueeze: dim 3 is out of range for a rank-2 input \(accepted: an integer in \[-3, 2\]\)$"),
    ("unsqueeze_out_of_range_neg", lambda x: x.unsqueeze(-4), RANK2, GuardError,
     r"^unsqueeze: dim -4 is out of range for a rank-2 input \(accepted: an integer in \[-3, 2\]\)$"),
    ("unsqueeze_rank0_out_of_range", lambda x: x.unsqueeze(2), np.float64(1.0), GuardError,
     r"^unsqueeze: dim 2 is out of range for a rank-0 input \(accepted: an integer in \[-1, 0\]\)$"),
    ("unsqueeze_bool", lambda x: x.unsqueeze(False), RANK2, TensorTypeError,
     r"^unsqueeze: dim must be an integer; got False of type bool"),
    ("unsqueeze_float", lambda x: x.unsqueeze(1.0), RANK2, TensorTypeError,
     r"^unsqueeze: dim must be an integer; got 1\.0 of type float"),
    ("squeeze_out_of_range", lambda x: x.squeeze(4), SQUEEZABLE, GuardError,
     r"^squeeze: dim 4 is out of range for a rank-4 input \(accepted: an integer in \[-4, 3\]\)$"),
    ("squeeze_tuple_out_of_range", lambda x: x.squeeze((0, -5)), SQUEEZABLE, GuardError,
     r"^squeeze: dim\[1\] -5 is out of range for a rank-4 input"),
    ("squeeze_rank0_out_of_range", lambda x: x.squeeze(1), np.float64(1.0), GuardError,
     r"^squeeze: dim 1 is out of range for a rank-0 input \(accepted: an integer in \[-1, 0\]\)$"),
    ("squeeze_repeated", lambda x: x.squeeze((0, 0)), SQUEEZABLE, GuardError,
     r"^squeeze: dim \(0, 0\) names axis 0 more than once for a rank-4 input \(accepted: distinct axes\)$"),
    ("squeeze_repeated_neg", lambda x: x.squeeze([2, -2]), SQUEEZABLE, GuardError,
     r"^squeeze: dim \[2, -2\] names axis 2 more than once"),
    ("squeeze_bool", lambda x: x.squeeze(True), SQUEEZABLE, TensorTypeError,
     r"^squeeze: dim must be an integer; got True of type bool"),
    ("squeeze_str", lambda x: x.squeeze("0"), SQUEEZABLE, TensorTypeError,
     r"^squeeze: dim must be an integer; got '0' of type str"),
    ("t_rank3", lambda x: x.t(), np.zeros((2, 3, 4)), GuardError,
     r"^t: expects a tensor with <= 2 dimensions, but this one has shape \(2, 3, 4\)"),
    ("expand_too_few", lambda x: x.expand(4), COLUMN, GuardError,
     r"^expand: 1 size \(4,\) for a rank-2 input of shape \(3, 1\) \(accepted: at least 2 sizes"),
    ("expand_keep_new_axis", lambda x: x.expand(-1, 3, 4), COLUMN, GuardError,
     r"^expand: size -1 at position 0 of \(-1, 3, 4\) is a new leading axis"),
    ("expand_other_negative", lambda x: x.expand(3, -2), COLUMN, GuardError,
     r"^broadcast: shape \[3, -2\] has a negative extent"),
    ("expand_mismatch", lambda x: x.expand(2, 4), COLUMN, GuardError,
     r"^broadcast: input x \(3, 1\) cannot be broadcast to \(2, 4\)"),
    ("expand_float", lambda x: x.expand(3, 4.0), COLUMN, TensorTypeError,
     r"^expand: size\[1\] must be an integer; got 4\.0 of type float"),
    ("expand_nothing", lambda x: x.expand(), COLUMN, TensorTypeError, r"^expand: sizes missing"),
    # review52 F9: reshape()/permute() gave shape () on a one-element tensor (a GuardError otherwise)
    ("reshape_nothing_rank0", lambda x: x.reshape(), np.float64(5.0), TensorTypeError,
     r"^reshape\(\) missing its shape, as torch's reshape\(\) refuses it \(accepted: t\.reshape\(2, 3\)"),
    ("reshape_nothing_one", lambda x: x.reshape(), np.ones(1), TensorTypeError,
     r"^reshape\(\) missing its shape"),
    ("reshape_nothing_rank2", lambda x: x.reshape(), RANK2, TensorTypeError,
     r"^reshape\(\) missing its shape"),
    ("permute_nothing_rank0", lambda x: x.permute(), np.float64(5.0), TensorTypeError,
     r"^permute\(\) missing its dims, as torch's permute\(\) refuses it \(accepted: t\.permute\(1, 0\)"),
    ("permute_nothing_one", lambda x: x.permute(), np.ones(1), TensorTypeError,
     r"^permute\(\) missing its dims"),
    ("permute_nothing_rank2", lambda x: x.permute(), RANK2, TensorTypeError,
     r"^permute\(\) missing its dims"),
    # review52 F10: a rank-0 tensor takes dims in [-1, 0], as in torch; outside them it is refused
    ("transpose_rank0_out_of_range", lambda x: x.transpose(1, 0), np.float64(5.0), GuardError,
     r"^transpose: axis0 1 is out of range for a rank-0 input \(accepted: an integer in \[-1, 0\]\)$"),
    ("transpose_rank0_negative", lambda x: x.transpose(0, -2), np.float64(5.0), GuardError,
     r"^transpose: axis1 -2 is out of range for a rank-0 input \(accepted: an integer in \[-1, 0\]\)$"),
    ("clamp_no_bound", lambda x: x.clamp(), RANK2, TensorTypeError,
     r"^clamp: at least one of min or max must be given, as torch\.clamp requires"),
    ("clip_no_bound", lambda x: x.clip(min=None, max=None), RANK2, TensorTypeError,
     r"^clamp: at least one of min or max must be given"),
    ("clamp_str_bound", lambda x: x.clamp(min="1"), RANK2, TensorTypeError,
     r"^clamp: lo must be a real number; got '1' of type str"),
    ("sum_dim_out_of_range", lambda x: x.sum(dim=2), RANK2, GuardError, r"^reduce_sum: .*2"),
    ("mean_dim_bool", lambda x: x.mean(dim=True), RANK2, TensorTypeError,
     r"^reduce_mean: axis must be an integer; got True of type bool"),
    ("sum_both_dim_and_axis", lambda x: x.sum(dim=1, axis=1), RANK2, TensorTypeError,
     r"^sum: got both dim=1 and axis=1; they are one argument \(torch's and numpy's spelling\), "
     r"give one of them$"),
    ("sum_positional_and_dim", lambda x: x.sum(1, dim=1), RANK2, TensorTypeError,
     r"^sum: got both dim=1 and axis=1"),
    ("sum_axis_none_and_dim", lambda x: x.sum(axis=None, dim=0), RANK2, TensorTypeError,
     r"^sum: got both dim=0 and axis=None"),
    ("mean_both_keepdim", lambda x: x.mean(0, keepdim=True, keepdims=False), RANK2, TensorTypeError,
     r"^mean: got both keepdim=True and keepdims=False"),
    ("mean_keepdim_not_bool", lambda x: x.mean(dim=0, keepdim=1), RANK2, TensorTypeError,
     r"^reduce_mean: keepdims must be a bool; got 1 of type int"),
    ("gather_index_out_of_range", lambda x: x.gather(1, _like(x, np.array([[0, 3]]))), RANK2, GuardError,
     r"^gather: index value 3 is out of range for extent 3 along axis 1 \(accepted: 0 <= index < 3\)$"),
    ("gather_negative_index", lambda x: x.gather(1, _like(x, np.array([[-1, 0]]))), RANK2, GuardError,
     r"^gather: index value -1 is out of range"),
    ("gather_dim_out_of_range", lambda x: x.gather(2, _like(x, np.array([[0]]))), RANK2, GuardError,
     r"^gather: axis 2 is out of range for a rank-2 input"),
    ("gather_float_index", lambda x: x.gather(1, _like(x, np.array([[0.0]]))), RANK2, GuardError,
     r"^gather: index has dtype float64; accepted: int64 \(index data of another integer dtype, such as "
     r"int32 or uint8, becomes int64\)$"),
    ("gather_other_rank", lambda x: x.gather(1, _like(x, np.array([0]))), RANK2, GuardError,
     r"^gather: index \(1,\) does not fit input x \(2, 3\)"),
    ("gather_float_dim", lambda x: x.gather(1.0, _like(x, np.array([[0]]))), RANK2, TensorTypeError,
     r"^gather: axis must be an integer; got 1\.0 of type float"),
    ("scatter_add_index_out_of_range",
     lambda x: x.scatter_add(0, _like(x, np.array([[0, 1, 2]])), _shape_donor(x, (1, 3))), RANK2, GuardError,
     r"^scatter_add: index value 2 is out of range for extent 2 along axis 0"),
    ("expand_as_array", lambda x: x.expand_as(np.zeros((2, 3))), RANK2, TensorTypeError,
     r"^expand_as\(\) needs a torchlean Tensor as other; got a value of type ndarray \(accepted: a Tensor; "
     r"for a shape, t\.expand\(shape\)\)$"),
    ("expand_as_mismatch", lambda x: x.expand_as(_shape_donor(x, (4,))), RANK2, GuardError,
     r"^expand: 1 size \(4,\) for a rank-2 input of shape \(2, 3\)"),
    ("reshape_as_tuple", lambda x: x.reshape_as((3, 2)), RANK2, TensorTypeError,
     r"^reshape_as\(\) needs a torchlean Tensor as other; got a value of type tuple"),
    ("reshape_as_count", lambda x: x.reshape_as(_shape_donor(x, (5,))), RANK2, GuardError,
     r"^reshape: shape \[5\] has 5 elements but input x \(2, 3\) has 6"),
    ("matmul_rank0", lambda x: x.matmul(x), np.float64(1.0), GuardError, r"^matmul: .*rank-0 operands"),
    ("matmul_mismatch", lambda x: x.matmul(x), RANK2, GuardError, r"^matmul: "),
]  # fmt: skip


@pytest.mark.parametrize(
    ("call", "data", "error", "pattern"),
    [pytest.param(*r[1:], id=r[0]) for r in REFUSALS],
)
def test_bad_arguments_are_refused_with_clear_messages_where_torch_refuses(
    call: Callable[[Any], Any], data: Array, error: type[Exception], pattern: str
) -> None:
    with tl.session(profile="checked_cpu"), pytest.raises(error, match=pattern):
        call(tl.tensor(data))
    assert _refused_by_torch(call, data)


# (id, call, input, error): calls torch accepts that torchlean refuses, each a documented deviation
DEVIATIONS: list[tuple[str, Callable[[Any], Any], Array, type[Exception], str]] = [
    ("clamp_min_above_max", lambda x: x.clamp(3.0, 1.0), RANK2, GuardError,
     r"^clamp: lo = 3\.0 is greater than hi"),
    ("clamp_nan_bound", lambda x: x.clamp(min=float("nan")), RANK2, GuardError, r"^clamp: lo = nan"),
    ("clamp_bool_bound", lambda x: x.clamp(min=True), RANK2, TensorTypeError,
     r"^clamp: lo must be a real number"),
    ("squeeze_bool_in_tuple", lambda x: x.squeeze((0, True)), SQUEEZABLE, TensorTypeError,
     r"^squeeze: dim\[1\] must be an integer; got True of type bool"),
    ("expand_bool_size", lambda x: x.expand(3, True), COLUMN, TensorTypeError,
     r"^expand: size\[1\] must be an integer"),
    ("exp_int64", lambda x: x.exp(), np.arange(3), GuardError, r"^exp: input x has dtype int64"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("call", "data", "error", "pattern"), [pytest.param(*r[1:], id=r[0]) for r in DEVIATIONS]
)
def test_documented_deviations_torch_accepts_torchlean_refuses(
    call: Callable[[Any], Any], data: Array, error: type[Exception], pattern: str
) -> None:
    assert not _refused_by_torch(call, data)
    with pytest.raises(error, match=pattern):
        call(tl.tensor(data))


def test_squeeze_none_and_numpy_dims_are_accepted() -> None:
    """``dim=None`` spelled out (torch 2.13's parser refuses the keyword None, its docs show it as
    the default) and numpy integer dims."""
    x = tl.tensor(SQUEEZABLE)
    assert x.squeeze(dim=None).shape == x.squeeze().shape == (3, 2)
    assert x.squeeze(np.int64(-2)).shape == (1, 3, 2)
    assert x.squeeze((np.int32(0), np.int64(2))).shape == (3, 2)
    assert x.unsqueeze(np.int64(1)).shape == (1, 1, 3, 1, 2)
    assert x.flatten(np.int64(1), np.int8(2)).shape == (1, 3, 2)


def test_refusals_name_the_method_and_never_leak_numpy_errors() -> None:
    """A few raw calls that would reach numpy or Python errors if unchecked: every one is a
    torchlean error (a TorchLeanError subclass), never IndexError/AxisError from numpy."""
    from torchlean.backend.errors import TorchLeanError

    x = tl.tensor(RANK2)
    for call in (
        lambda: x.unsqueeze(10**30),
        lambda: x.squeeze(np.int64(-9)),
        lambda: x.flatten(0, 10**20),
        lambda: x.expand(10**30, 3),
        lambda: x.softmax(-(10**19)),
        lambda: x.squeeze([0, None]),
    ):
        with pytest.raises(TorchLeanError) as caught:
            call()
        assert not isinstance(caught.value, np.exceptions.AxisError)


@pytest.mark.parametrize("method", ["sum", "mean"])
def test_sum_and_mean_keep_their_numpy_spellings(method: str) -> None:
    """The old spelling still works (positional and ``axis``/``keepdims``), equal to torch's."""
    data = np.random.default_rng(3).standard_normal((2, 3, 4))
    x = tl.tensor(data)
    reference = getattr(torch.tensor(data), method)
    for args, kwargs in (
        ((1,), {}),
        (((0, 2), True), {}),
        ((), {"axis": -1, "keepdims": True}),
        ((), {"dim": -1, "keepdim": True}),
        ((-1,), {"keepdim": True}),
        ((), {}),
    ):
        got = getattr(x, method)(*args, **kwargs)
        want = reference(*args, **kwargs)
        assert got.shape == tuple(want.shape)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("dims", [(0, 0), (-1, 0), (0, -1), (-1, -1)], ids=str)
def test_a_rank0_transpose_takes_torchs_dim_range_with_torchs_gradient(dims: tuple[int, int]) -> None:
    """review52 F10: ``tl.tensor(5.).transpose(0, 0)`` was refused ("accepted: none"); torch's dim
    range of a 0-d tensor is ``[-1, 0]``, as torchlean's unsqueeze and sum take it."""
    x = tl.tensor(np.float64(5.0), requires_grad=True)
    tx = torch.tensor(5.0, dtype=torch.float64, requires_grad=True)
    pairs = ((x.transpose(*dims), tx.transpose(*dims)), (tl.transpose(x, *dims), torch.transpose(tx, *dims)))
    for t, ty in pairs:
        assert t.shape == tuple(ty.shape) == () and t.item() == ty.item() == 5.0
        (t * 3.0).sum().backward()
        (ty * 3.0).sum().backward()
    assert x.grad is not None and tx.grad is not None
    assert x.grad.item() == tx.grad.item() == 6.0


def test_reshape_and_permute_take_an_empty_shape_given_explicitly() -> None:
    """Only the missing argument is refused: ``()`` is a shape, as in torch."""
    one, scalar = tl.tensor([5.0]), tl.tensor(5.0)
    assert one.reshape(()).shape == tuple(torch.tensor([5.0]).reshape(()).shape) == ()
    assert one.reshape(shape=()).shape == ()
    assert scalar.permute(()).shape == tuple(torch.tensor(5.0).permute(()).shape) == ()
    assert scalar.permute(dims=()).shape == ()
