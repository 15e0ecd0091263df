"""Pool geometries: the shared guard accepts exactly what torch.nn.functional accepts, and every
CPU profile agrees (same result, or the same GuardError) — nothing raw from torch escapes.

The review found that ``fast_cpu`` (ATen) raised torch's own ``RuntimeError`` ("input image
(T: 1 H: 3 W: 3) smaller than kernel size") for a 3-d ``avg_pool`` whose unpadded input is smaller
than the kernel, while ``checked_cpu`` (reference) computed a result. torch's rule
(``pool3d_shape_check(..., check_input_size=true)``, applied by ``avg_pool3d`` only) is now the
guard's, so both profiles refuse with the same GuardError.

Oracle: torch itself (which geometries ``F.max_pool1d/2d/3d`` and ``F.avg_pool1d/2d/3d`` accept,
forward and backward), hand values, and ``checked_cpu`` against ``fast_cpu``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from numpy.testing import assert_allclose, assert_array_equal

import torchlean as tl
from torchlean.backend.errors import GuardError, TorchLeanError
from torchlean.backend.providers.reference import spatial_guards

Array = np.ndarray[Any, Any]
TORCH_POOLS: dict[tuple[str, int], Callable[..., torch.Tensor]] = {
    ("max", 1): F.max_pool1d,
    ("max", 2): F.max_pool2d,
    ("max", 3): F.max_pool3d,
    ("avg", 1): F.avg_pool1d,
    ("avg", 2): F.avg_pool2d,
    ("avg", 3): F.avg_pool3d,
}
PADDING_ONLY = "covers only padding"


def _torch_accepts(
    op: str,
    shape: tuple[int, ...],
    kernel: tuple[int, ...],
    stride: int,
    padding: tuple[int, ...],
    dilation: int,
    backward: bool,
) -> bool:
    x = torch.ones(shape, dtype=torch.float64, requires_grad=True)
    pool = TORCH_POOLS[op, len(shape) - 2]
    try:
        y = pool(x, kernel, stride, padding, dilation) if op == "max" else pool(x, kernel, stride, padding)
        if backward:
            y.backward(torch.ones_like(y))
    except RuntimeError:
        return False
    return True


def _guard_refusal(
    op: str,
    shape: tuple[int, ...],
    kernel: tuple[int, ...],
    stride: int,
    padding: tuple[int, ...],
    dilation: int,
) -> str | None:
    x = np.zeros(shape)
    try:
        if op == "max":
            spatial_guards.check_max_pool(
                x, kernel_size=kernel, stride=stride, padding=padding, dilation=dilation
            )
        else:
            spatial_guards.check_avg_pool(x, kernel_size=kernel, stride=stride, padding=padding)
    except GuardError as error:
        return str(error)
    return None


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("op", ["avg", "max"])
def test_guard_accepts_exactly_what_torch_accepts(op: str, nd: int) -> None:
    """One spatial axis takes every small (extent, kernel, padding) and the batch is 0 or 1; the
    other axes are valid. The one deliberate difference: a max pool with a window made of padding
    only (dilation above the extent) is refused, where torch's backward would scatter outside the
    input (torch's forward is checked there, not its backward)."""
    dilations = (1, 2, 3) if op == "max" else (1,)
    mismatches = []
    for axis, batch, extent, k, p, stride, dilation in itertools.product(
        range(nd), (0, 1), range(1, 5), range(1, 5), range(3), (1, 2), dilations
    ):
        extents, kernel, padding = [3] * nd, [1] * nd, [0] * nd
        extents[axis], kernel[axis], padding[axis] = extent, k, p
        shape = (batch, 2, *extents)
        args = (tuple(kernel), stride, tuple(padding), dilation)
        refusal = _guard_refusal(op, shape, *args)
        padding_only = refusal is not None and PADDING_ONLY in refusal
        accepted = _torch_accepts(op, shape, *args, backward=not padding_only)
        if accepted != (refusal is None) and not padding_only:
            mismatches.append((shape, args, accepted, refusal))
        if padding_only:
            assert op == "max" and dilation > extent and accepted
    assert not mismatches, mismatches[:5]


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
def test_the_reviews_3d_avg_pool_is_the_same_guard_error_under_both_profiles(profile: str) -> None:
    x = np.ones((1, 1, 1, 3, 3), np.float32)
    with tl.session(profile):
        t = tl.tensor(x, requires_grad=True)
        with pytest.raises(GuardError) as refused:
            tl.avg_pool(t, (2, 1, 1), 1, (1, 0, 0))
        # the 2-d pool over the same (1, 3) plane is accepted, as torch: a window holds one input
        # and one padding zero, 0.5 everywhere (count_include_pad); each input is in 2 windows
        flat = tl.tensor(x[:, :, :, 0], requires_grad=True)
        y = tl.avg_pool(flat, (2, 1), 1, (1, 0))
        y.backward(np.ones(y.shape, np.float32))
        assert flat.grad is not None
        assert_array_equal(y.numpy(), np.full((1, 1, 2, 3), 0.5, np.float32))
        assert_array_equal(flat.grad.numpy(), np.full((1, 1, 1, 3), 1.0, np.float32))
    message = str(refused.value)
    assert message.startswith("avg_pool: x of shape (1, 1, 1, 3, 3) has spatial extents (1, 3, 3)")
    assert "spatial axis 0 (1 < 2)" in message and "avg_pool3d" in message


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
def test_a_max_pool_window_of_padding_only_never_reaches_torch(profile: str) -> None:
    """review206: torch 2.13's ``max_pool1d`` accepts a window made of padding only (dilation 4 over
    3 inputs) and its backward then writes outside the input; the process later died in malloc.
    ``fast_cpu`` runs torch's kernel, so the shared guard's refusal, before anything runs, is what
    keeps it safe: do not loosen it to match torch."""
    x = np.arange(2 * 3, dtype=np.float32).reshape(1, 2, 3)
    with tl.session(profile):
        t = tl.tensor(x, requires_grad=True)
        with pytest.raises(GuardError, match=r"^max_pool: window 0 on spatial axis 0 covers only padding"):
            tl.max_pool(t, 2, 1, 1, 4)
        assert t.grad is None


def _run(profile: str, op: str, x: Array, kernel: Any, stride: Any, padding: Any, dilation: Any) -> Any:
    with tl.session(profile):
        t = tl.tensor(x, requires_grad=True)
        try:
            if op == "max":
                y = tl.max_pool(t, kernel, stride, padding, dilation)
            elif op == "avg":
                y = tl.avg_pool(t, kernel, stride, padding)
            else:
                y = tl.smooth_max_pool(t, kernel, 1.5, stride, padding)
            y.backward(np.ones(y.shape, x.dtype))
        except TorchLeanError as error:
            return type(error), str(error)
        assert t.grad is not None
        return y.numpy(), t.grad.numpy()


def test_random_pool_geometries_agree_between_checked_cpu_and_fast_cpu() -> None:
    """1-3 spatial axes, per-axis extents, kernels, strides (or None), padding and dilation, empty
    batches, both dtypes: the same values and gradients, or the same TorchLeanError (a raw torch
    exception would fail the test)."""
    r = np.random.default_rng(6)
    outcomes = {"ok": 0, "refused": 0}
    for _ in range(600):
        nd = int(r.integers(1, 4))
        op = str(r.choice(["max", "avg", "smooth"]))
        dtype = np.float32 if r.random() < 0.5 else np.float64
        x = r.standard_normal((int(r.integers(0, 3)), 2, *r.integers(1, 7, nd))).astype(dtype)
        kernel = tuple(int(v) for v in r.integers(1, 5, nd))
        stride = None if r.random() < 0.2 else tuple(int(v) for v in r.integers(1, 4, nd))
        padding = tuple(int(v) for v in r.integers(0, 3, nd))
        dilation = tuple(int(v) for v in r.integers(1, 4, nd)) if op == "max" else 1
        checked = _run("checked_cpu", op, x, kernel, stride, padding, dilation)
        fast = _run("fast_cpu", op, x, kernel, stride, padding, dilation)
        label = f"{op} x{x.shape} {dtype.__name__} k={kernel} s={stride} p={padding} d={dilation}"
        if isinstance(checked[0], type):
            assert fast == checked, label
            outcomes["refused"] += 1
            continue
        assert not isinstance(fast[0], type), f"{label}: fast_cpu refused: {fast}"
        tol = 1e-5 if dtype == np.float32 else 1e-12
        for mine, theirs in zip(fast, checked, strict=True):
            assert_allclose(mine, theirs, rtol=tol, atol=tol, err_msg=label)
        outcomes["ok"] += 1
    assert min(outcomes.values()) > 100  # both kinds of outcome are exercised
