"""review147 F2: ``torchlean.composed_attention`` and ``libtorch.sdpa_forward`` on CUDA described
their VJP as TorchLean's hand-written rule, but without a mask its softmax step is ATen's fused
softmax backward (``_softmax_backward_data``), the kernel that made ``aten.softmax`` a
``backend-vjp`` capsule and that ``aten.scaled_dot_product_attention``'s summary names. Their Python
VJPs are device-agnostic torch: run on CPU tensors here (the CUDA checks stubbed), with every ATen
op that runs recorded, each ATen backward kernel called must be named by every summary."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from torchlean.backend.providers import attention_kernels
from torchlean.backend.providers.libtorch import sdpa
from torchlean.backend.providers.native_cuda import extension
from torchlean.backend.registry import all_modules
from torchlean.backend.vocabulary import Device, VJPMode


class _BackwardKernels(TorchDispatchMode):
    """Records the name of each ATen op run whose name says it is a backward kernel."""

    def __init__(self) -> None:
        super().__init__()
        self.called: list[str] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        name = str(func.overloadpacket.__name__)
        if "backward" in name:
            self.called.append(name)
        return func(*args, **(kwargs or {}))


def _summary(name: str, device: Device) -> str:
    capsule = next(c for m in all_modules() for c in m.capsules if c.name == name and c.device is device)
    assert capsule.vjp_mode is VJPMode.TORCHLEAN_TAPE
    return capsule.vjp_contract.summary


@pytest.mark.parametrize("masked", [False, True])
def test_each_aten_backward_kernel_the_attention_vjps_call_is_named(
    monkeypatch: pytest.MonkeyPatch, masked: bool
) -> None:
    monkeypatch.setattr(extension, "require_cuda", lambda: None)
    monkeypatch.setattr(extension, "expected_device_type", lambda: "cpu")
    generator = torch.Generator().manual_seed(0)
    q, k, v, g = (torch.randn(2, 3, 4, dtype=torch.float64, generator=generator) for _ in range(4))
    mask = torch.tensor([[True, False, True], [False, False, False], [True, True, True]]) if masked else None
    out = attention_kernels.composed_attention(q, k, v, mask)
    summaries = {
        attention_kernels.composed_attention_vjp: _summary("torchlean.composed_attention", Device.CUDA),
        sdpa.device_attention_vjp: _summary("libtorch.sdpa_forward", Device.CUDA),
    }
    for vjp, summary in summaries.items():
        with _BackwardKernels() as spy:
            dq, dk, dv, _ = vjp(g, q, k, v, mask, out=out)
        assert spy.called == ([] if masked else ["_softmax_backward_data"]), vjp.__name__
        assert all(kernel in summary for kernel in spy.called), (vjp.__name__, summary)
        # the gradients are attention's: torch autograd of the same composition in float64
        leaves = [t.clone().requires_grad_() for t in (q, k, v)]
        scores = leaves[0] @ leaves[1].mT / 2.0
        probs = (torch.softmax(scores, -1) if mask is None
                 else torch.softmax(scores.masked_fill(~mask, -torch.inf), -1).nan_to_num(0.0))
        (probs @ leaves[2]).backward(g)
        for got, leaf in zip((dq, dk, dv), leaves, strict=True):
            torch.testing.assert_close(got, leaf.grad, rtol=1e-12, atol=1e-12)
