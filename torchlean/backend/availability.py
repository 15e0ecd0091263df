"""Build declarations of devices and providers available for planning.

Source: anchor-backend.md §1.19; seed chapter, "Contract Checks" step 1. Availability is a
declaration made by a profile, not hardware discovery: eager execution probes hardware separately
before launching a kernel.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from torchlean.backend.capsule import KernelCapsule
from torchlean.backend.fields import BackendTypeError, describe, enum_tuple_field
from torchlean.backend.vocabulary import Device, Provider

__all__ = ["Availability"]


@dataclass(frozen=True, slots=True)
class Availability:
    """Devices and providers a profile declares (defaults: the CPU declaration).

    Each is a tuple (a list is converted) of members or their labels (``("cpu",)``, stored as
    members).

    Raises:
        BackendTypeError: not a tuple or list (a lone ``"cpu"`` included), or an item that is
            neither a member nor a string.
        BackendLabelError: an unknown label (``Availability.devices[0]: unknown device gpu
            (known: ...)``).
    """

    devices: tuple[Device, ...] = (Device.CPU,)
    providers: tuple[Provider, ...] = (Provider.REFERENCE, Provider.TORCHLEAN)

    def __post_init__(self) -> None:
        enum_tuple_field(self, "devices", Device)
        enum_tuple_field(self, "providers", Provider)

    @classmethod
    def cpu(cls) -> Availability:
        """Devices ``[cpu]``, providers ``[reference, torchlean]``."""
        return cls()

    @classmethod
    def cuda(cls, with_libtorch: bool = False) -> Availability:
        """Devices ``[cpu, cuda]``, providers ``[reference, torchlean, native-cuda]`` (+ ``libtorch``).

        Raises:
            BackendTypeError: ``with_libtorch`` is not ``True`` or ``False`` (``"false"`` would add
                libtorch): ``Availability.cuda: with_libtorch must be True or False, got 'false' (str)``.
        """
        if not isinstance(with_libtorch, bool):
            raise BackendTypeError(
                f"Availability.cuda: with_libtorch must be True or False, got {describe(with_libtorch)}"
            )
        providers: tuple[Provider, ...] = (Provider.REFERENCE, Provider.TORCHLEAN, Provider.NATIVE_CUDA)
        if with_libtorch:
            providers += (Provider.LIBTORCH,)
        return cls((Device.CPU, Device.CUDA), providers)

    def admits_capsule(self, capsule: KernelCapsule) -> bool:
        return capsule.device in self.devices and capsule.provider in self.providers

    def filter_capsules(self, capsules: Iterable[KernelCapsule]) -> tuple[KernelCapsule, ...]:
        """The admitted capsules, catalog order preserved."""
        return tuple(capsule for capsule in capsules if self.admits_capsule(capsule))
