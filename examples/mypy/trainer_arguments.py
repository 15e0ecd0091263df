"""``Trainer`` written in a type with fewer than two type arguments: reported, as its missing
arguments would silently be ``Any`` (``In``/``Out`` have PEP 696 defaults so that an unannotated
``Trainer(model)`` type-checks) and shapes would go unchecked.

One argument is reported always; a bare ``Trainer`` where ``disallow_any_generics`` is on (here:
``strict``). ``Trainer[Any, Any]`` opts out explicitly.
"""

import typing
from typing import Any, Generic, Literal, Optional, TypeAlias, TypeVar, cast
from typing import Unpack as Spread

import typing_extensions

import torchlean.trainer as trainer_module
from torchlean import nn
from torchlean.shapes import Shape
from torchlean.trainer import Trainer


def bare(trainer: Trainer) -> None:  # E: Type "Trainer" leaves In and Out as Any, so shapes are not checked: write Trainer[In, Out] (per-sample shapes, e.g. Trainer[Shape[4], Shape[3]]), or Trainer[Any, Any] to opt out explicitly  [torchlean-trainer]
    """Would accept any trainer."""


def one(trainer: Trainer[Shape[3]]) -> None:  # E: Type "Trainer[Shape[3]]" leaves Out as Any, so shapes are not checked: write Trainer[In, Out] (per-sample shapes, e.g. Trainer[Shape[4], Shape[3]]), or Trainer[Any, Any] to opt out explicitly  [torchlean-trainer]
    """Would accept a trainer for 3 features and any output."""


def through_module(trainer: trainer_module.Trainer) -> None:  # E: Type "trainer_module.Trainer" leaves In and Out as Any, so shapes are not checked: write Trainer[In, Out] (per-sample shapes, e.g. Trainer[Shape[4], Shape[3]]), or Trainer[Any, Any] to opt out explicitly  [torchlean-trainer]
    """The name as written is shown."""


def quoted(trainer: "Trainer[Shape[Literal[3]]]") -> None:  # E: Type "Trainer[Shape[Literal[3]]]" leaves Out as Any, so shapes are not checked: write Trainer[In, Out] (per-sample shapes, e.g. Trainer[Shape[4], Shape[3]]), or Trainer[Any, Any] to opt out explicitly  [torchlean-trainer]
    """A quoted type is read the same way."""


def nested() -> list[Trainer]:  # E: Type "Trainer" leaves In and Out as Any, so shapes are not checked: write Trainer[In, Out] (per-sample shapes, e.g. Trainer[Shape[4], Shape[3]]), or Trainer[Any, Any] to opt out explicitly  [torchlean-trainer]
    return []


def unpacked_one(trainer: Trainer[*tuple[Shape[3]]]) -> None:  # E: Type "Trainer[*tuple[Shape[3]]]" leaves Out as Any, so shapes are not checked: write Trainer[In, Out] (per-sample shapes, e.g. Trainer[Shape[4], Shape[3]]), or Trainer[Any, Any] to opt out explicitly  [torchlean-trainer]
    """An unpacked tuple counts its items: one here."""


def spelled_one(trainer: Trainer[typing.Unpack[tuple[Shape[3]]]]) -> None:  # E: Type "Trainer[typing.Unpack[tuple[Shape[3]]]]" leaves Out as Any, so shapes are not checked: write Trainer[In, Out] (per-sample shapes, e.g. Trainer[Shape[4], Shape[3]]), or Trainer[Any, Any] to opt out explicitly  [torchlean-trainer]
    """``Unpack[...]`` is ``*`` (PEP 646): one item again."""


one_argument_alias: TypeAlias = "Trainer[Shape[3]]"  # E: Type "Trainer[Shape[3]]" leaves Out as Any, so shapes are not checked: write Trainer[In, Out] (per-sample shapes, e.g. Trainer[Shape[4], Shape[3]]), or Trainer[Any, Any] to opt out explicitly  [torchlean-trainer]


class BareSubclass(Trainer):  # E: Type "Trainer" leaves In and Out as Any, so shapes are not checked: write Trainer[In, Out] (per-sample shapes, e.g. Trainer[Shape[4], Shape[3]]), or Trainer[Any, Any] to opt out explicitly  [torchlean-trainer]
    """A base class is a type too."""


trainer: Trainer[Shape[4], Shape[9]] = Trainer(nn.linear(4, 9))
cast(Trainer, trainer)  # E: Type "Trainer" leaves In and Out as Any, so shapes are not checked: write Trainer[In, Out] (per-sample shapes, e.g. Trainer[Shape[4], Shape[3]]), or Trainer[Any, Any] to opt out explicitly  [torchlean-trainer]

# Accepted: both arguments written (Any included), and an unannotated construction.
In = TypeVar("In")


def opted_out(trainer: Trainer[Any, Any]) -> None:
    """Any trainer, said explicitly."""


def four_to_three(trainer: Trainer[Shape[4], Shape[3]]) -> None:
    """Per-sample shapes: 4 features in, 3 outputs; the batch axis is not part of the type."""


def unpacked(trainer: Trainer[*tuple[Shape[4], Shape[3]]], other: Trainer[Shape[4], *tuple[Shape[3]]]) -> None:
    """Both arguments, unpacked from a tuple: the same type as Trainer[Shape[4], Shape[3]]."""


def spelled_unpacked(
    trainer: Trainer[typing.Unpack[tuple[Shape[4], Shape[3]]]],
    extensions: Trainer[typing_extensions.Unpack[tuple[Shape[4], Shape[3]]]],
    renamed: Trainer[Shape[4], Spread[tuple[Shape[3]]]],
    quoted: "Trainer[Spread[tuple[Spread[tuple[Shape[4], Shape[3]]]]]]",
) -> None:
    """``Unpack[...]``, from typing or typing_extensions and under any name, is ``*`` (PEP 646)."""


class Holder(Generic[In]):
    def __init__(self, trainer: Trainer[In, In]) -> None:
        self.trainer = trainer


class ShapedSubclass(Trainer[Shape[Literal[3]], Any]):
    """Both arguments given."""


class Unpack(Generic[In]):
    """A class of this module that is also called Unpack unpacks nothing: one argument."""


def own_unpack(trainer: Trainer[Unpack[tuple[Shape[4], Shape[3]]]]) -> None:  # E: Type "Trainer[Unpack[tuple[Shape[4], Shape[3]]]]" leaves Out as Any, so shapes are not checked: write Trainer[In, Out] (per-sample shapes, e.g. Trainer[Shape[4], Shape[3]]), or Trainer[Any, Any] to opt out explicitly  [torchlean-trainer]
    """Reported as any other one-argument Trainer."""


inferred = Trainer(nn.linear(4, 9))  # Trainer[Any, Any], inferred
opted_out(inferred)
opted_out(trainer)
trainer = inferred
# A whole-alias bare ``Trainer`` stays a generic alias (mypy checks an alias where it is used);
# its bare use is Trainer[Any, Any] and is not reported (a known limit).
GenericAlias: TypeAlias = Trainer
OtherAlias = Trainer
second: GenericAlias = inferred
third: OtherAlias[Shape[4], Shape[9]] = trainer


# review157 F3: arguments that are no shapes (mypy's own hint for Trainer[4, 1], Literal[4], gave a
# type that no shape-typed API takes)
ints: Trainer[4, 1]  # E: Type argument "4" of Trainer is an int, not a shape: write Shape[4] (per-sample shapes, e.g. Trainer[Shape[4], Shape[3]])  [torchlean-trainer] # E: Type argument "1" of Trainer is an int, not a shape: write Shape[1] (per-sample shapes, e.g. Trainer[Shape[4], Shape[3]])  [torchlean-trainer]
literals: Trainer[Literal[4], Shape[1]]  # E: Type argument "Literal[4]" of Trainer is no shape: write Trainer[In, Out] (per-sample shapes, e.g. Trainer[Shape[4], Shape[3]]), or Trainer[Any, Any] to opt out explicitly  [torchlean-trainer]
others: Trainer[tuple[int, int], str]  # E: Type argument "tuple[int, int]" of Trainer is no shape: write Trainer[In, Out] (per-sample shapes, e.g. Trainer[Shape[4], Shape[3]]), or Trainer[Any, Any] to opt out explicitly  [torchlean-trainer] # E: Type argument "str" of Trainer is no shape: write Trainer[In, Out] (per-sample shapes, e.g. Trainer[Shape[4], Shape[3]]), or Trainer[Any, Any] to opt out explicitly  [torchlean-trainer]
either: Trainer[Shape[4] | Shape[5], object]  # a union of shapes, and object: accepted
# review161 F4: no Shape[-1] advice for what Shape refuses; a class object or a union with no shape in it
negative: Trainer[Shape[4], -1]  # E: Type argument "-1" of Trainer is no shape: write Trainer[In, Out] (per-sample shapes, e.g. Trainer[Shape[4], Shape[3]]), or Trainer[Any, Any] to opt out explicitly  [torchlean-trainer]
boolean: Trainer[Shape[4], True]  # E: Type argument "True" of Trainer is no shape: write Trainer[In, Out] (per-sample shapes, e.g. Trainer[Shape[4], Shape[3]]), or Trainer[Any, Any] to opt out explicitly  [torchlean-trainer]
class_object: Trainer[Shape[4], type[Shape[3]]]  # E: Type argument "type[Shape[3]]" of Trainer is no shape: write Trainer[In, Out] (per-sample shapes, e.g. Trainer[Shape[4], Shape[3]]), or Trainer[Any, Any] to opt out explicitly  [torchlean-trainer]
optional: Trainer[Shape[4], Optional[Shape[3]]]  # E: Type argument "Optional[Shape[3]]" of Trainer is no shape: write Trainer[In, Out] (per-sample shapes, e.g. Trainer[Shape[4], Shape[3]]), or Trainer[Any, Any] to opt out explicitly  [torchlean-trainer]
or_none: Trainer[Shape[4], Shape[3] | None]  # E: Type argument "Shape[3] | None" of Trainer is no shape: write Trainer[In, Out] (per-sample shapes, e.g. Trainer[Shape[4], Shape[3]]), or Trainer[Any, Any] to opt out explicitly  [torchlean-trainer]
nested_union: Trainer[Shape[4], Shape[3] | list[Shape[2] | None]]  # E: Type argument "Shape[3] | list[Shape[2] | None]" of Trainer is no shape: write Trainer[In, Out] (per-sample shapes, e.g. Trainer[Shape[4], Shape[3]]), or Trainer[Any, Any] to opt out explicitly  [torchlean-trainer]
# review162 F3: what mypy cannot read stays mypy's own error
unparsed: Trainer["Shape[4", Shape[3]]  # E: Invalid type comment or annotation  [valid-type]
