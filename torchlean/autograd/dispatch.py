"""Executing an accepted kernel and recording its tape node (anchor-backend.md §7).

This is the part of the eager path that does not depend on how the kernel was chosen: given an
:class:`~torchlean.backend.acceptance.AcceptedKernel` (from the eager session, or one of the
``kernels`` of an ``AcceptedGraphKernelPlan``), the linked implementations of its op, and the
input tensors, the eager session and the typed-graph schedule do the following (steps 1 and 3
once per kernel, with :func:`select_linked` and :func:`bind_linked`; steps 0, 2 and 4 on every
call, with :func:`execute_bound`):

0. check the operands (:func:`check_operands`): every input position holds a
   :class:`~torchlean.tensor.Tensor`, or ``None`` at an optional position
   (:data:`OPTIONAL_INPUTS`: an absent bias, affine weight, running statistic or mask); anything else (a
   numpy array, a Python number, a list) is a :class:`~torchlean.tensor.TensorTypeError` naming
   the op, the position and the type. This is the one place the rule of
   :mod:`torchlean.functional` is enforced; the functional layer converts data to tensors only
   where its docstring says so (second operands of binary arithmetic, masks, index arrays);
1. pick the linked kernel whose ``(op, provider, device)`` equals the capsule's; none →
   ``torch: `<op>` selected capsule `<name>` (<provider>/<device>), but no matching executable
   handler is linked; available handlers: ...`` (there is no fallback to another provider);
2. check devices: every input tensor lives on one device, of the capsule's device kind (a
   :class:`~torchlean.tensor.DeviceError` names the devices; nothing is moved implicitly), then
   run the linked kernel's VJP guard (if any) against the accepted policy;
3. build a :class:`~torchlean.backend.binding.KernelHandler` whose ``execute`` is the linked
   forward and bind it to the accepted kernel with :func:`~torchlean.backend.binding.bind` (op,
   then provider, then device). The binding is kept in a :class:`BoundKernel`: the eager session
   binds each selected kernel once and the typed-graph schedule binds each planned node once;
4. on every call (:func:`execute_bound`, after steps 0 and 2): run the bound executable on the
   input storages (``ExecutableKernel.run``, whose mint check confirms that it and its
   accepted kernel are still minted), wrap the result in a
   :class:`~torchlean.tensor.Tensor` and, when gradients are enabled, the op
   is differentiable and some input requires a gradient, record one tape node whose local rule
   is the linked kernel's VJP, evaluated at the saved inputs and output. An allocation failure of
   the forward or the VJP (numpy's ``MemoryError``, torch's CPU allocator error or
   ``torch.OutOfMemoryError``) becomes a :class:`KernelMemoryError`, a ``MemoryError`` under
   every profile. While a kernel profile is open (:mod:`torchlean.autograd.profiler`), the
   kernel's time, and later its VJP's, are added to it under the capsule's name.

Linked kernels come from the provider modules in :data:`HANDLER_MODULES` (each exports
``LINKED_KERNELS``); a module that does not exist in this build (for example CUDA handlers) is
simply not linked. A module that exists but fails to import raises.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeVar

import numpy as np

from torchlean.autograd import profiler, storage
from torchlean.autograd.grad_mode import is_grad_enabled
from torchlean.autograd.tape import Array, LocalRule, Node, SavedArray, VersionCounter
from torchlean.backend.acceptance import AcceptedKernel
from torchlean.backend.binding import ExecutableKernel, KernelHandler, bind
from torchlean.backend.capsule import CLAIMS_RULE, KernelCapsule
from torchlean.backend.errors import BindingError, SessionError, TorchLeanError
from torchlean.backend.providers.linked import LinkedKernel, VJPFn
from torchlean.backend.providers.native_cuda import extension
from torchlean.backend.registry import built_in_claims_difference
from torchlean.backend.vocabulary import BackendOp, Device, VJPMode
from torchlean.tensor import DeviceError, Tensor, TensorTypeError, operand_type

__all__ = [
    "HANDLER_MODULES",
    "OPTIONAL_INPUTS",
    "BoundKernel",
    "KernelMemoryError",
    "bind_linked",
    "check_devices",
    "check_operands",
    "execute_bound",
    "linked_kernels",
    "no_handler_message",
    "select_linked",
]

R = TypeVar("R")

HANDLER_MODULES: tuple[str, ...] = (
    "torchlean.backend.providers.reference.handlers",
    "torchlean.backend.providers.libtorch.sdpa",
    "torchlean.backend.providers.aten.handlers",
    "torchlean.backend.providers.native_cuda.handlers",
    "torchlean.backend.providers.attention_handlers",
)
"""Provider modules whose ``LINKED_KERNELS`` are linked into this build, in this order."""

_LINKED: dict[BackendOp, tuple[LinkedKernel, ...]] | None = None


def _load_linked() -> dict[BackendOp, tuple[LinkedKernel, ...]]:
    table: dict[BackendOp, list[LinkedKernel]] = {}
    for name in HANDLER_MODULES:
        if importlib.util.find_spec(name) is None:
            continue
        module = importlib.import_module(name)
        kernels: Iterable[LinkedKernel] = module.LINKED_KERNELS
        for kernel in kernels:
            table.setdefault(kernel.op, []).append(kernel)
    return {op: tuple(ks) for op, ks in table.items()}


def linked_kernels(op: BackendOp) -> tuple[LinkedKernel, ...]:
    """Every linked implementation of ``op`` in this build (handler-module order)."""
    global _LINKED
    if _LINKED is None:
        _LINKED = _load_linked()
    return _LINKED.get(op, ())


def no_handler_message(op: BackendOp, capsule: KernelCapsule, available: Sequence[LinkedKernel]) -> str:
    """The verbatim "no matching executable handler is linked" message (anchor-backend.md §3.1)."""
    message = (
        f"torch: `{op.label}` selected capsule `{capsule.name}` "
        f"({capsule.provider.label}/{capsule.device.label}), but no matching executable handler is linked"
    )
    if available:
        message += "; available handlers: " + ", ".join(k.label for k in available)
    return message


def select_linked(op: BackendOp, capsule: KernelCapsule, available: Sequence[LinkedKernel]) -> LinkedKernel:
    """The first linked kernel with the capsule's op, provider and device, when the capsule's
    claims are those of the built-in capsule that kernel implements.

    A capsule added with ``BackendProfile.with_capsule_modules`` runs on the handler of its
    ``(op, provider, device)``, as in the original; beyond it, it may claim less than that
    handler's capsule (:data:`~torchlean.backend.capsule.CLAIMS_RULE`), but not other guards,
    tests, summaries, provenance or a reduction order
    for that code (:func:`~torchlean.backend.registry.built_in_claims_difference`): the record would
    name a guard that never ran or an order the code does not follow.

    Raises:
        SessionError: the verbatim no-handler message listing ``available``; or ``torch: `matmul`
            selected capsule `mylib.matmul` (reference/cpu), whose claims are not those of the
            code it would run: handler `TorchLean reference CPU` implements capsule
            `reference.matmul`; shape contract: ...``.
    """
    for kernel in available:
        if (
            kernel.op is capsule.op
            and kernel.provider is capsule.provider
            and kernel.device is capsule.device
        ):
            _require_own_claims(op, capsule, kernel)
            return kernel
    raise SessionError(no_handler_message(op, capsule, available))


def _require_own_claims(op: BackendOp, capsule: KernelCapsule, kernel: LinkedKernel) -> None:
    """Refuse running ``kernel`` under ``capsule`` when the capsule claims what the kernel's own
    built-in capsule does not (:func:`~torchlean.backend.registry.built_in_claims_difference`)."""
    mismatch = built_in_claims_difference(capsule)
    if mismatch is not None:
        own, difference = mismatch
        raise SessionError(
            f"torch: `{op.label}` selected capsule `{capsule.name}` "
            f"({capsule.provider.label}/{capsule.device.label}), whose claims are not those of "
            f"the code it would run: handler `{kernel.name}` implements capsule `{own.name}`; "
            f"{difference}. {CLAIMS_RULE}"
        )


def _view_version(out: Array, inputs: Sequence[Tensor | None]) -> VersionCounter | None:
    """The version counter of the input whose storage ``out`` may view (views share counters)."""
    if isinstance(out, np.ndarray):
        if out.base is None:
            return None
        for t in inputs:
            if t is not None and np.may_share_memory(out, t._data):
                return t._version
        return None
    if out._base is None:
        return None
    target = out.untyped_storage().data_ptr()
    for t in inputs:
        if t is None or isinstance(t._data, np.ndarray):
            continue
        if t._data.untyped_storage().data_ptr() == target:
            return t._version
    return None


def _where(data: Array) -> str:
    """Where a storage lives, for device comparisons and messages."""
    if isinstance(data, np.ndarray):
        return storage.HOST
    device = str(data.device)
    return f"{device} (torch storage)" if device == storage.HOST else device


OPTIONAL_INPUTS: Mapping[BackendOp, frozenset[int]] = MappingProxyType(
    {
        BackendOp.LINEAR: frozenset({2}),  # bias
        BackendOp.CONV: frozenset({2}),  # bias
        BackendOp.CONV_TRANSPOSE: frozenset({2}),  # bias
        BackendOp.LAYER_NORM: frozenset({1, 2}),  # affine weight and bias
        BackendOp.BATCH_NORM: frozenset({1, 2, 3, 4}),  # affine weight, bias, running statistics
        BackendOp.SCALED_DOT_PRODUCT_ATTENTION: frozenset({3}),  # mask
    }
)
"""The input positions where ``None`` stands for an absent optional input, per op (the kernels'
signatures: ``linear(x, w, b=None)``, ``batch_norm(x, weight, bias, running_mean, running_var)``,
...); every other position requires a Tensor."""


_RUNNING_STATISTIC = "{}, which an nn batch_norm layer's training forward updates in place"
INPUT_NAMES: Mapping[BackendOp, tuple[str, ...]] = MappingProxyType(
    {
        BackendOp.LINEAR: ("x", "weight", "bias"),
        BackendOp.CONV: ("x", "weight", "bias"),
        BackendOp.CONV_TRANSPOSE: ("x", "weight", "bias"),
        BackendOp.LAYER_NORM: ("x", "weight", "bias"),
        BackendOp.BATCH_NORM: (
            "x", "weight", "bias", _RUNNING_STATISTIC.format("running_mean"),
            _RUNNING_STATISTIC.format("running_var"),
        ),
        BackendOp.SCALED_DOT_PRODUCT_ATTENTION: ("q", "k", "v", "mask"),
        BackendOp.HARD_MASKED_SOFTMAX: ("x", "mask"),
        BackendOp.GATHER: ("x", "index"),
        BackendOp.SCATTER_ADD: ("base", "index", "src"),
    }
)
"""The names of an op's inputs (its functional form's parameters) where positions alone say
little: the tape's refusal of an input modified in place names it (``the input 3 (running_mean,
...) saved by `batch_norm```; review236 F3, review223 F6)."""


def check_operands(op: BackendOp, inputs: Sequence[object]) -> None:
    """Every input position holds a :class:`~torchlean.tensor.Tensor`, or ``None`` at a position
    of :data:`OPTIONAL_INPUTS` (an absent optional input).

    Raises:
        TensorTypeError: ``<op>: input <i> must be a torchlean Tensor; got <type> ...`` (also a
            ``TypeError``), naming what is accepted; ``None`` at a required position:
            ``matmul: input 1 is required: got None (accepted: a torchlean Tensor)``. The op leads,
            as in torchlean's other argument checks (not ``torch:``, which prefixes the
            original's selection and binding refusals).
    """
    for position, value in enumerate(inputs):
        if isinstance(value, Tensor):
            continue
        if value is None:
            if position in OPTIONAL_INPUTS.get(op, ()):
                continue
            raise TensorTypeError(
                f"{op.label}: input {position} is required: got None (accepted: a torchlean Tensor)"
            )
        optional = ", or None for an absent optional input" if position in OPTIONAL_INPUTS.get(op, ()) else ""
        raise TensorTypeError(
            f"{op.label}: input {position} must be a torchlean Tensor; got "
            f"{operand_type(value)} (accepted: a torchlean Tensor{optional}; "
            "convert data with torchlean.tensor(...); Python numbers and arrays mix with tensors only "
            "as operands of add, sub, mul, div, maximum, minimum and mse_loss, and as masks and "
            "index arrays)"
        )


def check_devices(op: BackendOp, capsule: KernelCapsule, inputs: Sequence[Tensor | None]) -> None:
    """Every input on one device, the kind the capsule targets: numpy storage for a ``cpu``
    capsule, torch storage on a CUDA device for a ``cuda`` capsule.

    Seam (documented, test-only): inside
    :func:`torchlean.backend.providers.native_cuda.extension.host_emulation` a ``cuda`` capsule
    takes torch storage on the CPU instead, the stand-in that the host-emulation build of the
    native kernels computes on (``extension.expected_device_type()``); outside it, CPU torch
    storage is refused like any other wrong device.

    Raises:
        DeviceError: ``torch: `<op>` got inputs on different devices: input i is on D1 and input
            j is on D2; ...`` or ``torch: `<op>` runs on capsule `<name>` for device `cuda`, but
            its inputs are on cpu; ...``.
    """
    first: tuple[int, str, Array] | None = None
    for i, t in enumerate(inputs):
        if t is None:
            continue
        data = t._data
        where = storage.HOST if isinstance(data, np.ndarray) else _where(data)
        if first is None:
            first = (i, where, data)
        elif where != first[1]:
            raise DeviceError(
                f"torch: `{op.label}` got inputs on different devices: input {first[0]} is on "
                f"{first[1]} and input {i} is on {where}; move them to one device with Tensor.to(...)"
            )
    if first is None:
        return
    data = first[2]
    if capsule.device is Device.CPU:
        fits = isinstance(data, np.ndarray)
    elif capsule.device is Device.CUDA:
        fits = not isinstance(data, np.ndarray) and data.device.type == extension.expected_device_type()
    else:
        fits = False
    if not fits:
        raise DeviceError(
            f"torch: `{op.label}` runs on capsule `{capsule.name}` for device `{capsule.device.label}`, "
            f"but its inputs are on {first[1]}; move them with Tensor.to({capsule.device.label!r})"
        )


class KernelMemoryError(TorchLeanError, MemoryError):
    """A kernel's forward or VJP could not allocate memory (also a ``MemoryError``, whichever
    provider ran it: numpy's ``MemoryError`` on the reference path, torch's CPU allocator failure
    or ``torch.OutOfMemoryError`` on the aten and CUDA paths). The message names the op, the
    capsule and the stage and keeps the allocator's text; the original is its ``__cause__``."""


_TORCH_CPU_ALLOCATOR_FAILURES = (
    "DefaultCPUAllocator: can't allocate memory",
    "DefaultCPUAllocator: not enough memory",
)
"""How torch's CPU allocator words a failed allocation (a plain ``RuntimeError``: "[enforce fail
at alloc_cpu.cpp:127] ... DefaultCPUAllocator: can't allocate memory: you tried to allocate N
bytes"; older releases say "not enough memory")."""


def _memory_error(capsule: KernelCapsule, stage: str, exc: BaseException) -> KernelMemoryError | None:
    """``exc`` as a :class:`KernelMemoryError` when it is an allocation failure, else None.

    Recognised: ``MemoryError`` (numpy), torch's ``OutOfMemoryError`` by type (torch is looked up
    in ``sys.modules``: a torch exception implies torch is imported, and this module must not
    import it), and torch's CPU allocator failure by its message.
    """
    if isinstance(exc, KernelMemoryError):
        return None
    if not isinstance(exc, MemoryError):
        torch_module = sys.modules.get("torch")
        cuda_oom = torch_module is not None and isinstance(
            exc, getattr(torch_module, "OutOfMemoryError", ())
        )
        text = str(exc)
        if not cuda_oom and not any(failure in text for failure in _TORCH_CPU_ALLOCATOR_FAILURES):
            return None
    return KernelMemoryError(
        f"torch: `{capsule.op.label}` {stage} on capsule `{capsule.name}` "
        f"({capsule.provider.label}/{capsule.device.label}) could not allocate memory: {exc}"
    )


def _raise_if_allocation_failure(capsule: KernelCapsule, stage: str, exc: BaseException) -> None:
    """Raise ``exc`` as :class:`KernelMemoryError` (from ``exc``) when it is an allocation
    failure; return otherwise, for the caller's bare ``raise``. A plain ``try``/``except`` at the
    call sites costs nothing on the per-op path (a context manager would cost a call per op)."""
    memory = _memory_error(capsule, stage, exc)
    if memory is not None:
        raise memory from exc


@dataclass(frozen=True, slots=True)
class BoundKernel:
    """An accepted kernel bound once to its linked implementation: the eager hot path.

    ``executable`` is :func:`~torchlean.backend.binding.bind` applied once to ``accepted`` and a
    :class:`~torchlean.backend.binding.KernelHandler` whose ``execute`` is the linked forward; every
    later call runs ``executable.run(arrays, params)``, so the mint check of the sealed kernels
    (:func:`~torchlean.backend.sealed.require_minted`) still runs per call, but planning,
    acceptance and binding do not. ``differentiable``
    (the op requires a VJP) and ``host`` (the capsule targets ``cpu``) are read off ``accepted``
    once, for the per-call path.
    """

    accepted: AcceptedKernel
    linked: LinkedKernel
    executable: ExecutableKernel[Array]
    differentiable: bool
    host: bool

    def __post_init__(self) -> None:
        """Refuse a record whose fields disagree: :func:`execute_bound` runs ``executable`` but
        takes the record, the VJP and the device rules from the other fields, so a hand-built
        ``BoundKernel`` pairing a matmul with a mul kernel's VJP gave wrong gradients recorded as
        the matmul capsule's (review18 core F3). :func:`bind_linked` builds consistent ones.

        Raises:
            SessionError: naming the field that disagrees.
        """
        executable, accepted, linked = self.executable, self.accepted, self.linked
        problems = []
        if getattr(executable, "accepted", None) is not accepted:
            problems.append("executable was bound to another accepted kernel")
        handler = getattr(executable, "handler", None)
        if handler is None or handler.execute is not linked.forward or handler.name != linked.name:
            problems.append(f"executable's handler is not linked kernel {linked.name}'s forward")
        if self.differentiable is not accepted.op.requires_vjp:
            problems.append(f"differentiable={self.differentiable}, but op {accepted.op.label} says "
                            f"{accepted.op.requires_vjp}")
        if self.host is not (accepted.capsule.device is Device.CPU):
            problems.append(f"host={self.host} for a capsule on {accepted.capsule.device.label}")
        if problems:
            raise SessionError(f"torch: inconsistent BoundKernel for `{accepted.op.label}`: "
                               f"{'; '.join(problems)} (build one with bind_linked)")


def bind_linked(accepted: AcceptedKernel, linked: LinkedKernel) -> BoundKernel:
    """Bind ``accepted`` to ``linked`` once (op, then provider, then device), when the accepted
    capsule's claims are those of the code ``linked`` runs (as :func:`select_linked` requires).

    Raises:
        beartype.roar.BeartypeCallHintViolation: ``accepted`` was not minted by the gate.
        SessionError: ``torch: invalid executable backend binding: <binding error>``; the claims
            refusal of :func:`select_linked`.
    """
    _require_own_claims(accepted.op, accepted.capsule, linked)
    if linked.prepare is not None:
        linked.prepare()  # a provider's one-time set-up (importing torch), not a kernel's time
    handler: KernelHandler[Array] = KernelHandler(
        linked.name, linked.op, linked.provider, linked.device, linked.forward
    )
    try:
        executable = bind(accepted, handler)
    except BindingError as exc:
        raise SessionError(f"torch: invalid executable backend binding: {exc}") from exc
    capsule = accepted.capsule
    return BoundKernel(
        accepted, linked, executable, accepted.op.requires_vjp, capsule.device is Device.CPU
    )


def _host_storages(op: BackendOp, inputs: Sequence[object]) -> list[Array | None] | None:
    """The numpy storages of ``inputs`` when every one is a host Tensor or None at an optional
    position (:data:`OPTIONAL_INPUTS`), else None (the caller's checks then say why)."""
    arrays: list[Array | None] = []
    for position, t in enumerate(inputs):
        if t is None:
            if position not in OPTIONAL_INPUTS.get(op, ()):
                return None
            arrays.append(None)
        elif isinstance(t, Tensor) and type(t._data) is np.ndarray:
            arrays.append(t._data)
        else:
            return None
    return arrays


def execute_bound(bound: BoundKernel, inputs: Sequence[Tensor | None], params: Mapping[str, Any]) -> Tensor:
    """Execute a bound kernel on ``inputs`` and record its tape node; return the result.

    Steps 0, 2 and 4 of the module docstring in that order (operands, devices, VJP guard, then
    the kernel and its tape node), with a fast path for the common case of host tensors on a
    ``cpu`` capsule. ``params`` are the kernel's keyword parameters (axes, strides, ...).

    Raises:
        TensorTypeError: an input that is neither a Tensor nor None (:func:`check_operands`).
        DeviceError: inputs on different devices, or not on the capsule's device
            (:func:`check_devices`).
        GuardError: the kernel's guard refused the inputs.
        SessionError: an input requires a gradient but the capsule is forward-only (VJP mode none)
            or its linked kernel has no VJP, before the kernel runs.
        KernelMemoryError: the kernel could not allocate memory (also a ``MemoryError``, on every
            provider: ``torch: `broadcast` forward on capsule `aten.broadcast` (aten/cpu) could
            not allocate memory: <the allocator's text>``); its VJP raises the same (``VJP``
            instead of ``forward``) during ``backward``.
        beartype.roar.BeartypeCallHintViolation: the bound executable or its accepted kernel is no
            longer the one the gates minted (``ExecutableKernel.run``).
    """
    accepted = bound.accepted
    capsule = accepted.capsule
    arrays = _host_storages(accepted.op, inputs) if bound.host else None
    if arrays is None:
        check_operands(accepted.op, inputs)
        check_devices(accepted.op, capsule, inputs)
        arrays = [None if t is None else t._data for t in inputs]
    linked = bound.linked
    if linked.vjp_guard is not None:
        linked.vjp_guard(capsule, accepted.policy)
    # which inputs need a cotangent, as a list of bools (``True in`` compares bools in C; a
    # Tensor's == is not an identity test); decided before the kernel runs, so a capsule that
    # cannot own this op's backward is refused before it computes anything
    needs: list[bool] | None = None
    parents: tuple[Tensor | None, ...] | None = None
    if bound.differentiable and is_grad_enabled():
        # the parents (an input that requires a gradient, else None) first: needs is read off them
        parents = tuple([t if t is not None and t._requires_grad else None for t in inputs])
        needs = [p is not None for p in parents]
        if True not in needs:
            needs = None
        else:
            _require_backward(accepted, linked)
    profiles = profiler.active()
    try:
        if profiles:
            out: Array = _timed_forward(bound, tuple(arrays), params, profiles)
        else:
            out = bound.executable.run(tuple(arrays), params)
    except (MemoryError, RuntimeError) as exc:
        _raise_if_allocation_failure(capsule, "forward", exc)
        raise
    version = _view_version(out, inputs)
    if needs is None:
        return Tensor._make(out, False, None, version, accepted)
    assert parents is not None
    vjp = linked.vjp
    assert vjp is not None  # _require_backward
    counter = VersionCounter() if version is None else version
    saved = tuple([None if t is None else SavedArray(t._data, t._version) for t in inputs])
    rule = _local_rule(linked, vjp, capsule, needs, params)
    if profiles:
        rule = _timed_rule(rule, capsule, profiles)
    node = Node(accepted.op.label, parents, saved, SavedArray(out, counter), rule,
                INPUT_NAMES.get(accepted.op, ()))
    return Tensor._make(out, True, node, counter, accepted)


def _timed_forward(
    bound: BoundKernel,
    arrays: tuple[Array | None, ...],
    params: Mapping[str, Any],
    profiles: tuple[profiler.KernelProfile, ...],
) -> Array:
    """``bound.executable.run(arrays, params)``, its time added to each open profile."""
    capsule = bound.accepted.capsule
    return _timed(lambda: bound.executable.run(arrays, params), capsule, profiler.synchronizer(capsule),
                  profiles, vjp=False)


def _timed_rule(
    rule: LocalRule, capsule: KernelCapsule, profiles: tuple[profiler.KernelProfile, ...]
) -> LocalRule:
    """``rule``, its time added to each of ``profiles`` (those open when the node was recorded)
    that is still open when the backward pass runs it."""
    sync = profiler.synchronizer(capsule)

    def timed(g: Array, ins: tuple[Array | None, ...], o: Array) -> Sequence[Array | None]:
        still_open = tuple(profile for profile in profiles if profile.is_open)
        if not still_open:
            return rule(g, ins, o)
        return _timed(lambda: rule(g, ins, o), capsule, sync, still_open, vjp=True)

    return timed


def _timed(
    call: Callable[[], R],
    capsule: KernelCapsule,
    sync: Callable[[], None] | None,
    profiles: tuple[profiler.KernelProfile, ...],
    *,
    vjp: bool,
) -> R:
    """``call()``, its wall time (``sync``, a device synchronisation, before and after) added to
    each of ``profiles`` as a forward kernel or a VJP of ``capsule``; nothing when it raises."""
    if sync is not None:
        sync()
    started = time.perf_counter()
    result = call()
    if sync is not None:
        sync()
    seconds = time.perf_counter() - started
    for profile in profiles:
        profile.add(capsule, seconds, vjp=vjp)
    return result


def _require_backward(accepted: AcceptedKernel, linked: LinkedKernel) -> None:
    """Refuse, before the kernel runs, recording a tape node for ``accepted`` when it was accepted
    under a policy of VJP mode ``none`` (an inference profile: it asked for no backward, and the
    audit would say so while one ran; it is also the only policy that admits a forward-only
    capsule, whose record says no backward exists, for a differentiable op), or when its linked
    kernel has no VJP.

    Raises:
        SessionError: naming the op, the capsule and the way out (the op's label is read only
            then: this runs once per recorded op).
    """
    op, capsule = accepted.op, accepted.capsule
    if accepted.policy.vjp_mode is VJPMode.NONE:
        kind = "the forward-only capsule" if capsule.vjp_mode is VJPMode.NONE else "capsule"
        raise SessionError(
            f"torch: `{op.label}` selected {kind} `{capsule.name}` (vjp {capsule.vjp_mode.label}) under a "
            "policy of VJP mode none (inference: no backward), but an input requires a gradient; run it "
            "under torchlean.no_grad(), or with a profile whose VJP mode owns a backward (torchlean-tape "
            "or backend-vjp)"
        )
    if linked.vjp is None:
        raise SessionError(
            f"torch: `{op.label}` selected capsule `{capsule.name}`, whose linked kernel `{linked.name}` has "
            "no VJP, but an input requires a gradient"
        )


def _local_rule(
    linked: LinkedKernel,
    vjp: VJPFn,
    capsule: KernelCapsule,
    needs: list[bool],
    params: Mapping[str, Any],
) -> LocalRule:
    """The tape node's rule: the linked VJP, told which inputs need a cotangent (``vjp_needs``)
    when some input does not and the kernel can skip it."""
    vjp_needs = linked.vjp_needs
    if vjp_needs is not None and False in needs:
        mask = tuple(needs)

        def skipping(g: Array, ins: tuple[Array | None, ...], o: Array) -> Sequence[Array | None]:
            try:
                return vjp_needs(capsule, g, ins, o, params, mask)
            except (MemoryError, RuntimeError) as exc:
                _raise_if_allocation_failure(capsule, "VJP", exc)
                raise

        return skipping

    def rule(g: Array, ins: tuple[Array | None, ...], o: Array) -> Sequence[Array | None]:
        try:
            return vjp(capsule, g, ins, o, params)
        except (MemoryError, RuntimeError) as exc:
            _raise_if_allocation_failure(capsule, "VJP", exc)
            raise

    return rule
