"""Tiled (flash) attention: the online-softmax recurrence, forward and backward.

Unlike the original TorchLean spec, whose ``flashAttention`` reads its tile sizes and ignores
them (anchor-runtime.md §5.3), this module runs the real algorithm of FlashAttention (Dao et al.,
2022) in the loop order of FlashAttention-2 (Dao, 2023):

forward, for each query tile ``Q_i`` (``block_q`` rows), over the key tiles ``K_j, V_j``
(``block_k`` rows), keeping per query row a running maximum ``m``, a running denominator ``l`` and
an unnormalised accumulator ``O``::

    S    = Q_i K_jᵀ · scale                      (block_q × block_k, the only score storage)
    m'   = max(m, max over allowed S)            (-inf while the row has seen no allowed key)
    P    = exp(S - m') on allowed entries, exactly 0 on blocked ones (selection)
    l    = exp(m - m') l + rowsum(P)
    O    = exp(m - m') O + P V_j
    then O / l (0 for a row with l = 0) and logsumexp = m + log l (-inf for such a row);

backward, for each key tile over the query tiles, recomputing ``P = exp(S - logsumexp)`` per tile
from the saved row statistic, with ``D = rowsum(dO ∘ O)``::

    dV_j += Pᵀ dO_i,   dP = dO_i V_jᵀ,   dS = P ∘ (dP - D_i) · scale,
    dQ_i += dS K_j,    dK_j += dSᵀ Q_i.

The full nQ × nK score or probability matrix is never formed; extra memory is O(block_q ·
block_k + (nQ + nK)·d) per batch entry. Masks, shapes, broadcasting, dtypes and the treatment of
fully blocked rows and of non-finite values at blocked positions are those of
:mod:`torchlean.spec.attention`, which this module must equal (checked by
:func:`torchlean.spec.checker.check_flash_attention`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from torchlean._checks import is_builtin_or_numpy_int
from torchlean.backend.providers.reference.ieee import ieee
from torchlean.spec import _arith
from torchlean.spec._arith import Array, BoolArray
from torchlean.spec.attention import AttentionInputs, prepare_attention
from torchlean.spec.errors import SpecTypeError, SpecValueError


@dataclass(frozen=True, slots=True)
class FlashAttentionConfig:
    """Tile sizes of :func:`flash_attention`: ``block_q`` query rows × ``block_k`` key rows.

    0 means "one tile spanning the whole axis" (the original's ``FlashAttentionConfig.default``
    is ``{0, 0}``); a tile larger than the axis is clipped to it. A block size is a Python or
    numpy integer (``np.int64(2)``), stored as ``int``.

    Raises:
        SpecTypeError: a block size that is not an integer (bools, floats and strings refused).
        SpecValueError: a negative block size.
    """

    block_q: int = 0
    block_k: int = 0

    def __post_init__(self) -> None:
        for name in ("block_q", "block_k"):
            value = getattr(self, name)
            if not is_builtin_or_numpy_int(value):
                raise SpecTypeError(f"{name} must be an int, got {value!r}")
            if value < 0:
                raise SpecValueError(f"{name} must be >= 0 (0 = one tile), got {value}")
            object.__setattr__(self, name, int(value))


def _checked_config(config: object) -> FlashAttentionConfig:
    """``config`` when it is a :class:`FlashAttentionConfig`.

    Raises:
        SpecTypeError: ``config must be a FlashAttentionConfig, got (2, 2) of type tuple ...``.
    """
    if not isinstance(config, FlashAttentionConfig):
        raise SpecTypeError(
            f"config must be a FlashAttentionConfig, got {config!r} of type {type(config).__name__} "
            "(build one with FlashAttentionConfig(block_q=..., block_k=...))"
        )
    return config


def _tiles(n: int, block: int) -> Iterator[slice]:
    step = block if block > 0 else max(n, 1)
    for start in range(0, n, step):
        yield slice(start, min(start + step, n))


def _swap(array: Array) -> Array:
    return np.swapaxes(array, -1, -2)


def _broadcast_operands(inputs: AttentionInputs) -> tuple[Array, Array, Array, BoolArray | None]:
    """q, k, v and the mask as read-only views broadcast to the common batch shape (no copies)."""
    batch = inputs.batch
    return (
        np.broadcast_to(inputs.q, (*batch, *inputs.q.shape[-2:])),
        np.broadcast_to(inputs.k, (*batch, *inputs.k.shape[-2:])),
        np.broadcast_to(inputs.v, (*batch, *inputs.v.shape[-2:])),
        inputs.allowed_full(),
    )


def _tile_mask(allowed: BoolArray | None, rows: slice, cols: slice) -> BoolArray | None:
    return None if allowed is None else allowed[..., rows, cols]


@ieee
def flash_attention_forward(
    q: npt.ArrayLike,
    k: npt.ArrayLike,
    v: npt.ArrayLike,
    mask: npt.ArrayLike | None = None,
    *,
    scale: Any = None,
    config: FlashAttentionConfig = FlashAttentionConfig(),
) -> tuple[Array, Array]:
    """Tiled attention forward; returns ``(out, logsumexp)``.

    Args:
        q: (..., nQ, d), k: (..., nK, d), v: (..., nK, dv) floating or mpmath object arrays;
            leading axes broadcast.
        mask: optional bool array broadcastable to (..., nQ, nK); True = may attend.
        scale: score factor, a finite real number (NaN/inf refused with SpecValueError, unlike
            PyTorch: see :func:`torchlean.spec.scaled_dot_product_attention`); default
            ``1/sqrt(d)`` (1 when ``d == 0``).
        config: tile sizes.

    Returns:
        ``out`` (*batch, nQ, dv), equal to :func:`torchlean.spec.scaled_dot_product_attention`
        up to rounding, and ``logsumexp`` (*batch, nQ): ``log sum_j allowed exp(S_ij)`` per query
        row, ``-inf`` for a row with no allowed key (whose output is 0), and NaN for a row
        whose allowed scores are all ``-inf`` (``torch.logsumexp`` gives ``-inf``), or hold a
        NaN or a ``+inf`` (``+inf`` there): its output is NaN, standard attention's softmax of
        them, and the NaN logsumexp carries that NaN into the backward. Source: Dao et al. 2022
        (Algorithm 1), FlashAttention-2 (Dao 2023, Algorithm 1: query tiles outside, key tiles
        inside, one normalisation at the end).

    Raises:
        SpecTypeError, SpecValueError: see :func:`torchlean.spec.attention.prepare_attention`;
            SpecTypeError also for a ``config`` that is not a :class:`FlashAttentionConfig`.
    """
    config = _checked_config(config)
    inputs = prepare_attention(q, k, v, mask, scale)
    q_all, k_all, v_all, mask_all = _broadcast_operands(inputs)
    dtype = inputs.dtype
    zero, neg_inf = _arith.zero(dtype), _arith.neg_inf(dtype)
    batch = inputs.batch
    out = _arith.zeros(inputs.out_shape, dtype)
    lse = np.full((*batch, inputs.n_q), neg_inf, dtype=dtype)
    for rows in _tiles(inputs.n_q, config.block_q):
        q_tile = q_all[..., rows, :]
        height = q_tile.shape[-2]
        running_max = np.full((*batch, height, 1), neg_inf, dtype=dtype)
        denominator = _arith.zeros((*batch, height, 1), dtype)
        accumulator = _arith.zeros((*batch, height, inputs.d_v), dtype)
        seen = np.zeros((*batch, height, 1), dtype=bool)
        for cols in _tiles(inputs.n_k, config.block_k):
            allowed = _tile_mask(mask_all, rows, cols)
            scores = np.asarray(q_tile @ _swap(k_all[..., cols, :])) * inputs.scale
            if allowed is None:
                tile_any = np.full(seen.shape, scores.shape[-1] > 0)
                tile_max = np.max(scores, axis=-1, keepdims=True)
            else:
                tile_any = np.any(allowed, axis=-1, keepdims=True)
                tile_max = np.max(np.where(allowed, scores, neg_inf), axis=-1, keepdims=True)
            now_seen = seen | tile_any
            new_max = np.maximum(running_max, tile_max)
            # shift by the running max once it is above -inf; while every allowed score seen is
            # -inf, shift by 0 (their probabilities are exp(-inf) = 0, not exp(-inf - -inf) = NaN)
            shift = np.where(now_seen & (new_max != neg_inf), new_max, zero)
            kept = scores if allowed is None else np.where(allowed, scores, shift)
            probabilities = _arith.select(allowed, _arith.exp(kept - shift))
            rescale = _arith.select(seen, _arith.exp(np.where(seen, running_max, zero) - shift))
            denominator = rescale * denominator + np.sum(probabilities, axis=-1, keepdims=True)
            accumulator = rescale * accumulator + _arith.selected_matmul(
                probabilities, allowed, v_all[..., cols, :]
            )
            running_max = new_max  # still -inf on rows that have seen no allowed key
            seen = now_seen
        # a row whose allowed scores are all -inf normalises 0 by 0: NaN output and logsumexp, as
        # standard attention's softmax gives (its backward then propagates NaN, not zeros)
        live = seen & (running_max != neg_inf)
        safe_denominator = np.where(live, denominator, _arith.scalar(1, dtype))
        nan = _arith.scalar("nan", dtype) if _arith.is_multiprecision(dtype) else dtype.type(np.nan)
        out[..., rows, :] = np.where(seen & ~live, nan, _arith.select(live, accumulator / safe_denominator))
        row_lse = np.where(live, running_max + _arith.log(safe_denominator), np.where(seen, nan, neg_inf))
        lse[..., rows] = row_lse[..., 0]  # -inf for a row with no allowed key
    return out, lse


@ieee
def flash_attention(
    q: npt.ArrayLike,
    k: npt.ArrayLike,
    v: npt.ArrayLike,
    mask: npt.ArrayLike | None = None,
    *,
    scale: Any = None,
    config: FlashAttentionConfig = FlashAttentionConfig(),
) -> Array:
    """Tiled attention output (*batch, nQ, dv); :func:`flash_attention_forward` without the
    logsumexp. Same arguments, result and errors."""
    return flash_attention_forward(q, k, v, mask, scale=scale, config=config)[0]


@ieee
def flash_attention_backward(
    q: npt.ArrayLike,
    k: npt.ArrayLike,
    v: npt.ArrayLike,
    out: npt.ArrayLike,
    lse: npt.ArrayLike,
    d_out: npt.ArrayLike,
    mask: npt.ArrayLike | None = None,
    *,
    scale: Any = None,
    config: FlashAttentionConfig = FlashAttentionConfig(),
) -> tuple[Array, Array, Array]:
    """Tiled attention backward from the saved output and row logsumexp; returns ``(dq, dk, dv)``.

    Args:
        q, k, v, mask, scale, config: as in :func:`flash_attention_forward`.
        out: (*batch, nQ, dv), the forward output.
        lse: (*batch, nQ), the forward logsumexp (``-inf`` marks a row with no allowed key; such a
            row contributes nothing to any gradient; a NaN one, from NaN scores or allowed
            scores all ``-inf``, propagates NaN as the standard backward does).
        d_out: (*batch, nQ, dv), the output cotangent.

    Returns:
        Gradients with the shapes of ``q``, ``k``, ``v`` (broadcast leading axes summed back),
        equal to :func:`torchlean.spec.scaled_dot_product_attention_backward` up to rounding
        where the cotangent is finite and its products with ``v`` and ``O`` do not overflow;
        otherwise both are non-finite there, but may put ``inf`` and NaN in different entries
        (``D = rowsum(dO ∘ O)`` and the standard ``sum_j P dP`` meet ``0 * inf`` in different
        places; review193 F3). "Up to rounding" grows with the scores' magnitude: ``P`` is
        recomputed as ``exp(S - lse)`` from the rounded logsumexp, whose ulp at large positive
        scores is comparable to ``log`` of the row's denominator (review209 F2: two tied keys at
        float64 scores of 1e5 give dV 1.6e-12 relative off the standard backward, at 1e12 3.2e-5,
        at 1e16 ``[1, 1]`` for ``[0.5, 0.5]``; float32 2e-4 at 1e4), where the standard backward,
        which recomputes the max-shifted softmax, stays exact; this is the algorithm's, as the
        GPU kernels'. Source: FlashAttention-2 (Dao 2023, Algorithm 2: key tiles outside,
        query tiles inside, ``P`` recomputed from the logsumexp, ``D = rowsum(dO ∘ O)``).

    Raises:
        SpecTypeError, SpecValueError: as for the forward; SpecValueError also when ``out``,
        ``lse`` or ``d_out`` have the wrong shape or are ragged nested sequences.
    """
    config = _checked_config(config)
    inputs = prepare_attention(q, k, v, mask, scale)
    q_all, k_all, v_all, mask_all = _broadcast_operands(inputs)
    dtype = inputs.dtype
    zero = _arith.zero(dtype)
    batch = inputs.batch
    saved_out = _saved("out", out, inputs.out_shape, dtype)
    saved_lse = _saved("lse", lse, (*batch, inputs.n_q), dtype)[..., None]
    grad = _saved("d_out", d_out, inputs.out_shape, dtype)
    row_ok = saved_lse != _arith.neg_inf(dtype)  # a NaN logsumexp is a live row: NaN propagates
    lse_shift = np.where(row_ok, saved_lse, zero)
    row_dot = _arith.select(row_ok, np.sum(grad * saved_out, axis=-1, keepdims=True))
    d_q = _arith.zeros((*batch, inputs.n_q, inputs.d), dtype)
    d_k = _arith.zeros((*batch, inputs.n_k, inputs.d), dtype)
    d_v = _arith.zeros((*batch, inputs.n_k, inputs.d_v), dtype)
    for cols in _tiles(inputs.n_k, config.block_k):
        k_tile, v_tile = k_all[..., cols, :], v_all[..., cols, :]
        d_k_tile = _arith.zeros(k_tile.shape, dtype)
        d_v_tile = _arith.zeros(v_tile.shape, dtype)
        for rows in _tiles(inputs.n_q, config.block_q):
            q_tile, grad_tile = q_all[..., rows, :], grad[..., rows, :]
            tile_mask = _tile_mask(mask_all, rows, cols)
            allowed = row_ok[..., rows, :] if tile_mask is None else row_ok[..., rows, :] & tile_mask
            allowed = np.broadcast_to(allowed, (*batch, q_tile.shape[-2], k_tile.shape[-2]))
            allowed_t = _swap(allowed)
            shift = lse_shift[..., rows, :]
            scores = np.asarray(q_tile @ _swap(k_tile)) * inputs.scale
            probabilities = _arith.select(allowed, _arith.exp(np.where(allowed, scores, shift) - shift))
            d_v_tile = d_v_tile + _arith.selected_matmul(_swap(probabilities), allowed_t, grad_tile)
            d_probabilities = np.asarray(grad_tile @ _swap(v_tile))
            d_scores = (
                _arith.select(allowed, probabilities * (d_probabilities - row_dot[..., rows, :]))
                * inputs.scale
            )
            d_q[..., rows, :] = d_q[..., rows, :] + _arith.selected_matmul(d_scores, allowed, k_tile)
            d_k_tile = d_k_tile + _arith.selected_matmul(_swap(d_scores), allowed_t, q_tile)
        d_k[..., cols, :] = d_k_tile
        d_v[..., cols, :] = d_v_tile
    return (
        _arith.sum_to_shape(d_q, inputs.q.shape),
        _arith.sum_to_shape(d_k, inputs.k.shape),
        _arith.sum_to_shape(d_v, inputs.v.shape),
    )


def _saved(name: str, value: npt.ArrayLike, shape: tuple[int, ...], dtype: np.dtype[Any]) -> Array:
    array = _arith.as_array(name, value)
    _arith.working_dtype({name: array})
    if array.shape != shape:
        raise SpecValueError(f"{name} must have shape {shape}, got {array.shape}")
    return _arith.to_working(array, dtype)
