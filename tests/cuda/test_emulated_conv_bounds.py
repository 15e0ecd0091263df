"""The extension's own convolution checks refuse what ATen's 32-bit size arithmetic wraps, through
the host emulation (csrc/ compiled for the CPU), as the Python guards do (review203: the C++
``check_conv`` lacked the bounds the Python guards gained for review199 F1 / review201 F1 /
review203 F2; the guards run first under a profile, but the extension is callable on its own).

* convolution: ``input + 2*padding - dilation*(kernel - 1) - 1`` at most 2**31 - 1 for a non-empty
  batch (``reference.spatial_guards.conv_span_fault``);
* transposed convolution: ``dilation*(kernel - 1) + 1`` at most 2**31 - 1, and ``2*padding`` at
  most 2**31 - 1 for a non-empty batch (``reference.spatial_guards.transpose_fault``).

Oracles: the bounds computed by hand, torch's ``conv1d`` for the accepted geometry at the bound
(one output, read off by hand: the window lies in the padding, so 0).
"""

from __future__ import annotations

from types import ModuleType

import pytest
import torch
from numpy.testing import assert_array_equal

from torchlean.backend.providers.reference.spatial_guards import conv_span_fault, transpose_fault

LIMIT = 2**31 - 1


def _ones(*shape: int) -> torch.Tensor:
    return torch.ones(shape, dtype=torch.float64)


def test_conv_span_beyond_int32_is_refused_for_a_non_empty_batch(emulation: ModuleType) -> None:
    # n + 2p - d(k - 1) - 1 = 1 + 2**31 - 0 - 1 = 2**31
    assert conv_span_fault(1, [1], [1], [2**30], [1]) is not None
    with pytest.raises(ValueError, match=r"input \+ 2\*padding - dilation\*\(kernel - 1\) - 1 = 2147483648 "):
        emulation.conv_forward(_ones(1, 1, 1), _ones(1, 1, 1), None, [2**31], [2**30], [1], 1)
    with pytest.raises(ValueError, match=r"= 2147483648 on spatial axis 0 is too large"):
        emulation.conv_backward(
            _ones(1, 1, 1), _ones(1, 1, 1), _ones(1, 1, 1), None, _ones(1, 1, 1), [2**31], [2**30], [1], 1
        )
    # an empty batch computes nothing and is right
    assert conv_span_fault(0, [1], [1], [2**30], [1]) is None
    empty = emulation.conv_forward(_ones(0, 1, 1), _ones(1, 1, 1), None, [2**31], [2**30], [1], 1)
    assert tuple(empty.shape) == (0, 1, 2)  # 2**31 // 2**31 + 1 outputs


def test_conv_span_at_the_bound_is_computed(emulation: ModuleType) -> None:
    # n + 2p - 1 = 2 + 2**31 - 2 - 1 = 2**31 - 1: accepted; stride 2**31 leaves one output, whose
    # window is the first padded position (0)
    assert conv_span_fault(1, [2], [1], [2**30 - 1], [1]) is None
    x, w = _ones(1, 1, 2), torch.full((1, 1, 1), 3.0, dtype=torch.float64)
    out = emulation.conv_forward(x, w, None, [2**31], [2**30 - 1], [1], 1)
    assert_array_equal(out.numpy(), [[[0.0]]])
    assert_array_equal(out.numpy(), torch.nn.functional.conv1d(x, w, None, 2**31, 2**30 - 1).numpy())


def test_conv_transpose_effective_kernel_beyond_int32_is_refused(emulation: ModuleType) -> None:
    # dilation*(kernel - 1) + 1 = 2**30 * 2 + 1 = 2**31 + 1, refused even for an empty batch
    for batch in (1, 0):
        assert transpose_fault(batch, 0, 3, 0, 2**30) is not None
        with pytest.raises(ValueError, match=r"dilation\*\(kernel - 1\) \+ 1 = 2147483649 on spatial axis 0"):
            emulation.conv_transpose_forward(
                _ones(batch, 1, 5), _ones(1, 1, 3), None, [1], [0], [0], [2**30], 1
            )


def test_conv_transpose_double_padding_beyond_int32_is_refused_for_a_non_empty_batch(
    emulation: ModuleType,
) -> None:
    # 2*padding = 2**31; the output extent (3 - 1) * (2**31 - 1) - 2**31 + 1 = 2**31 - 1 is positive
    assert transpose_fault(1, 0, 1, 2**30, 1) is not None
    message = r"2\*padding = 2147483648 on spatial axis 0 is too large \(accepted: at most 2147483647"
    with pytest.raises(ValueError, match=message):
        emulation.conv_transpose_forward(_ones(1, 1, 3), _ones(1, 1, 1), None, [LIMIT], [2**30], [0], [1], 1)
    with pytest.raises(ValueError, match=message):
        # the operands are checked before the cotangent, so a small g suffices
        emulation.conv_transpose_backward(
            _ones(1, 1, 1), _ones(1, 1, 3), _ones(1, 1, 1), None, _ones(1, 1, 1),
            [LIMIT], [2**30], [0], [1], 1,
        )
    assert transpose_fault(0, 0, 1, 2**30, 1) is None
    x = _ones(0, 1, 3)
    empty = emulation.conv_transpose_forward(x, _ones(1, 1, 1), None, [LIMIT], [2**30], [0], [1], 1)
    assert tuple(empty.shape) == (0, 1, LIMIT)
