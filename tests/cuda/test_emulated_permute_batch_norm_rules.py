"""Two parameter rules where the native CUDA provider used to refuse what the reference accepts,
through the host emulation (csrc/ compiled for the CPU):

* ``permute`` with negative axes (counted from the end, as ``torch.permute`` and
  ``reference.guards.check_permute``): the native guard normalises them before the extension
  (which takes axes in ``0..rank-1``) and refuses what the reference refuses (an entry out of
  ``[-rank, rank)``, an axis named twice once normalised, a non-integer entry);
* ``batch_norm``'s eps: PyTorch's ``torch.nn.functional.batch_norm`` refuses ``eps <= 0`` in
  training and accepts ``eps = 0`` in eval; the reference guard ``spatial_guards.check_batch_norm``
  and the native guard apply that rule (the native guard and the extension used to refuse eps = 0
  in eval; ``fast_cpu`` leaked torch's ValueError for eps = 0 in training), with eps ``>= 0`` as
  given and finite in x's dtype, and in training ``> 0`` in x's dtype (``1e-50`` rounds to 0 in
  float32, which the kernels would add).

Oracles: torch float64 (``permute``, ``batch_norm`` with autograd), the reference kernels and the
``checked_cpu`` profile; refusals are the same error class under ``checked_cuda`` and
``checked_cpu``.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from numpy.testing import assert_allclose, assert_array_equal

import torchlean as tl
from torchlean.backend.errors import GuardError, GuardTypeError
from torchlean.backend.providers.native_cuda import kernels
from torchlean.backend.providers.reference import kernels as ref
from torchlean.backend.providers.reference import spatial as ref_spatial

Array = np.ndarray[Any, Any]

# ------------------------------------------------------------------------------------- permute

NEGATIVE_PERMS = [(-1, 0, 1), (2, -3, -2), (-3, -2, -1), (-1, -2, -3)]


@pytest.mark.parametrize("perm", NEGATIVE_PERMS, ids=str)
def test_permute_negative_axes_match_torch_and_the_reference_emulated(
    perm: tuple[int, ...], emulation: ModuleType
) -> None:
    r = np.random.default_rng(abs(hash(perm)) % 1000)
    x = r.standard_normal((2, 3, 4))
    out = kernels.permute_forward(torch.tensor(x), perm=perm)
    want = torch.tensor(x).permute(perm)
    assert_array_equal(out.numpy(), want.numpy())
    assert_array_equal(out.numpy(), ref.permute(x, perm=perm))
    g = r.standard_normal(tuple(want.shape))
    (dx,) = kernels.permute_backward(torch.tensor(g), torch.tensor(x), out=out, perm=perm)
    assert dx is not None
    leaf = torch.tensor(x, requires_grad=True)
    (torch_dx,) = torch.autograd.grad(leaf.permute(perm), [leaf], torch.tensor(g))
    assert_array_equal(dx.numpy(), torch_dx.numpy())
    (ref_dx,) = ref.permute_vjp(g, x, out=ref.permute(x, perm=perm), perm=perm)
    assert_array_equal(dx.numpy(), ref_dx)


def test_permute_of_a_scalar_emulated(emulation: ModuleType) -> None:
    out = kernels.permute_forward(torch.tensor(2.5, dtype=torch.float64), perm=())
    assert out.shape == () and out.item() == 2.5


@pytest.mark.parametrize(
    ("perm", "error"),
    [
        ((0, 1, 3), GuardError),  # out of range
        ((-4, 0, 1), GuardError),  # out of range from the end
        ((0, -3, 1), GuardError),  # axis 0 twice once normalised
        ((0, 1), GuardError),  # too few entries
        ((0, 1.0, 2), GuardTypeError),  # not an integer
        ((0, True, 2), GuardTypeError),  # a bool is not an axis
    ],
    ids=["beyond-rank", "below-minus-rank", "repeated-after-normalising", "short", "float", "bool"],
)
def test_permute_refuses_what_the_reference_refuses_emulated(
    perm: tuple[Any, ...], error: type[GuardError], emulation: ModuleType
) -> None:
    x = np.zeros((2, 3, 4))
    with pytest.raises(error) as native:
        kernels.permute_forward(torch.tensor(x), perm=perm)
    assert "native_cuda.permute" in str(native.value) and "perm" in str(native.value)
    with pytest.raises(error):
        kernels.permute_backward(
            torch.zeros(4, 3, 2, dtype=torch.float64),
            torch.tensor(x),
            out=torch.zeros(4, 3, 2, dtype=torch.float64),
            perm=perm,
        )
    with pytest.raises(error):
        ref.permute(x, perm=perm)


@pytest.mark.parametrize("perm", NEGATIVE_PERMS, ids=str)
def test_permute_checked_cuda_agrees_with_checked_cpu(perm: tuple[int, ...], emulated_cuda: None) -> None:
    r = np.random.default_rng(3)
    x = r.standard_normal((2, 3, 4))
    g = r.standard_normal(tuple(torch.tensor(x).permute(perm).shape))
    results = []
    for profile, device in (("checked_cuda", "cuda"), ("checked_cpu", "cpu")):
        with tl.session(profile) as session:
            leaf = tl.tensor(x, dtype="float64", requires_grad=True, device=device)
            y = tl.permute(leaf, perm)
            y.backward(g)
            names = [kernel.capsule.name for kernel in session.selected]
        assert leaf.grad is not None
        results.append((y.numpy(), leaf.grad.numpy(), names))
    (out, dx, names), (cpu_out, cpu_dx, _) = results
    assert "native_cuda.permute" in names
    assert_array_equal(out, cpu_out)
    assert_array_equal(dx, cpu_dx)


def test_permute_refusal_is_the_same_under_checked_cuda_and_checked_cpu(emulated_cuda: None) -> None:
    for profile, device in (("checked_cuda", "cuda"), ("checked_cpu", "cpu")):
        with tl.session(profile):
            x = tl.tensor(np.zeros((2, 3)), dtype="float64", device=device)
            with pytest.raises(GuardError):
                tl.permute(x, (0, -2))
            assert tl.permute(x, (-1, -2)).shape == (3, 2)


# ----------------------------------------------------------------------------------- batch_norm


def _batch_norm_inputs(r: np.random.Generator) -> tuple[Array, ...]:
    x = r.standard_normal((4, 3, 5))
    weight, bias, mean = (r.standard_normal(3) for _ in range(3))
    var = r.uniform(0.5, 2.0, 3)
    return x, weight, bias, mean, var


def test_torch_batch_norm_eps_zero_rule_by_version() -> None:
    """The rule every provider follows is torch 2.13's functional batch_norm: eps <= 0 refused in
    training, eps = 0 accepted in eval. torch 2.11's refuses it in eval too (seen on the GPU
    machine; 2.12 not checked), whence the providers call the ATen op ``torch.batch_norm``, which
    has no eps check."""
    x = torch.ones(4, 3, 2, dtype=torch.float64)
    stats = torch.zeros(3, dtype=torch.float64), torch.full((3,), 4.0, dtype=torch.float64)
    if _torch_version() < (2, 13):
        with pytest.raises(ValueError, match="batch_norm eps must be positive"):
            TF.batch_norm(x, *stats, training=False, eps=0.0)
    else:
        with pytest.raises(ValueError, match="eps must be positive during training"):
            TF.batch_norm(x, None, None, training=True, eps=0.0)
        assert_allclose(TF.batch_norm(x, *stats, training=False, eps=0.0).numpy(), np.full((4, 3, 2), 0.5))
    assert_allclose(
        torch.batch_norm(x, None, None, *stats, False, 0.0, 0.0, False).numpy(), np.full((4, 3, 2), 0.5)
    )


def _torch_version() -> tuple[int, int]:
    major, minor = torch.__version__.split(".")[:2]
    return int(major), int(minor)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_batch_norm_eval_eps_zero_matches_torch_emulated(dtype: torch.dtype, emulation: ModuleType) -> None:
    r = np.random.default_rng(1)
    x, weight, bias, mean, var = (torch.tensor(a, dtype=dtype) for a in _batch_norm_inputs(r))
    out = kernels.batch_norm_forward(x, weight, bias, mean, var, training=False, eps=0.0)
    leaves = [t.to(torch.float64, copy=True).requires_grad_(True) for t in (x, weight, bias)]
    running = mean.to(torch.float64), var.to(torch.float64)
    channel = (1, -1, 1)  # by hand: torch 2.11's TF.batch_norm refuses eps = 0 in eval
    want = (leaves[0] - running[0].view(channel)) / running[1].sqrt().view(channel) * leaves[1].view(
        channel
    ) + leaves[2].view(channel)
    tolerance = 1e-5 if dtype == torch.float32 else 1e-12
    assert_allclose(out.to(torch.float64).numpy(), want.detach().numpy(), rtol=tolerance, atol=tolerance)
    g = torch.tensor(r.standard_normal(tuple(x.shape)), dtype=dtype)
    grads = kernels.batch_norm_backward(g, x, weight, bias, mean, var, out=out, training=False, eps=0.0)
    expected = torch.autograd.grad(want, leaves, g.to(torch.float64))
    for mine, theirs in zip(grads[:3], expected, strict=True):
        assert mine is not None
        assert_allclose(
            mine.to(torch.float64).numpy(), theirs.numpy(), rtol=tolerance, atol=tolerance
        )
    assert grads[3] is None and grads[4] is None


@pytest.mark.parametrize(
    ("eps", "dtype", "training", "error"),
    [
        (-1e-5, torch.float64, False, GuardError),
        (float("inf"), torch.float64, True, GuardError),
        (float("nan"), torch.float64, False, GuardError),
        (1e300, torch.float32, True, GuardError),  # finite in float64, not once rounded to float32
        (True, torch.float64, True, GuardTypeError),
        (-1e-50, torch.float64, False, GuardError),
        (-1e-50, torch.float32, False, GuardError),  # negative as given (PyTorch), -0.0 in float32
        (-1e-50, torch.float32, True, GuardError),
        (0, torch.float64, True, GuardError),  # PyTorch: eps must be positive during training
        (0, torch.float64, False, None),
        (1e-50, torch.float32, True, GuardError),  # positive, but the kernels would add 0
        (1e-50, torch.float32, False, None),  # eval takes 0
        (1e300, torch.float64, True, None),
    ],
    ids=[
        "negative",
        "inf",
        "nan",
        "overflows-float32",
        "bool",
        "tiny-negative-f64",
        "tiny-negative-f32-eval",
        "tiny-negative-f32-training",
        "zero-training",
        "zero-eval",
        "tiny-positive-f32-training",
        "tiny-positive-f32-eval",
        "huge-f64",
    ],
)
def test_batch_norm_eps_rule_is_the_reference_guards_emulated(
    eps: Any, dtype: torch.dtype, training: bool, error: type[GuardError] | None, emulation: ModuleType
) -> None:
    r = np.random.default_rng(2)
    x, weight, bias, mean, var = _batch_norm_inputs(r)
    numpy_dtype = np.float32 if dtype == torch.float32 else np.float64
    arrays = [a.astype(numpy_dtype) for a in (x, weight, bias, mean, var)]
    running = (arrays[3], arrays[4]) if not training else (None, None)
    xt, wt, bt = (torch.from_numpy(a) for a in arrays[:3])
    rm, rv = (None, None) if training else (torch.from_numpy(arrays[3]), torch.from_numpy(arrays[4]))

    def native() -> torch.Tensor:
        return kernels.batch_norm_forward(xt, wt, bt, rm, rv, training=training, eps=eps)

    def native_backward() -> object:
        out = kernels.batch_norm_forward(xt, wt, bt, rm, rv, training=training, eps=1e-5)
        return kernels.batch_norm_backward(xt, xt, wt, bt, rm, rv, out=out, training=training, eps=eps)

    def reference() -> Array:
        return ref_spatial.batch_norm(arrays[0], arrays[1], arrays[2], *running, training=training, eps=eps)

    if error is None:
        got, want = native().to(torch.float64).numpy(), reference().astype(np.float64)
        tolerance = 1e-5 if dtype == torch.float32 else 1e-12
        assert_allclose(got, want, rtol=tolerance, atol=tolerance)
        native_backward()
        return
    for call in (native, native_backward, reference):
        with pytest.raises(error):
            call()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batch_norm_eval_eps_zero_checked_cuda_agrees_with_checked_cpu(
    dtype: str, emulated_cuda: None
) -> None:
    r = np.random.default_rng(5)
    x, weight, bias, mean, var = _batch_norm_inputs(r)
    g = np.asarray(r.standard_normal(x.shape)).astype(dtype)
    results = []
    for profile, device in (("checked_cuda", "cuda"), ("checked_cpu", "cpu")):
        with tl.session(profile) as session:
            leaves = [tl.tensor(a, dtype=dtype, requires_grad=True, device=device) for a in (x, weight, bias)]
            rm, rv = (tl.tensor(a, dtype=dtype, device=device) for a in (mean, var))
            y = tl.batch_norm(
                leaves[0], weight=leaves[1], bias=leaves[2], running_mean=rm, running_var=rv, training=False,
                eps=0.0,
            )
            y.backward(g)
            names = [kernel.capsule.name for kernel in session.selected]
        grads = []
        for leaf in leaves:
            assert leaf.grad is not None
            grads.append(leaf.grad.numpy().astype(np.float64))
        results.append((y.numpy().astype(np.float64), grads, names))
    (out, grads, names), (cpu_out, cpu_grads, _) = results
    assert "native_cuda.batch_norm" in names
    tolerance = 1e-4 if dtype == "float32" else 1e-10
    assert_allclose(out, cpu_out, rtol=tolerance, atol=tolerance)
    for mine, theirs in zip(grads, cpu_grads, strict=True):
        assert_allclose(mine, theirs, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("eps", [-1e-3, 0.0], ids=["negative", "zero-in-training"])
def test_batch_norm_training_eps_refusal_is_the_same_under_every_cpu_and_cuda_profile(
    eps: float, emulated_cuda: None
) -> None:
    x = np.random.default_rng(6).standard_normal((4, 3, 2))
    for profile, device in (("checked_cuda", "cuda"), ("checked_cpu", "cpu"), ("fast_cpu", "cpu")):
        with tl.session(profile), pytest.raises(GuardError, match="eps"):
            tl.batch_norm(tl.tensor(x, dtype="float64", device=device), training=True, eps=eps)


@pytest.mark.parametrize(
    ("eps", "training"), [(1e-50, True), (-1e-50, False)], ids=["rounds-to-0", "tiny-negative"]
)
def test_float32_eps_edges_are_refused_alike_under_every_cpu_and_cuda_profile(
    eps: float, training: bool, emulated_cuda: None
) -> None:
    """In float32 ``1e-50`` rounds to 0 (the kernels would add 0 in training: NaN under the
    reference, 0 under ATen, the bias under native) and ``-1e-50`` to ``-0.0`` (torch refuses it
    as negative: ``fast_cpu`` leaked that ``ValueError`` in eval)."""
    x = np.random.default_rng(7).standard_normal((4, 3, 2))
    x[:, 1] = 2.0  # a channel of zero batch variance
    stats = (np.zeros(3), np.ones(3))
    for profile, device in (("checked_cuda", "cuda"), ("checked_cpu", "cpu"), ("fast_cpu", "cpu")):
        rm, rv = (None, None) if training else (tl.tensor(a, dtype="float32", device=device) for a in stats)
        with tl.session(profile), pytest.raises(GuardError, match="eps"):
            tl.batch_norm(
                tl.tensor(x, dtype="float32", device=device),
                running_mean=rm,
                running_var=rv,
                training=training,
                eps=eps,
            )


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_layer_norm_eps_zero_checked_cuda_agrees_with_checked_cpu(dtype: str, emulated_cuda: None) -> None:
    """eps = 0 is accepted as by the reference guard and torch's layer_norm (it was refused:
    "must be finite and > 0"); values and gradients agree on rows of nonzero variance."""
    r = np.random.default_rng(8)
    x, weight, bias = r.standard_normal((3, 4, 5)), r.standard_normal(5), r.standard_normal(5)
    g = r.standard_normal(x.shape).astype(dtype)
    results = []
    for profile, device in (("checked_cuda", "cuda"), ("checked_cpu", "cpu")):
        with tl.session(profile) as session:
            leaves = [tl.tensor(a, dtype=dtype, requires_grad=True, device=device) for a in (x, weight, bias)]
            y = tl.layer_norm(leaves[0], leaves[1], leaves[2], eps=0.0)
            y.backward(g)
            names = [kernel.capsule.name for kernel in session.selected]
        grads = [np.asarray(leaf.grad.numpy(), dtype=np.float64) for leaf in leaves if leaf.grad is not None]
        results.append((y.numpy().astype(np.float64), grads, names))
    (out, grads, names), (cpu_out, cpu_grads, _) = results
    assert "native_cuda.layer_norm" in names and len(grads) == len(cpu_grads) == 3
    expected = torch.nn.functional.layer_norm(
        torch.from_numpy(x), (5,), torch.from_numpy(weight), torch.from_numpy(bias), eps=0.0
    ).numpy()
    tolerance = 1e-4 if dtype == "float32" else 1e-10
    assert_allclose(out, expected, rtol=tolerance, atol=tolerance)
    assert_allclose(out, cpu_out, rtol=tolerance, atol=tolerance)
    for mine, theirs in zip(grads, cpu_grads, strict=True):
        assert_allclose(mine, theirs, rtol=tolerance, atol=tolerance)
    with tl.session("checked_cuda"), pytest.raises(GuardError, match="eps"):
        tl.layer_norm(tl.tensor(x, dtype=dtype, device="cuda"), eps=-1e-3)
