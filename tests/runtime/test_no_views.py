"""torchlean has no views: every op result, basic indexing included, is new storage.

Review 6 #8: an index that selects everything (``x[:]``, ``x[...]``, ``x[0:n]``) returned ``x``
itself, so a write through it changed ``x`` while a write through ``x[0:2]`` did not. Review 6
#9: the ``torchlean.tensor`` docstring said the ``aten`` (``fast_cpu``) ``reshape``, ``permute``
and ``broadcast`` return views sharing the version counter, where the kernels copy. The oracle is
hand values: the input's values before the writes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import torchlean as tl
from torchlean.backend import profiles
from torchlean.backend.vocabulary import Device
from torchlean.tensor import Tensor

CPU_PROFILES = [name for name in profiles.names() if profiles.get(name).policy.device is Device.CPU]

INDEXES: dict[str, Callable[[Tensor], Tensor]] = {
    "x[:]": lambda x: x[:],
    "x[...]": lambda x: x[...],
    "x[0:n]": lambda x: x[0:3],
    "x[0:2]": lambda x: x[0:2],
    "x[1]": lambda x: x[1],
    "x[None]": lambda x: x[None],
    "x[:, None]": lambda x: x[:, None],
}

SHAPE_OPS: dict[str, Callable[[Tensor], Tensor]] = {
    **INDEXES,
    "reshape": lambda x: x.reshape(3, 1),
    "reshape-same": lambda x: x.reshape(3),
    "permute-identity": lambda x: x.permute(0),
    "transpose": lambda x: x.reshape(1, 3).transpose(0, 1),
    "T": lambda x: x.T,
    "broadcast_to": lambda x: tl.broadcast_to(x, (2, 3)),
    "broadcast_to-same": lambda x: tl.broadcast_to(x, (3,)),
    # torch.Tensor-style methods (torch returns views, or the tensor itself for flatten of a 1-D one)
    "flatten": lambda x: x.flatten(),
    "unsqueeze": lambda x: x.unsqueeze(0),
    "squeeze-nothing": lambda x: x.squeeze(),
    "t": lambda x: x.t(),
    "expand": lambda x: x.expand(2, 3),
    "expand-same": lambda x: x.expand(-1),
    "clone": lambda x: x.clone(),
}


@pytest.mark.parametrize("profile", CPU_PROFILES)
@pytest.mark.parametrize("name", list(SHAPE_OPS))
def test_results_never_share_storage_with_their_input(profile: str, name: str) -> None:
    with tl.session(profile):
        x = tl.tensor(np.array([0.0, 1.0, 2.0]))
        result = SHAPE_OPS[name](x)
        before = np.array(result.numpy())
        assert result is not x
        assert result._version is not x._version
        with tl.no_grad():
            result.zero_()  # a write through the result ...
        np.testing.assert_array_equal(x.numpy(), [0.0, 1.0, 2.0])  # ... leaves x as it was
        with tl.no_grad():
            result.copy_(before)
            x[0] = 100.0  # a write into x ...
        np.testing.assert_array_equal(result.numpy(), before)  # ... leaves the result as it was


def test_the_review_repro_whole_and_partial_ranges_behave_alike() -> None:
    x = tl.tensor(np.arange(3.0))
    a, b = x[0:3], x[0:2]
    with tl.no_grad():
        a[0] = 100.0
        b[1] = 200.0
    np.testing.assert_array_equal(x.numpy(), [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(a.numpy(), [100.0, 1.0, 2.0])
    np.testing.assert_array_equal(b.numpy(), [0.0, 200.0])


@pytest.mark.parametrize("profile", CPU_PROFILES)
@pytest.mark.parametrize("index", [slice(None), Ellipsis, slice(0, 3)], ids=["x[:]", "x[...]", "x[0:n]"])
def test_a_whole_selection_is_recorded_and_gradients_reach_x(profile: str, index: object) -> None:
    """d/dx sum(w * x[index]) = w (hand value) through the recorded ``slice``."""
    w = np.array([[0.5, -2.0, 3.0], [1.0, 0.25, -1.5]])
    with tl.session(profile):
        x = tl.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        y = x[index]
        assert y is not x and y._node is not None
        tl.reduce_sum(y * tl.tensor(w)).backward()
    assert x.grad is not None
    np.testing.assert_array_equal(x.grad.numpy(), w)


@pytest.mark.parametrize("profile", CPU_PROFILES)
@pytest.mark.parametrize(
    ("index", "shape"), [((), ()), (Ellipsis, ()), (None, (1,)), ((None, Ellipsis, None), (1, 1))], ids=str
)
def test_indexing_a_rank0_tensor_gives_a_new_tensor(
    profile: str, index: object, shape: tuple[int, ...]
) -> None:
    with tl.session(profile):
        x = tl.tensor(np.float64(3.0), requires_grad=True)
        y = x[index]
        assert y is not x and y._node is not None
        assert y.shape == shape
        tl.reduce_sum(y * 2.0).backward()
    assert x.grad is not None and float(x.grad) == 2.0
    with tl.no_grad():
        y = x[...]
        y.zero_()
    assert float(x) == 3.0


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu", "libtorch_forward_cpu"])
def test_slice_of_a_rank0_tensor_is_a_rank0_copy_with_a_gradient(profile: str) -> None:
    # the reference kernel returned a numpy scalar for x[()] (``.copy()`` of a 0-d index)
    with tl.session(profile):
        x = tl.tensor(np.float64(3.0), requires_grad=True)
        y = tl.slice(x, [], [])
        assert y.shape == () and y.numpy().tolist() == 3.0
        y.backward()
    assert x.grad is not None and x.grad.numpy().tolist() == 1.0
