"""Native CUDA sources on non-finite inputs and on the 3-d average pool rule, through the host
emulation (csrc/ compiled for the CPU; torchlean's own kernels run by the CUDA emulator).

* ``hard_masked_softmax`` (own kernel, one warp per row, several entries per lane): an allowed
  NaN used to be dropped when a lane's running maximum was still empty (``[1, NaN, 2]`` gave
  finite weights); the spec gives NaN at every allowed entry of such a row and exactly 0 at the
  blocked ones, however the entries are spread over the lanes.
* ``relu`` / ``abs`` / ``max`` / ``min`` / ``inv`` backward (ATen host code of the extension):
  torch autograd's values at NaN and ±inf inputs.
* ``avg_pool`` in 3-d: ATen's ``avg_pool3d`` refuses an unpadded extent below the kernel; the
  extension refuses it first as an argument error (a GuardError naming the shape), like the
  reference guard, and under the ``checked_cuda`` profile the same GuardError as ``checked_cpu``.
* ``max_pool`` with a window of padding only (dilation above the extent): refused like the
  reference guard (ATen's backward would scatter to index -1; the extension used to accept it).
  Random pool geometries agree between ``checked_cuda`` and ``checked_cpu``.

Oracles: ``torchlean.spec`` and torch float64 autograd; hand values.
"""

from __future__ import annotations

import re
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import torch
from numpy.testing import assert_allclose, assert_array_equal

import torchlean as tl
import torchlean.spec as S
from torchlean.backend.errors import GuardError
from torchlean.backend.providers.native_cuda import kernels

Array = np.ndarray[Any, Any]
DTYPES = [torch.float32, torch.float64]


def _where_softmax(x: Array, mask: Array) -> tuple[torch.Tensor, torch.Tensor]:
    """torch float64: ``(leaf, where(mask, softmax(where(mask, x, -inf)), 0))``."""
    leaf = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    allowed = torch.from_numpy(mask)
    scores = torch.where(allowed, leaf, torch.tensor(-np.inf, dtype=torch.float64))
    return leaf, torch.where(allowed, torch.softmax(scores, -1), 0.0)


def _same_pattern(got: Array, want: Array, rtol: float) -> None:
    assert_array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want)
    assert_array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
    assert_allclose(got[finite], want[finite], rtol=rtol, atol=rtol * 1e-2)


def test_hard_masked_softmax_hand_rows_emulated(emulation: ModuleType) -> None:
    rows = [
        ([np.inf, 1.0, 5.0], [True, True, False], [np.nan, np.nan, 0.0]),
        ([np.nan, 1.0, 0.0], [True, False, False], [np.nan, 0.0, 0.0]),
        ([1.0, np.nan, 2.0], [True, True, True], [np.nan, np.nan, np.nan]),  # was finite at 0 and 2
        ([-np.inf, -np.inf, 3.0], [True, True, False], [np.nan, np.nan, 0.0]),
        ([-np.inf, 0.0, np.nan], [True, True, False], [0.0, 1.0, 0.0]),
    ]
    for x, mask, want in rows:
        for dtype in DTYPES:
            got = kernels.hard_masked_softmax_forward(torch.tensor([x], dtype=dtype), torch.tensor([mask]))
            assert_array_equal(got[0].to(torch.float64).numpy(), want)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("width", [3, 33, 70])
def test_hard_masked_softmax_non_finite_rows_match_spec_and_torch_emulated(
    width: int, dtype: torch.dtype, emulation: ModuleType
) -> None:
    """Random rows with NaN/±inf at allowed and blocked entries; widths past one warp put several
    entries in a lane (lane j reads columns j, j + 32, ...)."""
    r = np.random.default_rng(width)
    rows = 40
    x = r.standard_normal((rows, width)) * 3.0
    mask = r.random((rows, width)) < 0.6
    for _ in range(rows):
        x[r.integers(rows), r.integers(width)] = r.choice([np.nan, np.inf, -np.inf])
    x = torch.tensor(x, dtype=dtype).to(torch.float64).numpy()  # the oracle sees the rounded scores
    out = kernels.hard_masked_softmax_forward(torch.tensor(x, dtype=dtype), torch.from_numpy(mask))
    got = out.to(torch.float64).numpy()
    rtol = 1e-5 if dtype == torch.float32 else 1e-12
    assert_array_equal(got[~mask], 0.0)
    _same_pattern(got, S.hard_masked_softmax(x, mask), rtol)
    leaf, want = _where_softmax(x, mask)
    _same_pattern(got, want.detach().numpy(), rtol)
    g = r.standard_normal((rows, width))
    g[~mask] = np.nan  # selected away
    (dx, dmask) = kernels.hard_masked_softmax_backward(
        torch.tensor(g, dtype=dtype), torch.tensor(x, dtype=dtype), torch.from_numpy(mask), out=out
    )
    assert dmask is None and dx is not None
    dx_np = dx.to(torch.float64).numpy()
    assert_array_equal(dx_np[~mask], 0.0)
    want.backward(torch.from_numpy(np.where(mask, g, 0.0)))
    assert leaf.grad is not None
    _same_pattern(dx_np, leaf.grad.numpy(), 100 * rtol)


UNARY = {"relu": torch.relu, "abs": torch.abs, "inv": torch.reciprocal}


@pytest.mark.parametrize("label", list(UNARY))
def test_unary_backward_at_special_values_matches_torch_emulated(label: str, emulation: ModuleType) -> None:
    x = torch.tensor([np.nan, np.nan, np.inf, -np.inf, 0.0, -0.0, -1.5, 2.0, 1e-300], dtype=torch.float64)
    g = torch.tensor([1.0, np.inf, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 0.0], dtype=torch.float64)
    leaf = x.clone().requires_grad_(True)
    out = UNARY[label](leaf)
    out.backward(g)
    assert leaf.grad is not None
    (mine,) = getattr(kernels, f"{label}_backward")(g, x, out=out.detach())
    assert mine is not None
    assert_array_equal(mine.numpy(), leaf.grad.numpy())


@pytest.mark.parametrize("label", ["max", "min"])
def test_extremum_backward_at_nan_gives_g_to_both_emulated(label: str, emulation: ModuleType) -> None:
    """torch.maximum/minimum backward: ties split g, the loser gets 0, a NaN comparison (no loser)
    gives g to both operands."""
    values = torch.tensor([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5], dtype=torch.float64)
    a, b = (t.reshape(-1).contiguous() for t in torch.meshgrid(values, values, indexing="ij"))
    g = torch.full(a.shape, 3.0, dtype=torch.float64)
    ta, tb = a.clone().requires_grad_(True), b.clone().requires_grad_(True)
    out = (torch.maximum if label == "max" else torch.minimum)(ta, tb)
    out.backward(g)
    assert ta.grad is not None and tb.grad is not None
    ga, gb = getattr(kernels, f"{label}_backward")(g, a, b, out=out.detach())
    assert ga is not None and gb is not None
    assert_array_equal(ga.numpy(), ta.grad.numpy())
    assert_array_equal(gb.numpy(), tb.grad.numpy())
    assert ga[0].item() == gb[0].item() == 3.0  # NaN against NaN


def test_avg_pool3d_unpadded_input_below_the_kernel_is_a_guard_error_emulated(emulation: ModuleType) -> None:
    x = torch.ones((1, 1, 1, 3, 3), dtype=torch.float64)
    for call in (
        lambda: kernels.avg_pool_forward(x, kernel_size=(2, 1, 1), stride=1, padding=(1, 0, 0)),
        lambda: kernels.avg_pool_backward(
            torch.ones((1, 1, 2, 3, 3), dtype=torch.float64),
            x,
            out=torch.ones((1, 1, 2, 3, 3), dtype=torch.float64),
            kernel_size=(2, 1, 1),
            stride=1,
            padding=(1, 0, 0),
        ),
    ):
        refusal = (
            r"^native_cuda\.avg_pool: x of shape \[1, 1, 1, 3, 3\] has spatial extents \(1, 3, 3\), "
            r"smaller than kernel_size \(2, 1, 1\) on spatial axis 0"
        )
        with pytest.raises(GuardError, match=refusal):
            call()
    # the 2-d pool accepts the same geometry (torch's rule): (1 + 0.5 padding) -> 0.5 everywhere
    y = kernels.avg_pool_forward(x[:, :, :, 0], kernel_size=(2, 1), stride=1, padding=(1, 0))
    assert_array_equal(y.numpy(), np.full((1, 1, 2, 3), 0.5))


def test_avg_pool3d_rule_agrees_under_checked_cuda_and_checked_cpu(emulated_cuda: None) -> None:
    x = np.ones((1, 1, 1, 3, 3))
    messages = []
    for profile, device in (("checked_cpu", "cpu"), ("checked_cuda", "cuda")):
        with tl.session(profile):
            t = tl.tensor(x, device=device)
            with pytest.raises(GuardError, match=r"smaller than kernel_size") as refused:
                tl.avg_pool(t, (2, 1, 1), 1, (1, 0, 0))
            messages.append(str(refused.value))
    assert "(1, 1, 1, 3, 3)" in messages[0] and "[1, 1, 1, 3, 3]" in messages[1]


def test_max_pool_window_of_padding_only_is_refused_emulated(emulation: ModuleType) -> None:
    """x of extent 2, kernel 2, dilation 3, padding 1: window 0 reads positions -1 and 2, both
    padding (torch's forward gives -inf there)."""
    x = torch.ones((1, 1, 2), dtype=torch.float64)
    with pytest.raises(GuardError, match=r"window 0 on spatial axis 0 covers only padding"):
        kernels.max_pool_forward(x, kernel_size=2, stride=1, padding=1, dilation=3)
    with pytest.raises(GuardError, match=r"window 0 on spatial axis 0 covers only padding"):
        kernels.max_pool_backward(
            torch.ones((1, 1, 1), dtype=torch.float64),
            x,
            out=torch.ones((1, 1, 1), dtype=torch.float64),
            kernel_size=2,
            stride=1,
            padding=1,
            dilation=3,
        )


def _pool(
    profile: str, device: str, op: str, x: Array, kernel: Any, stride: Any, padding: Any, dilation: Any
) -> Any:
    with tl.session(profile):
        t = tl.tensor(x, requires_grad=True, device=device)
        try:
            if op == "max":
                y = tl.max_pool(t, kernel, stride, padding, dilation)
            elif op == "avg":
                y = tl.avg_pool(t, kernel, stride, padding)
            else:
                y = tl.smooth_max_pool(t, kernel, 1.5, stride, padding)
            y.backward(np.ones(y.shape, x.dtype))
        except GuardError as error:
            return GuardError, error
        assert t.grad is not None
        return y.numpy(), t.grad.numpy()


def test_random_pool_geometries_agree_between_checked_cuda_and_checked_cpu(emulated_cuda: None) -> None:
    """Accepted by both with the same values and gradients, or refused by both with a GuardError
    (anything else, e.g. a NativeKernelError carrying torch's message, fails the test)."""
    r = np.random.default_rng(8)
    outcomes = {"ok": 0, "refused": 0}
    for _ in range(300):
        nd = int(r.integers(1, 4))
        op = str(r.choice(["max", "avg", "smooth"]))
        x = r.standard_normal((int(r.integers(0, 3)), 2, *r.integers(1, 7, nd)))
        kernel = tuple(int(v) for v in r.integers(1, 5, nd))
        stride = None if r.random() < 0.2 else tuple(int(v) for v in r.integers(1, 4, nd))
        padding = tuple(int(v) for v in r.integers(0, 3, nd))
        dilation = tuple(int(v) for v in r.integers(1, 4, nd)) if op == "max" else 1
        on_cpu = _pool("checked_cpu", "cpu", op, x, kernel, stride, padding, dilation)
        on_cuda = _pool("checked_cuda", "cuda", op, x, kernel, stride, padding, dilation)
        label = f"{op} x{x.shape} k={kernel} s={stride} p={padding} d={dilation}"
        assert (on_cpu[0] is GuardError) == (on_cuda[0] is GuardError), f"{label}: {on_cpu[1]} / {on_cuda[1]}"
        if on_cpu[0] is GuardError:
            outcomes["refused"] += 1
            continue
        for mine, theirs in zip(on_cuda, on_cpu, strict=True):
            assert_allclose(mine, theirs, rtol=1e-12, atol=1e-14, err_msg=label)
        outcomes["ok"] += 1
    assert min(outcomes.values()) > 50


@pytest.mark.parametrize("eps", [0.0, 1e-50, 1e39, -1e-3])
def test_safe_log_eps_rule_agrees_under_checked_cuda_and_checked_cpu(emulated_cuda: None, eps: float) -> None:
    """review23 fuzz F2: native_cuda.safe_log took eps = 0 and an eps that rounds to 0 or inf in
    float32 (-inf values, NaN gradients) where the CPU providers refuse it. The same words now."""
    x = np.array([-200.0, 0.0, 3.0], np.float32)
    messages = []
    for profile, device in (("checked_cpu", "cpu"), ("fast_cpu", "cpu"), ("checked_cuda", "cuda")):
        with tl.session(profile), pytest.raises(GuardError) as refused:
            tl.safe_log(tl.tensor(x, device=device), eps)
        messages.append(str(refused.value))
    fault = messages[0].removeprefix("safe_log: ")
    assert fault.startswith(f"eps = {eps!r} ")
    assert messages == [f"safe_log: {fault}", f"safe_log: {fault}", f"native_cuda.safe_log: {fault}"]


def test_safe_log_eps_that_float64_keeps_is_accepted_under_checked_cuda(emulated_cuda: None) -> None:
    with tl.session("checked_cuda"):
        x = tl.tensor(np.array([-800.0, 0.0]), device="cuda", requires_grad=True)
        out = tl.safe_log(x, 1e-50)
        out.sum().backward()
        values = out.to("cpu").numpy()
        assert x.grad is not None
        grad = x.grad.to("cpu").numpy()
    # oracle, by hand: softplus(-800) = exp(-800) underflows to 0 in float64, so log(1e-50); log(log 2)
    np.testing.assert_allclose(values, [np.log(1e-50), np.log(np.log(2.0))], rtol=1e-15)
    assert np.isfinite(grad).all()


def test_the_extension_refuses_a_safe_log_eps_of_zero(emulation: ModuleType) -> None:
    refusal = r"^torchlean_native_ext\.safe_log_forward: eps = 0 must be finite and > 0"
    with pytest.raises(ValueError, match=refusal):
        emulation.safe_log_forward(torch.ones(3), 0.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_native_gelu_keeps_the_far_negative_tail(emulation: ModuleType, dtype: type[np.floating]) -> None:
    """review23 fuzz F3: ATen's exact gelu is x * (1 + erf(x / sqrt 2)) / 2, which cancels (17 %
    off at x = -5 in float32, -0.0 from about -6); native_cuda.gelu is x * erfc(-x / sqrt 2) / 2 as
    the reference, erfc in float64. Oracle: mpmath at 50 digits, elementwise: float32 within 4 ulp
    (the reference's error), float64 within a few ulps times the condition number ~ 1 + x**2 of
    the tail (rounding x / sqrt 2 in float64 costs that much in any form)."""
    import mpmath

    xs = [-40.0, -30.0, -10.0, -6.0, -5.5, -5.0, -1.0, -1e-30, 0.0, 0.5, 3.0, 30.0]
    if dtype == np.float32:
        xs = [x for x in xs if x > -13.0]  # below, gelu underflows float32 (|gelu(-13)| ~ 8e-38)
    mpmath.mp.dps = 50

    def phi(v: float) -> Any:
        return mpmath.erfc(-mpmath.mpf(v) / mpmath.sqrt(2)) / 2

    def pdf(v: float) -> Any:
        return mpmath.exp(-mpmath.mpf(v) ** 2 / 2) / mpmath.sqrt(2 * mpmath.pi)

    x = torch.tensor(xs, dtype=torch.float32 if dtype == np.float32 else torch.float64)
    g = torch.ones_like(x)
    with kernels._launch("gelu"):
        out = emulation.gelu_forward(x, "none")
        (dx,) = emulation.gelu_backward(g, x, out, "none")
    want = np.array([float(mpmath.mpf(v) * phi(v)) for v in xs], dtype=dtype)
    want_dx = np.array([float(phi(v) + mpmath.mpf(v) * pdf(v)) for v in xs], dtype=dtype)
    condition = 1 + np.array(xs) ** 2 if dtype == np.float64 else np.ones(len(xs))
    bound = 4 * float(np.finfo(dtype).eps) * condition
    for got, expected in ((out.numpy(), want), (dx.numpy(), want_dx)):
        error = np.abs(got.astype(np.float64) - expected) / np.maximum(np.abs(expected), np.finfo(dtype).tiny)
        assert (error <= bound).all(), (xs, error / bound)
    assert_array_equal(np.signbit(out.numpy()), np.signbit(want))  # no -0.0 for the tail



@pytest.mark.parametrize(("eps", "rounds_to"), [(1e-50, "0.0"), (1e39, "inf")])
def test_safe_log_backward_refuses_an_eps_that_x_dtype_cannot_hold(
    emulation: ModuleType, eps: float, rounds_to: str
) -> None:
    """The backward wrapper checks eps as the forward does (review24 pmut F1: without it,
    ``sigmoid(-200) / (softplus(-200) + 0)`` is 0/0 = NaN in float32; the C++ check sees eps as a
    double and takes it)."""
    x = torch.tensor([-200.0, 0.0, 3.0])
    refusal = f"native_cuda.safe_log: eps = {eps!r} rounds to {rounds_to} in x's dtype float32 (accepted: "
    with pytest.raises(GuardError, match=f"^{re.escape(refusal)}"):
        kernels.safe_log_backward(torch.ones(3), x, out=torch.zeros(3), eps=eps)


def test_native_gelu_tanh_mode_is_torchs(emulation: ModuleType) -> None:
    """``approximate="tanh"`` (direct ``kernels`` calls only: no capsule passes it) is ATen's tanh
    GELU, forward and backward (review24 pmut F3: no test ran it). Oracle: torch's float64
    ``gelu(approximate="tanh")`` and its autograd; the exact form differs by 1.5e-4 at x = 1."""
    x = torch.tensor([1.0, -2.0, 0.0, 5.0, -7.5], dtype=torch.float64)
    g = torch.tensor([1.0, 0.5, -2.0, 1.0, 3.0], dtype=torch.float64)
    out = kernels.gelu_forward(x, approximate="tanh")
    (dx,) = kernels.gelu_backward(g, x, out=out, approximate="tanh")
    tx = x.clone().requires_grad_(True)
    expected = torch.nn.functional.gelu(tx, approximate="tanh")
    expected.backward(g)
    torch.testing.assert_close(out, expected.detach(), rtol=1e-15, atol=0.0)
    torch.testing.assert_close(dx, tx.grad, rtol=1e-14, atol=0.0)
    assert abs(out[0].item() - kernels.gelu_forward(x)[0].item()) > 1e-4  # not the exact form
    mode = r"^native_cuda\.gelu: approximate='erf' \(accepted: 'none', 'tanh'\)"
    with pytest.raises(GuardError, match=mode):
        kernels.gelu_forward(x, approximate="erf")
    # the Python check refuses another dtype first, in the guards' words (pmut K08)
    dtype = r"^native_cuda\.gelu: x has dtype int32 \(accepted: float32, float64\)"
    with pytest.raises(GuardError, match=dtype):
        kernels.gelu_forward(torch.ones(3, dtype=torch.int32))


@pytest.mark.parametrize("eps", [True, "0.1", None])
def test_safe_log_kernels_refuse_an_eps_of_another_type_alike(emulation: ModuleType, eps: object) -> None:
    """review23 diff N2: called directly, native_cuda's safe_log raised a GuardError where the
    reference raises its subclass GuardTypeError (also a TypeError), in other words. (The public
    ``tl.safe_log`` refuses such an eps before either.)"""
    from torchlean.backend.errors import GuardTypeError
    from torchlean.backend.providers.reference import kernels as ref

    with pytest.raises(GuardTypeError) as reference:
        ref.safe_log(np.array([1.0, 2.0]), eps=eps)  # type: ignore[arg-type]
    with pytest.raises(GuardTypeError) as native:
        kernels.safe_log_forward(torch.tensor([1.0, 2.0], dtype=torch.float64), eps=eps)  # type: ignore[arg-type]
    shown = f"{eps!r} of type {type(eps).__name__}"
    assert str(reference.value) == f"safe_log: eps must be a real number; got {shown}"
    assert str(native.value) == f"native_cuda.{reference.value}"


@pytest.mark.parametrize("dtype", DTYPES)
def test_native_sigmoid_and_tanh_backward_hold_in_saturation(
    emulation: ModuleType, dtype: torch.dtype
) -> None:
    """The extension's sigmoid and tanh backward evaluate the reference's rule from x (review166
    F1: ``g * out * (1 - out)`` gave 0 for float32 sigmoid'(20), whose value is 2.06e-9). Oracle:
    the closed forms in float64 at the rounded inputs (exp(-|x|) / (1 + exp(-|x|))^2 and
    1 / cosh(x)^2 have no cancellation), within a few ulp of ``dtype``."""
    x = torch.tensor([-40.0, -20.0, -3.0, 0.0, 0.5, 8.0, 20.0, 40.0], dtype=dtype)
    g = torch.linspace(0.5, 2.0, x.numel(), dtype=dtype)
    wide, cotangent = x.double(), g.double()
    e = torch.exp(-wide.abs())
    sigmoid_slope = cotangent * e / (1 + e) ** 2
    tanh_slope = cotangent / torch.cosh(wide) ** 2
    (d_sigmoid,) = kernels.sigmoid_backward(g, x, out=torch.sigmoid(x))
    (d_tanh,) = kernels.tanh_backward(g, x, out=torch.tanh(x))
    ulp = torch.finfo(dtype).eps
    for got, want in ((d_sigmoid, sigmoid_slope), (d_tanh, tanh_slope)):
        assert (got != 0).all()  # every true value here is a normal number of dtype
        torch.testing.assert_close(got.double(), want, rtol=4 * ulp, atol=0.0)
