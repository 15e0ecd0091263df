"""User-facing tensor operations; each one runs on the kernel its session accepted for it.

Every function here lowers to one or more :class:`~torchlean.backend.vocabulary.BackendOp` s and
calls :func:`torchlean.autograd.session.run_op` for each, so the current eager session plans,
accepts, binds and records the capsule, and the tape records the node (anchor-runtime.md §1.8).
The docstring of each function names the ops it records. Semantics mirror the PyTorch function
named in each docstring; the reference kernels' guards refuse bad input with a ``GuardError``.

Operands (one rule, checked in one place):

* Tensor arguments must be :class:`~torchlean.tensor.Tensor` s (``None`` where the argument is
  optional). The only exceptions (where torch accepts Python numbers) are the operands of the
  binary arithmetic functions ``add``, ``sub``, ``mul``, ``div``, ``maximum``, ``minimum`` (and so
  the operators ``+ - * /``) and ``mse_loss``: there one operand may be a Python number, a numeric
  numpy array or a nested list of numbers, and becomes a constant of the other (tensor) operand's
  dtype on its device (for ``mse_loss``, a number is filled to the tensor's shape). A Python
  integer must fit that dtype (``x * 10**400`` is a ``TensorError``).
  Masks (``hard_masked_softmax``, ``scaled_dot_product_attention``) and index arrays
  (``gather``, ``scatter_add``, ``cross_entropy`` targets) may also be array-likes; they land on
  the device of the tensor they apply to, uncast (the kernel guard refuses a wrong dtype), except
  that integer index data becomes int64 (a uint64 value above ``2**63 - 1`` is refused with the
  guard's out-of-range message naming it, never wrapped); ragged nested lists there are refused
  with a ``TensorError`` naming the op and the argument.
  Anything else in a tensor position (a numpy array for ``relu``, ``x @ 3.0``, a list, ``None``
  where the input is not optional) is refused by
  :func:`torchlean.autograd.dispatch.check_operands`, the boundary every op passes, with a
  :class:`~torchlean.tensor.TensorTypeError` (a ``TensorError`` and a ``TypeError``) naming the op,
  the input position and the type received. ``None`` stands for an absent bias, affine weight,
  running statistic or attention mask (``dispatch.OPTIONAL_INPUTS``).
* A constant must be numeric: ``None``, strings, objects and complex numbers are refused with a
  ``TensorTypeError``, ragged nested lists with a ``TensorError``. A ``torch.Tensor`` is data like
  a numpy array (its values copied, cast to the other operand's dtype); one that requires grad is
  refused with a ``TensorTypeError``, since torch's autograd history cannot reach torchlean's tape
  (torch itself refuses to turn such a tensor into numpy).
* Integer parameters (axes, shapes, permutations, slice bounds, ``groups``, seeds) must be Python
  or numpy integers; floats and bools are refused with a ``TensorTypeError`` rather than truncated
  (the kernel guards apply the same rule to the window parameters they receive unconverted,
  refusing with a ``GuardTypeError``, also a ``TypeError``, and refusing with a ``GuardError`` a
  window parameter above ``2**31 - 1`` for the pools and ``conv_transpose``, above ``2**63 - 1``
  for ``conv``, as torch: see
  :func:`~torchlean.backend.providers.reference.spatial_guards.window_parameter_limit`).
  Axes are refused when out of range, never wrapped; seeds must be below ``2**64``.
  Real parameters (factors, bounds, ``eps``, probabilities, ``scale``) must be real numbers (bool
  refused); they are not parsed from strings.
* Flags (``keepdims``, ``training``, ``is_causal``) must be bools (Python or numpy), as torch
  requires.
* The annotations say the same to a type checker: integer parameters are
  :data:`~torchlean.tensor.IntLike` (``int | np.integer``, or a sequence of them), flags
  :data:`~torchlean.tensor.BoolLike` (``bool | np.bool_``) and real parameters
  :data:`~torchlean.tensor.RealLike` (``float | np.floating``, so a ``np.float32`` passes too).

Dtypes, shapes and errors (shared by every function below, under every CPU profile; a function's
``Raises`` lists at least what it adds): tensor inputs are float32 or float64 and results keep that
dtype. An int64 or bool tensor where a float one is expected (``relu``, ``matmul``, ``gather`` of
int64 data) is refused by the kernel guard with a ``GuardError`` (a ``ValueError``) naming the op,
the input and its dtype (``relu: input x has dtype int64; accepted: float32 or float64``); the
only non-float inputs are boolean masks (a non-boolean mask is a ``GuardTypeError``), int64
indices, and int64 or bool data of the shape ops ``reshape``, ``permute``/``transpose``,
``broadcast_to``, ``concat`` and slicing on ``cpu`` (they move values without arithmetic: a label
tensor or a mask may be sliced). The kernels never promote dtypes: float32, float64 and int64 tensors do
not mix (``GuardError``); tensors on different devices do not mix either
(``DeviceError``; move them with ``Tensor.to``). Shapes that do not fit (operands that do not
broadcast, contracted extents that differ, an axis out of range) are refused by the guard with a
``GuardError`` naming the shapes and the accepted ones. Elementwise functions return a tensor of
x's shape; the binary ones (``add``, ``sub``, ``mul``, ``div``, ``maximum``, ``minimum``) the
broadcast shape of their operands (numpy/PyTorch broadcasting). Values outside a function's
domain are not errors: they give torch's IEEE result (``log(-1)`` is NaN, ``log(0)`` and
``inv(0)`` are ``-inf``/``inf``).

Zero-size inputs (a batch, sequence or feature axis of extent 0) give torch's result under every
CPU profile: an empty tensor, ``0`` for a sum and NaN for a mean over nothing, the bias alone
for a ``linear`` with no input features, zeros for an attention row without keys; gradients
have their inputs' shapes (zeros where an input only met empty axes, except a divisor that is
0 or NaN, or whose square underflows (``1e-30`` in float32): ``div`` records ``inv``, whose
gradient there is NaN, where torch's ``div`` gives 0). Where torch refuses an
empty axis (pool channels or spatial extents, a convolution's spatial extents with a non-empty
batch, empty weights), the guard refuses it with a ``GuardError``. A few calls torch answers are
refused too, each with torch's behaviour as evidence in ``tests/runtime/test_zero_size.py``: a
convolution input with 0 channels (torch returns 0 output channels), a transposed convolution
of an empty batch whose output size would be 0 (torch returns shape ``(0, C_out, 0)``), and
mis-shaped operands
that torch accepts only because they are empty (an empty ``gather``/``scatter_add`` index that
does not fit, a 1-D empty tensor in ``concat``, a ``batch_norm`` weight of the wrong length).

Lowerings that record more than one op (the catalog has no division, negation, select or
cross-entropy op):

* ``div(a, b)`` → ``inv`` then ``mul`` (by a finite number whose reciprocal is normal in the
  tensor's dtype: ``scale`` by its reciprocal; by zero, ``±inf`` or ``nan``, ``inv`` of the
  constant then ``mul``, so ``x / 0`` is ``±inf``/``nan`` as in torch; by divisors whose
  reciprocal overflows or is subnormal, ``mul`` by exact powers of two around them first:
  :func:`div`);
* ``neg(x)`` → ``scale`` by -1; ``mul`` by a finite number → ``scale``, by ``±inf`` or ``nan``
  (which ``scale`` refuses) → ``mul`` with a constant tensor, so the values are torch's;
* ``x[i]`` (an integer index) and ``x[None]`` of a tensor of rank 1 or more → ``slice`` then
  ``reshape`` (``reshape`` alone for ``None`` on a 0-d tensor);
* ``cross_entropy`` with class indices → ``log_softmax``, ``gather``, ``reduce_mean``, ``sub``
  (``0 - mean``: +0.0 for a zero loss, as torch); with class probabilities → ``log_softmax``,
  ``mul``, ``reduce_sum``, ``reduce_mean``, ``sub`` (review191 F1);
* ``dropout`` → ``bernoulli_mask``, ``mul``, ``scale``.

The ops live in private submodules, one job each (this package re-exports them; import them from
here): ``_params`` (integer, real and axis parameters), ``_operands`` (constants, masks, index
arrays), ``_arithmetic`` (``add``, ``sub``, ``mul``, ``div``, ``maximum``, ``minimum``, ``scale``,
``inv``, ``neg``), ``_pointwise`` (unary elementwise functions, ``clamp``, ``safe_log``),
``_reductions`` (``reduce_sum``, ``reduce_mean``, ``logsumexp``), ``_shape`` (``reshape``,
``permute``, ``transpose``, ``broadcast_to``, ``concat``), ``_indexing`` (``slice``, ``getitem``,
``gather``, ``scatter_add``), ``_attention`` (the softmaxes and ``scaled_dot_product_attention``),
``_contractions`` (``matmul``, ``linear``), ``_losses`` (``mse_loss``, ``cross_entropy``),
``_embedding``, ``_normalization`` (``layer_norm``, ``batch_norm``), ``_convolution`` (``conv``,
``conv_transpose``, the pools) and ``_random`` (``rand_uniform``, ``bernoulli_mask``, ``dropout``).
"""

from __future__ import annotations

from torchlean.functional._arithmetic import add, div, inv, maximum, minimum, mul, neg, scale, sub
from torchlean.functional._attention import (
    hard_masked_softmax,
    log_softmax,
    scaled_dot_product_attention,
    softmax,
)
from torchlean.functional._contractions import linear, matmul
from torchlean.functional._convolution import avg_pool, conv, conv_transpose, max_pool, smooth_max_pool
from torchlean.functional._embedding import embedding
from torchlean.functional._indexing import _check_slice as _check_slice
from torchlean.functional._indexing import _index_tuple as _index_tuple
from torchlean.functional._indexing import _is_uint8_index as _is_uint8_index
from torchlean.functional._indexing import gather, getitem, scatter_add, slice
from torchlean.functional._losses import cross_entropy, mse_loss
from torchlean.functional._normalization import batch_norm, layer_norm
from torchlean.functional._operands import Operand as Operand
from torchlean.functional._operands import _constant_values as _constant_values
from torchlean.functional._params import Axes as Axes
from torchlean.functional._params import IntOrTuple as IntOrTuple
from torchlean.functional._params import _int as _int
from torchlean.functional._params import _ints as _ints
from torchlean.functional._pointwise import (
    abs,
    clamp,
    cos,
    exp,
    gelu,
    log,
    relu,
    safe_log,
    sigmoid,
    sin,
    softplus,
    sqrt,
    tanh,
)
from torchlean.functional._random import bernoulli_mask, dropout, rand_uniform
from torchlean.functional._reductions import logsumexp, reduce_mean, reduce_sum
from torchlean.functional._shape import broadcast_to, concat, permute, reshape, transpose

# The private helpers above (``_constant_values``, ``_check_slice``, ``_index_tuple``,
# ``_is_uint8_index``, ``_int``, ``_ints``) are re-exported for :mod:`torchlean.tensor` and
# :mod:`torchlean._tensor_writes`, which reach them as ``functional._name``; the type aliases
# ``Operand``, ``Axes`` and ``IntOrTuple`` as before the split.

__all__ = [
    "abs",
    "add",
    "avg_pool",
    "batch_norm",
    "bernoulli_mask",
    "broadcast_to",
    "clamp",
    "concat",
    "conv",
    "conv_transpose",
    "cos",
    "cross_entropy",
    "div",
    "dropout",
    "embedding",
    "exp",
    "gather",
    "gelu",
    "getitem",
    "hard_masked_softmax",
    "inv",
    "layer_norm",
    "linear",
    "log",
    "log_softmax",
    "logsumexp",
    "matmul",
    "max_pool",
    "maximum",
    "minimum",
    "mse_loss",
    "mul",
    "neg",
    "permute",
    "rand_uniform",
    "reduce_mean",
    "reduce_sum",
    "relu",
    "reshape",
    "safe_log",
    "scale",
    "scaled_dot_product_attention",
    "scatter_add",
    "sigmoid",
    "sin",
    "slice",
    "smooth_max_pool",
    "softmax",
    "softplus",
    "sqrt",
    "sub",
    "tanh",
    "transpose",
]
