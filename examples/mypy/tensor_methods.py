"""torch-style Tensor methods type as torch's: each returns a ``Tensor``; ``sum``/``mean`` take
torch's ``dim=``/``keepdim=`` and numpy's ``axis=``/``keepdims=``; ``softmax`` needs its ``dim``
as torch's does. What torchlean refuses at run time is an error here too (review117 F1, F3):
``view`` (torchlean has no views), ``**`` and the ordering comparisons (no catalog op), and
``to`` without a device or with a dtype (it moves between devices only: review129 F3); array
data beside a Tensor gives a Tensor (review117 F2; numpy's side needs the plugin), but in ``@``.
(``x.to(torch.float64)`` is an error too where mypy follows torch, as users' configurations do:
``torch.dtype`` is no ``str | torch.device``; the marker test skips torch, and
test_tensor_to_refuses_a_dtype_where_mypy_follows_torch checks it.)

The marker after ``# E:`` / ``# N:`` is the exact output mypy prints (tests/typing/test_mypy_examples.py
compares them, skipping numpy and torch: where mypy follows numpy, :func:`may_be_a_tensor`'s first
``reveal_type`` prints numpy's result in place of ``Any``); the unmarked lines are clean.
"""

from typing import TypeVar, assert_type

import numpy as np

import torchlean as tl
from torchlean import Tensor

T = TypeVar("T", bound=Tensor)

x = tl.tensor(np.zeros((1, 3, 4)))
w = tl.tensor(np.zeros((4, 2)))
assert_type(x.exp().log().sqrt().abs().neg().relu().tanh().sigmoid(), Tensor)
assert_type(x.clamp(min=0.0), Tensor)
assert_type(x.clip(-1.0, 1.0), Tensor)
assert_type(x.softmax(-1), Tensor)
assert_type(x.log_softmax(dim=1), Tensor)
assert_type(x.matmul(w), Tensor)
assert_type(x.flatten(1), Tensor)
assert_type(x.flatten(start_dim=0, end_dim=-2), Tensor)
assert_type(x.unsqueeze(0), Tensor)
assert_type(x.squeeze(), Tensor)
assert_type(x.squeeze((0, 2)), Tensor)
assert_type(x.t() if x.ndim <= 2 else x, Tensor)
assert_type(x.expand(2, -1, -1, -1), Tensor)
assert_type(x.expand((2, 1, 3, 4)), Tensor)
assert_type(x.clone(), Tensor)
assert_type(x.contiguous(), Tensor)
assert_type(x.sum(dim=1, keepdim=True), Tensor)
assert_type(x.sum(1), Tensor)
assert_type(x.mean(axis=(0, 2), keepdims=True), Tensor)
assert_type(x.mean(dim=-1), Tensor)
assert_type(x.sum(dim=np.int64(1)), Tensor)  # numpy integers, as at run time (review117 F4)
assert_type(x.mean(axis=(np.int64(0), 2)), Tensor)
assert_type(x.reshape(np.int64(12), -1), Tensor)


assert_type(x + np.ones(4), Tensor)
assert_type(np.ones(4) + x, Tensor)
assert_type(x * np.float32(2.0), Tensor)
assert_type(np.float64(2.0) / x, Tensor)
assert_type(x - [1.0, 2.0, 3.0, 4.0], Tensor)
x += np.ones(4)


def reshaped(t: Tensor) -> None:
    t.view(-1)  # E: "Tensor" has no attribute "view"  [attr-defined]
    t.relu().sum(dim="0")  # E: Argument "dim" to "sum" of "Tensor" has incompatible type "str"; expected "int | integer[Any] | Sequence[int | integer[Any]] | _Unset | None"  [arg-type]


x ** 2  # E: Unsupported operand types for ** ("Tensor" and "int")  [operator]
x.pow(2)  # E: "Tensor" has no attribute "pow"  [attr-defined]
x < 0.0  # E: Unsupported operand types for > ("float" and "Tensor")  [operator]
x @ np.ones((4, 2))  # E: Unsupported operand types for @ ("Tensor" and "ndarray[tuple[int, int], dtype[float64]]")  [operator]
np.ones((2, 3)) @ x  # E: matmul takes Tensors only, not array data beside a Tensor (it is refused at run time); make the array a Tensor first: tl.tensor(array, dtype=t.dtype)  [torchlean-operand]
x > np.ones(4)  # E: < of array data and a torchlean Tensor is refused at run time (it is no op of the backend catalog): compute on t.numpy() for values  [torchlean-operand]
np.ones(4) <= x  # E: <= of array data and a torchlean Tensor is refused at run time (it is no op of the backend catalog): compute on t.numpy() for values  [torchlean-operand]
np.ones(4) ** x  # E: ** of array data and a torchlean Tensor is refused at run time (it is no op of the backend catalog): compute on t.numpy() for values  [torchlean-operand]
array = np.ones(4)


class Labelled(Tensor):
    """A Tensor subclass of one's own: numpy's operators with it are read as with a Tensor
    (review189 F4), the result a Tensor, as Tensor's reflected operator returns at run time."""


def with_subclass(y: Labelled) -> None:
    assert_type(array + y, Tensor)
    array @ y  # E: matmul takes Tensors only, not array data beside a Tensor (it is refused at run time); make the array a Tensor first: tl.tensor(array, dtype=t.dtype)  [torchlean-operand]


array += x  # E: += of a torchlean Tensor into array data is refused at run time (numpy cannot write a Tensor in place): make the array a Tensor first, or write t.numpy() for values  [torchlean-operand]


x.softmax()  # E: Missing positional argument "dim" in call to "softmax" of "Tensor"  [call-arg]
x.sum(dim=1.5)  # E: Argument "dim" to "sum" of "Tensor" has incompatible type "float"; expected "int | integer[Any] | Sequence[int | integer[Any]] | _Unset | None"  [arg-type]
x.clamp(min="0")  # E: Argument "min" to "clamp" of "Tensor" has incompatible type "str"; expected "float | floating[Any] | None"  [arg-type]
assert_type(x.to("cpu"), Tensor)
x.to()  # E: Missing positional argument "device" in call to "to" of "Tensor"  [call-arg]
x.to("cpu", dtype=float)  # E: Argument "dtype" to "to" of "Tensor" has incompatible type "type[float]"; expected "None"  [arg-type]
x.to(dtype="float64")  # E: Missing positional argument "device" in call to "to" of "Tensor"  [call-arg] # E: Argument "dtype" to "to" of "Tensor" has incompatible type "str"; expected "None"  [arg-type]



def may_be_a_tensor(t: T, flag: bool) -> None:
    """review157 F1: an operand that may be a Tensor (a union), or a type variable bound to
    Tensor, is checked as a Tensor operand is (``Any``: numpy's own result, which the marker test
    does not follow; a user's mypy prints ``ndarray[...]`` there)."""
    a = np.ones(4)
    u = x if flag else [1.0, 2.0, 3.0, 4.0]  # a list beside the Tensor: its type is numpy's in no part
    reveal_type(a + u)  # N: Revealed type is "torchlean.tensor.Tensor | Any"
    reveal_type(a * t)  # N: Revealed type is "torchlean.tensor.Tensor"
    a @ u  # E: matmul takes Tensors only, not array data beside a Tensor (it is refused at run time); make the array a Tensor first: tl.tensor(array, dtype=t.dtype)  [torchlean-operand] # N: Right operand is of type "Tensor | list[float]"
    a > u  # E: > of array data and a torchlean Tensor is refused at run time (it is no op of the backend catalog): compute on t.numpy() for values  [torchlean-operand] # N: Right operand is of type "Tensor | list[float]"
    a @ t  # E: matmul takes Tensors only, not array data beside a Tensor (it is refused at run time); make the array a Tensor first: tl.tensor(array, dtype=t.dtype)  [torchlean-operand]
