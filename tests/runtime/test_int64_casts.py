"""Data cast to int64 is refused when int64 cannot hold it, never wrapped (review 6 #5 and #7).

numpy's cast turns NaN, ``±inf`` and floats outside ``[-2**63, 2**63)`` into ``-2**63`` (with at
most a ``RuntimeWarning``) and wraps uint64 values above ``2**63 - 1`` to negative numbers. torch
refuses them ("value cannot be converted to type int64 without overflow"). Oracles: torch's
refusal where torch refuses, Python's ``int()`` (truncation toward zero) for the values that fit,
and the true value, computed by hand, in each message.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import torchlean as tl
from torchlean.backend.errors import GuardError

ACCEPTED = r"\(accepted: finite numbers in \[-2\*\*63, 2\*\*63\), truncated toward zero\)"


@contextmanager
def no_numpy_warnings() -> Iterator[None]:
    """A numpy cast warning (the old symptom) fails the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (float("nan"), "nan"),
        (float("inf"), "inf"),
        (float("-inf"), "-inf"),
        (1e30, "1e+30"),
        (-1e30, "-1e+30"),
    ],
)
def test_values_torch_refuses_are_refused(value: float, shown: str) -> None:
    with pytest.raises(RuntimeError, match="cannot be converted to type int64 without overflow"):
        torch.tensor([value], dtype=torch.int64)
    message = rf"^value {re.escape(shown)} does not fit the int64 tensor dtype {ACCEPTED}$"
    with no_numpy_warnings(), pytest.raises(tl.TensorError, match=message):
        tl.tensor([1.0, value, 2.0], dtype="int64")


def test_the_review_repro_names_the_first_offending_value() -> None:
    with no_numpy_warnings(), pytest.raises(tl.TensorError, match=r"^value nan does not fit"):
        tl.tensor([float("nan"), float("inf"), 1e30, 2.0**63], dtype="int64")


@pytest.mark.parametrize(
    "value",
    [2.0**63, -(2.0**63) - 2048.0, np.float32(2.0**63), np.float32(-(2.0**64))],
    ids=["2**63", "below-min", "float32-2**63", "float32-minus-2**64"],
)
def test_floats_just_outside_the_int64_range_are_refused(value: float) -> None:
    """2**63 is one past int64's largest value; -2**63 - 2048 is the float64 just below its
    smallest (torch wraps 2**63 to -2**63 silently; refusing is the rule it states)."""
    message = rf"^value {re.escape(repr(float(value)))} does not fit"
    with no_numpy_warnings(), pytest.raises(tl.TensorError, match=message):
        tl.tensor(np.array([value]), dtype="int64")


@pytest.mark.parametrize(
    ("value", "expected"),
    [(-(2.0**63), -(2**63)), (2.0**63 - 1024.0, 2**63 - 1024), (2.7, 2), (-2.7, -2), (-0.0, 0)],
)
def test_floats_that_fit_are_truncated_toward_zero_as_torch_does(value: float, expected: int) -> None:
    assert torch.tensor([value], dtype=torch.int64).tolist() == [expected]
    with no_numpy_warnings():
        assert tl.tensor([value], dtype="int64").tolist() == [expected]


@given(st.floats(allow_nan=True, allow_infinity=True) | st.floats(-(2.0**64), 2.0**64))
def test_any_float_is_truncated_or_refused(value: float) -> None:
    fits = math.isfinite(value) and -(2**63) <= math.trunc(value) <= 2**63 - 1
    with no_numpy_warnings():
        if fits:
            assert tl.tensor(np.array([value]), dtype="int64").tolist() == [math.trunc(value)]
        else:
            with pytest.raises(tl.TensorError, match=rf"^value {re.escape(repr(value))} does not fit"):
                tl.tensor(np.array([value]), dtype="int64")


SOURCES: dict[str, Callable[[], object]] = {
    "list": lambda: [1.0, float("nan")],
    "numpy-float32": lambda: np.array([1.0, np.nan], dtype=np.float32),
    "torch": lambda: torch.tensor([1.0, float("nan")]),
    "torchlean": lambda: tl.tensor([1.0, float("nan")]),
    "rank0": lambda: np.float64(np.nan),
}


@pytest.mark.parametrize("source", list(SOURCES))
def test_every_source_of_tensor_data_is_checked(source: str) -> None:
    with no_numpy_warnings(), pytest.raises(tl.TensorError, match=r"^value nan does not fit"):
        tl.tensor(SOURCES[source](), dtype="int64")


def test_empty_float_data_becomes_an_empty_int64_tensor() -> None:
    assert tl.tensor(np.zeros((0, 2)), dtype="int64").shape == (0, 2)


INT64_OVERFLOW = r"^the integer 9223372036854775808 \(19 digits\) does not fit the tensor's dtype int64"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (float("nan"), r"^value nan does not fit"),
        (np.array([np.nan, np.inf]), r"^value nan does not fit"),
        (1e30, r"^value 1e\+30 does not fit"),
        (np.uint64(2**63), INT64_OVERFLOW),
        (np.array([2**63], dtype=np.uint64), INT64_OVERFLOW),
        (2**63, INT64_OVERFLOW),
        ([2**63, 1], INT64_OVERFLOW),
        (2**64, r"^the integer 18446744073709551616 \(20 digits\) does not fit the tensor's dtype int64"),
        (tl.tensor([float("inf")]), r"^value inf does not fit"),
    ],
    ids=[
        "nan", "nan-inf-array", "1e30", "uint64-scalar", "uint64-array", "2**63", "2**63-list", "2**64",
        "tensor",
    ],
)
def test_item_assignment_into_int64_refuses_what_does_not_fit(value: object, message: str) -> None:
    """Before: NaN/inf arrays and uint64 arrays were written as wrapped values; 1e30 and uint64
    scalars raised a raw ``OverflowError``."""
    t = tl.tensor([1, 2, 3])
    with no_numpy_warnings(), pytest.raises(tl.TensorError, match=message):
        t[0:1] = value  # type: ignore[assignment]
    assert t.tolist() == [1, 2, 3] and t._version.value == 0


def test_item_assignment_into_int64_truncates_floats_as_torch_does() -> None:
    t, reference = tl.tensor([1, 2, 3]), torch.tensor([1, 2, 3])
    t[0], reference[0] = 2.7, 2.7
    t[1:3], reference[1:3] = np.array([-2.7, 1e18]), torch.tensor([-2.7, 1e18], dtype=torch.float64)
    assert t.tolist() == reference.tolist() == [2, -2, 10**18]


def test_copy_into_int64_refuses_a_wrapping_uint64() -> None:
    t = tl.tensor([1, 2, 3])
    message = INT64_OVERFLOW
    with no_numpy_warnings(), pytest.raises(tl.TensorError, match=message):
        t.copy_(np.array([2**63, 1, 1], dtype=np.uint64))
    assert t.tolist() == [1, 2, 3]
    t.copy_(np.array([7, 8, 9], dtype=np.uint64))
    assert t.tolist() == [7, 8, 9]


@pytest.mark.parametrize(
    "call",
    [
        lambda t: tl.add(t, float("nan")),
        lambda t: tl.mul(t, np.array([np.inf, 1.0])),
        lambda t: tl.mse_loss(t, float("nan")),
        lambda t: tl.mse_loss(t, np.float64(1e30)),
    ],
    ids=["add-nan", "mul-inf-array", "mse-nan", "mse-1e30"],
)
def test_a_constant_operand_of_an_int64_tensor_is_checked_before_the_cast(
    call: Callable[[object], object],
) -> None:
    """Before: numpy's ``invalid value encountered in cast`` warning, then the guard's dtype
    refusal; now the cast itself refuses, naming the value."""
    with no_numpy_warnings(), pytest.raises(tl.TensorError, match=r"does not fit the int64 tensor dtype"):
        call(tl.tensor([1, 2]))



CONSTANTS: dict[str, tuple[object, str]] = {
    "uint64-scalar": (np.uint64(2**63), INT64_OVERFLOW),
    "uint64-array": (np.array([1, 2**63], dtype=np.uint64), INT64_OVERFLOW),
    "2**63": (2**63, INT64_OVERFLOW),
    "2**63-list": ([2**63, 1], INT64_OVERFLOW),
    "2**64": (2**64, r"^the integer 18446744073709551616 \(20 digits\) does not fit the tensor's dtype"),
    "below-min": (-(2**63) - 1, r"^the integer -9223372036854775809 \(19 digits\) does not fit"),
    "float-among-integers": ([1.5, 2**63], r"^value 9\.223372036854776e\+18 does not fit the int64 tensor"),
    "float32-2**63": (np.float32(2.0**63), r"^value 9\.223372036854776e\+18 does not fit the int64 tensor"),
    "nan": (float("nan"), r"^value nan does not fit the int64 tensor dtype"),
}


@pytest.mark.parametrize("case", list(CONSTANTS))
def test_a_constant_operand_of_an_int64_tensor_is_refused_naming_the_value(case: str) -> None:
    """Every refusal of a functional constant in an int64 tensor's dtype, with its text: integers
    (Python, numpy, uint64 data, a list's) by the integer rule, float data by the float rule."""
    value, message = CONSTANTS[case]
    with no_numpy_warnings(), pytest.raises(tl.TensorError, match=message):
        tl.add(tl.tensor([1, 2]), value)


def test_a_constant_operand_of_an_int64_tensor_meets_the_float_rule_only_for_float_data(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The functional constants check each value once (mread finding): integers are checked by
    ``_constant_values``, so ``_require_int64_fits``, whose uint64 check repeated that one, sees only
    float data (spied where ``torchlean.functional._operands`` looks it up)."""
    from torchlean.functional import _operands

    seen: list[str] = []
    real = _operands._require_int64_fits

    def spy(raw: np.ndarray) -> None:
        seen.append(raw.dtype.kind)
        real(raw)

    monkeypatch.setattr(_operands, "_require_int64_fits", spy)
    x = tl.tensor([1, 2])
    integers = ((np.array([3, 4], np.uint64), [3, 4]), ([5, 6], [5, 6]), (7, 7), (np.int32(8), 8))
    for value, expected in (*integers, ([True, False], [1, 0]), ([2**62, 1], [2**62, 1])):
        assert _operands._constant(value, x).tolist() == expected
    assert seen == []
    assert _operands._constant([2.7, -2.7], x).tolist() == [2, -2]
    with pytest.raises(tl.TensorError, match=INT64_OVERFLOW):
        _operands._constant(np.array([2**63], np.uint64), x)
    assert seen == ["f"]

BIG = 2**63


@pytest.mark.parametrize(
    ("call", "named", "extent", "axis", "op"),
    [
        (lambda x: tl.gather(x, np.array([[BIG]], np.uint64), 1), BIG, 3, 1, "gather"),
        (lambda x: tl.gather(x, np.array([[0], [2**64 - 1]], np.uint64), 1), 2**64 - 1, 3, 1, "gather"),
        (lambda x: tl.gather(x, [[BIG + 5]], -2), BIG + 5, 2, 0, "gather"),  # a list numpy reads as uint64
        (
            lambda x: tl.scatter_add(x, np.array([[BIG]], np.uint64), tl.tensor(np.ones((1, 1))), 1),
            BIG,
            3,
            1,
            "scatter_add",
        ),
    ],
    ids=["gather", "gather-uint64-max", "gather-list", "scatter_add"],
)
def test_a_uint64_index_above_int64_is_named_by_its_true_value(
    call: Callable[[object], object], named: int, extent: int, axis: int, op: str
) -> None:
    """Review 6 #7: the index was cast to int64 first, so the message named -9223372036854775808."""
    x = tl.tensor(np.ones((2, 3)))
    expected = (
        f"{op}: index value {named} is out of range for extent {extent} along axis {axis} "
        f"(accepted: 0 <= index < {extent})"
    )
    with no_numpy_warnings(), pytest.raises(GuardError) as info:
        call(x)
    assert str(info.value) == expected


def test_a_uint64_cross_entropy_target_above_int64_is_named_by_its_true_value() -> None:
    with no_numpy_warnings(), pytest.raises(GuardError) as info:
        tl.cross_entropy(tl.tensor(np.ones((2, 3))), np.array([1, BIG], np.uint64))
    assert str(info.value) == (
        f"cross_entropy: target value {BIG} is out of range for 3 classes along axis 1 "
        "(accepted: class ids in [0, 3); no target is skipped, as torch skips those equal to "
        "ignore_index=-100: leave padding samples out)"
    )


def test_uint64_indices_in_range_still_work() -> None:
    x = tl.tensor(np.arange(6.0).reshape(2, 3))
    picked = tl.gather(x, np.array([[2], [0]], np.uint64), 1)
    np.testing.assert_array_equal(picked.numpy(), [[2.0], [3.0]])
    loss = tl.cross_entropy(tl.tensor(np.zeros((2, 4))), np.array([3, 1], np.uint64))
    assert float(loss) == pytest.approx(math.log(4.0), rel=1e-6)


def test_a_bad_axis_is_reported_before_a_too_large_uint64_index() -> None:
    x = tl.tensor(np.ones((2, 3)))
    with pytest.raises(GuardError, match=r"^gather: axis 2 is out of range for a rank-2 input"):
        tl.gather(x, np.array([[BIG]], np.uint64), 2)
