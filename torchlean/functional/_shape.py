"""Ops that move values without arithmetic and keep every one: ``reshape``, ``permute``,
``transpose``, ``broadcast_to`` and ``concat``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from torchlean._tensor_args import _UNSET, _dim, _Unset
from torchlean._tensor_errors import _preview
from torchlean._tensor_shapes import expanded_shape
from torchlean.autograd.session import run_op
from torchlean.backend.vocabulary import BackendOp
from torchlean.functional._operands import _require_tensor
from torchlean.functional._params import _axis_spelling, _int, _ints
from torchlean.tensor import IntLike, Tensor, TensorTypeError


def reshape(x: Tensor, shape: Sequence[IntLike]) -> Tensor:
    """Row-major reshape (one ``-1`` inferred) (``torch.reshape``); records ``reshape``.

    Raises:
        GuardError: an element count that differs from x's, a negative extent other than one
            ``-1``, or a ``-1`` beside a 0 extent (torch refuses it too).
        TensorTypeError: ``shape`` is not a sequence of integers (a bare int included).
    """
    return run_op(BackendOp.RESHAPE, (x,), {"shape": _ints("reshape", "shape", shape)})


def permute(x: Tensor, perm: Sequence[IntLike]) -> Tensor:
    """Output axis ``i`` is input axis ``perm[i]`` (``torch.permute``); records ``permute``.

    Raises:
        GuardError: ``perm`` is not a permutation of x's axes (entries in ``[-ndim, ndim)``).
        TensorTypeError: ``perm`` is not a sequence of integers.
    """
    return run_op(BackendOp.PERMUTE, (x,), {"perm": _ints("permute", "perm", perm)})


def transpose(x: Tensor, axis0: IntLike, axis1: IntLike) -> Tensor:
    """Swap two axes (``torch.transpose``); each axis in ``[-ndim, ndim)``; records ``permute``.
    A rank-0 input takes axes in ``[-1, 0]``, as in torch (``transpose(0, 0)``, ``transpose(-1,
    0)``): the result is a new rank-0 tensor of the same value, its gradient the incoming one.

    Raises:
        GuardError: an axis out of range (``transpose: axis1 5 is out of range for a rank-2 input
            (accepted: an integer in [-2, 1])``; for a rank-0 input, outside ``[-1, 0]``), never
            wrapped (an integer of more than about 100 digits is named by its size, as the tensor
            methods' dims are: ``Tensor.unsqueeze``, ``Tensor.flatten``).
        TensorTypeError: a non-integer axis.
    """
    x = _require_tensor("transpose", "x", x)
    extent = max(x.ndim, 1)  # torch's dim range of a 0-d tensor is [-1, 0], as unsqueeze's and sum's
    a = _dim("transpose", "axis0", axis0, x.ndim, extent)
    b = _dim("transpose", "axis1", axis1, x.ndim, extent)
    perm = list(range(x.ndim))
    if perm:
        perm[a], perm[b] = perm[b], perm[a]
    return permute(x, perm)


def broadcast_to(x: Tensor, shape: Sequence[IntLike]) -> Tensor:
    """Materialised numpy-rule broadcast (``torch.broadcast_to``); records ``broadcast``. As in
    torch, ``-1`` keeps the size of an existing axis (``(3,)`` to ``(2, -1)`` gives ``(2, 3)``).

    Raises:
        GuardError: x does not broadcast to ``shape`` (fewer axes than x, or a trailing extent
            that is neither x's nor where x has 1); ``-1`` for a new leading axis (torch refuses
            it too); any other negative extent.
        TensorTypeError: ``shape`` is not a sequence of integers.
    """
    target = _ints("broadcast_to", "shape", shape)
    if -1 in target:
        x = _require_tensor("broadcast_to", "x", x)
        target = tuple(expanded_shape(x.shape, target, "broadcast_to"))
    return run_op(BackendOp.BROADCAST, (x,), {"shape": target})


def concat(
    xs: Sequence[Tensor], axis: IntLike | _Unset = _UNSET, *, dim: IntLike | _Unset = _UNSET
) -> Tensor:
    """Concatenate the tensors ``xs`` (a list or tuple) along ``axis`` (default 0, or torch's
    keyword ``dim=``) (``torch.cat``); records ``concat``. The inputs share one dtype (any,
    integer and bool too), the result's.

    Raises:
        TensorTypeError: ``xs`` is a single Tensor (it is not iterated over its rows: ``torch.cat``
            refuses a tensor too; write ``concat([x])``), a string or not iterable (``1.5``,
            ``None``); an entry that is not a Tensor (the operand rule); a non-integer ``axis``;
            both ``axis`` and ``dim``.
        GuardError: an empty ``xs``; inputs whose ranks differ or whose extents differ outside
            ``axis``; ``axis`` out of range (never wrapped; every axis of rank-0 inputs); inputs
            of two dtypes (no promotion).
    """
    zero_d = getattr(xs, "shape", 0) == ()  # a 0-d array: iterating it raises (review241 F3)
    if isinstance(xs, Tensor | str | bytes) or not isinstance(xs, Iterable) or zero_d:
        what = "a Tensor" if isinstance(xs, Tensor) else f"{_preview(xs)} of type {type(xs).__name__}"
        raise TensorTypeError(
            f"concat: xs must be a sequence of Tensors; got {what} (accepted: a list or tuple of "
            "Tensors, as torch.cat; write concat([x]) for one tensor)"
        )
    chosen = _axis_spelling("concat", axis, dim, 0)
    return run_op(BackendOp.CONCAT, tuple(xs), {"axis": _int("concat", "axis", chosen)})
