"""The native-cuda operand guards (``native_cuda.operand_guards``): the rules tying operands
together, refused in Python before any launch. On the GPU machine lent for issue 7 every refusal
raised by the extension's C++ checks crashed the process, so a session's bad input must stop here;
these run on plain CPU tensors (the guards read shapes and, for indices, values). Oracles: torch's
own refusals of the same calls (``torch.gather``, ``torch.matmul``, ``torch.cat``, the pools) and
hand-written geometry."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

from torchlean.backend.errors import GuardError
from torchlean.backend.providers.native_cuda import kernels
from torchlean.backend.providers.native_cuda import operand_guards as og


def _z(*shape: int) -> torch.Tensor:
    return torch.zeros(shape, dtype=torch.float64)


def _i(values: list[list[int]] | list[int]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.int64)


# ------------------------------------------------------------------------------------- windows


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: og.check_window("conv", _z(0, 2, 0), (1,), (1,), (0,), (1,)),
            r"^native_cuda\.conv: effective kernel size 1 \(dilation\*\(kernel-1\)\+1\) exceeds the padded "
            r"input size 0 \(input 0 \+ 2\*padding 0\) on spatial axis 0",
        ),
        (
            lambda: og.check_window("avg_pool", _z(1, 1, 5), (6,), (1,), (0,), (1,), pool=True),
            r"effective kernel size 6 .* exceeds the padded input size 5",
        ),
        (
            lambda: og.check_window("max_pool", _z(1, 1, 2), (2,), (1,), (1,), (3,), pool=True),
            r"^native_cuda\.max_pool: window 0 on spatial axis 0 covers only padding "
            r"\(input size 2, kernel 2, dilation 3, padding 1\)",
        ),
        (
            lambda: og.check_window(
                "avg_pool", _z(1, 1, 1, 3, 3), (2, 1, 1), (1, 1, 1), (1, 0, 0), (1, 1, 1), pool=True,
                unpadded_input=True,
            ),
            r"x of shape \[1, 1, 1, 3, 3\] has spatial extents \(1, 3, 3\), "
            r"smaller than kernel_size \(2, 1, 1\)",
        ),
        (
            lambda: og.check_window("conv", _z(1, 1, 4, 4), (2,), (1,), (0,), (1,)),
            r"x has shape \[1, 1, 4, 4\] with 2 spatial axes but the kernel has 1",
        ),
    ],
)  # fmt: skip
def test_window_refusals(call: Callable[[], None], message: str) -> None:
    with pytest.raises(GuardError, match=message):
        call()


def test_window_acceptances_match_torch() -> None:
    """What the guard accepts torch computes: a convolution window of padding only (torch gives
    the bias there), a 2-d average pool whose kernel exceeds the unpadded input, dilation."""
    og.check_window("conv", _z(1, 1, 2), (2,), (1,), (1,), (3,))
    assert TF.conv1d(_z(1, 1, 2), _z(1, 1, 2), padding=1, dilation=3).shape == (1, 1, 1)
    og.check_window("avg_pool", _z(1, 1, 1, 3), (2, 1), (1, 1), (1, 0), (1, 1), pool=True)
    assert TF.avg_pool2d(_z(1, 1, 1, 3), (2, 1), 1, (1, 0)).shape == (1, 1, 2, 3)
    with pytest.raises(RuntimeError):  # torch's own rule, which unpadded_input mirrors
        TF.avg_pool3d(_z(1, 1, 1, 3, 3), (2, 1, 1), 1, (1, 0, 0))


# ------------------------------------------------------------------------------------ batch norm


def test_batch_norm_operand_shapes_and_count() -> None:
    x = _z(4, 3, 2)
    og.check_batch_norm_operands(x, {"weight": _z(3), "bias": None}, training=True)
    with pytest.raises(
        GuardError, match=r"^native_cuda\.batch_norm: weight has shape \[5\] \(accepted: \(3,\)"
    ):
        og.check_batch_norm_operands(x, {"weight": _z(5)}, training=False)
    with pytest.raises(GuardError, match=r"have 1 value per channel"):
        og.check_batch_norm_operands(_z(1, 3), {}, training=True)
    with pytest.raises(ValueError, match="Expected more than 1 value per channel"):  # torch agrees
        TF.batch_norm(_z(1, 3), None, None, training=True)
    og.check_batch_norm_operands(_z(1, 3), {}, training=False)  # eval reads no batch statistics
    og.check_batch_norm_operands(_z(0, 3), {}, training=True)  # an empty batch: an empty result


# ------------------------------------------------------------------------------ indices and axes


@pytest.mark.parametrize(
    ("axis", "rank", "wrapped"), [(0, 1, 0), (-1, 1, 0), (-2, 3, 1), (0, 0, 0), (-1, 0, 0)]
)
def test_wrap_axis(axis: int, rank: int, wrapped: int) -> None:
    assert og.wrap_axis("concat", axis, rank) == wrapped


@pytest.mark.parametrize(("axis", "rank", "accepted"), [(1, 1, "-1..0"), (-3, 2, "-2..1"), (1, 0, "-1..0")])
def test_wrap_axis_refusals(axis: int, rank: int, accepted: str) -> None:
    with pytest.raises(
        GuardError, match=rf"dim {axis} is out of range for rank {rank} \(accepted {accepted}\)"
    ):
        og.wrap_axis("concat", axis, rank)
    with pytest.raises(GuardError, match=r"dim True is not an int \(accepted: an int in -2\.\.1\)"):
        og.wrap_axis("concat", True, 2)


def test_wrap_axis_takes_numpy_and_torch_integers() -> None:
    assert og.wrap_axis("gather", np.int64(-1), 2) == 1
    assert og.wrap_axis("gather", torch.tensor(1), 2) == 1
    with pytest.raises(GuardError, match=r"dim 1\.0 is not an int"):
        og.wrap_axis("gather", 1.0, 2)  # type: ignore[arg-type]


def test_wrap_axis_refuses_tensors_that_are_not_0d_ints() -> None:
    for axis in (torch.tensor(True), torch.tensor([1]), torch.tensor([[1]]), torch.tensor(1.0)):
        with pytest.raises(GuardError, match=r"is not an int"):
            og.wrap_axis("concat", axis, 2)  # type: ignore[arg-type]
        with pytest.raises(TypeError):  # torch.cat's dim refuses them too
            torch.cat([_z(2, 2), _z(2, 2)], axis)  # type: ignore[call-overload]


def test_gather_backward_accepts_an_empty_index_of_any_extents() -> None:
    """The backward scatters into zeros of x's shape: an empty index writes nothing (its C++ check
    and torch's scatter_add accept it); the forward refuses it, as the reference guard."""
    empty = torch.zeros((0, 4), dtype=torch.int64)
    assert og.check_gather_index(_z(3, 2), empty, 0, backward=True) == 0
    assert torch.zeros(3, 2, dtype=torch.float64).scatter_add(0, empty, _z(0, 4)).shape == (3, 2)
    with pytest.raises(GuardError, match=r"index \[0, 4\] exceeds x \[3, 2\]"):
        og.check_gather_index(_z(3, 2), empty, 0)


def test_gather_index_rules_match_torch() -> None:
    x = _z(3, 4)
    assert og.check_gather_index(x, _i([[0, 3], [1, 2]]), -1) == 1
    cases = [
        (
            _i([[0, 9, -1]]),
            1,
            r"index value 9 is out of range \(accepted: values in \[0, 4\) along dimension 1\)",
        ),
        (_i([0, 1]), 1, r"index has rank 1 but the data has rank 2"),
        (
            torch.zeros((4, 1), dtype=torch.int64),
            1,
            r"index \[4, 1\] exceeds x \[3, 4\] along an axis other than 1",
        ),
        (_i([[0]]), 2, r"dim 2 is out of range for rank 2"),
    ]
    for index, axis, message in cases:
        with pytest.raises(GuardError, match=message):
            og.check_gather_index(x, index, axis)
        with pytest.raises((RuntimeError, IndexError)):
            torch.gather(x, axis, index)
    og.check_gather_index(x, torch.zeros((0, 7), dtype=torch.int64), 1)  # empty: no value to check
    assert torch.gather(x, 1, torch.zeros((0, 7), dtype=torch.int64)).shape == (0, 7)


def test_scatter_index_rules_match_torch() -> None:
    base, src = _z(3, 4), _z(2, 4)
    assert og.check_scatter_index(base, _i([[0, 1], [2, 0]]), src, 0) == 0
    cases = [
        (_i([[0, -2]]), src, 1, r"index value -2 is out of range \(accepted: values in \[0, 4\)"),
        (_i([[0, 1, 2]]), _z(1, 2), 1, r"index \[1, 3\] exceeds src \[1, 2\], or base \[3, 4\]"),
        (_i([[0]]), _z(4), 0, r"src has rank 1 but base has rank 2"),
    ]
    for index, s, axis, message in cases:
        with pytest.raises(GuardError, match=message):
            og.check_scatter_index(base, index, s, axis)
        with pytest.raises((RuntimeError, IndexError)):
            torch.scatter_add(base, axis, index, s)


def test_concat_shapes_match_torch() -> None:
    assert og.check_concat_shapes([_z(2, 3), _z(4, 3)], 0) == 0
    for xs, axis, message in (
        (
            [_z(2, 3), _z(2, 4)],
            0,
            r"xs\[1\] has shape \[2, 4\] which does not match xs\[0\] \[2, 3\] outside axis 0",
        ),
        ([_z(2, 3), _z(2)], 0, r"xs\[1\] has shape \[2\]"),
    ):
        with pytest.raises(GuardError, match=message):
            og.check_concat_shapes(xs, axis)
        with pytest.raises((RuntimeError, IndexError)):
            torch.cat(xs, axis)
    # torch skips a legacy empty 1-D tensor; torchlean refuses it, as the reference guard does
    assert torch.cat([_z(0), _z(2, 3)], 1).shape == (2, 3)
    with pytest.raises(GuardError, match=r"dim 1 is out of range for rank 1 \(accepted -1\.\.0\)"):
        og.check_concat_shapes([_z(0), _z(2, 3)], 1)


# --------------------------------------------------------------------- contraction, FFT, attention


@pytest.mark.parametrize(
    ("a", "b", "refused"),
    [
        ((2, 3), (3, 4), False),
        ((3,), (3, 4), False),
        ((2, 3), (3,), False),
        ((3,), (3,), False),
        ((5, 2, 3), (1, 3, 4), False),
        ((2, 3), (4, 5), True),
        ((3,), (4,), True),
        ((2, 2, 3), (5, 3, 4), True),
    ],
)
def test_contraction_matches_torch(a: tuple[int, ...], b: tuple[int, ...], refused: bool) -> None:
    if refused:
        with pytest.raises(GuardError, match=r"^native_cuda\.matmul: "):
            og.check_contraction(_z(*a), _z(*b))
        with pytest.raises(RuntimeError):
            torch.matmul(_z(*a), _z(*b))
    else:
        assert og.check_contraction(_z(*a), _z(*b)) == list(torch.matmul(_z(*a), _z(*b)).shape)


def test_fft_fno_operands() -> None:
    og.check_fft_fno_operands(_z(2, 3, 8), _z(5, 3, 4))  # modes 5 = 8 // 2 + 1
    for x, w, message in (
        (_z(2, 3, 0), _z(1, 3, 4), r"the transform length must be positive"),
        (_z(2, 3, 8), _z(6, 3, 4), r"6 modes requested; a length-8 grid has 5"),
        (_z(2, 3, 8), _z(0, 3, 4), r"0 modes requested"),
        (
            _z(2, 2, 8),
            _z(5, 3, 4),
            r"x has 2 channels but the weights \(modes, in, out\) \[5, 3, 4\] expect 3",
        ),
    ):
        with pytest.raises(GuardError, match=message):
            og.check_fft_fno_operands(x, w)


def test_selective_scan_operands() -> None:
    """By hand (anchor-runtime.md §8.2): x (..., L, S), h0 (..., S), coefficients (S,) or x's shape."""
    x = _z(2, 3, 4)
    for a, h0 in ((_z(4), _z(2, 4)), (_z(2, 3, 4), _z(2, 4)), (_z(4), _z(2, 4))):
        og.check_selective_scan_operands(a, x, h0)
    og.check_selective_scan_operands(_z(4), _z(3, 4), _z(4))  # no leading axes: h0 (S,)
    og.check_selective_scan_operands(_z(0), _z(2, 3, 0), _z(2, 0))  # no state channels
    for a, h0, message in (
        (_z(4), _z(4), r"h0 has shape \[4\]; x \[2, 3, 4\] needs \[2, 4\]"),
        (_z(4), _z(2, 3, 4), r"h0 has shape \[2, 3, 4\]; x \[2, 3, 4\] needs \[2, 4\]"),
        (_z(4), _z(1, 4), r"h0 has shape \[1, 4\]"),  # no broadcasting
        (
            _z(2),
            _z(2, 4),
            r"coefficients a and b have shape \[2\]; x \[2, 3, 4\] accepts \[4\] \(shared",
        ),
        (
            _z(3, 4),
            _z(2, 4),
            r"coefficients a and b have shape \[3, 4\]; .* or \[2, 3, 4\] \(token-dependent\)",
        ),
        (_z(1, 3, 4), _z(2, 4), r"coefficients a and b have shape \[1, 3, 4\]"),
    ):
        with pytest.raises(GuardError, match=r"^native_cuda\.selective_scan: " + message):
            og.check_selective_scan_operands(a, x, h0)
    # a rank-2 x (no leading axes), and h0 with x's leading axes but other state channels (review24
    # pmut O01, O02: the C++ checks refused these too, in the extension's words)
    for a, x2, h0, message in (
        (_z(4), _z(3, 4), _z(2, 4), r"h0 has shape \[2, 4\]; x \[3, 4\] needs \[4\]"),
        (_z(3), _z(3, 4), _z(4), r"coefficients a and b have shape \[3\]; x \[3, 4\] accepts \[4\]"),
        (_z(4), x, _z(2, 5), r"h0 has shape \[2, 5\]; x \[2, 3, 4\] needs \[2, 4\]"),
    ):
        with pytest.raises(GuardError, match=r"^native_cuda\.selective_scan: " + message):
            og.check_selective_scan_operands(a, x2, h0)


def test_attention_widths() -> None:
    og.check_attention_widths(256, 256)
    og.check_attention_widths(0, 0)
    with pytest.raises(GuardError, match=r"head widths d = 300, d_v = 4 exceed the kernel limit 256"):
        og.check_attention_widths(300, 4)
    with pytest.raises(GuardError, match=r"d = 4, d_v = 257"):
        og.check_attention_widths(4, 257)


# ------------------------------------------- the wrappers call them, forward and backward (emulation)

WIRED: list[tuple[str, Callable[[], object], str]] = [
    (
        "conv-channels",
        lambda: kernels.conv_forward(_z(1, 2, 6), _z(4, 3, 3)),
        r"x has 2 channels; w \[4, 3, 3\]",
    ),
    ("conv-bias", lambda: kernels.conv_forward(_z(1, 2, 6), _z(4, 2, 3), _z(3)), r"b has shape \[3\]"),
    (
        "conv-groups",
        lambda: kernels.conv_forward(_z(1, 2, 6), _z(3, 1, 3), groups=2),
        r"groups=2 does not divide w\.shape\[0\] = 3 of w \[3, 1, 3\] \(accepted: a divisor of C_out",
    ),
    (
        "conv_transpose-groups",
        lambda: kernels.conv_transpose_forward(_z(1, 3, 6), _z(3, 2, 3), groups=2),
        r"groups=2 does not divide w\.shape\[0\] = 3 .* \(accepted: a divisor of C_in",
    ),
    (
        "conv_transpose-huge-stride",
        lambda: kernels.conv_transpose_forward(_z(1, 1, 2), _z(1, 1, 1), stride=2**40),
        r"stride=1099511627776 is too large \(accepted: at most 2147483647 = 2\*\*31 - 1",
    ),
    (
        "conv-padding-overflows-int64",
        lambda: kernels.conv_forward(_z(1, 1, 2), _z(1, 1, 1), padding=2**62),
        r"padded input shape \[1, 1, 9223372036854775810\] has 9223372036854775810 elements",
    ),
    (
        "conv-span-overflows-int64",
        lambda: kernels.conv_forward(_z(1, 1, 2), _z(1, 1, 3), dilation=2**62),
        r"window span \[9223372036854775809\]",
    ),
    (
        "max_pool-huge-kernel",
        lambda: kernels.max_pool_forward(_z(1, 1, 2), kernel_size=2**63 - 1, padding=2**62 - 1),
        r"kernel_size=9223372036854775807 is too large",
    ),
    ("conv-window", lambda: kernels.conv_forward(_z(1, 2, 2), _z(3, 2, 3)), r"effective kernel size 3"),
    (
        "conv-backward-g",
        lambda: kernels.conv_backward(_z(1, 4, 5), _z(1, 2, 6), _z(4, 2, 3), out=_z(1, 4, 5)),
        r"g has shape \[1, 4, 5\] \(accepted: the forward's output shape \[1, 4, 4\]\)",
    ),
    (
        "conv_transpose-output-padding",
        lambda: kernels.conv_transpose_forward(_z(1, 2, 5), _z(2, 3, 3), output_padding=2),
        r"output_padding\[0\] = 2 \(accepted: below stride 1 or dilation 1",
    ),
    (
        "conv_transpose-output-padding-equals-stride",
        lambda: kernels.conv_transpose_forward(_z(1, 2, 5), _z(2, 3, 3), stride=2, output_padding=2),
        r"output_padding\[0\] = 2 \(accepted: below stride 2 or dilation 1, as torch\)",
    ),
    (
        "conv_transpose-output-extent-zero",
        lambda: kernels.conv_transpose_forward(_z(1, 2, 2), _z(2, 3, 1), padding=1),
        r"spatial axis 0 would have output extent 0",
    ),
    (
        "conv_transpose-channels",
        lambda: kernels.conv_transpose_forward(_z(1, 2, 5), _z(3, 3, 3)),
        r"x has 2 channels; w \[3, 3, 3\] with groups 1 expects 3",
    ),
    (
        "conv_transpose-empty-output",
        lambda: kernels.conv_transpose_forward(_z(1, 2, 1), _z(2, 3, 1), padding=1),
        r"spatial axis 0 would have output extent -1",
    ),
    (
        "max_pool-backward-g",
        lambda: kernels.max_pool_backward(_z(1, 2, 5), _z(1, 2, 6), out=_z(1, 2, 5), kernel_size=2),
        r"g has shape \[1, 2, 5\] \(accepted: the forward's output shape \[1, 2, 3\]\)",
    ),
    (
        "avg_pool-backward-g",
        lambda: kernels.avg_pool_backward(_z(1, 2, 5), _z(1, 2, 6), out=_z(1, 2, 5), kernel_size=2),
        r"output shape \[1, 2, 3\]",
    ),
    (
        "smooth_max_pool-backward-g",
        lambda: kernels.smooth_max_pool_backward(
            _z(1, 2, 5), _z(1, 2, 6), out=_z(1, 2, 5), beta=1.0, kernel_size=2
        ),
        r"output shape \[1, 2, 3\]",
    ),
    (
        "concat-backward-g",
        lambda: kernels.concat_backward(_z(9, 9), _z(2, 3), _z(2, 3), out=_z(9, 9), axis=0),
        r"output shape \[4, 3\]",
    ),
    ("concat-rank0", lambda: kernels.concat_forward(_z(), _z(), axis=0), r"xs\[0\] has rank 0"),
    (
        "gather-backward-g",
        lambda: kernels.gather_backward(_z(1, 1), _z(3, 4), _i([[0, 1], [1, 2]]), out=_z(1, 1), axis=1),
        r"output shape \[2, 2\]",
    ),
    ("gather-value", lambda: kernels.gather_forward(_z(3, 4), _i([[0, 4]]), axis=1), r"index value 4"),
    (
        "scatter_add-value",
        lambda: kernels.scatter_add_forward(_z(3, 4), _i([[0, 3]]), _z(1, 2), axis=0),
        r"index value 3 is out of range \(accepted: values in \[0, 3\)",
    ),
    (
        "fft_fno-backward-g",
        lambda: kernels.fft_fno_backward(_z(2, 7, 8), _z(2, 3, 8), _z(5, 3, 4), _z(5, 3, 4), out=_z(2, 7, 8)),
        r"output shape \[2, 4, 8\]",
    ),
    ("fft_fno-modes", lambda: kernels.fft_fno_forward(_z(2, 3, 8), _z(6, 3, 4), _z(6, 3, 4)), r"6 modes"),
    (
        "matmul-backward-g",
        lambda: kernels.matmul_backward(_z(2, 2), _z(2, 3), _z(3, 4), out=_z(2, 2)),
        r"output shape \[2, 4\]",
    ),
    ("matmul-batch", lambda: kernels.matmul_forward(_z(2, 2, 3), _z(5, 3, 4)), r"do not broadcast"),
    (
        "batch_norm-backward-weight",
        lambda: kernels.batch_norm_backward(
            _z(4, 3), _z(4, 3), _z(5), None, None, None, out=_z(4, 3), training=True
        ),
        r"weight has shape \[5\]",
    ),
    (
        "selective_scan-h0",
        lambda: kernels.selective_scan_forward(_z(4), _z(4), _z(2, 3, 4), _z(4)),
        r"h0 has shape \[4\]; x \[2, 3, 4\] needs \[2, 4\]",
    ),
    (
        "selective_scan-shared-length",
        lambda: kernels.selective_scan_forward(_z(2), _z(2), _z(2, 3, 4), _z(2, 4)),
        r"coefficients a and b have shape \[2\]",
    ),
    (
        "selective_scan-token-shape",
        lambda: kernels.selective_scan_forward(_z(3, 4), _z(3, 4), _z(2, 3, 4), _z(2, 4)),
        r"coefficients a and b have shape \[3, 4\]",
    ),
    (
        "selective_scan-backward-h0",
        lambda: kernels.selective_scan_backward(
            _z(2, 3, 4), _z(4), _z(4), _z(2, 3, 4), _z(3, 4), out=_z(2, 3, 4)
        ),
        r"h0 has shape \[3, 4\]",
    ),
    (
        "attention-widths",
        lambda: kernels.direct_attention_forward(_z(1, 2, 300), _z(1, 2, 300), _z(1, 2, 4)),
        r"head widths d = 300, d_v = 4 exceed the kernel limit 256",
    ),
]


@pytest.mark.parametrize(("call", "message"), [w[1:] for w in WIRED], ids=[w[0] for w in WIRED])
def test_the_wrappers_refuse_in_python_before_the_extension(
    call: Callable[[], object], message: str, emulation: ModuleType
) -> None:
    """Each call site: a GuardError from the Python guards (``native_cuda.<op>: ...``), never the
    C++ check's (``torchlean_native_ext.``), whose refusals crashed the GPU machine."""
    with pytest.raises(GuardError, match=message) as refused:
        call()
    assert str(refused.value).startswith("native_cuda."), refused.value
    assert "torchlean_native_ext" not in str(refused.value), refused.value


@pytest.mark.parametrize(
    "call",
    [
        lambda: TF.conv1d(_z(1, 2, 6), _z(4, 3, 3)),
        lambda: TF.conv1d(_z(1, 2, 6), _z(4, 2, 3), _z(3)),
        lambda: TF.conv1d(_z(1, 2, 6), _z(3, 1, 3), groups=2),
        lambda: TF.conv_transpose1d(_z(1, 2, 5), _z(2, 3, 3), output_padding=2),
        lambda: TF.conv_transpose1d(_z(1, 2, 5), _z(3, 3, 3)),
        lambda: TF.conv_transpose1d(_z(1, 2, 1), _z(2, 3, 1), padding=1),
        lambda: TF.conv_transpose1d(_z(1, 2, 5), _z(2, 3, 3), stride=2, output_padding=2),
        lambda: TF.conv_transpose1d(_z(1, 2, 2), _z(2, 3, 1), padding=1),
        lambda: torch.matmul(_z(2, 2, 3), _z(5, 3, 4)),
    ],
)
def test_torch_refuses_the_forward_calls_refused_above(call: Callable[[], object]) -> None:
    """The oracle of the forward refusals above: torch refuses the same calls."""
    with pytest.raises(RuntimeError):
        call()


# ------------------------------------------ what torch accepts, the guards accept (and agree on)

CONV_ACCEPTED: list[tuple[str, Callable[[], object], Callable[[], torch.Tensor]]] = [
    (
        "conv-groups-2",
        lambda: og.check_conv_operands(_z(1, 4, 6), _z(4, 2, 3), _z(4), (1,), (0,), (1,), 2),
        lambda: TF.conv1d(_z(1, 4, 6), _z(4, 2, 3), _z(4), groups=2),
    ),
    (
        "conv_transpose-groups-2",
        lambda: og.check_conv_operands(
            _z(1, 4, 5), _z(4, 3, 3), _z(6), (1,), (0,), (1,), 2, output_padding=(0,)
        ),
        lambda: TF.conv_transpose1d(_z(1, 4, 5), _z(4, 3, 3), _z(6), groups=2),
    ),
    (
        "conv_transpose-stride-2-output-padding-1",
        lambda: og.check_conv_operands(
            _z(1, 2, 5), _z(2, 3, 3), None, (2,), (0,), (1,), 1, output_padding=(1,)
        ),
        lambda: TF.conv_transpose1d(_z(1, 2, 5), _z(2, 3, 3), stride=2, output_padding=1),
    ),
    (
        "conv_transpose-output-padding-below-dilation",
        lambda: og.check_conv_operands(
            _z(1, 2, 5), _z(2, 3, 3), None, (1,), (0,), (2,), 1, output_padding=(1,)
        ),
        lambda: TF.conv_transpose1d(_z(1, 2, 5), _z(2, 3, 3), dilation=2, output_padding=1),
    ),
]


@pytest.mark.parametrize(
    ("guard", "oracle"), [c[1:] for c in CONV_ACCEPTED], ids=[c[0] for c in CONV_ACCEPTED]
)
def test_the_conv_guard_accepts_what_torch_accepts_with_its_output_shape(
    guard: Callable[[], object], oracle: Callable[[], torch.Tensor]
) -> None:
    assert guard() == list(oracle().shape)


def test_the_index_guards_accept_what_torch_accepts() -> None:
    x, index = _z(3, 4), _i([[0, 3], [1, 2], [2, 2]])  # index (3, 2): x's extent off the axis
    assert torch.gather(x, 1, index).shape == (3, 2)
    assert og.check_gather_index(x, index, 1) == 1
    assert og.check_gather_index(x, index, -1) == 1
    base, src, rows = _z(2, 4), _z(3, 4), _i([[0, 1], [1, 0], [1, 1]])  # 3 source rows into 2
    assert torch.scatter_add(base, 0, rows, src).shape == (2, 4)
    assert og.check_scatter_index(base, rows, src, 0) == 0


def test_concat_refuses_extents_whose_sum_overflows_int64() -> None:
    """By hand: 2 * 2**62 = 2**63, one more than int64's largest value (torch cannot be asked:
    it would allocate). Stride-0 views carry the extents without storage."""
    big = torch.zeros(1).expand(2**62)
    with pytest.raises(
        GuardError, match=r"the extents along axis 0 add up to 9223372036854775808, more than int64"
    ):
        og.check_concat_shapes([big, big], 0)
    assert og.check_concat_shapes([big, torch.zeros(1).expand(2**62 - 1)], 0) == 0  # 2**63 - 1: fits


def test_the_conv_guard_refuses_x_and_w_of_different_ranks_in_its_own_words() -> None:
    """torch refuses a 3-d x with a 4-d w too (the oracle); the guard says which ranks."""
    with pytest.raises(RuntimeError):
        TF.conv1d(_z(1, 2, 6), _z(4, 2, 3, 3))
    with pytest.raises(
        GuardError,
        match=r"^native_cuda\.conv: x has shape \[1, 2, 6\] but w has shape \[4, 2, 3, 3\] "
        r"\(accepted: x of w's rank 4, \(N, C_in, 2 spatial axes\)\)$",
    ):
        og.check_conv_operands(_z(1, 2, 6), _z(4, 2, 3, 3), None, (1,), (0,), (1,), 1)


def test_the_native_conv_guards_bound_the_32_bit_spans_as_the_cpu_ones() -> None:
    """review201 F1: the CUDA profiles' conv guards lacked the CPU guards' bounds on what ATen
    computes in 32-bit ints (the span of a convolution, the effective kernel of a transpose); both
    refuse it in the same words (the guards run on CPU tensors too)."""
    from torchlean.backend.providers.reference import spatial_guards

    x = torch.ones(1, 1, 5, dtype=torch.float64)
    w = torch.ones(1, 1, 3, dtype=torch.float64)
    with pytest.raises(GuardError) as native:
        og.check_conv_operands(x, w, None, [8589934593], [2**31], [5], 1)
    with pytest.raises(GuardError) as reference:
        spatial_guards.check_conv(x.numpy(), w.numpy(), stride=8589934593, padding=2**31, dilation=5)
    assert str(native.value) == f"native_cuda.{reference.value}"  # the op named by its provider
    assert "input + 2*padding - dilation*(kernel - 1) - 1 = 4294967290" in str(native.value)
    x, w = torch.ones(1, 1, 3, dtype=torch.float64), torch.ones(1, 1, 2, dtype=torch.float64)
    with pytest.raises(GuardError) as native:
        og.check_conv_operands(x, w, None, [1], [1073741797], [2**31 - 1], 1, output_padding=[0])
    assert "dilation*(kernel - 1) + 1 = 2147483648 on spatial axis 0 is too large" in str(native.value)
