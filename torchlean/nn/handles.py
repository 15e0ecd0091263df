"""The handles a layer's forward program gets under graph recording (:class:`Node`): an IR node id
or a model parameter behind a value that takes part in no Python operation, so a program written
with Python operators, numpy or Tensor attributes on its values is refused under typed-graph
execution, naming the ``ops`` method to write, rather than computed on node ids (review173 F1,
review174 F1, review175 F1)."""

from __future__ import annotations

from typing import Any

from torchlean.ir.builder import Param

__all__ = ["Node"]


class Node:
    """A value of a layer's forward program under graph recording: an IR node id, or a model
    parameter (a deferred constant), behind a handle that takes part in no Python operation. Eager
    values are Tensors, whose ``+`` is ``add``; on a bare node id ``h + x`` added the ids and
    silently named another node, so a residual written with ``+`` was dropped from the typed graph
    (review173 F1), and an id's comparisons and truth value (``if x``: node 0 is false) decided
    the program as silently (review174 F1). Arithmetic, comparisons, truth value, ``int()``,
    indexing and iteration refuse with the ``ops`` method to use, as do Tensor attributes
    (``.shape``, ``.reshape``: an AttributeError, so ``hasattr`` answers False); a handle hashes by
    identity."""

    __slots__ = ("ref",)

    def __init__(self, ref: int | Param) -> None:
        self.ref = ref

    def _refuse(self, what: str, method: str | None = None) -> Any:
        from torchlean.nn.lowering import LoweringTypeError  # lowering imports this module

        remedy = f"write ops.{method}" if method else "write it with the ops methods"
        raise LoweringTypeError(
            f"a layer's forward uses {what} on a graph value ({self!r}): under typed-graph execution "
            f"values are graph nodes, so {remedy} (the ops methods run in both execution modes; Python "
            "operators work on eager Tensors only)"
        )

    def __repr__(self) -> str:
        ref = self.ref
        return f"parameter {ref.name or ref.key}" if isinstance(ref, Param) else f"node {ref}"

    def __add__(self, other: object) -> Any:
        return self._refuse("the operator +", "add(a, b)")

    __radd__ = __add__

    def __sub__(self, other: object) -> Any:
        return self._refuse("the operator -", "add(a, ops.scale(b, -1.0))")

    __rsub__ = __sub__

    def __mul__(self, other: object) -> Any:
        return self._refuse("the operator *", "mul(a, b) or ops.scale(x, factor)")

    __rmul__ = __mul__

    def __truediv__(self, other: object) -> Any:
        return self._refuse("the operator /", "scale(x, 1 / factor)")

    def __rtruediv__(self, other: object) -> Any:
        return self._refuse("the operator / (a quotient by a graph value)")

    def __floordiv__(self, other: object) -> Any:
        return self._refuse("the operator //")

    __rfloordiv__ = __floordiv__

    def __mod__(self, other: object) -> Any:
        return self._refuse("the operator %")

    __rmod__ = __mod__

    def __pow__(self, other: object, modulo: object = None) -> Any:
        return self._refuse("the operator **", "mul(x, x) for a square")

    def __rpow__(self, other: object, modulo: object = None) -> Any:
        return self._refuse("the operator ** (a power with a graph value as its exponent)")

    def __matmul__(self, other: object) -> Any:
        return self._refuse("the operator @", "matmul(a, b)")

    __rmatmul__ = __matmul__

    def __and__(self, other: object) -> Any:
        return self._refuse("a bitwise operator")

    __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = __lshift__ = __rshift__ = __and__

    def __neg__(self) -> Any:
        return self._refuse("unary -", "scale(x, -1.0)")

    def __pos__(self) -> Any:
        return self._refuse("unary +")

    def __abs__(self) -> Any:
        return self._refuse("abs()")

    def __invert__(self) -> Any:
        return self._refuse("~")

    def __lt__(self, other: object) -> Any:
        return self._refuse("a comparison")

    __le__ = __gt__ = __ge__ = __lt__

    def __eq__(self, other: object) -> Any:
        return self._refuse("== (compare shapes with ops.shape(x))")

    def __ne__(self, other: object) -> Any:
        return self._refuse("!= (compare shapes with ops.shape(x))")

    __hash__ = object.__hash__

    def __bool__(self) -> bool:
        return bool(self._refuse("its truth value (an if, and, or, not)"))

    def __int__(self) -> int:
        return int(self._refuse("int()"))

    def __index__(self) -> int:
        return int(self._refuse("it as an integer (an index, range(), a shift)"))

    def __float__(self) -> float:
        return float(self._refuse("float() (or a math function)"))

    def __complex__(self) -> complex:
        return complex(self._refuse("complex()"))

    def __round__(self, ndigits: object = None) -> Any:
        return self._refuse("round()")

    def __trunc__(self) -> Any:
        return self._refuse("math.trunc()")

    def __floor__(self) -> Any:
        return self._refuse("math.floor()")

    def __ceil__(self) -> Any:
        return self._refuse("math.ceil()")

    def __divmod__(self, other: object) -> Any:
        return self._refuse("divmod()")

    __rdivmod__ = __divmod__

    def __len__(self) -> int:
        return int(self._refuse("len()", "shape(x)"))

    def __iter__(self) -> Any:
        return self._refuse("iteration")

    def __getitem__(self, key: object) -> Any:
        return self._refuse("indexing")

    def __array__(self, *args: object, **kwargs: object) -> Any:
        return self._refuse("numpy (conversion to an array)")

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: object, **kwargs: object) -> Any:
        # np.exp(h), h * np.float64(2): numpy's ufuncs ask the handle first (review175 F1)
        return self._refuse(f"numpy's {getattr(ufunc, '__name__', ufunc)}")

    def __array_function__(self, func: Any, types: object, args: object, kwargs: object) -> Any:
        # np.sum(h) handed the handle back, so ops.mul(x, np.sum(p)) multiplied by p (review175 F1)
        return self._refuse(f"numpy's {getattr(func, '__name__', func)}")

    def __getattr__(self, name: str) -> Any:
        """Tensor attributes an eager program may use (``h.reshape(-1)``, ``h.T``, ``h.sum()``),
        refused naming the ops method; an AttributeError still, so ``hasattr`` answers False."""
        if name.startswith("__") or name == "ref":  # protocol probes; ref before it is set (a copy)
            raise AttributeError(name)
        method = _TENSOR_ATTRIBUTES.get(name)
        remedy = f"write ops.{method}" if method else "write it with the ops methods"
        if name == "dtype":  # no ops method gives it (review177 F1)
            remedy = "take the model's dtype, which every graph value has"
        raise AttributeError(
            f"a layer's forward reads .{name} of a graph value ({self!r}): under typed-graph execution "
            f"values are graph nodes, so {remedy} (the ops methods run in both execution modes)"
        )


_TENSOR_ATTRIBUTES = {
    "reshape": "reshape(x, shape)", "view": "reshape(x, shape)", "T": "permute(x, reversed axes)",
    "transpose": "transpose(x, axis1, axis2)", "permute": "permute(x, perm)", "sum": "sum(x) or "
    "ops.reduce_sum(x, axis)", "mean": "reduce_mean(x, axis)", "relu": "relu(x)", "tanh": "tanh(x)",
    "sigmoid": "sigmoid(x)", "softmax": "softmax(x, axis)", "matmul": "matmul(a, b)",
    "expand": "broadcast_to(x, shape)", "shape": "shape(x)", "ndim": "shape(x)", "size": "shape(x)",
}
"""The ops method for a Tensor attribute an eager program may use on a value (:meth:`Node.__getattr__`)."""
