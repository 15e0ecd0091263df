"""review137 F1: torchlean's own kernels launch on torch's current stream of their device, the
stream ATen allocates, fills and frees their buffers on, and the stream handle an entry point is
given must name it: any other handle (another stream's, another device's, a stale one) is refused
with a ValueError before anything is launched, instead of being cast and launched on.

Run on the host emulation, whose device has one stream (handle 0): every own-kernel entry point,
through the Python wrappers with the handle they pass replaced, refuses handle 7 naming it (the
wrappers raise the extension's ValueError as a GuardError), and with the right handle agrees
with itself (the refusal is the handle's, not the arguments')."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
import torch

from torchlean.backend.errors import GuardError
from torchlean.backend.providers.native_cuda import extension, kernels

BAD = 7


def _cases() -> dict[str, Callable[[], Any]]:
    gen = torch.Generator().manual_seed(0)

    def r(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen, dtype=torch.float64)

    x, mask = r(3, 5), torch.rand(3, 5, generator=gen) > 0.3
    probs = kernels.hard_masked_softmax_forward(x, mask)
    q, k, v = r(2, 4, 3), r(2, 6, 3), r(2, 6, 2)
    out, lse = kernels.direct_attention_forward(q, k, v)
    a, b, xs, h0 = r(4), r(4), r(2, 5, 4), r(2, 4)
    h = kernels.selective_scan_forward(a, b, xs, h0)
    img = r(1, 2, 4, 4)
    pooled = kernels.smooth_max_pool_forward(img, beta=2.0, kernel_size=2)
    return {
        "hard_masked_softmax_forward": lambda: kernels.hard_masked_softmax_forward(x, mask),
        "hard_masked_softmax_backward": lambda: kernels.hard_masked_softmax_backward(
            torch.ones_like(x), x, mask, out=probs),
        "direct_attention_forward": lambda: kernels.direct_attention_forward(q, k, v),
        "direct_attention_backward": lambda: kernels.direct_attention_backward(
            torch.ones_like(out), q, k, v, None, out=out, lse=lse),
        "selective_scan_forward": lambda: kernels.selective_scan_forward(a, b, xs, h0),
        "selective_scan_backward": lambda: kernels.selective_scan_backward(
            torch.ones_like(h), a, b, xs, h0, out=h),
        "smooth_max_pool_forward": lambda: kernels.smooth_max_pool_forward(img, beta=2.0, kernel_size=2),
        "smooth_max_pool_backward": lambda: kernels.smooth_max_pool_backward(
            torch.ones_like(pooled), img, out=pooled, beta=2.0, kernel_size=2),
        "rand_uniform_forward": lambda: kernels.rand_uniform_forward(
            shape=(3,), seed=1, counter=0, dtype=torch.float64),
        "bernoulli_mask_forward": lambda: kernels.bernoulli_mask_forward(
            shape=(3,), keep_prob=0.5, seed=1, counter=0, dtype=torch.float64),
    }


def test_every_entry_point_with_a_stream_argument_is_covered() -> None:
    """Each ``std::int64_t stream`` parameter of native_ops.cu is checked by ``launch_stream``
    once, and this module calls each of those entry points."""
    source = (extension.sources_dir() / "native_ops.cu").read_text()
    assert source.count("std::int64_t stream)") == source.count("launch_stream(op, stream, ") == len(_names())
    assert all(f" {name}(" in source for name in _names())


def _names() -> list[str]:
    return ["hard_masked_softmax_forward", "hard_masked_softmax_backward", "direct_attention_forward",
            "direct_attention_backward", "selective_scan_forward", "selective_scan_backward",
            "smooth_max_pool_forward", "smooth_max_pool_backward", "rand_uniform_forward",
            "bernoulli_mask_forward"]


@pytest.mark.parametrize("name", _names())
def test_a_handle_that_is_not_the_current_stream_is_refused(
    name: str, emulated_cuda: None, emulation: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    call = _cases()[name]
    first = call()  # the handle torchlean passes: accepted
    monkeypatch.setattr(extension, "stream_handle", lambda index: BAD)
    with pytest.raises(GuardError, match=rf"{name}: stream handle {BAD} is not the current stream "
                                         r"of cpu \(handle 0\); pass torch\.cuda\.current_stream"):
        call()
    monkeypatch.undo()
    again = call()
    for one, two in zip(first if isinstance(first, (list, tuple)) else [first],
                        again if isinstance(again, (list, tuple)) else [again], strict=True):
        if one is not None:
            torch.testing.assert_close(one, two, rtol=0, atol=0)
