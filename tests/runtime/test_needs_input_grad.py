"""VJPs told which inputs need a cotangent (``needs_input_grad``, as ``torch.autograd.Function``)
skip the others: for matmul, linear and conv in the reference and aten providers, every mask gives
``None`` where False and, where True, bit for bit the cotangent of the full rule; the tape passes
the mask of the parents that require a gradient. Oracle: the same rule without a mask."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import torchlean as tl
from torchlean.autograd import dispatch
from torchlean.backend.providers.aten import kernels as aten_kernels
from torchlean.backend.providers.aten import spatial as aten_spatial
from torchlean.backend.providers.reference import kernels as ref_kernels
from torchlean.backend.providers.reference import spatial as ref_spatial
from torchlean.backend.vocabulary import BackendOp, Provider

RNG = np.random.default_rng(11)


def _f64(*shape: int) -> np.ndarray[Any, Any]:
    return RNG.standard_normal(shape)


CASES: list[tuple[str, Callable[..., Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = []
PROVIDERS = (("reference", ref_kernels, ref_spatial), ("aten", aten_kernels, aten_spatial))
for provider, kernels, spatial in PROVIDERS:
    CASES += [
        (f"{provider}.matmul", kernels.matmul, kernels.matmul_vjp, (_f64(2, 3, 4), _f64(4, 5)), {}),
        (f"{provider}.linear", kernels.linear, kernels.linear_vjp, (_f64(6, 4), _f64(3, 4), _f64(3)), {}),
        (
            f"{provider}.conv",
            spatial.conv,
            spatial.conv_vjp,
            (_f64(2, 4, 5, 5), _f64(6, 2, 3, 3), _f64(6)),
            {"stride": 2, "padding": 1, "groups": 2},
        ),
    ]


@pytest.mark.parametrize(("name", "forward", "vjp", "inputs", "params"), CASES, ids=[c[0] for c in CASES])
def test_every_mask_skips_exactly_the_unneeded_cotangents(
    name: str,
    forward: Callable[..., Any],
    vjp: Callable[..., Any],
    inputs: tuple[Any, ...],
    params: dict[str, Any],
) -> None:
    out = forward(*inputs, **params)
    g = RNG.standard_normal(out.shape)
    full = vjp(g, *inputs, out=out, **params)
    assert all(c is not None for c in full)
    for mask in itertools.product((True, False), repeat=len(inputs)):
        partial = vjp(g, *inputs, out=out, needs_input_grad=mask, **params)
        assert len(partial) == len(inputs)
        for need, got, expected in zip(mask, partial, full, strict=True):
            if need:
                assert got is not None and got.tobytes() == expected.tobytes()
            else:
                assert got is None


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
@pytest.mark.parametrize("op", [BackendOp.MATMUL, BackendOp.LINEAR, BackendOp.CONV])
def test_the_linked_kernels_of_these_ops_take_the_mask(profile: str, op: BackendOp) -> None:
    provider = Provider.ATEN if profile == "fast_cpu" else Provider.REFERENCE
    (kernel,) = [k for k in dispatch.linked_kernels(op) if k.provider is provider]
    assert kernel.vjp_needs is not None


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
def test_the_tape_passes_which_parents_need_a_gradient(profile: str) -> None:
    x = tl.tensor(_f64(5, 4))  # data: no gradient wanted
    w = tl.tensor(_f64(3, 4), requires_grad=True)
    b = tl.tensor(_f64(3), requires_grad=True)
    seen: list[tuple[bool, ...]] = []
    with tl.session(profile) as s:
        bound = s.resolve(BackendOp.LINEAR)
        original = bound.linked.vjp_needs
        assert original is not None

        def spy(*args: Any) -> Any:
            seen.append(args[-1])
            return original(*args)

        linked = dataclasses.replace(bound.linked, vjp_needs=spy)
        y = dispatch.execute_bound(dispatch.bind_linked(bound.accepted, linked), (x, w, b), {})
        tl.reduce_sum(y).backward()
    assert seen == [(False, True, True)]
    # oracle: d/dW sum(x W^T + b) = column sums of x for every row; d/db = number of rows
    assert w.grad is not None and b.grad is not None
    np.testing.assert_allclose(w.grad.numpy(), np.tile(x.numpy().sum(0), (3, 1)), rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), np.full(3, 5.0), rtol=1e-12)


def test_all_inputs_needed_uses_the_plain_rule() -> None:
    x = tl.tensor(_f64(5, 4), requires_grad=True)
    w = tl.tensor(_f64(3, 4), requires_grad=True)
    with tl.session("checked_cpu") as s:
        bound = s.resolve(BackendOp.MATMUL)

        def refuse(*args: Any) -> Any:
            raise AssertionError("vjp_needs called although every input needs a cotangent")

        linked = dataclasses.replace(bound.linked, vjp_needs=refuse)
        spied = dispatch.bind_linked(bound.accepted, linked)
        y = dispatch.execute_bound(spied, (x, tl.transpose(w, 0, 1)), {})
        tl.reduce_sum(y).backward()
    assert x.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), np.tile(w.numpy().sum(0), (5, 1)), rtol=1e-12)


def _torch_grads(op: BackendOp, inputs: tuple[Any, ...], g: Any, params: dict[str, Any]) -> list[Any]:
    """The oracle: torch autograd's gradient of ``sum(g * op(inputs))`` for each input."""
    import torch
    import torch.nn.functional as F

    leaves = [torch.tensor(a, requires_grad=True) for a in inputs]
    if op is BackendOp.MATMUL:
        out = torch.matmul(*leaves)
    elif op is BackendOp.LINEAR:
        out = F.linear(*leaves)
    else:
        out = F.conv2d(*leaves, **params)
    return [t.numpy() for t in torch.autograd.grad(out, leaves, torch.tensor(g))]


LINKED_CASES: list[tuple[BackendOp, tuple[Any, ...], dict[str, Any]]] = [
    (BackendOp.MATMUL, (_f64(2, 3, 4), _f64(4, 5)), {}),
    (BackendOp.LINEAR, (_f64(6, 4), _f64(3, 4), _f64(3)), {}),
    (BackendOp.CONV, (_f64(2, 4, 5, 5), _f64(6, 2, 3, 3), _f64(6)), {"stride": 2, "padding": 1, "groups": 2}),
]


@pytest.mark.parametrize("provider", [Provider.REFERENCE, Provider.ATEN], ids=["reference", "aten"])
@pytest.mark.parametrize(("op", "inputs", "params"), LINKED_CASES, ids=[c[0].label for c in LINKED_CASES])
def test_the_linked_kernel_passes_the_mask_to_the_rule(
    provider: Provider, op: BackendOp, inputs: tuple[Any, ...], params: dict[str, Any]
) -> None:
    """``LinkedKernel.vjp_needs`` (the convention kernel of linked.py) hands the tape's mask to
    the rule: an input that needs no gradient gets None, the others torch autograd's gradient."""
    (kernel,) = [k for k in dispatch.linked_kernels(op) if k.provider is provider]
    assert kernel.vjp_needs is not None
    out = kernel.forward(None, inputs, params)  # type: ignore[arg-type]
    g = RNG.standard_normal(np.shape(out))
    want = _torch_grads(op, inputs, g, params)
    for mask in itertools.product((True, False), repeat=len(inputs)):
        got = kernel.vjp_needs(None, g, inputs, out, params, mask)  # type: ignore[arg-type]
        assert len(got) == len(inputs)
        for need, cotangent, expected in zip(mask, got, want, strict=True):
            if need:
                assert cotangent is not None
                np.testing.assert_allclose(cotangent, expected, rtol=1e-10, atol=1e-12)
            else:
                assert cotangent is None, mask
