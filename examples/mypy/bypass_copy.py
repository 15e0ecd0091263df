"""Copying or replacing sealed values: each marked line is a mypy error."""

import copy
import dataclasses
from collections.abc import Callable
from typing import NewType, TypeVar

from torchlean.backend import profiles
from torchlean.backend.acceptance import AcceptedGraphKernelPlan, AcceptedKernel, accept
from torchlean.backend.binding import KernelHandler, bind
from torchlean.backend.capsule import KernelCapsule
from torchlean.backend.vocabulary import BackendOp

profile = profiles.get("checked_cpu")
planned = profile.plan_ops([BackendOp.RELU]).kernels[0]
kernel = accept(planned, profile.policy)

copy.copy(kernel)  # E: copy.copy() of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_copy)  [torchlean-sealed]
copy.deepcopy(kernel)  # E: copy.deepcopy() of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_copy)  [torchlean-sealed]
dataclasses.replace(kernel, policy=profile.policy)  # E: Missing named argument "_gate" for "replace" of "AcceptedKernel"  [call-arg] # N: "replace" defined in "torchlean.backend.acceptance" # E: dataclasses.replace() of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_copy)  [torchlean-sealed]


def capsule_name(capsule: KernelCapsule) -> str:
    return capsule.name


executable = bind(kernel, KernelHandler("name", BackendOp.RELU, planned.capsule.provider, planned.capsule.device, capsule_name))
copy.copy(executable)  # E: copy.copy() of sealed type "ExecutableKernel" outside its gate (allowed only in: torchlean.backend.binding.bind; caller: module bypass_copy)  [torchlean-sealed]
maybe_kernel = kernel if planned.capsule.supports_forward else None
copy.deepcopy(maybe_kernel)  # E: copy.deepcopy() of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_copy)  [torchlean-sealed]


def snapshot(plan: AcceptedGraphKernelPlan) -> AcceptedGraphKernelPlan:
    return copy.deepcopy(plan)  # E: copy.deepcopy() of sealed type "AcceptedGraphKernelPlan" outside its gate (allowed only in: torchlean.backend.acceptance.accept_graph_kernel_plan; caller: bypass_copy.snapshot)  [torchlean-sealed]


# A type variable bounded by a sealed (final) class can only be that class: reported as the class.
K = TypeVar("K", bound=AcceptedKernel)


# Module-level aliases of the copy routes are followed.
shallow = copy.copy
shallow(kernel)  # E: copy.copy() of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_copy)  [torchlean-sealed]
rebuild = dataclasses.replace
rebuild(kernel, policy=profile.policy)  # E: dataclasses.replace() of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_copy)  [torchlean-sealed]
# An annotated alias too: its declared Callable type does not name the function, the assignment does.
declared_shallow: Callable[[AcceptedKernel], AcceptedKernel] = copy.copy
declared_shallow(kernel)  # E: copy.copy() of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_copy)  [torchlean-sealed]


def duplicate(value: K) -> K:
    return copy.copy(value)  # E: copy.copy() of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: bypass_copy.duplicate)  [torchlean-sealed]


def blank(cls: type[K]) -> K:
    return object.__new__(cls)  # E: object.__new__() of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: bypass_copy.blank)  [torchlean-sealed]


# A NewType of a sealed class is named with the class it stands for.
KernelId = NewType("KernelId", AcceptedKernel)
copy.copy(KernelId(kernel))  # E: copy.copy() of sealed type "AcceptedKernel" (as "KernelId") outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_copy)  [torchlean-sealed]
