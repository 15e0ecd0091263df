"""reshape and expand to shapes numpy and torch cannot lay out are GuardErrors (review61 F4).

A 0 extent made the element count 0, so ``reshape(0, 2**63)`` passed the int64 element-count check
and failed inside the kernel, as numpy's ``ValueError`` (reference) or torch's ``TypeError`` /
``RuntimeError`` (aten); so did shapes whose bytes overflow int64 (``reshape(0, 2**62, 4)``,
``expand(2**31, 2**31)``). Oracle for the limits: numpy itself (``np.empty(shape, dtype)`` lays out
a shape exactly when its nonzero extents times the item size fit int64 bytes), checked below.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import torchlean as tl
from torchlean.backend import profiles
from torchlean.backend.providers.reference import guards
from torchlean.backend.vocabulary import Device

INT64_MAX = 2**63 - 1
CPU_PROFILES = [n for n in profiles.names() if profiles.get(n).policy.device is Device.CPU]


def test_every_cpu_profile_is_covered() -> None:
    expected = {"checked_cpu", "fast_cpu", "libtorch_forward_cpu", "libtorch_forward_strict_cpu"}
    assert expected <= set(CPU_PROFILES)


@pytest.mark.parametrize("profile", CPU_PROFILES)
@pytest.mark.parametrize(
    ("start", "call", "message"),
    [
        ((0,), lambda t: t.reshape(0, 2**63), r"^reshape: shape \(0, 9223372036854775808\) has extent "
         r"9223372036854775808, which overflows int64 \(accepted: extents at most 9223372036854775807\)$"),
        ((0,), lambda t: t.reshape(2**64, 0), r"^reshape: shape \(18446744073709551616, 0\) has extent "),
        ((0,), lambda t: t.reshape(2**63, -1), r"^reshape: shape \(9223372036854775808, 0\) has extent "),
        ((0,), lambda t: t.reshape(0, 2**62, 4), r"^reshape: shape \(0, 4611686018427387904, 4\) of 8-byte "
         r"elements spans 147573952589676412928 bytes .*overflows int64 \(accepted: at most "
         r"9223372036854775807 bytes\)$"),
        ((0,), lambda t: t.reshape(0, 2**60), r"^reshape: shape \(0, 1152921504606846976\) of 8-byte "
         r"elements spans 9223372036854775808 bytes"),
        ((1, 1), lambda t: t.expand(2**31, 2**31), r"^broadcast: shape \(2147483648, 2147483648\) of 8-byte "
         r"elements spans 36893488147419103232 bytes"),
        ((1, 1), lambda t: t.expand(2**31, 2**30), r"^broadcast: shape \(2147483648, 1073741824\) of 8-"),
        ((1, 1), lambda t: t.expand(0, 2**63), r"^broadcast: shape \(0, 9223372036854775808\) has extent "),
        ((1, 1), lambda t: tl.broadcast_to(t, (2**61, 0, 4)), r"^broadcast: shape \(2305843009213693952, 0, "
         r"4\) of 8-byte elements spans 73786976294838206464 bytes"),
        # the element count beyond int64 keeps its own message
        ((1, 1), lambda t: t.expand(2**62, 2), r"^broadcast: shape \(4611686018427387904, 2\) has "
         r"9223372036854775808 elements, which overflows int64"),
    ],
)
def test_shapes_beyond_int64_extents_or_bytes_are_guard_errors(
    profile: str, start: tuple[int, ...], call: object, message: str
) -> None:
    with tl.session(profile):
        x = tl.tensor(np.zeros(start))
        with pytest.raises(tl.GuardError, match=message):
            call(x)  # type: ignore[operator]


def test_the_limits_are_numpys() -> None:
    """At the limit numpy lays the shape out and the guard accepts it; one past, both refuse."""
    for dtype in (np.float64, np.float32, np.int64, np.bool_):
        itemsize = np.dtype(dtype).itemsize
        fits, past = (0, INT64_MAX // itemsize), (0, INT64_MAX // itemsize + 1)
        assert np.empty(fits, dtype).shape == fits
        with pytest.raises(ValueError, match=r"array is too big|Maximum allowed dimension exceeded"):
            np.empty(past, dtype)  # bool: the extent 2**63 itself
        guards.check_layout_size("reshape", fits, "shape", itemsize)
        refused = f"has extent {past[1]}" if itemsize == 1 else f"spans {past[1] * itemsize} bytes"
        with pytest.raises(tl.GuardError, match=re.escape(refused)):
            guards.check_layout_size("reshape", past, "shape", itemsize)


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
def test_zero_size_shapes_within_the_limits_still_reshape_and_expand(profile: str) -> None:
    """torch accepts these views; the CPU providers copy them (zero bytes)."""
    with tl.session(profile):
        z = tl.tensor(np.zeros((0,)))
        assert z.reshape(0, INT64_MAX // 8).shape == (0, INT64_MAX // 8)
        assert z.reshape(-1, 2**40).shape == (0, 2**40)
        flags = tl.tensor(np.zeros((0,), dtype=bool))
        assert flags.reshape(0, INT64_MAX).shape == (0, INT64_MAX)  # 1-byte elements
        assert tl.tensor(np.zeros((1, 1))).expand(0, 2**59).shape == (0, 2**59)
