"""review239 F5: a torch tensor that requires grad, lives on ``meta`` or numpy cannot read is
refused by every spec function with a SpecTypeError naming ``t.detach().cpu()`` (torch's
``RuntimeError``/``TypeError`` before); F7: ``causal_mask(align=)`` is type-checked before it is
compared; F12: ``causal_mask`` sizes beyond one array are refused; F16: an object array holding
anything but ``mpmath.mpf`` (a Python int beyond int64 makes one) is refused, naming
``as_mpf_array``, rather than taken to the 50-digit path."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mpmath
import numpy as np
import pytest
import torch

from torchlean import spec
from torchlean.spec import SpecTypeError, SpecValueError

Q = np.ones((2, 3, 4))
GRAD = "is a torch tensor (shape (2, 3, 4), dtype torch.float32) that requires grad: pass t.detach().cpu()"
ACCEPTED = "(accepted: a numpy array or a CPU torch tensor that does not require grad)"

CALLS: list[tuple[str, Callable[[Any], object]]] = [
    ("sdpa", lambda t: spec.scaled_dot_product_attention(t, Q, Q)),
    ("sdpa_backward", lambda t: spec.scaled_dot_product_attention_backward(Q, Q, t, Q)),
    ("flash", lambda t: spec.flash_attention(Q, t, Q)),
    ("flash_backward", lambda t: spec.flash_attention_backward(Q, Q, Q, t, np.zeros((2, 3)), Q)),
    ("softmax", lambda t: spec.hard_masked_softmax(t, None)),
    ("as_mpf_array", lambda t: spec.as_mpf_array(t)),
]
NAMES = {"sdpa": "q", "sdpa_backward": "v", "flash": "k", "flash_backward": "out", "softmax": "scores",
         "as_mpf_array": "values"}


@pytest.mark.parametrize(("label", "call"), CALLS, ids=[label for label, _ in CALLS])
def test_a_tensor_requiring_grad_is_refused(label: str, call: Callable[[Any], object]) -> None:
    with pytest.raises(SpecTypeError) as info:
        call(torch.ones(2, 3, 4, requires_grad=True))
    assert str(info.value) == f"{NAMES[label]} {GRAD} {ACCEPTED}"


@pytest.mark.parametrize(("label", "call"), CALLS, ids=[label for label, _ in CALLS])
def test_a_meta_tensor_is_refused(label: str, call: Callable[[Any], object]) -> None:
    with pytest.raises(SpecTypeError) as info:
        call(torch.empty(2, 3, 4, device="meta"))
    assert str(info.value) == (
        f"{NAMES[label]} is a meta torch tensor (shape (2, 3, 4)): it has no values (accepted: a numpy array "
        "or a CPU torch tensor that does not require grad)"
    )


def test_a_mask_tensor_is_read_as_the_operands_are() -> None:
    meta = r"^mask is a meta torch tensor \(shape \(2,\)\): it has no values"
    with pytest.raises(SpecTypeError, match=meta):
        spec.hard_masked_softmax([1.0, 2.0], torch.ones(2, dtype=torch.bool, device="meta"))
    with pytest.raises(SpecTypeError, match=r"^mask is a torch tensor \(shape \(2,\), dtype torch\.float32\) "
                                            r"that requires grad: pass t\.detach\(\)\.cpu\(\)"):
        spec.hard_masked_softmax([1.0, 2.0], torch.ones(2, requires_grad=True))
    plain = spec.hard_masked_softmax([1.0, 2.0], torch.tensor([True, False]))
    assert plain.tolist() == [1.0, 0.0]


def test_a_tensor_numpy_cannot_hold_is_refused_with_torch_reason() -> None:
    unreadable = r"^q is a torch tensor numpy cannot read: .*BFloat16 \(accepted: "
    with pytest.raises(SpecTypeError, match=unreadable):
        spec.scaled_dot_product_attention(torch.ones(2, 3, 4, dtype=torch.bfloat16), Q, Q)


def test_a_cpu_tensor_is_still_read() -> None:
    got = spec.scaled_dot_product_attention(torch.ones(2, 3, 4, dtype=torch.float64), Q, Q)
    assert np.array_equal(got, spec.scaled_dot_product_attention(Q, Q, Q))


ALIGN = "causal_mask: align must be one of upper_left, lower_right (a string), got"


@pytest.mark.parametrize(("align", "shown"), [
    (np.array(["upper_left", "x"]), "array(['upper_left', 'x'], dtype='<U10') of type ndarray"),
    (np.array("upper_left"), "array('upper_left', dtype='<U10') of type ndarray"),
    (None, "None of type NoneType"),
    (np.broadcast_to(np.str_("a"), (2**40,)), "array(['a', 'a', 'a', ..., 'a', 'a', 'a'], shape=(1099511... "
                                              "of type ndarray"),
])
def test_causal_mask_align_is_type_checked_first(align: object, shown: str) -> None:
    with pytest.raises(SpecTypeError) as info:
        spec.causal_mask(2, 2, align=align)  # type: ignore[arg-type]
    assert str(info.value) == f"{ALIGN} {shown}"


CAP = 2**60 - 1  # intp.max // 8 on a 64-bit platform: one array of int64 positions


@pytest.mark.parametrize(("n_q", "n_k", "beyond", "sizes"), [
    (2**70, 2, f"n_q = {2**70}", f"n_q = {2**70}, n_k = 2"),
    (2**31, 2**31, f"n_q * n_k = {2**62}", f"n_q = {2**31}, n_k = {2**31}"),
    (2**61, 0, f"n_q = {2**61}", f"n_q = {2**61}, n_k = 0"),
    (0, 2**70, f"n_k = {2**70}", f"n_q = 0, n_k = {2**70}"),  # review241 F10: the side, not "n_q * n_k = 0"
    (10**400, 1, "n_q = an integer of about 401 digits", "n_q = an integer of about 401 digits, n_k = 1"),
])
def test_causal_mask_sizes_beyond_one_array_are_refused(n_q: int, n_k: int, beyond: str, sizes: str) -> None:
    with pytest.raises(SpecValueError) as info:
        spec.causal_mask(n_q, n_k)
    assert str(info.value) == (
        f"causal_mask: {beyond} is more than one array of int64 positions can hold ({sizes}; accepted: n_q, "
        f"n_k and n_q * n_k at most {CAP})"
    )


def test_causal_mask_of_an_empty_side_allocates_nothing() -> None:
    assert spec.causal_mask(2**59, 0).shape == (2**59, 0)
    assert spec.causal_mask(0, 3, align="lower_right").shape == (0, 3)
    lower_right = [[False, False], [True, False], [True, True]]
    assert spec.causal_mask(3, 2, align="lower_right").tolist() == lower_right


def test_causal_mask_negative_huge_size_is_named_by_its_size() -> None:
    named = r"^n_q must be >= 0, got a negative integer of about 5001 digits$"
    with pytest.raises(SpecValueError, match=named):
        spec.causal_mask(-(10**5000), 2)


MPF = ("not an mpmath.mpf (accepted: a floating array, or an object array of mpmath.mpf for the mpmath "
       "path: spec.as_mpf_array({name}) converts ints and floats, rounded to mpmath's working precision "
       "(mpmath.mp.dps))")


def test_a_python_int_beyond_int64_is_refused_not_taken_to_mpmath() -> None:
    with pytest.raises(SpecTypeError) as info:
        spec.hard_masked_softmax([2**70, 1], None)
    assert str(info.value) == f"scores is an object array holding {2**70} of type int at (0,), " + MPF.format(
        name="scores")
    with pytest.raises(SpecTypeError) as info:
        spec.hard_masked_softmax(2**70, np.ones(3, bool))
    assert str(info.value) == f"scores is an object array holding {2**70} of type int, " + MPF.format(
        name="scores")


def test_an_object_array_mixing_mpf_and_floats_is_refused() -> None:
    q = np.array([[mpmath.mpf(1), 0.5]], dtype=object)
    with pytest.raises(SpecTypeError) as info:
        spec.scaled_dot_product_attention(Q[0], Q[0], Q[0][:, :2].astype(object))
    held = "v is an object array holding 1.0 of type float at (0, 0), "
    assert str(info.value) == held + MPF.format(name="v")
    with pytest.raises(SpecTypeError, match=r"^q is an object array holding 0\.5 of type float at \(0, 1\)"):
        spec.scaled_dot_product_attention(q, q, q)


def test_a_value_that_is_no_number_is_named_before_a_float() -> None:
    """review241 F2: the harmless 1.0 was named (and as_mpf_array recommended) beside a None."""
    with pytest.raises(SpecTypeError) as info:
        spec.hard_masked_softmax(np.array([1.0, None], dtype=object), None)
    assert str(info.value) == (
        "scores is an object array holding None of type NoneType at (1,), not an mpmath.mpf (accepted: a "
        "floating array, or an object array of mpmath.mpf for the mpmath path: it holds a value that is not "
        "a number)"
    )


def test_a_list_holding_a_torch_tensor_numpy_cannot_read_is_refused_by_name() -> None:
    """review241 F1: only a bare tensor was checked; a list passed torch's RuntimeError on."""
    import torch

    with pytest.raises(SpecTypeError) as info:
        spec.hard_masked_softmax([torch.tensor(1.0, requires_grad=True)], None)
    assert str(info.value) == (  # review241 F8: the element, not torch's "Use tensor.detach().numpy()"
        "scores: element [0] is a torch tensor (shape (), dtype torch.float32) that requires grad: pass "
        "t.detach().cpu() (accepted: a numpy array or a CPU torch tensor that does not require grad)"
    )
    with pytest.raises(SpecTypeError) as info:
        spec.hard_masked_softmax([[1.0, 2.0], (3.0, torch.tensor(1.0, dtype=torch.bfloat16))], None)
    assert str(info.value) == (
        "scores: element [1][1] is a torch tensor of dtype torch.bfloat16, which numpy has no dtype for: "
        "pass t.double() (accepted: a numpy array or a CPU torch tensor of a dtype numpy has)"
    )


def test_the_mpmath_path_takes_mpf_arrays_and_broadcast_views() -> None:
    exact = spec.hard_masked_softmax(spec.as_mpf_array([2**70, 1]), None)
    assert exact.dtype == object and exact[0] == 1 and all(isinstance(x, mpmath.mpf) for x in exact)
    view = np.broadcast_to(np.array(mpmath.mpf(1), dtype=object), (3, 2**20))  # each entry looked at once
    rows = spec.hard_masked_softmax(view[:, :4], None)
    assert rows.shape == (3, 4) and all(x == mpmath.mpf("0.25") for x in rows.flat)


@pytest.mark.parametrize("n_q", [2**60 - 1, 2**60 - 64])
def test_causal_mask_sizes_numpy_cannot_lay_out_are_refused(n_q: int) -> None:
    """review242 F8: within 64 entries of the cap, numpy's ``arange`` raised a bare ``ValueError``
    ("array is too big"); it is a SpecValueError naming the side."""
    with pytest.raises(SpecValueError) as info:
        spec.causal_mask(n_q, 1)
    assert str(info.value).startswith(f"causal_mask: numpy cannot make the n_q = {n_q} int64 positions ")
    assert str(info.value).endswith(f"(n_q = {n_q}, n_k = 1; accepted: sizes numpy can lay out)")
