"""Guards of how the native-cuda operands relate: window geometry, statistics shapes, indices,
axes, contraction sizes and head widths.

:mod:`.guards` checks each operand on its own (device, dtype, rank, layout, element count); these
check the rules that tie operands and parameters together, in Python, before any launch. The C++
entry points repeat them (their messages start ``torchlean_native_ext.``), as every check of
:mod:`.guards`. Until these existed the C++ checks were the only refusal of such input, and on the
GPU machine lent for issue 7 (torch 2.11.0+cu130, Python 3.12.3, GCC 13.3) every refusal raised
in C++ crashed the process instead of raising, so a session's bad input must be refused here.

The window, batch-count and 3-d pool rules are ``reference.spatial_guards``'s own fault functions
(one wording for both providers); the index and axis rules are ``torch.gather``,
``torch.scatter_add`` and ``torch.cat``'s. Every refusal is a
:class:`~torchlean.backend.errors.GuardError` naming the op, the offending values and what is
accepted.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence

import torch

from torchlean.backend.errors import GuardError
from torchlean.backend.providers.native_cuda.batching import broadcast_batch
from torchlean.backend.providers.native_cuda.guards import INT64_MAX, check_element_count
from torchlean.backend.providers.reference.spatial_guards import (
    batch_count_fault,
    conv_span_fault,
    padding_only_fault,
    span_fault,
    transpose_fault,
    unpadded_input_fault,
    window_of,
)

__all__ = [
    "ATTENTION_MAX_WIDTH",
    "check_attention_widths",
    "check_batch_norm_operands",
    "check_concat_shapes",
    "check_contraction",
    "check_conv_operands",
    "check_cotangent",
    "check_fft_fno_operands",
    "check_gather_index",
    "check_scatter_index",
    "check_selective_scan_operands",
    "check_window",
    "wrap_axis",
]

ATTENTION_MAX_WIDTH = 256
"""The widest head (d and d_v) the direct attention kernel takes (``kAttnMaxWidth`` in
``csrc/kernels.cuh``: 8 columns per lane of a warp)."""


def _fail(op: str, message: str) -> GuardError:
    return GuardError(f"native_cuda.{op}: {message}")


def _shape(t: torch.Tensor) -> list[int]:
    return [int(d) for d in t.shape]


def check_window(
    op: str,
    x: torch.Tensor,
    kernel: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    *,
    pool: bool = False,
    unpadded_input: bool = False,
) -> tuple[int, ...]:
    """The window of a convolution or pool over x ``(N, C, *spatial)``, one kernel entry per
    spatial axis: the effective kernel fits the padded input; for a ``pool`` every window reads an
    input element (a convolution's window may be padding only, as torch's); with
    ``unpadded_input`` (the 3-d average pool) every unpadded extent holds the kernel. Returns the
    output's spatial extents (floor mode).

    Raises:
        GuardError: x's spatial rank differs from the kernel's, or a rule above fails.
    """
    shape = tuple(int(d) for d in x.shape)
    spatial = shape[2:]
    if len(spatial) != len(kernel):
        raise _fail(
            op,
            f"x has shape {list(shape)} with {len(spatial)} spatial axes but the kernel has "
            f"{len(kernel)} (accepted: (N, C, *spatial) with one spatial axis per kernel entry)",
        )
    check_element_count(
        op, "padded input shape", [*shape[:2], *(n + 2 * p for n, p in zip(spatial, padding, strict=True))]
    )
    check_element_count(op, "window span", [d * (k - 1) + 1 for k, d in zip(kernel, dilation, strict=True)])
    fault = span_fault(spatial, kernel, padding, dilation)
    if fault is not None:
        raise _fail(op, fault)
    window = window_of(spatial, kernel, stride, padding, dilation)
    fault = padding_only_fault(window) if pool else None
    if fault is None and unpadded_input:
        fault = unpadded_input_fault(window, shown=str(list(shape)))
    if fault is not None:
        raise _fail(op, fault)
    return window.output


def check_cotangent(op: str, g: torch.Tensor, expected: Sequence[int]) -> None:
    """A backward's cotangent g has the forward's output shape ``expected``.

    Raises:
        GuardError: naming g's shape and the expected one.
    """
    if _shape(g) != [int(d) for d in expected]:
        raise _fail(
            op, f"g has shape {_shape(g)} (accepted: the forward's output shape {[int(d) for d in expected]})"
        )


def check_conv_operands(
    x: torch.Tensor,
    w: torch.Tensor,
    b: torch.Tensor | None,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
    *,
    output_padding: Sequence[int] | None = None,
) -> list[int]:
    """``torch.nn.functional.conv{1,2,3}d`` (or, with ``output_padding``, ``conv_transpose``)
    rules tying x ``(N, C_in, *spatial)``, w and b together: equal ranks; for a convolution w
    ``(C_out, C_in/groups, *kernel)`` with ``groups`` dividing C_out and the window fitting the
    padded input; for a transpose w ``(C_in, C_out/groups, *kernel)`` with ``groups`` dividing
    C_in, each output_padding below its stride or dilation and every output extent >= 1; b
    ``(C_out,)``. Returns the output shape ``(N, C_out, *out)``.

    Raises:
        GuardError: naming the shapes and what is accepted.
    """
    op = "conv" if output_padding is None else "conv_transpose"
    if x.dim() != w.dim():
        raise _fail(
            op,
            f"x has shape {_shape(x)} but w has shape {_shape(w)} (accepted: x of w's rank {w.dim()}, "
            f"(N, C_in, {w.dim() - 2} spatial axes))",
        )
    kernel = tuple(int(k) for k in w.shape[2:])
    c_in = int(x.shape[1])
    if output_padding is None:
        expected_in, layout = int(w.shape[1]) * groups, "(C_out, C_in/groups, *kernel), groups dividing C_out"
    else:
        expected_in, layout = int(w.shape[0]), "(C_in, C_out/groups, *kernel), groups dividing C_in"
    if int(w.shape[0]) % groups:
        raise _fail(
            op,
            f"groups={groups} does not divide w.shape[0] = {int(w.shape[0])} of w {_shape(w)} "
            f"(accepted: a divisor of {'C_out' if output_padding is None else 'C_in'}, as torch)",
        )
    if c_in != expected_in:
        raise _fail(
            op,
            f"x has {c_in} channels; w {_shape(w)} with groups {groups} expects {expected_in} "
            f"(accepted: w of shape {layout})",
        )
    if output_padding is None:
        c_out = int(w.shape[0])
        spatial = check_window(op, x, kernel, stride, padding, dilation)
        fault = conv_span_fault(int(x.shape[0]), [int(n) for n in x.shape[2:]], kernel, padding, dilation)
        if fault is not None:  # as on the CPU (review201 F1)
            raise _fail(op, fault)
    else:
        c_out = int(w.shape[1]) * groups
        extents = []
        for axis, (n, k, s, p, d, op_) in enumerate(
            zip(x.shape[2:], kernel, stride, padding, dilation, output_padding, strict=True)
        ):
            if not (op_ < s or op_ < d):
                raise _fail(
                    op,
                    f"output_padding[{axis}] = {op_} (accepted: below stride {s} or dilation {d}, as torch)",
                )
            fault = transpose_fault(int(x.shape[0]), axis, k, p, d)
            if fault is not None:  # as on the CPU (review201 F1, review203 F2)
                raise _fail(op, fault)
            out = (int(n) - 1) * s - 2 * p + d * (k - 1) + op_ + 1
            if out < 1:
                raise _fail(
                    op,
                    f"spatial axis {axis} would have output extent {out} (in {int(n)}, stride {s}, "
                    f"padding {p}, dilation {d}, kernel {k}, output_padding {op_}; accepted: (in - 1) "
                    "* stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1 >= 1)",
                )
            extents.append(out)
        spatial = tuple(extents)
        check_element_count(op, "output shape", [int(x.shape[0]), c_out, *spatial])
    if b is not None and _shape(b) != [c_out]:
        raise _fail(op, f"b has shape {_shape(b)} (accepted: ({c_out},), one value per output channel)")
    return [int(x.shape[0]), c_out, *spatial]


def check_batch_norm_operands(
    x: torch.Tensor, stats: Mapping[str, torch.Tensor | None], *, training: bool
) -> None:
    """Each of ``stats`` (weight, bias, running statistics; None skipped) is ``(C,)`` for x
    ``(N, C, *spatial)``, and in training x holds more than one value per channel (PyTorch's rule).

    Raises:
        GuardError: naming the operand's shape and x's.
    """
    if x.dim() < 2:
        return  # the rank check of guards.check_launch refuses it
    channels = int(x.shape[1])
    for name, t in stats.items():
        if t is not None and _shape(t) != [channels]:
            raise _fail(
                "batch_norm",
                f"{name} has shape {_shape(t)} (accepted: ({channels},), one value per channel of x "
                f"{_shape(x)})",
            )
    fault = batch_count_fault(tuple(_shape(x)), shown=str(_shape(x))) if training else None
    if fault is not None:
        raise _fail("batch_norm", fault)


def wrap_axis(op: str, axis: int, rank: int) -> int:
    """``axis`` in ``-rank..rank-1`` (``-1..0`` for rank 0, as torch), made non-negative.

    Raises:
        GuardError: a non-int or an axis out of range, naming the accepted range.
    """
    lo, hi = (-1, 0) if rank == 0 else (-rank, rank - 1)
    value: int | None = None
    if isinstance(axis, torch.Tensor):  # a 0-d integer tensor only, as torch.cat's dim
        if (
            axis.dim() == 0
            and not axis.dtype.is_floating_point
            and not axis.is_complex()
            and axis.dtype != torch.bool
        ):
            value = int(axis)
    elif not isinstance(axis, bool):
        try:
            value = operator.index(axis)  # ints and numpy integers
        except TypeError:
            value = None
    if value is None:
        raise _fail(op, f"dim {axis!r} is not an int (accepted: an int in {lo}..{hi})")
    if not lo <= value <= hi:
        raise _fail(op, f"dim {value} is out of range for rank {rank} (accepted {lo}..{hi})")
    return value + max(rank, 1) if value < 0 else value


def _index_values(op: str, index: torch.Tensor, extent: int, axis: int) -> None:
    """Every index value in ``[0, extent)``; the first offending one (row-major order) is named.
    One device synchronisation on CUDA (the C++ check, kept for raw calls, reads it again)."""
    if index.numel() == 0:
        return
    bad = (index < 0) | (index >= extent)
    if bool(bad.any()):
        first = int(index[bad].flatten()[0])
        raise _fail(
            op,
            f"index value {first} is out of range (accepted: values in [0, {extent}) along dimension {axis})",
        )


def _same_rank(op: str, index: torch.Tensor, data: torch.Tensor) -> None:
    if index.dim() != data.dim():
        raise _fail(
            op, f"index has rank {index.dim()} but the data has rank {data.dim()} (accepted: equal ranks)"
        )


def check_gather_index(x: torch.Tensor, index: torch.Tensor, axis: int, *, backward: bool = False) -> int:
    """``torch.gather(x, axis, index)``'s rules: index of x's rank, no larger than x outside
    ``axis``, values in ``[0, x.shape[axis])``. Returns the non-negative axis. The ``backward``
    (a scatter into zeros of x's shape) accepts an empty index of any extents, as its C++ check.

    Raises:
        GuardError: naming the shapes or the first out-of-range value.
    """
    op = "gather"
    dim = wrap_axis(op, axis, x.dim())
    _same_rank(op, index, x)
    extents = not (backward and index.numel() == 0)
    if extents and any(d != dim and int(index.shape[d]) > int(x.shape[d]) for d in range(x.dim())):
        raise _fail(
            op,
            f"index {_shape(index)} exceeds x {_shape(x)} along an axis other than {dim} "
            f"(accepted: index.shape[d] <= x.shape[d] for d != {dim}, as torch.gather)",
        )
    _index_values(op, index, int(x.shape[dim]) if x.dim() else 1, dim)
    return dim


def check_scatter_index(base: torch.Tensor, index: torch.Tensor, src: torch.Tensor, axis: int) -> int:
    """``torch.scatter_add(base, axis, index, src)``'s rules: index and src of base's rank, index
    no larger than src on every axis and than base outside ``axis``, values in
    ``[0, base.shape[axis])``. Returns the non-negative axis.

    Raises:
        GuardError: naming the shapes or the first out-of-range value.
    """
    op = "scatter_add"
    dim = wrap_axis(op, axis, base.dim())
    _same_rank(op, index, base)
    if src.dim() != base.dim():
        raise _fail(op, f"src has rank {src.dim()} but base has rank {base.dim()} (accepted: equal ranks)")
    if any(
        int(index.shape[d]) > int(src.shape[d]) or (d != dim and int(index.shape[d]) > int(base.shape[d]))
        for d in range(base.dim())
    ):
        raise _fail(
            op,
            f"index {_shape(index)} exceeds src {_shape(src)}, or base {_shape(base)} along an axis "
            f"other than {dim} (accepted: index no larger than src on every axis and than base "
            f"off axis {dim}, as torch.scatter_add)",
        )
    _index_values(op, index, int(base.shape[dim]) if base.dim() else 1, dim)
    return dim


def check_concat_shapes(xs: Sequence[torch.Tensor], axis: int) -> int:
    """``torch.cat(xs, axis)``'s rules: ``axis`` in range for xs[0]'s rank, every tensor of that
    rank and equal to xs[0] outside ``axis``, and the extents along ``axis`` summing to at most
    int64's largest. Returns the non-negative axis.

    Raises:
        GuardError: naming the first mismatching tensor's shape, or the overflowing sum.
    """
    dim = wrap_axis("concat", axis, xs[0].dim())
    first = _shape(xs[0])
    for i, x in enumerate(xs[1:], start=1):
        shape = _shape(x)
        if len(shape) != len(first) or any(
            d != dim and a != b for d, (a, b) in enumerate(zip(shape, first, strict=True))
        ):
            raise _fail(
                "concat",
                f"xs[{i}] has shape {shape} which does not match xs[0] {first} outside axis {dim} "
                "(accepted: equal ranks and extents except along the axis, as torch.cat)",
            )
    total = sum(_shape(x)[dim] for x in xs)
    if total > INT64_MAX:
        raise _fail(
            "concat",
            f"the extents along axis {dim} add up to {total}, more than int64 can count "
            f"(accepted: at most {INT64_MAX})",
        )
    return dim


def check_contraction(a: torch.Tensor, b: torch.Tensor) -> list[int]:
    """``torch.matmul(a, b)``'s rules: the contracted extents agree (a 1-D operand is promoted as
    torch does) and the batch axes broadcast. Returns the product's shape (torch's: the broadcast
    batch, then m unless a is 1-D, then n unless b is 1-D).

    Raises:
        GuardError: naming both shapes.
    """
    sa, sb = _shape(a), _shape(b)
    k_a = sa[-1] if sa else 0
    k_b = sb[0] if len(sb) == 1 else sb[-2] if sb else 0
    if k_a != k_b:
        raise _fail(
            "matmul",
            f"contraction sizes differ: a {sa} @ b {sb} ({k_a} != {k_b}; accepted: "
            "a (..., m, k) @ b (..., k, n), 1-D operands promoted as torch.matmul)",
        )
    batch = broadcast_batch((sa[:-2], sb[:-2]))
    if batch is None:
        raise _fail(
            "matmul",
            f"batch axes of a {sa} and b {sb} do not broadcast (accepted: equal extents or 1, aligned "
            "from the right)",
        )
    return [*batch, *sa[-2:-1], *(sb[-1:] if len(sb) >= 2 else [])]


def check_fft_fno_operands(x: torch.Tensor, weight_real: torch.Tensor) -> None:
    """x ``(N, C_in, n)`` with ``n >= 1``; weights ``(modes, C_in, C_out)`` with
    ``1 <= modes <= n // 2 + 1`` (the rfft's bins) and x's channel count.

    Raises:
        GuardError: naming the grid length, the modes or the channel counts.
    """
    if x.dim() != 3 or weight_real.dim() != 3:
        return  # the rank checks of guards.check_launch refuse it
    n, modes = int(x.shape[2]), int(weight_real.shape[0])
    if n < 1:
        raise _fail(
            "fft_fno", f"x has shape {_shape(x)}: the transform length must be positive (accepted: n >= 1)"
        )
    if int(weight_real.shape[1]) != int(x.shape[1]):
        raise _fail(
            "fft_fno",
            f"x has {int(x.shape[1])} channels but the weights (modes, in, out) {_shape(weight_real)} "
            f"expect {int(weight_real.shape[1])} (accepted: equal channel counts)",
        )
    if not 1 <= modes <= n // 2 + 1:
        raise _fail(
            "fft_fno",
            f"{modes} modes requested; a length-{n} grid has {n // 2 + 1} "
            "(accepted: 1 <= modes <= grid/2 + 1)",
        )


def check_selective_scan_operands(a: torch.Tensor, x: torch.Tensor, h0: torch.Tensor) -> None:
    """x ``(..., L, S)``; h0 ``(..., S)`` (x's leading axes and state channels); the coefficients
    (``a``, of ``b``'s shape) either shared, ``(S,)``, or token-dependent, x's shape.

    Raises:
        GuardError: naming the offending shape and the accepted ones.
    """
    if x.dim() < 2:
        return  # the rank checks of guards.check_launch refuse it
    xs = _shape(x)
    state = xs[-1]
    expected_h0 = [*xs[:-2], state]
    if _shape(h0) != expected_h0:
        raise _fail(
            "selective_scan",
            f"h0 has shape {_shape(h0)}; x {xs} needs {expected_h0} (accepted: x's leading axes and "
            "its state channels)",
        )
    if _shape(a) not in ([state], xs):
        raise _fail(
            "selective_scan",
            f"coefficients a and b have shape {_shape(a)}; x {xs} accepts [{state}] (shared, one "
            f"entry per state channel) or {xs} (token-dependent)",
        )


def check_attention_widths(d: int, d_v: int) -> None:
    """Head widths within the kernel's limit (:data:`ATTENTION_MAX_WIDTH`).

    Raises:
        GuardError: naming both widths and the limit.
    """
    if d > ATTENTION_MAX_WIDTH or d_v > ATTENTION_MAX_WIDTH:
        raise _fail(
            "direct_attention",
            f"head widths d = {d}, d_v = {d_v} exceed the kernel limit {ATTENTION_MAX_WIDTH} "
            f"(accepted: d, d_v <= {ATTENTION_MAX_WIDTH})",
        )
