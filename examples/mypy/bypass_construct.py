"""Building sealed types outside their gates: each marked line is a mypy error.

Check with ``mypy --strict`` and ``plugins = ["torchlean.mypy_plugin"]``; the marker after
``# E:`` is the exact error mypy prints (tests/typing/test_mypy_examples.py compares them).
"""

from collections.abc import Callable

import torchlean.backend.acceptance as acceptance
from torchlean.backend import profiles
from torchlean.backend.acceptance import AcceptedGraphKernelPlan, AcceptedKernel, accept
from torchlean.backend.binding import ExecutableKernel, KernelHandler, bind
from torchlean.backend.capsule import KernelCapsule
from torchlean.backend.planner import PlannedKernel
# mypy has no plugin hook for import statements, so this import is not reported; each use of the
# private token below is (see bypass_private.py).
from torchlean.backend.sealed import _GATE
from torchlean.backend.vocabulary import BackendOp

profile = profiles.get("checked_cpu")
planned = profile.plan_ops([BackendOp.RELU]).kernels[0]
kernel = accept(planned, profile.policy)

# The private gate token satisfies the dataclass, but not the plugin: both the construction and
# the use of the token are reported.
AcceptedKernel(planned.op, planned.capsule, profile.policy, _gate=_GATE)  # E: Construction of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_construct)  [torchlean-sealed] # E: "torchlean.backend.sealed._GATE" is private to torchlean: sealed values come only from their gates (caller: module bypass_construct)  [torchlean-sealed]
# Without the token, mypy's own dataclass check fires as well.
AcceptedKernel(planned.op, planned.capsule, profile.policy)  # E: Missing positional argument "_gate" in call to "AcceptedKernel"  [call-arg] # E: Construction of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_construct)  [torchlean-sealed]
Forged = AcceptedKernel
Forged(planned.op, planned.capsule, profile.policy, _gate=_GATE)  # E: Construction of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_construct)  [torchlean-sealed] # E: "torchlean.backend.sealed._GATE" is private to torchlean: sealed values come only from their gates (caller: module bypass_construct)  [torchlean-sealed]
type(kernel)(planned.op, planned.capsule, profile.policy, _gate=_GATE)  # E: Construction of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_construct)  [torchlean-sealed] # E: "torchlean.backend.sealed._GATE" is private to torchlean: sealed values come only from their gates (caller: module bypass_construct)  [torchlean-sealed]
kernel_class: type[AcceptedKernel] = AcceptedKernel
kernel_class(planned.op, planned.capsule, profile.policy, _gate=_GATE)  # E: Construction of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_construct)  [torchlean-sealed] # E: "torchlean.backend.sealed._GATE" is private to torchlean: sealed values come only from their gates (caller: module bypass_construct)  [torchlean-sealed]


def capsule_name(capsule: KernelCapsule) -> str:
    return capsule.name


handler = KernelHandler("name", BackendOp.RELU, planned.capsule.provider, planned.capsule.device, capsule_name)
executable = bind(kernel, handler)
ExecutableKernel(kernel, handler, _gate=_GATE)  # E: Construction of sealed type "ExecutableKernel" outside its gate (allowed only in: torchlean.backend.binding.bind; caller: module bypass_construct)  [torchlean-sealed] # E: "torchlean.backend.sealed._GATE" is private to torchlean: sealed values come only from their gates (caller: module bypass_construct)  [torchlean-sealed]
ExecutableKernel[str](kernel, handler, _gate=_GATE)  # E: Construction of sealed type "ExecutableKernel" outside its gate (allowed only in: torchlean.backend.binding.bind; caller: module bypass_construct)  [torchlean-sealed] # E: "torchlean.backend.sealed._GATE" is private to torchlean: sealed values come only from their gates (caller: module bypass_construct)  [torchlean-sealed]


def regroup(plan: AcceptedGraphKernelPlan) -> AcceptedGraphKernelPlan:
    """A helper function is not a gate either; the message names it as the caller."""
    return AcceptedGraphKernelPlan(plan.graph_plan, plan.grouped_plan, plan.policy, plan.kernels, _gate=_GATE)  # E: Construction of sealed type "AcceptedGraphKernelPlan" outside its gate (allowed only in: torchlean.backend.acceptance.accept_graph_kernel_plan; caller: bypass_construct.regroup)  [torchlean-sealed] # E: "torchlean.backend.sealed._GATE" is private to torchlean: sealed values come only from their gates (caller: bypass_construct.regroup)  [torchlean-sealed]


def accept_quickly(planned: PlannedKernel) -> AcceptedKernel:
    """Gates are matched by full name: a look-alike in user code is not one."""
    return AcceptedKernel(planned.op, planned.capsule, profile.policy, _gate=_GATE)  # E: Construction of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: bypass_construct.accept_quickly)  [torchlean-sealed] # E: "torchlean.backend.sealed._GATE" is private to torchlean: sealed values come only from their gates (caller: bypass_construct.accept_quickly)  [torchlean-sealed]


class KernelCache:
    fallback = AcceptedKernel(planned.op, planned.capsule, profile.policy, _gate=_GATE)  # E: Construction of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: class body of bypass_construct.KernelCache)  [torchlean-sealed] # E: "torchlean.backend.sealed._GATE" is private to torchlean: sealed values come only from their gates (caller: class body of bypass_construct.KernelCache)  [torchlean-sealed]

    def fresh(self) -> AcceptedKernel:
        return AcceptedKernel(planned.op, planned.capsule, profile.policy, _gate=_GATE)  # E: Construction of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: bypass_construct.KernelCache.fresh)  [torchlean-sealed] # E: "torchlean.backend.sealed._GATE" is private to torchlean: sealed values come only from their gates (caller: bypass_construct.KernelCache.fresh)  [torchlean-sealed]



class Holder:
    """A class attribute holding the class: mypy names the callee by the class (a method hook)."""

    cls = AcceptedKernel

    def make(self) -> AcceptedKernel:
        return self.cls(planned.op, planned.capsule, profile.policy, _gate=_GATE)  # E: Construction of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: bypass_construct.Holder.make)  [torchlean-sealed] # E: "torchlean.backend.sealed._GATE" is private to torchlean: sealed values come only from their gates (caller: bypass_construct.Holder.make)  [torchlean-sealed]


Holder.cls(planned.op, planned.capsule, profile.policy, _gate=_GATE)  # E: Construction of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_construct)  [torchlean-sealed] # E: "torchlean.backend.sealed._GATE" is private to torchlean: sealed values come only from their gates (caller: module bypass_construct)  [torchlean-sealed]
Holder().cls(planned.op, planned.capsule, profile.policy, _gate=_GATE)  # E: Construction of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_construct)  [torchlean-sealed] # E: "torchlean.backend.sealed._GATE" is private to torchlean: sealed values come only from their gates (caller: module bypass_construct)  [torchlean-sealed]

# A module-level variable declared as a callable, holding the class (review157 F2): mypy types the
# call by the declaration; the plugin reads the class from the assignment.
declared_maker: Callable[..., AcceptedKernel] = AcceptedKernel
loosely_declared: Callable[..., object] = AcceptedKernel
declared_maker(planned.op, planned.capsule, profile.policy, _gate=_GATE)  # E: Construction of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_construct)  [torchlean-sealed] # E: "torchlean.backend.sealed._GATE" is private to torchlean: sealed values come only from their gates (caller: module bypass_construct)  [torchlean-sealed]
loosely_declared(planned.op, planned.capsule, profile.policy, _gate=_GATE)  # E: Construction of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_construct)  [torchlean-sealed] # E: "torchlean.backend.sealed._GATE" is private to torchlean: sealed values come only from their gates (caller: module bypass_construct)  [torchlean-sealed]

# The real gate, reached through its module, is fine.
again = acceptance.accept(planned, profile.policy)
