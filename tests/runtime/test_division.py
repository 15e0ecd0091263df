"""``div`` by divisors whose reciprocal overflows (the subnormals): the quotient follows torch.

``div`` records ``inv`` then ``mul`` (the catalog has no division); ``inv`` of a subnormal is
``±inf``, so without the exact power-of-two rescaling the quotient was ``±inf`` (or NaN for
``0 / b``) where ``torch.div`` is finite. Oracle: torch's division in float64 of the same
(exactly representable) values, rounded to the dtype.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import torch

import torchlean as tl
from torchlean.autograd import storage

PROFILES = ("checked_cpu", "fast_cpu", "libtorch_forward_cpu")
DTYPES = (np.float32, np.float64)


def _subnormal_pairs(dtype: type[np.floating]) -> tuple[np.ndarray, np.ndarray]:
    info = np.finfo(dtype)
    tiny = float(info.smallest_subnormal)
    a = np.array([tiny * 3, tiny * 1000, 0.0, -0.0, 1.0, -2.5, tiny, 7.0, np.inf, np.nan], dtype=dtype)
    b = np.array([tiny * 7, tiny * 3, tiny, -tiny * 5, 0.5, 4.0, -tiny * 2, 0.0, tiny, tiny], dtype=dtype)
    return a, b


def _oracle(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        wide = (torch.from_numpy(a.astype(np.float64)) / torch.from_numpy(b.astype(np.float64))).numpy()
        return wide.astype(a.dtype)


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_quotients_by_subnormal_divisors_follow_torch(profile: str, dtype: type[np.floating]) -> None:
    a, b = _subnormal_pairs(dtype)
    expected = _oracle(a, b)
    assert np.isfinite(expected[:7]).all()  # the cases that were inf/nan before
    eps = float(np.finfo(dtype).eps)
    with tl.session(profile):
        got = (tl.tensor(a) / tl.tensor(b)).numpy()
    assert got.dtype == dtype
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(expected))
    finite = np.isfinite(expected)
    # a * (1/b) rounds twice: within 2 ulp of the correctly rounded quotient
    np.testing.assert_allclose(got[finite], expected[finite], rtol=2 * eps, atol=0)
    np.testing.assert_array_equal(np.signbit(got[finite]), np.signbit(expected[finite]))


@pytest.mark.parametrize("profile", PROFILES)
def test_numbers_on_either_side_of_a_subnormal_division(profile: str) -> None:
    tiny = 2e-39  # float32 subnormal whose reciprocal (5e38) overflows float32
    x = np.array([1e-39, -3e-39, 0.0], dtype=np.float32)
    with tl.session(profile):
        np.testing.assert_allclose((tl.tensor(x) / tiny).numpy(), _oracle(x, np.full(3, tiny, np.float32)),
                                   rtol=2e-7)
        y = np.array([4e-39, -1e-39], dtype=np.float32)
        np.testing.assert_allclose((1e-39 / tl.tensor(y)).numpy(), _oracle(np.full(2, 1e-39, np.float32), y),
                                   rtol=2e-7)


@pytest.mark.parametrize("profile", PROFILES)
def test_broadcast_subnormal_divisor_and_numerator_gradient(profile: str) -> None:
    a = np.array([[1e-300, 2e-300], [3.0, -4.0]])
    b = np.array([2e-310, 1e-3])  # the first divisor's reciprocal overflows float64
    expected = _oracle(a, np.broadcast_to(b, a.shape).copy())
    with tl.session(profile):
        x = tl.tensor(a, requires_grad=True)
        y = tl.tensor(b)
        out = x / y
        np.testing.assert_allclose(out.numpy(), expected, rtol=4.5e-16)
        out.sum().backward()
    tx = torch.tensor(a, requires_grad=True)
    (tx / torch.tensor(b)).sum().backward()
    assert x.grad is not None and tx.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=4.5e-16)  # [inf, 1000]


def test_ordinary_divisors_record_inv_then_mul_unchanged() -> None:
    a = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    b = np.array([3.0, 7.0, 1e-30], dtype=np.float32)  # 1e-30 is normal: its reciprocal is finite
    with tl.session("checked_cpu"):
        got = (tl.tensor(a) / tl.tensor(b)).numpy()
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(got, a * np.reciprocal(b))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_reciprocal_overflow_mask_agrees_on_numpy_and_torch_storage(dtype: type[np.floating]) -> None:
    a, b = _subnormal_pairs(dtype)
    values = np.concatenate([a, b])
    # far from the boundary 1/max, "the reciprocal overflows" is "0 < |v| < 1/max" (NaN compares False)
    expected = (values != 0) & (np.abs(values.astype(np.float64)) < 1 / float(np.finfo(dtype).max))
    assert expected.sum() == 10
    np.testing.assert_array_equal(storage.reciprocal_overflows(values), expected)
    np.testing.assert_array_equal(storage.reciprocal_overflows(torch.from_numpy(values)), expected)
    ints = np.array([0, 1, -3])
    assert not storage.reciprocal_overflows(ints).any()
    assert not storage.reciprocal_overflows(torch.from_numpy(ints)).any()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_division_by_the_largest_divisor_whose_reciprocal_overflows(dtype):
    # the largest positive value whose reciprocal overflows (a subnormal near 1/finfo.max);
    # review21 mut ST1; oracle: torch's division of that value by itself is 1
    x = dtype(1) / np.finfo(dtype).max
    with np.errstate(all="ignore"):
        while not np.isinf(np.reciprocal(x)):
            x = np.nextafter(x, dtype(0))
        while np.isinf(np.reciprocal(np.nextafter(x, dtype(1)))):
            x = np.nextafter(x, dtype(1))
    a = np.array([x, -x], dtype=dtype)
    expected = (torch.from_numpy(a) / torch.from_numpy(a)).numpy()
    assert expected.tolist() == [1.0, 1.0]
    got = tl.div(tl.tensor(a), tl.tensor(a)).numpy()
    assert got.tolist() == [1.0, 1.0]


# ----------------------------------------------- divisors whose reciprocal is subnormal (review23 fuzz F1)


def _large_divisor_pairs(dtype: type[np.floating]) -> tuple[np.ndarray, np.ndarray]:
    """Divisors above 1 / finfo.tiny (reciprocal subnormal), numerators spread over the range."""
    info = np.finfo(dtype)
    big = float(info.max)
    rng = np.random.default_rng(23)
    b = (rng.uniform(0.3, 1.0, 200) * big).astype(dtype)
    b[:3] = [big, -big, np.nextafter(dtype(1 / float(info.tiny)), dtype(np.inf))]
    a = (rng.uniform(-1.0, 1.0, 200) * big).astype(dtype)
    a[:6] = [big, 1.0, -3.0, 0.0, np.inf, float(info.tiny)]
    return a, b


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_quotients_by_divisors_with_subnormal_reciprocals_follow_torch(
    profile: str, dtype: type[np.floating]
) -> None:
    a, b = _large_divisor_pairs(dtype)
    assert storage.reciprocal_subnormal(b).all()
    expected = (torch.from_numpy(a) / torch.from_numpy(b)).numpy()  # correctly rounded in the dtype
    eps = float(np.finfo(dtype).eps)
    with tl.session(profile):
        got = (tl.tensor(a) / tl.tensor(b)).numpy()
        scalar = (tl.tensor(a) / float(b[0])).numpy()
    for value, oracle in ((got, expected), (scalar, (torch.from_numpy(a) / float(b[0])).numpy())):
        np.testing.assert_array_equal(np.isinf(value), np.isinf(oracle))
        normal = np.isfinite(oracle) & (np.abs(oracle) >= np.finfo(dtype).tiny)
        # a * (1/b) rounds twice: within 2 ulp (it was up to 4 with a subnormal reciprocal)
        np.testing.assert_allclose(value[normal], oracle[normal], rtol=2 * eps, atol=0)
        tiny = np.isfinite(oracle) & ~normal  # subnormal quotients: within 2 of their ulps
        ulp = float(np.finfo(dtype).smallest_subnormal)
        np.testing.assert_allclose(value[tiny], oracle[tiny], rtol=0, atol=2 * ulp)
    assert got[0] == 1.0 and got[1] == expected[1]  # max / max; 1 / max is subnormal, exact here


def test_three_e38_over_itself_is_one() -> None:
    x = np.float32(3e38)
    with tl.session("checked_cpu"):
        assert (tl.tensor([x]) / tl.tensor([x])).numpy().tolist() == [1.0]
        assert (tl.tensor([x]) / 3e38).numpy().tolist() == [1.0]


@pytest.mark.parametrize("profile", PROFILES)
def test_gradients_through_a_divisor_with_a_subnormal_reciprocal(profile: str) -> None:
    a = np.array([3.0e307, -1.0e300, 2.0])
    b = np.array([1.5e308, 9.0e307, 6.0e307])  # reciprocals below 2**-1022
    with tl.session(profile):
        x, y = tl.tensor(a, requires_grad=True), tl.tensor(b, requires_grad=True)
        (x / y).sum().backward()
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    (tx / ty).sum().backward()
    assert x.grad is not None and y.grad is not None and tx.grad is not None and ty.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=4.5e-16, atol=0)  # 1/b, subnormal
    np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy(), rtol=1e-15, atol=1e-323)


@pytest.mark.parametrize(
    ("dtype", "a", "b"),
    [
        (np.float32, 2.0**-149, 2.0**-128),  # -a/b**2 = -2**107
        (np.float32, -3.0 * 2.0**-149, 1.5 * 2.0**-135),  # 4/3 * 2**121
        (np.float32, 2.0**127, 1.5 * 2.0**127),  # subnormal gradient, exact to the last bit
        (np.float64, 2.0**-1074, 2.0**-1025),  # -2**976
        (np.float64, 2.0**1000, 1.25 * 2.0**1023),
    ],
)
def test_divisor_gradients_at_rescaled_divisors_are_torchs(dtype, a, b) -> None:
    """Rescaled by ``2**(3*maxexp//4)``, a divisor's reciprocal and its square stay normal, so the
    divisor's gradient ``-a/b**2`` is finite and torch's wherever torch's is (review24 pmut F7:
    with ``2**(maxexp//2)`` the square overflowed, ``-inf`` at ``2**-149 / 2**-128`` where torch
    gives ``-1.6225928e32``). Oracles: torch's autograd of ``a / b`` in the same dtype, and the
    exact ``-a/b**2`` in rational arithmetic, rounded to the dtype."""
    with tl.session("checked_cpu"):
        x = tl.tensor(np.array([a], dtype=dtype), requires_grad=True)
        y = tl.tensor(np.array([b], dtype=dtype), requires_grad=True)
        (x / y).sum().backward()
    tx = torch.tensor([a], dtype=torch.from_numpy(np.zeros(0, dtype)).dtype, requires_grad=True)
    ty = torch.tensor([b], dtype=tx.dtype, requires_grad=True)
    (tx / ty).sum().backward()
    assert y.grad is not None and ty.grad is not None and x.grad is not None and tx.grad is not None
    got, want = y.grad.numpy()[0], ty.grad.numpy()[0]
    assert np.isfinite(got) and np.isfinite(want) and want != 0
    spacing = np.spacing(np.abs(dtype(want)))
    assert abs(float(got) - float(want)) <= 2 * float(spacing), (got, want)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=2 * float(np.finfo(dtype).eps))
    exact = dtype(float(-Fraction(a) / Fraction(b) ** 2))  # correctly rounded to the dtype
    assert abs(float(got) - float(exact)) <= 2 * float(np.spacing(np.abs(exact))), (got, exact)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_reciprocal_subnormal_mask_agrees_on_numpy_and_torch_storage(dtype: type[np.floating]) -> None:
    info = np.finfo(dtype)
    bound = dtype(1 / float(info.tiny))
    values = np.array(
        [bound, np.nextafter(bound, dtype(np.inf)), -info.max, info.max, np.inf, -np.inf, np.nan, 0.0, 1.0],
        dtype=dtype,
    )
    expected = np.array([False, True, True, True, False, False, False, False, False])
    with np.errstate(under="ignore"):
        reciprocal = np.reciprocal(values[:4])
    assert (reciprocal[0] == info.tiny) and (np.abs(reciprocal[1:]) < info.tiny).all()  # the bound is exact
    np.testing.assert_array_equal(storage.reciprocal_subnormal(values), expected)
    np.testing.assert_array_equal(storage.reciprocal_subnormal(torch.from_numpy(values)), expected)
    ints = np.array([2**62, -3])
    assert not storage.reciprocal_subnormal(ints).any()
    assert not storage.reciprocal_subnormal(torch.from_numpy(ints)).any()  # review24 pmut S07


@pytest.mark.parametrize("values", [np.array([7, -3]), np.array([True, False])], ids=["int64", "bool"])
@pytest.mark.parametrize("divisor", [0.5, 3, 1e-300, 3e38, 0, float("inf")])
def test_a_tensor_that_is_not_floating_divided_by_a_number_is_refused_by_name(
    values: np.ndarray, divisor: float
) -> None:
    """review23 diff D1: the reciprocal checks of the scalar path read the dtype's float limits;
    an int64 or bool tensor raised numpy's ``ValueError: data type int64 not inexact`` (and
    ``/ 1e-300`` an OverflowError) instead of the op's refusal naming the accepted dtypes."""
    from torchlean.backend.errors import TorchLeanError

    refusal = rf"^div: operand a has dtype {values.dtype}; accepted: float32 or float64"
    with pytest.raises(TorchLeanError, match=refusal):
        tl.tensor(values) / divisor


@pytest.mark.parametrize(
    ("dtype", "divisor", "ops"),
    [
        (np.float32, float("inf"), ["inv", "mul"]),  # not finite: inv of the constant, then mul
        (np.float32, -float("inf"), ["inv", "mul"]),
        (np.float32, 1e300, ["inv", "mul"]),  # overflows float32
        (np.float32, 0.0, ["inv", "mul"]),
        (np.float32, 2.0**126, ["scale"]),  # its reciprocal 2**-126 is normal (the smallest)
        (np.float64, 2.0**1022, ["scale"]),
        (np.float32, 2.0**127, ["mul", "inv"]),  # 2**-127 is subnormal: (x * s) * inv(b * s), mul first
        (np.float32, 3.0, ["scale"]),
    ],
)
def test_division_by_a_number_records_the_ops_its_docstring_states(dtype, divisor, ops) -> None:
    """``div``'s docstring: ``scale`` by ``1/b`` when ``b`` is finite in the dtype and its
    reciprocal normal, else ``inv`` of the constant then ``mul`` (review24 pmut D03, N01: values
    are equal either way, the recorded ops are not)."""
    with tl.session("checked_cpu") as s:
        tl.tensor(np.array([1.0, -2.0], dtype=dtype)) / divisor
    assert [k.capsule.op.label for k in s.selected] == ops


_F32 = np.array([1.0, 2.0], dtype=np.float32)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: tl.tensor([1, 2]) / tl.tensor([1, 2]), r"^div: operand a has dtype int64; accepted: float"),
        (lambda: tl.tensor([1, 2]) / 2, r"^div: operand a has dtype int64"),
        (lambda: 1.0 / tl.tensor([True]), r"^div: operand b has dtype bool"),
        (lambda: tl.tensor(_F32) / tl.tensor([True, False]), r"^div: operand b has dtype bool"),
        (lambda: tl.tensor(_F32) / tl.tensor(_F32, dtype="float64"),
         r"^div: operand b has dtype float64 but operand a has dtype float32; torchlean kernels do not"),
        (lambda: tl.tensor(_F32) / tl.tensor(np.ones(3, np.float32)),
         r"^div: shapes are not broadcastable: a \(2,\), b \(3,\)"),
        (lambda: -tl.tensor([1, 2]), r"^neg: input x has dtype int64; accepted: float32 or float64 \(neg"),
        (lambda: -tl.tensor([True]), r"^neg: input x has dtype bool"),
    ],
)
def test_division_and_negation_errors_name_the_operator_not_the_recorded_ops(call, message) -> None:  # type: ignore[no-untyped-def]
    """``/`` records ``inv`` then ``mul`` (or ``scale``) and unary minus ``scale``: their guards
    named those ops (``inv: input x has dtype int64``, ``mul: shapes are not broadcastable``), not
    what the user wrote; ``div`` and ``neg`` now check first, before any op is recorded."""
    with pytest.raises(tl.GuardError, match=message):
        call()


def test_the_named_conversion_is_one_torchlean_takes() -> None:
    """review113 F1: the refusal named ``t.to(dtype='float32')``, which ``Tensor.to`` refuses (it
    moves between devices only); the conversion it names now runs and gives torch's quotient."""
    t = tl.tensor([1, 2, 7])
    named = r"convert with tl\.tensor\(t\.numpy\(\), dtype='float32'\)\)$"
    with pytest.raises(tl.GuardError, match=named) as info:
        t / 2
    assert "t.to(" not in str(info.value)
    converted = eval("tl.tensor(t.numpy(), dtype='float32')", {"tl": tl, "t": t})
    expected = (torch.tensor([1, 2, 7]) / 2).numpy()
    np.testing.assert_array_equal((converted / 2).numpy(), expected)


def test_the_named_conversion_matches_a_float64_partner() -> None:
    """review114 F7: the hint named float32 beside a float64 operand, which the next try refused
    for mixing dtypes; it names the partner's dtype, and following it gives torch's quotient."""
    f64, i = tl.tensor(np.array([1.5, 2.5])), tl.tensor([1, 2])
    with pytest.raises(tl.GuardError, match=r"convert with tl\.tensor\(t\.numpy\(\), dtype='float64'\)\)$"):
        f64 / i
    converted = tl.tensor(i.numpy(), dtype="float64")
    expected = torch.tensor([1.5, 2.5]) / torch.tensor([1, 2])
    np.testing.assert_array_equal((f64 / converted).numpy(), expected.numpy())
