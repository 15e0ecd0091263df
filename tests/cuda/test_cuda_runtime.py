"""The CUDA runtime: linked CUDA kernels, tensors on CUDA, the session's CUDA probe.

Runs without a GPU:

* handler coverage: every CUDA capsule (native-cuda, attention, libtorch cuda) has exactly one
  linked kernel with its ``(op, provider, device)``, and the names it calls exist;
* device handling: placement refusals with the documented messages, devices never mixed within
  one op, nothing moved implicitly;
* the session refusal of every CUDA profile at open, before anything is built or launched;
* wiring of the native, composed and LibTorch CUDA handlers (argument order, parameters, the
  saved output) on the host-emulation build, against the reference provider in float64;
* end to end on the host emulation: training steps under ``checked_cuda``,
  ``libtorch_forward_cuda`` and ``libtorch_forward_strict`` agree with ``checked_cpu`` in float64.
  The seam (documented in ``dispatch.check_devices``): inside ``extension.host_emulation()`` a CUDA
  capsule takes CPU torch storage; here tensors placed on ``cuda`` get such storage.

Tests marked ``cuda`` repeat the end-to-end checks on a real device (skipped without one).
"""

from __future__ import annotations

import contextlib
import importlib
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import torch
from _docs import documentation

import torchlean as tl
from torchlean import data, optim
from torchlean.autograd import dispatch, storage
from torchlean.backend import profiles
from torchlean.backend.capsule import KernelCapsule
from torchlean.backend.errors import SessionError, TorchLeanError
from torchlean.backend.providers import attention
from torchlean.backend.providers.libtorch.capsules import SDPA_FORWARD_CUDA
from torchlean.backend.providers.linked import LinkedKernel
from torchlean.backend.providers.native_cuda import capsules as native_capsules
from torchlean.backend.providers.native_cuda import extension, handlers, kernels
from torchlean.backend.providers.reference import handlers as reference_handlers
from torchlean.backend.vocabulary import BackendOp, Device, Provider, VJPMode
from torchlean.models import build_model
from torchlean.tensor import DeviceError, Tensor
from torchlean.trainer import Objective, RunConfig, Trainer

CUDA_PROFILES = ("checked_cuda", "libtorch_forward_cuda", "libtorch_forward_strict")
CUDA_CAPSULES: tuple[KernelCapsule, ...] = (
    *native_capsules.CAPSULES,
    *attention.CAPSULES,
    SDPA_FORWARD_CUDA,
)
SDPA = BackendOp.SCALED_DOT_PRODUCT_ATTENTION
TENSOR_MODULE = importlib.import_module("torchlean.tensor")


def _identity(k: LinkedKernel | KernelCapsule) -> tuple[BackendOp, Provider, Device]:
    return (k.op, k.provider, k.device)


# ------------------------------------------------------------------------------- handler coverage


@pytest.mark.parametrize("capsule", CUDA_CAPSULES, ids=lambda c: f"{c.name}@{c.device.label}")
def test_every_cuda_capsule_has_exactly_one_linked_kernel(capsule: KernelCapsule) -> None:
    matching = [k for k in dispatch.linked_kernels(capsule.op) if _identity(k) == _identity(capsule)]
    assert len(matching) == 1, f"{capsule.name}: {[k.label for k in matching]}"
    assert (matching[0].vjp is None) == (capsule.vjp_mode is VJPMode.NONE)


def test_no_linked_cuda_kernel_without_a_capsule() -> None:
    capsules = {_identity(c) for c in CUDA_CAPSULES}
    linked = [k for op in BackendOp for k in dispatch.linked_kernels(op) if k.device is Device.CUDA]
    assert len(linked) == len(CUDA_CAPSULES) == 49
    assert {_identity(k) for k in linked} == capsules


def test_native_handlers_name_real_kernels() -> None:
    assert len(handlers.LINKED_KERNELS) == 47
    assert all(k.name == "TorchLean native CUDA" for k in handlers.LINKED_KERNELS)
    for capsule in native_capsules.CAPSULES:
        label = capsule.op.label
        assert callable(getattr(kernels, f"{label}_forward"))
        if capsule.vjp_mode is not VJPMode.NONE:
            assert callable(getattr(kernels, f"{label}_backward"))
    assert callable(kernels.direct_attention) and callable(kernels.direct_attention_vjp)


def test_linking_cuda_handlers_imports_no_torch() -> None:
    code = (
        "import sys\n"
        "import torchlean.autograd.dispatch as d, torchlean.functional as F, torchlean as tl\n"
        "from torchlean.backend.vocabulary import BackendOp\n"
        "assert d.linked_kernels(BackendOp.RELU)\n"
        "F.relu(tl.tensor([1.0, -1.0]))\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ------------------------------------------------------------------------------- session refusal


@pytest.mark.parametrize("name", CUDA_PROFILES)
def test_cuda_profiles_plan_without_a_gpu(name: str) -> None:
    plan = profiles.get(name).plan_ops([BackendOp.MATMUL, BackendOp.RELU, SDPA])
    assert [k.capsule.device for k in plan.kernels] == [Device.CUDA] * 3


@pytest.fixture
def no_build(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if anything tries to build or load the extension."""

    def refuse(*_: object) -> ModuleType:
        raise AssertionError("the extension must not be built")

    monkeypatch.setattr(extension, "load_extension", refuse)
    monkeypatch.setattr(extension, "load_host_emulation", refuse)


@pytest.mark.parametrize("name", CUDA_PROFILES)
def test_cuda_profile_refused_on_a_cpu_only_build(
    name: str, no_build: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(torch.version, "cuda", None)
    with pytest.raises(SessionError) as info:
        tl.session(name)
    assert str(info.value) == (
        f"torch eager session: CUDA was requested, but this torch build ({torch.__version__}) is not a "
        "CUDA build; install a CUDA build of torch to run on `cuda`"
    )


@pytest.mark.parametrize("name", CUDA_PROFILES)
def test_cuda_profile_refused_on_a_cuda_build_without_device(
    name: str, no_build: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(torch.version, "cuda", "12.4")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SessionError) as info:
        tl.session(name)
    assert str(info.value) == (
        "torch eager session: CUDA was requested and this is a CUDA build, but no usable CUDA device "
        "is visible"
    )
    trainer = Trainer(tl.nn.linear(2, 1), config=RunConfig().with_profile(name))
    with pytest.raises(SessionError, match=r"^torch eager session: CUDA was requested and this"):
        trainer.open()


# ---------------------------------------------------------------------------------- device handling


def _no_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.version, "cuda", "12.4")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def test_placing_on_cuda_without_cuda_is_a_clear_error(
    no_build: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_cuda(monkeypatch)
    message = (
        "cannot place a tensor on cuda: CUDA was requested and this is a CUDA build, but no usable CUDA "
        "device is visible"
    )
    x = tl.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(DeviceError) as moved:
        x.to("cuda")
    with pytest.raises(DeviceError) as created:
        tl.tensor([1.0], device="cuda")
    for info in (moved, created):
        assert isinstance(info.value, TorchLeanError)
        assert str(info.value) == message
    monkeypatch.setattr(torch.version, "cuda", None)
    with pytest.raises(DeviceError, match=r"^cannot place a tensor on cuda:1: CUDA was requested, but this"):
        x.to("cuda:1")


@pytest.mark.parametrize("spelling", ["metal", "gpu", "cuda:x", "cpu:1"])
def test_unknown_devices_are_refused(spelling: str) -> None:
    accepted = r"\(accepted: cpu \| cpu:0 \| cuda \| cuda:N\)"
    with pytest.raises(DeviceError, match=rf"unknown tensor device .* {accepted}"):
        tl.tensor([1.0]).to(spelling)


def test_to_cpu_on_a_cpu_tensor_is_the_tensor_itself() -> None:
    x = tl.tensor([1.0], requires_grad=True)
    assert x.to("cpu") is x and x.to(torch.device("cpu")) is x
    assert x.device == "cpu" and tl.tensor([1.0], device="cpu").device == "cpu"


def test_one_op_never_mixes_devices() -> None:
    a = tl.tensor([1.0, 2.0])
    b = Tensor._make(torch.empty(2, device="meta"))
    with pytest.raises(DeviceError) as info:
        tl.add(a, b)
    assert str(info.value) == (
        "torch: `add` got inputs on different devices: input 0 is on cpu and input 1 is on meta; move "
        "them to one device with Tensor.to(...)"
    )


def test_a_cuda_capsule_refuses_host_inputs_before_launch(
    no_build: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(extension, "require_cuda", lambda: None)  # a session opens, as with CUDA
    with tl.session("checked_cuda"), pytest.raises(DeviceError) as info:
        tl.relu(tl.tensor([1.0, -1.0]))
    assert str(info.value) == (
        "torch: `relu` runs on capsule `native_cuda.relu` for device `cuda`, but its inputs are on cpu; "
        "move them with Tensor.to('cuda')"
    )


def test_a_cpu_capsule_refuses_torch_storage() -> None:
    x = Tensor._make(torch.ones(2))
    expected = r"capsule `reference.relu` for device `cpu`, but its inputs are on cpu \(torch storage\)"
    with pytest.raises(DeviceError, match=expected):
        tl.relu(x)


def test_tape_refuses_a_contribution_on_another_device() -> None:
    from torchlean.autograd.tape import AutogradError, Node, SavedArray, VersionCounter

    leaf = tl.tensor([1.0, 2.0], requires_grad=True)

    def rule(g: Any, ins: Any, out: Any) -> Sequence[Any]:
        return (torch.empty(2, device="meta"),)

    out = np.array([1.0, 2.0], dtype=np.float32)
    saved = (SavedArray(leaf._data, leaf._version),)
    node = Node("meta_op", (leaf,), saved, SavedArray(out, VersionCounter()), rule)
    y = Tensor._make(out, True, node)
    expected = r"wrong device for parent \(`meta_op` gave one on meta, the parent is on cpu\)"
    with pytest.raises(AutogradError, match=expected):
        y.backward(np.ones(2, dtype=np.float32))


# -------------------------------------------------------------------------- handler wiring (emulated)


def _reference(op: BackendOp) -> LinkedKernel:
    return next(k for k in reference_handlers.LINKED_KERNELS if k.op is op)


def _native(op: BackendOp, provider: Provider = Provider.NATIVE_CUDA) -> LinkedKernel:
    found = [k for k in dispatch.linked_kernels(op) if k.provider is provider and k.device is Device.CUDA]
    assert len(found) == 1
    return found[0]


def _capsule(op: BackendOp, provider: Provider = Provider.NATIVE_CUDA) -> KernelCapsule:
    return next(c for c in CUDA_CAPSULES if c.op is op and c.provider is provider)


def _as_torch(a: np.ndarray | None) -> torch.Tensor | None:
    return None if a is None else torch.from_numpy(np.array(a, copy=True))


def _close(native: Any, expected: np.ndarray | None, what: str) -> None:
    assert (native is None) == (expected is None), what
    if expected is None:
        return
    got = storage.to_host(native)
    assert got.shape == expected.shape and got.dtype == expected.dtype, what
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12, err_msg=what)


def _check_wiring(
    op: BackendOp,
    inputs: tuple[np.ndarray | None, ...],
    params: Mapping[str, Any],
    provider: Provider = Provider.NATIVE_CUDA,
    rng: np.random.Generator | None = None,
    *,
    finite: bool = False,
) -> None:
    """The CUDA linked kernel (on emulated device storage) against the reference linked kernel,
    forward and VJP, float64, same inputs and parameters; ``finite``: every native result must be
    finite (non-finite inputs sit only at blocked positions)."""
    linked, ref = _native(op, provider), _reference(op)
    capsule = _capsule(op, provider)
    ref_capsule = next(c for c in reference_handlers_capsules() if c.op is op)
    out_r = ref.forward(ref_capsule, inputs, params)
    natives = tuple(_as_torch(a) for a in inputs)
    out_n = linked.forward(capsule, natives, params)
    assert isinstance(out_n, torch.Tensor)
    assert not finite or bool(np.isfinite(storage.to_host(out_n)).all()), "a blocked value leaked"
    _close(out_n, np.asarray(out_r), f"{op.label} forward")
    if ref.vjp is None or linked.vjp is None:
        return
    g = (rng or np.random.default_rng(1)).standard_normal(np.shape(out_r))
    grads_r = ref.vjp(ref_capsule, g, inputs, out_r, params)
    grads_n = linked.vjp(capsule, torch.from_numpy(g), natives, out_n, params)
    assert len(grads_n) == len(grads_r) == len(inputs)
    for i, (dn, dr) in enumerate(zip(grads_n, grads_r, strict=True)):
        leaked = finite and dn is not None and not bool(np.isfinite(storage.to_host(dn)).all())
        assert not leaked, f"d{i}: a blocked value leaked"
        _close(dn, None if dr is None else np.asarray(dr), f"{op.label} d{i}")


def reference_handlers_capsules() -> tuple[KernelCapsule, ...]:
    from torchlean.backend.providers.reference.capsules import CAPSULES

    return CAPSULES


def _mask_with_blocked_row(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    mask = rng.random(shape) < 0.6
    mask[..., 1, :] = False  # a fully blocked row
    mask[..., 0, 0] = True
    return mask


def _wiring_cases() -> list[tuple[str, BackendOp, Any]]:
    def normal(rng: np.random.Generator, *shape: int) -> np.ndarray:
        return rng.standard_normal(shape)

    return [
        ("matmul", BackendOp.MATMUL, lambda r: ((normal(r, 2, 3, 4), normal(r, 4, 5)), {})),
        ("add", BackendOp.ADD, lambda r: ((normal(r, 3, 4), normal(r, 4)), {})),
        ("relu", BackendOp.RELU, lambda r: ((normal(r, 3, 5),), {})),
        ("softmax", BackendOp.SOFTMAX, lambda r: ((normal(r, 3, 4),), {"axis": 0})),
        (
            "hard_masked_softmax",
            BackendOp.HARD_MASKED_SOFTMAX,
            lambda r: ((normal(r, 2, 4, 5), _mask_with_blocked_row(r, (4, 5))), {"axis": -1}),
        ),
        (
            "reduce_sum",
            BackendOp.REDUCE_SUM,
            lambda r: ((normal(r, 2, 3, 4),), {"axis": (0, 2), "keepdims": True}),
        ),
        ("linear", BackendOp.LINEAR, lambda r: ((normal(r, 5, 3), normal(r, 4, 3), None), {})),
        (
            "conv",
            BackendOp.CONV,
            lambda r: (
                (normal(r, 2, 3, 6, 5), normal(r, 4, 3, 3, 2), normal(r, 4)),
                {"stride": (2, 1), "padding": 1, "dilation": 1, "groups": 1},
            ),
        ),
        ("scale", BackendOp.SCALE, lambda r: ((normal(r, 4),), {"factor": -2.5})),
        ("permute", BackendOp.PERMUTE, lambda r: ((normal(r, 2, 3, 4),), {"perm": (2, 0, 1)})),
    ]


@pytest.mark.parametrize(("name", "op", "make"), _wiring_cases(), ids=[c[0] for c in _wiring_cases()])
def test_native_handler_wiring_matches_the_reference(
    emulation: ModuleType, name: str, op: BackendOp, make: Any
) -> None:
    rng = np.random.default_rng([7, *name.encode()])
    inputs, params = make(rng)
    _check_wiring(op, inputs, params, rng=rng)


def test_native_seeded_sources_take_the_session_parameters(emulation: ModuleType) -> None:
    for op, extra in ((BackendOp.RAND_UNIFORM, {}), (BackendOp.BERNOULLI_MASK, {"keep_prob": 0.3})):
        for dtype in (np.dtype(np.float32), np.dtype(np.float64)):
            params = {"shape": (3, 5), "seed": 11, "counter": 4, "dtype": dtype, **extra}
            out_n = _native(op).forward(_capsule(op), (), params)
            reference_capsule = next(c for c in reference_handlers_capsules() if c.op is op)
            out_r = _reference(op).forward(reference_capsule, (), params)
            assert storage.numpy_dtype(out_n) == dtype
            np.testing.assert_array_equal(storage.to_host(out_n), out_r)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the refusal of a CPU-only torch build")
@pytest.mark.parametrize("device", [None, "cuda", "cuda:0", 0])
def test_native_seeded_sources_refuse_a_cpu_only_build_whatever_device_is_named(device: object) -> None:
    """review112 F3: with an explicit device the sources skipped the CUDA check and raised torch's
    bare ``AssertionError: Torch not compiled with CUDA enabled``."""
    for draw in (lambda: kernels.rand_uniform_forward(shape=(2,), seed=0, counter=0, device=device),
                 lambda: kernels.bernoulli_mask_forward(shape=(2,), keep_prob=0.5, seed=0, counter=0,
                                                        device=device)):
        with pytest.raises(extension.NativeExtensionError, match=r"^CUDA was requested, but this torch"):
            draw()


def test_native_seeded_sources_refuse_a_device_this_machine_lacks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(extension, "require_cuda", lambda: None)  # a CUDA build with one device
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(TorchLeanError, match=r"^native_cuda\.rand_uniform: device='cuda:7' names no CUDA "
                                             r"device here \(accepted: cuda:0 to cuda:0\)$"):
        kernels.rand_uniform_forward(shape=(2,), seed=0, counter=0, device="cuda:7")


def test_dropout_draws_its_mask_in_the_device_scope_of_x(monkeypatch: pytest.MonkeyPatch) -> None:
    """review112 F2: the seeded sources draw on torch's current CUDA device, so a mask for an x on
    ``cuda:1`` was made on ``cuda:0`` and the ``mul`` refused the mix; dropout now draws inside
    ``storage.device_scope(x.device)``, which makes x's device the current one."""
    from torchlean.functional import _random

    events: list[tuple[str, ...]] = []

    @contextlib.contextmanager
    def scope(device: str) -> Iterator[None]:
        events.append(("enter", device))
        yield
        events.append(("exit", device))

    real = _random.bernoulli_mask

    def draw(*args: Any, **kwargs: Any) -> Tensor:
        events.append(("draw",))
        return real(*args, **kwargs)

    monkeypatch.setattr(storage, "device_scope", scope)
    monkeypatch.setattr(_random, "bernoulli_mask", draw)
    tl.dropout(tl.tensor(np.ones((2, 3))), 0.5)
    assert events == [("enter", "cpu"), ("draw",), ("exit", "cpu")]


def test_device_scope_makes_the_named_cuda_device_current() -> None:
    scope = storage.device_scope("cuda:1")
    assert isinstance(scope, torch.cuda.device) and scope.idx == 1  # not entered: no device needed
    assert storage.device_scope("cuda").idx == 0  # type: ignore[attr-defined]
    assert isinstance(storage.device_scope("cpu"), contextlib.nullcontext)


def _attention_inputs(
    rng: np.random.Generator, lead: tuple[int, ...], mask_shape: tuple[int, ...] | None
) -> tuple[np.ndarray | None, ...]:
    q = rng.standard_normal((*lead, 5, 4))
    k = rng.standard_normal((*lead, 6, 4))
    v = rng.standard_normal((*lead, 6, 3))
    mask = None if mask_shape is None else _mask_with_blocked_row(rng, mask_shape)
    return (q, k, v, mask)


@pytest.mark.parametrize(
    ("provider", "lead", "mask_shape", "params"),
    [
        (Provider.NATIVE_CUDA, (2, 3), (5, 6), {}),
        (Provider.NATIVE_CUDA, (2,), (2, 5, 6), {"scale": 0.3}),
        (Provider.TORCHLEAN, (2, 3), (5, 6), {}),
        (Provider.TORCHLEAN, (3,), None, {"scale": 0.7}),
        (Provider.LIBTORCH, (2, 3), (5, 6), {}),
        (Provider.LIBTORCH, (), (5, 6), {"scale": 0.4}),
        (Provider.LIBTORCH, (2, 1, 2), (2, 1, 1, 5, 6), {}),
    ],
    ids=[
        "direct",
        "direct-batched-mask",
        "composed",
        "composed-nomask",
        "libtorch",
        "libtorch-rank2",
        "libtorch-rank5",
    ],
)
def test_attention_handler_wiring_matches_the_reference(
    emulation: ModuleType,
    provider: Provider,
    lead: tuple[int, ...],
    mask_shape: tuple[int, ...] | None,
    params: dict[str, Any],
) -> None:
    rng = np.random.default_rng([3, len(lead), list(Provider).index(provider)])
    _check_wiring(SDPA, _attention_inputs(rng, lead, mask_shape), params, provider, rng)


@pytest.mark.parametrize(
    ("shapes", "mask_shape"),
    [
        (((2, 1, 5, 4), (1, 3, 6, 4), (3, 6, 3)), None),
        (((2, 1, 5, 4), (1, 3, 6, 4), (3, 6, 3)), (5, 6)),
        (((2, 1, 5, 4), (1, 3, 6, 4), (3, 6, 3)), (2, 1, 5, 6)),
        (((2, 1, 1, 5, 4), (3, 1, 6, 4), (1, 1, 2, 6, 3)), (3, 1, 5, 6)),
    ],
    ids=["unmasked", "shared-mask", "batched-mask", "rank5-folded"],
)
def test_libtorch_cuda_bridge_broadcasts_leading_axes(
    emulation: ModuleType, shapes: tuple[tuple[int, ...], ...], mask_shape: tuple[int, ...] | None
) -> None:
    """The CUDA bridge materialises Q/K/V to their common batch shape and its TorchLean backward
    sums each gradient back to its input's shape, as the reference attention VJP does."""
    rng = np.random.default_rng([9, len(shapes[0]), 0 if mask_shape is None else len(mask_shape)])
    q, k, v = (rng.standard_normal(shape) for shape in shapes)
    mask = None if mask_shape is None else _mask_with_blocked_row(rng, mask_shape)
    _check_wiring(SDPA, (q, k, v, mask), {}, Provider.LIBTORCH, rng)


@pytest.mark.parametrize("provider", [Provider.NATIVE_CUDA, Provider.TORCHLEAN, Provider.LIBTORCH])
def test_cuda_attention_keeps_non_finite_blocked_keys_out(emulation: ModuleType, provider: Provider) -> None:
    rng = np.random.default_rng(5)
    q, k, v, mask = _attention_inputs(rng, (2,), (5, 6))
    assert k is not None and v is not None and mask is not None
    mask[:, 5] = False  # no query attends key 5 ...
    k[:, 5, :] = np.nan  # ... so its NaN must not reach any output or gradient
    v[:, 5, :] = np.inf
    _check_wiring(SDPA, (q, k, v, mask), {}, provider, rng, finite=True)


# ------------------------------------------------------------------------- end to end (emulated)


def _train(model: str, profile: str, steps: int) -> tuple[list[float], list[np.ndarray], list[str]]:
    pytest.importorskip("sklearn", reason="the digits data (a GPU image may lack scikit-learn)")
    digits = data.load("digits", seed=0, dtype=np.float64)
    x = digits.x_train[:, :16]  # 4 x 4 "images": small enough for the emulator
    layer, shape = build_model(model, 16, digits.n_classes, hidden=8)
    config = RunConfig(optimizer=optim.sgd(0.1), dtype="float64").with_profile(profile)
    trainer = Trainer(layer, objective=Objective.CROSS_ENTROPY, config=config, seed=0, input_shape=shape)
    losses = [trainer.step(x[i * 4 : (i + 1) * 4], digits.y_train[i * 4 : (i + 1) * 4]) for i in range(steps)]
    return losses, [np.array(p) for p in trainer.model.parameters], [k.capsule.name for k in trainer.selected]


@pytest.mark.parametrize(
    ("model", "profile", "attention_capsule"),
    [
        ("mlp", "checked_cuda", None),
        ("transformer", "checked_cuda", "torchlean.composed_attention"),
        ("transformer", "libtorch_forward_cuda", "libtorch.sdpa_forward"),
        ("transformer", "libtorch_forward_strict", "native_cuda.direct_attention"),
    ],
)
def test_training_steps_on_cuda_profiles_agree_with_checked_cpu(
    emulated_cuda: None, model: str, profile: str, attention_capsule: str | None
) -> None:
    losses, params, selected = _train(model, profile, steps=2)
    cpu_losses, cpu_params, _ = _train_on_cpu(model)
    np.testing.assert_allclose(losses, cpu_losses, rtol=1e-10)
    for p, c in zip(params, cpu_params, strict=True):
        np.testing.assert_allclose(p, c, rtol=1e-9, atol=1e-12)
    assert all(name.split(".")[0] in ("native_cuda", "torchlean", "libtorch") for name in selected)
    if attention_capsule is not None:
        assert attention_capsule in selected


def _train_on_cpu(model: str) -> tuple[list[float], list[np.ndarray], list[str]]:
    return _train(model, "checked_cpu", steps=2)


def _train_batch_norm(profile: str) -> tuple[dict[str, np.ndarray], np.ndarray, list[str]]:
    layer = tl.nn.sequential(
        tl.nn.conv2d(1, 2, 2), tl.nn.batch_norm2d(2, momentum=0.4), tl.nn.relu(), tl.nn.flatten(),
        tl.nn.linear(18, 3), tl.nn.batch_norm1d(3),
    )
    config = RunConfig(optimizer=optim.sgd(0.1), dtype="float64").with_profile(profile)
    trainer = Trainer(layer, config=config, seed=3, input_shape=(1, 4, 4))
    rng = np.random.default_rng(5)
    for _ in range(2):
        trainer.step(rng.standard_normal((4, 1, 4, 4)), rng.standard_normal((4, 3)))
    prediction = trainer.predict(rng.standard_normal((3, 1, 4, 4)))
    return trainer.model.state(), prediction, [k.capsule.name for k in trainer.selected]


def test_batch_norm_running_statistics_on_cuda_agree_with_checked_cpu(emulated_cuda: None) -> None:
    """The running statistics' update runs on native_cuda capsules and comes back to the host."""
    state, prediction, selected = _train_batch_norm("checked_cuda")
    cpu_state, cpu_prediction, _ = _train_batch_norm("checked_cpu")
    for name, value in state.items():
        np.testing.assert_allclose(value, cpu_state[name], rtol=1e-10, atol=1e-12, err_msg=name)
    assert not np.array_equal(state["1.running_mean"], np.zeros(2))
    np.testing.assert_allclose(prediction, cpu_prediction, rtol=1e-10, atol=1e-12)
    assert {"native_cuda.batch_norm", "native_cuda.reduce_mean", "native_cuda.sub"} <= set(selected)
    assert all(name.startswith("native_cuda.") for name in selected)


def _train_token_model(profile: str) -> tuple[dict[str, np.ndarray], np.ndarray, list[str], float]:
    """An embedding model with the newer activations, clipped, two Adam steps."""
    layer = tl.nn.sequential(
        tl.nn.embedding(7, 4), tl.nn.silu(), tl.nn.mean_pool(0), tl.nn.linear(4, 5), tl.nn.leaky_relu(0.1),
        tl.nn.softplus(), tl.nn.linear(5, 3),
    )
    config = RunConfig(optimizer=optim.adam(lr=0.05), dtype="float64", max_grad_norm=0.1)
    config = config.with_profile(profile)
    trainer = Trainer(layer, objective=Objective.CROSS_ENTROPY, config=config, seed=2, input_shape=(6,))
    rng = np.random.default_rng(1)
    for _ in range(2):
        trainer.step(rng.integers(0, 7, size=(4, 6)), rng.integers(0, 3, size=4))
    prediction = trainer.predict(rng.integers(0, 7, size=(3, 6)))
    assert trainer.grad_norm is not None
    return trainer.model.state(), prediction, [k.capsule.name for k in trainer.selected], trainer.grad_norm


def test_embedding_models_on_cuda_agree_with_checked_cpu(emulated_cuda: None) -> None:
    """The lookup (gather of int64 ids on device storage), silu/softplus/leaky_relu and clipping."""
    state, prediction, selected, norm = _train_token_model("checked_cuda")
    cpu_state, cpu_prediction, _, cpu_norm = _train_token_model("checked_cpu")
    for name, value in state.items():
        np.testing.assert_allclose(value, cpu_state[name], rtol=1e-10, atol=1e-12, err_msg=name)
    np.testing.assert_allclose(prediction, cpu_prediction, rtol=1e-10, atol=1e-12)
    assert norm == pytest.approx(cpu_norm, rel=1e-10) and norm > 0.1
    assert {"native_cuda.gather", "native_cuda.softplus", "native_cuda.sigmoid"} <= set(selected)
    assert all(name.startswith("native_cuda.") for name in selected)


def test_gradients_on_device_storage_accumulate_on_the_device(emulated_cuda: None) -> None:
    with tl.session("checked_cuda"):
        x = tl.tensor([[1.0, -2.0], [3.0, 0.5]], dtype="float64", requires_grad=True, device="cuda")
        y = tl.reduce_sum(x * x + tl.relu(x) * 3.0)  # x reaches the sum twice
        y.backward()
    assert x.grad is not None and isinstance(x.grad._data, torch.Tensor)
    expected = 2 * np.array([[1.0, -2.0], [3.0, 0.5]]) + 3.0 * (np.array([[1.0, -2.0], [3.0, 0.5]]) > 0)
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-15)
    assert y.item() == pytest.approx(1 + 4 + 9 + 0.25 + 3 * (1 + 3 + 0.5))
    held = x.grad
    with tl.session("checked_cuda"):
        tl.reduce_sum(x * x + tl.relu(x) * 3.0).backward()  # a second pass adds into .grad in place
    assert x.grad is held and isinstance(held._data, torch.Tensor) and held._version.value == 1
    np.testing.assert_allclose(held.numpy(), 2 * expected, rtol=1e-15)


def test_moving_a_recorded_result_is_refused(emulated_cuda: None) -> None:
    x = tl.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    with pytest.raises(DeviceError, match=r"on a tensor produced by `mul` would cut the tape"):
        y.to("cuda")
    moved = x.to("cuda")
    assert moved.is_leaf and moved.requires_grad and moved is not x
    with tl.no_grad():
        assert not y.to("cuda").requires_grad


# ----------------------------------------------------------------------------- on a CUDA device


@pytest.mark.cuda
def test_tensors_move_to_the_device_and_back(cuda_device: torch.device) -> None:
    x = tl.tensor([[1.0, 2.0]], requires_grad=True)
    moved = x.to("cuda")
    assert moved.device == f"cuda:{cuda_device.index}" and moved.requires_grad and moved.is_leaf
    assert isinstance(moved._data, torch.Tensor) and moved._data.is_cuda
    np.testing.assert_array_equal(moved.numpy(), x.numpy())
    assert moved.to("cpu").device == "cpu"
    with pytest.raises(DeviceError, match=r"input 0 is on cpu and input 1 is on cuda"):
        tl.add(x, moved)


@pytest.mark.cuda
@pytest.mark.parametrize(
    ("model", "profile"),
    [("mlp", "checked_cuda"), ("transformer", "checked_cuda"), ("transformer", "libtorch_forward_cuda"),
     ("transformer", "libtorch_forward_strict")],
)
def test_training_steps_on_the_device_agree_with_checked_cpu(
    cuda_device: torch.device, model: str, profile: str
) -> None:
    losses, params, _ = _train(model, profile, steps=2)
    cpu_losses, cpu_params, _ = _train_on_cpu(model)
    np.testing.assert_allclose(losses, cpu_losses, rtol=1e-9)
    for p, c in zip(params, cpu_params, strict=True):
        np.testing.assert_allclose(p, c, rtol=1e-8, atol=1e-10)


@pytest.mark.cuda
def test_batch_norm_running_statistics_on_the_device_agree_with_checked_cpu(
    cuda_device: torch.device,
) -> None:
    state, prediction, selected = _train_batch_norm("checked_cuda")
    cpu_state, cpu_prediction, _ = _train_batch_norm("checked_cpu")
    for name, value in state.items():
        np.testing.assert_allclose(value, cpu_state[name], rtol=1e-8, atol=1e-10, err_msg=name)
    np.testing.assert_allclose(prediction, cpu_prediction, rtol=1e-8, atol=1e-10)
    assert all(name.startswith("native_cuda.") for name in selected)


@pytest.mark.cuda
def test_embedding_models_on_the_device_agree_with_checked_cpu(cuda_device: torch.device) -> None:
    state, prediction, selected, norm = _train_token_model("checked_cuda")
    cpu_state, cpu_prediction, _, cpu_norm = _train_token_model("checked_cpu")
    for name, value in state.items():
        np.testing.assert_allclose(value, cpu_state[name], rtol=1e-8, atol=1e-10, err_msg=name)
    np.testing.assert_allclose(prediction, cpu_prediction, rtol=1e-8, atol=1e-10)
    assert norm == pytest.approx(cpu_norm, rel=1e-8)
    assert all(name.startswith("native_cuda.") for name in selected)


def _profiled_cuda_steps() -> dict[str, tuple[str, int, int]]:
    """Two training steps of a batch norm model under checked_cuda, profiled after the first."""
    layer = tl.nn.sequential(tl.nn.linear(4, 6), tl.nn.batch_norm1d(6), tl.nn.tanh(), tl.nn.linear(6, 2))
    config = RunConfig(optimizer=optim.sgd(0.1), dtype="float64").with_profile("checked_cuda")
    trainer = Trainer(layer, config=config, seed=0, input_shape=(4,))
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((5, 4)), rng.standard_normal((5, 2))
    trainer.step(x, y)
    with tl.profiler.profile() as prof:
        trainer.step(x, y)
    return {k.capsule: (k.device, k.forward_calls, k.vjp_calls) for k in prof.kernels}


def _check_profiled_cuda_steps(calls: dict[str, tuple[str, int, int]]) -> None:
    assert calls["native_cuda.linear"] == ("cuda", 2, 2)
    assert calls["native_cuda.tanh"] == ("cuda", 1, 1)
    assert calls["native_cuda.batch_norm"] == ("cuda", 1, 1)
    assert all(name.startswith("native_cuda.") and device == "cuda" for name, (device, _, _) in calls.items())


def test_kernel_profiles_count_cuda_capsules(emulated_cuda: None) -> None:
    _check_profiled_cuda_steps(_profiled_cuda_steps())


@pytest.mark.cuda
def test_kernel_profiles_count_cuda_capsules_on_the_device(cuda_device: torch.device) -> None:
    """On a device the profiler synchronises around each kernel: same counts as the emulation."""
    _check_profiled_cuda_steps(_profiled_cuda_steps())


def test_readme_quotes_the_cpu_only_build_message() -> None:
    """The README's CUDA section shows the message a CPU-only build prints (as of its torch pin)."""
    readme = " ".join(documentation().split())
    quoted = f"error: torch eager session: {extension.not_a_cuda_build_message('2.13.0+cpu')}"
    assert quoted in readme
