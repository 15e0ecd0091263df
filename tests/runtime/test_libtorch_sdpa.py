"""The LibTorch SDPA forward bridge on cpu: selection by profile, forward values, TorchLean's own
backward, blocked rows, non-finite values at blocked positions, and its three guards.

Oracles: the reference attention capsule (``reference.attention``), ``torch.autograd`` through
``torch.nn.functional.scaled_dot_product_attention`` (the TorchLean gradient must equal it),
hand-built inputs for blocked rows.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import torchlean as tl
from torchlean.backend import profiles
from torchlean.backend.errors import GuardError
from torchlean.backend.policy import KernelPolicy
from torchlean.backend.providers.libtorch import sdpa
from torchlean.backend.providers.libtorch.capsules import SDPA_FORWARD_CPU
from torchlean.backend.vocabulary import Device, VJPMode

Array = np.ndarray[Any, Any]
MASK = np.array(
    [[True, False, True, True, False], [False, False, False, False, False], [True, True, True, False, True]]
)


def _qkv(seed: int, dtype: type = np.float32, batch: tuple[int, ...] = (2,)) -> list[Array]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((*batch, n, d)).astype(dtype) for n, d in ((3, 4), (5, 4), (5, 6))]


def _attention(
    profile: str, arrays: list[Array], mask: Array | None
) -> tuple[tl.Tensor, list[tl.Tensor], str]:
    inputs = [tl.tensor(a, requires_grad=True) for a in arrays]
    with tl.session(profile) as s:
        out = tl.scaled_dot_product_attention(*inputs, mask=mask)
    selected = [k.capsule.name for k in s.selected]
    assert len(selected) == 1
    return out, inputs, selected[0]


@pytest.mark.parametrize(
    ("profile", "capsule"),
    [
        ("libtorch_forward_cpu", "libtorch.sdpa_forward"),
        ("libtorch_forward_strict_cpu", "reference.attention"),
        ("checked_cpu", "reference.attention"),
    ],
)
def test_profile_decides_the_attention_capsule(profile: str, capsule: str) -> None:
    _, _, selected = _attention(profile, _qkv(0), MASK)
    assert selected == capsule


def test_checked_policy_rejects_the_bridge_on_its_value_evidence() -> None:
    plan = profiles.get("libtorch_forward_cpu").plan_ops([SDPA_FORWARD_CPU.op])
    check = plan.audit().check_contracts(profiles.get("checked_cpu").policy.assurance)
    assert not check.accepted
    assert [r.obligation.label for r in check.rejected] == ["value"]


@pytest.mark.parametrize("mask", [None, MASK], ids=["unmasked", "masked"])
def test_forward_equals_reference_attention_float32(mask: Array | None) -> None:
    arrays = _qkv(1)
    bridge, _, name = _attention("libtorch_forward_cpu", arrays, mask)
    reference, _, ref_name = _attention("checked_cpu", arrays, mask)
    assert (name, ref_name) == ("libtorch.sdpa_forward", "reference.attention")
    assert bridge.dtype == np.float32
    np.testing.assert_allclose(bridge.numpy(), reference.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mask", [None, MASK], ids=["unmasked", "masked"])
def test_gradients_by_torchlean_rule_equal_torch_autograd(mask: Array | None) -> None:
    arrays = _qkv(2)
    out, inputs, _ = _attention("libtorch_forward_cpu", arrays, mask)
    g = np.random.default_rng(3).standard_normal(out.shape).astype(np.float32)
    out.backward(g)
    t_inputs = [torch.tensor(a, requires_grad=True) for a in arrays]
    t_mask = None if mask is None else torch.tensor(mask)
    t_out = TF.scaled_dot_product_attention(*t_inputs, attn_mask=t_mask)
    t_out.backward(torch.tensor(g))
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-5, atol=1e-5)
    for mine, theirs in zip(inputs, t_inputs, strict=True):
        assert mine.grad is not None and theirs.grad is not None
        np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_backward_is_torchleans_not_torch_autograd(monkeypatch: pytest.MonkeyPatch) -> None:
    from torchlean.backend.providers.reference import kernels

    calls: list[int] = []
    original = kernels.scaled_dot_product_attention_vjp

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(kernels, "scaled_dot_product_attention_vjp", spy)
    out, _, _ = _attention("libtorch_forward_cpu", _qkv(4), MASK)
    assert out.grad_fn == "scaled_dot_product_attention"
    out.backward(np.ones(out.shape, dtype=np.float32))
    assert calls == [1]


def test_fully_blocked_row_gives_zero_output_and_zero_gradients() -> None:
    out, inputs, _ = _attention("libtorch_forward_cpu", _qkv(5), MASK)
    assert np.all(out.numpy()[:, 1] == 0.0)
    out.backward(np.ones(out.shape, dtype=np.float32))
    q_grad = inputs[0].grad
    assert q_grad is not None
    assert np.all(q_grad.numpy()[:, 1] == 0.0)
    all_blocked = np.zeros((3, 5), dtype=bool)
    out2, inputs2, _ = _attention("libtorch_forward_cpu", _qkv(6), all_blocked)
    assert np.all(out2.numpy() == 0.0)
    out2.backward(np.ones(out2.shape, dtype=np.float32))
    for t in inputs2:
        assert t.grad is not None and np.all(t.grad.numpy() == 0.0)


def test_non_finite_keys_at_blocked_positions_do_not_leak() -> None:
    q, k, v = _qkv(7, batch=())
    k[1, 0] = np.nan  # key 1 is blocked for every query of MASK
    v[4, 2] = np.inf  # key 4 is allowed only for query 2
    out = sdpa.scaled_dot_product_attention(q, k, v, MASK)
    assert np.all(np.isfinite(out[0])) and np.all(out[1] == 0.0)
    assert not np.all(np.isfinite(out[2]))
    clean_k, clean_v = k.copy(), v.copy()
    clean_k[1] = 0.0
    clean_v[4] = 0.0
    from torchlean.backend.providers.reference import kernels

    expected = kernels.scaled_dot_product_attention(q, clean_k, clean_v, MASK)
    np.testing.assert_allclose(out[0], expected[0], rtol=1e-5, atol=1e-6)


def _attended_rows_oracle(q: Array, k: Array, v: Array, mask: Array, scale: float) -> Array:
    """Each query row from the keys it attends only (float64 numpy; blocked keys never read)."""
    out = np.zeros((*q.shape[:-1], v.shape[-1]))
    for index in np.ndindex(*q.shape[:-1]):
        *b, i = index
        attend = mask[(*b, i)]
        if not attend.any():
            continue
        keys, values = k[(*b,)][attend], v[(*b,)][attend]
        with np.errstate(invalid="ignore", over="ignore"):
            scores = keys @ q[index] * scale
            weights = np.exp(scores - scores.max())
            out[index] = (weights / weights.sum()) @ values
    return out


@pytest.mark.parametrize("storage", ["numpy", "torch"])
@pytest.mark.parametrize("chunk", [1, 3, 1 << 22])
def test_rows_attending_a_non_finite_key_ignore_the_non_finite_keys_they_block(
    monkeypatch: pytest.MonkeyPatch, chunk: int, storage: str
) -> None:
    """A query row that attends a non-finite value row is recomputed by torch; a non-finite key it
    *blocks* must not turn its masked score into ``inf + (-inf) = NaN`` (torch's boolean mask is an
    additive ``-inf``). Chunked recomputation gives the same rows; the device bridge
    (``device_attention``, here on CPU torch tensors) shares the path."""
    monkeypatch.setattr(sdpa, "_REPAIR_CHUNK", chunk)
    rng = np.random.default_rng(21)
    q, k, v = rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 5, 2))
    mask = rng.random((2, 4, 5)) < 0.6
    mask[:, :, 0] = True  # every row attends key 0 ...
    mask[:, :, 1] = [False, False, True, False]  # ... key 1 only from query 2
    v[:, 0, 0] = np.inf  # so every row is tainted
    k[:, 1, 2] = np.inf  # blocked for queries 0, 1, 3: must not reach them
    q[:, 2, 2] = 1.0  # query 2's score against key 1 is +inf
    v[1, 1, 1] = np.nan
    if storage == "numpy":
        out = sdpa.scaled_dot_product_attention(q, k, v, mask)
    else:
        out = sdpa.device_attention(*(torch.from_numpy(a) for a in (q, k, v, mask))).numpy()
    expected = _attended_rows_oracle(q, k, v, mask, sdpa.default_scale(3))
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
    assert np.all(out[:, [0, 1, 3], 0] == np.inf) and np.all(np.isfinite(out[:, [0, 1, 3], 1]))
    assert np.all(np.isnan(out[:, 2]))  # query 2 attends the infinite key: softmax of inf is NaN


def test_tainted_rows_with_zero_width_queries_and_keys() -> None:
    """d == 0 (every score 0, scale 1): a row attending an infinite value is recomputed like any
    other (the flattening must not infer a batch extent from zero-size rows)."""
    q, k = np.zeros((2, 3, 0)), np.zeros((2, 4, 0))
    v = np.arange(16.0).reshape(2, 4, 2)
    v[:, 1, 0] = np.inf
    mask = np.array([[True, True, False, False], [False, False, True, True], [True, False, True, False]])
    out = sdpa.scaled_dot_product_attention(q, k, v, mask)
    np.testing.assert_array_equal(out, _attended_rows_oracle(q, k, v, np.broadcast_to(mask, (2, 3, 4)), 1.0))
    assert np.all(out[:, 0, 0] == np.inf)


def test_float64_and_explicit_scale() -> None:
    q, k, v = _qkv(8, dtype=np.float64)
    out = sdpa.scaled_dot_product_attention(q, k, v, MASK, scale=0.25)
    assert out.dtype == np.float64
    t = TF.scaled_dot_product_attention(
        *(torch.tensor(a) for a in (q, k, v)), attn_mask=torch.tensor(MASK), scale=0.25
    )
    np.testing.assert_allclose(out, t.numpy(), rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------------- broadcast leading axes

BROADCAST_MASKS: dict[str, Array | None] = {
    "unmasked": None,
    "shared": np.array(
        [[True, False, True, True, False, True]] * 2 + [[False, True, True, True, True, True]] * 3
    ),
    "per-batch": np.random.default_rng(13).random((2, 1, 5, 6)) < 0.6,
}


@pytest.mark.parametrize("mask_name", list(BROADCAST_MASKS))
def test_bridge_broadcasts_leading_axes_like_torch_float64(mask_name: str) -> None:
    mask = BROADCAST_MASKS[mask_name]
    if mask is not None:
        mask[..., 0] = True  # every query attends a key: torch's values are then well defined
    rng = np.random.default_rng(12)
    arrays = [rng.standard_normal(shape) for shape in ((2, 1, 5, 4), (1, 3, 6, 4), (3, 6, 2))]
    bridge, inputs, name = _attention("libtorch_forward_cpu", arrays, mask)
    assert name == "libtorch.sdpa_forward" and bridge.shape == (2, 3, 5, 2)
    assert bridge.dtype == np.float64
    g = rng.standard_normal(bridge.shape)
    bridge.backward(g)
    t_inputs = [torch.tensor(a, requires_grad=True) for a in arrays]
    t_out = TF.scaled_dot_product_attention(*t_inputs, attn_mask=None if mask is None else torch.tensor(mask))
    t_out.backward(torch.tensor(g))
    np.testing.assert_allclose(bridge.numpy(), t_out.detach().numpy(), rtol=1e-12, atol=1e-12)
    for mine, theirs in zip(inputs, t_inputs, strict=True):
        assert mine.grad is not None and theirs.grad is not None
        assert mine.grad.shape == mine.shape  # reduced back to each input's own shape
        np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("storage", ["numpy", "torch"])
def test_check_sdpa_inputs_returns_the_broadcast_batch_shape(storage: str) -> None:
    convert = torch.from_numpy if storage == "torch" else np.asarray
    q, k, v = (convert(np.ones(shape)) for shape in ((2, 1, 5, 4), (1, 3, 6, 4), (3, 6, 2)))
    assert sdpa.check_sdpa_inputs(q, k, v, convert(np.ones((3, 1, 6), dtype=bool))) == (2, 3)
    message = (
        r"mask shape \(2, 2, 5, 6\) does not broadcast to \(2, 3, 5, 6\)"
        if storage == "torch"
        else r"shapes are not broadcastable: scores \(2, 3, 5, 6\), mask \(2, 2, 5, 6\)"
    )
    with pytest.raises(GuardError, match=message):
        sdpa.check_sdpa_inputs(q, k, v, convert(np.ones((2, 2, 5, 6), dtype=bool)))


# ----------------------------------------------------------------- the bridge's own blocked-row zeroing


def _poisoning_sdpa(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Replace torch SDPA (as the bridge looks it up, at call time) by one that returns NaN on
    every query row whose boolean mask blocks all keys; count the calls."""
    original = TF.scaled_dot_product_attention
    calls: list[int] = []

    def poisoned(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *args: Any, **kwargs: Any
    ) -> torch.Tensor:
        calls.append(1)
        out = original(q, k, v, *args, **kwargs)
        mask = kwargs.get("attn_mask")
        if mask is None:
            return out
        blocked = ~torch.broadcast_to(mask, (*q.shape[:-1], k.shape[-2])).any(dim=-1)
        return torch.where(blocked.unsqueeze(-1), torch.full_like(out, float("nan")), out)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", poisoned)
    return calls


def test_bridge_zeroes_fully_blocked_rows_whatever_torch_returns(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _poisoning_sdpa(monkeypatch)
    q, k, v = _qkv(14, dtype=np.float64)
    full_mask = np.ascontiguousarray(np.broadcast_to(MASK, (2, 3, 5)))
    views = [torch.from_numpy(a) for a in (q, k, v, full_mask)]
    raw = sdpa._torch_sdpa(*views, sdpa.default_scale(4)).numpy()
    assert np.all(np.isnan(raw[:, 1])) and np.all(np.isfinite(raw[:, [0, 2]]))  # the poison works
    out, inputs, name = _attention("libtorch_forward_cpu", [q, k, v], MASK)
    assert name == "libtorch.sdpa_forward" and len(calls) == 2
    np.testing.assert_array_equal(out.numpy()[:, 1], np.zeros((2, 6)))
    np.testing.assert_array_equal(out.numpy()[:, [0, 2]], raw[:, [0, 2]])  # other rows untouched
    out.backward(np.ones(out.shape))
    q_grad = inputs[0].grad
    assert q_grad is not None
    np.testing.assert_array_equal(q_grad.numpy()[:, 1], np.zeros((2, 4)))
    for t in inputs:
        assert t.grad is not None and bool(np.all(np.isfinite(t.grad.numpy())))

    all_blocked = np.zeros((3, 5), dtype=bool)
    out2, inputs2, _ = _attention("libtorch_forward_cpu", _qkv(15, dtype=np.float64), all_blocked)
    np.testing.assert_array_equal(out2.numpy(), np.zeros(out2.shape))
    out2.backward(np.ones(out2.shape))
    for t in inputs2:
        assert t.grad is not None
        np.testing.assert_array_equal(t.grad.numpy(), np.zeros(t.shape))


# ---------------------------------------------------------------------------------------- guards


@pytest.mark.parametrize(
    ("change", "torch_message", "numpy_message"),
    [
        (lambda q, k, v, m: (np.concatenate([q, q[:1]]), k, v, m), "leading axes .* do not broadcast",
         r"shapes are not broadcastable: q batch \(3,\), k batch \(2,\)"),
        (lambda q, k, v, m: (q, k[..., :3], v, m), "feature width", "do not fit"),
        (lambda q, k, v, m: (q, k, v[:, :4], m), "keys but V has", "do not fit"),
        (lambda q, k, v, m: (q.astype(np.float64), k, v, m), "dtypes differ", "do not promote dtypes"),
        (lambda q, k, v, m: (q.astype(np.float16), k, v, m), "not float32 or float64",
         "query q has dtype float16"),
        (lambda q, k, v, m: (q, k, v, m.astype(np.float32)), "boolean array", "mask has dtype float32"),
        (lambda q, k, v, m: (q, k, v, m[:, :4]), "does not broadcast", "shapes are not broadcastable"),
        (lambda q, k, v, m: (np.ones(4, dtype=np.float32), k, v, m), "rank >= 2", "rank below 2"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("storage", ["numpy", "torch"])
def test_check_sdpa_inputs_refuses(change: Any, torch_message: str, numpy_message: str, storage: str) -> None:
    """Numpy operands (the CPU bridge) get ``reference.attention``'s guard and words first; torch
    tensors (the CUDA bridge) the bridge's own."""
    args = change(*_qkv(9), MASK)
    if storage == "torch":
        args = [torch.from_numpy(a) for a in args]
    with pytest.raises(GuardError, match=torch_message if storage == "torch" else numpy_message) as info:
        sdpa.check_sdpa_inputs(*args)
    prefix = "LibTorch SDPA: " if storage == "torch" else "scaled_dot_product_attention: "
    assert str(info.value).startswith(prefix)


@pytest.mark.parametrize(
    ("storage", "message"),
    [
        ("numpy", "scale = inf is not accepted (accepted: a finite real number)"),
        ("torch", "scale must be finite"),
    ],
)
def test_check_sdpa_inputs_refuses_non_finite_scale(storage: str, message: str) -> None:
    q, k, v = _qkv(9)
    if storage == "torch":
        q, k, v = (torch.from_numpy(a) for a in (q, k, v))
    with pytest.raises(GuardError, match=re.escape(message)):
        sdpa.check_sdpa_inputs(q, k, v, None, scale=float("inf"))


def test_check_libtorch_view_wraps_contiguous_arrays_without_copy() -> None:
    a = np.arange(6.0).reshape(2, 3)
    (view,) = sdpa.check_libtorch_view([a])
    assert view.data_ptr() == a.ctypes.data and not view.requires_grad
    with pytest.raises(GuardError, match="not a C-contiguous"):
        sdpa.check_libtorch_view([a.T])


def test_the_bridge_refuses_a_strided_operand_through_its_layout_guard() -> None:
    """The capsule's layout evidence on its own path: a transposed q at the batch shape reaches
    ``check_libtorch_view`` (sessions hand over contiguous storage, so only a direct call does)."""
    rng = np.random.default_rng(3)
    q = rng.standard_normal((2, 4, 3)).transpose(0, 2, 1)  # (2, 3, 4), not C-contiguous
    k, v = rng.standard_normal((2, 5, 4)), rng.standard_normal((2, 5, 4))
    with pytest.raises(GuardError, match=r"operand 0 is not a C-contiguous"):
        sdpa.scaled_dot_product_attention(q, k, v)
    want = sdpa.scaled_dot_product_attention(np.ascontiguousarray(q), k, v)
    assert want.shape == (2, 3, 4)


def test_require_torchlean_tape_refuses_backend_vjp_sessions() -> None:
    sdpa.require_torchlean_tape(SDPA_FORWARD_CPU, KernelPolicy(device=Device.CPU))
    sdpa.require_torchlean_tape(SDPA_FORWARD_CPU, KernelPolicy(vjp_mode=VJPMode.NONE))
    with pytest.raises(GuardError, match="requires vjpMode=torchLeanTape"):
        sdpa.require_torchlean_tape(SDPA_FORWARD_CPU, KernelPolicy(vjp_mode=VJPMode.BACKEND_VJP))


def test_a_forward_only_copy_of_the_bridge_runs_under_no_grad_and_only_there() -> None:
    """review121 F1: the claims rule lets a copy of the bridge be forward-only; it was planned,
    accepted and recorded, then refused by the VJP guard at every call, even under ``no_grad``."""
    import dataclasses

    from torchlean.backend.contracts import vjp_unavailable
    from torchlean.backend.registry import CapsuleModule, built_in_claims_difference

    forward_only = dataclasses.replace(
        SDPA_FORWARD_CPU,
        name="mine.sdpa_forward_only",
        vjp_mode=VJPMode.NONE,
        vjp_contract=vjp_unavailable(SDPA_FORWARD_CPU.op, "forward-only copy"),
    )
    assert built_in_claims_difference(forward_only) is None
    profile = dataclasses.replace(profiles.get("libtorch_forward_cpu"), name="fo_cpu")
    profile = profile.with_capsule_modules([CapsuleModule("libtorch", (forward_only,))])
    q, k, v = _qkv(4)
    with tl.session(profile) as s, tl.no_grad():
        out = tl.scaled_dot_product_attention(tl.tensor(q), tl.tensor(k), tl.tensor(v), mask=MASK)
    assert [kernel.capsule.name for kernel in s.selected] == ["mine.sdpa_forward_only"]
    want = TF.scaled_dot_product_attention(
        *(torch.from_numpy(a).double() for a in (q, k, v)), attn_mask=torch.from_numpy(MASK)
    )
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    # the guard still refuses the copy outside an inference session
    with pytest.raises(GuardError, match="declares VJP mode none"):
        sdpa.require_torchlean_tape(forward_only, KernelPolicy(device=Device.CPU))


def test_all_three_guards_run_on_the_bridge_path(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    for name in ("check_sdpa_inputs", "check_libtorch_view", "require_torchlean_tape"):
        original = getattr(sdpa, name)

        def spy(*args: Any, _name: str = name, _original: Any = original, **kwargs: Any) -> Any:
            seen.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(sdpa, name, spy)
    from torchlean.autograd import dispatch

    # Relink the bridge so that its kernel record holds the spied guard, then reload the table.
    monkeypatch.setattr(sdpa, "LINKED_KERNELS", (sdpa._linked(Device.CPU),))
    monkeypatch.setattr(dispatch, "_LINKED", None)
    _attention("libtorch_forward_cpu", _qkv(10), MASK)
    assert seen == ["require_torchlean_tape", "check_sdpa_inputs", "check_libtorch_view"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_score_overflowing_at_a_blocked_position_never_reaches_the_output(dtype: type) -> None:
    """Finite inputs whose *blocked* score overflows (q·k0 = +inf, or inf - inf = NaN): torch adds
    its -inf mask to it, so the row would be NaN; the bridge recomputes such rows. Oracle: the
    reference capsule, and by hand out = v1 = 2 (the one allowed key)."""
    big = np.finfo(dtype).max ** 0.5 * 4  # q·k0 overflows dtype
    v = np.array([[1.0], [2.0]], dtype=dtype)
    mask = np.array([[False, True]])
    for q, k in (
        (np.array([[big, big]]), np.array([[big, big], [1.0, 1.0]])),  # +inf
        (np.array([[big, big]]), np.array([[big, -big], [1.0, 1.0]])),  # inf - inf = NaN
    ):
        q, k = q.astype(dtype), k.astype(dtype)
        ours, inputs, capsule = _attention("libtorch_forward_cpu", [q, k, v], mask)
        assert capsule == "libtorch.sdpa_forward"
        ours.backward(tl.tensor(np.ones((1, 1), dtype=dtype)))
        reference, ref_inputs, _ = _attention("checked_cpu", [q, k, v], mask)
        reference.backward(tl.tensor(np.ones((1, 1), dtype=dtype)))
        np.testing.assert_array_equal(ours.numpy(), [[2.0]])
        np.testing.assert_array_equal(ours.numpy(), reference.numpy())
        for got, want in zip(inputs, ref_inputs, strict=True):
            np.testing.assert_array_equal(got.grad.numpy(), want.grad.numpy())
    # a huge scale makes a finite blocked score overflow too
    q, k = np.array([[1.0]], dtype=dtype), np.array([[1e10], [1e-10]], dtype=dtype)
    out = sdpa.scaled_dot_product_attention(q, k, v, mask, scale=float(np.finfo(dtype).max) / 2)
    np.testing.assert_array_equal(out, [[2.0]])


def test_a_large_value_at_a_key_no_query_attends_changes_no_bit(monkeypatch: pytest.MonkeyPatch) -> None:
    """review102 L5: 1e38 at a key blocked for every query (finite, so not zeroed as a non-finite
    key was) flagged every row for the overflow recomputation, whose rounding differs from torch's
    in the last bits: the output moved by 2 ulp, though the key contributes nothing. Oracle: the
    same inputs with that key ordinary, bit for bit; no row is recomputed. A key that some query
    attends still bounds the scores (the other batch entry: recomputed, as the reference)."""
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 4, 8, 16)).astype(np.float32) for _ in range(3))
    mask = np.ones((2, 1, 8, 8), bool)
    mask[0, :, :, 0] = False  # entry 0: key 0 blocked for every query
    mask[1, :, 1:, 0] = False  # entry 1: key 0 attended by query 0 only
    big_k, big_v = k.copy(), v.copy()
    big_k[0, :, 0], big_v[0, :, 0] = 1e38, -3e38
    clean = sdpa.scaled_dot_product_attention(q, k, v, mask)
    with monkeypatch.context() as patched:
        def refuse(*args: object) -> None:
            raise AssertionError("recomputed rows for a key no query attends")

        patched.setattr(sdpa, "_recompute_tainted", refuse)
        patched.setattr(sdpa, "_explicit_attention", refuse)
        np.testing.assert_array_equal(sdpa.scaled_dot_product_attention(q, big_k, big_v, mask), clean)
        np.testing.assert_array_equal(
            sdpa.device_attention(*map(torch.from_numpy, (q, big_k, big_v, mask))).numpy(), clean)
    big_k[1, :, 0] = 1e38  # attended by query 0 of entry 1: its scores overflow there
    ours, _, capsule = _attention("libtorch_forward_cpu", [q, big_k, big_v], mask)
    reference, _, _ = _attention("checked_cpu", [q, big_k, big_v], mask)
    assert capsule == "libtorch.sdpa_forward"
    np.testing.assert_array_equal(ours.numpy()[0], clean[0])
    np.testing.assert_allclose(ours.numpy()[1], reference.numpy()[1], rtol=1e-6, atol=1e-6)
    assert np.isnan(reference.numpy()[1, :, 0]).all() == np.isnan(ours.numpy()[1, :, 0]).all()


def test_a_row_whose_allowed_scores_are_all_minus_inf_is_nan_as_in_the_reference() -> None:
    """Forward and backward of one capsule agree: torch SDPA alone would give 0 (its safe softmax)
    while the tape's backward (the reference rule) gives NaN; the bridge now gives NaN like
    ``reference.attention`` and ``torch.softmax``."""
    q = np.array([[1e200], [1.0]])
    k = np.array([[-1e200], [3.0]])
    v = np.array([[1.0], [5.0]])
    mask = np.array([[True, False], [True, True]])  # row 0's only allowed score overflows to -inf
    ours, inputs, _ = _attention("libtorch_forward_cpu", [q, k, v], mask)
    reference, ref_inputs, _ = _attention("checked_cpu", [q, k, v], mask)
    np.testing.assert_array_equal(ours.numpy(), reference.numpy())
    assert np.isnan(ours.numpy()[0]).all() and np.isfinite(ours.numpy()[1]).all()
    for out in (ours, reference):
        out.backward(tl.tensor(np.ones((2, 1))))
    for got, want in zip(inputs, ref_inputs, strict=True):
        np.testing.assert_array_equal(got.grad.numpy(), want.grad.numpy())  # NaN where the reference's


@pytest.mark.parametrize(
    ("q", "k", "scale", "expected"),
    [
        # torch scales q by sqrt(4) first: 4e38 overflows float32 and the row is NaN; the
        # reference's scores (q k^T) * 4 are 8e28 and 0, so all weight is on v0 = 1
        ([[2e38, 0.0]], [[1e-10, 0.0], [0.0, 1.0]], 4.0, 1.0),
        # the reference's q k^T = ±1e40 overflows float32 before the scale: NaN, which its
        # backward (the bridge's too) also gives; torch's pre-scaled product stays finite
        ([[1e30]], [[1e10], [-1e10]], 1e-30, math.nan),
        # a scale float32 cannot hold is inf in the reference (scores ±inf, NaN row) where torch's
        # q * sqrt(1e39) stays finite: the bridge's forward gave torch's value, its backward NaN
        ([[1e-20]], [[1e-20], [-1e-20]], 1e39, math.nan),
    ],
    ids=["torch-overflows", "reference-overflows", "scale-overflows"],
)
def test_without_a_mask_overflowing_scores_follow_the_reference(
    q: list[list[float]], k: list[list[float]], scale: float, expected: float
) -> None:
    """With no mask the bridge's forward is recomputed with the reference's semantics where the
    scores may overflow, as with a mask (it returned torch's value, which disagreed with the
    masked call, ``checked_cpu`` and its own backward). Oracles: by hand, ``checked_cpu``."""
    arrays = [np.array(q, np.float32), np.array(k, np.float32), np.array([[1.0], [2.0]], np.float32)]
    results = []
    for profile in ("libtorch_forward_cpu", "checked_cpu"):
        leaves = [tl.tensor(a, requires_grad=True) for a in arrays]
        with tl.session(profile) as session:
            out = tl.scaled_dot_product_attention(*leaves, scale=scale)
            out.backward(tl.tensor(np.ones((1, 1), np.float32)))
        assert len(session.selected) == 1
        results.append((session.selected[0].capsule.name, out.numpy(), [t.grad.numpy() for t in leaves]))
    (name, out, grads), (_, ref_out, ref_grads) = results
    assert name == "libtorch.sdpa_forward"
    np.testing.assert_array_equal(out, [[expected]])
    np.testing.assert_array_equal(out, ref_out)
    for got, want in zip(grads, ref_grads, strict=True):
        np.testing.assert_array_equal(got, want)
    masked = sdpa.scaled_dot_product_attention(*arrays, np.ones((1, 2), dtype=bool), scale=scale)
    np.testing.assert_array_equal(masked, out)  # an all-True mask gives the same


def test_ordinary_inputs_take_only_the_batched_torch_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """The overflow bound is cheap and flags nothing for ordinary data (no per-row recompute)."""

    def refuse(*args: object) -> None:
        raise AssertionError("recomputed rows of ordinary inputs")

    monkeypatch.setattr(sdpa, "_recompute_tainted", refuse)
    monkeypatch.setattr(sdpa, "_explicit_attention", refuse)
    for dtype in (np.float32, np.float64):
        q, k, v = (a * 30 for a in _qkv(3, dtype=dtype, batch=(2, 3)))
        tq, tk = torch.from_numpy(q), torch.from_numpy(k)
        assert sdpa._scores_may_overflow(tq, tk, 0.5) is None  # min/max only
        for mask in (MASK, None):
            out = sdpa.scaled_dot_product_attention(q, k, v, mask)
            assert np.isfinite(out).all()


def test_overflow_bound_flags_exactly_the_rows_near_the_limit() -> None:
    rng = np.random.default_rng(5)
    q, k = rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 6, 3))
    q[1, 2, 0] = 1e308  # with |k| up to ~3 this row's scores may pass float64's largest value
    q[1, 0, 0] = 1e300  # still 100x below the bound's limit: not flagged
    k[0, 3, 1] = 1e10  # batch 0's keys are larger, but q·k stays far below the limit
    flags = sdpa._scores_may_overflow(torch.from_numpy(q), torch.from_numpy(k), 1.0).numpy()
    np.testing.assert_array_equal(flags, [[False] * 4, [False, False, True, False]])
    assert sdpa._scores_may_overflow(torch.zeros((2, 0)), torch.zeros((0, 0)), 1.0) is None  # no scores
    assert sdpa._scores_may_overflow(torch.from_numpy(q[:1]), torch.from_numpy(k[:1]), 1.0) is None


@pytest.mark.parametrize("masked", [False, True], ids=["no-mask", "mask"])
def test_only_the_batch_entries_holding_risky_rows_are_recomputed(
    masked: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A huge value in one head recomputes that head alone (it recomputed every head: 15x the
    torch call on 8x16 heads); the result still equals ``checked_cpu``'s."""
    seen: list[int] = []
    explicit = sdpa._explicit_attention

    def spy(q: torch.Tensor, *rest: Any) -> torch.Tensor:
        seen.append(int(q.shape[0]))
        return explicit(q, *rest)

    monkeypatch.setattr(sdpa, "_explicit_attention", spy)
    q, k, v = _qkv(9, batch=(2, 3))
    q[1, 2, 0] = 3e37  # one row of one head whose scores may overflow float32
    mask = np.random.default_rng(9).random((2, 3, 3, 5)) < 0.8 if masked else None
    got = sdpa.scaled_dot_product_attention(q, k, v, mask)
    assert seen == [1]
    with tl.session("checked_cpu"):
        want = tl.scaled_dot_product_attention(tl.tensor(q), tl.tensor(k), tl.tensor(v), mask).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_no_keys_without_a_mask_is_zero_even_for_a_nan_query() -> None:
    """Every row is fully blocked when there is no key: zero, as ``checked_cpu`` (torch SDPA gave
    NaN everywhere once q held a NaN)."""
    q = np.ones((2, 3, 2), np.float32)
    q[0, 0, 0] = np.nan
    k, v = np.ones((2, 0, 2), np.float32), np.ones((2, 0, 3), np.float32)
    got = sdpa.scaled_dot_product_attention(q, k, v, None)
    np.testing.assert_array_equal(got, np.zeros((2, 3, 3)))
    with tl.session("checked_cpu"):
        want = tl.scaled_dot_product_attention(tl.tensor(q), tl.tensor(k), tl.tensor(v)).numpy()
    np.testing.assert_array_equal(got, want)
