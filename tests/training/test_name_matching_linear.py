"""review243 F10: name matching takes one pass, not one scan of the names per name.

The names are a ``str`` subclass that counts its ``==`` calls: a list's ``count``, ``index`` or
membership test compares a name with every other (quadratic in the count), where a dict, set or
Counter compares only names whose hashes match (one comparison each). Results and messages are
pinned as they were.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from torchlean import nn
from torchlean.cli._resume import by_checkpoint_order
from torchlean.nn.layers import ParamSpec, ShapeError
from torchlean.nn.model import StateError, _check_unique_names

COUNT = 300


class Counted(str):
    """A name that counts the equality comparisons made on it."""

    calls = 0

    def __eq__(self, other: object) -> bool:
        Counted.calls += 1
        return str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        Counted.calls += 1
        return str.__ne__(self, other)

    __hash__ = str.__hash__


@pytest.fixture(autouse=True)
def _reset() -> None:
    Counted.calls = 0


def _specs(names: list[str]) -> tuple[ParamSpec, ...]:
    return tuple(ParamSpec(name, (1,), "zeros") for name in names)


def test_the_duplicate_name_check_compares_each_name_a_bounded_number_of_times() -> None:
    specs = _specs([Counted(f"p{i}") for i in range(COUNT)])
    _check_unique_names(nn.identity(), specs)
    assert Counted.calls <= 4 * COUNT  # list.count per name: about COUNT**2


def test_the_duplicate_name_check_names_repeats_in_first_occurrence_order() -> None:
    specs = _specs(["b", "a", "c", "b", "d", "a", "b"])
    with pytest.raises(ShapeError, match=r"repeats the parameter names b, a \(the model's state is keyed"):
        _check_unique_names(nn.identity(), specs)
    with pytest.raises(ShapeError, match=r"repeats the parameter name a \(the model's state is keyed"):
        _check_unique_names(nn.identity(), _specs(["a", "z", "a"]))


def _model() -> Any:
    return nn.build(nn.sequential(*[nn.linear(1, 1) for _ in range(COUNT // 2)]), seed=0)


def test_load_state_tests_each_key_a_bounded_number_of_times() -> None:
    model = _model()
    state = {Counted(name): value for name, value in model.state().items()}
    Counted.calls = 0
    model.load_state(state)
    assert Counted.calls <= 8 * COUNT  # a list membership test per key: about COUNT**2 / 2


def test_load_state_names_unexpected_keys_in_the_state_order() -> None:
    model = _model()
    state = {"zz": np.zeros(1), **model.state(), "aa": np.zeros(1), "5.x": np.zeros(1)}
    result = model.load_state(state, strict=False)
    assert result.missing_keys == [] and result.unexpected_keys == ["zz", "aa", "5.x"]
    with pytest.raises(StateError, match=r"missing \[\], unexpected \['zz', 'aa', '5.x'\]"):
        model.load_state(state)


@dataclasses.dataclass(frozen=True)
class _Loaded:
    """The fields by_checkpoint_order reads and replaces."""

    feature_names: tuple[str, ...]
    x_train: np.ndarray
    x_test: np.ndarray
    x_val: np.ndarray | None
    feature_mean: np.ndarray
    feature_scale: np.ndarray


def _loaded(names: tuple[str, ...]) -> Any:
    count = len(names)
    x = np.arange(3 * count, dtype=np.float64).reshape(3, count)
    return _Loaded(names, x, x + 1, None, np.arange(count) * 2.0, np.arange(count) + 0.5)


def test_the_feature_reorder_compares_each_name_a_bounded_number_of_times() -> None:
    names = tuple(Counted(f"f{i}") for i in range(COUNT))
    wanted = tuple(Counted(f"f{i}") for i in reversed(range(COUNT)))
    Counted.calls = 0
    ordered = by_checkpoint_order(_loaded(names), wanted)
    assert ordered is not None
    assert Counted.calls <= 4 * COUNT  # names.index per name: about COUNT**2 / 2


def test_the_feature_reorder_puts_columns_and_statistics_in_the_checkpoint_order() -> None:
    loaded = _loaded(("a", "b", "c", "d"))
    ordered = by_checkpoint_order(loaded, ("c", "a", "d", "b"))
    assert ordered is not None and ordered.feature_names == ("c", "a", "d", "b")
    assert np.array_equal(ordered.x_train, loaded.x_train[:, [2, 0, 3, 1]])
    assert np.array_equal(ordered.x_test, loaded.x_test[:, [2, 0, 3, 1]])
    assert ordered.x_val is None
    assert np.array_equal(ordered.feature_mean, [4.0, 0.0, 6.0, 2.0])
    assert np.array_equal(ordered.feature_scale, [2.5, 0.5, 3.5, 1.5])
    assert by_checkpoint_order(loaded, ("a", "b", "c", "d")) is None
    assert by_checkpoint_order(loaded, ("a", "b", "c", "e")) is None
    assert by_checkpoint_order(_loaded(("a", "a", "b")), ("a", "b", "a")) is None
