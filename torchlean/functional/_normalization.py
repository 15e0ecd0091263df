"""Normalisation layers' functions: ``layer_norm`` and ``batch_norm``, whose argument orders
differ from torch's (a call in torch's order is refused, naming both)."""

from __future__ import annotations

from torchlean._checks import is_int
from torchlean._tensor_data import operand_type
from torchlean.autograd.grad_mode import is_grad_enabled
from torchlean.autograd.session import run_op
from torchlean.autograd.tape import AutogradError
from torchlean.backend.errors import GuardError
from torchlean.backend.vocabulary import BackendOp
from torchlean.functional._params import _int, _real
from torchlean.tensor import BoolLike, IntLike, RealLike, Tensor, TensorTypeError, _flag, _preview


def _torch_normalized_shape(weight: object) -> None:
    """Refuse torch's ``normalized_shape`` (an int or a sequence of ints) in :func:`layer_norm`'s
    weight position, pointing to ``normalized_ndim``; anything else is left to the dispatcher.

    Raises:
        TensorTypeError: ``layer_norm: weight must be a torchlean Tensor or None; got (3,) ...``.
    """
    if is_int(weight):
        count = 1
    elif isinstance(weight, tuple | list) and all(is_int(v) for v in weight):
        count = len(weight)
    else:
        return
    raise TensorTypeError(
        f"layer_norm: weight must be a torchlean Tensor or None; got {_preview(weight)} of type "
        f"{type(weight).__name__}, which looks like torch's normalized_shape: torch's "
        "layer_norm(input, normalized_shape, weight, bias, eps) takes the normalised shape second, "
        "torchlean's layer_norm(x, weight=None, bias=None, normalized_ndim=1, eps=1e-05) takes the "
        f"number of trailing axes to normalise as normalized_ndim= (here normalized_ndim={count})"
    )


def layer_norm(
    x: Tensor,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    normalized_ndim: IntLike = 1,
    eps: RealLike = 1e-5,
    *,
    normalized_shape: None = None,
) -> Tensor:
    """Normalise over the trailing ``normalized_ndim`` axes, then ``* weight + bias``
    (``torch.nn.functional.layer_norm``, biased variance); records ``layer_norm``.

    Shapes: x of rank >= ``normalized_ndim`` >= 1; weight and bias (each optional) have x's
    trailing ``normalized_ndim`` extents and x's dtype. Returns x's shape.

    The order differs from torch's ``layer_norm(input, normalized_shape, weight=None, bias=None,
    eps=1e-5)``: the normalised axes are given as a count, ``normalized_ndim=`` (4th), not as
    torch's shape (2nd); a torch-style shape in weight's place (``tl.layer_norm(x, (3,))``) or
    as torch's keyword (``normalized_shape=(3,)``) is refused with a message saying so (that keyword
    is typed ``None``, so a type checker reports it where it is written).

    Raises:
        GuardError: ``normalized_ndim`` outside ``[1, x.ndim]``, a weight or bias of another shape
            or dtype, or an ``eps`` that is negative or not finite in x's dtype (0 is accepted).
        TensorError: an ``eps`` beyond the float64 range (``10**400``: review160 F4).
        TensorTypeError: a non-integer ``normalized_ndim``; an ``eps`` that is not a real number;
            a weight that is not a Tensor or None (an int or a sequence of ints there, torch's
            ``normalized_shape``, names ``normalized_ndim=``); ``normalized_shape=`` given.
    """
    # torch's keyword (review100 L1), typed None so that mypy reports it where it is written (review129
    # F3); read as object here, since the run time receives whatever was written
    given: object = normalized_shape
    if given is not None:
        try:
            count: int | None = 1 if is_int(given) else len(given)  # type: ignore[arg-type]
        except TypeError:
            count = None
        instead = (
            "normalized_ndim=, a count of trailing axes" if count is None
            else "normalized_ndim=, a count of at least 1 (torch refuses an empty shape too)" if count == 0
            else f"normalized_ndim={count}"
        )
        raise TensorTypeError(
            f"layer_norm: normalized_shape={_preview(given)} is torch's keyword; torchlean's "
            "layer_norm(x, weight=None, bias=None, normalized_ndim=1, eps=1e-05) takes the number of "
            f"trailing axes to normalise: pass {instead}"
        )
    _torch_normalized_shape(weight)
    params = {
        "normalized_ndim": _int("layer_norm", "normalized_ndim", normalized_ndim),
        "eps": _real("layer_norm", "eps", eps),
    }
    return run_op(BackendOp.LAYER_NORM, (x, weight, bias), params)


_BATCH_NORM_ORDERS = (
    "tl.batch_norm takes x positionally and everything else by keyword, since its order differs from "
    "torch.nn.functional.batch_norm(input, running_mean, running_var, weight=None, bias=None, "
    "training=False, momentum=0.1, eps=1e-05): write tl.batch_norm(x, running_mean=..., "
    "running_var=..., weight=..., bias=..., training=False, eps=...) (training defaults to True "
    "here, and there is no momentum: the running statistics are never updated)"
)


def batch_norm(
    x: Tensor,
    *refused: *tuple[()],
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    training: BoolLike = True,
    eps: RealLike = 1e-5,
) -> Tensor:
    """Batch normalisation over channel axis 1 of ``(N, C, *spatial)``
    (``torch.nn.functional.batch_norm``): batch statistics in training, the running statistics in
    eval. The running statistics are inputs only (never updated here: no ``momentum``) and are not
    differentiated: one that requires grad is refused while gradients are recorded, as torch
    refuses it (its gradient would silently stay None); records ``batch_norm``.

    **Every argument after x is keyword-only**, because the order and a default differ from
    torch's ``batch_norm(input, running_mean, running_var, weight=None, bias=None,
    training=False, momentum=0.1, eps=1e-5)``: here ``training`` defaults to **True** (torch:
    False), so an eval call must say ``training=False``. A call in torch's order
    (``tl.batch_norm(x, running_mean, running_var)``) is refused with a ``TensorTypeError``
    naming both orders instead of running with the statistics as weight and bias. Type checkers
    flag such a call too: ``*refused: *tuple[()]`` admits no argument for them, and mypy reports
    such a call as for a bare ``*`` (``Too many positional arguments``); at run time it collects
    the extra arguments to refuse them.

    Shapes: x ``(N, C, *spatial)`` float32/float64; weight, bias, running_mean, running_var ``(C,)``
    or None, in x's dtype. Returns a tensor of x's shape.

    Eval computes ``(x - running_mean) / sqrt(running_var + eps)`` (then ``* weight + bias``), so
    ``eps=0`` (accepted in eval, as torch) with a zero running variance gives ``±inf`` where ``x``
    differs from the mean and NaN where it equals it; torch's fused eval kernel (``x * invstd +
    ...``) gives NaN or ``-inf`` there instead (review236 F5). With ``eps > 0`` both are finite
    for values of ordinary size and agree up to rounding (near the float range, or with a variance
    far below ``x``'s magnitude, torch's fused form overflows or cancels where this one does not).

    Raises:
        GuardError: bad shapes or dtypes, eval without both running statistics, running
            statistics in training (ignored there, where torch's call updates them), one value per
            channel in training, or an eps that is negative, not finite in x's dtype, or not
            positive in training (PyTorch refuses ``eps <= 0`` in training).
        TensorTypeError: more than one positional argument (torch's order, above); ``weight``,
            ``bias`` or a running statistic neither a Tensor nor None (naming it); ``training``
            not a bool, or ``eps`` not a real number. An unknown keyword (torch's ``momentum``)
            is Python's ``TypeError``.
        TensorError: an ``eps`` beyond the float64 range (``10**400``: review191 F3).
        AutogradError: ``running_mean`` or ``running_var`` requires grad while gradients are
            recorded (pass ``.detach()``, or compute a learnable shift with ordinary ops).
    """
    if refused:
        raise TensorTypeError(
            f"batch_norm: got {1 + len(refused)} positional arguments (accepted: 1, x); "
            f"{_BATCH_NORM_ORDERS}"
        )
    keywords = (("weight", weight), ("bias", bias), ("running_mean", running_mean),
                ("running_var", running_var))
    for name, value in keywords:  # review220 F4: by keyword, not as the op's input positions 1..4
        if value is not None and not isinstance(value, Tensor):
            raise TensorTypeError(
                f"batch_norm: {name} must be a torchlean Tensor or None; got {operand_type(value)} "
                f"(accepted: a torchlean Tensor of shape (C,) in x's dtype, or None; convert data with "
                "torchlean.tensor(...))"
            )
    for name, stat in (("running_mean", running_mean), ("running_var", running_var)):
        if isinstance(stat, Tensor) and stat.requires_grad and is_grad_enabled():
            raise AutogradError(
                f"batch_norm: {name} requires grad, but batch_norm is not differentiable with respect "
                f"to the running statistics (as torch); pass {name}.detach(), or write a learnable "
                "shift and scale with ordinary ops"
            )
    training = _flag("batch_norm: training", training)  # a numpy bool too (mread 2)
    if training and (running_mean is not None or running_var is not None):
        raise GuardError(  # torch's training call updates them; here they would be ignored (review52 F15)
            "batch_norm: running_mean/running_var are neither read nor updated with training=True "
            "(torch's F.batch_norm updates them in place with its momentum); pass them with "
            "training=False only; an nn.batch_norm layer keeps them as torch does (momentum-weighted "
            "batch mean and unbiased variance)"
        )
    return run_op(
        BackendOp.BATCH_NORM,
        (x, weight, bias, running_mean, running_var),
        {"training": training, "eps": _real("batch_norm", "eps", eps)},
    )
