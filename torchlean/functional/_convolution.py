"""Convolutions and pooling over 1-3 channel-first spatial axes: ``conv``,
``conv_transpose``, ``max_pool``, ``avg_pool`` and ``smooth_max_pool``."""

from __future__ import annotations

from torchlean.autograd.session import run_op
from torchlean.backend.vocabulary import BackendOp
from torchlean.functional._params import IntOrTuple, _int, _real
from torchlean.tensor import IntLike, RealLike, Tensor


def conv(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntOrTuple = 1,
    padding: IntOrTuple = 0,
    dilation: IntOrTuple = 1,
    groups: IntLike = 1,
) -> Tensor:
    """N-d (1-3 spatial axes) channel-first cross-correlation (``torch.nn.functional.conv1d/2d/3d``):
    x ``(N, C_in, *spatial)``, weight ``(C_out, C_in/groups, *kernel)``, bias ``(C_out,)`` or None
    (torch's parameter names, so ``conv(x, w, bias=b)`` ports as written); records ``conv``.

    The number of spatial axes is ``x.ndim - 2`` (there is no unbatched form: a rank-3 x is
    ``(N, C, L)``). ``stride``, ``padding`` (zeros, >= 0) and ``dilation`` are an int or one int per
    spatial axis. Returns ``(N, C_out, *out)`` with torch's
    ``out = (size + 2*padding - dilation*(kernel-1) - 1) // stride + 1``.

    Raises:
        GuardError: x of rank outside 3-5, weight not of x's rank, a weight/bias shape or dtype that does not
            fit, ``groups`` that does not divide C_in (or is < 1), a stride/dilation < 1 or a
            negative padding, a window parameter sequence of the wrong length, or an effective
            kernel larger than the padded input.
        GuardTypeError: a window parameter that is not an int or a sequence of ints (``1.0``,
            ``"same"``).
        TensorTypeError: a non-integer ``groups``.
    """
    params = {
        "stride": stride,
        "padding": padding,
        "dilation": dilation,
        "groups": _int("conv", "groups", groups),
    }
    return run_op(BackendOp.CONV, (x, weight, bias), params)


def conv_transpose(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntOrTuple = 1,
    padding: IntOrTuple = 0,
    output_padding: IntOrTuple = 0,
    groups: IntLike = 1,
    dilation: IntOrTuple = 1,
) -> Tensor:
    """Transposed convolution (``torch.nn.functional.conv_transpose1d/2d/3d``, its arguments in
    its order: ``groups`` before ``dilation``, unlike :func:`conv`, where torch too puts
    ``dilation`` first): x ``(N, C_in, *spatial)``, weight ``(C_in, C_out/groups, *kernel)``, bias
    ``(C_out,)`` or None; records ``conv_transpose``. Window parameters and x's rank as in :func:`conv`.
    Returns
    ``(N, C_out, *out)`` with torch's ``out = (size - 1)*stride - 2*padding
    + dilation*(kernel-1) + output_padding + 1``.

    Raises:
        GuardError: as :func:`conv` (weight's first axis must be C_in), an ``output_padding`` not below
            ``max(stride, dilation)`` on some axis, or an output size below 1, where torch returns
            an empty result for a size of exactly 0 (for any batch) and raises for a negative one.
        GuardTypeError: a window parameter that is not an int or a sequence of ints.
        TensorTypeError: a non-integer ``groups``.
    """
    params = {
        "stride": stride,
        "padding": padding,
        "output_padding": output_padding,
        "dilation": dilation,
        "groups": _int("conv_transpose", "groups", groups),
    }
    return run_op(BackendOp.CONV_TRANSPOSE, (x, weight, bias), params)


def max_pool(
    x: Tensor,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
    dilation: IntOrTuple = 1,
) -> Tensor:
    """Max pooling, floor mode (``torch.nn.functional.max_pool1d/2d/3d``); stride defaults to the
    kernel size; records ``max_pool``.

    x is ``(N, C, *spatial)`` with 1-3 spatial axes (no unbatched form); window parameters are an
    int or one int per spatial axis; padded positions never win (torch's implicit ``-inf``).
    Returns ``(N, C, *out)`` with ``out = (size + 2*padding - dilation*(kernel-1) - 1) // stride
    + 1``.

    Raises:
        GuardError: x of rank outside 3-5, an empty C or spatial axis (only N may be 0), a kernel,
            stride or dilation < 1, a padding above ``kernel_size // 2`` (torch's rule), a
            parameter sequence of the wrong length, a window larger than the padded input, or a
            window whose taps all fall in the padding (a dilation beyond the input; torch returns
            ``-inf`` there and its backward writes outside the input).
        GuardTypeError: a window parameter that is not an int or a sequence of ints.
    """
    params = {"kernel_size": kernel_size, "stride": stride, "padding": padding, "dilation": dilation}
    return run_op(BackendOp.MAX_POOL, (x,), params)


def avg_pool(
    x: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None = None, padding: IntOrTuple = 0
) -> Tensor:
    """Average pooling, floor mode, padding counted (``torch.nn.functional.avg_pool1d/2d/3d``);
    records ``avg_pool``. Stride defaults to the kernel size; shapes, the output-size rule (no
    dilation) and errors as :func:`max_pool`, zero padding included in each window's divisor
    (torch's ``count_include_pad=True``)."""
    params = {"kernel_size": kernel_size, "stride": stride, "padding": padding}
    return run_op(BackendOp.AVG_POOL, (x,), params)


def smooth_max_pool(
    x: Tensor,
    kernel_size: IntOrTuple,
    beta: RealLike,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
) -> Tensor:
    """Smooth maximum over each window, ``log(sum(exp(beta * x))) / beta`` (finite nonzero
    ``beta``); records ``smooth_max_pool``. TorchLean's own op (torch has none). Stride defaults
    to the kernel size; padded positions are left out of the sum. Shapes and window errors as
    :func:`max_pool` (no dilation); a negative ``beta`` gives a smooth minimum.

    Raises:
        GuardError: as :func:`max_pool`, or a ``beta`` that is zero or not finite in x's dtype.
        TensorTypeError: a ``beta`` that is not a real number.
    """
    params = {
        "beta": _real("smooth_max_pool", "beta", beta),
        "kernel_size": kernel_size,
        "stride": stride,
        "padding": padding,
    }
    return run_op(BackendOp.SMOOTH_MAX_POOL, (x,), params)
