"""Shape-typed trainers: mismatched shapes and malformed ``Shape[...]`` arguments are mypy errors.

``torchlean.trainer.Trainer[In, Out]`` is invariant in both shapes; the execution mode is a
``RunConfig`` field and does not change the type. ``Shape[4]`` is the plugin's shorthand for
``Shape[Literal[4]]``.
"""

from enum import IntEnum
from typing import Any, Literal, NewType, TypeVar, TypeVarTuple, Unpack, assert_type, cast

import typing_extensions

from torchlean import nn
from torchlean.shapes import Shape, check_dims
from torchlean.trainer import ExecutionMode, RunConfig, Trainer


class Color(IntEnum):
    RED = 1


def train_iris(trainer: Trainer[Shape[3], Shape[1]]) -> None:
    """Accepts only trainers for 3 features and 1 target."""


four_features: Trainer[Shape[4], Shape[1]] = Trainer(
    nn.linear(4, 1), config=RunConfig(execution=ExecutionMode.TYPED_GRAPH)
)
train_iris(four_features)  # E: Argument 1 to "train_iris" has incompatible type "Trainer[Shape[Literal[4]], Shape[Literal[1]]]"; expected "Trainer[Shape[Literal[3]], Shape[Literal[1]]]"  [arg-type]
spelled_out: Trainer[Shape[Literal[4]], Shape[Literal[1]]] = four_features
train_iris(spelled_out)  # E: Argument 1 to "train_iris" has incompatible type "Trainer[Shape[Literal[4]], Shape[Literal[1]]]"; expected "Trainer[Shape[Literal[3]], Shape[Literal[1]]]"  [arg-type]
any_batch: Shape[Any, 4]
wrong_width: Shape[32, 5] = Shape()
any_batch = wrong_width  # E: Incompatible types in assignment (expression has type "Shape[Literal[32], Literal[5]]", variable has type "Shape[Any, Literal[4]]")  [assignment]

bad_string: Shape["a"]  # E: Invalid Shape dimension "a": expected a non-negative int literal (Shape[4]), Literal[4], Any, a TypeVar or *Ts  [torchlean-shape]
bad_negative: Shape[-1]  # E: Invalid Shape dimension -1: expected a non-negative int literal (Shape[4]), Literal[4], Any, a TypeVar or *Ts  [torchlean-shape]
bad_float: Shape[1.5]  # E: Invalid Shape dimension (not an int literal mypy holds: a float, a complex, an int beyond 2**63 - 1 or an expression): expected a non-negative int literal (Shape[4]), Literal[4], Any, a TypeVar or *Ts  [torchlean-shape]
too_long: Shape[9223372036854775808]  # E: Invalid Shape dimension (not an int literal mypy holds: a float, a complex, an int beyond 2**63 - 1 or an expression): expected a non-negative int literal (Shape[4]), Literal[4], Any, a TypeVar or *Ts  [torchlean-shape]
bad_bool: Shape[True]  # E: Invalid Shape dimension True: expected a non-negative int literal (Shape[4]), Literal[4], Any, a TypeVar or *Ts  [torchlean-shape]
bad_int: Shape[int]  # E: Invalid Shape dimension int: expected a non-negative int literal (Shape[4]), Literal[4], Any, a TypeVar or *Ts  [torchlean-shape]
bad_literal: Shape[Literal[-2]]  # E: Invalid Shape dimension Literal[-2]: expected a non-negative int literal (Shape[4]), Literal[4], Any, a TypeVar or *Ts  [torchlean-shape]
bad_enum: Shape[Literal[Color.RED]]  # E: Invalid Shape dimension Literal[Color.RED]: expected a non-negative int literal (Shape[4]), Literal[4], Any, a TypeVar or *Ts  [torchlean-shape]
bad_union: Shape[Literal[3, 4]]  # E: Invalid Shape dimension Literal[3, 4]: expected a non-negative int literal (Shape[4]), Literal[4], Any, a TypeVar or *Ts  [torchlean-shape]
bad_or: Shape[3 | 4]  # E: Invalid Shape dimension 3 | 4: expected a non-negative int literal (Shape[4]), Literal[4], Any, a TypeVar or *Ts  [torchlean-shape]
bad_or_text: Shape[3 | "a"]  # E: Invalid Shape dimension 3 | "a": expected a non-negative int literal (Shape[4]), Literal[4], Any, a TypeVar or *Ts  [torchlean-shape]
bad_unpacked: Shape[*tuple[Literal[3]]]  # E: Invalid Shape dimension *tuple[...]: expected a non-negative int literal (Shape[4]), Literal[4], Any, a TypeVar or *Ts  [torchlean-shape]
bad_spelled: Shape[Unpack[tuple[Literal[3]]]]  # E: Invalid Shape dimension Unpack[tuple[...]]: expected a non-negative int literal (Shape[4]), Literal[4], Any, a TypeVar or *Ts  [torchlean-shape]
bad_extensions: Shape[2, typing_extensions.Unpack[tuple[Literal[3]]]]  # E: Invalid Shape dimension typing_extensions.Unpack[tuple[...]]: expected a non-negative int literal (Shape[4]), Literal[4], Any, a TypeVar or *Ts  [torchlean-shape]

# Unpack[Ts] is *Ts: a shape of any rank.
Ts = TypeVarTuple("Ts")


def any_rank(shape: Shape[Unpack[Ts]], batched: Shape[Any, typing_extensions.Unpack[Ts]]) -> None:
    """Accepted, as Shape[*Ts] and Shape[Any, *Ts] are."""

# An argument mypy itself refuses gets mypy's error only.
Unbound = TypeVar("Unbound")
unbound: Shape[Unbound]  # E: Type variable "shapes_mismatch.Unbound" is unbound  [valid-type] # N: (Hint: Use "Generic[Unbound]" or "Protocol[Unbound]" base class to bind "Unbound" inside a class) # N: (Hint: Use "Unbound" in function signature to bind "Unbound" inside a function)

# Known limit: where Python evaluates the subscript (here an explicit type application), mypy
# analyses each argument of Shape[...] itself, before the plugin sees it; use Literal[...] there.
unquoted = Trainer[Shape[3], Shape[1]](nn.linear(3, 1))  # E: Invalid type: try using Literal[3] instead?  [valid-type] # E: Invalid type: try using Literal[1] instead?  [valid-type]

# So does a TypeVar's bound or default and NewType (mypy reads the subscript as an expression);
# quoted, the type is read as an annotation. cast and assert_type read theirs as annotations.
Bounded = TypeVar("Bounded", bound=Shape[3])  # E: Invalid type: try using Literal[3] instead?  [valid-type]
Defaulted = TypeVar("Defaulted", default=Shape[3])  # E: Invalid type: try using Literal[3] instead?  [valid-type]
Named = NewType("Named", Shape[3])  # E: Invalid type: try using Literal[3] instead?  [valid-type]
QuotedBound = TypeVar("QuotedBound", bound="Shape[3]")
QuotedNamed = NewType("QuotedNamed", "Shape[3]")
assert_type(cast(Shape[2, 3], Shape()), Shape[Literal[2], Literal[3]])

# The same holds for a Shape passed to check_dims (a call argument is an expression): spell Literal
# there. The actual shape may be a tuple (an array's .shape), a list or a range of ints.
check_dims(Shape[2, 3], (2, 3), what="x")  # E: Invalid type: try using Literal[2] instead?  [valid-type] # E: Invalid type: try using Literal[3] instead?  [valid-type]
check_dims(Shape[Literal[2], Literal[3]], (2, 3), what="x")
check_dims(Shape[Literal[2], Literal[3]], [2, 3], what="x")
check_dims(Shape[Literal[2], Literal[3]], range(2, 4), what="x")
check_dims(Shape[Literal[2], Any], [2, 7], what="x")
