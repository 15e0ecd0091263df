"""Reaching the private helpers of ``torchlean.backend.sealed`` from user code: each marked line is a mypy error.

``cast`` itself is invisible to mypy (it is caught at run time by beartype), but registering the
forgery with ``_mint`` or writing the mint registry ``_MINTED`` is reported.

mypy gives plugins no hook on import statements or on a bare name, so the imports below and a
plain reference (``token = _GATE``) are not reported: what is reported is each call of a private
function or class, each method call, subscript or operator applied to a private object (also a
method called through the object's class or one of its bases, and a module-level alias of a bound
method), and each private name passed as an argument to one of those calls or to a sealed
constructor.
"""

import weakref
from collections.abc import Callable, Mapping, MutableMapping
from typing import cast

import torchlean.backend.sealed as sealed_module
from torchlean.backend import sealed
from torchlean.backend.acceptance import AcceptedKernel
from torchlean.backend.sealed import _GATE, _MINTED, _mint

forged = cast(AcceptedKernel, object())
_mint(forged)  # E: "torchlean.backend.sealed._mint" is private to torchlean: sealed values come only from their gates (caller: module bypass_private)  [torchlean-sealed]
sealed._mint(forged)  # E: "torchlean.backend.sealed._mint" is private to torchlean: sealed values come only from their gates (caller: module bypass_private)  [torchlean-sealed]
sealed_module._mint(forged)  # E: "torchlean.backend.sealed._mint" is private to torchlean: sealed values come only from their gates (caller: module bypass_private)  [torchlean-sealed]
mint = _mint
mint(forged)  # E: "torchlean.backend.sealed._mint" is private to torchlean: sealed values come only from their gates (caller: module bypass_private)  [torchlean-sealed]
declared_mint: Callable[[object], None] = _mint  # an annotated alias: the assigned name is read
declared_mint(forged)  # E: "torchlean.backend.sealed._mint" is private to torchlean: sealed values come only from their gates (caller: module bypass_private)  [torchlean-sealed]
split_mint: Callable[[object], None]
split_mint = _mint  # declared on one line, assigned on another (review217 F1)
split_mint(forged)  # E: "torchlean.backend.sealed._mint" is private to torchlean: sealed values come only from their gates (caller: module bypass_private)  [torchlean-sealed]
sealed._GateToken()  # E: "torchlean.backend.sealed._GateToken" is private to torchlean: sealed values come only from their gates (caller: module bypass_private)  [torchlean-sealed]

# Writing the mint registry directly would make a forgery pass the runtime check.
_MINTED[id(forged)] = (weakref.ref(forged), (), ())  # E: "torchlean.backend.sealed._MINTED" is private to torchlean: sealed values come only from their gates (caller: module bypass_private)  [torchlean-sealed]
sealed._MINTED.update({id(forged): (weakref.ref(forged), (), ())})  # E: "torchlean.backend.sealed._MINTED" is private to torchlean: sealed values come only from their gates (caller: module bypass_private)  [torchlean-sealed]
dict.__setitem__(sealed._MINTED, id(forged), (weakref.ref(forged), (), ()))  # E: "torchlean.backend.sealed._MINTED" is private to torchlean: sealed values come only from their gates (caller: module bypass_private)  [torchlean-sealed]
dict.update(_MINTED, {})  # E: "torchlean.backend.sealed._MINTED" is private to torchlean: sealed values come only from their gates (caller: module bypass_private)  [torchlean-sealed]
sealed_module._FIELD_GETTERS.clear()  # E: "torchlean.backend.sealed._FIELD_GETTERS" is private to torchlean: sealed values come only from their gates (caller: module bypass_private)  [torchlean-sealed]
# A method of dict's bases called through the base (mypy names it by the base, typing.MutableMapping).
MutableMapping.__setitem__(_MINTED, id(forged), (weakref.ref(forged), (), ()))  # E: "torchlean.backend.sealed._MINTED" is private to torchlean: sealed values come only from their gates (caller: module bypass_private)  [torchlean-sealed]
MutableMapping.update(sealed._MINTED, {id(forged): (weakref.ref(forged), (), ())})  # E: "torchlean.backend.sealed._MINTED" is private to torchlean: sealed values come only from their gates (caller: module bypass_private)  [torchlean-sealed]
MutableMapping.setdefault(_MINTED, id(forged), (weakref.ref(forged), (), ()))  # E: "torchlean.backend.sealed._MINTED" is private to torchlean: sealed values come only from their gates (caller: module bypass_private)  [torchlean-sealed]
MutableMapping.clear(_MINTED)  # E: "torchlean.backend.sealed._MINTED" is private to torchlean: sealed values come only from their gates (caller: module bypass_private)  [torchlean-sealed]
Mapping.get(sealed_module._FIELD_GETTERS, AcceptedKernel)  # E: "torchlean.backend.sealed._FIELD_GETTERS" is private to torchlean: sealed values come only from their gates (caller: module bypass_private)  [torchlean-sealed]
# A module-level alias of a private object's bound method.
clear_registry = _MINTED.clear
clear_registry()  # E: "torchlean.backend.sealed._MINTED" is private to torchlean: sealed values come only from their gates (caller: module bypass_private)  [torchlean-sealed]
write_registry = sealed_module._MINTED.__setitem__
write_registry(id(forged), (weakref.ref(forged), (), ()))  # E: "torchlean.backend.sealed._MINTED" is private to torchlean: sealed values come only from their gates (caller: module bypass_private)  [torchlean-sealed]
registered = id(forged) in _MINTED  # E: "torchlean.backend.sealed._MINTED" is private to torchlean: sealed values come only from their gates (caller: module bypass_private)  [torchlean-sealed]
_mint(_GATE)  # E: "torchlean.backend.sealed._mint" is private to torchlean: sealed values come only from their gates (caller: module bypass_private)  [torchlean-sealed] # E: "torchlean.backend.sealed._GATE" is private to torchlean: sealed values come only from their gates (caller: module bypass_private)  [torchlean-sealed]

# Not reported (no hook sees them): a bare reference, and a call the plugin does not inspect.
token = _GATE
print(len(_MINTED))


def user_mapping(mapping: MutableMapping[int, int]) -> None:
    """The same methods on a value of the user's are not torchlean's business."""
    mapping.update({1: 2})
    MutableMapping.clear(mapping)


def launder(value: object) -> AcceptedKernel:
    _mint(value)  # E: "torchlean.backend.sealed._mint" is private to torchlean: sealed values come only from their gates (caller: bypass_private.launder)  [torchlean-sealed]
    for key in _MINTED:  # E: "torchlean.backend.sealed._MINTED" is private to torchlean: sealed values come only from their gates (caller: bypass_private.launder)  [torchlean-sealed]
        del sealed._MINTED[key]  # E: "torchlean.backend.sealed._MINTED" is private to torchlean: sealed values come only from their gates (caller: bypass_private.launder)  [torchlean-sealed]
    return cast(AcceptedKernel, value)
