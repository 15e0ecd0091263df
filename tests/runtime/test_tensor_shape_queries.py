"""``Tensor.size`` / ``numel`` / ``nelement`` / ``dim`` against ``torch.Tensor``'s, directly: the
same shapes, the same answers, the same errors (types and messages), so shape code ports from
torch unchanged. Oracle: torch 2.13 itself, called on a torch tensor of the same shape."""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pytest
import torch

import torchlean as tl
from torchlean.backend.errors import TorchLeanError
from torchlean.tensor import DimensionError, TensorTypeError

SHAPES = [(), (0,), (3,), (2, 3, 4), (2, 0, 5)]


def _pair(shape: tuple[int, ...], dtype: str = "float32") -> tuple[tl.Tensor, torch.Tensor]:
    return tl.tensor(np.zeros(shape, dtype=dtype)), torch.zeros(shape, dtype=getattr(torch, dtype))


def _torch_error(call: Callable[..., object], *args: object) -> BaseException:
    """What ``call(*args)`` raised (it must raise)."""
    with pytest.raises(Exception) as caught:
        call(*args)
    return caught.value


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_whole_shape_counts_and_rank_match_torch(shape: tuple[int, ...], dtype: str) -> None:
    ours, theirs = _pair(shape, dtype)
    assert type(ours.size()) is tuple and all(type(d) is int for d in ours.size())
    assert ours.size() == tuple(theirs.size()) == shape
    assert ours.size() == theirs.size()  # torch.Size is a tuple subclass: equal both ways
    assert ours.size(None) == ours.size(dim=None) == tuple(theirs.size(None))
    for ask in ("numel", "nelement", "dim"):
        got, want = getattr(ours, ask)(), getattr(theirs, ask)()
        assert (type(got), got) == (int, want), ask
    assert (ours.shape, ours.ndim) == (shape, len(shape))  # unchanged


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_each_axis_matches_torch(shape: tuple[int, ...]) -> None:
    ours, theirs = _pair(shape)
    ndim = len(shape)
    for d in range(-ndim, ndim):
        for spelled in (d, np.int64(d), np.int32(d)):
            got = ours.size(spelled)
            assert (type(got), got) == (int, theirs.size(spelled)), spelled
        assert ours.size(dim=d) == theirs.size(dim=d) == shape[d]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_axes_out_of_range_raise_torchs_index_error(shape: tuple[int, ...]) -> None:
    ours, theirs = _pair(shape)
    ndim = len(shape)
    for d in sorted({ndim, ndim + 4, -ndim - 1, -ndim - 4, 0, -1} - set(range(-ndim, ndim))):
        expected = _torch_error(theirs.size, d)
        assert type(expected) is IndexError
        with pytest.raises(IndexError, match=f"^{re.escape(str(expected))}$") as caught:
            ours.size(d)
        assert isinstance(caught.value, DimensionError) and isinstance(caught.value, TorchLeanError)
        with pytest.raises(DimensionError, match=f"^{re.escape(str(expected))}$"):
            ours.size(np.int64(d))


def test_messages_name_the_range_and_the_axis() -> None:
    """Spelled out once (the comparisons above take them from torch)."""
    with pytest.raises(
        IndexError, match=r"^Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)$"
    ):
        tl.tensor(np.zeros((2, 3))).size(2)
    with pytest.raises(IndexError, match=r"^Dimension specified as 0 but tensor has no dimensions$"):
        tl.tensor(1.0).size(0)


def test_an_axis_beyond_int64_is_out_of_range() -> None:
    """torch raises ``ValueError: Overflow when unpacking long long`` before its range check;
    here such an int is simply out of range (an IndexError), and a huge one is named by size."""
    with pytest.raises(ValueError, match="Overflow"):
        torch.zeros(2, 3).size(2**70)
    x = tl.tensor(np.zeros((2, 3)))
    with pytest.raises(DimensionError, match=r"\[-2, 1\], but got -1180591620717411303424\)$"):
        x.size(-(2**70))
    with pytest.raises(DimensionError, match=r"but got an integer of about 5001 digits\)$"):
        x.size(10**5000)


@pytest.mark.parametrize(
    "dim", [True, False, np.bool_(True), 1.0, 0.0, np.float64(1.0), "0", [0], (0,)], ids=repr
)
def test_non_integer_axes_are_refused_as_torch_refuses_them(dim: object) -> None:
    ours, theirs = _pair((2, 3))
    expected = _torch_error(theirs.size, dim)
    assert type(expected) is TypeError
    with pytest.raises(TypeError, match=f"^{re.escape(str(expected))} \\(got ") as caught:
        ours.size(dim)  # type: ignore[call-overload]
    assert isinstance(caught.value, TensorTypeError)
    assert f"(got {dim!r}; accepted: an int or a numpy integer" in str(caught.value)


def test_tensor_axes_are_refused() -> None:
    """torch takes a 0-d integer torch tensor as an axis; torchlean's tensors have no
    ``__index__`` (see ``Tensor.__int__``), and ``size`` refuses both kinds by type."""
    x = tl.tensor(np.zeros((2, 3)))
    assert torch.zeros(2, 3).size(torch.tensor(1)) == 3
    for dim in (torch.tensor(1), tl.tensor(1)):
        with pytest.raises(TensorTypeError, match=r"must be int, not (torch|torchlean\.tensor)\.Tensor"):
            x.size(dim)  # type: ignore[call-overload]


def test_argument_counts_match_torch() -> None:
    ours, theirs = _pair((2, 3))
    for call in (
        lambda t: t.size(0, 1),
        lambda t: t.size(d=1),
        lambda t: t.numel(0),
        lambda t: t.dim(0),
        lambda t: t.nelement(0),
    ):
        assert type(_torch_error(call, theirs)) is TypeError
        with pytest.raises(TypeError):
            call(ours)


def test_queries_on_tape_results_and_detached_tensors() -> None:
    """Shape queries read metadata only: no op is recorded, and results and detached tensors
    answer as leaves do."""
    x = tl.tensor(np.ones((4, 3)), requires_grad=True)
    with tl.session(profile="checked_cpu") as s:
        y = tl.reduce_sum(x * 2.0, axis=1)
        before = len(s.selected)
        assert (y.size(), y.size(0), y.size(-1), y.numel(), y.dim()) == ((4,), 4, 4, 4, 1)
        assert (x.detach().size(), x.detach().numel()) == ((4, 3), 12)
        assert len(s.selected) == before


def test_porting_idioms() -> None:
    """Typical torch lines run unchanged."""
    x = tl.tensor(np.zeros((8, 5, 7)))
    batch, *features = x.size()
    assert (batch, features) == (8, [5, 7])
    assert x.reshape(x.size(0), -1).size() == (8, 35)
    assert x.numel() // x.size(0) == 35
    assert x.size()[1:] == (5, 7) and x.size(-1) == x.shape[-1]
    assert [x.size(i) for i in range(x.dim())] == list(x.shape)


def test_one_element_conversions_still_count_elements() -> None:
    """``item``/``float``/``bool``/``backward`` use the element count (formerly ``.size``)."""
    assert tl.tensor([[2.5]]).item() == 2.5 and float(tl.tensor([[2.5]])) == 2.5
    with pytest.raises(tl.TensorError, match=r"^float\(\) of a tensor with 3 values \(shape \(3,\)\)"):
        float(tl.tensor([1.0, 2.0, 3.0]))
    with pytest.raises(tl.TensorError, match=r"^the truth value of a tensor with no values \(shape \(2, 0\)"):
        bool(tl.tensor(np.zeros((2, 0))))
    with pytest.raises(tl.TensorError, match=r"one element \(got shape \(0,\)\)"):
        tl.tensor(np.zeros(0)).item()
    with tl.session(profile="checked_cpu"):
        x = tl.tensor(np.ones((1, 1)), requires_grad=True)
        (x * 3.0).backward()  # one element: no gradient needed
        with pytest.raises(tl.AutogradError, match=r"one-element output \(got shape \(2,\)\)"):
            (tl.tensor(np.ones(2), requires_grad=True) * 3.0).backward()
    assert x.grad is not None and x.grad.numpy().tolist() == [[3.0]]
