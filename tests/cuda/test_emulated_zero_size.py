"""Zero-size inputs on the native CUDA provider, through the host emulation (csrc/ compiled for the
CPU; torchlean's own kernels run by the CUDA emulator, which refuses a launch on an empty grid as
a GPU does, so every case here also shows that empty work returns before any launch).

The CPU profiles follow torch on zero-size inputs (``tests/runtime/test_zero_size.py``: an empty
result of torch's shape where torch answers, a ``GuardError`` naming the shape where torch raises
or where torchlean keeps a refusal). The ``checked_cuda`` profile makes the same choices:

* every functional case of that module (loaded from its path, as ``test_gpu_check.py`` loads the
  bench script), forward and backward through the tape, float64 and float32: values and
  gradients as torch float64 and as ``checked_cpu``. The native provider used to differ on
  ``mse_loss`` of an empty input (0, not torch's NaN), ``linear``'s backward with 0 input or
  output features (``reshape(-1, 0)`` failed), ``reshape`` with ``-1`` (refused) and
  ``batch_norm`` of an empty input (ATen's ``native_batch_norm`` refused it in training, and in
  evaluation divided by zero: SIGFPE killed the process);
* every refusal of that module: a ``GuardError`` under ``checked_cuda`` too (the native provider
  answered a convolution with 0 input channels, pools with 0 channels, ``batch_norm`` with C = 0
  and an affine parameter, and failed inside ATen, a ``NativeKernelError``, for empty weight axes
  or empty spatial axes of a non-empty batch); the native guards' messages name the shape, and
  the extension's own C++ checks refuse the same calls when the Python guards are bypassed;
* ops without a CPU kernel: ``selective_scan`` (empty batch, no time step, no state channel;
  shared and token-dependent coefficients) against a torch float64 recurrence with autograd,
  ``fft_fno`` (an empty batch or channel axis: zeros without an FFT, which ATen's FFT plans
  refuse; hand values) and the seeded sources of an empty shape; direct attention on every empty
  axis against torch SDPA in float64.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from numpy.testing import assert_array_equal

import torchlean as tl
from torchlean.backend.errors import GuardError
from torchlean.backend.providers.native_cuda import kernels

Array = np.ndarray[Any, Any]


def _load_zero_size_module() -> ModuleType:
    path = Path(__file__).resolve().parents[1] / "runtime" / "test_zero_size.py"
    spec = importlib.util.spec_from_file_location("runtime_test_zero_size_cases", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


ZS = _load_zero_size_module()
DTYPES = [np.float64, np.float32]
DTYPE_IDS = ["float64", "float32"]


# ------------------------------------------------------------------ functional cases, checked_cuda


def _run(case: Any, arrays: list[Array], profile: str, device: str) -> tuple[Array, list[Array], Array]:
    """The case under ``profile`` on ``device``: (value, gradients of ``case.diff``, cotangent)."""
    ours = [tl.tensor(a, requires_grad=i in case.diff, device=device) for i, a in enumerate(arrays)]
    with tl.session(profile):
        out = ZS._call_ours(case, ours)
        g = np.random.default_rng(1).standard_normal(out.shape)
        out.backward(g.astype(out.dtype))
    grads = []
    for i in case.diff:
        grad = ours[i].grad
        assert grad is not None, f"{profile}: input {i} received no gradient"
        grads.append(grad.numpy())
    return out.numpy(), grads, g


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("case", ZS.CASES, ids=[c.id for c in ZS.CASES])
def test_zero_size_case_matches_torch_and_checked_cpu(case: Any, dtype: type, emulated_cuda: None) -> None:
    arrays = ZS._arrays(case, dtype)
    value, grads, g = _run(case, arrays, "checked_cuda", "cuda")
    cpu_value, cpu_grads, _ = _run(case, arrays, "checked_cpu", "cpu")
    wide = [a.astype(np.float64) if a.dtype == np.float32 else a for a in arrays]
    theirs = [torch.tensor(a, requires_grad=i in case.diff) for i, a in enumerate(wide)]
    expected = ZS._call_torch(case, theirs)
    expected.backward(torch.tensor(g))
    ZS._assert_same(value, expected.detach().numpy(), "value", dtype)
    ZS._assert_same(value, cpu_value, "value against checked_cpu", dtype)
    for i, mine, on_cpu in zip(case.diff, grads, cpu_grads, strict=True):
        want = theirs[i].grad
        assert want is not None
        ZS._assert_same(mine, want.numpy(), f"gradient of input {i}", dtype)
        ZS._assert_same(mine, on_cpu, f"gradient of input {i} against checked_cpu", dtype)


def test_nn_models_on_a_batch_of_zero_under_checked_cuda(emulated_cuda: None) -> None:
    from torchlean.nn.eager import EagerOps

    for name, make, ref, shape in ZS.MODELS:
        model = make()
        x = np.zeros(shape)
        params = [tl.tensor(p, requires_grad=True, device="cuda") for p in model.parameters]
        with tl.session("checked_cuda"):
            out = model.layer.forward(EagerOps(), params, tl.tensor(x, device="cuda"), training=False)
            out.backward(np.ones(out.shape))
        theirs = ZS._torch_params(model)
        expected = ref(theirs, torch.tensor(x))
        expected.backward(torch.ones_like(expected))
        ZS._assert_same(out.numpy(), expected.detach().numpy(), f"{name} value")
        for i, (mine, want) in enumerate(zip(params, theirs, strict=True)):
            assert mine.grad is not None and want.grad is not None
            ZS._assert_same(mine.grad.numpy(), want.grad.numpy(), f"{name} gradient of parameter {i}")


# ------------------------------------------------------------------------------------- refusals


REFUSALS = [*ZS.REFUSALS, *ZS.KEPT_REFUSALS]


@pytest.mark.parametrize("case", REFUSALS, ids=[c.id for c in REFUSALS])
def test_refusals_of_the_cpu_profiles_are_guard_errors_under_checked_cuda(
    case: Any, emulated_cuda: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ZS, "_z", lambda *shape: tl.tensor(np.zeros(shape), dtype=np.float64, device="cuda"))
    with tl.session("checked_cuda"), pytest.raises(GuardError) as refused:
        case.ours()
    assert str(refused.value).startswith("native_cuda."), refused.value
    # refused by the Python guards, not the C++ checks (whose refusals crashed the GPU machine)
    assert "torchlean_native_ext" not in str(refused.value), refused.value


def _t(*shape: int) -> torch.Tensor:
    return torch.zeros(shape, dtype=torch.float64)


NATIVE_REFUSALS: list[tuple[str, Callable[[], object], str]] = [
    (
        "conv-in-channels0",
        lambda: kernels.conv_forward(_t(2, 0, 5), _t(3, 0, 2), _t(3)),
        "native_cuda.conv: x has shape [2, 0, 5] with 0 input channels (accepted: C_in >= 1",
    ),
    (
        "conv-out-channels0",
        lambda: kernels.conv_forward(_t(2, 2, 5), _t(0, 2, 2)),
        "native_cuda.conv: w has shape [0, 2, 2] with an empty axis (accepted: every axis >= 1)",
    ),
    (
        "conv-spatial0-nonempty-batch",
        lambda: kernels.conv_forward(_t(2, 2, 0), _t(3, 2, 1), padding=1),
        "native_cuda.conv: x has shape [2, 2, 0] with an empty axis (accepted: C_in >= 1 and spatial "
        "extents >= 1 unless the batch N is 0",
    ),
    (
        "conv-backward-in-channels0",
        lambda: kernels.conv_backward(_t(2, 3, 4), _t(2, 0, 5), _t(3, 0, 2), out=_t(2, 3, 4)),
        "native_cuda.conv: x has shape [2, 0, 5] with 0 input channels",
    ),
    (
        "conv_transpose-in-channels0",
        lambda: kernels.conv_transpose_forward(_t(2, 0, 5), _t(0, 3, 2)),
        "native_cuda.conv_transpose: x has shape [2, 0, 5] with an empty axis",
    ),
    (
        "conv_transpose-out-channels0",  # was a GuardError quoting ATen's `select(): index 0 out of range`
        lambda: kernels.conv_transpose_forward(_t(0, 2, 5), _t(2, 0, 2)),
        "native_cuda.conv_transpose: w has shape [2, 0, 2] with an empty axis",
    ),
    (
        "conv_transpose-spatial0-nonempty-batch",
        lambda: kernels.conv_transpose_forward(_t(2, 2, 0), _t(2, 3, 2)),
        "native_cuda.conv_transpose: x has shape [2, 2, 0] with an empty axis",
    ),
    (
        "max_pool-channels0",
        lambda: kernels.max_pool_forward(_t(2, 0, 5, 5), kernel_size=2),
        "native_cuda.max_pool: x has shape [2, 0, 5, 5] with an empty axis (accepted: C >= 1 and spatial "
        "extents >= 1; only the batch N may be 0, as PyTorch pools)",
    ),
    (
        "avg_pool-batch0-spatial0-padded",
        lambda: kernels.avg_pool_forward(_t(0, 2, 0), kernel_size=2, padding=1),
        "native_cuda.avg_pool: x has shape [0, 2, 0] with an empty axis",
    ),
    (
        "smooth_max_pool-batch0-spatial0-padded",
        lambda: kernels.smooth_max_pool_forward(_t(0, 2, 0), beta=1.0, kernel_size=2, padding=1),
        "native_cuda.smooth_max_pool: x has shape [0, 2, 0] with an empty axis",
    ),
    (
        "smooth_max_pool-channels0",
        lambda: kernels.smooth_max_pool_forward(_t(2, 0, 4, 4), beta=1.0, kernel_size=2),
        "native_cuda.smooth_max_pool: x has shape [2, 0, 4, 4] with an empty axis",
    ),
    (
        "smooth_max_pool-backward-channels0",
        lambda: kernels.smooth_max_pool_backward(
            _t(2, 0, 2, 2), _t(2, 0, 4, 4), out=_t(2, 0, 2, 2), beta=1.0, kernel_size=2
        ),
        "native_cuda.smooth_max_pool: x has shape [2, 0, 4, 4] with an empty axis",
    ),
    (
        "batch_norm-channels0-with-weight",
        lambda: kernels.batch_norm_forward(_t(2, 0, 3), _t(0), None, None, None, training=True),
        "native_cuda.batch_norm: x has shape [2, 0, 3] with 0 channels and an affine weight or bias",
    ),
    (
        "batch_norm-channels0-with-bias-eval",
        lambda: kernels.batch_norm_forward(_t(2, 0), None, _t(0), _t(0), _t(0), training=False),
        "native_cuda.batch_norm: x has shape [2, 0] with 0 channels and an affine weight or bias",
    ),
    (
        "reshape-infer-beside-zero",
        lambda: kernels.reshape_forward(_t(0, 3), shape=(-1, 0)),
        "native_cuda.reshape: cannot infer the -1 extent of shape [-1, 0] for 0 elements",
    ),
    (
        "fft_fno-length0",
        lambda: kernels.fft_fno_forward(_t(2, 3, 0), _t(1, 3, 4), _t(1, 3, 4)),
        "transform length must be positive",
    ),
    (
        "fft_fno-modes0",
        lambda: kernels.fft_fno_forward(_t(2, 3, 8), _t(0, 3, 4), _t(0, 3, 4)),
        "0 modes requested",
    ),
]


@pytest.mark.parametrize(
    "call, message", [r[1:] for r in NATIVE_REFUSALS], ids=[r[0] for r in NATIVE_REFUSALS]
)
def test_native_guards_refuse_with_the_shape(
    call: Callable[[], object], message: str, emulation: ModuleType
) -> None:
    with pytest.raises(GuardError) as refused:
        call()
    assert message in str(refused.value)


def test_the_extension_refuses_the_same_calls_without_the_python_guards(emulation: ModuleType) -> None:
    """Defence in depth: the C++ entry points (called directly) raise ValueError, never reach ATen
    with these shapes and never abort."""
    calls: list[tuple[Callable[[], object], str]] = [
        (
            lambda: emulation.conv_forward(_t(2, 0, 5), _t(3, 0, 2), _t(3), [1], [0], [1], 1),
            "0 input channels",
        ),
        (
            lambda: emulation.conv_forward(_t(2, 2, 5), _t(0, 2, 2), None, [1], [0], [1], 1),
            "with an empty axis",
        ),
        (
            lambda: emulation.conv_forward(_t(2, 2, 0), _t(3, 2, 1), None, [1], [1], [1], 1),
            "with an empty axis",
        ),
        (
            lambda: emulation.conv_transpose_forward(_t(0, 2, 5), _t(2, 0, 2), None, [1], [0], [0], [1], 1),
            "with an empty axis",
        ),
        (lambda: emulation.max_pool_forward(_t(2, 0, 5, 5), [2, 2], [2, 2], [0, 0], [1, 1]), "empty axis 1"),
        (lambda: emulation.avg_pool_forward(_t(0, 2, 0), [2], [2], [1]), "empty axis 2"),
        (lambda: emulation.smooth_max_pool_forward(_t(2, 0, 4), [2], [2], [0], 1.0, 0), "empty axis 1"),
        (lambda: emulation.smooth_max_pool_forward(_t(0, 4), [2], [2], [0], 1.0, 0), "empty axis 0"),
        (
            lambda: emulation.batch_norm_forward(_t(2, 0, 3), _t(0), None, None, None, 1e-5),
            "with 0 channels and an affine weight or bias",
        ),
    ]
    for call, message in calls:
        with pytest.raises(ValueError, match=message):
            call()


def test_batch_norm_of_an_empty_input_in_the_extension(emulation: ModuleType) -> None:
    """Evaluation mode used to reach ATen's CPU kernel, which divides by the batch size (SIGFPE);
    training mode was refused by ATen. Both give torch's empty result and zero parameter
    gradients."""
    w, b, mean, var = _t(3) + 2.0, _t(3) + 1.0, _t(3), _t(3) + 1.0
    for x in (_t(0, 3), _t(0, 3, 4), _t(2, 3, 0)):
        for stats in ((mean, var), (None, None)):
            out = emulation.batch_norm_forward(x, w, b, *stats, 1e-5)
            assert out.shape == x.shape
            grads = emulation.batch_norm_backward(torch.ones_like(x), x, w, b, *stats, out, 1e-5)
            assert grads[0] is not None and grads[0].shape == x.shape
            assert_array_equal(grads[1].numpy(), np.zeros(3))
            assert_array_equal(grads[2].numpy(), np.zeros(3))
            assert grads[3] is None and grads[4] is None


# ---------------------------------------------------------------- ops without a CPU kernel


def _scan_oracle(a: torch.Tensor, b: torch.Tensor, x: torch.Tensor, h0: torch.Tensor) -> torch.Tensor:
    """``h_t = A(_t) h_{t-1} + B(_t) x_t`` in float64; with no time step x's empty shape."""
    token = a.shape == x.shape
    h, states = h0, []
    for t in range(x.shape[-2]):
        h = (a[..., t, :] if token else a) * h + (b[..., t, :] if token else b) * x[..., t, :]
        states.append(h)
    return torch.stack(states, dim=-2) if states else 0.0 * x


SCAN_SHAPES = [(0, 4, 3), (2, 0, 3), (2, 4, 0), (0, 0, 0), (0, 3), (2, 2, 0, 3), (2, 0, 4, 3)]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("token", [False, True], ids=["shared", "token"])
@pytest.mark.parametrize("shape", SCAN_SHAPES, ids=[str(s) for s in SCAN_SHAPES])
def test_selective_scan_zero_size(
    shape: tuple[int, ...], token: bool, dtype: torch.dtype, emulation: ModuleType
) -> None:
    r = np.random.default_rng(3)
    coefficient = shape if token else shape[-1:]
    arrays = [r.standard_normal(coefficient), r.standard_normal(coefficient), r.standard_normal(shape)]
    arrays.append(r.standard_normal((*shape[:-2], shape[-1])))
    natives = [torch.tensor(a, dtype=dtype) for a in arrays]
    leaves = [t.to(torch.float64).requires_grad_(True) for t in natives]
    out = kernels.selective_scan_forward(*natives)
    want = _scan_oracle(*leaves)
    assert out.shape == want.shape and out.dtype == dtype
    torch.testing.assert_close(out.to(torch.float64), want.detach(), rtol=1e-5, atol=1e-6)
    g = torch.tensor(r.standard_normal(shape), dtype=dtype)
    grads = kernels.selective_scan_backward(g, *natives, out=out)
    expected = torch.autograd.grad(
        want, leaves, g.to(torch.float64), allow_unused=True, materialize_grads=True
    )
    for i, (mine, theirs) in enumerate(zip(grads, expected, strict=True)):
        assert mine is not None and mine.shape == theirs.shape and mine.dtype == dtype, i
        torch.testing.assert_close(mine.to(torch.float64), theirs, rtol=1e-5, atol=1e-6)


FNO_EMPTY = [
    ("batch0", (0, 3, 8), (3, 3, 4)),
    ("in-channels0", (2, 0, 8), (3, 0, 4)),
    ("out-channels0", (2, 3, 8), (3, 3, 0)),
]


@pytest.mark.parametrize("x_shape, w_shape", [c[1:] for c in FNO_EMPTY], ids=[c[0] for c in FNO_EMPTY])
def test_fft_fno_with_an_empty_axis_is_zeros(
    x_shape: tuple[int, ...], w_shape: tuple[int, ...], emulation: ModuleType
) -> None:
    """Hand values: the output ``(B, C_out, n)`` is a sum over no batch entry or no channel, zeros
    (empty when B or C_out is 0); every gradient is zeros of its input's shape. ATen's FFT refuses
    an empty batch (pytorch/pytorch#174984), so the extension computes no transform here."""
    r = np.random.default_rng(5)
    x, wr, wi = (torch.tensor(r.standard_normal(s)) for s in (x_shape, w_shape, w_shape))
    out = kernels.fft_fno_forward(x, wr, wi)
    assert_array_equal(out.numpy(), np.zeros((x_shape[0], w_shape[2], x_shape[2])))
    g = torch.tensor(r.standard_normal(tuple(out.shape)))
    dx, dwr, dwi = kernels.fft_fno_backward(g, x, wr, wi, out=out)
    assert dx is not None and dwr is not None and dwi is not None
    assert_array_equal(dx.numpy(), np.zeros(x_shape))
    assert_array_equal(dwr.numpy(), np.zeros(w_shape))
    assert_array_equal(dwi.numpy(), np.zeros(w_shape))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_seeded_sources_of_an_empty_shape(dtype: torch.dtype, emulation: ModuleType) -> None:
    for shape in [(0,), (0, 3), (2, 0)]:
        u = kernels.rand_uniform_forward(shape=shape, seed=1, counter=0, dtype=dtype)
        m = kernels.bernoulli_mask_forward(shape=shape, keep_prob=0.5, seed=1, counter=0, dtype=dtype)
        assert tuple(u.shape) == tuple(torch.rand(shape).shape) == tuple(m.shape)
        assert u.dtype == m.dtype == dtype


ATTENTION_SHAPES = [
    ("queries0", (2, 0, 4), (2, 3, 4), (2, 3, 5)),
    ("keys0", (2, 3, 4), (2, 0, 4), (2, 0, 5)),
    ("head-dim0", (2, 3, 0), (2, 3, 0), (2, 3, 5)),
    ("value-dim0", (2, 3, 4), (2, 3, 4), (2, 3, 0)),
    ("batch0", (0, 2, 3, 4), (0, 2, 3, 4), (0, 2, 3, 5)),
    ("batch0-broadcast", (0, 3, 4), (1, 3, 4), (1, 3, 5)),
]


@pytest.mark.parametrize("masked", [False, True], ids=["unmasked", "masked"])
@pytest.mark.parametrize("shapes", [s[1:] for s in ATTENTION_SHAPES], ids=[s[0] for s in ATTENTION_SHAPES])
def test_direct_attention_zero_size_matches_torch_sdpa(
    shapes: tuple[tuple[int, ...], ...], masked: bool, emulation: ModuleType
) -> None:
    """``native_cuda.direct_attention`` (the own kernel; ``checked_cuda`` sessions select the
    composed capsule, covered above) against torch SDPA's float64 autograd: empty outputs, a
    query without keys gives zeros, an empty head width gives uniform weights."""
    r = np.random.default_rng(11)
    q, k, v = (torch.tensor(r.standard_normal(s)) for s in shapes)
    mask = torch.ones((q.shape[-2], k.shape[-2]), dtype=torch.bool) if masked else None
    out = kernels.direct_attention(q, k, v, mask)
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
    want = TF.scaled_dot_product_attention(leaves[0], leaves[1], leaves[2], attn_mask=mask)
    torch.testing.assert_close(out, want.detach())
    g = torch.tensor(r.standard_normal(tuple(out.shape)))
    grads = kernels.direct_attention_vjp(g, q, k, v, mask, out=out)
    expected = torch.autograd.grad(want, leaves, g, allow_unused=True, materialize_grads=True)
    for mine, theirs in zip(grads[:3], expected, strict=True):
        assert mine is not None
        torch.testing.assert_close(mine, theirs)
    assert grads[3] is None
