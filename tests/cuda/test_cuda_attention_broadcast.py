"""Broadcast leading axes in the CUDA attention capsules (``native_cuda.direct_attention`` and
``torchlean.composed_attention``), as ``reference.attention`` and torch SDPA accept them.

Oracle: the reference provider's float64 kernels
(``reference.kernels.scaled_dot_product_attention`` and ``..._vjp``, left folds over the
broadcast shapes, gradients reduced to each input's shape). The CUDA linked kernels run on the
host-emulation build (the kernel sources on the CPU) and must agree to 1e-10, forward and
gradients, with shapes that broadcast q ``(2, 1, 5, 4)``, k ``(1, 3, 6, 4)``, v ``(3, 6, 2)`` to
the batch ``(2, 3)``, with and without a broadcast boolean mask holding a fully blocked row;
non-broadcastable leading axes are refused with a ``GuardError`` naming every shape. A
hypothesis property repeats the comparison on random broadcastable shapes; tests marked ``cuda``
repeat it on a real device (skipped without one).
"""

from __future__ import annotations

import math
import re
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import torchlean as tl
from torchlean.autograd import dispatch, storage
from torchlean.backend.capsule import KernelCapsule
from torchlean.backend.errors import GuardError
from torchlean.backend.providers import attention, attention_kernels
from torchlean.backend.providers.linked import LinkedKernel
from torchlean.backend.providers.native_cuda import extension
from torchlean.backend.providers.reference import kernels as reference
from torchlean.backend.vocabulary import BackendOp, Device, Provider

SDPA = BackendOp.SCALED_DOT_PRODUCT_ATTENTION
PROVIDERS = {
    "native_cuda.direct_attention": Provider.NATIVE_CUDA,
    "torchlean.composed_attention": Provider.TORCHLEAN,
}
SHAPES = ((2, 1, 5, 4), (1, 3, 6, 4), (3, 6, 2))
MASK_SHAPES = [None, (5, 6), (2, 1, 5, 6), (3, 5, 6)]
MASK_IDS = ["unmasked", "shared-mask", "batch-mask", "head-mask"]


def _linked(capsule_name: str) -> tuple[LinkedKernel, KernelCapsule]:
    provider = PROVIDERS[capsule_name]
    found = [k for k in dispatch.linked_kernels(SDPA) if k.provider is provider and k.device is Device.CUDA]
    capsule = next(c for c in attention.CAPSULES if c.name == capsule_name)
    assert len(found) == 1 and capsule.provider is provider
    return found[0], capsule


def _mask(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    mask = rng.random(shape) < 0.6
    mask[..., 1, :] = False  # a fully blocked row
    mask[..., 0, 0] = True
    return mask


def _inputs(
    rng: np.random.Generator, shapes: tuple[tuple[int, ...], ...], mask_shape: tuple[int, ...] | None
) -> tuple[np.ndarray | None, ...]:
    q, k, v = (rng.standard_normal(shape) for shape in shapes)
    return (q, k, v, None if mask_shape is None else _mask(rng, mask_shape))


def _on(device: torch.device, a: np.ndarray | None) -> torch.Tensor | None:
    return None if a is None else torch.from_numpy(np.array(a, copy=True)).to(device)


def _host(t: Any) -> np.ndarray:
    assert isinstance(t, torch.Tensor) and t.is_contiguous()
    return storage.to_host(t)


def _assert_matches_reference(
    capsule_name: str,
    inputs: tuple[np.ndarray | None, ...],
    params: dict[str, Any],
    rng: np.random.Generator,
    device: torch.device,
) -> None:
    """The linked CUDA kernel's forward and VJP against the reference kernels in float64."""
    q, k, v, mask = inputs
    assert q is not None and k is not None and v is not None
    linked, capsule = _linked(capsule_name)
    expected = reference.scaled_dot_product_attention(q, k, v, mask, **params)
    natives = tuple(_on(device, a) for a in inputs)
    out = linked.forward(capsule, natives, params)
    got = _host(out)
    assert got.shape == expected.shape and got.dtype == np.float64
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10, err_msg="forward")
    if mask is not None:  # fully blocked rows are zeros
        blocked = ~np.broadcast_to(mask, (*expected.shape[:-1], k.shape[-2])).any(axis=-1)
        assert bool(np.all(got[blocked] == 0.0)), "a fully blocked row is not zeros"
    g = rng.standard_normal(expected.shape)
    want = reference.scaled_dot_product_attention_vjp(g, q, k, v, mask, out=expected, **params)
    assert linked.vjp is not None
    grads = linked.vjp(capsule, _on(device, g), natives, out, params)
    assert len(grads) == 4 and grads[3] is None and want[3] is None
    for name, grad, ref, x in zip("qkv", grads[:3], want[:3], (q, k, v), strict=True):
        assert ref is not None
        value = _host(grad)
        assert value.shape == x.shape, f"d{name} has shape {value.shape}, not {x.shape}"
        np.testing.assert_allclose(value, ref, rtol=1e-10, atol=1e-10, err_msg=f"d{name}")


@pytest.mark.parametrize("capsule_name", list(PROVIDERS))
@pytest.mark.parametrize("mask_shape", MASK_SHAPES, ids=MASK_IDS)
def test_broadcast_leading_axes_match_the_reference(
    emulation: ModuleType, capsule_name: str, mask_shape: tuple[int, ...] | None
) -> None:
    rng = np.random.default_rng([11, len(mask_shape or ()), len(capsule_name)])
    inputs = _inputs(rng, SHAPES, mask_shape)
    _assert_matches_reference(capsule_name, inputs, {}, rng, torch.device("cpu"))


@pytest.mark.parametrize("capsule_name", list(PROVIDERS))
def test_broadcast_with_a_scale_and_non_finite_blocked_queries(
    emulation: ModuleType, capsule_name: str
) -> None:
    """A query row no key may attend holds NaN/inf: it reaches neither the output nor any
    gradient, also when that row is shared by several batch entries."""
    rng = np.random.default_rng(5)
    q, k, v, mask = _inputs(rng, SHAPES, (5, 6))
    assert q is not None
    q[:, :, 1, :] = [np.nan, np.inf, -np.inf, np.nan]  # row 1 is fully blocked
    _assert_matches_reference(capsule_name, (q, k, v, mask), {"scale": 0.3}, rng, torch.device("cpu"))


@pytest.mark.parametrize("capsule_name", list(PROVIDERS))
def test_non_broadcastable_leading_axes_are_refused(emulation: ModuleType, capsule_name: str) -> None:
    linked, capsule = _linked(capsule_name)
    q, k, v = torch.ones(2, 1, 5, 4), torch.ones(3, 3, 6, 4), torch.ones(3, 6, 2)
    message = (
        r"the leading \(batch, head\) axes of q \[2, 1, 5, 4\], k \[3, 3, 6, 4\], v \[3, 6, 2\] do not "
        r"broadcast to one batch shape \(accepted: leading axes that agree or have extent 1"
    )
    with pytest.raises(GuardError, match=message):
        linked.forward(capsule, (q, k, v, None), {})
    g = torch.ones(2, 3, 5, 2)
    assert linked.vjp is not None
    with pytest.raises(GuardError, match=message):
        linked.vjp(capsule, g, (q, k, v, None), g, {})


@pytest.mark.parametrize("capsule_name", list(PROVIDERS))
def test_a_mask_must_broadcast_to_the_broadcast_batch(emulation: ModuleType, capsule_name: str) -> None:
    linked, capsule = _linked(capsule_name)
    q, k, v = torch.ones(2, 1, 5, 4), torch.ones(1, 3, 6, 4), torch.ones(3, 6, 2)
    with pytest.raises(GuardError, match=r"mask of shape \[4, 5, 6\] does not broadcast to \[2, 3, 5, 6\]"):
        linked.forward(capsule, (q, k, v, torch.ones(4, 5, 6, dtype=torch.bool)), {})


def test_composed_guard_returns_the_broadcast_batch() -> None:
    dims = attention_kernels.check_composed_attention(
        torch.ones(*SHAPES[0]), torch.ones(*SHAPES[1]), torch.ones(*SHAPES[2])
    )
    assert (dims.lead, dims.folded, dims.n_q, dims.n_k, dims.d, dims.d_v) == ((2, 3), 6, 5, 6, 4, 2)
    assert (dims.q_shape, dims.k_shape, dims.v_shape) == SHAPES
    with pytest.raises(GuardError, match=r"q has shape \[1, 1, 1, 5, 4\] \(accepted: \(batch, heads, n, d\)"):
        attention_kernels.check_composed_attention(
            torch.ones(1, 1, 1, 5, 4), torch.ones(*SHAPES[1]), torch.ones(*SHAPES[2])
        )


@st.composite
def _broadcast_case(draw: st.DrawFn) -> tuple[tuple[tuple[int, ...], ...], tuple[int, ...] | None]:
    """q, k, v shapes whose leading axes (rank 1 or 2 each, as both capsules accept) broadcast to a
    common batch, and a mask shape broadcastable to the scores (never enlarging them)."""
    batch = draw(st.lists(st.integers(1, 3), min_size=1, max_size=2))
    n_q, n_k, d, d_v = (
        draw(st.integers(2, 4)),
        draw(st.integers(1, 4)),
        draw(st.integers(1, 4)),
        draw(st.integers(1, 4)),
    )

    def lead(full: tuple[int, ...] | list[int], lowest: int) -> tuple[int, ...]:
        rank = draw(st.integers(lowest, len(full)))
        return tuple(e if draw(st.booleans()) else 1 for e in full[len(full) - rank :])

    leads = [lead(batch, 1) for _ in range(3)]
    shapes = ((*leads[0], n_q, d), (*leads[1], n_k, d), (*leads[2], n_k, d_v))
    if not draw(st.booleans()):
        return shapes, None
    return shapes, (*lead(tuple(np.broadcast_shapes(*leads)), 0), n_q, n_k)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=_broadcast_case(), capsule_name=st.sampled_from(list(PROVIDERS)), seed=st.integers(0, 2**16))
def test_random_broadcast_shapes_match_the_reference(
    emulation_module: ModuleType,
    case: tuple[tuple[tuple[int, ...], ...], tuple[int, ...] | None],
    capsule_name: str,
    seed: int,
) -> None:
    shapes, mask_shape = case
    rng = np.random.default_rng(seed)
    with extension.host_emulation():
        _assert_matches_reference(
            capsule_name, _inputs(rng, shapes, mask_shape), {}, rng, torch.device("cpu")
        )


# ------------------------------------------------------------------- the mask's layout (no copies)

# (q, k, v shapes, mask shape): masks the kernel reads at their own size through two runs of
# batch axes and a row stride; the last case varies along three separated runs and is
# materialised to the whole batch, one run
LAYOUT_CASES = {
    "key-padding": (((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 2)), (2, 1, 1, 6)),
    "per-batch": (((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 2)), (2, 1, 5, 6)),
    "per-head": (((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 2)), (3, 5, 6)),
    "per-batch-and-head": (((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 2)), (2, 3, 5, 6)),
    "one-key-column": (((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 2)), (2, 1, 5, 1)),
    "one-row-shared": (((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 2)), (6,)),
    "outer-and-inner-runs": (((2, 3, 2, 5, 4), (2, 3, 2, 6, 4), (2, 3, 2, 6, 2)), (2, 1, 2, 1, 6)),
    "unit-axes-inside-a-run": (((2, 1, 3, 5, 4), (2, 1, 3, 6, 4), (2, 1, 3, 6, 2)), (2, 1, 3, 5, 6)),
    "three-runs": (((2, 2, 2, 2, 2, 3, 2), (2, 2, 2, 2, 2, 4, 2), (1, 4, 2)), (2, 1, 2, 1, 2, 3, 4)),
}
LAYOUTS = {  # (compact mask elements, layout (div0, mod0, stride0, div1, mod1, stride1, row_stride))
    "key-padding": (12, (3, 2, 6, 1, 1, 0, 0)),
    "per-batch": (60, (3, 2, 30, 1, 1, 0, 6)),
    "per-head": (90, (1, 3, 30, 1, 1, 0, 6)),
    "per-batch-and-head": (180, (1, 6, 30, 1, 1, 0, 6)),
    "one-key-column": (60, (3, 2, 30, 1, 1, 0, 6)),
    "one-row-shared": (6, (1, 1, 0, 1, 1, 0, 0)),
    "outer-and-inner-runs": (24, (6, 2, 12, 1, 2, 6, 0)),
    "unit-axes-inside-a-run": (180, (1, 6, 30, 1, 1, 0, 6)),
    "three-runs": (384, (1, 32, 12, 1, 1, 0, 4)),
}


@pytest.mark.parametrize("name", list(LAYOUT_CASES))
def test_a_broadcast_mask_is_read_at_its_own_size(name: str) -> None:
    """A key-padding mask (B, 1, 1, n_k) over (B, H) heads is B * n_k bytes for the kernel (it was
    copied to B * H * n_q * n_k, 16 GiB at n = 16k with 64 heads, in the forward and again in the
    backward); the layout is what csrc/kernels.cuh's attention_mask_offset reads."""
    from torchlean.backend.providers.native_cuda import kernels

    (q_shape, _, _), mask_shape = LAYOUT_CASES[name]
    lead, nq, nk = tuple(q_shape[:-2]), q_shape[-2], LAYOUT_CASES[name][0][1][-2]
    mask = torch.ones(mask_shape, dtype=torch.bool)
    compact, layout = kernels._mask_layout(mask, lead, nq, nk)
    assert (compact.numel(), layout) == LAYOUTS[name]
    assert compact.is_contiguous() and compact.dtype == torch.bool
    # the layout addresses exactly the broadcast mask: batch entry b, row i, key j
    full = torch.broadcast_to(torch.arange(mask.numel()).reshape(mask_shape), (*lead, nq, nk))
    numbered, _ = kernels._mask_layout(torch.arange(mask.numel()).reshape(mask_shape), lead, nq, nk)
    flat = numbered.reshape(-1)
    div0, mod0, stride0, div1, mod1, stride1, row = layout
    for b, entry in enumerate(full.reshape(-1, nq, nk)):
        start = (b // div0) % mod0 * stride0 + (b // div1) % mod1 * stride1
        for i in range(nq):
            assert torch.equal(flat[start + i * row : start + i * row + nk], entry[i]), (b, i)


@pytest.mark.parametrize("name", list(LAYOUT_CASES))
def test_broadcast_mask_layouts_match_the_reference(emulation: ModuleType, name: str) -> None:
    shapes, mask_shape = LAYOUT_CASES[name]
    rng = np.random.default_rng([31, len(name)])
    q, k, v = (rng.standard_normal(shape) for shape in shapes)
    mask = rng.random(mask_shape) < 0.6
    if len(mask_shape) >= 2 and mask_shape[-2] > 1:
        mask[..., 1, :] = False  # a fully blocked row
    _assert_matches_reference("native_cuda.direct_attention", (q, k, v, mask), {}, rng, torch.device("cpu"))


@pytest.mark.parametrize(
    ("lead", "mask_shape"),
    [((2, 0), (2, 1, 5, 6)), ((0, 3), (0, 1, 5, 6)), ((0,), (0, 5, 6)), ((2, 0), (2, 0, 5, 6))],
)
def test_an_empty_batch_with_a_varying_mask_gives_empty_results(
    emulation: ModuleType, lead: tuple[int, ...], mask_shape: tuple[int, ...]
) -> None:
    """As torch SDPA: an empty output and empty gradients (the layout of a run over an empty axis
    had modulus 0, which the extension refused)."""
    from torchlean.backend.providers.native_cuda import kernels

    q, k, v = torch.ones(*lead, 5, 4), torch.ones(*lead, 6, 4), torch.ones(*lead, 6, 2)
    mask = torch.ones(mask_shape, dtype=torch.bool)
    out, lse = kernels.direct_attention_forward(q, k, v, mask)
    assert out.shape == (*lead, 5, 2) and lse.shape == (*lead, 5)
    grads = kernels.direct_attention_backward(torch.ones_like(out), q, k, v, mask, out=out, lse=lse)
    assert [tuple(g.shape) for g in grads[:3]] == [tuple(x.shape) for x in (q, k, v)] and grads[3] is None


def test_the_extension_refuses_a_mask_layout_reading_past_the_mask(emulation: ModuleType) -> None:
    """The C++ entry point checks the layout against the mask's size (overflow-checked) before
    any launch: a Python ValueError, never an out-of-bounds read."""
    q = torch.ones(4, 5, 3, dtype=torch.float64)
    k = torch.ones(4, 6, 3, dtype=torch.float64)
    v = torch.ones(4, 6, 2, dtype=torch.float64)
    mask = torch.ones(2, 6, dtype=torch.bool)
    good = (2, 2, 6, 1, 1, 0, 0)
    out, _ = emulation.direct_attention_forward(q, k, v, mask, good, None, 0)
    assert out.shape == (4, 5, 2)
    for layout, message in [
        ((2, 3, 6, 1, 1, 0, 0), "has 12 elements, but its layout reads element 17 (n_q = 5, n_k = 6)"),
        ((2, 2, 6, 1, 1, 0, 1), "has 12 elements, but its layout reads element 15"),
        ((0, 2, 6, 1, 1, 0, 0), "mask_layout run 0 is div 0, mod 2, stride 6; accepted: div >= 1"),
        ((1, 1, 0, 1, 1, -6, 0), "mask_layout run 1 is div 1, mod 1, stride -6"),
        ((2, 3, 2**62, 1, 1, 0, 0), "mask extent overflows int64"),
        ((2, 2, 6), "mask_layout has 3 entries; accepted: 7"),
    ]:
        with pytest.raises(ValueError, match=re.escape(message)):
            emulation.direct_attention_forward(q, k, v, mask, layout, None, 0)
    # the good layout over a mask one element short reads one past its end (review23 kmut C07: a
    # bound of <= instead of < passed the reads far past the end above)
    with pytest.raises(ValueError, match=re.escape("has 11 elements, but its layout reads element 11")):
        emulation.direct_attention_forward(q, k, v, torch.ones(11, dtype=torch.bool), good, None, 0)


# ------------------------------------------------------------------------------ through a session


def _session_attention(
    profile: str, device: str, inputs: tuple[np.ndarray | None, ...]
) -> tuple[np.ndarray, list[np.ndarray], list[str]]:
    q, k, v, mask = inputs
    with tl.session(profile) as session:
        leaves = [tl.tensor(x, dtype="float64", requires_grad=True, device=device) for x in (q, k, v)]
        out = tl.scaled_dot_product_attention(*leaves, mask)
        weights = tl.tensor(np.linspace(-1.0, 1.0, math.prod(out.shape)).reshape(out.shape), device=device)
        tl.reduce_sum(out * weights).backward()
        selected = [kernel.capsule.name for kernel in session.selected]
    grads = []
    for leaf in leaves:
        assert leaf.grad is not None
        grads.append(leaf.grad.numpy())
    return out.numpy(), grads, selected


@pytest.mark.parametrize(
    ("profile", "capsule_name"),
    [
        ("checked_cuda", "torchlean.composed_attention"),
        ("libtorch_forward_strict", "native_cuda.direct_attention"),
    ],
)
def test_cuda_profiles_broadcast_like_checked_cpu(
    emulated_cuda: None, profile: str, capsule_name: str
) -> None:
    inputs = _inputs(np.random.default_rng(21), SHAPES, (2, 1, 5, 6))
    out, grads, selected = _session_attention(profile, "cuda", inputs)
    cpu_out, cpu_grads, _ = _session_attention("checked_cpu", "cpu", inputs)
    assert capsule_name in selected
    np.testing.assert_allclose(out, cpu_out, rtol=1e-10, atol=1e-10)
    for got, want, x in zip(grads, cpu_grads, inputs, strict=False):
        assert x is not None and got.shape == x.shape
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


# ----------------------------------------------------------------------------- on a CUDA device


@pytest.mark.cuda
@pytest.mark.parametrize("capsule_name", list(PROVIDERS))
@pytest.mark.parametrize("mask_shape", MASK_SHAPES, ids=MASK_IDS)
def test_broadcast_leading_axes_match_the_reference_cuda(
    cuda_device: torch.device, capsule_name: str, mask_shape: tuple[int, ...] | None
) -> None:
    rng = np.random.default_rng([11, len(mask_shape or ()), len(capsule_name)])
    _assert_matches_reference(capsule_name, _inputs(rng, SHAPES, mask_shape), {}, rng, cuda_device)
