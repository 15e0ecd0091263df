"""``Tensor``: numpy storage on the CPU, torch storage on CUDA, a dtype, and TorchLean's autograd
bookkeeping.

A tensor owns (or views) one C-contiguous numpy array on the ``cpu``, or one contiguous
``torch.Tensor`` on a CUDA device (``cuda:N``; see :mod:`torchlean.autograd.storage`). Kernels of
a CPU provider read the numpy array, kernels of a CUDA provider the torch tensor, both without a
copy. Floating tensors are ``float32`` (the
default for Python data) or ``float64``; ``int64`` and ``bool`` tensors exist for indices and
masks and never require a gradient. A tensor produced by a differentiable op while gradients are
enabled carries the tape :class:`~torchlean.autograd.tape.Node` that produced it; a tensor with
``requires_grad=True`` and no node is a *leaf* and receives ``.grad`` from ``backward()``.

Copies and views (documented once, relied on everywhere):

* ``torchlean.tensor(data)``, ``Tensor(data)``, ``from_torch(t)`` and ``to_torch()`` copy.
* ``numpy()`` returns a **read-only view** of the storage (no copy). It reflects later in-place
  writes made through the tensor; copy it (``np.array(t.numpy())``) to keep a snapshot. On a CUDA
  tensor it returns a read-only host **copy**. numpy's implicit conversion (``np.asarray(t)``,
  ``np.dot(t, u)``: ``__array__``) copies, and is refused for a tensor that requires grad, as in
  torch (the result would silently drop the tape history).
* ``to(device)`` copies to another device (see :meth:`Tensor.to`; the copy is a new leaf, never a
  tape node); ``torchlean.tensor(data, device="cuda")`` creates a tensor on a CUDA device.
* ``detach()`` shares the storage and its version counter (as ``torch.Tensor.detach``).
* Every op result is fresh storage with its own version counter, under every profile and
  provider: torchlean has no views. ``reshape``, ``permute``/``transpose``, ``broadcast_to`` (the
  ``aten`` kernels of ``fast_cpu`` copy too) and basic indexing (``x[0]``, ``x[1:]``, and also
  ``x[:]``, ``x[...]``, ``x[0:n]``; :func:`torchlean.functional.getitem`) return new tensors where
  torch returns views, so an in-place write through a result never changes its input, nor a write
  into the input an earlier result. Only ``detach()`` and ``numpy()`` share storage, and, as in
  torch, ``to()`` onto the tensor's own device and a dropout that is the identity (``p = 0`` or not
  training) return the tensor itself, so an in-place write through their result reaches it.
* In-place writes (``copy_``, ``zero_``, ``t[idx] = v``, ``t += o`` and ``-=``, ``*=``, ``/=``:
  :func:`torchlean._tensor_writes.update_in_place`; and ``.grad``'s accumulation) bump the storage's
  version counter; a later ``backward`` through an op that saved the written tensor (as an input or
  its output) is refused, whether or not that op's VJP reads the values — more conservative than
  torch, which refuses only when the VJP needs them (``y = w + 1`` then a write into ``w`` is
  refused here, accepted by torch; :mod:`torchlean.autograd.tape`). They are refused on a tensor
  that requires a gradient while gradients are enabled (write under ``torchlean.no_grad()``, as
  optimizers do; ``+=`` and the others are also refused then with an operand that requires grad: the
  tape records no in-place op), and on read-only storage. Item assignment into an int64 tensor
  truncates a float toward zero, as torch does, and refuses a value int64 cannot hold (NaN,
  ``±inf``, ``1e30``, ``2**63``), as ``torchlean.tensor(data, dtype="int64")`` does; ``copy_``
  writes no floats into it.

Operators ``+ - * / @``, unary ``-``, ``abs(t)`` and basic indexing run the ops of
:mod:`torchlean.functional`, i.e. through the session's accepted kernel capsules; ``**`` is
refused (the catalog has no power op; the message names ``t * t``, ``tl.sqrt``, ``tl.inv``). The inputs of
one op must all live on one device, the device of the capsule the session selected
(:class:`DeviceError` otherwise; nothing is moved implicitly).

Truth values and comparisons: ``bool(t)`` (and ``if t:``), ``float(t)`` and ``int(t)`` are the
value of a one-element tensor and a :class:`TensorError` otherwise, as in torch. ``==``, ``!=``,
``<``, ``<=``, ``>`` and ``>=`` with a tensor, a number or array data raise a
:class:`TensorTypeError`: the backend catalog has no comparison op, so an
elementwise result cannot run on an accepted kernel, and identity would silently answer ``False``
for equal values. Compare values with numpy (``np.array_equal(a.numpy(), b.numpy())``) and
identity with ``is``; hashing is by identity, and ``t == None`` is ``False`` as in torch.

Shape queries are torch's (:meth:`Tensor.size`, :meth:`Tensor.numel`, :meth:`Tensor.dim`):
``t.size()`` is the shape tuple and ``t.size(d)`` one axis, ``t.numel()`` the element count
(numpy's ``ndarray.size``, which is not an attribute here), ``t.dim()`` the rank; ``t.shape`` and
``t.ndim`` as in both libraries.

Method forms of torch (each delegates to the :mod:`torchlean.functional` op its docstring names,
with that op's values, recorded op and errors): ``exp``, ``log``, ``sqrt``, ``abs``, ``neg``,
``relu``, ``tanh``, ``sigmoid``, ``clamp``/``clip``, ``softmax(dim)``, ``log_softmax(dim)``,
``logsumexp(dim)`` (composed of several ops), ``matmul``, ``sum``/``mean`` (``dim=``/``keepdim=``
or ``axis=``/``keepdims=``), and the shape methods ``reshape``, ``permute``, ``transpose``, ``T``,
``flatten``, ``unsqueeze``, ``squeeze``, ``t``, ``expand``, ``clone`` (each a new tensor) and
``contiguous`` (the tensor itself: every tensor is contiguous). ``view`` is refused, pointing to ``reshape``.

``.grad`` is assignable with ``None`` or a tensor of the same shape, dtype and device only (as
torch refuses "a gradient of size ... to a tensor of size ..."); flags (``requires_grad``,
``retain_graph``) must be bools.
"""

from __future__ import annotations

import numbers
import threading
import warnings
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, TypeAlias, overload

import numpy as np
import numpy.typing as npt

# This module's parts live in private modules: _tensor_errors (the errors, value previews),
# _tensor_data (dtypes, reading data), _tensor_args (torch's argument conventions), _tensor_shapes
# (the shape methods' result shapes), _tensor_writes (the in-place writes), _tensor_hints (the torch
# attributes Tensor lacks). ``name as name`` re-exports a private name that other modules import
# from here (functional, autograd.dispatch, nn.model, cli, optim, tests).
from torchlean import _tensor_shapes, _tensor_writes
from torchlean._checks import CUDA_DEVICE, FLOAT_DTYPES, is_builtin_or_numpy_int, shown
from torchlean._fork_locks import renew_in_forked_children
from torchlean._tensor_args import (
    _UNSET,
    _is_dtype_spelling,
    _one_spelling,
    _shape_args,
    _sizes_or_keyword,
    _to_refusal,
    _Unset,
)
from torchlean._tensor_args import _flag as _flag
from torchlean._tensor_data import (
    DEFAULT_DTYPE,
    Array,
    DTypeLike,
    _check_grad_dtype,
    _infer_array,
    _torch_values,
    resolve_dtype,
)
from torchlean._tensor_data import _from_torch_array as _from_torch_array
from torchlean._tensor_data import _is_torch_tensor as _is_torch_tensor
from torchlean._tensor_data import _require_int64_fits as _require_int64_fits
from torchlean._tensor_data import operand_type as operand_type
from torchlean._tensor_errors import (
    DeviceError,
    DimensionError,
    GradConversionError,
    TensorError,
    TensorIndexError,
    TensorTypeError,
    _type_name,
)
from torchlean._tensor_errors import _preview as _preview
from torchlean._tensor_hints import _TORCH_METHOD_HINTS as _TORCH_METHOD_HINTS
from torchlean._tensor_hints import OPERATOR_HINTS
from torchlean._torch_host import declared_shape
from torchlean.autograd import storage
from torchlean.autograd.grad_mode import is_grad_enabled
from torchlean.autograd.storage import Storage
from torchlean.autograd.tape import AutogradError, Node, VersionCounter, run_backward
from torchlean.backend.errors import GuardError

if TYPE_CHECKING:
    import torch

    from torchlean.backend.acceptance import AcceptedKernel

OperandLike: TypeAlias = (
    "Tensor | float | Array | np.integer[Any] | np.floating[Any] | np.bool_ | list[Any] | tuple[Any, ...] "
    "| torch.Tensor"
)
"""The operands of the arithmetic operators (``+``, ``-``, ``*``, ``/``, their reflected and
in-place forms) and of :mod:`torchlean.functional`'s ``add``, ``sub``, ``mul``, ``div``,
``maximum``, ``minimum`` and ``mse_loss``'s target (``functional.Operand``): a Tensor, a real
number (Python or numpy; a complex one is refused), array data (a numpy array, a list or tuple of
numbers) or a ``torch.Tensor`` that requires no grad, the last three made a constant in the other
operand's dtype. A string annotation (``torch`` is imported only for type checking). Narrower, it
let mypy type ``t + array`` as numpy's ``ndarray`` (review117 F2)."""

IntLike: TypeAlias = int | np.integer[Any]
"""An integer argument as the run time takes it (an axis, a seed, a size): a Python or numpy
integer. Not ``SupportsIndex``, which mypy also fits to a 0-d array, which the run time refuses
(review117 F4, review118 F5)."""

BoolLike: TypeAlias = bool | np.bool_
"""A flag as the run time takes it (``keepdims``, ``training``, ``requires_grad``): a Python or
numpy bool, never another value read as true or false (review129 F1)."""

RealLike: TypeAlias = float | np.floating[Any]
"""A real-number argument as the run time takes it (a factor, a bound, ``eps``, a probability, a
learning rate): a Python float or int (``float`` admits ``int`` for mypy) or a numpy float, such
as a ``np.float32`` read from an array, which is not a ``float`` (``np.float64`` is). A bool is
refused at run time, though mypy lets it through (``float`` admits ``bool`` as it admits ``int``)
(review129 F2). A numpy integer, which the run time takes too, is left out for mypy (write
``float(n)``; review131 F2)."""

__all__ = [
    "DEFAULT_DTYPE",
    "FLOAT_DTYPES",
    "BoolLike",
    "DTypeLike",
    "DeviceError",
    "DeviceLike",
    "DimensionError",
    "IntLike",
    "OperandLike",
    "RealLike",
    "Tensor",
    "TensorError",
    "TensorIndexError",
    "TensorTypeError",
    "from_torch",
    "resolve_device",
    "resolve_dtype",
    "tensor",
]


DeviceLike = str | Any
"""``"cpu"``, ``"cuda"``, ``"cuda:1"`` or a ``torch.device``."""

_NOT_KEPT: BoolLike = False
"""The default of ``sum``/``mean``'s ``keepdims``, typed as the union so that mypy infers
:data:`BoolLike` for the value :func:`_one_spelling` returns (``False`` alone would join with
``numpy.bool_`` to ``object``)."""


# Device placement and backward's seed helpers stay with the class: resolve_device and
# _gradient_device test for a Tensor (the private parts never import this module at load), and
# tests/cuda/conftest.py's emulation seam patches resolve_device and _upload here.


def resolve_device(device: DeviceLike) -> str:
    """Normalise a device spelling to ``"cpu"`` or ``"cuda:N"`` (``"cuda"`` is the current CUDA
    device, as in torch).

    Raises:
        DeviceError: an unknown spelling (``unknown tensor device 'metal' (accepted: cpu | cpu:0 |
            cuda | cuda:N)``; ``cpu:0`` is ``cpu``, as in torch), a Tensor (naming
            ``other.device``), or a CUDA device while CUDA is unusable here — the messages of
            :func:`torchlean.backend.providers.native_cuda.extension.require_cuda` (a CPU-only torch
            build; ``CUDA was requested and this is a CUDA build, but no usable CUDA device is
            visible``), or an index beyond the visible devices.
    """
    if isinstance(device, Tensor):  # torch's t.to(other) takes other's device (and dtype)
        raise DeviceError(
            f"unknown tensor device: got a Tensor of shape {device.shape} (accepted: cpu | cpu:0 | "
            f"cuda | cuda:N); for another tensor's device pass other.device ({device.device!r})"
        )
    spelled = str(device)
    if spelled in (storage.HOST, f"{storage.HOST}:0"):  # torch reads "cpu:0" as the CPU
        return storage.HOST
    cuda = CUDA_DEVICE.fullmatch(spelled)
    if cuda is None:
        raise DeviceError(
            f"unknown tensor device {_preview(device)} (accepted: cpu | cpu:0 | cuda | cuda:N)"
        )
    from torchlean.backend.providers.native_cuda import extension

    try:
        extension.require_cuda()
    except extension.NativeExtensionError as exc:
        raise DeviceError(f"cannot place a tensor on {spelled}: {exc}") from exc
    import torch

    count = torch.cuda.device_count()
    number = int(cuda[1]) if cuda[1] is not None else torch.cuda.current_device()
    if number >= count:
        raise DeviceError(f"cannot place a tensor on {spelled}: only {count} CUDA device(s) are visible")
    return f"cuda:{number}"


def _place(array: Array, device: str) -> Storage:
    """``array`` as the storage of a tensor on ``device`` (a resolved device string)."""
    if device == storage.HOST:
        return array
    return _upload(array, device)


def _upload(array: Array, device: str) -> torch.Tensor:
    """A contiguous copy of ``array`` on the CUDA device ``device``."""
    return storage.host_tensor(array).to(device, copy=True)


def _ndim(data: object) -> int:
    """The number of axes of a Tensor or torch tensor (``-1`` for anything else)."""
    return int(getattr(data, "ndim", -1))


def _gradient_device(gradient: object) -> str | None:
    """The device of a ``backward`` gradient that has one: a torchlean ``Tensor``'s, or a dense
    torch tensor's (``"cpu"``, ``"cuda:N"``); None for array data (and for meta tensors, which
    :func:`~torchlean._tensor_data._from_torch_array` refuses by kind)."""
    if isinstance(gradient, Tensor):
        return gradient.device
    if _is_torch_tensor(gradient) and gradient.device.type != "meta":  # type: ignore[attr-defined]
        return str(gradient.device)  # type: ignore[attr-defined]
    return None


_GRAD_LOCK = threading.RLock()
"""Serialises :meth:`Tensor._accumulate_grad` (``.grad``'s read-add-store) across threads. A fork
waits for it and the child gets a new, free one (:mod:`torchlean._fork_locks`; review142 F1: a
child forked while another thread added into a ``.grad`` hung in its first ``backward()``, the
lock copied held; review146 F1). Re-entrant, so that a fork by the thread that holds it (a signal
handler running inside the accumulation) takes it again rather than waiting for itself (review145
F1)."""
renew_in_forked_children(__name__, "_GRAD_LOCK")



def _seed_mismatch(seed: tuple[int, ...], output: tuple[int, ...]) -> AutogradError:
    """``backward(gradient=)``'s refusal of a seed of the wrong shape, in the tape's words."""
    return AutogradError(f"autograd: seed gradient shape mismatch for output (seed {seed}, output {output})")

class Tensor:
    """A tensor with numpy (cpu) or torch (cuda) storage and TorchLean autograd metadata.

    ``Tensor(data, requires_grad=False, dtype=None, device=None)`` is the same as :func:`tensor`.
    """

    __slots__ = (
        "__weakref__", "_data", "_grad", "_node", "_produced_at", "_producer", "_requires_grad", "_version"
    )

    # numpy must hand mixed expressions (``array + tensor``) to the Tensor operators.
    __array_ufunc__ = None

    _data: Storage
    _node: Node | None
    _requires_grad: bool
    _version: VersionCounter
    _grad: Tensor | None
    _producer: AcceptedKernel | None
    _produced_at: int

    def __init__(
        self,
        data: object,
        requires_grad: BoolLike = False,
        dtype: DTypeLike | None = None,
        device: DeviceLike | None = None,
    ) -> None:
        requires_grad = _flag("requires_grad", requires_grad)
        array = _infer_array(storage.to_host(data._data) if isinstance(data, Tensor) else data, dtype)
        if device is None:
            self._init(array, requires_grad, None, VersionCounter())
        else:
            self._init(_place(array, resolve_device(device)), requires_grad, None, VersionCounter())

    def _init(self, data: Storage, requires_grad: bool, node: Node | None, version: VersionCounter) -> None:
        if requires_grad:
            _check_grad_dtype(storage.numpy_dtype(data))
        self._data = data
        self._requires_grad = requires_grad
        self._node = node
        self._version = version
        self._grad = None
        self._producer = None
        self._produced_at = 0

    @classmethod
    def _make(
        cls,
        data: Storage,
        requires_grad: bool = False,
        node: Node | None = None,
        version: VersionCounter | None = None,
        producer: AcceptedKernel | None = None,
    ) -> Tensor:
        """Wrap ``data`` without copying (internal: kernel results, views, gradients);
        ``producer`` is the accepted kernel whose forward computed ``data`` (:attr:`produced_by`)."""
        t = cls.__new__(cls)
        t._init(data, requires_grad, node, VersionCounter() if version is None else version)
        if producer is not None:
            t._producer = producer
            t._produced_at = t._version.value
        return t

    def _slots(self) -> dict[str, object]:
        """Every slot's value (what the copy protocols copy)."""
        return {name: getattr(self, name) for name in Tensor.__slots__ if name != "__weakref__"}

    def __getstate__(self) -> tuple[None, dict[str, object]]:
        """What ``pickle`` keeps: the values, ``requires_grad`` and ``.grad`` (torch's pickle drops
        the gradient: review202 F7); not the tape node (a tensor with a tape history arrives as a
        leaf, as torch's does) nor :attr:`produced_by`'s kernel (minted by the gate of this
        process, never pickled).
        :meth:`__copy__` and :meth:`__deepcopy__` do not use it."""
        state = self._slots()
        state["_node"], state["_producer"], state["_produced_at"] = None, None, 0
        return None, state

    def __copy__(self) -> Tensor:
        """``copy.copy``: a leaf sharing this one's storage and version counter, with its
        ``requires_grad``, no gradient and no tape node, as torch's copy of a tensor (review202
        F1: the copy shared ``.grad``, so its backward added into the original's, and a copy of a
        made tensor sent gradients to the leaves), keeping :attr:`produced_by`."""
        clone = Tensor.__new__(Tensor)
        for name, value in self._slots().items():
            setattr(clone, name, value)
        clone._grad, clone._node = None, None
        return clone

    def __deepcopy__(self, memo: dict[int, object]) -> Tensor:
        """``copy.deepcopy``: the slots deep-copied, keeping :attr:`produced_by` (the same values,
        computed by the same kernel, which is not copied).

        Raises:
            AutogradError: the tensor has a tape history (made by a recorded op), as torch
                refuses: the copy's ``backward()`` would send the gradients to copies of the
                leaves, never to the leaves (``.detach()`` first, or copy the leaves).
        """
        import copy

        if self._node is not None:
            raise AutogradError(
                f"copy.deepcopy of a tensor with a tape history (made by `{self._node.name}`) is refused, "
                "as torch refuses it: its backward() would reach copies of the leaves, not the leaves; "
                "deep-copy t.detach(), or the leaf tensors"
            )
        clone = Tensor.__new__(Tensor)
        memo[id(self)] = clone
        state = self._slots()
        del state["_producer"]  # the sealed kernel is shared, not copied
        for name, value in copy.deepcopy(state, memo).items():
            setattr(clone, name, value)
        clone._producer = self._producer
        return clone

    def _keep_producer(self, source: Tensor) -> Tensor:
        """Give this tensor ``source``'s :attr:`produced_by` (a copy or view of its values)."""
        producer = source.produced_by
        if producer is not None:
            self._producer = producer
            self._produced_at = self._version.value
        return self

    # ----------------------------------------------------------------------------- metadata

    @property
    def shape(self) -> tuple[int, ...]:
        """The tensor's shape (a tuple of ints, ``()`` for a scalar)."""
        shape = self._data.shape
        return shape if type(shape) is tuple else tuple(shape)

    @property
    def dtype(self) -> np.dtype[Any]:
        """The numpy dtype: float32, float64, int64 or bool (also for CUDA storage)."""
        data = self._data
        return data.dtype if isinstance(data, np.ndarray) else storage.numpy_dtype(data)

    @property
    def ndim(self) -> int:
        """Number of axes (0 for a scalar), as ``torch.Tensor.ndim``."""
        return self._data.ndim

    @overload
    def size(self, dim: None = None) -> tuple[int, ...]: ...

    @overload
    def size(self, dim: int | np.integer[Any]) -> int: ...

    def size(self, dim: int | np.integer[Any] | None = None) -> tuple[int, ...] | int:
        """The shape, or the extent of one axis, as ``torch.Tensor.size``.

        ``t.size()`` (or ``t.size(None)``) is :attr:`shape`: a plain tuple of ints (``()`` for a
        0-d tensor), where torch returns ``torch.Size``, a tuple subclass that compares equal to
        it. ``t.size(dim)`` is the int ``shape[dim]``; a negative ``dim`` counts from the end
        (``-1`` is the last axis). Unlike numpy's ``ndarray.size`` this is not the element count:
        that is :meth:`numel`.

        Raises:
            DimensionError: (an ``IndexError``, as torch raises) ``dim`` outside ``[-ndim, ndim)``,
                in torch's words: ``Dimension out of range (expected to be in range of [-3, 2], but
                got 3)``, and for a 0-d tensor ``Dimension specified as 0 but tensor has no
                dimensions``. (torch raises ``ValueError: Overflow when unpacking long long`` for a
                Python int beyond int64; here that is out of range too.)
            TensorTypeError: (a ``TypeError``, as torch raises) ``dim`` is not an int or a numpy
                integer: a bool, a float (``1.0`` is not truncated), a string, a tensor.
        """
        if dim is None:
            return self.shape
        if not is_builtin_or_numpy_int(dim):
            raise TensorTypeError(
                f"size(): argument 'dim' (position 1) must be int, not {_type_name(dim)} (got "
                f"{_preview(dim)}; accepted: an int or a numpy integer, negative counting from the "
                "end, or None for the whole shape)"
            )
        shape = self.shape
        axis, ndim = int(dim), len(shape)
        if ndim == 0:
            raise DimensionError(f"Dimension specified as {shown(axis)} but tensor has no dimensions")
        if not -ndim <= axis < ndim:
            raise DimensionError(
                f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got "
                f"{shown(axis)})"
            )
        return shape[axis]

    def numel(self) -> int:
        """The number of elements, the product of :attr:`shape` (``1`` for a 0-d tensor, ``0`` when
        an axis is empty), as ``torch.Tensor.numel`` (numpy's ``ndarray.size``)."""
        data = self._data
        return int(data.size) if isinstance(data, np.ndarray) else int(data.numel())

    def nelement(self) -> int:
        """:meth:`numel` (``torch.Tensor.nelement`` is its alias)."""
        return self.numel()

    def dim(self) -> int:
        """The number of axes, :attr:`ndim` (``0`` for a 0-d tensor), as ``torch.Tensor.dim``."""
        return self._data.ndim

    @property
    def device(self) -> str:
        """``"cpu"`` (numpy storage) or ``"cuda:N"`` (torch storage on CUDA device N)."""
        return storage.device_of(self._data)

    @property
    def requires_grad(self) -> bool:
        """Whether the tape records operations on this tensor for ``backward``.

        Settable on leaves only (as in PyTorch); only float32/float64 tensors can require
        gradients. Setting it raises :class:`TensorError` on a non-leaf, or on an integer/bool
        tensor.
        """
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: BoolLike) -> None:
        """Set on leaves only (as in PyTorch); only float tensors can require gradients.

        Raises:
            TensorTypeError: ``value`` is not a bool (``True``/``False`` or a numpy bool; torch
                refuses other values too).
            TensorError: on a non-leaf, or on an integer/bool tensor.
        """
        flag = _flag("requires_grad", value)
        if self._node is not None:
            raise TensorError("requires_grad can only be changed on a leaf tensor (this one has a node)")
        if flag:
            _check_grad_dtype(self.dtype)
        self._requires_grad = flag

    def requires_grad_(self, requires_grad: BoolLike = True) -> Tensor:
        """Set :attr:`requires_grad` in place and return this tensor, as
        ``torch.Tensor.requires_grad_`` (``x = tl.tensor(data).requires_grad_()``).

        torch's rules: on a leaf the flag is set (only float32/float64 tensors can require
        gradients); on a tensor a recorded op produced, which requires grad already,
        ``requires_grad_()`` and ``requires_grad_(True)`` change nothing and
        ``requires_grad_(False)`` is refused (torch: "you can only change requires_grad flags of
        leaf variables"; use :meth:`detach`). Unlike torch, a numpy bool is accepted, as the
        :attr:`requires_grad` setter accepts it.

        Raises:
            TensorTypeError: ``requires_grad`` is not a bool (torch refuses ints, floats, None).
            TensorError: ``False`` on a tensor with a tape history; ``True`` on an integer/bool
                tensor.
        """
        flag = _flag("requires_grad", requires_grad)
        if self._node is not None:
            if not flag:
                raise TensorError(
                    f"requires_grad_(False) on a tensor produced by `{self._node.name}`: only a leaf's "
                    "flag can be changed, as in torch (accepted: t.detach(), a tensor cut from the tape "
                    "that does not require grad)"
                )
            return self
        self.requires_grad = flag
        return self

    @property
    def grad(self) -> Tensor | None:
        """The gradient ``backward`` accumulated into this tensor (``None`` until then).

        Assignable, as in PyTorch (``p.grad = None`` before the next step, or a tensor computed
        elsewhere), but only ``None`` or a :class:`Tensor` of exactly this tensor's shape, dtype
        and device: later ``backward`` calls add to it in this dtype.

        ``backward`` fills leaves only: reading ``None`` here on a tensor a recorded op produced
        (not a leaf) warns, as torch does (``UserWarning``), naming the way to read a non-leaf's
        gradient (there is no ``retain_grad``; review138 F3).
        """
        if self._grad is None and self._node is not None:
            warnings.warn(
                f"the .grad of a tensor that is not a leaf (made by `{self._node.name}`) is None, as "
                f"torch warns too: {_TORCH_METHOD_HINTS['retain_grad']}",
                UserWarning,
                stacklevel=2,
            )
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        """Assign ``None`` or a gradient of this tensor's shape, dtype and device (as
        ``torch.Tensor.grad``, which refuses "a gradient of size ... to a tensor of size ...").

        Raises:
            TensorTypeError: ``value`` is neither ``None`` nor a Tensor (e.g. a numpy array).
            TensorError: a Tensor of another shape or dtype; the tensor itself.
            DeviceError: a Tensor on another device.
        """
        if value is None:
            self._grad = None
            return
        if value is self:
            raise TensorError(
                "cannot assign a tensor as its own .grad (backward would add its gradient into the "
                "tensor itself; torch refuses this too); assign a copy, e.g. torchlean.tensor(t.numpy())"
            )
        expected = f"shape {self.shape}, dtype {self.dtype}, device {self.device}"
        if not isinstance(value, Tensor):
            raise TensorTypeError(
                f"cannot assign {_preview(value)} of type {type(value).__name__} to .grad (accepted: "
                f"None or a torchlean Tensor of this tensor's {expected}; convert data with "
                "torchlean.tensor(..., dtype=..., device=...))"
            )
        if value.shape != self.shape or value.dtype != self.dtype:
            raise TensorError(
                f"cannot assign a gradient of shape {value.shape} and dtype {value.dtype} to .grad "
                f"of a tensor of shape {self.shape} and dtype {self.dtype} (accepted: None or a "
                f"Tensor of this tensor's {expected})"
            )
        if value.device != self.device:
            raise DeviceError(
                f"cannot assign a gradient on {value.device} to .grad of a tensor on {self.device} "
                f"(accepted: None or a Tensor of this tensor's {expected}; move it with "
                f".to({self.device!r}))"
            )
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        """``del t.grad`` sets it to ``None``, as in PyTorch."""
        self._grad = None

    @property
    def is_leaf(self) -> bool:
        """True when no recorded node produced this tensor."""
        return self._node is None

    @property
    def grad_fn(self) -> str | None:
        """The label of the op whose tape node produced this tensor (``"relu"``, a ``str``), or
        ``None`` when no node did (a leaf, or a result computed without a tape).

        A label string, not a graph node: unlike torch's ``grad_fn`` it has no
        ``next_functions``, no inputs and no kernel. :meth:`lineage` walks the recorded ops
        behind the tensor and returns their kernels."""
        return None if self._node is None else self._node.name

    @property
    def produced_by(self) -> AcceptedKernel | None:
        """The accepted kernel whose forward computed these values, or ``None``.

        Every op's result (eager, or a typed-graph step) records the
        :class:`~torchlean.backend.acceptance.AcceptedKernel` that ran it, with or without a
        tape and whatever session is open when it is read: ``t.produced_by.capsule.name`` is
        the implementation, ``t.produced_by.audit()`` its contract labels (provider, trust, VJP
        mode and so the owner of its backward, reduction order, evidence), ``.policy`` the
        policy that accepted it. :meth:`detach` and :meth:`to` keep it (the same values);
        ``t += o`` (and ``-=``, ``*=``, ``/=``) takes the op's kernel. It is ``None`` for a
        tensor made from data (:func:`tensor`, ``.grad``, a model's parameters) and once the
        storage is written by anything but a kernel result (``copy_``, ``zero_``, item
        assignment, an optimizer's update), through this tensor or a view sharing its storage,
        as the values are then no longer that kernel's. torch has no counterpart (``grad_fn``
        names the backward node, not the kernel).

        It names the last op only: ``y[0]`` runs ``slice`` then ``reshape`` and names
        ``reshape``; the ops that computed the inputs are not recorded in the tensor.
        :meth:`lineage` lists the kernels of every recorded op behind it, as far as the tape
        reaches.
        """
        producer = self._producer
        if producer is None or self._version.value != self._produced_at:
            return None
        return producer

    def lineage(self) -> tuple[AcceptedKernel, ...]:
        """The accepted kernels of the recorded ops these values depend on, in recording order.

        Walks the tape behind this tensor (what ``backward()`` traverses), one entry per op,
        each op once, this tensor's own op last (``t.lineage()[-1] is t.produced_by``). It reads
        only what the tape holds: ops run without a tape (under ``no_grad()``, or on inputs none
        of which requires a gradient) leave no node, so a tensor without one gives
        ``(t.produced_by,)`` or ``()``; inputs that do not require a gradient (a dropout mask, a
        target) and leaves end the walk, and the forward-only random ops (``rand_uniform``,
        ``bernoulli_mask``) never record a node. The kernels are forward kernels; ``backward()``
        runs their VJPs. :func:`torchlean.autograd.lineage.lineage` says more. torch has no
        counterpart returning kernels (``grad_fn.next_functions`` walks backward nodes).

        Returns:
            A tuple of :class:`~torchlean.backend.acceptance.AcceptedKernel`.

        Raises:
            AutogradError: a ``backward()`` without ``retain_graph=True`` freed the graph behind
                this tensor, or a tensor on the walk was written in place after its op recorded
                it.
        """
        from torchlean.autograd.lineage import lineage

        return lineage(self)

    # ----------------------------------------------------------------------------- conversion

    def numpy(self) -> Array:
        """A read-only view of the storage (no copy; later in-place writes show through); for a
        CUDA tensor, a read-only host copy."""
        data = self._data
        if isinstance(data, np.ndarray):  # on a read-only buffer: flags.writeable cannot be set again
            view: Array = np.asarray(data.data.toreadonly())
            return view
        host = storage.to_host(data)
        host.flags.writeable = False
        return host

    def to_torch(self) -> torch.Tensor:
        """A new ``torch.Tensor`` on this tensor's device (same dtype, a copy, not requiring grad)."""
        data = self._data
        if isinstance(data, np.ndarray):
            import torch

            return torch.from_numpy(np.array(data, copy=True))
        return data.detach().clone()

    if TYPE_CHECKING:  # typed as the run time takes it; the refused spellings are mypy errors

        def to(self, device: str | torch.device, *, dtype: None = None) -> Tensor:
            """This tensor on ``device`` (``"cpu"``, ``"cuda"``, ``"cuda:N"`` or a
            ``torch.device``); the run-time definition documents the rules and errors.

            For mypy a device is required and ``dtype`` is ``None``: ``t.to()``, ``t.to(dtype=...)``
            and ``t.to(torch.float64)``, which the run time always refuses (torchlean changes no
            dtype this way), are reported where they are written (review129 F3).
            """
            ...

    else:

        def to(self, device: object = None, *, dtype: object = None) -> Tensor:
            """This tensor on ``device`` (``"cpu"``, ``"cuda"``, ``"cuda:N"`` or a ``torch.device``).

            Returns ``self`` when it is already there (as ``torch.Tensor.to``); otherwise a **copy that
            is a new leaf** with the same ``requires_grad``. A device copy is not an op of the kernel
            catalog, so it is never recorded on the tape and gradients do not flow through it: move
            leaves (parameters, data) before computing with them. Moving a tensor that a recorded op
            produced while gradients are enabled is refused, because it would silently cut the graph
            (under ``no_grad()`` its copy does not require grad).

            Unlike ``torch.Tensor.to`` it takes no dtype: a dtype change is not an op of the kernel
            catalog either (make a converted copy with ``torchlean.tensor(t.numpy(), dtype=...)``).

            Raises:
                DeviceError: an unknown device, CUDA unusable here (:func:`resolve_device`), or a
                    non-leaf tensor that requires grad while gradients are enabled.
                TensorTypeError: a dtype (``torch.float64``, ``np.float32``, ``"float64"``) instead of
                    a device, or given as ``dtype=`` (torch's keyword); no device at all.
            """
            return self._moved_to(device, dtype)

    def _moved_to(self, device: object, dtype: object) -> Tensor:
        """:meth:`to` at run time (here, where mypy checks it: ``to``'s run-time definition is hidden
        from mypy by its typed one)."""
        if dtype is not None or device is None:
            shown = f"dtype={_preview(dtype)}" if dtype is not None else ""
            raise TensorTypeError(_to_refusal(shown))
        try:
            target = resolve_device(device)
        except DeviceError:
            if _is_dtype_spelling(device):
                raise TensorTypeError(_to_refusal(_preview(device))) from None
            raise
        if target == self.device:
            return self
        if self._node is not None and is_grad_enabled():
            raise DeviceError(
                f"Tensor.to({target!r}) on a tensor produced by `{self._node.name}` would cut the tape "
                "(a device copy is not recorded); move its leaf inputs instead, or call .detach() first"
            )
        moved = _place(np.array(storage.to_host(self._data), copy=True), target)
        return Tensor._make(moved, self._requires_grad and self._node is None)._keep_producer(self)

    def item(self) -> float | int | bool:
        """The single element as a Python scalar (``bool``, ``int`` or ``float`` by the dtype), as
        ``torch.Tensor.item``.

        Raises:
            TensorError: when the tensor has no elements or more than one.
        """
        if self.numel() != 1:
            raise TensorError(f"item() needs a tensor with one element (got shape {self.shape})")
        value: float | int | bool = self._data.reshape(()).item()
        return value

    def tolist(self) -> Any:
        """Nested Python lists of the values (a copy)."""
        return self._data.tolist()

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> Array:
        """A copy of the values for numpy's implicit conversions (``np.asarray(t)``, ``np.dot(t,
        u)``).

        Raises:
            TensorError: the tensor requires grad (as torch's ``__array__`` refuses): numpy would
                compute on the values and silently drop the tape history; :meth:`numpy` (an
                explicit read-only view) or :meth:`detach` say that no gradient is wanted.
            ValueError: ``copy=False`` (numpy 2's "never copy"), which this copy cannot honour:
                writes to the array would silently miss the tensor, as torch raises too
                (review202 F3); :meth:`numpy` gives a read-only view.
        """
        if copy is False:
            raise ValueError(
                "np.asarray(t, copy=False) / np.array(t, copy=False): a tensor's values reach numpy as a "
                "copy, so a copy cannot be avoided; call t.numpy() for a read-only view of them"
            )
        if self._requires_grad:
            raise GradConversionError(
                f"numpy cannot convert a tensor that requires grad (shape {self.shape}) implicitly "
                "(np.asarray, np.dot, ...): its result would silently drop the tape history, as torch "
                "refuses too; call t.numpy() or t.detach() to say no gradient is wanted, or compute "
                "with torchlean ops (tl.matmul, tl.reduce_sum, ...)"
            )
        return np.array(storage.to_host(self._data), dtype=dtype, copy=True)

    def detach(self) -> Tensor:
        """A tensor sharing this storage (and its version counter) that is cut from the tape
        (keeping :attr:`produced_by`)."""
        return Tensor._make(self._data, False, None, self._version)._keep_producer(self)

    def __repr__(self) -> str:
        body = np.array2string(storage.to_host(self._data), separator=", ", prefix="Tensor(")
        where = "" if isinstance(self._data, np.ndarray) else f", device={self.device!r}"
        return (
            f"Tensor({body}, shape={self.shape}, dtype={self.dtype}{where}, "
            f"requires_grad={self._requires_grad})"
        )

    def __format__(self, format_spec: str) -> str:
        """``f"{t:.4f}"``, ``format(t, spec)``: a 0-d tensor formats as its value, ``t.item()``, as
        ``torch.Tensor.__format__`` formats it (review100 M1; ``f"{t}"`` too: ``'1.5'``); another
        tensor with an empty ``spec`` gives ``str(t)``.

        Raises:
            TensorTypeError: a ``spec`` for a tensor that is not 0-d (torch: "unsupported format
                string passed to Tensor.__format__"), naming its shape and ``t.item()`` for one
                element.
        """
        if self._data.ndim == 0:
            return format(self.item(), format_spec)
        if not format_spec:
            return str(self)
        way = "format t.item(), its one element" if self.numel() == 1 else "format t.tolist() or t.numpy()"
        raise TensorTypeError(
            f"format spec {format_spec!r} for a tensor of shape {self.shape}: only a 0-d tensor formats as "
            f"its value, as in torch (accepted: a 0-d tensor, or an empty spec); {way}"
        )

    def __pos__(self) -> Tensor:
        """``+t``: ``t`` itself, as ``torch.Tensor.__pos__`` (``torch.positive``) returns its input;
        nothing is recorded.

        Raises:
            TensorTypeError: a bool tensor (torch refuses ``+`` on bool tensors too).
        """
        if self._data.dtype == np.bool_:
            raise TensorTypeError(
                "the + operator on a bool tensor is not supported (as torch; accepted: a numeric tensor)"
            )
        return self

    def __len__(self) -> int:
        """``len(t)``: the extent of the first axis, ``t.shape[0]`` (as ``torch.Tensor.__len__``).

        Raises:
            TensorTypeError: a 0-d tensor (``len() of a 0-d tensor``, torch's ``TypeError``); the
                message adds the conversions to torch and numpy, since ``torch.tensor(t)`` ends
                here (it walks ``t`` as a nested sequence).
        """
        if self._data.ndim == 0:
            raise TensorTypeError(
                "len() of a 0-d tensor; to hand a tensor to torch or numpy, convert it: t.to_torch() "
                "(a torch tensor), t.numpy() or np.asarray(t) (torch.tensor(t) and torch.as_tensor(t) "
                "read it as nested sequences down to 0-d elements, and fail here)"
            )
        return int(self._data.shape[0])

    def __iter__(self) -> Iterator[Tensor]:
        """``iter(t)``: the tensors ``t[0]``, ``t[1]``, ... along the first axis, each a new tensor
        recorded as :meth:`__getitem__` records it (torch yields views).

        Raises:
            TensorTypeError: a 0-d tensor, at ``iter(t)`` already (``iteration over a 0-d
                tensor``, torch's ``TypeError`` and wording).
        """
        if self._data.ndim == 0:
            raise TensorTypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(int(self._data.shape[0])))

    def _count(self) -> str:
        """``"no values"`` or ``"3 values"``, for the messages of the one-element conversions."""
        count = self.numel()
        return "no values" if count == 0 else f"{count} values"

    def __bool__(self) -> bool:
        """The truth value of a one-element tensor, ``bool(t.item())`` (as ``torch.Tensor``).

        Raises:
            TensorError: the tensor has no elements or more than one (torch: "Boolean value of
                Tensor with more than one value is ambiguous").
        """
        if self.numel() != 1:
            raise TensorError(
                f"the truth value of a tensor with {self._count()} (shape {self.shape}) is ambiguous "
                "(accepted: a tensor with exactly one element; for more, test t.numpy().any() or "
                "t.numpy().all())"
            )
        return bool(self._data.reshape(()).item())

    def __float__(self) -> float:
        """``float(t)``: the value of a one-element tensor as a Python float (as
        ``torch.Tensor.__float__``; bool tensors give 0.0/1.0, int64 values round to nearest).

        Raises:
            TensorError: the tensor has no elements or more than one (also a ``ValueError``, as
                torch's "only one element tensors can be converted to Python scalars").
        """
        if self.numel() != 1:
            raise TensorError(self._not_one("float()"))
        return float(self._data.reshape(()).item())

    def __int__(self) -> int:
        """``int(t)``: the value of a one-element tensor as a Python int, truncated toward zero for
        float tensors (as ``torch.Tensor.__int__``: ``int(tensor(-2.7))`` is -2; int64 values
        exactly). There is no ``__index__`` (torch allows it for integer tensors only), so a tensor
        is not accepted as a shape entry or axis.

        Raises:
            TensorError: the tensor has no elements or more than one (also a ``ValueError``, as
                torch's "only one element tensors can be converted to Python scalars").
            ValueError: a NaN value; OverflowError: an infinite value (Python's ``int(float)``,
                as torch).
        """
        if self.numel() != 1:
            raise TensorError(self._not_one("int()"))
        return int(self._data.reshape(()).item())

    def _not_one(self, call: str) -> str:
        """The refusal of ``float(t)``/``int(t)`` for a tensor without exactly one element."""
        return (
            f"{call} of a tensor with {self._count()} (shape {self.shape}): only a one-element "
            "tensor converts to a Python number (accepted: a tensor with exactly one element; for "
            "more values, t.tolist() or t.numpy())"
        )

    # Comparisons are not ops of the backend catalog, so an elementwise ``==`` could not run on an
    # accepted kernel; identity semantics would silently answer False for equal values where a
    # PyTorch user expects an elementwise result. ``==`` and ``!=`` between a tensor and array
    # data therefore refuse, and hashing stays by identity (tensors remain usable as dict keys).
    __hash__ = object.__hash__

    def __eq__(self, other: object) -> bool:
        """Refused against a Tensor, a number or array data (see :meth:`_refuse_comparison`);
        against anything else (``None``, a string) ``NotImplemented``, so Python answers by
        identity (``t == None`` is False, as in torch)."""
        if other is not None:
            self._refuse_comparison("==", other)
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        """Refused like :meth:`__eq__` (``t != None`` is True)."""
        if other is not None:
            self._refuse_comparison("!=", other)
        return NotImplemented

    if not TYPE_CHECKING:  # always refused: hidden from mypy, which then reports `t < x` as
        # unsupported (review117 F3), as it does the operators below

        def __lt__(self, other: object) -> bool:
            """Refused (the catalog has no comparison op) against a Tensor, a number or array
            data, as :meth:`__eq__` refuses them, and against ``None``, a string, bytes or a torch
            tensor (Python's ``TypeError`` there said "between instances of 'Tensor' and
            'Tensor'" for a torch tensor); against another object ``NotImplemented``, so its own
            reflected method answers."""
            self._refuse_comparison("<", other)
            return NotImplemented

        def __le__(self, other: object) -> bool:
            """Refused like :meth:`__lt__`."""
            self._refuse_comparison("<=", other)
            return NotImplemented

        def __gt__(self, other: object) -> bool:
            """Refused like :meth:`__lt__` (also ``number < tensor``, which Python reflects here)."""
            self._refuse_comparison(">", other)
            return NotImplemented

        def __ge__(self, other: object) -> bool:
            """Refused like :meth:`__lt__`."""
            self._refuse_comparison(">=", other)
            return NotImplemented

    def _refuse_comparison(self, op: str, other: object) -> None:
        """Raise for a comparison with tensor or array data, and for an ordering (``<``, ``<=``,
        ``>``, ``>=``) with ``None``, a string, bytes or a torch tensor too; return for anything
        else (whose own reflected method then answers, or Python's ``TypeError``).

        Raises:
            TensorTypeError: ``other`` is a Tensor, a number, a numpy array/scalar, a list or a
                tuple; in an ordering, also ``None``, ``str``, ``bytes`` or a torch tensor.
        """
        ordering = op not in ("==", "!=")  # review239 F15: `t < None` and `t < torch_tensor` got
        # Python's "'<' not supported between instances of 'Tensor' and 'Tensor'"
        data = isinstance(other, Tensor | numbers.Number | np.ndarray | np.generic | list | tuple)
        known = other is None or isinstance(other, str | bytes) or _is_torch_tensor(other)
        if not data and (not ordering or not known):  # another object's reflected method may
            return  # answer (a "greater than everything" sentinel: review240 F7)
        shown = f"a Tensor of shape {other.shape}" if isinstance(other, Tensor) else _preview(other)
        if op in ("==", "!="):
            accepted = (
                "np.array_equal(a.numpy(), b.numpy()) or a.numpy() == b.numpy(); test identity with "
                "`a is b`, and look a tensor up in a list by identity, e.g. any(t is x for t in "
                "items), since `in`, .index and .remove compare with =="
            )
        else:
            accepted = (
                f"a.numpy() {op} b.numpy(), or a.item() {op} b.item() for one-element tensors; sort "
                "tensors by a key, e.g. sorted(items, key=lambda t: t.item())"
            )
        raise TensorTypeError(
            f"cannot evaluate `tensor {op} other` for a Tensor of shape {self.shape} and {shown}: "
            "elementwise comparison is not an op of the backend catalog, so no accepted kernel can "
            f"run it (accepted: compare the values with numpy, e.g. {accepted})"
        )

    # ----------------------------------------------------------------------------- autograd

    def backward(
        self,
        gradient: Tensor | npt.ArrayLike | None = None,
        retain_graph: BoolLike | None = False,
        create_graph: BoolLike = False,
        inputs: object = None,
    ) -> None:
        """Reverse-mode gradient of this tensor into every reachable leaf's ``.grad``.

        Args:
            gradient: the cotangent of this tensor (its shape): a Tensor, array data or a torch
                tensor (read detached; a dtype numpy lacks, such as bfloat16, widened first); cast
                to this tensor's dtype. Defaults to 1 for a one-element tensor, as
                ``torch.Tensor.backward``.
            retain_graph: keep the graph so that ``backward`` can run over it again; ``None``
                (torch's default) is False.
            create_graph: torch's (third, as in torch): only False, as the tape records no graph
                of its backward (no higher-order gradients).
            inputs: torch's: only None; every reachable leaf gets its gradient.

        Raises:
            AutogradError: the tensor does not require grad; no gradient for a multi-element
                output; seed shape mismatch; a freed graph; a saved tensor modified in place.
            TensorTypeError: ``retain_graph`` is not a bool; ``create_graph`` other than False or
                ``inputs`` other than None (review100 L1).
            TensorError: a ``gradient`` that is not numeric array data (a string, ragged lists).
            DeviceError: a ``gradient`` tensor with axes on another device (a 0-d one is moved to
                the output's device, as torch moves it).
        """
        # torch's default is None (then create_graph's value, False here): taken as False (review104 L2)
        retain_graph = False if retain_graph is None else _flag("backward(): retain_graph", retain_graph)
        if _flag("backward(): create_graph", create_graph):
            raise TensorTypeError(
                "backward(): create_graph=True is refused: the tape records no graph of the backward, so "
                "there are no higher-order gradients (accepted: False, torch's default)"
            )
        if inputs is not None:
            raise TensorTypeError(
                f"backward(): inputs={_preview(inputs)} is refused: every leaf the output reaches gets its "
                "gradient (accepted: None, torch's default; to leave a leaf's .grad as it was, keep it "
                "before backward() and put it back after)"
            )
        if not self._requires_grad:
            raise AutogradError(  # review230 F3: the likely causes, as torch's "does not require grad"
                "autograd: backward() on a tensor that does not require grad (no recorded node): none "
                "of the tensors it was computed from requires grad (create the leaves with "
                "requires_grad=True), or it was computed under no_grad() or detached"
            )
        if gradient is None:
            if self.numel() != 1:
                raise AutogradError(
                    f"autograd: backward() without a gradient needs a one-element output (got shape "
                    f"{self.shape}); pass gradient= with the output's shape"
                )
            host_seed: Array = np.ones(self.shape, dtype=self.dtype)
        else:
            given = _gradient_device(gradient)
            if given is not None and given != self.device and _ndim(gradient) != 0:
                # torch refuses it too, and moves a 0-d gradient to the output's device
                raise DeviceError(
                    f"autograd: backward() got a gradient on {given} for an output on "
                    f"{self.device}; move it with .to({self.device!r})"
                )
            raw: object = gradient
            if isinstance(gradient, Tensor):
                raw = storage.to_host(gradient._data)
            elif _is_torch_tensor(gradient):  # detached; bfloat16 widened, as torch casts the seed
                declared = declared_shape(gradient)
                if declared is not None and declared != self.shape:  # before the widening copy
                    raise _seed_mismatch(declared, self.shape)  # (review242 F5)
                raw = _from_torch_array(gradient, widen=True)
            try:
                values = np.asarray(raw)
            except ValueError as exc:  # ragged nested sequences
                raise TensorError(_bad_gradient(gradient, self.shape, f" ({exc})")) from exc
            if values.dtype.kind not in "biuf":
                raise TensorError(_bad_gradient(gradient, self.shape, ""))
            if values.shape != self.shape:  # before the copy: a broadcast view may declare 2**40
                raise _seed_mismatch(values.shape, self.shape)  # entries (review240 F4)
            with np.errstate(over="ignore"):  # a seed beyond float32 is inf, as in torch
                host_seed = np.array(values, dtype=self.dtype, copy=True)
        seed = storage.like(host_seed, self._data)
        if self._node is None:
            self._accumulate_grad(seed)
            return
        run_backward(self._node, seed, retain_graph=retain_graph)

    def _accumulate_grad(self, total: Storage) -> None:
        """Add ``total`` (storage on this tensor's device) to ``.grad``: the first gradient is a
        copy (it never aliases an array of the traversal); later ones are added into the ``.grad``
        tensor's storage in place and its version bumped, as torch's ``AccumulateGrad`` does, so a
        handle to ``.grad`` (or a tensor assigned to it) sees the sum. A ``.grad`` with read-only
        storage is replaced by a new tensor instead.

        Thread-safe: two threads whose backward reaches the same leaf both land in ``.grad``
        (torch's ``AccumulateGrad`` holds a per-variable mutex). The read, the copy or the in-place
        add (numpy releases the GIL inside it for large arrays) and the store run under one lock
        of this module, taken once per leaf a backward reaches; the forward never takes it."""
        with _GRAD_LOCK:
            grad = self._grad
            if grad is None:
                self._grad = Tensor._make(storage.copy_storage(total))
                return
            if storage.add_into(grad._data, total):
                grad._version.bump()
            else:
                self._grad = Tensor._make(storage.add(grad._data, total))

    # ----------------------------------------------------------------------------- in-place writes

    def copy_(self, src: Tensor | npt.ArrayLike) -> Tensor:
        """Write ``src`` (broadcast to this shape, cast to this dtype) into the storage in place.

        ``src`` broadcasts by torch's rule: at most this tensor's number of axes, each extent 1 or
        this tensor's, aligned from the right (``(1, 1, 3)`` into ``(2, 3)`` is refused, as by
        torch; ``t[...] = src`` accepts it, as torch does). The cast is numpy's ``same_kind``:
        floats are not written into an int64 tensor, nor numbers (ints, floats) into a bool tensor,
        where torch truncates (or writes ``v != 0``); ``t[...] = src`` casts as torch does. Into an
        int64 or bool tensor an integer outside ``[-2**63, 2**63 - 1]`` is refused, never wrapped
        (torch refuses it too). A float beyond float32's range becomes ``±inf`` in a float32
        tensor (as a constant operand does). ``src`` follows the functional ops' constant-operand
        rule (:mod:`torchlean.functional`).

        Raises:
            AutogradError: this tensor requires grad and gradients are enabled; ``src`` is a Tensor
                that requires grad while gradients are recorded (torch records the copy and sends
                the gradient to ``src``; torchlean's tape records no in-place op): use ``src``
                itself, or ``torchlean.broadcast_to(src, t.shape)``, or copy under
                ``torchlean.no_grad()``.
            TensorTypeError: ``src`` is not numeric data (``None``, a string, bytes, an object),
                or a torch tensor that requires grad.
            TensorError: read-only storage; ``src`` does not broadcast to this shape by torch's
                rule (``copy_(): a source of shape (1, 1, 3) does not broadcast to the tensor's
                shape (2, 3) ...``); ``src``'s dtype does not cast to this dtype by the same_kind
                rule (``copy_(): float64 values are not written into an int64 tensor ...``,
                naming the rule and ``t[...] = v``); ragged data; an integer that does not fit
                this dtype (``the integer 9223372036854775808 (19 digits) does not fit the
                tensor's dtype int64 ...``).
        """
        return _tensor_writes.copy_into(self, src)

    def zero_(self) -> Tensor:
        """Fill the storage with zeros in place (same refusals as :meth:`copy_`)."""
        return _tensor_writes.zero(self)

    def __setitem__(self, index: Any, value: Tensor | npt.ArrayLike) -> None:
        """``t[index] = value``: a numpy basic/advanced assignment into the storage, in place.

        The value is cast to this tensor's dtype as numpy and torch cast it (a float written into
        an int64 tensor is truncated toward zero; beyond float32's range it becomes ``±inf`` in a
        float32 tensor, as a constant operand does), except that a value int64 cannot hold (NaN,
        ``±inf``, a number outside ``[-2**63, 2**63)``) is refused, as torch refuses it, rather
        than written as ``-2**63``. A value that is not a Tensor follows the functional ops'
        constant-operand rule (:mod:`torchlean.functional`), and slices the rule of
        :func:`~torchlean.functional.getitem` (integer bounds, a step of at least 1). The value's
        shape follows torch's rule for every index: its extra leading size-1 axes are dropped
        (``t[0] = tl.tensor([5.0])`` and ``m[r, c] = np.ones((1, 1))`` write one element), then
        it broadcasts to the shape the index selects.

        Raises:
            AutogradError: this tensor requires grad and gradients are enabled; ``value`` is a
                Tensor that requires grad while gradients are recorded (torch records the write
                and sends the gradient to ``value``; torchlean's tape records no in-place op):
                build the tensor out of place (``torchlean.concat`` of the pieces,
                ``torchlean.scatter_add``), or write under ``torchlean.no_grad()``.
            TensorTypeError: ``value`` is not numeric data (``None``, a string, bytes, an object),
                or a torch tensor that requires grad; a slice bound that is not an integer.
            TensorError: read-only storage, a negative or zero slice step, an index numpy cannot
                apply (the message names it), uint8 index data (positions to numpy, a mask to
                torch: convert it to bool or int64), a value that does not broadcast to the selected
                shape (the message names both shapes and the accepted ones), ragged data, or a
                value that does not fit this dtype (an integer beyond int64, or beyond float32's
                range; for int64 a float
                :func:`~torchlean._tensor_data._require_floats_fit_int64` refuses).
        """
        _tensor_writes.assign(self, index, value)

    # ----------------------------------------------------------------------------- operators

    def __add__(self, other: OperandLike) -> Tensor:
        """``self + other``: :func:`torchlean.functional.add` (records ``add``; no dtype promotion)."""
        from torchlean import functional as F

        return F.add(self, other)

    def __radd__(self, other: OperandLike) -> Tensor:
        """``other + self``: :func:`torchlean.functional.add` (records ``add``)."""
        from torchlean import functional as F

        return F.add(other, self)

    def __sub__(self, other: OperandLike) -> Tensor:
        """``self - other``: :func:`torchlean.functional.sub` (records ``sub``; no dtype promotion)."""
        from torchlean import functional as F

        return F.sub(self, other)

    def __rsub__(self, other: OperandLike) -> Tensor:
        """``other - self``: :func:`torchlean.functional.sub` (records ``sub``)."""
        from torchlean import functional as F

        return F.sub(other, self)

    def __mul__(self, other: OperandLike) -> Tensor:
        """``self * other``: :func:`torchlean.functional.mul` (records ``mul``, or ``scale`` by a
        finite number)."""
        from torchlean import functional as F

        return F.mul(self, other)

    def __rmul__(self, other: OperandLike) -> Tensor:
        """``other * self``: :func:`torchlean.functional.mul` (records ``mul`` or ``scale``)."""
        from torchlean import functional as F

        return F.mul(other, self)

    def __truediv__(self, other: OperandLike) -> Tensor:
        """``self / other``: :func:`torchlean.functional.div` (records ``inv`` then ``mul``, or
        ``scale`` by ``1/other`` for an ordinary number; values, gradients and errors there)."""
        from torchlean import functional as F

        return F.div(self, other)

    def __rtruediv__(self, other: OperandLike) -> Tensor:
        """``other / self``: :func:`torchlean.functional.div` (records ``inv`` then ``mul``)."""
        from torchlean import functional as F

        return F.div(other, self)

    if not TYPE_CHECKING:  # mypy keeps reporting these operators as unsupported; at run time they
        # get a hint

        def _refuse_operator(self, symbol: str, other: object = None) -> NoReturn:
            """Raise the refusal of the Python operator ``symbol`` (:data:`OPERATOR_HINTS`), its
            numpy code spelling ``other`` as ``other.numpy()`` for a Tensor."""
            spelled = "other.numpy()" if isinstance(other, Tensor) else "other"
            raise TensorTypeError(OPERATOR_HINTS[symbol].replace("{other}", spelled))

        def __pow__(self, other: object) -> NoReturn:
            """Refused: the backend catalog has no power op, so ``t ** p`` cannot run on an accepted
            kernel; the message names the ops that spell the usual powers.

            Raises:
                TensorTypeError: always.
            """
            raise TensorTypeError(
                f"`**` ({_preview(other) if not isinstance(other, Tensor) else 'a Tensor'} as the exponent) "
                "is not an op of the backend catalog, so it cannot run on an accepted kernel; write t * t "
                "for t ** 2, tl.sqrt(t) for t ** 0.5, tl.inv(t) for t ** -1, tl.exp(p * tl.log(t)) for "
                "t ** p with t > 0"
            )

        def __rpow__(self, other: object) -> NoReturn:
            """Refused like :meth:`__pow__` (``2 ** t``)."""
            raise TensorTypeError(
                "`**` with a Tensor exponent is not an op of the backend catalog, so it cannot run on an "
                "accepted kernel; write tl.exp(t * np.log(b)) for b ** t with b > 0"
            )

        def __floordiv__(self, other: object) -> NoReturn:
            """Refused: ``t // other`` (and ``other // t``) has no catalog op; the message gives the
            numpy spelling for values.

            Raises:
                TensorTypeError: always.
            """
            self._refuse_operator("//", other)

        def __rfloordiv__(self, other: object) -> NoReturn:
            """Refused like :meth:`__floordiv__`."""
            self._refuse_operator("r//")

        def __mod__(self, other: object) -> NoReturn:
            """Refused like :meth:`__floordiv__` (``t % other``, torch's remainder)."""
            self._refuse_operator("%", other)

        def __rmod__(self, other: object) -> NoReturn:
            """Refused like :meth:`__floordiv__`."""
            self._refuse_operator("r%")

        def __divmod__(self, other: object) -> NoReturn:
            """Refused like :meth:`__floordiv__` (``divmod(t, other)``)."""
            self._refuse_operator("divmod", other)

        def __rdivmod__(self, other: object) -> NoReturn:
            """Refused like :meth:`__floordiv__`."""
            self._refuse_operator("rdivmod")

        def __round__(self, ndigits: object = None) -> NoReturn:
            """Refused like :meth:`__floordiv__` (``round(t)``, ``round(t, n)``; its gradient is 0
            almost everywhere)."""
            hint = OPERATOR_HINTS["round"]
            if ndigits is not None:
                hint = hint.replace("np.round(t.numpy())", f"np.round(t.numpy(), {ndigits!r})")
            raise TensorTypeError(hint)

        def __invert__(self) -> NoReturn:
            """Refused: ``~mask`` has no catalog op (torchlean tensors carry no boolean logic); the
            message gives the numpy spelling.

            Raises:
                TensorTypeError: always.
            """
            self._refuse_operator("~")

        def __and__(self, other: object) -> NoReturn:
            """Refused like :meth:`__invert__` (``t & other``)."""
            self._refuse_operator("&")

        def __rand__(self, other: object) -> NoReturn:
            """Refused like :meth:`__invert__`."""
            self._refuse_operator("r&")

        def __or__(self, other: object) -> NoReturn:
            """Refused like :meth:`__invert__` (``t | other``)."""
            self._refuse_operator("|")

        def __ror__(self, other: object) -> NoReturn:
            """Refused like :meth:`__invert__`."""
            self._refuse_operator("r|")

        def __xor__(self, other: object) -> NoReturn:
            """Refused like :meth:`__invert__` (``t ^ other``)."""
            self._refuse_operator("^")

        def __rxor__(self, other: object) -> NoReturn:
            """Refused like :meth:`__invert__`."""
            self._refuse_operator("r^")

    def add(self, other: OperandLike) -> Tensor:
        """``self + other`` (``torch.Tensor.add`` without ``alpha``); records ``add``. Shapes,
        dtypes (no promotion) and errors are the function's."""
        return self + other

    def sub(self, other: OperandLike) -> Tensor:
        """``self - other`` (``torch.Tensor.sub`` without ``alpha``); records ``sub``. Shapes,
        dtypes (no promotion) and errors are the function's."""
        return self - other

    def mul(self, other: OperandLike) -> Tensor:
        """``self * other`` (``torch.Tensor.mul``); records ``mul``. Shapes, dtypes (no promotion)
        and errors are the function's."""
        return self * other

    def div(self, other: OperandLike) -> Tensor:
        """``self / other`` (``torch.Tensor.div`` without ``rounding_mode``): ``self * inv(other)``,
        as ``/`` computes it. Shapes, dtypes (no promotion) and errors are the function's."""
        return self / other

    def square(self) -> Tensor:
        """``self * self`` (``torch.Tensor.square``; exact as torch's: one rounding); records ``mul``."""
        return self * self

    if not TYPE_CHECKING:  # always refused: hidden from mypy, which then reports the call (review117 F1)

        def pow(self, exponent: object) -> NoReturn:
            """Refused as ``**`` is (:meth:`__pow__`): the catalog has no power op; the message names
            the ops that spell the usual powers (``t.square()`` for 2).

            Raises:
                TensorTypeError: always.
            """
            return self.__pow__(exponent)

    if not TYPE_CHECKING:  # mypy keeps reporting unknown attributes; at run time they get a hint

        def __getattr__(self, name: str) -> NoReturn:
            """An attribute ``Tensor`` lacks: ``AttributeError``, with the way to write it for the
            torch methods ported code reaches for most (:data:`_TORCH_METHOD_HINTS`)."""
            if name.startswith("__"):  # protocol probes (np.asarray's __array_interface__): no hint
                raise AttributeError(name)
            hint = _TORCH_METHOD_HINTS.get(name)
            message = f"'Tensor' object has no attribute {name!r}"
            raise AttributeError(message if hint is None else f"{message}: {hint}")

    def __iadd__(self, other: OperandLike) -> Tensor:
        """``t += other``: ``functional.add``, written into ``t``'s storage; rules and errors in
        :func:`~torchlean._tensor_writes.update_in_place`."""
        return _tensor_writes.update_in_place(self, "+=", self.__add__, other)

    def __isub__(self, other: OperandLike) -> Tensor:
        """``t -= other``: ``functional.sub``, written into ``t``'s storage; rules and errors in
        :func:`~torchlean._tensor_writes.update_in_place`."""
        return _tensor_writes.update_in_place(self, "-=", self.__sub__, other)

    def __imul__(self, other: OperandLike) -> Tensor:
        """``t *= other``: ``functional.mul``, written into ``t``'s storage; rules and errors in
        :func:`~torchlean._tensor_writes.update_in_place`."""
        return _tensor_writes.update_in_place(self, "*=", self.__mul__, other)

    def __itruediv__(self, other: OperandLike) -> Tensor:
        """``t /= other``: ``functional.div``, written into ``t``'s storage; rules and errors in
        :func:`~torchlean._tensor_writes.update_in_place`."""
        return _tensor_writes.update_in_place(self, "/=", self.__truediv__, other)

    def __matmul__(self, other: Tensor) -> Tensor:
        """``self @ other``: :func:`torchlean.functional.matmul` (records ``matmul``; ``other``
        must be a Tensor, as there)."""
        from torchlean import functional as F

        return F.matmul(self, other)

    def __rmatmul__(self, other: Tensor) -> Tensor:
        """``other @ self``: :func:`torchlean.functional.matmul` (records ``matmul``)."""
        from torchlean import functional as F

        return F.matmul(other, self)

    def __neg__(self) -> Tensor:
        """``-self``: :func:`torchlean.functional.neg` (records ``scale`` by -1)."""
        from torchlean import functional as F

        return F.neg(self)

    def __abs__(self) -> Tensor:
        """``abs(t)``: ``functional.abs`` (records ``abs``)."""
        from torchlean import functional as F

        return F.abs(self)

    def __getitem__(self, index: Any) -> Tensor:
        """``self[index]``: :func:`torchlean.functional.getitem` (basic indexing; records ``slice``
        and/or ``reshape``; always a new tensor, never a view; errors there). While gradients are
        recorded, the result is remembered as indexed from ``self``, so that a refused
        ``self[index] op= v`` names ``self``'s remedy
        (:func:`~torchlean._tensor_writes.update_in_place`)."""
        from torchlean import functional as F

        result = F.getitem(self, index)
        if is_grad_enabled():
            _tensor_writes.note_indexed(result, self)
        return result

    # ----------------------------------------------------------------------------- method forms

    def reshape(
        self,
        *sizes: IntLike | Sequence[IntLike],
        shape: IntLike | Sequence[IntLike] | _Unset = _UNSET,
    ) -> Tensor:
        """``functional.reshape`` (``torch.Tensor.reshape``, but always a new tensor); accepts
        ``t.reshape(2, 3)``, ``t.reshape((2, 3))`` or torch's keyword ``t.reshape(shape=(2, 3))``.
        Shapes, dtypes and errors (``GuardError`` for another element count; int64 and bool data
        are moved on ``cpu``) are those of the function.

        Raises:
            TensorTypeError: no shape (``t.reshape()``; torch: "missing 1 required positional
                arguments"; ``t.reshape(())`` makes a one-element tensor rank 0); both sizes and
                ``shape=`` (torch: "got multiple values for argument 'shape'"); the function's
                errors.
        """
        from torchlean import functional as F

        if not sizes and shape is _UNSET:
            raise TensorTypeError(
                "reshape() missing its shape, as torch's reshape() refuses it (accepted: "
                "t.reshape(2, 3), t.reshape((2, 3)) or t.reshape(shape=(2, 3)); t.reshape(()) makes "
                "a one-element tensor rank 0)"
            )
        return F.reshape(self, _shape_args(_sizes_or_keyword("reshape", sizes, "shape", shape)))

    def permute(
        self,
        *axes: IntLike | Sequence[IntLike],
        dims: IntLike | Sequence[IntLike] | _Unset = _UNSET,
    ) -> Tensor:
        """``functional.permute`` (``torch.Tensor.permute``); accepts ``t.permute(1, 0)``,
        ``t.permute((1, 0))`` or torch's keyword ``t.permute(dims=(1, 0))``; a ``GuardError`` when
        the axes are not a permutation of x's.

        Raises:
            TensorTypeError: no axes (``t.permute()``; torch: "missing 1 required positional
                arguments"; a rank-0 tensor takes ``t.permute(())``); both axes and ``dims=``
                (torch: "got multiple values for argument 'dims'"); the function's errors.
        """
        from torchlean import functional as F

        if not axes and dims is _UNSET:
            raise TensorTypeError(
                "permute() missing its dims, as torch's permute() refuses it (accepted: "
                "t.permute(1, 0), t.permute((1, 0)) or t.permute(dims=(1, 0)), one entry per axis; "
                "t.permute(()) for a rank-0 tensor)"
            )
        return F.permute(self, _shape_args(_sizes_or_keyword("permute", axes, "dims", dims)))

    def transpose(self, dim0: IntLike, dim1: IntLike) -> Tensor:
        """Swap two axes (``functional.transpose``, ``torch.Tensor.transpose``, with torch's
        argument names ``dim0``, ``dim1``); an axis outside ``[-ndim, ndim)`` (``[-1, 0]`` for a
        rank-0 tensor, as in torch) is a ``GuardError``, never wrapped."""
        from torchlean import functional as F

        return F.transpose(self, dim0, dim1)

    @property
    def T(self) -> Tensor:
        """All axes reversed (``functional.permute``), shape ``(2, 3, 4)`` -> ``(4, 3, 2)``, as
        ``torch.Tensor.T`` (which torch deprecates for ranks other than 2; accepted here)."""
        from torchlean import functional as F

        return F.permute(self, tuple(range(self.ndim - 1, -1, -1)))

    def sum(
        self,
        axis: IntLike | Sequence[IntLike] | _Unset | None = _UNSET,
        keepdims: BoolLike | _Unset = _UNSET,
        *,
        dim: IntLike | Sequence[IntLike] | _Unset | None = _UNSET,
        keepdim: BoolLike | _Unset = _UNSET,
        dtype: DTypeLike | None = None,
    ) -> Tensor:
        """``functional.reduce_sum``, as ``torch.Tensor.sum``: ``t.sum()``, ``t.sum(1)``,
        ``t.sum(dim=(0, 1), keepdim=True)``, or numpy's ``axis=``/``keepdims=``, which torch also
        accepts. ``dim`` (or ``axis``) is None (every axis), an int or a sequence of distinct ints
        in ``[-ndim, ndim)``; the result has x's shape without the reduced axes (kept with extent 1
        when ``keepdim``), the tensor's dtype (``dtype=`` only None or that dtype: torchlean never
        promotes).

        Raises:
            TensorTypeError: both spellings of one argument (``dim`` and ``axis``, ``keepdim`` and
                ``keepdims``; torch: "got an unexpected keyword argument"); a non-integer axis, a
                non-bool ``keepdim``; a ``dtype`` other than the tensor's, naming the conversion
                (review138 F5).
            GuardError: an axis out of range or repeated, ``dim=()`` (the function's errors).

        Apart from the first, the messages are the function's: they name ``reduce_sum``, ``axis``
        and ``keepdims`` whichever spelling was used.
        """
        _no_reduction_dtype(self, "sum", dtype)
        from torchlean import functional as F

        axes = _one_spelling("sum", "dim", dim, "axis", axis, None)
        keep = _one_spelling("sum", "keepdim", keepdim, "keepdims", keepdims, _NOT_KEPT)
        return F.reduce_sum(self, axes, keepdims=keep)

    def mean(
        self,
        axis: IntLike | Sequence[IntLike] | _Unset | None = _UNSET,
        keepdims: BoolLike | _Unset = _UNSET,
        *,
        dim: IntLike | Sequence[IntLike] | _Unset | None = _UNSET,
        keepdim: BoolLike | _Unset = _UNSET,
        dtype: DTypeLike | None = None,
    ) -> Tensor:
        """``functional.reduce_mean``, as ``torch.Tensor.mean``; arguments, shapes and errors as
        :meth:`sum` (``dim``/``axis``, ``keepdim``/``keepdims``, ``dtype`` None or the tensor's). The mean
        over an empty axis is NaN, as in torch."""
        from torchlean import functional as F

        _no_reduction_dtype(self, "mean", dtype)

        axes = _one_spelling("mean", "dim", dim, "axis", axis, None)
        keep = _one_spelling("mean", "keepdim", keepdim, "keepdims", keepdims, _NOT_KEPT)
        return F.reduce_mean(self, axes, keepdims=keep)

    # ------------------------------------------------------------ torch.Tensor methods (pointwise)
    # Each delegates to the function of torchlean.functional named in its docstring: the same
    # recorded op, values and errors (``t.exp()`` is ``F.exp(t)`` bit for bit). Inputs are float32
    # or float64 and results keep that dtype and x's shape; an int64 or bool tensor is refused by
    # the kernel guard with a ``GuardError`` (torch would compute in float or refuse).

    def exp(self) -> Tensor:
        """``functional.exp`` (``torch.Tensor.exp``); records ``exp``. Shape, dtype and errors are
        the function's (an int64 or bool tensor is a ``GuardError``)."""
        from torchlean import functional as F

        return F.exp(self)

    def log(self) -> Tensor:
        """``functional.log`` (``torch.Tensor.log``; ``log(0)`` is ``-inf``, ``log(-1)`` NaN);
        records ``log``. Shape, dtype and errors are the function's (an int64 or bool tensor is a
        ``GuardError``)."""
        from torchlean import functional as F

        return F.log(self)

    def sqrt(self) -> Tensor:
        """``functional.sqrt`` (``torch.Tensor.sqrt``; NaN below 0); records ``sqrt``. Shape, dtype
        and errors are the function's (an int64 or bool tensor is a ``GuardError``)."""
        from torchlean import functional as F

        return F.sqrt(self)

    def abs(self) -> Tensor:
        """``functional.abs`` (``torch.Tensor.abs``, also ``abs(t)``); records ``abs``. Shape, dtype
        and errors are the function's (an int64 or bool tensor is a ``GuardError``)."""
        from torchlean import functional as F

        return F.abs(self)

    def neg(self) -> Tensor:
        """``functional.neg`` (``torch.Tensor.neg``, also ``-t``); records ``scale`` by -1 (exact;
        ``-0.0`` for ``0.0`` as in torch). Shape, dtype and errors are the function's (an int64 or
        bool tensor is a ``GuardError``)."""
        from torchlean import functional as F

        return F.neg(self)

    def relu(self) -> Tensor:
        """``functional.relu`` (``torch.Tensor.relu``); records ``relu``. Shape, dtype and errors
        are the function's (an int64 or bool tensor is a ``GuardError``)."""
        from torchlean import functional as F

        return F.relu(self)

    def tanh(self) -> Tensor:
        """``functional.tanh`` (``torch.Tensor.tanh``); records ``tanh``. Shape, dtype and errors
        are the function's (an int64 or bool tensor is a ``GuardError``)."""
        from torchlean import functional as F

        return F.tanh(self)

    def sigmoid(self) -> Tensor:
        """``functional.sigmoid`` (``torch.Tensor.sigmoid``); records ``sigmoid``. Shape, dtype and
        errors are the function's (an int64 or bool tensor is a ``GuardError``)."""
        from torchlean import functional as F

        return F.sigmoid(self)

    def sin(self) -> Tensor:
        """``functional.sin`` (``torch.Tensor.sin``; NaN at ``±inf``); records ``sin``. Shape, dtype
        and errors are the function's (an int64 or bool tensor is a ``GuardError``)."""
        from torchlean import functional as F

        return F.sin(self)

    def cos(self) -> Tensor:
        """``functional.cos`` (``torch.Tensor.cos``; NaN at ``±inf``); records ``cos``. Shape, dtype
        and errors are the function's (an int64 or bool tensor is a ``GuardError``)."""
        from torchlean import functional as F

        return F.cos(self)

    def reciprocal(self) -> Tensor:
        """``functional.inv``, ``1 / t`` elementwise (``torch.Tensor.reciprocal``: ``±inf`` at
        ``±0``, ``±0`` at ``±inf``); records ``inv``. Shape, dtype and errors are the function's (an
        int64 or bool tensor is a ``GuardError``)."""
        from torchlean import functional as F

        return F.inv(self)

    def clamp(self, min: RealLike | None = None, max: RealLike | None = None) -> Tensor:
        """``functional.clamp(t, lo=min, hi=max)`` (``torch.Tensor.clamp``: ``t.clamp(0)``,
        ``t.clamp(min=-1, max=1)``, ``t.clamp(max=6)``); records ``clamp``. The bounds are real
        numbers; a tensor bound (which torch accepts) is refused.

        Deviations from torch (the function's): ``min > max`` and a NaN bound are refused (torch
        returns ``max`` everywhere, or NaN); a bool bound is refused (torch takes it as 0 or 1).

        Raises:
            TensorTypeError: neither bound given (torch refuses that too: "At least one of 'min'
                or 'max' must not be None"); a bound that is not a real number.
            TensorError: a bound beyond the float64 range (``10**400``).
            GuardError: ``min > max`` or a NaN bound (the function's).
        """
        from torchlean import functional as F

        if min is None and max is None:  # worded for the method, before the function's check
            raise TensorTypeError(
                "clamp: at least one of min or max must be given, as torch.clamp requires "
                "(accepted: t.clamp(min), t.clamp(min=lo, max=hi), t.clamp(max=hi))"
            )
        return F.clamp(self, min, max)

    def clip(self, min: RealLike | None = None, max: RealLike | None = None) -> Tensor:
        """:meth:`clamp` (``torch.Tensor.clip`` is its alias); arguments and errors as there."""
        return self.clamp(min, max)

    def softmax(self, dim: IntLike) -> Tensor:
        """``functional.softmax(t, axis=dim)`` (``torch.Tensor.softmax``: ``dim`` is required,
        positional or keyword, in ``[-ndim, ndim)``; a rank-0 tensor takes 0 or -1 and gives 1);
        records ``softmax``. No ``dtype=`` argument: the result keeps the tensor's dtype.

        Raises:
            GuardError: ``dim`` out of range (torch: ``IndexError``), never wrapped.
            TensorTypeError: ``dim`` is not an integer (a bool, a float, None: as torch refuses
                them).
        """
        from torchlean import functional as F

        return F.softmax(self, _required_dim("softmax", dim))

    def log_softmax(self, dim: IntLike) -> Tensor:
        """``functional.log_softmax(t, axis=dim)`` (``torch.Tensor.log_softmax``); records
        ``log_softmax``; ``dim`` and errors as :meth:`softmax`."""
        from torchlean import functional as F

        return F.log_softmax(self, _required_dim("log_softmax", dim))

    def logsumexp(self, dim: IntLike | Sequence[IntLike] | None, keepdim: BoolLike = False) -> Tensor:
        """``functional.logsumexp(t, dim, keepdims=keepdim)`` (``torch.Tensor.logsumexp``: ``dim``
        is required, an int or a sequence of distinct ints; None reduces every axis); composed
        of accepted kernels, with its values, shapes and errors.
        """
        from torchlean import functional as F

        return F.logsumexp(self, dim, keepdims=keepdim)

    def matmul(self, other: Tensor) -> Tensor:
        """``functional.matmul(t, other)`` (``torch.Tensor.matmul``, also ``t @ other``): 1-D
        operands promoted and their axis dropped, batch axes broadcast; records ``matmul``.

        Raises:
            GuardError: a rank-0 operand, contracted extents that differ, batch axes that do not
                broadcast, dtypes that differ (no promotion).
            TensorTypeError: ``other`` is not a Tensor.
        """
        from torchlean import functional as F

        return F.matmul(self, other)

    def gather(self, dim: IntLike, index: Tensor | npt.ArrayLike) -> Tensor:
        """``functional.gather(t, index, axis=dim)`` (``torch.Tensor.gather(dim, index)``, without
        ``sparse_grad``): ``out[..., i, ...] = t[..., index[..., i, ...], ...]`` along ``dim``;
        ``index`` is int64 (a Tensor, or integer numpy data or lists) of t's rank whose extents do
        not exceed t's on every axis but ``dim``; the result has the index's shape and t's dtype.
        Records ``gather`` (the gradient adds into the gathered positions).

        Raises:
            GuardError: an index value outside ``[0, t.shape[dim])`` (negative values are not
                counted from the end, as in torch), an index of another rank or too large, a
                non-integer index, ``dim`` out of range (the function's).
            TensorTypeError: ``dim`` is not an integer.
        """
        from torchlean import functional as F

        return F.gather(self, index, dim)

    def scatter_add(self, dim: IntLike, index: Tensor | npt.ArrayLike, src: Tensor) -> Tensor:
        """``functional.scatter_add(t, index, src, axis=dim)`` (``torch.Tensor.scatter_add(dim,
        index, src)``, out of place): a new tensor of t's shape and dtype, ``src`` added at
        ``index`` along ``dim``, repeated indices accumulating in index order on the CPU
        (``reference.scatter_add``, ``fixed-left``; ``native_cuda.scatter_add`` declares its
        order implementation-defined); ``index`` (int64,
        t's rank) has extents at most src's on every axis and t's on every axis but ``dim``.
        Records ``scatter_add``.

        Raises:
            GuardError: an index value outside ``[0, t.shape[dim])``, shapes that do not fit, a
                src dtype other than t's, ``dim`` out of range (the function's).
            TensorTypeError: ``src`` is not a Tensor; ``dim`` is not an integer.
        """
        from torchlean import functional as F

        return F.scatter_add(self, index, src, dim)

    # ---------------------------------------------------------------- torch.Tensor methods (shape)
    # No views: each returns a new tensor (``contiguous`` excepted) recording ``reshape``,
    # ``permute`` or ``broadcast``, so gradients flow to the input; int64 and bool tensors are
    # moved too on ``cpu``. A dim is an int (Python or numpy; bools and floats are refused with a
    # ``TensorTypeError``, as torch refuses them) in torch's range, never wrapped: out of range is
    # a ``GuardError`` naming the range (torch raises an ``IndexError``).

    def flatten(self, start_dim: IntLike = 0, end_dim: IntLike = -1) -> Tensor:
        """Axes ``start_dim`` to ``end_dim`` (inclusive) merged into one, as
        ``torch.Tensor.flatten``: shape ``(2, 3, 4)`` gives ``(24,)``, ``flatten(1)`` gives
        ``(2, 12)``; a rank-0 tensor gives shape ``(1,)`` (its dims are 0 and -1, as torch's).
        Records ``reshape`` (``functional.reshape``); always a new tensor (torch returns the
        tensor itself when nothing is merged).

        Raises:
            GuardError: a dim out of range; ``start_dim`` after ``end_dim`` (once normalised; torch
                refuses it too).
            TensorTypeError: a dim that is not an integer.
        """
        from torchlean import functional as F

        return F.reshape(self, _tensor_shapes.flattened_shape(self.shape, start_dim, end_dim))

    def unsqueeze(self, dim: IntLike) -> Tensor:
        """A new axis of extent 1 at position ``dim`` of the result, as ``torch.Tensor.unsqueeze``:
        ``dim`` in ``[-ndim - 1, ndim]`` (``-1`` appends), shape ``(2, 3)`` with ``dim=1`` gives
        ``(2, 1, 3)``. Records ``reshape``; a new tensor, not a view.

        Raises:
            GuardError: ``dim`` out of range. TensorTypeError: ``dim`` is not an integer.
        """
        from torchlean import functional as F

        return F.reshape(self, _tensor_shapes.unsqueezed_shape(self.shape, dim))

    def squeeze(self, dim: IntLike | Sequence[IntLike] | None = None) -> Tensor:
        """Axes of extent 1 removed, as ``torch.Tensor.squeeze``: every one for ``dim=None``, else
        those among ``dim`` (an int or, as torch 2.x, a sequence of ints); a named axis whose
        extent is not 1 is left alone, as torch leaves it. Dims are in ``[-ndim, ndim)`` (0 and -1
        for a rank-0 tensor, which stays rank 0). Records ``reshape``; a new tensor, not a view.
        Unlike torch, ``dim=None`` may be spelled out (torch 2.13 refuses the keyword None);
        several dims are one sequence (``squeeze((0, 2))``), not separate arguments (which torch's
        parser also takes); a bool in the sequence is refused (torch 2.13 refuses a bool dim alone
        and one first in a sequence, and takes one after the first as 0 or 1: review73 F2).

        Raises:
            GuardError: a dim out of range; a sequence naming one axis twice (torch: "dim 0
                appears multiple times in the list of dims").
            TensorTypeError: a dim that is not an integer, or ``dim`` neither None, an int nor a
                sequence of ints.
        """
        from torchlean import functional as F

        return F.reshape(self, _tensor_shapes.squeezed_shape(self.shape, dim))

    def t(self) -> Tensor:
        """The transpose of a rank-2 tensor, as ``torch.Tensor.t``: shape ``(2, 3)`` gives
        ``(3, 2)``; a rank-0 or rank-1 tensor keeps its shape (a copy: torch returns a view).
        Records ``permute`` (``functional.permute``).

        Raises:
            GuardError: rank 3 or more (torch refuses it too: "t() expects a tensor with <= 2
                dimensions"); use :meth:`transpose` or :meth:`permute` there.
        """
        from torchlean import functional as F

        if self.ndim > 2:
            raise GuardError(
                f"t: expects a tensor with <= 2 dimensions, but this one has shape {self.shape} "
                "(accepted: rank 0, 1 or 2; for more axes, transpose(dim0, dim1) or permute(...))"
            )
        return F.permute(self, tuple(range(self.ndim - 1, -1, -1)))

    def expand(
        self,
        *sizes: IntLike | Sequence[IntLike],
        size: IntLike | Sequence[IntLike] | _Unset = _UNSET,
    ) -> Tensor:
        """The tensor broadcast to ``sizes``, as ``torch.Tensor.expand``: ``t.expand(3, 4)``,
        ``t.expand((3, 4))`` or torch's keyword ``t.expand(size=(3, 4))``; ``-1`` keeps the size
        of an existing axis (``(3, 1)`` with ``expand(-1, 4)`` gives ``(3, 4)``), new axes go in
        front.
        Records ``broadcast`` (``functional.broadcast_to``): the values are materialised, a new
        tensor and not a view, so writing into it is allowed and never reaches the input; the
        gradient sums over the broadcast axes (a left fold: within rounding of torch's sum).

        Raises:
            TensorTypeError: no sizes (torch: missing "size"); both sizes and ``size=`` (torch:
                "got multiple values"); a size that is not an integer (a bool too: torch 2.13
                refuses one as the first size and takes one after it as 0 or 1).
            GuardError: fewer sizes than axes; ``-1`` for a new leading axis (torch refuses both);
                any other negative size; a size that is neither the axis's nor a broadcast of
                extent 1 (the function's error).
        """
        from torchlean import functional as F

        sizes = _sizes_or_keyword("expand", sizes, "size", size)
        if not sizes:
            raise TensorTypeError(
                "expand: sizes missing (accepted: t.expand(3, 4) or t.expand((3, 4)); -1 keeps an "
                "axis's size)"
            )
        target = _tensor_shapes.expanded_shape(self.shape, F._ints("expand", "size", _shape_args(sizes)))
        return F.broadcast_to(self, target)

    def expand_as(self, other: Tensor) -> Tensor:
        """:meth:`expand` to ``other``'s shape, as ``torch.Tensor.expand_as`` (``t.expand(*other.shape)``);
        records ``broadcast``. ``other`` only gives the shape.

        Raises:
            TensorTypeError: ``other`` is not a Tensor (torch refuses that too).
            GuardError: t does not broadcast to that shape (:meth:`expand`'s errors).
        """
        return self.expand(_shape_of("expand_as", other))

    def reshape_as(self, other: Tensor) -> Tensor:
        """:meth:`reshape` to ``other``'s shape, as ``torch.Tensor.reshape_as``; records
        ``reshape`` (a new tensor). ``other`` only gives the shape.

        Raises:
            TensorTypeError: ``other`` is not a Tensor (torch refuses that too).
            GuardError: another element count (:meth:`reshape`'s errors).
        """
        return self.reshape(_shape_of("reshape_as", other))

    def clone(self) -> Tensor:
        """A new tensor with the same values, shape and dtype, as ``torch.Tensor.clone``: its own
        storage, and on the tape when gradients are recorded (the gradient flows to this tensor
        unchanged). Records ``reshape`` to the same shape (``functional.reshape``; the catalog has
        no copy op), so ``grad_fn`` is ``reshape`` where torch says ``CloneBackward0``. No
        ``memory_format=`` argument: every torchlean tensor is contiguous. int64 and bool tensors
        are cloned on ``cpu`` too."""
        from torchlean import functional as F

        return F.reshape(self, self.shape)

    def contiguous(self) -> Tensor:
        """This tensor itself, as ``torch.Tensor.contiguous`` returns a tensor that is already
        contiguous: every torchlean tensor is C-contiguous and there are no views. So, as in torch
        for a contiguous input, a write through the result reaches this tensor; use :meth:`clone`
        for a copy. Records nothing."""
        return self

    if not TYPE_CHECKING:  # always refused: hidden from mypy, which then reports the call rather
        # than take it as never returning and skip the code after it (review117 F1)

        def view(self, *shape: object) -> NoReturn:
            """Refused: torchlean has no views (every op result is a new tensor), so a ``view`` that
            shares storage with this tensor cannot exist; :meth:`reshape` gives the same values and
            gradients as a new tensor (torch's ``view`` differs only in sharing storage, which code
            that writes in place through the view relies on).

            Raises:
                TensorTypeError: always, naming :meth:`reshape`.
            """
            spelled = ", ".join(_preview(d) for d in shape)
            raise TensorTypeError(
                f"view({spelled if len(spelled) <= 60 else spelled[:57] + '...'}): torchlean has no views, "
                "so a tensor sharing this one's storage cannot be made; use t.reshape(...) (same values "
                "and gradients, a new tensor; an in-place write through it does not reach t)"
            )


def _shape_of(method: str, other: object) -> tuple[int, ...]:
    """``other.shape`` for ``expand_as``/``reshape_as``.

    Raises:
        TensorTypeError: ``other`` is not a Tensor, naming it and the accepted spelling.
    """
    if not isinstance(other, Tensor):
        raise TensorTypeError(
            f"{method}() needs a torchlean Tensor as other; got a value of type {operand_type(other)} "
            f"(accepted: a Tensor; for a shape, t.{method.split('_')[0]}(shape))"
        )
    return other.shape


def _bad_gradient(gradient: object, shape: tuple[int, ...], reason: str) -> str:
    """The message refusing a ``backward(gradient=...)`` that is not numeric array data."""
    return (
        f"backward(): gradient {_preview(gradient)} of type {type(gradient).__name__} is not numeric array "
        f"data{reason}; accepted: a Tensor or a numeric array-like of the output's shape {shape}"
    )


def tensor(
    data: object,
    requires_grad: BoolLike = False,
    dtype: DTypeLike | None = None,
    device: DeviceLike | None = None,
) -> Tensor:
    """Create a tensor from nested lists, a scalar, a numpy array, a Tensor or a torch tensor.

    The data is always copied. With ``dtype=None`` Python floats become float32, numpy/torch
    float32 and float64 arrays (and numpy scalars) keep their dtype, integers become int64 and
    booleans bool. Nested sequences are read as numbers whatever their items' types: a list of
    numpy float64 scalars becomes float32, where ``torch.tensor`` keeps float64 (pass
    ``dtype="float64"``, or ``np.asarray`` the list first); but a list or tuple (nested or not)
    whose every element is a float64 tensor (torchlean or torch, any shape) stays float64 (as
    torch keeps 0-d ones; ``torch.tensor`` refuses a list of multi-element tensors), and one that
    mixes them with numbers or other dtypes is float32 (torch: float64).
    ``device`` is where the copy lives: ``None`` or ``"cpu"`` (numpy storage), ``"cuda"`` or
    ``"cuda:N"`` (torch storage on that CUDA device).

    The result is a new leaf: no gradient history is carried over. A torchlean or torch tensor
    that requires grad, given alone (or torch ones in a list), is copied detached, as
    ``torch.tensor(t)`` copies it (torch adds a warning); a list holding a torchlean tensor that
    requires grad is refused (``TensorError``, naming ``.detach()``, or torchlean ops, ``tl.concat``
    and ``tl.reshape``, to keep the history; torch copies it with a warning). ``data.minibatches``,
    ``Trainer.fit`` and item assignment refuse a torch tensor that requires grad instead.

    With ``dtype="int64"``, float data is truncated toward zero (as ``torch.tensor``), and a value
    int64 cannot hold is refused, as torch refuses it ("value cannot be converted to type int64
    without overflow"), never wrapped to ``-2**63`` as numpy's cast would. A Python integer beyond
    int64 (``2**70``) is refused without a dtype, as torch refuses it ("Overflow when unpacking
    long long"), and converted for a float dtype that holds it (``dtype="float64"``).

    Raises:
        TensorError: unsupported dtype (e.g. float16, complex, strings), ragged nested data,
            ``requires_grad`` on an integer/bool tensor, or for the int64 dtype a value it cannot
            hold: ``value nan does not fit the int64 tensor dtype (accepted: finite numbers in
            [-2**63, 2**63), truncated toward zero)`` (NaN, ``±inf``, ``1e30``), ``integer
            9223372036854775808 does not fit the int64 tensor dtype ...``
            (:func:`~torchlean._tensor_data._require_int64_fits`), ``the integer
            1180591620717411303424 does not fit the int64 tensor dtype ...``
            (:func:`~torchlean._tensor_data._object_numbers`).
        TensorTypeError: ``requires_grad`` is not a bool; data that is not numeric (``None``, a
            string, bytes, a dict, an object, a list or numpy array holding one; torch refuses
            them too, numpy would parse ``'1.5'``): ``cannot create a tensor from None of type
            NoneType: it is not numeric data (accepted: ...)``, also a ``TensorError``.
        DeviceError: an unknown device, or CUDA requested where it is unusable
            (:func:`resolve_device`).
    """
    return Tensor(data, requires_grad=requires_grad, dtype=dtype, device=device)


def from_torch(t: torch.Tensor, requires_grad: BoolLike = False) -> Tensor:
    """Copy a ``torch.Tensor`` (any device, any strides, a ``torch.nn.Parameter`` too; detached,
    so ``t.requires_grad`` is not carried over) into a new C-contiguous CPU leaf tensor of the
    same dtype (integer types become int64); ``requires_grad`` sets the new leaf's flag.

    Raises:
        TensorTypeError: ``t`` is not a ``torch.Tensor`` (``from_torch() needs a torch.Tensor; got
            array([1., 1.]) of type ndarray ...``; other data goes through :func:`tensor`), or
            ``requires_grad`` is not a bool.
        TensorError: a dtype other than float32, float64, an integer type or bool (``unsupported
            tensor dtype torch.bfloat16 (supported: float32 | float64 | int64 | bool)``), a
            meta, sparse or nested tensor, or a ``torch.uint64`` tensor holding a value above
            ``2**63 - 1``, which int64 cannot hold (``the integer 9223372036854775808 does not
            fit the int64 tensor dtype ...``).
    """
    return Tensor(_torch_values(t), requires_grad=requires_grad)


def _no_reduction_dtype(t: Tensor, method: str, dtype: object) -> None:
    """Refuse torch's ``t.sum(dtype=...)`` / ``t.mean(dtype=...)`` for a dtype other than the
    tensor's own (None, or the tensor's dtype in any spelling, passes: a no-op in torch too),
    naming the conversion: torchlean reduces in the tensor's dtype and never promotes.

    Raises:
        TensorTypeError: another ``dtype``.
    """
    if dtype is None:
        return
    unresolved = ""
    try:
        target: np.dtype[Any] | None = resolve_dtype(dtype)
    except TensorError as error:  # never equal: numpy's == would read "float" as float64 (review146 F4)
        target, unresolved = None, f" ({error})"
    if target is not None and target == t.dtype:  # np.dtype(None) is float64: never compare None
        return
    convert = (
        f"; convert first, torchlean.tensor(t.numpy(), dtype='{target.name}').{method}() (a new leaf: no "
        "gradient flows through the conversion)"
        if target is not None and target.kind == "f" else ""
    )
    accepted = f"dtype=None or {t.dtype}" if t.dtype.kind == "f" else "dtype=None, on a float tensor"
    raise TensorTypeError(
        f"Tensor.{method}(dtype={dtype!r}){unresolved}: torchlean reduces in the tensor's own dtype "
        f"({t.dtype}) and never promotes (accepted: {accepted}){convert}"
    )


def _required_dim(method: str, dim: IntLike) -> IntLike:
    """``dim`` for ``Tensor.softmax``/``log_softmax``, where torch requires it (review146 F3).

    Raises:
        TensorTypeError: ``dim`` is None.
    """
    if dim is None:
        raise TensorTypeError(
            f"Tensor.{method}: dim must be an integer; got None (torch.Tensor.{method} requires it; "
            "dim=-1 for the last axis)"
        )
    return dim
