"""The shared argument predicates of ``torchlean._checks`` and the argparse integer type of
``torchlean.cli._args``: each accepted set, written out value by value."""

from __future__ import annotations

import argparse
import fractions
import re

import numpy as np
import pytest
import sympy
import torch

from torchlean._checks import (
    FLOAT_DTYPES,
    checked_int,
    dtype_shown,
    float_dtype,
    is_builtin_int,
    is_builtin_or_numpy_int,
    is_int,
    shown,
)
from torchlean.cli._args import int_at_least

# value -> (is_int, is_builtin_or_numpy_int, is_builtin_int)
CASES = [
    (3, (True, True, True)),
    (-(2**70), (True, True, True)),
    (np.int64(3), (True, True, False)),
    (np.uint8(0), (True, True, False)),
    (sympy.Integer(3), (True, False, False)),  # a numbers.Integral that is neither int nor numpy
    (True, (False, False, False)),
    (np.bool_(True), (False, False, False)),
    (3.0, (False, False, False)),
    (np.float64(3.0), (False, False, False)),
    (fractions.Fraction(3, 1), (False, False, False)),
    ("3", (False, False, False)),
    (None, (False, False, False)),
]


@pytest.mark.parametrize(("value", "expected"), CASES, ids=[repr(v) for v, _ in CASES])
def test_integer_predicates_accept_exactly_their_sets(value: object, expected: tuple[bool, ...]) -> None:
    assert (is_int(value), is_builtin_or_numpy_int(value), is_builtin_int(value)) == expected


def test_checked_int_returns_a_python_int_or_raises_the_given_error() -> None:
    got = checked_int(np.int16(4), "size", 1, ValueError)
    assert got == 4 and type(got) is int
    for bad in (0, True, 2.0, "2"):
        with pytest.raises(KeyError) as caught:
            checked_int(bad, "size", 1, KeyError)
        assert caught.value.args == (f"size must be an int >= 1, got {bad!r}",)


def test_float_dtype_returns_the_canonical_member_or_none() -> None:
    assert (np.dtype("float32"), np.dtype("float64")) == FLOAT_DTYPES
    assert float_dtype(np.dtype("f4")) is FLOAT_DTYPES[0]
    assert float_dtype(np.dtype("=f8")) is FLOAT_DTYPES[1]
    for other in ("float16", "int64", "bool", ">f8" if np.little_endian else "<f8"):
        assert float_dtype(np.dtype(other)) is None


def test_float_dtype_reads_spellings_and_torch_dtypes_and_refuses_the_rest() -> None:
    other_order = ">f8" if np.little_endian else "<f8"
    for spelling in ("float64", "f8", np.float64, torch.float64):
        assert float_dtype(spelling) is FLOAT_DTYPES[1]
    assert float_dtype(torch.float32) is FLOAT_DTYPES[0]
    # None is refused although numpy reads it as float64 (np.dtype("float64") == None is True)
    for refused in (None, "bogus", 5, torch.bfloat16, torch.int64, other_order, "float16"):
        assert float_dtype(refused) is None


def test_the_string_float_is_refused_as_ambiguous_everywhere() -> None:
    """numpy reads "float" as float64, torch's torch.float is float32: a torch user's
    ``dtype="float"`` silently trained in float64. Refused by name; "double" and the Python
    ``float`` type (float64 in both) still read."""
    from torchlean import data, nn
    from torchlean.tensor import TensorError, tensor
    from torchlean.trainer import RunConfig, TrainerError

    ambiguous = "'float' (ambiguous: numpy reads it as float64, torch as float32)"
    assert float_dtype("float") is None and float_dtype(" float ") is None
    assert dtype_shown("float") == ambiguous
    assert float_dtype("double") is FLOAT_DTYPES[1] and float_dtype(float) is FLOAT_DTYPES[1]
    refusal = rf"^dtype must be float32 or float64, got {re.escape(ambiguous)}$"
    with pytest.raises(TrainerError, match=refusal):
        RunConfig(dtype="float")
    with pytest.raises(data.DataError, match=re.escape(ambiguous)):
        data.load("iris", dtype="float")
    with pytest.raises(nn.ShapeError, match=re.escape(ambiguous)):
        nn.build(nn.linear(2, 1), dtype="float")
    with pytest.raises(TensorError, match=r"^unsupported tensor dtype 'float' \(ambiguous: "):
        tensor([1.0], dtype="float")
    assert tensor([1.0], dtype=float).dtype == np.float64


@pytest.mark.parametrize(
    ("dtype", "shown"),
    [
        ("float16", "float16"),
        (np.int32, "int32"),
        (torch.float16, "float16"),
        (torch.bfloat16, "torch.bfloat16"),  # numpy has no bfloat16: the repr
        ("bogus", "bogus"),
        (None, "None"),
        (5, "5"),
    ],
)
def test_dtype_shown(dtype: object, shown: str) -> None:
    assert dtype_shown(dtype) == shown


def test_dtype_shown_names_the_byte_order_of_a_float_of_the_other_order() -> None:
    other, word = (">f8", "big") if np.little_endian else ("<f8", "little")
    assert dtype_shown(other) == f"{other} ({word}-endian; accepted: native byte order)"


def test_int_at_least_messages() -> None:
    seed = int_at_least(0, "invalid seed {}; expected an integer >= 0")
    assert seed(" 7 ") == 7 and seed("0") == 0
    for text, message in (("-3", "invalid seed -3; expected an integer >= 0"),
                          ("x{}", "invalid seed 'x{}'; expected an integer >= 0"),
                          ("1.5", "invalid seed '1.5'; expected an integer >= 0")):
        with pytest.raises(argparse.ArgumentTypeError) as caught:
            seed(text)
        assert str(caught.value) == message
    count = int_at_least(1, "must be >= 1, got {}", not_int="invalid int {}")
    assert count("2") == 2
    with pytest.raises(argparse.ArgumentTypeError, match=r"^must be >= 1, got 0$"):
        count("0")
    with pytest.raises(argparse.ArgumentTypeError, match=r"^invalid int 'two'$"):
        count("two")


def test_shown_names_long_integers_by_size() -> None:
    assert shown(10**90) == repr(10**90)  # 91 digits: printed
    assert shown(10**120) == "an integer of about 121 digits"
    assert shown(-(10**5000)) == "a negative integer of about 5001 digits"  # repr would raise
    assert shown(np.int64(7)) == repr(np.int64(7)) and shown("x") == "'x'" and shown(True) == "True"
    assert shown(fractions.Fraction(1, 3)) == "Fraction(1, 3)"
    assert shown(fractions.Fraction(-(10**400), 3)) == "a negative fraction of about 401 digits over 1 digits"
    with pytest.raises(KeyError) as caught:
        checked_int(-(10**5000), "size", 1, KeyError)
    assert caught.value.args == ("size must be an int >= 1, got a negative integer of about 5001 digits",)
