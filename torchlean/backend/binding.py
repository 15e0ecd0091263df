"""Binding an accepted kernel to the handler that will execute it.

Source: the seed chapter ("Contract Checks", step 5); anchor-backend.md §1.17, §2.10. :func:`bind`
pairs an :class:`AcceptedKernel` (minted by the gate) with a :class:`KernelHandler` of the same
operation, provider and device, checked in that order. The equalities certify dispatch identity
only, never numerical correctness. If a build has no such handler, execution fails before entering
a different provider's code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import InitVar, dataclass
from typing import Annotated, Any, Generic, TypeVar, final

from beartype import beartype
from beartype.vale import Is

from torchlean.backend.acceptance import AcceptedKernel
from torchlean.backend.capsule import KernelCapsule
from torchlean.backend.errors import BindingError
from torchlean.backend.fields import (
    BackendTypeError,
    describe,
    enum_field,
    instance_argument,
    name_field,
    parse_member,
)
from torchlean.backend.sealed import (
    _GATE,
    Sealable,
    _GateToken,
    _mint,
    check_gate_token,
    is_minted,
    require_minted,
    sealed,
)
from torchlean.backend.vocabulary import BackendOp, Device, Provider

__all__ = ["Executable", "ExecutableKernel", "KernelHandler", "bind", "validate_eager_request"]

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class KernelHandler(Generic[R]):
    """An executor for one (op, provider, device).

    ``execute(capsule, *args)`` receives the selected capsule first, then whatever arguments the
    caller passes to :meth:`ExecutableKernel.run` (none in the original's form
    ``execute : KernelCapsule → α``; the eager runtime passes the input storages and the op's
    parameters, so one bound handler serves every later call of the op).

    Every field is checked when the handler is built, as the other backend records check theirs:
    ``name`` a printable non-empty string; ``op``, ``provider`` and ``device`` a member or its
    label (stored as the member); ``execute`` a callable.

    Raises:
        BackendTypeError: a field of the wrong type (``KernelHandler.execute must be a callable
            (execute(capsule, *args)), got None (NoneType)``).
        BackendValueError: an empty or unprintable name; an unknown label (a
            ``BackendLabelError``, also an ``UnknownLabelError``).
    """

    name: str
    op: BackendOp
    provider: Provider
    device: Device
    execute: Callable[..., R]

    def __post_init__(self) -> None:
        name_field(self, "name")
        enum_field(self, "op", BackendOp)
        enum_field(self, "provider", Provider)
        enum_field(self, "device", Device)
        if not callable(self.execute):
            raise BackendTypeError(
                f"KernelHandler.execute must be a callable (execute(capsule, *args)), "
                f"got {describe(self.execute)}"
            )

    def matches_capsule(self, capsule: KernelCapsule) -> bool:
        """Op, provider and device all equal the capsule's."""
        return self.op is capsule.op and self.provider is capsule.provider and self.device is capsule.device


def _binding_error(capsule: KernelCapsule, handler: KernelHandler[Any]) -> str | None:
    if handler.op is not capsule.op:
        return (
            f"handler `{handler.name}` implements `{handler.op.label}`, "
            f"but capsule `{capsule.name}` implements `{capsule.op.label}`"
        )
    if handler.provider is not capsule.provider:
        return (
            f"handler `{handler.name}` uses provider `{handler.provider.label}`, "
            f"but capsule `{capsule.name}` selects `{capsule.provider.label}`"
        )
    if handler.device is not capsule.device:
        return (
            f"handler `{handler.name}` targets `{handler.device.label}`, "
            f"but capsule `{capsule.name}` targets `{capsule.device.label}`"
        )
    return None


def _is_intact_executable(kernel: object) -> bool:
    return isinstance(kernel, ExecutableKernel) and is_minted(kernel) and is_minted(kernel.accepted)


@final
@sealed("torchlean.backend.binding.bind")
@dataclass(frozen=True, slots=True, eq=False)
class ExecutableKernel(Sealable, Generic[R]):
    """An accepted kernel bound to a matching handler; only :func:`bind` makes one."""

    accepted: AcceptedKernel
    handler: KernelHandler[R]
    _gate: InitVar[_GateToken]

    def __post_init__(self, _gate: _GateToken) -> None:
        check_gate_token(type(self), _gate)

    def __repr__(self) -> str:
        accepted = getattr(self, "accepted", None)
        handler = getattr(self, "handler", None)
        if accepted is None or handler is None:  # a forgery that never ran __init__
            return "ExecutableKernel(<unset>)"
        return f"ExecutableKernel({accepted!r}, {handler.name})"

    @property
    def capsule(self) -> KernelCapsule:
        """The accepted capsule this kernel's handler implements."""
        return self.accepted.capsule

    @property
    def op(self) -> BackendOp:
        """The op the kernel was accepted for."""
        return self.accepted.op

    def run(self, *args: Any) -> R:
        """Call ``handler.execute(capsule, *args)`` after the mint check (this kernel and its
        accepted kernel minted and unchanged; about 2 µs, measured by ``bench/dispatch.py``).

        Raises:
            UnmintedError: this kernel (or its accepted kernel) was not minted by its gate or was
                changed since.
        """
        require_minted(self, "ExecutableKernel.run", _is_intact_executable)
        result: R = self.handler.execute(self.accepted.capsule, *args)
        return result


Executable = Annotated[ExecutableKernel[Any], Is[_is_intact_executable]]
"""Beartype hint refusing executable kernels that are not minted and unchanged (nor their accepted
kernel), for a ``@beartype`` API of one's own; torchlean's consumers call ``require_minted``."""


@beartype
def bind(accepted: AcceptedKernel, handler: KernelHandler[R]) -> ExecutableKernel[R]:
    """The gate from an accepted kernel to an executable one; checks op, provider, device in order.

    Raises:
        UnmintedError: ``bind: AcceptedKernel was not minted by its gate
            (torchlean.backend.acceptance.accept) or was changed since``.
        BindingError: ``handler `h` implements `add`, but capsule `reference.relu` implements `relu` ``,
            ``handler `h` uses provider `torchlean`, but capsule `reference.relu` selects `reference` ``
            or ``handler `h` targets `cuda`, but capsule `reference.relu` targets `cpu` ``.
        beartype.roar.BeartypeCallHintParamViolation: an argument that is not an
            :class:`AcceptedKernel` or not a :class:`KernelHandler` (its ``@beartype``; neither a
            ``TypeError`` nor a torchlean error: review160 F6). Under ``python -O``, where the
            decorator checks nothing, a non-kernel is an ``UnmintedError`` and a non-handler a
            ``BackendTypeError``, as :func:`~torchlean.backend.acceptance.accept` refuses its
            arguments (review161 F9).
    """
    require_minted(accepted, "bind")
    if not isinstance(handler, KernelHandler):
        raise BackendTypeError(f"bind: handler must be a KernelHandler, got {describe(handler)}")
    message = _binding_error(accepted.capsule, handler)
    if message is not None:
        raise BindingError(message)
    kernel = ExecutableKernel(accepted, handler, _gate=_GATE)
    _mint(kernel)
    return kernel


def validate_eager_request(capsule: KernelCapsule, op: BackendOp | str, device: Device | str) -> None:
    """Check that a selected capsule serves the eager request (op first, then device); ``op`` and
    ``device`` may be members or their labels.

    Raises:
        BindingError: ``capsule `c` implements `relu`, not `add` `` or
            ``capsule `c` targets `cpu`, not `cuda` ``.
        BackendTypeError: ``capsule must be a KernelCapsule, got None (NoneType)``; an ``op`` or
            ``device`` that is neither a member nor a string.
        UnknownLabelError: an unknown op or device label.
    """
    capsule = instance_argument(capsule, KernelCapsule, "capsule")
    op = parse_member(BackendOp, op, "op")
    device = parse_member(Device, device, "device")
    if capsule.op is not op:
        raise BindingError(f"capsule `{capsule.name}` implements `{capsule.op.label}`, not `{op.label}`")
    if capsule.device is not device:
        raise BindingError(f"capsule `{capsule.name}` targets `{capsule.device.label}`, not `{device.label}`")
