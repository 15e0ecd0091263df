"""Boolean attention masks and the hard-masked softmax.

Semantics (seed chapter, "Boolean Attention Masks"; anchor-runtime.md §5.2): ``True`` means the
key may be attended. Over each row the maximum is taken over the *allowed* scores only; an allowed
entry's numerator is ``exp(score - rowMax)``, a blocked entry's numerator is literally 0 (selected,
never computed from a ``-inf`` or finite sentinel); a row with no allowed entry is the zero vector.
A NaN or infinity sitting at a blocked position therefore never reaches the result. Additive
score biases are a separate operation: a float 0/1 array is refused as a mask.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt

from torchlean._checks import is_builtin_or_numpy_int, shown, shown_briefly
from torchlean.backend.errors import UnknownLabelError
from torchlean.backend.providers.reference.ieee import ieee
from torchlean.spec import _arith
from torchlean.spec._arith import Array, BoolArray
from torchlean.spec.errors import SpecTypeError, SpecValueError

CausalAlign = Literal["upper_left", "lower_right"]
CAUSAL_ALIGNMENTS: tuple[str, ...] = ("upper_left", "lower_right")


_MOST_ELEMENTS = int(np.iinfo(np.intp).max) // 8
"""The most entries of a :func:`causal_mask` (and of either of its sides): what one array of the
int64 positions it is computed from can hold, the cap ``nn.build`` sets on a parameter."""


def _size(name: str, value: object) -> int:
    if not is_builtin_or_numpy_int(value):
        got = f"{shown_briefly(value)} of type {type(value).__name__}"
        raise SpecTypeError(f"{name} must be an int, got {got}")
    size = int(value)
    if size < 0:
        raise SpecValueError(f"{name} must be >= 0, got {shown(size)}")
    return size


def causal_mask(n_q: int, n_k: int | None = None, *, align: CausalAlign | str = "upper_left") -> BoolArray:
    """The causal boolean mask of shape ``(n_q, n_k)`` (``n_k`` defaults to ``n_q``).

    ``mask[i, j]`` is True when query ``i`` may attend key ``j``:

    * ``"upper_left"``: ``j <= i`` — PyTorch ``is_causal=True`` / ``causal_upper_left``
      (``tril(ones(L, S))``);
    * ``"lower_right"``: ``j <= i + (n_k - n_q)`` — PyTorch ``causal_lower_right``
      (``tril(ones(L, S), diagonal=S-L)``), the alignment of FlashAttention and of decoding with a
      key/value cache. With ``n_q > n_k`` its top ``n_q - n_k`` rows are fully blocked (and attend
      to nothing: zeros).

    The two agree when ``n_q == n_k`` (anchor ``causalMask n``). Source: peers.md §1.6,
    ``torch/nn/attention/bias.py``.

    Raises:
        SpecTypeError: a size that is not an int; an ``align`` that is not a string (an array:
            numpy's ``truth value ... is ambiguous`` before, review239 F7).
        SpecValueError: a negative size; sizes whose mask has more entries than one array of
            their int64 positions can hold (``n_q``, ``n_k`` or ``n_q * n_k`` above
            1152921504606846975: numpy's ``Maximum allowed size exceeded`` before, review239
            F12; also a side within 64 of that, which numpy's allocation cannot lay out; a mask
            merely too large for the memory raises ``MemoryError``).
        UnknownLabelError: ``align`` is not one of ``upper_left``, ``lower_right``.
    """
    rows = _size("n_q", n_q)
    cols = rows if n_k is None else _size("n_k", n_k)
    if not isinstance(align, str):
        raise SpecTypeError(
            f"causal_mask: align must be one of {', '.join(CAUSAL_ALIGNMENTS)} (a string), got "
            f"{shown_briefly(align)} of type {type(align).__name__}"
        )
    sizes = (("n_q", rows), ("n_k", cols), ("n_q * n_k", rows * cols))
    beyond = [(name, size) for name, size in sizes if size > _MOST_ELEMENTS]
    if beyond:  # the side that exceeds, not the product 0 beside it (review241 F10)
        raise _beyond_one_array(*beyond[0], rows, cols)
    if align not in CAUSAL_ALIGNMENTS:
        raise UnknownLabelError(
            f"unknown causal alignment {align!r}; accepted: {', '.join(CAUSAL_ALIGNMENTS)}"
        )
    if rows == 0 or cols == 0:
        return np.zeros((rows, cols), dtype=bool)
    offset = 0 if align == "upper_left" else cols - rows
    try:
        i = np.arange(rows)[:, None]
        j = np.arange(cols)[None, :]
    except ValueError as error:  # numpy's arange, within 64 entries of the cap (review242 F8)
        name, size = max(sizes[:2], key=lambda named: named[1])
        raise SpecValueError(
            f"causal_mask: numpy cannot make the {name} = {shown(size)} int64 positions the mask is computed "
            f"from ({error}) (n_q = {shown(rows)}, n_k = {shown(cols)}; accepted: sizes numpy can lay out)"
        ) from None
    return np.asarray(j <= i + offset, dtype=bool)


def _beyond_one_array(name: str, size: int, rows: int, cols: int) -> SpecValueError:
    """The refusal of a causal mask whose ``name`` (``n_q``, ``n_k`` or ``n_q * n_k``) of ``size``
    entries one array of int64 positions cannot hold."""
    return SpecValueError(
        f"causal_mask: {name} = {shown(size)} is more than one array of int64 positions can hold "
        f"(n_q = {shown(rows)}, n_k = {shown(cols)}; accepted: n_q, n_k and n_q * n_k at most "
        f"{_MOST_ELEMENTS})"
    )


def as_bool_mask(mask: npt.ArrayLike, *, name: str = "mask") -> BoolArray:
    """``mask`` as a numpy bool array, refusing every other dtype.

    Raises:
        SpecTypeError: the mask's dtype is not bool; the message names the dtype and says that an
            additive score bias (a float array) is a separate operation, not a mask, or, for
            integers, to convert 0/1 ones with ``mask.astype(bool)``.
        SpecValueError: ragged nested sequences.
    """
    array = _arith.as_array(name, mask)
    if array.dtype != np.bool_:
        why = (  # review223 F6: a 0/1 integer mask is no bias; the runtime op's advice fits it
            "convert 0/1 integers with mask.astype(bool)" if array.dtype.kind in "iu"
            else "additive score biases are a separate operation and are not accepted as a mask"
        )
        raise SpecTypeError(
            f"{name} must be a boolean array (True = the key may be attended), got dtype {array.dtype}; {why}"
        )
    return array


def masked_softmax_last_axis(scores: Array, allowed: BoolArray | None) -> Array:
    """Hard-masked softmax over the last axis of ``scores`` (rank >= 1), generic arithmetic.

    ``allowed`` is broadcastable to ``scores`` or None (every entry allowed: the stable softmax
    ``exp(x - rowMax) / sum``). Blocked entries are selected away before the maximum, the
    exponential and the sum, so their values never matter.
    """
    dtype = scores.dtype
    if allowed is None:
        allowed = np.ones((1,) * scores.ndim, dtype=bool)
    allowed = np.broadcast_to(allowed, scores.shape)
    if scores.shape[-1] == 0:
        return _arith.zeros(scores.shape, dtype)
    any_allowed = np.any(allowed, axis=-1, keepdims=True)
    row_max = np.max(np.where(allowed, scores, _arith.neg_inf(dtype)), axis=-1, keepdims=True)
    shift = np.where(any_allowed, row_max, _arith.zero(dtype))
    numerators = _arith.select(allowed, _arith.exp(np.where(allowed, scores, shift) - shift))
    denominator = np.sum(numerators, axis=-1, keepdims=True)
    safe_denominator = np.where(any_allowed, denominator, _arith.scalar(1, dtype))
    return _arith.select(allowed, numerators / safe_denominator)


@ieee
def hard_masked_softmax(scores: npt.ArrayLike, mask: npt.ArrayLike | None, axis: int = -1) -> Array:
    """Softmax of ``scores`` along ``axis`` in which blocked entries are exactly zero.

    Args:
        scores: floating array (float16/32/64, computed in its dtype) or object array of
            ``mpmath.mpf`` (computed at mpmath's working precision), any shape.
        mask: bool array broadcastable with ``scores``; True = allowed. None allows every entry
            (the stable softmax), as ``mask=None`` in the attention specifications.
        axis: the normalised axis.

    Returns:
        Array of the broadcast shape of ``scores`` and ``mask``: allowed entries
        ``exp(s - m) / sum(exp(s' - m))`` with ``m`` the maximum over the allowed entries of the
        row, blocked entries exactly 0 (selected, so NaN/inf there never reach the result), rows
        with no allowed entry all zeros. A 0-rank input is a one-element row: 1 if allowed (NaN
        for an allowed NaN or infinite score, as ``torch.softmax`` of a 0-d tensor) else 0.
        Source: seed chapter "Boolean Attention Masks"; anchor-runtime.md §5.2 (``hardMaskedSoftmaxSpec``).

    Raises:
        SpecTypeError: ``mask`` is not boolean (additive biases are a separate operation),
            ``scores`` is not floating/mpmath (an object array only of ``mpmath.mpf`` entries: a
            Python int beyond int64, which numpy stores as an object, is refused naming
            :func:`~torchlean.spec.as_mpf_array`, review239 F16), a torch tensor that requires
            grad, is not on the CPU or has no values (naming ``t.detach().cpu()``, review239 F5), or
            ``axis`` is not an integer (a float, a string or a bool).
        SpecValueError: ``scores`` and ``mask`` do not broadcast, ``axis`` is out of range, or
            ``scores``/``mask`` is a ragged nested sequence.
    """
    if not is_builtin_or_numpy_int(axis):
        raise SpecTypeError(
            f"axis must be an int, got {axis!r} of type {type(axis).__name__} (accepted: a Python or "
            "numpy integer; floats, strings and bools are refused)"
        )
    allowed = np.ones((), dtype=bool) if mask is None else as_bool_mask(mask)
    values = _arith.as_array("scores", scores)
    dtype = _arith.working_dtype({"scores": values})
    values = _arith.to_working(values, dtype)
    try:
        shape = np.broadcast_shapes(values.shape, allowed.shape)
    except ValueError as error:
        raise SpecValueError(
            f"scores of shape {values.shape} and mask of shape {allowed.shape} do not broadcast (accepted: "
            "shapes that agree on each trailing axis or have extent 1 there, numpy's broadcasting)"
        ) from error
    values = np.broadcast_to(values, shape)
    allowed = np.broadcast_to(allowed, shape)
    if values.ndim == 0:  # a one-element row: 1 when allowed and finite, NaN for a NaN or infinite score
        return masked_softmax_last_axis(values.reshape(1), allowed.reshape(1)).reshape(())
    if not -values.ndim <= axis < values.ndim:
        raise SpecValueError(
            f"axis {axis} is out of range for scores of rank {values.ndim} (accepted: an integer in "
            f"[{-values.ndim}, {values.ndim - 1}])"
        )
    moved = masked_softmax_last_axis(np.moveaxis(values, axis, -1), np.moveaxis(allowed, axis, -1))
    return np.ascontiguousarray(np.moveaxis(moved, -1, axis))
