"""Losses: ``mse_loss`` and ``cross_entropy`` (class indices or class probabilities, with
torch's ``label_smoothing``), reduction ``mean`` (``cross_entropy`` takes ``reduction="mean"`` and
spells out the others in its refusal)."""

from __future__ import annotations

import math
import numbers
import operator
from typing import Any

import numpy as np
import numpy.typing as npt

from torchlean._checks import id_outside, is_builtin_int, is_int, shown
from torchlean._torch_host import declared_shape
from torchlean.autograd.session import run_op
from torchlean.backend.errors import GuardError
from torchlean.backend.providers.reference.guards import check_mse_shapes
from torchlean.backend.vocabulary import BackendOp
from torchlean.functional._arithmetic import add, mul, scale, sub
from torchlean.functional._attention import log_softmax
from torchlean.functional._indexing import gather
from torchlean.functional._operands import (
    Operand,
    _array_like,
    _check_int_fits,
    _constant,
    _index,
    _is_array_data,
    _on_device_of,
    _pair,
    _require_tensor,
)
from torchlean.functional._params import _axis, _real
from torchlean.functional._reductions import reduce_mean, reduce_sum
from torchlean.tensor import (
    IntLike,
    RealLike,
    Tensor,
    TensorError,
    TensorTypeError,
    _preview,
    _require_int64_fits,
)

_INT64 = (int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max))
"""The range of torch's ``ignore_index`` (a C++ ``int64_t``)."""


def _one_integer(value: object) -> bool:
    """Whether ``value`` is an integer (not bool) array or tensor that ``__index__`` reads as one
    int, as torch takes it: a 0-d one, or a torch tensor of one element of any rank (review92 F7,
    review97 L5; a float or bool one is no integer: review95 L5; numpy takes only 0-d ones)."""
    if getattr(value, "ndim", None) is None or "bool" in str(getattr(value, "dtype", "")):
        return False
    try:
        operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return False
    return True


def mse_loss(prediction: Tensor, target: Operand, *, reduction: str = "mean") -> Tensor:
    """Mean squared error over all elements, a rank-0 tensor (``torch.nn.functional.mse_loss``,
    reduction ``mean``); records ``mse_loss``.

    Tensor and array shapes must be equal (no broadcasting); a real number (Python or numpy
    scalar) on either side becomes a constant of the tensor's shape, dtype and device, as torch
    broadcasts a 0-d target (``mse_loss(x, 1.0)`` is ``mean((x - 1)**2)``). ``reduction`` takes
    torch's default ``"mean"`` only; ``"sum"`` and ``"none"`` are refused with their spelling.
    float32 or float64 operands of one dtype, the result in it; the mean is a left fold under
    ``checked_cpu``, whose float32 error over many terms is discussed at
    :func:`~torchlean.functional.reduce_sum`. A squared error or their sum beyond the dtype's
    range is ``inf`` although the mean would fit (float32 residuals of 1.5e19), as in torch
    (review166 F6).

    Raises:
        GuardError: shapes differ; an int64 or bool operand, or operands of two dtypes.
        TensorError: an integer that does not fit the tensor's dtype; a ``reduction`` other than
            ``"mean"`` (review89 F6).
        TensorTypeError: a constant operand that is not a real number, an array or a Tensor
            (``'a'``, ``None``: ``cannot use 'a' of type str as a constant operand``), as
            :func:`add`'s (review160 F5).
    """
    _reduction_mean(
        "mse_loss", reduction, "torch's reduction='none', the squared errors, is (prediction - target) * "
        "(prediction - target); reduction='sum' is tl.reduce_sum of them"
    )
    if isinstance(prediction, Tensor) and _is_real(target):
        return run_op(BackendOp.MSE_LOSS, (prediction, _filled(target, prediction)), {})
    if isinstance(target, Tensor) and _is_real(prediction):
        return run_op(BackendOp.MSE_LOSS, (_filled(prediction, target), target), {})
    first = prediction.shape if isinstance(prediction, Tensor) else declared_shape(prediction)
    second = target.shape if isinstance(target, Tensor) else declared_shape(target)
    either = isinstance(prediction, Tensor) or isinstance(target, Tensor)
    if first is not None and second is not None and either:
        check_mse_shapes(first, second)  # before array data is copied (review240 F4)
    x, y = _pair(prediction, target)
    return run_op(BackendOp.MSE_LOSS, (x, y), {})


def _is_real(value: object) -> bool:
    """A Python or numpy real number (bools excluded)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)


def _filled(value: object, like: Tensor) -> Tensor:
    """The number ``value`` as a constant of ``like``'s shape, dtype and device."""
    if is_builtin_int(value):
        _check_int_fits(value, like.dtype)
    elif like.dtype == np.int64:  # numpy's cast would turn NaN, inf or 1e30 into -2**63
        _require_int64_fits(np.asarray(value))
    with np.errstate(over="ignore"):  # a float beyond float32's range rounds to +-inf, as in torch
        return _on_device_of(np.full(like.shape, value, dtype=like.dtype), like)


def _check_class_ids(raw: npt.NDArray[Any], classes: int, axis: int, ignore: int = -100) -> None:
    """Refuse a class index of ``cross_entropy`` outside ``[0, classes)``, naming the value (the
    most negative one, else the largest) and the range, before anything is recorded.

    Raises:
        GuardError: ``cross_entropy: target value 3 is out of range for 3 classes along axis 1
            (accepted: class ids in [0, 3); no target is skipped, as torch skips those equal to
            ignore_index=-100: leave padding samples out)`` (the call's ``ignore``; review92 F7).
    """
    outside = id_outside(raw, classes)
    if outside is not None:
        raise GuardError(
            f"cross_entropy: target value {outside} is out of range for {classes} "
            f"classes along axis {axis} (accepted: class ids in [0, {classes}); no target is skipped, as "
            f"torch skips those equal to ignore_index={ignore}: leave padding samples out)"
        )


def _label_smoothing(value: object) -> float:
    """``cross_entropy``'s ``label_smoothing`` as a float in ``[0, 1]``.

    Raises:
        TensorTypeError: not a real number (:func:`_real`).
        TensorError: outside ``[0, 1]``, NaN, or beyond the float range (``10**400``).
    """
    try:
        smoothing = _real("cross_entropy", "label_smoothing", value)
    except TensorTypeError:
        raise
    except TensorError:  # beyond the float range: refused below with the accepted range
        smoothing = math.nan
    if not 0.0 <= smoothing <= 1.0:
        raise TensorError(
            f"cross_entropy: label_smoothing must be in [0, 1] (torch's documented range), got {shown(value)}"
        )
    return smoothing


def _reduction_mean(op: str, value: object, spelling: str) -> None:
    """Accept a loss's ``reduction`` when it is torch's default ``"mean"``, the one ``op``
    computes.

    Raises:
        TensorError: any other value, naming it and ``"mean"``, then ``spelling``: how to write
            ``"sum"`` and ``"none"`` (review85 F2).
    """
    if isinstance(value, str) and value == "mean":
        return
    raise TensorError(
        f"{op}: reduction={_preview(value)} is not supported (accepted: 'mean', torch's default, "
        f"which {op} returns); {spelling}"
    )


_CROSS_ENTROPY_REDUCTIONS = (
    "torch's reduction='none', the per-sample losses of ids's shape, is "
    "tl.reshape(-tl.gather(tl.log_softmax(logits, axis), ids with the class axis kept (ids[:, None] "
    "for (N, C) logits), axis), ids.shape) for class ids, -tl.reduce_sum(probs * "
    "tl.log_softmax(logits, axis), axis) for probabilities; reduction='sum' is tl.reduce_sum of them "
    "(or cross_entropy(...) times their count, equal up to rounding)"
)
_WEIGHTED_MEAN = (
    "per-class weights are not supported; torch's weighted mean is tl.reduce_sum(losses * w[ids]) / "
    "w[ids].sum(), divided by the sum of the samples' weights, not their count, with w the class "
    "weights as a numpy array (w.numpy() of a Tensor) and losses the per-sample losses of ids's "
    "shape: tl.reshape(-tl.gather(tl.log_softmax(logits, axis), ids[:, None], axis), ids.shape) for "
    "(N, C) logits; for class probabilities torch's is the mean over the N samples of "
    "-tl.reduce_sum(probs * w * tl.log_softmax(logits, 1), 1)"
)


def _smoothed(smoothing: float) -> str:
    """The clause the reduction and weight refusals add for a call with ``label_smoothing``: the
    per-sample losses they spell are the unsmoothed ones (review90 F3); ``""`` without smoothing."""
    if smoothing == 0.0:
        return ""
    return (
        f"; with label_smoothing={smoothing!r}, torch's per-sample losses are (1 - {smoothing!r}) times "
        f"those plus {smoothing!r} / C times -tl.reduce_sum(tl.log_softmax(logits, axis), axis) for class "
        f"ids (C the number of classes), and for probabilities probs * (1 - {smoothing!r}) + {smoothing!r} "
        "/ C in place of probs"
    )


def _smoothed_weighted(smoothing: float) -> str:
    """The clause the weight refusals add for a call with ``label_smoothing``: torch's weighted,
    smoothed mean for class ids (``cross_entropy_loss_label_smoothing`` in ATen's LossNLL.cpp
    weights the smoothing term by class and divides it by the same sum of the samples' weights)
    and for probabilities (the smoothed target in the weighted formula, a mean over the N
    samples); ``""`` without smoothing."""
    if smoothing == 0.0:
        return ""
    return (
        f"; with label_smoothing={smoothing!r}, torch's for class ids is (1 - {smoothing!r}) times "
        f"the weighted mean plus {smoothing!r} / C times tl.reduce_sum(-tl.log_softmax(logits, 1) * w) / "
        "w[ids].sum() for (N, C) logits (C the number of classes, w along the class axis), and for "
        f"class probabilities the formula for them with probs * (1 - {smoothing!r}) + {smoothing!r} / C "
        "in place of probs (no w[ids]: probabilities have no ids)"
    )


def cross_entropy(
    logits: Tensor,
    target: Tensor | npt.ArrayLike,
    axis: IntLike | None = None,
    *,
    label_smoothing: RealLike = 0.0,
    reduction: str = "mean",
    weight: None = None,
    ignore_index: IntLike = -100,
) -> Tensor:
    """Mean cross-entropy of ``logits`` (classes along ``axis``) against ``target``
    (``torch.nn.functional.cross_entropy``, reduction ``mean``).

    ``axis`` defaults to torch's class axis: 1 for logits of rank >= 2 (``(N, C)``, ``(N, C, d1,
    ...)``), 0 for unbatched rank-1 logits ``(C,)``; pass it for classes elsewhere (``axis=-1``
    for ``(N, L, C)``). Until 2026-12-01 the default was the last axis, which differs from torch's
    for logits of rank 3 or more: code written against that default passes ``axis=-1``.

    ``target`` is either class indices (an integer tensor/array with the logits' shape minus the
    class axis, every value a class id in ``[0, C)``) or class probabilities (a float tensor of the
    logits' shape). Unlike torch, no target is ignored: a target equal to ``ignore_index``
    (torch's default ``-100``, a padding id) is refused, not skipped.

    ``reduction`` takes torch's default ``"mean"`` only (the mean over the samples and positions
    is what this returns); ``"sum"`` and ``"none"`` are refused with their spelling: the
    per-sample losses ``reshape(-gather(log_softmax(logits, axis), ids, axis), ids.shape)`` (the
    gather's ``ids`` with the class axis kept; the reshape gives torch's shape, without the class
    axis) and ``reduce_sum`` of them. Torch's ``weight`` (per-class weights) is refused too, with
    its spelling: ``reduce_sum(losses * w[ids]) / w[ids].sum()``, torch's weighted mean, which
    divides by the sum of the weights and not by the number of samples.

    ``ignore_index`` (an integer, torch's default ``-100``) is accepted where no class-id target
    equals it, as then it changes nothing in torch either; a target equal to it is refused
    (torch would leave that sample out; torchlean has no ignored class). With probabilities, one
    of at least 0 is refused, as torch refuses it ("ignore_index is not supported for floating
    point target"; review91 F6).

    ``label_smoothing`` (in ``[0, 1]``, torch's argument) mixes the target with the uniform
    distribution over the ``C`` classes as torch does: for indices, ``(1 - s) * nll + (s / C) *
    mean(-sum_c log_softmax)`` (torch's ``cross_entropy_loss_label_smoothing``); for
    probabilities, the target ``p * (1 - s) + s / C`` (computed in the logits' dtype).

    With probabilities, a ``-inf`` logit (a class masked out) gives NaN even where its target
    probability is 0, whose term is ``0 * -inf``, and logits whose spread overflows the dtype
    (float32 ``[3e38, -3e38]``) give NaN or ``inf`` where the loss is finite, as torch's (review209
    F3): give masked classes a large finite negative logit instead (``-1e9``), or use class ids.

    Records ``log_softmax``, ``gather``, ``reduce_mean``, ``sub`` for indices (the indices are
    given the class axis by a numpy reshape of the index data, which carries no gradient), and
    ``log_softmax``, ``mul``, ``reduce_sum``, ``reduce_mean``, ``sub`` for probabilities; the
    ``sub`` is ``0 - mean``, so a perfectly fitted sample's loss is ``+0.0`` as torch's (a negation
    gave ``-0.0``). With smoothing, indices add ``reduce_sum``, ``reduce_mean``, ``sub``, ``scale``
    and ``add`` (a probability Tensor target adds ``scale`` and ``add``). Returns a rank-0 tensor
    in the logits' dtype.

    Raises:
        GuardError: ``axis`` out of range for the logits' rank (never wrapped), as ``softmax``;
            a class index outside ``[0, C)`` (``cross_entropy: target value 3 is out of range
            for 3 classes along axis 1 (accepted: class ids in [0, 3); ...)``).
            A probability target Tensor of another float dtype than the logits (numpy
            probabilities are cast to the logits' dtype). A class-id target equal to
            ``ignore_index``.
        TensorError: 0-d logits; a target whose shape or dtype fits neither form, or ragged
            nested lists; a ``reduction`` other than ``"mean"``; ``label_smoothing`` outside
            ``[0, 1]`` (torch's documented range; torch 2.13 itself takes a negative or NaN value
            silently as no smoothing), or beyond the float range; an ``ignore_index`` of at least 0
            with probability targets (torch refuses it too; review191 F4).
        TensorTypeError: ``logits`` is not a Tensor; ``label_smoothing`` not a real number;
            ``ignore_index`` not an integer (a 0-d integer array or tensor, or a one-element
            integer tensor, which torch takes, is told to pass ``int(ignore_index)``) or beyond
            int64 (torch refuses it too);
            array data as ``axis`` (torch's positional ``weight``), or a ``weight`` other than
            ``None``: per-class weights are not supported, the message spells torch's weighted
            mean.
    """
    logits = _require_tensor("cross_entropy", "logits", logits)
    smoothing = _label_smoothing(label_smoothing)
    if not is_int(ignore_index):
        raise TensorTypeError(
            "cross_entropy: ignore_index must be an integer (torch's default -100), got "
            f"{_preview(ignore_index)}" + (": pass it as a number, int(ignore_index)"
                                           if _one_integer(ignore_index) else "")
        )
    ignore = int(ignore_index)
    if not _INT64[0] <= ignore <= _INT64[1]:  # torch: "Overflow when unpacking long long" (review92 F7)
        raise TensorTypeError(
            f"cross_entropy: ignore_index={ignore} is beyond int64, as torch's is (accepted: an integer in "
            f"[{_INT64[0]}, {_INT64[1]}], torch's default -100)"
        )
    _reduction_mean("cross_entropy", reduction, _CROSS_ENTROPY_REDUCTIONS + _smoothed(smoothing))
    if weight is not None:  # review89 F6: torch's keyword, refused as its positional form is
        hint = _WEIGHTED_MEAN + _smoothed_weighted(smoothing)
        raise TensorTypeError(f"cross_entropy: weight={_preview(weight)} is refused: {hint}")
    if logits.ndim == 0:
        raise TensorError(
            "cross_entropy: logits must have a class axis (accepted: rank >= 1, as (C,), (N, C) or "
            "(N, C, d1, ...)); got a 0-d tensor"
        )
    if axis is None:
        axis = 1 if logits.ndim >= 2 else 0
    elif _is_array_data(axis):
        raise TensorTypeError(
            f"cross_entropy: the third argument is axis, the class axis (an integer), not torch's "
            f"weight; got {_preview(axis)}: {_WEIGHTED_MEAN}{_smoothed_weighted(smoothing)} (accepted axis: "
            "an integer, or None for torch's class axis)"
        )
    ax = _axis("cross_entropy", "axis", axis, logits.ndim)
    raw: npt.NDArray[Any] = (
        target.numpy() if isinstance(target, Tensor) else _array_like("cross_entropy", "target", target)
    )
    if raw.dtype.kind in "iu":
        expected = logits.shape[:ax] + logits.shape[ax + 1 :]
        if raw.shape != expected:
            one_hot = (
                "; an integer target of the logits' shape reads as class indices: one-hot or other class "
                f"probabilities are floating, as in torch ({_one_hot_way(target, logits.dtype, ax)})"
                if raw.shape == logits.shape else ""
            )
            raise TensorError(
                f"cross_entropy: class indices of shape {raw.shape} do not fit logits of shape "
                f"{logits.shape} with classes along axis {ax} (expected {expected}; pass axis= for "
                f"another class axis){one_hot}"
            )
        ignored = int(np.count_nonzero(raw == ignore))
        if ignored:  # samples torch would leave out (review90 F9), -1 or -100 padding too (review91 F5)
            raise GuardError(
                f"cross_entropy: {ignored} target{'s equal' if ignored > 1 else ' equals'} "
                f"ignore_index={ignore}, which torch leaves out of the loss and torchlean does not support "
                "(accepted: an ignore_index no target equals, which changes nothing, as in torch): leave "
                "those samples out of the logits and the target"
            )
        _check_class_ids(raw, logits.shape[ax], ax, ignore)
        index = _index(np.expand_dims(raw, ax), logits, "gather", ax)
        log_p = log_softmax(logits, ax)
        nll = _negated(reduce_mean(gather(log_p, index, ax)))
        if smoothing == 0.0 or logits.shape[ax] == 0:  # no class: no sample either, the mean NaN as torch's
            return nll
        uniform = _negated(reduce_mean(reduce_sum(log_p, ax)))  # mean over positions of -sum_c log p_c
        return add(scale(nll, 1.0 - smoothing), scale(uniform, smoothing / logits.shape[ax]))
    if raw.dtype.kind == "f":
        if raw.shape != logits.shape:
            # review123 F3: class ids read as floats (np.loadtxt), where the cast is all it takes:
            # the shape of the logits without the class axis (review126 F2), whole numbers, not empty
            ids_shape = logits.shape[:ax] + logits.shape[ax + 1 :]
            whole = raw.shape == ids_shape and raw.size > 0 and bool(np.all(np.isfinite(raw))) and bool(
                np.all(raw == np.round(raw)))
            cast = (
                "; these hold whole numbers, as class indices do: integral values can be cast with "
                ".astype(np.int64) (torch, too, reads a float target as probabilities)" if whole else ""
            )
            raise TensorError(
                f"cross_entropy: class probabilities of shape {raw.shape} must have the logits' shape "
                f"{logits.shape}{cast}"
            )
        if ignore >= 0:  # torch: "ignore_index is not supported for floating point target"
            raise TensorError(
                f"cross_entropy: ignore_index={ignore} applies to class-id targets, and these are class "
                "probabilities (torch refuses it for them too; accepted: a negative ignore_index, such as "
                "the default -100)"
            )
        if isinstance(target, Tensor) and target.dtype != logits.dtype:
            raise GuardError(
                f"cross_entropy: the class probabilities have dtype {target.dtype} but the logits "
                f"{logits.dtype} (accepted: a probability Tensor of the logits' dtype, or numpy "
                "probabilities, which are cast to it)"
            )
        classes = logits.shape[ax]
        smoothed = smoothing != 0.0 and classes > 0  # no class: nothing to smooth (no s / 0)
        if isinstance(target, Tensor):
            probs = target
            if smoothed:
                probs = add(scale(target, 1.0 - smoothing), smoothing / classes)
        else:
            dt = logits.dtype.type
            values = np.asarray(raw, dtype=logits.dtype)
            if smoothed:  # torch: target * (1 - s) + s / C, two roundings in the dtype
                values = values * dt(1.0 - smoothing) + dt(smoothing / classes)
            probs = _constant(values, logits)
        terms = mul(probs, log_softmax(logits, ax))
        if classes == 0:  # torch divides the sum by numel / C = 0 / 0: NaN, the mean over no term
            return _negated(reduce_mean(terms))
        return _negated(reduce_mean(reduce_sum(terms, ax)))
    one_hot = ""
    if raw.shape == logits.shape:
        one_hot = f" (a one-hot target: {_one_hot_way(target, logits.dtype, ax)})"
    raise TensorError(
        f"cross_entropy: target dtype {raw.dtype} is neither integer indices nor float probabilities{one_hot}"
    )


def _negated(loss: Tensor) -> Tensor:
    """``0 - loss`` (records ``sub``): ``+0.0`` for a loss of zero, as torch's ``nll_loss`` gives
    for a perfectly fitted sample, where ``neg`` (``scale`` by -1) gives ``-0.0`` (review166 F2)."""
    return sub(0.0, loss)


def _one_hot_way(target: object, dtype: np.dtype[Any], axis: int) -> str:
    """How to pass a one-hot target of another dtype: as float probabilities, or as class
    indices, spelt for a torchlean Tensor (which has no ``astype``) or for array data
    (review104 M5)."""
    if isinstance(target, Tensor):
        return (f"pass tl.tensor(target.numpy().astype(np.{dtype})), or the class indices, "
                f"np.argmax(target.numpy(), axis={axis})")
    return f"pass target.astype(np.{dtype}), or the class indices, np.argmax(target, axis={axis})"
