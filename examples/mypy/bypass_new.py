"""Allocating sealed types with ``__new__`` or re-running ``__init__``: each marked line is a mypy error."""

from torchlean.backend import profiles
from torchlean.backend.acceptance import AcceptedKernel, accept
from torchlean.backend.binding import ExecutableKernel
from torchlean.backend.sealed import _GATE
from torchlean.backend.vocabulary import BackendOp

profile = profiles.get("checked_cpu")
kernel = accept(profile.plan_ops([BackendOp.RELU]).kernels[0], profile.policy)

AcceptedKernel.__new__(AcceptedKernel)  # E: AcceptedKernel.__new__() of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_new)  [torchlean-sealed]
object.__new__(AcceptedKernel)  # E: object.__new__() of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_new)  [torchlean-sealed]
# super(C, C).__new__ is object.__new__ here; mypy gives the bound method no full name, the plugin
# still sees the class passed to it.
super(AcceptedKernel, AcceptedKernel).__new__(AcceptedKernel)  # E: object.__new__() of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_new)  [torchlean-sealed]
object.__new__(type(kernel))  # E: object.__new__() of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_new)  [torchlean-sealed]
executable_class = ExecutableKernel
object.__new__(executable_class)  # E: object.__new__() of sealed type "ExecutableKernel" outside its gate (allowed only in: torchlean.backend.binding.bind; caller: module bypass_new)  [torchlean-sealed]


def blank(cls: type[AcceptedKernel]) -> AcceptedKernel:
    return cls.__new__(cls)  # E: AcceptedKernel.__new__() of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: bypass_new.blank)  [torchlean-sealed]


# Re-running __init__ on a minted value rewrites its fields in place.
AcceptedKernel.__init__(kernel, kernel.op, kernel.capsule, profile.policy, _gate=_GATE)  # E: AcceptedKernel.__init__() of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_new)  [torchlean-sealed] # E: "torchlean.backend.sealed._GATE" is private to torchlean: sealed values come only from their gates (caller: module bypass_new)  [torchlean-sealed]
