"""The argument conventions of :class:`torchlean.tensor.Tensor`'s torch-style methods.

torch's spellings, read once: a flag that must be a bool (:func:`_flag`), an argument with a torch
and a numpy name (``dim``/``axis``: :func:`_one_spelling`, with :data:`_UNSET` for "not given"),
a dim in torch's range (:func:`_dim`), sizes given positionally or as torch's keyword
(:func:`_sizes_or_keyword`, :func:`_shape_args`), and :meth:`Tensor.to`'s refusal of a dtype
(:func:`_is_dtype_spelling`, :func:`_to_refusal`). ``torchlean.functional`` (which imports
``torchlean.tensor``, which imports this module) is imported inside :func:`_dim` only.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, TypeVar

import numpy as np

from torchlean._checks import shown
from torchlean._tensor_errors import TensorTypeError, _preview
from torchlean.backend.errors import GuardError

if TYPE_CHECKING:
    from torchlean.tensor import IntLike


class _Unset(enum.Enum):
    """The default of an argument that has two spellings (torch's ``dim`` and numpy's ``axis``),
    so that "not given" differs from an explicit ``None``."""

    UNSET = "unset"

    def __repr__(self) -> str:
        return "<unset>"


_UNSET: Final = _Unset.UNSET
_V = TypeVar("_V")


def _one_spelling(
    method: str,
    torch_name: str,
    torch_value: _V | _Unset,
    numpy_name: str,
    numpy_value: _V | _Unset,
    default: _V,
) -> _V:
    """The value of an argument given as ``torch_name`` or ``numpy_name`` (or ``default``).

    Raises:
        TensorTypeError: both were given (torch: "got an unexpected keyword argument").
    """
    if torch_value is _UNSET:
        return default if numpy_value is _UNSET else numpy_value
    if numpy_value is not _UNSET:
        raise TensorTypeError(
            f"{method}: got both {torch_name}={_preview(torch_value)} and {numpy_name}="
            f"{_preview(numpy_value)}; they are one argument (torch's and numpy's spelling), give "
            f"one of them"
        )
    return torch_value


def _dim(method: str, name: str, value: object, ndim: int, extent: int) -> int:
    """``value`` as a dim for ``method`` of a rank-``ndim`` tensor, in torch's range
    ``[-extent, extent)`` (``extent`` is ``max(ndim, 1)`` for a dim of the tensor, ``ndim + 1``
    for a new one), normalised to ``[0, extent)``; never wrapped.

    Raises:
        TensorTypeError: not a Python or numpy integer (``functional``'s check and wording).
        GuardError: out of range, naming the accepted range.
    """
    from torchlean import functional as F

    axis = F._int(method, name, value)
    if not -extent <= axis < extent:
        raise GuardError(
            f"{method}: {name} {shown(axis)} is out of range for a rank-{ndim} input (accepted: an "
            f"integer in [{-extent}, {extent - 1}])"
        )
    return axis % extent


def _sizes_or_keyword(
    method: str,
    args: tuple[IntLike | Sequence[IntLike], ...],
    keyword: str,
    value: IntLike | Sequence[IntLike] | _Unset,
) -> tuple[IntLike | Sequence[IntLike], ...]:
    """The sizes of ``t.reshape``/``t.permute``/``t.expand``, given positionally (``args``) or as
    torch's keyword (``shape=``, ``dims=``, ``size=``: ``value``), as :func:`_shape_args` reads them.

    Raises:
        TensorTypeError: both given (torch: "got multiple values for argument ..."); the keyword's
            value is not a sequence (torch: "argument 'shape' must be tuple of ints, not int").
    """
    if value is _UNSET:
        return args
    if args:
        raise TensorTypeError(
            f"{method}: got {', '.join(_preview(a) for a in args)} and {keyword}={_preview(value)}; they "
            f"are one argument, give it once (t.{method}(...) or t.{method}({keyword}=...))"
        )
    if not isinstance(value, Sequence):
        raise TensorTypeError(
            f"{method}: {keyword}= takes a sequence of ints, got {_preview(value)} of type "
            f"{type(value).__name__} (accepted: t.{method}({keyword}=({_preview(value)},)) or "
            f"t.{method}({_preview(value)}))"
        )
    return (value,)


def _shape_args(args: tuple[IntLike | Sequence[IntLike], ...]) -> Sequence[Any]:
    """``t.reshape(2, 3)`` and ``t.reshape((2, 3))`` alike: the entries, unconverted (the
    functional op checks that each is an integer)."""
    if len(args) == 1 and isinstance(args[0], Sequence):
        return tuple(args[0])
    return args


def _to_refusal(argument: str) -> str:
    """The message of :meth:`Tensor.to` for a dtype, or for no device at all."""
    if not argument:
        return "Tensor.to() needs a device (accepted: 'cpu', 'cuda', 'cuda:N' or a torch.device)"
    return (
        f"Tensor.to({argument}) got a dtype, but Tensor.to moves a tensor between devices only; a dtype "
        "change is not supported this way (accepted: a device, 'cpu', 'cuda', 'cuda:N' or a "
        "torch.device; for another dtype make a converted copy, a new leaf, with "
        "torchlean.tensor(t.numpy(), dtype=...))"
    )


_BYTES_ALIAS = re.compile(r"[<>=|]?a[0-9]*")
"""numpy's deprecated alias of the bytes dtype ``S``: ``'a'``, ``'a5'``, ``'|a8'``."""


def _is_dtype_spelling(value: object) -> bool:
    """Whether ``value`` spells a dtype (a ``torch.dtype``, a numpy dtype or scalar type, a Python
    number type, or a string numpy reads as a dtype), for :meth:`Tensor.to`'s refusal."""
    if type(value).__module__ == "torch" and type(value).__name__ == "dtype":
        return True
    if isinstance(value, np.dtype):
        return True
    if isinstance(value, type):
        return issubclass(value, np.generic | bool | int | float | complex)
    if isinstance(value, str):
        # numpy 2 deprecates the bytes alias 'a' ('a5'): answered here, as np.dtype would warn and
        # warnings.catch_warnings is not thread-safe (review238 F3)
        if value in np.sctypeDict or _BYTES_ALIAS.fullmatch(value):
            return True
        try:
            np.dtype(value)
        except TypeError:
            return False
        return True
    return False


def _flag(name: str, value: object) -> bool:
    """``value`` when it is a bool (Python or numpy), never coerced from other values.

    Raises:
        TensorTypeError: ``<name> must be a bool; got 'yes' of type str ...`` (torch refuses
            non-bools too: "requires_grad must be a bool").
    """
    if type(value) is bool:
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    raise TensorTypeError(
        f"{name} must be a bool; got {_preview(value)} of type {type(value).__name__} (accepted: "
        "True or False; other values are not converted)"
    )
