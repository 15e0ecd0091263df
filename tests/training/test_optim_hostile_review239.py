"""review239 F2/F4/F14 (optim): 0-d arrays and tensors where a sequence goes, lengths beyond memory,
huge ``betas``, classes as group functions and a group function that raises: each refused with an
``OptimizerError`` naming the argument (or, for the user's own exception, noted with the group and
the parameter), where Python's ``TypeError``/``MemoryError`` escaped bare."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
import torch

from torchlean import optim

HUGE: Any = np.broadcast_to(np.int64(1), (2**40,))  # 8 bytes of memory, 2**40 entries
T0: Any = torch.tensor(1.0)  # 0-d: Python says it iterates, iter() raises TypeError
A0: Any = np.array(1.0)
T1: Any = torch.ones(2)
LONG: Any = range(2**40)
HUGE_SHOWN = "array([1, 1, 1, ..., 1, 1, 1], shape=(1099511627776,))"
PARAMS = [np.ones(3), np.ones((2, 2))]
NAMES = ["0.bias", "0.weight"]
SEQ = "must be a sequence of numpy arrays (one per parameter), got"


def _sgd() -> optim.Optimizer:
    return optim.sgd(0.1).create(PARAMS)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: optim.sgd(0.1).create(T0), f"optimizer: parameters {SEQ} torch.Tensor (0-d)"),
        (lambda: optim.sgd(0.1).create(A0), f"optimizer: parameters {SEQ} numpy.ndarray (0-d)"),
        (lambda: optim.sgd(0.1).create(T1), f"optimizer: parameters {SEQ} torch.Tensor"),
        # review241 F4: refused at its first entry as it is read, not listed first
        (lambda: optim.sgd(0.1).create(LONG), "optimizer: parameter 0 must be a numpy float array "
         "(numpy.ndarray of dtype float16, float32 or float64), got int"),
        (lambda: _sgd().step(T0, PARAMS), f"optimizer: parameters {SEQ} torch.Tensor (0-d)"),
        (lambda: _sgd().step(PARAMS, T0), f"optimizer: gradients {SEQ} torch.Tensor (0-d)"),
        (lambda: _sgd().step_(T0), f"optimizer: parameters {SEQ} torch.Tensor (0-d)"),
        (lambda: optim.clip_grad_norm(T0, 1.0), f"clip_grad_norm: gradients {SEQ} torch.Tensor (0-d)"),
        (lambda: optim.clip_grad_value(A0, 1.0), f"clip_grad_value: gradients {SEQ} numpy.ndarray (0-d)"),
    ],
)
def test_parameter_and_gradient_containers(call: Callable[[], object], message: str) -> None:
    with pytest.raises(optim.OptimizerError) as info:
        call()
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"names": np.array("a")}, "optimizer: names must be a sequence of strings, got numpy.ndarray (0-d)"),
        ({"names": T0}, "optimizer: names must be a sequence of strings, got torch.Tensor (0-d)"),
        ({"names": HUGE}, "optimizer: expected 2 names (one per parameter), got 1099511627776"),
        (
            {"names": NAMES, "groups": np.array(1)},
            "optimizer: groups must be a sequence of optim.group(...) records, got numpy.ndarray (0-d)",
        ),
        (
            {"names": NAMES, "groups": T0},
            "optimizer: groups must be a sequence of optim.group(...) records, got torch.Tensor (0-d)",
        ),
        (
            {"names": NAMES, "groups": HUGE},
            "optimizer: group 0 must be an optim.group(...) record, got numpy.int64",
        ),
    ],
)
def test_names_and_groups_containers(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(optim.OptimizerError) as info:
        optim.sgd(0.1).create(PARAMS, **kwargs)
    assert str(info.value) == message


def test_names_and_groups_as_arrays_still_work() -> None:
    """Control: a 1-d array of names and of groups are sequences of them."""
    names: Any = np.array(NAMES)
    groups: Any = np.array([optim.group("bias")], dtype=object)
    opt = optim.sgd(0.1).create(PARAMS, names=names, groups=groups)
    assert opt.membership == (0, None)


PAIR = (
    "optimizer: betas must be a pair (beta1, beta2), as torch's: a tuple, list or 1-d array of two numbers, "
    f"got an array of shape (1099511627776,) (int64): {HUGE_SHOWN}"
)


@pytest.mark.parametrize(
    "call",
    [
        lambda: optim.adam(betas=HUGE),
        lambda: optim.adamw(betas=HUGE),
        lambda: optim.group("bias", betas=HUGE),
    ],
)
def test_huge_betas_are_refused_by_their_shape(call: Callable[[], object]) -> None:
    with pytest.raises(optim.OptimizerError) as info:
        call()
    assert str(info.value) == PAIR


@pytest.mark.parametrize("shape", [(2**40,), (2**20, 2**20)])
def test_huge_float_betas_are_shown_with_their_shape(shape: tuple[int, ...]) -> None:
    """review241 F7, review242 F7: the float array's repr was cut mid-shape at 60 characters; a 2-d
    one spent the line on its line breaks. The shape is named before the repr, on one line."""
    with pytest.raises(optim.OptimizerError) as info:
        optim.adam(betas=np.broadcast_to(np.float64(0.9), shape))
    opening = "array([0.9, 0.9" if len(shape) == 1 else "array([[0.9, 0.9"
    assert f"got an array of shape {shape} (float64): {opening}" in str(info.value)
    assert "\n" not in str(info.value) and "\\n" not in str(info.value)


def test_huge_array_as_beta1_is_refused_as_torchs_order() -> None:
    with pytest.raises(optim.OptimizerError) as info:
        optim.adam(beta1=HUGE)
    assert str(info.value).startswith(
        f"optimizer: beta1 must be a real number (int or float), got {HUGE_SHOWN}: a sequence in beta1's "
        "place is torch's Adam(params, lr, betas) order"
    )
    assert "pass betas=(b1, b2)" in str(info.value)
    pair: Any = np.array([0.5, 0.75])
    assert optim.adam(betas=pair).beta2 == 0.75  # control: a 1-d pair is taken


@pytest.mark.parametrize("cls", [int, str, bool, dict])
def test_a_class_is_refused_as_a_group_function(cls: type) -> None:
    with pytest.raises(optim.OptimizerError) as info:
        optim.group(cls, weight_decay=0.0)
    assert str(info.value) == (
        "optimizer: a group function is called as match(name, shape), name a string and shape a tuple of "
        f"ints, and returns a bool; got the class {cls.__name__}, whose call builds an instance (accepted: a "
        "function such as lambda name, shape: len(shape) < 2, or a regular expression)"
    )


def _divide(name: str, shape: tuple[int, ...]) -> bool:
    return 1 / 0 > 0


def test_a_raising_group_function_is_noted_with_group_and_parameter() -> None:
    with pytest.raises(ZeroDivisionError) as info:
        optim.sgd(0.1).create(PARAMS, names=NAMES, groups=[optim.group(_divide, weight_decay=0.0)])
    assert info.value.__notes__ == [
        "in optim.group(_divide, weight_decay=0.0), selecting parameter '0.bias' of shape (3,): called as "
        "_divide('0.bias', (3,))"
    ]


def _pair(name: str, shape: tuple[int, ...]) -> Any:
    return np.array([1, 2])


def test_a_non_bool_answer_names_its_type_and_the_parameter() -> None:
    with pytest.raises(optim.OptimizerError) as info:
        optim.sgd(0.1).create(PARAMS, names=NAMES, groups=[optim.group(_pair)])
    assert str(info.value) == (
        "optimizer: optim.group(_pair) must return a bool for each parameter, got array([1, 2]) of type "
        "ndarray for '0.bias'"
    )


def test_a_long_argument_is_refused_at_its_first_bad_entry_without_being_listed() -> None:
    """review241 F4: a sized argument whose list fitted in memory was listed in full (2**24
    entries: a second, most of a GB) before entry 0 was checked."""
    read: list[int] = []

    class Counted(Sequence[object]):
        def __len__(self) -> int:
            return 2**24

        def __getitem__(self, index: int) -> object:  # type: ignore[override]
            if index >= len(self):
                raise IndexError(index)
            read.append(index)
            return np.ones(2) if index < 3 else "not an array"

    with pytest.raises(optim.OptimizerError, match=r"^optimizer: parameter 3 must be a numpy float array"):
        optim.sgd(0.1).create(Counted())
    assert read == [0, 1, 2, 3]
