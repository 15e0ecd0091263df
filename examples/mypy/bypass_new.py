"""Allocating sealed types with ``__new__`` or re-running ``__init__``: each marked line is a mypy error."""

from collections.abc import Callable
from typing import Any, TypeVar

from torchlean.backend import profiles
from torchlean.backend.acceptance import AcceptedKernel, accept
from torchlean.backend.binding import ExecutableKernel
from torchlean.backend.sealed import _GATE, Sealable
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


# A receiver typed by a type variable bounded by the sealed class (review189 F2): mypy names these
# callees by the class that defines the method; the plugin reads the bound.
K = TypeVar("K", bound=AcceptedKernel)


def blank_of(cls: type[K]) -> K:
    return cls.__new__(cls)  # E: AcceptedKernel.__new__() of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: bypass_new.blank_of)  [torchlean-sealed]


def rewrite(value: K) -> None:
    type(value).__init__(value, value.op, value.capsule, value.policy, _gate=_GATE)  # E: AcceptedKernel.__init__() of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: bypass_new.rewrite)  [torchlean-sealed] # E: "torchlean.backend.sealed._GATE" is private to torchlean: sealed values come only from their gates (caller: bypass_new.rewrite)  [torchlean-sealed]


def rewrite_through(cls: type[K], value: K) -> None:
    cls.__init__(value, value.op, value.capsule, value.policy, _gate=_GATE)  # E: AcceptedKernel.__init__() of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: bypass_new.rewrite_through)  [torchlean-sealed] # E: "torchlean.backend.sealed._GATE" is private to torchlean: sealed values come only from their gates (caller: bypass_new.rewrite_through)  [torchlean-sealed]


# Re-running __init__ on a minted value rewrites its fields in place.
AcceptedKernel.__init__(kernel, kernel.op, kernel.capsule, profile.policy, _gate=_GATE)  # E: AcceptedKernel.__init__() of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_new)  [torchlean-sealed] # E: "torchlean.backend.sealed._GATE" is private to torchlean: sealed values come only from their gates (caller: module bypass_new)  [torchlean-sealed]


# A union of class objects is read as each of its members.
def blank_either(cls: type[AcceptedKernel | ExecutableKernel[str]]) -> object:
    return object.__new__(cls)  # E: object.__new__() of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: bypass_new.blank_either)  [torchlean-sealed]


def blank_or_int(cls: type[AcceptedKernel] | type[int]) -> object:
    return object.__new__(cls)  # E: object.__new__() of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: bypass_new.blank_or_int)  [torchlean-sealed]


# Module-level aliases of __init__ and __new__ are followed, as the aliases of the copy routes are
# (also an alias of an alias, an annotated one, and one taken from a value: kernel.__init__).
init = AcceptedKernel.__init__
init(kernel, kernel.op, kernel.capsule, profile.policy, _gate=_GATE)  # E: AcceptedKernel.__init__() of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_new)  [torchlean-sealed] # E: "torchlean.backend.sealed._GATE" is private to torchlean: sealed values come only from their gates (caller: module bypass_new)  [torchlean-sealed]
init_again = init
init_again(kernel, kernel.op, kernel.capsule, profile.policy, _gate=_GATE)  # E: AcceptedKernel.__init__() of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_new)  [torchlean-sealed] # E: "torchlean.backend.sealed._GATE" is private to torchlean: sealed values come only from their gates (caller: module bypass_new)  [torchlean-sealed]
declared_init: Callable[..., None] = AcceptedKernel.__init__
declared_init(kernel, kernel.op, kernel.capsule, profile.policy, _gate=_GATE)  # E: AcceptedKernel.__init__() of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_new)  [torchlean-sealed] # E: "torchlean.backend.sealed._GATE" is private to torchlean: sealed values come only from their gates (caller: module bypass_new)  [torchlean-sealed]
reinit_kernel = kernel.__init__
reinit_kernel(kernel.op, kernel.capsule, profile.policy, _gate=_GATE)  # E: AcceptedKernel.__init__() of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_new)  [torchlean-sealed] # E: "torchlean.backend.sealed._GATE" is private to torchlean: sealed values come only from their gates (caller: module bypass_new)  [torchlean-sealed]
class_init = type(kernel).__init__
class_init(kernel, kernel.op, kernel.capsule, profile.policy, _gate=_GATE)  # E: AcceptedKernel.__init__() of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_new)  [torchlean-sealed] # E: "torchlean.backend.sealed._GATE" is private to torchlean: sealed values come only from their gates (caller: module bypass_new)  [torchlean-sealed]
new = AcceptedKernel.__new__
new(AcceptedKernel)  # E: AcceptedKernel.__new__() of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_new)  [torchlean-sealed]
object_new = object.__new__
object_new(AcceptedKernel)  # E: object.__new__() of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_new)  [torchlean-sealed]
object_new(ExecutableKernel)  # E: object.__new__() of sealed type "ExecutableKernel" outside its gate (allowed only in: torchlean.backend.binding.bind; caller: module bypass_new)  [torchlean-sealed]
sealable_new = Sealable.__new__
sealable_new(AcceptedKernel)  # E: Sealable.__new__() of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_new)  [torchlean-sealed]
# declared on one line and assigned on another, and unpacked from a tuple or list (review217 F1)
split_new: Callable[[type[Any]], Any]
split_new = object.__new__
split_new(AcceptedKernel)  # E: object.__new__() of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_new)  [torchlean-sealed]
unpacked_new, _unpacked_other = object.__new__, 0
unpacked_new(AcceptedKernel)  # E: object.__new__() of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_new)  [torchlean-sealed]
[listed_new] = [AcceptedKernel.__new__]
listed_new(AcceptedKernel)  # E: AcceptedKernel.__new__() of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: module bypass_new)  [torchlean-sealed]


def blank_through_alias() -> AcceptedKernel:
    return object_new(AcceptedKernel)  # E: object.__new__() of sealed type "AcceptedKernel" outside its gate (allowed only in: torchlean.backend.acceptance.accept; caller: bypass_new.blank_through_alias)  [torchlean-sealed]


# Not reported: the alias used on another class, and __new__ of an unrelated class (as
# Unrelated.__new__(AcceptedKernel) is not; listed in docs/mypy.md, "What stays runtime-only").
plain = object_new(int)


class Unrelated:
    pass


unrelated_new = Unrelated.__new__
unrelated_new(AcceptedKernel)
