"""Softmax along an axis (plain, log and hard-masked) and scaled dot-product attention, whose
blocked entries are selected away (a fully masked row is zeros)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from torchlean._tensor_args import _UNSET, _Unset
from torchlean._torch_host import declared_shape, is_torch_tensor, torch_refusal
from torchlean.autograd.session import run_op
from torchlean.backend.errors import GuardError
from torchlean.backend.providers.reference.guards import (
    check_mask_shape,
    check_sdpa_mask_shape,
    sdpa_scores_shape,
)
from torchlean.backend.vocabulary import BackendOp
from torchlean.functional._operands import _mask, _require_tensor
from torchlean.functional._params import _axis_spelling, _int, _real
from torchlean.functional._shape import reshape
from torchlean.tensor import BoolLike, IntLike, RealLike, Tensor, TensorTypeError


def softmax(x: Tensor, axis: IntLike | _Unset = _UNSET, *, dim: IntLike | _Unset = _UNSET) -> Tensor:
    """Max-shifted softmax along ``axis`` (torch's keyword ``dim=`` is taken for it,
    ``softmax(x, dim=1)``) (``torch.softmax``); records ``softmax``. Returns x's shape; a rank-0
    ``x`` gives 1, as in torch. ``x`` is float32 or float64, the result in its dtype.

    Without an axis, an ``x`` of rank 0 to 2 takes the last axis, which is the axis torch's
    ``F.softmax(x)`` picks for those ranks; from rank 3 the axis must be given, since torch's
    implicit choice there is not the last axis (dim 0 for rank 3, dim 1 above; review138 F1).

    Raises:
        GuardError: ``axis`` out of range for x's rank (never wrapped); an int64 or bool ``x``.
        TensorTypeError: a non-integer ``axis`` (``None`` too: numpy's "every entry" is not
            meant; torch's ``dim=None`` is the implicit choice above); both ``axis`` and ``dim``;
            neither, for an ``x`` of rank 3 or more (``softmax: give the axis for a rank-4 input
            ...``).
    """
    chosen = _softmax_axis("softmax", x, axis, dim)
    return run_op(BackendOp.SOFTMAX, (x,), {"axis": _int("softmax", "axis", chosen)})


def log_softmax(x: Tensor, axis: IntLike | _Unset = _UNSET, *, dim: IntLike | _Unset = _UNSET) -> Tensor:
    """Max-shifted log-softmax along ``axis`` (or torch's ``dim=``) (``torch.log_softmax``);
    records ``log_softmax``. Returns x's shape and dtype. Without an axis, as :func:`softmax`: the
    last axis for rank 0 to 2, refused from rank 3.

    Raises:
        GuardError: ``axis`` out of range for x's rank (never wrapped); an int64 or bool ``x``.
        TensorTypeError: a non-integer ``axis``; both ``axis`` and ``dim``; neither, for an ``x``
            of rank 3 or more.
    """
    chosen = _softmax_axis("log_softmax", x, axis, dim)
    return run_op(BackendOp.LOG_SOFTMAX, (x,), {"axis": _int("log_softmax", "axis", chosen)})


def _softmax_axis(fn: str, x: Tensor, axis: IntLike | _Unset, dim: IntLike | _Unset) -> IntLike:
    """The axis of ``fn`` (``softmax``, ``log_softmax``): the one given (``dim=None`` gives none),
    else -1 where that is the
    axis torch's ``F.softmax(x)`` picks without ``dim`` (rank 0 to 2; torch's
    ``_get_softmax_dim``: dim 0 for rank 0, 1 and 3, dim 1 otherwise).

    Raises:
        TensorTypeError: ``axis=None``; both spellings; neither, for an ``x`` of rank 3 or more.
    """
    if axis is None:  # review146 F3: numpy/scipy read axis=None as one softmax over every entry
        raise TensorTypeError(
            f"{fn}: axis must be an integer; got None (not a {fn} over every entry, as numpy and "
            f"scipy read axis=None: reshape(-1) first for that; torch's dim=None is its implicit "
            "axis choice)"
        )
    if dim is None and isinstance(axis, _Unset):
        dim = _UNSET  # torch's F.softmax(x, dim=None): the implicit choice (review145 F11)
    if isinstance(axis, _Unset) and isinstance(dim, _Unset):
        rank = len(_require_tensor(fn, "x", x).shape)
        if rank >= 3:
            torch_dim = 0 if rank == 3 else 1
            raise TensorTypeError(
                f"{fn}: give the axis for a rank-{rank} input (axis=-1 for the last, or torch's "
                f"dim=); torch's F.{fn}(x) without dim would take dim={torch_dim} here (deprecated), "
                "so a default would not mean what a ported call means (the last axis is the default "
                "for rank 0 to 2 only)"
            )
    last: IntLike = -1  # typed as the union, so that mypy infers IntLike, not object
    return _axis_spelling(fn, axis, dim, last)


def hard_masked_softmax(
    x: Tensor,
    mask: Tensor | npt.ArrayLike,
    axis: IntLike | _Unset = _UNSET,
    *,
    dim: IntLike | _Unset = _UNSET,
) -> Tensor:
    """Softmax along ``axis`` (default -1; torch's keyword ``dim=`` is taken for it, as
    :func:`softmax` takes it) over the entries ``mask`` allows (True), exactly 0 elsewhere; a
    fully blocked row is all zeros (anchor-runtime.md §5.2). ``mask`` is boolean and broadcasts
    to ``x``; records ``hard_masked_softmax``. Returns x's shape and dtype.

    Raises:
        GuardTypeError: a non-boolean mask (a float array is an additive bias, not a mask),
            or ``None`` (``softmax`` is the maskless form; the specification's
            ``hard_masked_softmax`` takes ``None`` as that).
        GuardError: a mask that does not broadcast to x's shape; ``axis`` out of range.
        TensorTypeError: ``x`` is not a Tensor; a non-integer ``axis``; both ``axis`` and ``dim``.
    """
    x = _require_tensor("hard_masked_softmax", "x", x)
    chosen = _axis_spelling("hard_masked_softmax", axis, dim, -1)
    params = {"axis": _int("hard_masked_softmax", "axis", chosen)}
    mask_shape = declared_shape(mask)
    boolean = str(getattr(mask, "dtype", "")) in ("bool", "torch.bool")  # else the guard's dtype refusal
    if mask_shape is not None and boolean:  # first, as for every container (review242 F6)
        check_mask_shape("hard_masked_softmax", x.shape, mask_shape)  # before the copy (review240 F4)
    return run_op(BackendOp.HARD_MASKED_SOFTMAX, (x, _mask("hard_masked_softmax", mask, x)), params)


def scaled_dot_product_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | npt.ArrayLike | None = None,
    dropout_p: RealLike = 0.0,
    is_causal: BoolLike = False,
    *,
    scale: RealLike | None = None,
    attn_mask: Tensor | npt.ArrayLike | None = None,
    enable_gqa: BoolLike = False,
) -> Tensor:
    """``softmax(q kᵀ · scale) v`` with an optional boolean hard mask (True = attend; blocked
    entries contribute exactly 0, a fully blocked row gives zeros); q ``(..., nQ, d)``, k
    ``(..., nK, d)``, v ``(..., nK, dv)``; scale defaults to ``1/sqrt(d)`` (1 when d == 0)
    (``torch.nn.functional.scaled_dot_product_attention``). Records
    ``scaled_dot_product_attention`` on whichever capsule the session selected
    (``reference.attention`` under ``checked_cpu``, ``aten.scaled_dot_product_attention`` under
    ``fast_cpu``, ``libtorch.sdpa_forward`` under ``libtorch_forward_cpu``).

    The arguments are in torch's order (``attn_mask, dropout_p, is_causal``, then ``scale``
    keyword-only), so a call ported from torch keeps its meaning. ``attn_mask=`` (torch's
    keyword) is ``mask``, boolean as torch's boolean mask (True = attend; a float additive mask
    is refused with its conversion, review90 F9); giving both is a ``TensorTypeError``.
    ``dropout_p`` must be 0 (torch's default): the attention weights are never dropped.
    ``is_causal=True`` attends key ``j`` from query ``i`` where ``j <= i``, upper-left aligned as
    torch's (``torchlean.spec.causal_mask(n_q, n_k)``, which is the mask it builds;
    ``align="lower_right"`` there for the other alignment); with a mask as well it is refused, as
    torch refuses it (review102 L1). The mask's polarity is SDPA's: ``torch.nn.MultiheadAttention``'s
    ``key_padding_mask`` and boolean ``attn_mask`` mean True = ignore, so a padding mask ``pad``
    ``(B, n_k)`` of that layer is ``~pad[:, None, None, :]`` here.

    ``enable_gqa=True`` is torch's grouped-query attention: q has ``Hq`` heads on axis -3 and k, v
    ``Hkv`` (equal) heads there, ``Hq`` a multiple of ``Hkv``, and query head ``h`` attends with
    key/value head ``h // (Hq / Hkv)`` (torch's ``repeat_interleave``). It runs as q reshaped to
    ``(..., Hkv, Hq/Hkv, nQ, d)`` against k, v ``(..., Hkv, 1, nK, d)`` by broadcasting, with no
    copy of k or v (the mask's head axis, of size 1 or ``Hq``, is split the same way), then the
    result reshaped back: ``reshape`` and ``scaled_dot_product_attention`` are recorded. The
    recorded attention has one axis more than q, so under ``checked_cuda`` (whose
    ``torchlean.composed_attention`` takes rank 3 or 4) grouped q must be of rank 3.

    The leading batch axes of q, k and v broadcast; the mask broadcasts to the scores
    ``(..., nQ, nK)``. Returns ``(..., nQ, dv)`` in q's dtype. Any finite ``scale`` is accepted
    (0 and negative ones too). Under CUDA profiles the capsules' contracts narrow the shapes:
    ``torchlean.composed_attention`` (``checked_cuda``) takes q, k, v of rank 3 or 4 only (the
    original's ``(batch, heads, n, d)``, batch optional: give a single head an axis with
    ``reshape``), ``native_cuda.direct_attention`` ``d, dv <= 256``.

    Order of operations (every provider, as the original): the scores ``q kᵀ`` are formed in
    q's dtype and then multiplied by ``scale``, where torch's SDPA scales q and k first. So a
    score beyond the dtype's range is ±inf before a small ``scale`` could bring it back (a
    ``+inf`` score, or allowed scores that are all ``-inf``, turn the row NaN where torch stays
    finite; a single ``-inf`` score among finite ones gets weight 0, as in torch), and a
    ``scale`` the dtype cannot hold (``1e39`` in float32) is inf and gives NaN rows (torch,
    multiplying q and k by ``sqrt(scale)``, stays finite where those products do;
    ``libtorch.sdpa_forward`` recomputes such rows the reference's way, so its forward agrees
    with its backward and the other providers). A row
    whose allowed scores are all -inf (not a blocked row) is NaN in forward and backward, the
    softmax of all -inf, in every provider; torch's SDPA returns zeros there, with a boolean mask
    or without one (review193 F1).
    A NaN or inf at a blocked position (in q of a fully blocked row, in a blocked key or value)
    never reaches the output or a gradient, in every provider: blocked entries are selected away,
    never multiplied by 0; torch 2.13's SDPA propagates them (review140 F3).

    Raises:
        GuardError: an operand of rank below 2, shapes that do not fit (d or nK differ, batch axes
            or the mask do not broadcast), mixed float dtypes, or a ``scale`` that is not finite.
        GuardTypeError: a non-boolean mask.
        TensorTypeError: an operand that is not a Tensor (the operand rule: ``input 0 must be a
            torchlean Tensor``; with ``is_causal=True``, ``q`` or ``k`` named); a ``scale`` that is
            not a real number; both ``mask`` and ``attn_mask``; a ``dropout_p`` other than 0; an
            ``is_causal`` that is not a bool, or True with a mask; an ``enable_gqa`` that is not
            a bool.
        TensorError: a ``scale`` beyond the float64 range (``10**400``).
        GuardError: with ``enable_gqa=True``, an operand of rank below 3, k and v with different
            head counts, ``Hq`` not a multiple of ``Hkv``, or a mask whose head axis is neither 1
            nor ``Hq`` (torch's checks), and the shape faults above, naming the shapes as given;
            without it, k and v with ``Hkv > 1`` heads and q with a multiple of them, naming
            ``enable_gqa=True``.
    """
    fn = "scaled_dot_product_attention"
    if attn_mask is not None:
        if mask is not None:
            raise TensorTypeError(f"{fn}: got both mask and attn_mask (torch's name for it); give one")
        mask = attn_mask
    if _real(fn, "dropout_p", dropout_p) != 0.0:
        raise TensorTypeError(
            f"{fn}: dropout_p={dropout_p!r} is refused: torchlean's attention never drops its weights "
            "(accepted: 0.0, torch's default)"
        )
    if not isinstance(is_causal, bool | np.bool_):
        raise TensorTypeError(f"{fn}: is_causal must be a bool (torch's default False), got {is_causal!r}")
    if is_causal:
        if mask is not None:
            raise TensorTypeError(
                f"{fn}: got a mask and is_causal=True (torch refuses them together too); give one: the "
                "causal mask is torchlean.spec.causal_mask(n_q, n_k), which combines with yours by &"
            )
        q_shape, k_shape = _require_tensor(fn, "q", q).shape, _require_tensor(fn, "k", k).shape
        if len(q_shape) >= 2 and len(k_shape) >= 2:  # else the guard refuses the rank (review104 M1)
            mask = np.tril(np.ones((q_shape[-2], k_shape[-2]), dtype=bool))
    if not isinstance(enable_gqa, bool | np.bool_):
        raise TensorTypeError(f"{fn}: enable_gqa must be a bool (torch's default False), got {enable_gqa!r}")
    params: dict[str, Any] = {}
    if scale is not None:
        params["scale"] = _real(fn, "scale", scale)
    mask_shape = None if mask is None or isinstance(mask, Tensor) else declared_shape(mask)
    if is_torch_tensor(mask) and torch_refusal("mask", mask) is not None:
        mask_shape = None  # refused as it is read
    if mask_shape is not None:  # before the copy (review243 F2)
        _check_mask_before_copy(fn, q, k, v, mask, mask_shape, bool(enable_gqa))
    mask_t = None if mask is None else _mask(fn, mask, q)
    if not enable_gqa:
        _refuse_ungrouped_heads(fn, q, k, v)
        return run_op(BackendOp.SCALED_DOT_PRODUCT_ATTENTION, (q, k, v, mask_t), params)
    q, k, v, mask_t, heads = _grouped(fn, q, k, v, mask_t)
    out = run_op(BackendOp.SCALED_DOT_PRODUCT_ATTENTION, (q, k, v, mask_t), params)
    return out if heads is None else reshape(out, (*out.shape[:-4], heads, *out.shape[-2:]))


def _check_mask_before_copy(
    fn: str, q: object, k: object, v: object, mask: object, mask_shape: tuple[int, ...], grouped: bool
) -> None:
    """Refuse the declared shape of array data ``mask`` as the checks after its copy would, where
    they would come to it: with ``enable_gqa=True`` the grouped checks (:func:`_grouped`, which see
    the mask's shape before any dtype), else the kernel guard's, only for a boolean mask (another
    dtype is refused first, as for a Tensor mask) and q, k, v of one float dtype.

    Raises:
        GuardError: as :func:`_grouped`, or the guard's ``mask ... does not broadcast to the
            scores' shape ...`` and the q, k, v shape faults it checks before the mask.
    """
    if grouped:
        _grouped_heads(fn, q, k, v, mask_shape)
        return
    if str(getattr(mask, "dtype", "")) not in ("bool", "torch.bool"):
        return
    operands = [t for t in (q, k, v) if isinstance(t, Tensor)]
    dtypes = {t.dtype for t in operands}
    if len(operands) < 3 or len(dtypes) != 1 or dtypes.pop() not in (np.float32, np.float64):
        return  # the guard refuses an operand or its dtype first
    _refuse_ungrouped_heads(fn, q, k, v)
    q_shape, k_shape, v_shape = (t.shape for t in operands)
    check_sdpa_mask_shape(sdpa_scores_shape(q_shape, k_shape, v_shape), mask_shape)


def _check_grouped_shapes(
    fn: str, shapes: dict[str, tuple[int, ...]], mask: tuple[int, ...] | None
) -> None:
    """Check grouped-query operands' shapes as given (q ``(..., Hq, nQ, d)``, k ``(..., Hkv, nK,
    d)``, v ``(..., Hkv, nK, dv)``, heads checked already), before their head axes are split:
    the kernel guard, which sees the split operands, would name shapes of one more axis that the
    caller never passed (review223 F3).

    Raises:
        GuardError: d or nK differ, the batch axes before the heads do not broadcast, or the mask
            does not broadcast to the scores ``(..., Hq, nQ, nK)``, naming the shapes given.
    """
    q, k, v = shapes["q"], shapes["k"], shapes["v"]
    given = f"q {q}, k {k}, v {v}" + ("" if mask is None else f", mask {mask}")

    def fail(what: str) -> GuardError:
        return GuardError(
            f"{fn}: with enable_gqa=True, {what} (given: {given}; accepted: q (..., Hq, nQ, d), k (..., "
            "Hkv, nK, d), v (..., Hkv, nK, dv), Hq a multiple of Hkv, a mask broadcastable to (..., Hq, "
            "nQ, nK))"
        )

    if q[-1] != k[-1]:
        raise fail(f"q's d = {q[-1]} and k's d = {k[-1]} differ")
    if k[-2] != v[-2]:
        raise fail(f"k's nK = {k[-2]} and v's nK = {v[-2]} differ")
    try:
        batch = np.broadcast_shapes(q[:-3], k[:-3], v[:-3])
    except ValueError:
        raise fail("the batch axes before the head axis (-3) do not broadcast") from None
    scores = (*batch, q[-3], q[-2], k[-2])
    try:
        fits = mask is None or np.broadcast_shapes(scores, mask) == scores
    except ValueError:
        fits = False
    if not fits:
        raise fail(f"the mask does not broadcast to the scores' shape {scores}")


def _refuse_ungrouped_heads(fn: str, q: object, k: object, v: object) -> None:
    """Refuse, naming ``enable_gqa=True``, head counts (axis -3) that do not broadcast but would
    group: k and v with ``Hkv > 1`` heads and q with a multiple of them (review223 F4: the
    batch-broadcast refusal did not say so; torch's does not either).

    Raises:
        GuardError: naming the three shapes and ``enable_gqa=True``.
    """
    shapes = [t.shape for t in (q, k, v) if isinstance(t, Tensor) and len(t.shape) >= 3]
    if len(shapes) < 3:
        return  # the guard refuses what is not a Tensor of rank 3 or more, if anything
    heads, kv_heads = shapes[0][-3], shapes[1][-3]
    groups = kv_heads > 1 and heads != kv_heads and shapes[2][-3] == kv_heads and heads % kv_heads == 0
    # only where the heads are all that keeps the call from running grouped (review228 F4: the hint
    # came first, and following it met the next refusal: d or the batch axes)
    try:
        np.broadcast_shapes(shapes[0][:-3], shapes[1][:-3], shapes[2][:-3])
    except ValueError:
        groups = False
    if groups and shapes[0][-1] == shapes[1][-1] and shapes[1][-2] == shapes[2][-2]:
        raise GuardError(
            f"{fn}: q has {heads} heads (axis -3) and k, v have {kv_heads}, which do not broadcast "
            f"(q {shapes[0]}, k {shapes[1]}, v {shapes[2]}); for grouped-query attention, each k/v "
            "head serving a group of q's, pass enable_gqa=True (as torch's SDPA takes it)"
        )


def _grouped_heads(
    fn: str, q: object, k: object, v: object, mask: tuple[int, ...] | None
) -> tuple[int, int] | None:
    """The checks of :func:`_grouped` on the shapes of q, k, v and the mask (also applied to a
    mask's declared shape before it is copied, review243 F2); returns ``(Hq, Hkv)``, or None when
    there is no head at all (``Hq == Hkv == 0``: nothing more is checked, as before).

    Raises:
        GuardError: as :func:`_grouped`.
        TensorTypeError: q, k or v is not a Tensor.
    """
    shapes = {name: _require_tensor(fn, name, t).shape for name, t in (("q", q), ("k", k), ("v", v))}
    if min(len(shape) for shape in shapes.values()) < 3:
        raise GuardError(
            f"{fn}: enable_gqa=True needs q, k and v of rank 3 or more, heads on axis -3; got "
            + ", ".join(f"{name} {shape}" for name, shape in shapes.items())
        )
    heads, kv_heads = shapes["q"][-3], shapes["k"][-3]
    if heads == kv_heads == shapes["v"][-3] == 0:  # review145 F6
        return None
    if shapes["v"][-3] != kv_heads or kv_heads == 0 or heads % kv_heads != 0:
        raise GuardError(
            f"{fn}: enable_gqa=True needs k and v with the same number of heads (axis -3), a "
            f"nonzero divisor of q's: q has {heads}, k {kv_heads}, v {shapes['v'][-3]}"
        )
    if mask is not None and len(mask) >= 3 and mask[-3] not in (1, heads):
        raise GuardError(
            f"{fn}: with enable_gqa=True the mask's head axis (-3) must be 1 or q's {heads}; "
            f"got mask {mask}"
        )
    _check_grouped_shapes(fn, shapes, mask)
    return heads, kv_heads


def _grouped(
    fn: str, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None
) -> tuple[Tensor, Tensor, Tensor, Tensor | None, int | None]:
    """q, k, v (and the mask) of grouped-query attention with the head axis -3 split into
    ``(Hkv, group)`` for q and ``(Hkv, 1)`` for k and v, and ``Hq``; with no head at all (``Hq ==
    Hkv == 0``, which torch takes: an empty result) the operands as they are and None.

    Raises:
        GuardError: as :func:`scaled_dot_product_attention` with ``enable_gqa=True``.
    """
    counts = _grouped_heads(fn, q, k, v, None if mask is None else mask.shape)
    if counts is None:  # review145 F6
        return q, k, v, mask, None
    heads, kv_heads = counts
    group = heads // kv_heads

    def split(t: Tensor, into: tuple[int, int]) -> Tensor:
        return reshape(t, (*t.shape[:-3], *into, *t.shape[-2:]))

    if mask is not None and len(mask.shape) >= 3:
        mask = split(mask, (kv_heads, group) if mask.shape[-3] == heads else (1, 1))
    return split(q, (kv_heads, group)), split(k, (kv_heads, 1)), split(v, (kv_heads, 1)), mask, heads
