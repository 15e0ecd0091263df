"""What :class:`torchlean.tensor.Tensor` says about the torch ``Tensor`` attributes it lacks.

:data:`_TORCH_METHOD_HINTS` maps each such name that ported code reaches for most to the way to
write it here; ``Tensor.__getattr__`` appends it to the ``AttributeError``. Data only: this module
imports nothing from torchlean.
"""

from __future__ import annotations

from typing import Final

_NO_REDUCTION = (
    "the backend catalog has no {op} reduction, so it cannot carry a gradient; for values use "
    "np.{op}(t.numpy(), axis)"
)
_NO_DTYPE_OP = (
    "a dtype change is not an op of the backend catalog; make a converted copy with "
    "torchlean.tensor(t.numpy(), dtype={dtype!r})"
)

_IN_PLACE_ARITHMETIC = (
    "in-place arithmetic is the operator here: t {op}= other (as in torch, under torchlean.no_grad() "
    "for a leaf that requires grad, e.g. a parameter; on a tensor with a tape history, whose in-place "
    "update torchlean's tape does not record, write t = t {op} other)"
)
_IN_PLACE_METHOD = (
    "torchlean's tape records no in-place op: write t = t.{call} (a new tensor), or t.copy_(t.{call}) to "
    "write into t's storage (under torchlean.no_grad() when t requires grad)"
)
_NO_SELECT = "the backend catalog has no select op"
_VALUES_ONLY = (
    "the backend catalog has no {op} (its gradient is 0 almost everywhere); for values, "
    "torchlean.tensor(np.{op}(t.numpy()))"
)
_NO_TEST = "a test is not an op of the backend catalog; for values, np.{op}(t.numpy())"
_NO_COMPARISON = (
    "elementwise comparison is not an op of the backend catalog; compare the values: "
    "t.numpy() {symbol} other.numpy()"
)
_NO_MODULAR = (
    "{what} is not an op of the backend catalog (its gradient is 0 or undefined almost everywhere); "
    "for values, torchlean.tensor(np.{numpy}({operands}))"
)
_OPERANDS = "t.numpy(), {other}"
"""The numpy operands of the hints for ``t <op> other``; ``Tensor`` puts ``other.numpy()`` for a
Tensor ``other`` in place of ``{other}``, else ``other`` (a Python number or a numpy array, which
numpy 2 promotes as torch does: a float32 ``t`` and a Python float stay float32, an int64 ``t``
and a float give floats; review84 F3: ``np.asarray(other, t.dtype)`` truncated ``2.5`` for int64)."""
_REFLECTED = "other, t.numpy()"
"""The same for the reflected ``other <op> t`` (``other`` is then never a Tensor)."""
_NO_LOGIC = (
    "boolean and bitwise logic are not ops of the backend catalog; combine the masks in numpy: "
    "torchlean.tensor(np.{numpy}(t.numpy(), np.asarray(other)))"
)
_NEW_TENSOR = "torchlean.tensor({data}, dtype=t.dtype, device=t.device)"
_SLICES = "[t[i:i + size] for i in range(0, len(t), size)]"

_TORCH_METHOD_HINTS: Final[dict[str, str]] = {
    # reductions and indices the catalog lacks
    "max": _NO_REDUCTION.format(op="max"),
    "min": _NO_REDUCTION.format(op="min"),
    "amax": _NO_REDUCTION.format(op="amax"),
    "amin": _NO_REDUCTION.format(op="amin"),
    "argmax": "an index has no gradient and the catalog has no argmax; use np.argmax(t.numpy(), axis)",
    "argmin": "an index has no gradient and the catalog has no argmin; use np.argmin(t.numpy(), axis)",
    "argsort": "an index has no gradient and the catalog has no sort; use np.argsort(t.numpy(), axis)",
    "sort": "the backend catalog has no sort op; for values, np.sort(t.numpy(), axis)",
    "topk": (
        "the backend catalog has no sort op; the indices of the k largest along the last axis are "
        "np.argsort(-t.numpy(), axis=-1)[..., :k]"
    ),
    "norm": (
        "compose it from catalog ops: (t * t).sum().sqrt() for the 2-norm (its gradient is NaN at t = 0, "
        "where torch's norm gives 0)"
    ),
    "var": (
        "compose it: ((t - t.mean(dim, keepdim=True)).square()).sum(dim) / (n - 1), torch's default "
        "unbiased variance over n values (divide by n for correction=0)"
    ),
    "std": (
        "compose it: (((t - t.mean(dim, keepdim=True)).square()).sum(dim) / (n - 1)).sqrt(), torch's "
        "default unbiased standard deviation over n values"
    ),
    "prod": (
        "the backend catalog has no product reduction; for values, np.prod(t.numpy(), axis); for t > 0, "
        "t.log().sum(dim).exp() carries a gradient"
    ),
    "cumsum": (
        "the backend catalog has no cumsum; along the last axis, "
        "t @ torchlean.tensor(np.triu(np.ones((t.shape[-1], t.shape[-1]))), dtype=t.dtype) is a matmul "
        "that carries a gradient (finite t); for values, np.cumsum(t.numpy(), axis)"
    ),
    "all": _NO_TEST.format(op="all"),
    "any": _NO_TEST.format(op="any"),
    "isnan": _NO_TEST.format(op="isnan"),
    "isinf": _NO_TEST.format(op="isinf"),
    "isfinite": _NO_TEST.format(op="isfinite"),
    **{
        name: _NO_COMPARISON.format(symbol=symbol)
        for name, symbol in (("eq", "=="), ("ne", "!="), ("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">="))
    },
    **{name: _VALUES_ONLY.format(op=name) for name in ("floor", "ceil", "round", "trunc", "sign")},
    **{
        name: _NO_MODULAR.format(what=what, numpy=name, operands="t.numpy(), other")
        + " (other.numpy() for a Tensor other)"
        for name, what in (
            ("floor_divide", "floor division"), ("remainder", "the remainder (torch's %)"), ("fmod", "fmod")
        )
    },
    **{
        name: _NO_LOGIC.format(numpy=name)
        for name in ("logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor")
    },
    "logical_not": (
        "boolean logic is not an op of the backend catalog; compute it in numpy: "
        "torchlean.tensor(np.logical_not(t.numpy()))"
    ),
    # math the catalog composes
    "maximum": "use the function torchlean.maximum(t, other) (torch.maximum)",
    "minimum": "use the function torchlean.minimum(t, other) (torch.minimum)",
    "log1p": (
        "the backend catalog has no log1p: (1 + t).log() loses precision for small |t| (1 + t "
        "rounds); for t > 0, torchlean.softplus(t.log()) is accurate to within about |ln t| / 3 ulps "
        "(16 at float32 t = 1e-20, 143 at float64 t = 1e-300; torch.log1p's is 0.5)"
    ),
    "rsqrt": "use t.sqrt().reciprocal() (two roundings)",
    "tan": "use t.sin() / t.cos()",
    "mm": "use t @ other (t.matmul(other); mm is its case of two 2-D tensors)",
    "bmm": "use t @ other (t.matmul(other); bmm is its case of two 3-D tensors)",
    "mT": "use t.transpose(-2, -1)",
    "view_as": "use t.reshape_as(other), which is t.reshape(other.shape)",
    # selections
    "where": (
        f"{_NO_SELECT}; as torch.where(condition, t, other) for finite t and other: "
        "t * keep + other * (1 - keep) with keep = torchlean.tensor(condition, dtype=t.dtype) "
        "(condition a numpy bool array)"
    ),
    "masked_fill": (
        f"{_NO_SELECT}; before a softmax, masked_fill(mask, float('-inf')).softmax(dim) is "
        "torchlean.hard_masked_softmax(t, ~mask, dim) (a row masked whole gives zeros where torch gives "
        "NaN); for finite t and value, t * keep + value * (1 - keep) with "
        "keep = torchlean.tensor(~mask, dtype=t.dtype) (mask a numpy bool array, True where filled)"
    ),
    "index_select": (
        "t.gather(dim, i) with the 1-D index broadcast along the other axes, gradients included: for "
        "dim 1 of a 2-D t, t.gather(1, np.broadcast_to(index, (t.shape[0], len(index)))); for rows "
        "(dim 0) of a 2-D t, torchlean.embedding(index, t) is t[index]"
    ),
    "unbind": (
        "list(t) gives the slices along axis 0 (each t[i] on the tape); along axis 1, "
        "[t[:, i] for i in range(t.shape[1])]"
    ),
    "split": f"slice it along axis 0: {_SLICES} (each slice on the tape)",
    "chunk": f"slice it along axis 0: {_SLICES} with size = -(-len(t) // chunks) (each slice on the tape)",
    "repeat": (
        "torchlean.concat([t] * n, axis) repeats t n times along axis (torch's repeat takes a count "
        "per axis)"
    ),
    # dtypes, devices, flags
    "float": _NO_DTYPE_OP.format(dtype="float32"),
    "double": _NO_DTYPE_OP.format(dtype="float64"),
    "half": (
        "float16 is not a torchlean dtype (it computes in float32 and float64); the nearest is "
        "torchlean.tensor(t.numpy(), dtype='float32')"
    ),
    "long": _NO_DTYPE_OP.format(dtype="int64"),
    "int": _NO_DTYPE_OP.format(dtype="int64") + " (torchlean's integer dtype; torch's int() gives int32)",
    "bool": _NO_DTYPE_OP.format(dtype="bool"),
    "type_as": (
        "a dtype change is not an op of the backend catalog; make a converted copy with "
        "torchlean.tensor(t.numpy(), dtype=other.dtype)"
    ),
    "cpu": "a device copy is t.to('cpu') (t itself when it is on cpu already)",
    "cuda": "a device copy is t.to('cuda') (or 'cuda:N'; t itself when it is there already)",
    "is_cuda": "use t.device.startswith('cuda') (t.device is 'cpu' or 'cuda:N')",
    "is_floating_point": (
        "use t.dtype.kind == 'f' (t.dtype is a numpy dtype: float32, float64, int64 or bool)"
    ),
    "is_contiguous": "every torchlean tensor is C-contiguous, so it is True (t.contiguous() is t)",
    "data": "t.detach() is the same storage cut from the tape, as torch's .data",
    "detach_": "rebind instead: t = t.detach() (there is no in-place detach)",
    "retain_grad": (
        "backward() keeps gradients of leaves only; to read a non-leaf t's, cut the graph there: "
        "h = t.detach().requires_grad_(), then loss = f(h) (the rest of the computation, from h) and "
        "loss.backward(): h.grad is t's gradient, and t.backward(h.grad) carries it on to the leaves "
        "before t"
    ),
    "register_hook": (
        "the tape has no hooks (gradients are first order, read after backward()); to see or change "
        "a non-leaf t's gradient, cut the graph there: h = t.detach().requires_grad_(), loss = f(h), "
        "loss.backward(), then edit h.grad and call t.backward(h.grad)"
    ),
    # new tensors
    "new_zeros": "use " + _NEW_TENSOR.format(data="np.zeros(shape)"),
    "new_ones": "use " + _NEW_TENSOR.format(data="np.ones(shape)"),
    "new_full": "use " + _NEW_TENSOR.format(data="np.full(shape, value)"),
    "new_tensor": "use " + _NEW_TENSOR.format(data="data"),
    # in-place updates
    **{
        name: _IN_PLACE_ARITHMETIC.format(op=op)
        for name, op in (("add_", "+"), ("sub_", "-"), ("mul_", "*"), ("div_", "/"))
    },
    **{
        f"{name}_": _IN_PLACE_METHOD.format(call=f"{name}()")
        for name in (
            "relu", "exp", "log", "sqrt", "abs", "neg", "tanh", "sigmoid", "sin", "cos", "reciprocal"
        )
    },
    "clamp_": _IN_PLACE_METHOD.format(call="clamp(lo, hi)"),
    "scatter_add_": _IN_PLACE_METHOD.format(call="scatter_add(dim, index, src)"),
    "clip_": _IN_PLACE_METHOD.format(call="clamp(lo, hi)"),
    "fill_": (
        "copy_ writes a value, broadcast: t.copy_(value) (under torchlean.no_grad() when t requires grad)"
    ),
    "normal_": (
        "draw with numpy and write with copy_: t.copy_(np.random.default_rng(0).normal(0.0, 1.0, t.shape)) "
        "(mean 0, std 1; under torchlean.no_grad() when t requires grad)"
    ),
    "uniform_": (
        "draw with numpy and write with copy_: t.copy_(np.random.default_rng(0).uniform(-1.0, 1.0, t.shape)) "
        "(from -1 to 1; under torchlean.no_grad() when t requires grad)"
    ),
    "masked_fill_": (
        "write by index: t[mask] = value (mask a numpy bool array of t's shape, True where filled; under "
        "torchlean.no_grad() when t requires grad)"
    ),
}
"""Hints for the torch ``Tensor`` attributes torchlean's ``Tensor`` lacks that ported code reaches
for most, by name: each names code that runs here (tests/runtime/test_tensor_method_hints.py runs
every one). Families: reductions, sorts and tests the catalog lacks; math and selections composed
from catalog ops; dtype and device conversions and flags; new tensors; in-place updates."""

def _modular(what: str, numpy: str) -> dict[str, str]:
    """The hints of a modular operator ``what`` and of its reflected form (``r`` + its key)."""
    return {
        "": _NO_MODULAR.format(what=what, numpy=numpy, operands=_OPERANDS),
        "r": _NO_MODULAR.format(what=what, numpy=numpy, operands=_REFLECTED),
    }


OPERATOR_HINTS: Final[dict[str, str]] = {
    **{
        prefix + symbol: hint
        for symbol, what, numpy in (
            ("//", "`//` (floor division)", "floor_divide"),
            ("%", "`%` (the remainder, the divisor's sign as in torch)", "remainder"),
        )
        for prefix, hint in _modular(what, numpy).items()
    },
    **{
        prefix + "divmod": (
            "divmod() is not an op of the backend catalog (its gradient is 0 or undefined almost "
            f"everywhere); for values, np.divmod({operands})"
        )
        for prefix, operands in (("", _OPERANDS), ("r", _REFLECTED))
    },
    "round": _VALUES_ONLY.format(op="round"),
    "~": (
        "`~` (logical not) is not an op of the backend catalog; negate the mask in numpy: "
        "torchlean.tensor(~t.numpy())"
    ),
    **{
        prefix + symbol: (
            f"`{symbol}` ({name}) is not an op of the backend catalog; combine the masks in numpy: "
            f"torchlean.tensor({operands})"
        )
        for symbol, name in (("&", "and"), ("|", "or"), ("^", "exclusive or"))
        for prefix, operands in (
            ("", f"t.numpy() {symbol} np.asarray(other)"),
            ("r", f"np.asarray(other) {symbol} t.numpy()"),
        )
    },
}
"""What the Python operators ``Tensor`` refuses say (``t // 2``, ``mask & other``, ``round(t)``);
a key with an ``r`` before the symbol is the reflected form (``2 // t``, ``mask & t``), whose
numpy code keeps the operands in their order."""
