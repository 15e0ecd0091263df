"""``embedding``: rows of a table picked by integer ids, with torch's ``padding_idx`` (rows
that send no gradient)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from torchlean._checks import id_outside, padding_index
from torchlean.autograd.grad_mode import is_grad_enabled
from torchlean.backend.errors import GuardError
from torchlean.functional._indexing import gather
from torchlean.functional._operands import _array_like, _on_device_of, _require_tensor
from torchlean.functional._shape import concat, reshape
from torchlean.tensor import IntLike, Tensor, TensorTypeError


def embedding(ids: Tensor | npt.ArrayLike, weight: Tensor, padding_idx: IntLike | None = None) -> Tensor:
    """Rows of ``weight`` picked by ``ids`` (``torch.nn.functional.embedding(ids, weight,
    padding_idx)``; no ``max_norm`` or ``sparse``): integer ``ids`` of any shape and a ``(V, D)``
    float ``weight`` give ``(*ids.shape, D)`` in the weight's dtype, ``out[..., :] =
    weight[ids[...], :]``, exactly (no arithmetic).

    Records ``gather`` along axis 0 of the weight (with the ids as a ``(n, D)`` index, made by
    numpy and carrying no gradient) and ``reshape``; the gradient of ``weight`` is ``gather``'s
    VJP, ``scatter_add``: an id used several times receives the sum of its rows' gradients, as
    torch's dense embedding backward, added in index order by ``reference.gather`` (``fixed-left``)
    and in the order of torch's ``scatter_add_`` by ``aten.gather`` (``fast_cpu``; declared
    ``implementation-defined``).

    ``padding_idx`` (torch's ``padding_idx``; ``None``, the default, for none) is a row of the
    table, an int in ``[-V, V)``, a negative one counting from the end (``-1`` is row ``V - 1``).
    It changes the gradient only, as in torch: the values at ids equal to it are still that row
    of ``weight`` (zero only if the row is zero), but they send no gradient, so the weight's
    gradient row ``padding_idx`` is zero (not ``None``: an optimizer's weight decay still applies
    to it, as torch's) and the upstream gradient at those positions is never read (a NaN there
    does not reach the weight). The other rows' gradients are those without ``padding_idx``, in
    the same order. When the gradient is recorded (``weight.requires_grad``, outside
    :func:`~torchlean.no_grad`) and some id equals ``padding_idx``, the lookup records ``gather``
    (the other ids' rows), ``gather`` (the padding rows, from ``weight.detach()``), ``concat``,
    ``gather`` (back into the ids' order) and ``reshape``, all exact; otherwise as without it.

    Raises:
        GuardError: an id outside ``[0, V)`` (torch raises ``IndexError``; negative ids are not
            counted from the end), naming the value: ``embedding: id 7 is out of range for 5
            embeddings (accepted: ids in [0, 5))``; ids that are not integers (a float tensor or
            array: torch refuses them too), or a ``weight`` that is not a 2-d float table; a
            ``padding_idx`` outside ``[-V, V)`` (torch: "Padding_idx must be within
            num_embeddings"), naming it and the range.
        TensorError: ragged nested ids.
        TensorTypeError: ``weight`` is not a Tensor; a ``padding_idx`` that is not an integer or
            ``None`` (a float, even ``2.0``, or a bool: torch refuses both).
    """
    weight = _require_tensor("embedding", "weight", weight)
    if weight.ndim != 2 or weight.dtype.kind != "f":
        raise GuardError(
            f"embedding: weight must be a 2-d float32 or float64 table (num_embeddings, embedding_dim), "
            f"got shape {list(weight.shape)} and dtype {weight.dtype}"
        )
    count, dim = weight.shape
    pad = (
        None
        if padding_idx is None
        else padding_index(padding_idx, count, "embedding", TensorTypeError, GuardError)
    )
    raw: npt.NDArray[Any] = ids.numpy() if isinstance(ids, Tensor) else _array_like("embedding", "ids", ids)
    if raw.dtype.kind not in "iu":
        raise GuardError(
            f"embedding: ids have dtype {raw.dtype} (accepted: integers, as torch's Long/Int indices; "
            "integral values can be cast with .astype(np.int64); in a model, an embedding must be the "
            "first layer, the one that receives the ids)"
        )
    outside = id_outside(_stored(raw), count)
    if outside is not None:
        raise GuardError(
            f"embedding: id {outside} is out of range for {count} embeddings (accepted: ids in [0, {count}))"
        )
    flat = np.asarray(raw, dtype=np.int64).reshape(-1)  # no copy of contiguous int64 ids
    padded = None if pad is None or not (weight.requires_grad and is_grad_enabled()) else flat == pad
    if padded is None or not padded.any():
        rows = gather(weight, _rows_index(flat, dim, weight), 0)
    else:
        rows = _lookup_without_padding_gradient(weight, flat, padded)
    return reshape(rows, (*raw.shape, dim))


def _stored(ids: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``ids`` with each zero-strided axis (a broadcast view's) cut to its first entry: the same ids
    (none when ``ids`` is empty), so a range scan reads each stored id once rather than every
    position a view declares (review243 F5: ``np.broadcast_to(np.int64(0), (2**33,))`` was scanned
    in full before the output's allocation failed)."""
    if ids.size == 0:
        return ids
    return ids[tuple(slice(None, 1) if stride == 0 else slice(None) for stride in ids.strides)]


def _rows_index(ids: npt.NDArray[np.int64], dim: int, like: Tensor) -> Tensor:
    """The ``(len(ids), dim)`` int64 index that gathers rows ``ids`` of a ``(V, dim)`` table."""
    return _on_device_of(np.ascontiguousarray(np.broadcast_to(ids.reshape(-1, 1), (ids.size, dim))), like)


def _lookup_without_padding_gradient(
    weight: Tensor, ids: npt.NDArray[np.int64], padded: npt.NDArray[np.bool_]
) -> Tensor:
    """``weight``'s rows ``ids`` (``(n, D)``), where the positions marked ``padded`` take their row
    from ``weight.detach()``, so they send no gradient (torch's ``padding_idx``): the other rows
    are gathered in their order (their gradient is ``scatter_add`` in index order, as without
    padding), the padding rows after them, and a last ``gather`` puts every row back at its
    position. No arithmetic: the values are the table's rows exactly."""
    dim = weight.shape[1]
    kept = np.flatnonzero(~padded)
    dropped = np.flatnonzero(padded)
    order = np.empty(ids.size, dtype=np.int64)
    order[kept] = np.arange(kept.size, dtype=np.int64)
    order[dropped] = np.arange(kept.size, ids.size, dtype=np.int64)
    rows = concat(
        [
            gather(weight, _rows_index(ids[kept], dim, weight), 0),
            gather(weight.detach(), _rows_index(ids[dropped], dim, weight), 0),
        ],
        0,
    )
    return gather(rows, _rows_index(order, dim, weight), 0)
