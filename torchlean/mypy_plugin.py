"""mypy plugin: sealed acceptance types and ``Shape[N]`` literals.

Enable it in the project that type-checks torchlean code::

    [tool.mypy]
    plugins = ["torchlean.mypy_plugin"]

What it adds (DESIGN.md §1.4; measured in reference/typing-notes.md §1 and §3):

* **Sealed types.** A class decorated with ``@torchlean.backend.sealed.sealed("pkg.mod.gate", ...)``
  may only be produced inside the listed gate functions. Outside them, every route mypy can
  see is an error with code ``torchlean-sealed``: a constructor call (also through an alias,
  ``type(x)(...)`` or a ``type[...]`` variable), ``Cls.__new__(...)``, ``object.__new__(Cls)``,
  ``super(C, C).__new__(Cls)``, ``Cls.__init__(existing, ...)`` (which rewrites a value in place),
  ``copy.copy``, ``copy.deepcopy``, ``dataclasses.replace``, ``copy.replace`` and
  ``value.__replace__`` (Python 3.13+) on an instance; the copy routes also through a module-level
  alias of the same module, annotated or not, and ``__init__``, ``__new__`` and ``__replace__``
  through a module-level alias of the attribute (``init = AcceptedKernel.__init__``,
  ``onew = object.__new__``, ``reinit = kernel.__init__``, an alias of such an alias), under the
  route name of the direct call; ``__new__``, ``__init__`` and ``__replace__`` also called on a
  receiver typed by a type variable bounded by the class (``cls.__new__(cls)`` with ``cls:
  type[K]``, ``type(k).__init__(k, ...)``, ``k.__replace__(...)``). A class object may be a
  union (``object.__new__(cls)`` with ``cls: type[AcceptedKernel] | type[int]``), as a value
  may. The message names
  the class, the allowed gates and the caller. The "caller" is the enclosing top-level function
  (a method counts under its own ``module.Class.method`` name); nested functions and lambdas
  inside a gate belong to the gate. A class with two stacked ``@sealed`` decorators is an error
  too (the runtime refuses the second): its gates belong in one call.
* **Private names.** Outside the ``torchlean`` package, a private name of
  ``torchlean.backend.sealed`` (``_mint``, ``_GATE``, ``_MINTED`` ...) is reported where a hook sees
  it: a call of a private function or class (also through the module or a module-level alias), a
  method call, subscript, ``in``, ``del``, iteration or operator on a private object (also a method
  called through the object's class or a base of it, ``MutableMapping.update(_MINTED, ...)``, and a
  module-level alias of a bound method, ``clear = _MINTED.clear``), and a private name passed to
  one of those calls, to a sealed constructor or ``__init__``, or to a copy route.
  mypy has no plugin hook for import statements or a bare name, so ``from ... import _GATE`` and
  ``token = _GATE`` are not reported. Methods of the private objects' classes (``builtins.dict``)
  and of their bases (``typing.MutableMapping`` ...; acting only on a call through the class) get a
  method *signature* hook; a plugin listed after this one cannot hook those as well (the
  same holds for the copy routes and ``__new__`` of ``object``, ``Sealable`` and the sealed
  classes: mypy's plugin chain takes the first hook it finds; docs/mypy.md says to list this plugin
  last). ``__new__`` of any other class is left alone.
* **Shapes.** ``torchlean.shapes.Shape[4, 3]`` is read as ``Shape[Literal[4], Literal[3]]``.
  Dimensions must be non-negative int literals, ``Any`` (an unknown size), a ``TypeVar`` or an
  unpacked ``TypeVarTuple``; anything else is a ``torchlean-shape`` error.
* **Trainer type arguments.** ``torchlean.trainer.Trainer``'s ``In``/``Out`` default to ``Any``
  (PEP 696), so that an unannotated ``Trainer(model)`` is ``Trainer[Any, Any]``; written in a type,
  ``Trainer[Shape[3]]`` would silently mean ``Trainer[Shape[3], Any]`` and a bare ``Trainer``
  ``Trainer[Any, Any]``. One type argument is a ``torchlean-trainer`` error always (without the
  defaults it would be mypy's own wrong-count error); a bare ``Trainer`` is one where
  ``disallow_any_generics`` is on (``--strict``), as mypy reports a bare ``Shape``, except as the
  whole right-hand side of a type alias (``T = Trainer`` stays generic, like mypy's own rule). An
  unpacked fixed tuple counts its items (``Trainer[*tuple[Shape[4], Shape[3]]]`` has both; so does
  ``Trainer[Unpack[tuple[...]]]``: ``typing``'s or ``typing_extensions``' ``Unpack`` is ``*``). The
  hint's example uses per-sample shapes (``Trainer[Shape[4], Shape[3]]``), as the library does.
  ``torchlean-trainer`` is a sub-code of mypy's ``type-arg``.

* **Array data beside a Tensor.** numpy's stubs take a ``torchlean.Tensor`` (it has
  ``__array__``) as array data, so ``array + t`` would be typed as numpy's ``ndarray``; at run
  time numpy defers (``Tensor.__array_ufunc__ = None``) and ``Tensor.__radd__`` answers with a
  Tensor (for a subclass of ``Tensor`` too, whose operand is read as a Tensor's). A numpy
  ``+``, ``-``, ``*`` or ``/`` (or reflected form) whose operand is a Tensor is
  typed ``Tensor``; a numpy ``@`` with a Tensor operand (``array @ t``, and ``t @ array``, which
  numpy's ``__rmatmul__`` would take) is a ``torchlean-operand`` error, as ``matmul`` takes Tensors
  only (review117 F2), and so is any other numpy operator the run time refuses with a Tensor
  operand: comparisons (``t > array``, which mypy tries as ``array < t``), ``**``, ``//``, ``%``,
  ``divmod``, the bitwise ones and an in-place one into an array (``array += t``; review118 F3).

Routes that mypy cannot see (``Any``, ``cast``, ``pickle``, ``getattr``, a ``Callable`` variable
holding the class, attribute mutation) are refused at runtime by the consumers of the sealed
values (``bind``, ``ExecutableKernel.run``, ``audit()``, ...), which raise
``torchlean.backend.sealed.UnmintedError`` for a value the gate never minted or that changed since.

This module imports only mypy and the standard library (never torch or numpy), and relies on
two non-public attributes of mypy's ``TypeChecker`` (``scope`` and ``tree``), on
``TypeAnalyser.analyze_type_with_type_info`` (and its ``defining_alias``/``nesting_level``, to
leave a bare whole-alias ``T = Trainer`` alone) and on the name mypy gives a callee without a full
name (``"__new__ of object"`` for ``super(...).__new__``, ``"update of MutableMapping"`` for
``dict.update(obj, ...)``); it is tested against mypy 2.4
(tests/typing/).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Final

from mypy.checker import TypeChecker
from mypy.errorcodes import TYPE_ARG, ErrorCode
from mypy.maptype import map_instance_to_supertype
from mypy.nodes import (
    AssignmentStmt,
    CallExpr,
    ComparisonExpr,
    Context,
    Expression,
    FakeInfo,
    FuncBase,
    IndexExpr,
    LambdaExpr,
    ListExpr,
    MemberExpr,
    MypyFile,
    NameExpr,
    OperatorAssignmentStmt,
    OpExpr,
    RefExpr,
    StrExpr,
    TempNode,
    TupleExpr,
    TypeAlias,
    TypeInfo,
    UnaryExpr,
    Var,
)
from mypy.options import Options
from mypy.plugin import (
    AnalyzeTypeContext,
    CheckerPluginInterface,
    ClassDefContext,
    FunctionContext,
    MethodContext,
    MethodSigContext,
    Plugin,
    TypeAnalyzerPluginInterface,
)
from mypy.typeanal import TypeAnalyser
from mypy.typeops import make_simplified_union
from mypy.types import (
    UNPACK_TYPE_NAMES,
    AnyType,
    CallableType,
    EllipsisType,
    FunctionLike,
    Instance,
    LiteralType,
    NoneType,
    PlaceholderType,
    ProperType,
    RawExpressionType,
    TupleType,
    Type,
    TypeOfAny,
    TypeType,
    TypeVarTupleType,
    TypeVarType,
    UnboundType,
    UnionType,
    UnpackType,
    get_proper_type,
)
from mypy.version import __version__ as _MYPY_VERSION

MINIMUM_MYPY = (2, 0)
"""The oldest mypy the plugin runs under: mypy 1.x loads it and then crashes at the first sealed
route (its ``CheckerScope`` has no ``top_level_function``; review80 F2)."""


def _mypy_major_minor(version: str) -> tuple[int, int]:
    """``(2, 4)`` of ``"2.4.1"`` or ``"2.5.0+dev.abc"``; ``(0, 0)`` for a version that does not
    start with two numbers."""
    found = re.match(r"(\d+)\.(\d+)", version)
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


if _mypy_major_minor(_MYPY_VERSION) < MINIMUM_MYPY:
    # mypy reports an ImportError from a plugin as one line at the config's ``plugins`` entry
    # ('Error importing plugin "torchlean.mypy_plugin": ...'), without a traceback.
    raise ImportError(
        f"torchlean's mypy plugin needs mypy >= {MINIMUM_MYPY[0]}.{MINIMUM_MYPY[1]}; this is mypy "
        f"{_MYPY_VERSION} (pip install 'mypy>={MINIMUM_MYPY[0]}.{MINIMUM_MYPY[1]}')"
    )


SEALED_DECORATOR: Final = "torchlean.backend.sealed.sealed"
SEALED_MODULE: Final = "torchlean.backend.sealed"
SHAPE_FULLNAME: Final = "torchlean.shapes.Shape"
TRAINER_FULLNAME: Final = "torchlean.trainer.Trainer"
METADATA_KEY: Final = "torchlean.sealed"
PACKAGE: Final = "torchlean"
OBJECT: Final = "builtins.object"
SEALABLE: Final = "torchlean.backend.sealed.Sealable"  # the base every sealed class must have
SUPER_NEW_PREFIX: Final = "__new__ of "  # how mypy names ``super(...).__new__`` (no full name)
UNBOUND_METHOD: Final = re.compile(r"(?P<method>\S+) of (?P<owner>\S+)")
"""How mypy names a method called through its class (``dict.update(obj, ...)``: ``update of
MutableMapping``, the class that defines it), where it has no full name."""

SEALED: Final = ErrorCode(
    "torchlean-sealed", "A sealed torchlean type is produced outside its gate", "torchlean"
)
SHAPE: Final = ErrorCode("torchlean-shape", "Malformed torchlean Shape[...] dimension", "torchlean")
TRAINER: Final = ErrorCode(
    "torchlean-trainer",
    "A Trainer type without both shape arguments (In, Out) is Any, unchecked",
    "torchlean",
    sub_code_of=TYPE_ARG,  # ``# type: ignore[type-arg]`` and ``--disable-error-code type-arg`` cover it
)

OPERAND: Final = ErrorCode(
    "torchlean-operand", "An operator that torchlean refuses for array data beside a Tensor", "torchlean"
)
TENSOR: Final = "torchlean.tensor.Tensor"
NUMPY_ARITHMETIC: Final = frozenset({
    "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
})
"""numpy's operator methods that defer to a Tensor operand's reflected method at run time."""
NUMPY_MATMUL: Final = frozenset({"__matmul__", "__rmatmul__"})
NUMPY_REFUSED: Final = {
    **{f"__{name}__": symbol for name, symbol in (
        ("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">="), ("pow", "**"), ("rpow", "**"),
        ("floordiv", "//"), ("rfloordiv", "//"), ("mod", "%"),
        ("rmod", "%"), ("divmod", "divmod"), ("rdivmod", "divmod"), ("and", "&"), ("rand", "&"),
        ("or", "|"), ("ror", "|"), ("xor", "^"), ("rxor", "^"), ("lshift", "<<"), ("rlshift", "<<"),
        ("rshift", ">>"), ("rrshift", ">>"))},
    **{f"__i{name}__": f"{symbol}=" for name, symbol in (
        ("add", "+"), ("sub", "-"), ("mul", "*"), ("truediv", "/"), ("matmul", "@"), ("pow", "**"),
        ("floordiv", "//"), ("mod", "%"), ("and", "&"), ("or", "|"), ("xor", "^"), ("lshift", "<<"),
        ("rshift", ">>"))},
}
"""numpy's operator methods that the run time refuses with a Tensor operand (numpy defers to the
Tensor, which has no such op, or refuses an in-place write of one into an array), and the
operator each spells (review118 F3: typed ``ndarray`` without an error)."""
MATMUL_ARRAY: Final = (
    "matmul takes Tensors only, not array data beside a Tensor (it is refused at run time); make "
    "the array a Tensor first: tl.tensor(array, dtype=t.dtype)"
)

COPY_ROUTES: Final = {
    "copy.copy": "copy.copy()",
    "copy.deepcopy": "copy.deepcopy()",
    "dataclasses.replace": "dataclasses.replace()",
    "copy.replace": "copy.replace()",  # Python 3.13+
}

TRAINER_EXPECTED: Final = (
    "write Trainer[In, Out] (per-sample shapes, e.g. Trainer[Shape[4], Shape[3]]), "
    "or Trainer[Any, Any] to opt out explicitly"
)
"""The hint's example follows the library's convention: ``In``/``Out`` are the shapes of one sample,
without the batch axis (``Trainer`` takes ``(n, *In)`` data; docs/mypy.md, "Shapes")."""
TRAINER_PARAMETERS: Final = ("In", "Out")

_INT64_MAX: Final = 2**63 - 1
"""The largest dimension ``Shape`` takes at run time (an int64 extent, as numpy's and torch's)."""
SHAPE_EXPECTED: Final = "expected a non-negative int literal (Shape[4]), Literal[4], Any, a TypeVar or *Ts"


def _is_torchlean_module(module: str) -> bool:
    return module == PACKAGE or module.startswith(PACKAGE + ".")


def _sealed_gates(info: TypeInfo) -> list[str] | None:
    """The gate fullnames recorded for a sealed class (or a base of it), else None."""
    for base in info.mro:
        data = base.metadata.get(METADATA_KEY)
        if data is not None:
            return [str(gate) for gate in data["gates"]]
    return None


def _bound(typ: Type) -> ProperType:
    """``typ`` as a proper type, a type variable read as its upper bound: the sealed classes are
    ``@final``, so a ``K`` bounded by one of them (``TypeVar("K", bound=AcceptedKernel)``) can
    only be that class."""
    proper = get_proper_type(typ)
    return get_proper_type(proper.upper_bound) if isinstance(proper, TypeVarType) else proper


def _sealed_instance(typ: Type) -> TypeInfo | None:
    """The sealed class of an instance type (or of one member of a union, or a type variable's
    bound), else None."""
    proper = _bound(typ)
    items: Sequence[Type] = proper.items if isinstance(proper, UnionType) else [proper]
    for item in items:
        item_p = _bound(item)
        if isinstance(item_p, Instance) and _sealed_gates(item_p.type) is not None:
            return item_p.type
    return None


def _sealed_class_object(typ: Type) -> TypeInfo | None:
    """The sealed class of a class-object type (``Cls``, ``type[Cls]``, ``type[K]`` for a type
    variable bounded by it), or of one member of a union of them (``type[Cls] | type[int]``,
    ``type[Cls | int]``), else None."""
    proper = _bound(typ)
    items: Sequence[Type] = proper.items if isinstance(proper, UnionType) else [proper]
    for item in items:
        item_p = _bound(item)
        target: ProperType | None = None
        if isinstance(item_p, FunctionLike) and item_p.is_type_obj():  # a class (overloaded or not)
            target = _bound(item_p.items[0].ret_type)
        elif isinstance(item_p, TypeType):
            target = _bound(item_p.item)
        instance = _sealed_instance(target) if target is not None else None  # type[A | B] too
        if instance is not None:
            return instance
    return None


def _caller(api: CheckerPluginInterface) -> tuple[str, str | None]:
    """Describe where the checked call sits: ``(description, top-level function fullname)``."""
    assert isinstance(api, TypeChecker)
    func = api.scope.top_level_function()
    if func is not None and not isinstance(func, LambdaExpr):
        return func.fullname, func.fullname
    cls = api.scope.current_class()
    if cls is not None:
        return f"class body of {cls.fullname}", None
    return f"module {api.tree.fullname}", None


def _current_module(api: CheckerPluginInterface) -> str:
    assert isinstance(api, TypeChecker)
    return api.tree.fullname


def _check_sealed(route: str, info: TypeInfo, api: CheckerPluginInterface, context: Context) -> None:
    gates = _sealed_gates(info) or []
    where, function = _caller(api)
    if function is not None and function in gates:
        return
    owner = next((base for base in info.mro if METADATA_KEY in base.metadata), info)
    named = f'"{info.name}"' if owner is info else f'"{owner.name}" (as "{info.name}")'  # a NewType
    api.fail(
        f"{route} of sealed type {named} outside its gate "
        f"(allowed only in: {', '.join(gates)}; caller: {where})",
        context,
        code=SEALED,
    )


def _first_arg_type(arg_types: list[list[Type]]) -> Type | None:
    for group in arg_types:
        if group:
            return group[0]
    return None


def _numpy_operator_hook(method: str) -> Callable[[MethodContext], Type]:
    """numpy's operator ``method`` given a ``torchlean.Tensor`` operand: typed ``Tensor``, what
    the Tensor's reflected operator returns at run time; a ``torchlean-operand`` error for ``@``.
    An operand that may be a Tensor (``Tensor | ndarray``) gives the union of both results, and
    the same errors (the Tensor case fails at run time); a type variable bound to ``Tensor``
    counts as ``Tensor``."""

    def hook(ctx: MethodContext) -> Type:
        operand = _first_arg_type(ctx.arg_types)
        tensor, alone = _tensor_operand(operand) if operand is not None else (None, False)
        if tensor is None:
            return ctx.default_return_type
        if method in NUMPY_MATMUL:
            ctx.api.fail(MATMUL_ARRAY, ctx.context, code=OPERAND)
        elif method in NUMPY_REFUSED:
            symbol = NUMPY_REFUSED[method]
            ctx.api.fail(
                f"{symbol} of a torchlean Tensor into array data is refused at run time (numpy cannot write "
                "a Tensor in place): make the array a Tensor first, or write t.numpy() for values"
                if method.startswith("__i") else  # __iadd__ ...: no comparison starts so
                f"{symbol} of array data and a torchlean Tensor is refused at run time (it is no op of the "
                "backend catalog): compute on t.numpy() for values",
                ctx.context, code=OPERAND,
            )
            return ctx.default_return_type
        # a Tensor | ndarray operand: either result (review157 F1); a TypeVar bound to Tensor: Tensor
        return tensor if alone else make_simplified_union([tensor, ctx.default_return_type])

    return hook


def _tensor_operand(typ: Type) -> tuple[Instance | None, bool]:
    """The ``torchlean.Tensor`` instance type that operand type ``typ`` is or may be (itself, a
    subclass read as ``Tensor``, a type variable's bound, or a member of a union, bounds read),
    and whether it is the only
    possibility; ``(None, False)`` when no Tensor can be the operand."""
    proper = _bound(typ)
    items: Sequence[Type] = proper.items if isinstance(proper, UnionType) else [proper]
    tensors = [item for item in map(_bound, items)
               if isinstance(item, Instance) and item.type.has_base(TENSOR)]  # subclasses too (review189 F4)
    if not tensors:
        return None, False
    # a subclass's operand still gets Tensor's reflected operator, which returns a Tensor
    tensor = next(base for base in tensors[0].type.mro if base.fullname == TENSOR)
    return map_instance_to_supertype(tensors[0], tensor), len(tensors) == len(items)


def _construction_hook(ctx: FunctionContext | MethodContext) -> Type:
    """``Sealed(...)`` called by name (a function hook) or through an attribute that holds the class
    (``Holder.cls(...)``, ``self.cls(...)``: mypy asks for a method hook named by the class)."""
    return _report_construction(ctx, _sealed_instance(ctx.default_return_type))


def _aliased_construction_hook(info: TypeInfo) -> Callable[[FunctionContext], Type]:
    """A sealed class called through a module-level variable declared with another type
    (``make: Callable[..., AcceptedKernel] = AcceptedKernel``), whose call mypy types by the
    declaration, so the class is known from the assignment only."""
    return lambda ctx: _report_construction(ctx, info)


def _report_construction(ctx: FunctionContext | MethodContext, info: TypeInfo | None) -> Type:
    """Report the construction of sealed class ``info`` (when one) outside its gates, and the
    private names among the call's arguments (``_gate=_GATE``); the call's type unchanged."""
    if info is not None:
        _check_sealed("Construction", info, ctx.api, ctx.context)
    _report_private_names(_arguments(ctx.args), ctx.api, ctx.context)
    return ctx.default_return_type


def _copy_hook(route: str) -> Callable[[FunctionContext], Type]:
    def hook(ctx: FunctionContext) -> Type:
        first = _first_arg_type(ctx.arg_types)
        info = _sealed_instance(first) if first is not None else None
        if info is not None:
            _check_sealed(route, info, ctx.api, ctx.context)
        _report_private_names(_arguments(ctx.args), ctx.api, ctx.context)
        return ctx.default_return_type

    return hook


def _sealed_class_argument(arg_types: list[list[Type]]) -> TypeInfo | None:
    """The sealed class passed as the first argument (``object.__new__(Sealed)``), if any."""
    first = _first_arg_type(arg_types)
    return _sealed_class_object(first) if first is not None else None


def _new_hook(owner: str) -> Callable[[MethodContext], Type]:
    def hook(ctx: MethodContext) -> Type:
        info = _sealed_class_object(ctx.type) or _sealed_class_argument(ctx.arg_types)
        if info is not None:
            _check_sealed(f"{owner}.__new__()", info, ctx.api, ctx.context)
        return ctx.default_return_type

    return hook


def _super_new_hook(owner: str) -> Callable[[FunctionContext], Type]:
    """``super(C, C).__new__(Sealed)``: mypy names the bound callee ``"__new__ of <owner>"``."""

    def hook(ctx: FunctionContext) -> Type:
        info = _sealed_class_argument(ctx.arg_types)
        if info is not None:
            _check_sealed(f"{owner}.__new__()", info, ctx.api, ctx.context)
        return ctx.default_return_type

    return hook


def _reinit_hook(ctx: MethodContext) -> Type:
    """``Cls.__init__(existing, ...)`` rewrites the fields of a value in place."""
    info = _sealed_class_object(ctx.type) or _sealed_instance(ctx.type)
    if info is not None:
        _check_sealed(f"{info.name}.__init__()", info, ctx.api, ctx.context)
    _report_private_names(_arguments(ctx.args), ctx.api, ctx.context)
    return ctx.default_return_type


def _replace_method_hook(ctx: MethodContext) -> Type:
    """``value.__replace__(...)`` (what ``copy.replace`` calls; mypy's dataclass plugin adds it
    when checking for Python 3.13 or later) builds a changed copy outside the gate."""
    info = _sealed_instance(ctx.type) or _sealed_class_object(ctx.type)  # value.__ or Cls.__replace__
    if info is not None:
        _check_sealed(f"{info.name}.__replace__()", info, ctx.api, ctx.context)
    _report_private_names(_arguments(ctx.args), ctx.api, ctx.context)
    return ctx.default_return_type


def _unbound_alias_hook(method: str, info: TypeInfo | None) -> Callable[[FunctionContext], Type]:
    """``init = Cls.__init__; init(existing, ...)`` or ``replace = Cls.__replace__`` (a module-level
    alias of the method taken from the class): as ``Cls.__init__(existing, ...)``. ``info`` is the
    sealed class the alias was taken from, or None when only the value passed as ``self`` can tell
    (``init = type(kernel).__init__``)."""

    def hook(ctx: FunctionContext) -> Type:
        first = _first_arg_type(ctx.arg_types)
        sealed = info or (_sealed_instance(first) if first is not None else None)
        if sealed is not None:
            _check_sealed(f"{sealed.name}.{method}()", sealed, ctx.api, ctx.context)
        _report_private_names(_arguments(ctx.args), ctx.api, ctx.context)
        return ctx.default_return_type

    return hook


def _bound_alias_hook(method: str, info: TypeInfo) -> Callable[[FunctionContext], Type]:
    """``reinit = kernel.__init__`` or ``replace = kernel.__replace__`` (a module-level alias of the
    method bound to a module-level sealed value): as the call on the value."""

    def hook(ctx: FunctionContext) -> Type:
        _check_sealed(f"{info.name}.{method}()", info, ctx.api, ctx.context)
        _report_private_names(_arguments(ctx.args), ctx.api, ctx.context)
        return ctx.default_return_type

    return hook


def _new_alias_hook(owner: str, info: TypeInfo | None) -> Callable[[FunctionContext], Type]:
    """``new = object.__new__; new(Sealed)`` (a module-level alias of ``__new__`` of ``object``,
    ``Sealable`` or a sealed class): as ``object.__new__(Sealed)``."""

    def hook(ctx: FunctionContext) -> Type:
        sealed = info or _sealed_class_argument(ctx.arg_types)
        if sealed is not None:
            _check_sealed(f"{owner}.__new__()", sealed, ctx.api, ctx.context)
        return ctx.default_return_type

    return hook


def _is_private_sealed_name(fullname: str) -> bool:
    """Whether ``fullname`` is a private (single-underscore) name of ``torchlean.backend.sealed``."""
    module, _, name = fullname.rpartition(".")
    return module == SEALED_MODULE and name.startswith("_") and not name.startswith("__")


def _operands(context: Context) -> list[Expression]:
    """The expressions a method call acts on: receiver, index, operands (not the call's arguments)."""
    if isinstance(context, RefExpr):  # ``for x in _MINTED``: mypy passes the iterable itself
        return [context]
    if isinstance(context, IndexExpr):
        return [context.base, context.index]
    if isinstance(context, CallExpr):
        return [context.callee.expr] if isinstance(context.callee, MemberExpr) else []
    if isinstance(context, OpExpr):
        return [context.left, context.right]
    if isinstance(context, ComparisonExpr):
        return list(context.operands)
    if isinstance(context, UnaryExpr):
        return [context.expr]
    if isinstance(context, OperatorAssignmentStmt):
        return [context.lvalue, context.rvalue]
    return []


def _report_private_names(
    expressions: Sequence[Expression], api: CheckerPluginInterface, context: Context
) -> None:
    """Report each private name of ``torchlean.backend.sealed`` among ``expressions`` (outside torchlean)."""
    if _is_torchlean_module(_current_module(api)):
        return
    reported: set[str] = set()
    for expression in expressions:
        if (
            isinstance(expression, RefExpr)
            and _is_private_sealed_name(expression.fullname)
            and expression.fullname not in reported
        ):
            reported.add(expression.fullname)
            _fail_private(expression.fullname, api, context)


def _fail_private(fullname: str, api: CheckerPluginInterface, context: Context) -> None:
    where, _ = _caller(api)
    api.fail(
        f'"{fullname}" is private to torchlean: sealed values come only from their gates (caller: {where})',
        context,
        code=SEALED,
    )


def _arguments(args: list[list[Expression]]) -> list[Expression]:
    return [arg for group in args for arg in group]


def _private_call_hook(fullname: str) -> Callable[[FunctionContext], Type]:
    """A call of a private helper (``_mint(obj)``, ``sealed._mint(obj)``, through a module-level alias)."""

    def hook(ctx: FunctionContext) -> Type:
        if not _is_torchlean_module(_current_module(ctx.api)):
            _fail_private(fullname, ctx.api, ctx.context)
            _report_private_names(_arguments(ctx.args), ctx.api, ctx.context)
        return ctx.default_return_type

    return hook


def _private_operand_hook(ctx: MethodSigContext) -> CallableType:
    """A method, subscript or operator applied to a private object (``_MINTED[key] = entry``).

    A signature hook, not a method hook: mypy calls it once per call, before overload resolution
    (``dict.get``, ``dict.update`` ... are overloaded); a method hook runs inside mypy's trial of
    each candidate, whose errors are discarded (and an error there rejects the candidate).
    """
    _report_private_names(_operands(ctx.context) + _arguments(ctx.args), ctx.api, ctx.context)
    return ctx.default_signature


def _unbound_operand_hook(ctx: MethodSigContext) -> CallableType:
    """A method of a base of a private object's class called through that base, the object an
    argument (``MutableMapping.update(sealed._MINTED, ...)``, ``MutableMapping.clear(_MINTED)``):
    mypy names it by the base (``typing.MutableMapping.update``). The same method called on a value
    (``mapping.update(...)``, whose type is the base) is left alone."""
    receiver = get_proper_type(ctx.type)
    if (isinstance(receiver, FunctionLike) and receiver.is_type_obj()) or isinstance(receiver, TypeType):
        _report_private_names(_arguments(ctx.args), ctx.api, ctx.context)
    return ctx.default_signature


def _unbound_method_hook(ctx: MethodContext) -> Type:
    """A method of a private object's class called through the class, the object an argument
    (``dict.__setitem__(sealed._MINTED, key, entry)``, ``dict.update(sealed._MINTED, ...)``).
    mypy names such a callee ``"<method> of <Class>"`` (the class that defines it, e.g.
    ``update of MutableMapping``) and gives no receiver to :func:`_private_operand_hook`."""
    _report_private_names(_arguments(ctx.args), ctx.api, ctx.context)
    return ctx.default_return_type


def _sealed_decorator_hook(ctx: ClassDefContext) -> bool:
    """Record the gate names of ``@sealed("pkg.mod.gate", ...)`` in the class metadata."""
    reason = ctx.reason
    args = getattr(reason, "args", None)
    if not args or not all(isinstance(arg, StrExpr) and arg.value for arg in args):
        ctx.api.fail(
            f'@sealed on "{ctx.cls.name}" needs one or more string literals naming its gate functions',
            ctx.reason,
            code=SEALED,
        )
        return True
    sealed_decorators = [
        decorator
        for decorator in ctx.cls.decorators
        if isinstance(decorator, CallExpr)
        and isinstance(decorator.callee, RefExpr)
        and decorator.callee.fullname == SEALED_DECORATOR
    ]
    # stacked decorators are refused at run time; reported once, at the first of them
    if len(sealed_decorators) > 1 and ctx.reason is sealed_decorators[0]:
        ctx.api.fail(
            f'"{ctx.cls.name}" has {len(sealed_decorators)} @sealed decorators: name all its '
            "gate functions in one @sealed(...)",
            ctx.reason,
            code=SEALED,
        )
    gates = [arg.value for arg in args if isinstance(arg, StrExpr)]
    ctx.cls.info.metadata[METADATA_KEY] = {"gates": gates}
    if not ctx.cls.info.is_final:
        ctx.api.fail(f'Sealed type "{ctx.cls.name}" must also be @final', ctx.reason, code=SEALED)
    return True


def _render_dimension(arg: Type) -> str:
    proper = get_proper_type(arg)
    if isinstance(proper, RawExpressionType):
        kind = proper.base_type_name.rpartition(".")[2]
        value = proper.literal_value
        if value is None or (type(value) is int and value > _INT64_MAX):  # mypy keeps no value for a
            # float, a complex, an int beyond int64 (which it reads as Any: review117 F5; mypy 2.0 kept
            # that int: review157 F4) or another expression
            return ("(not an int literal mypy holds: a float, a complex, an int beyond 2**63 - 1 or an "
                    "expression)")
        if kind == "bytes":
            return f'b"{value}"'
        return f'"{value}"' if isinstance(value, str) else repr(value)
    if isinstance(proper, UnboundType) and proper.original_str_expr is not None:
        return f'"{proper.original_str_expr}"'
    if isinstance(proper, LiteralType):
        return f"Literal[{_literal_value(proper)}]"
    if isinstance(proper, UnionType):  # ``Literal[3, 4]`` as written (mypy: ``Literal[3] | Literal[4]``)
        literals = [item for item in map(get_proper_type, proper.items) if isinstance(item, LiteralType)]
        if len(literals) == len(proper.items):
            return f"Literal[{', '.join(map(_literal_value, literals))}]"
    if isinstance(proper, Instance):
        return proper.type.name
    if isinstance(proper, UnpackType):
        return f"*{proper.type}"
    return str(proper)


def _literal_value(literal: LiteralType) -> str:
    """A literal's value as written inside ``Literal[...]``: ``3``, ``'a'``, ``Color.RED``."""
    if literal.is_enum_literal():  # value holds the member's name
        return f"{literal.fallback.type.name}.{literal.value}"
    return repr(literal.value)


def _unpacked(arg: Type, api: TypeAnalyzerPluginInterface) -> Type | None:
    """What an unanalyzed type argument unpacks: ``X`` of ``*X`` or of ``Unpack[X]`` (PEP 646: the
    same), ``typing``'s or ``typing_extensions``' ``Unpack`` under any name it is imported as (not a
    class of another module that is also called ``Unpack``); None for any other argument.

    An ``Unpack`` without exactly one argument, which mypy reports, unpacks an error ``Any``: an
    item count that is not known, and not a tuple.
    """
    if isinstance(arg, UnpackType):
        return arg.type
    if not (isinstance(arg, UnboundType) and isinstance(api, TypeAnalyser)):
        return None
    symbol = api.lookup_qualified(arg.name, arg, suppress_errors=True)
    if symbol is None or symbol.fullname not in UNPACK_TYPE_NAMES:
        return None
    return arg.args[0] if len(arg.args) == 1 else AnyType(TypeOfAny.from_error)


def _raw_dimension(
    arg: Type, int_type: Instance, fail: Callable[[str], None], api: TypeAnalyzerPluginInterface
) -> Type | None:
    """Turn a bare literal argument into ``Literal[n]``; report anything that is not an int >= 0.

    Returns the argument to analyze further, or None after reporting it through ``fail``.
    """
    if isinstance(arg, UnboundType) and arg.original_str_expr is not None:
        fail(_render_dimension(arg))
        return None
    if isinstance(arg, UnionType) and any(isinstance(item, RawExpressionType) for item in arg.items):
        # review217 F4: ``3 | 4`` as written, not its analysis (``Any | Any``); a string item quoted,
        # as ``Shape["a"]`` shows it (review225 F8)
        fail(" | ".join(_render_dimension(item) if _is_literal_text(item) else _written(item)
                        for item in arg.items))
        return None
    inner = _unpacked(arg, api)
    if isinstance(inner, UnboundType) and inner.name.rpartition(".")[2] in ("tuple", "Tuple"):
        # mypy would open a fixed one up; the runtime Shape refuses both (either spelling)
        fail(f"{arg.name}[tuple[...]]" if isinstance(arg, UnboundType) else "*tuple[...]")
        return None
    if not isinstance(arg, RawExpressionType):
        return arg
    value = arg.literal_value
    if type(value) is int and 0 <= value <= _INT64_MAX:
        return LiteralType(value, fallback=int_type, line=arg.line, column=arg.column)
    fail(_render_dimension(arg))
    return None


def _valid_dimension(arg: Type) -> bool:
    proper = get_proper_type(arg)
    if isinstance(proper, LiteralType):
        return type(proper.value) is int and 0 <= proper.value <= _INT64_MAX
    if isinstance(proper, UnpackType):  # ``*Ts`` only: ``*tuple[...]`` is refused at runtime too
        return isinstance(get_proper_type(proper.type), TypeVarTupleType | AnyType | PlaceholderType)
    return isinstance(proper, AnyType | TypeVarType | TypeVarTupleType | PlaceholderType)


def _shape_hook(ctx: AnalyzeTypeContext) -> Type:
    """Analyze ``Shape[...]``: bare ints become ``Literal`` ints, malformed dimensions are errors."""
    api = ctx.api
    bad: list[str] = []

    def fail(rendered: str) -> None:
        bad.append(rendered)
        api.fail(f"Invalid Shape dimension {rendered}: {SHAPE_EXPECTED}", ctx.context, code=SHAPE)

    int_type = api.named_type("builtins.int", [])
    args = [_raw_dimension(arg, int_type, fail, api) for arg in ctx.type.args]
    kept = [arg for arg in args if arg is not None]
    if bad:
        return AnyType(TypeOfAny.from_error)
    info = api.named_type(SHAPE_FULLNAME, []).type
    if isinstance(api, TypeAnalyser):
        result = api.analyze_type_with_type_info(info, kept, ctx.context, ctx.type.empty_tuple_index)
    else:
        result = Instance(info, [api.analyze_type(arg) for arg in kept])
    proper = get_proper_type(result)
    bare = not ctx.type.args and not ctx.type.empty_tuple_index  # ``Shape``: any shape, as at run time
    if isinstance(proper, Instance) and proper.type.fullname == SHAPE_FULLNAME and not bare:
        for arg in proper.args:
            # an UnboundType is an argument mypy itself reports (an unbound TypeVar, a variable)
            if not _valid_dimension(arg) and not isinstance(get_proper_type(arg), UnboundType):
                fail(_render_dimension(arg))
        if bad:
            return AnyType(TypeOfAny.from_error)
    return result


def _is_literal_text(typ: Type) -> bool:
    """Whether ``typ`` is a bare literal written in a type (``3``, ``"a"``), as
    :func:`_render_dimension` shows it."""
    return isinstance(typ, RawExpressionType) or (
        isinstance(typ, UnboundType) and typ.original_str_expr is not None
    )


def _written(typ: Type) -> str:
    """A type argument as the user wrote it (before analysis): ``Shape[3]``, ``Literal[4]``, ``"a"``."""
    if isinstance(typ, UnboundType):
        if typ.original_str_expr is not None:  # a quoted type: its text
            return typ.original_str_expr
        if not typ.args:
            return f"{typ.name}[()]" if typ.empty_tuple_index else typ.name
        return f"{typ.name}[{', '.join(_written(arg) for arg in typ.args)}]"
    if isinstance(typ, RawExpressionType):
        return _render_dimension(typ)
    if isinstance(typ, UnpackType):
        return f"*{_written(typ.type)}"
    if isinstance(typ, UnionType):  # nested too: list[Shape[2] | None] (review164 F7)
        return " | ".join(map(_written, typ.items))
    return str(typ)


def _argument_count(args: Sequence[Type], api: TypeAnalyzerPluginInterface) -> int | None:
    """How many type arguments ``args`` stand for: an unpacked fixed tuple counts its items
    (``Trainer[*tuple[Shape[3], Shape[1]]]`` and ``Trainer[Unpack[tuple[Shape[3], Shape[1]]]]`` are
    two); None for any other unpacked argument (``*Ts``, ``*tuple[X, ...]``, an alias), whose count
    is not known before analysis."""
    count = 0
    for arg in args:
        inner = _unpacked(arg, api)
        if inner is None:
            count += 1
            continue
        if not (isinstance(inner, UnboundType) and inner.name.rpartition(".")[2] in ("tuple", "Tuple")):
            return None
        if inner.empty_tuple_index:  # *tuple[()]
            continue
        if any(isinstance(item, EllipsisType) for item in inner.args):
            return None
        items = _argument_count(inner.args, api)
        if items is None:
            return None
        count += items
    return count


def _trainer_hook(ctx: AnalyzeTypeContext) -> Type:
    """Analyze ``Trainer[...]``; report fewer than two type arguments (the rest would be ``Any``)."""
    api = ctx.api
    written = ctx.type
    count = _argument_count(written.args, api)
    if count is None:  # ``*Ts`` or ``*tuple[X, ...]``: mypy's business (the count is unknown here)
        count = len(TRAINER_PARAMETERS)
    bare = not written.args and not written.empty_tuple_index  # ``Trainer[()]`` is written out
    # ``T = Trainer``: a generic alias (mypy, too, checks it where it is used, not here)
    whole_alias = isinstance(api, TypeAnalyser) and api.defining_alias and api.nesting_level == 0
    too_few = count < len(TRAINER_PARAMETERS)
    if too_few and (not bare or (api.options.disallow_any_generics and not whole_alias)):
        missing = " and ".join(TRAINER_PARAMETERS[count:])
        api.fail(
            f'Type "{_written(written)}" leaves {missing} as Any, so shapes are not checked: '
            f"{TRAINER_EXPECTED}",
            ctx.context,
            code=TRAINER,
        )
    info = api.named_type(TRAINER_FULLNAME, []).type
    args = [_shape_argument(arg, api, ctx.context, report=not too_few) for arg in written.args]
    if isinstance(api, TypeAnalyser):
        analyzed = api.analyze_type_with_type_info(info, args, ctx.context, written.empty_tuple_index)
    else:
        analyzed = Instance(info, [api.analyze_type(arg) for arg in args])
    proper = get_proper_type(analyzed)
    if isinstance(proper, Instance) and not too_few:  # one error for a type (review157 F3)
        written_out = len(proper.args) == len(args)  # else an unpacked tuple spread them
        for position, arg in enumerate(proper.args):
            if _is_no_shape(arg):
                shown = _argument_text(args[position] if written_out else None, arg)
                api.fail(f'Type argument "{shown}" of Trainer is no shape: {TRAINER_EXPECTED}', ctx.context,
                         code=TRAINER)
    return analyzed


def _argument_text(written: Type | None, analyzed: Type) -> str:
    """A ``Trainer`` argument as the user wrote it (``Shape[4] | None`` too: review162 F4), else
    (spread from an unpacked tuple, or another form) as mypy prints the analyzed type."""
    if isinstance(written, (UnboundType, UnionType)):
        return _written(written)
    return str(analyzed)


def _shape_argument(
    arg: Type, api: TypeAnalyzerPluginInterface, context: Context, *, report: bool
) -> Type:
    """``arg`` of ``Trainer[...]``, or ``Any`` in place of a literal written bare (``Trainer[4, 1]``),
    reported (unless the type is reported already, ``report`` false) with the spelling to use for
    a dimension ``Shape`` takes (mypy's own hint, ``Literal[4]``, would give a type no shape-typed
    API takes: review157 F3), else as no shape (``-1``, ``True``: review161 F4)."""
    # an int or a bool only: what mypy cannot read (a float, an expression, a quoted type that does
    # not parse) stays mypy's own valid-type error, as before (review162 F3)
    if not (isinstance(arg, RawExpressionType) and isinstance(arg.literal_value, int)):
        return arg
    value = arg.literal_value
    if report and type(value) is int and 0 <= value <= _INT64_MAX:
        api.fail(f'Type argument "{value}" of Trainer is an int, not a shape: write Shape[{value}] '
                 "(per-sample shapes, e.g. Trainer[Shape[4], Shape[3]])", context, code=TRAINER)
    elif report:
        api.fail(f'Type argument "{value}" of Trainer is no shape: {TRAINER_EXPECTED}', context, code=TRAINER)
    return AnyType(TypeOfAny.from_error)


def _is_no_shape(arg: Type) -> bool:
    """Whether an analyzed ``Trainer`` argument is a type that is no shape: a literal, a tuple,
    ``None``, a class object or an instance of a class other than ``Shape`` and ``object``, or a
    union with such a member (``Any``, ``object``, type variables and unions of shapes pass)."""
    proper = get_proper_type(arg)
    if isinstance(proper, Instance):
        return proper.type.fullname not in (SHAPE_FULLNAME, OBJECT)
    if isinstance(proper, UnionType):  # Optional[Shape[3]], Literal[1] | Shape[3]: review161 F4
        return any(map(_is_no_shape, proper.items))
    return isinstance(proper, LiteralType | TupleType | NoneType | TypeType)


def _typevar_new_hook(owner: str) -> Callable[[MethodContext], Type]:
    """``cls.__new__(...)`` on a receiver typed by a type variable, whose callee mypy names
    ``"__new__ of <owner>"`` (the class defining ``__new__``, ``object``): reported as the same call
    on the bound class is (``AcceptedKernel.__new__()``, review192 F6), else as ``__new__`` of
    ``owner`` given a sealed class (``object.__new__(Sealed)``)."""

    def hook(ctx: MethodContext) -> Type:
        info = _sealed_class_object(ctx.type)
        if info is not None:
            _check_sealed(f"{info.name}.__new__()", info, ctx.api, ctx.context)
            return ctx.default_return_type
        return _new_hook(owner)(ctx)

    return hook


TYPEVAR_ROUTES: Final[dict[str, Callable[[str], Callable[[MethodContext], Type]]]] = {
    "__init__": lambda _owner: _reinit_hook,
    "__replace__": lambda _owner: _replace_method_hook,
    "__new__": _typevar_new_hook,
}
"""For each method that produces or rewrites a sealed value, its hook made from the name of the class
defining it, for a callee mypy names ``"<method> of <Class>"`` (a receiver typed by a type variable)."""


class TorchLeanPlugin(Plugin):
    """Sealed-type and ``Shape[N]`` checks (see the module docstring)."""

    def __init__(self, options: Options) -> None:
        super().__init__(options)
        self._module_table: dict[str, MypyFile] = {}
        self._private_classes: frozenset[str] | None = None
        self._private_bases: tuple[frozenset[str], frozenset[str]] | None = None

    def set_modules(self, modules: dict[str, MypyFile]) -> None:
        super().set_modules(modules)
        self._module_table = modules
        self._private_classes = None
        self._private_bases = None

    def get_class_decorator_hook_2(self, fullname: str) -> Callable[[ClassDefContext], bool] | None:
        return _sealed_decorator_hook if fullname == SEALED_DECORATOR else None

    def get_type_analyze_hook(self, fullname: str) -> Callable[[AnalyzeTypeContext], Type] | None:
        if fullname == SHAPE_FULLNAME:
            return _shape_hook
        return _trainer_hook if fullname == TRAINER_FULLNAME else None

    def get_function_hook(self, fullname: str) -> Callable[[FunctionContext], Type] | None:
        if fullname in COPY_ROUTES:
            return _copy_hook(COPY_ROUTES[fullname])
        if _is_private_sealed_name(fullname):
            return _private_call_hook(fullname)
        if fullname.startswith(SUPER_NEW_PREFIX):
            return _super_new_hook(fullname[len(SUPER_NEW_PREFIX) :])
        node = self.lookup_fully_qualified(fullname)
        if node is None:
            return None
        if self._constructs_sealed(fullname):
            return _construction_hook
        target = _aliased_function(node.node, self._module_table)
        aliased_class = self._sealed_class(target) if target is not None else None
        if aliased_class is not None and not aliased_class.is_newtype:  # make: Callable[..., K] = K
            return _aliased_construction_hook(aliased_class)  # review157 F2
        if target in COPY_ROUTES:  # a module-level alias: x = copy.copy; x(kernel)
            return _copy_hook(COPY_ROUTES[target])
        if target is not None and _is_private_sealed_name(target):
            return _private_call_hook(target)
        member = _aliased_member(node.node, self._module_table)
        if member is not None and isinstance(node.node, Var):  # init = AcceptedKernel.__init__
            return self._member_alias_hook(member, node.node)
        return None

    def get_method_hook(self, fullname: str) -> Callable[[MethodContext], Type] | None:
        unbound = UNBOUND_METHOD.fullmatch(fullname)
        if unbound is not None and unbound["owner"] in self._private_object_bases():
            return _unbound_method_hook
        if unbound is not None and unbound["method"] in TYPEVAR_ROUTES:
            # a receiver typed by a type variable (``cls.__new__(cls)``, ``k.__replace__()``): mypy
            # names the callee by the class defining the method; the hook reads the variable's
            # bound and reports only a sealed one (review189 F2)
            return TYPEVAR_ROUTES[unbound["method"]](unbound["owner"])
        owner, _, method = fullname.rpartition(".")
        numpy_operator = method in NUMPY_ARITHMETIC or method in NUMPY_MATMUL or method in NUMPY_REFUSED
        if owner.startswith("numpy.") and numpy_operator:
            return _numpy_operator_hook(method)
        if method == "__new__" and self._new_owner(owner):
            display = "object" if owner == OBJECT else owner.rpartition(".")[2]
            return _new_hook(display)
        if method == "__init__" and self._is_sealed_class(owner):
            return _reinit_hook
        if method == "__replace__" and self._is_sealed_class(owner):  # Python 3.13 dataclasses
            return _replace_method_hook
        if self._constructs_sealed(fullname):  # the class called through an attribute holding it
            return _construction_hook
        return None

    def get_method_signature_hook(self, fullname: str) -> Callable[[MethodSigContext], CallableType] | None:
        owner = fullname.rpartition(".")[0]
        if owner in self._private_object_classes():
            return _private_operand_hook
        return _unbound_operand_hook if owner in self._private_object_base_classes() else None

    def _member_alias_hook(self, member: MemberExpr, alias: Var) -> Callable[[FunctionContext], Type] | None:
        """The hook for a call of a module-level alias of an attribute (``member``), if it is a route:
        ``Cls.__init__``, ``Cls.__new__``, ``object.__new__``, ``Cls.__replace__`` and the same
        methods bound to a module-level sealed value (``kernel.__init__``); any method of a private
        object of ``torchlean.backend.sealed`` (``clear = _MINTED.clear``)."""
        receiver = member.expr
        if isinstance(receiver, RefExpr) and _is_private_sealed_name(receiver.fullname):
            return _private_call_hook(receiver.fullname)
        method = member.name
        if method not in ("__init__", "__new__", "__replace__"):
            return None
        cls = _class_named(receiver)
        value = receiver.node if isinstance(receiver, RefExpr) else None
        bound = _sealed_instance(value.type) if isinstance(value, Var) and value.type is not None else None
        if bound is not None and method != "__new__":  # kernel.__init__ / kernel.__replace__
            return _bound_alias_hook(method, bound)
        if method == "__new__":
            owner = cls or (bound if bound is not None else _defining_class(alias))
            if owner is None or not self._new_owner(owner.fullname):
                return None  # __new__ of an unrelated class: not reported, as Foo.__new__(Sealed)
            display = "object" if owner.fullname == OBJECT else owner.name
            return _new_alias_hook(display, self._sealed_class(owner.fullname))
        if cls is None and not _takes_self(alias):
            return None  # a bound method of a value the plugin cannot see
        sealed = self._sealed_class(cls.fullname) if cls is not None else None
        if cls is not None and sealed is None:
            return None  # __init__ / __replace__ of another class
        return _unbound_alias_hook(method, sealed)

    def _sealed_class(self, fullname: str) -> TypeInfo | None:
        """The sealed class (or ``NewType`` of one) named ``fullname``, else None."""
        node = self.lookup_fully_qualified(fullname)
        info = node.node if node is not None else None
        return info if isinstance(info, TypeInfo) and _sealed_gates(info) is not None else None

    def _is_sealed_class(self, fullname: str) -> bool:
        return self._sealed_class(fullname) is not None

    def _new_owner(self, fullname: str) -> bool:
        """Whether ``<fullname>.__new__`` gets the ``__new__`` hook: ``object``, a sealed class, or
        a class in a sealed class's MRO (``Sealable``, which the runtime requires as a base). Any
        other owner is left to the plugins listed after this one (mypy's chain takes the first
        hook it finds)."""
        return fullname in (OBJECT, SEALABLE) or self._is_sealed_class(fullname)

    def _constructs_sealed(self, fullname: str) -> bool:
        """Whether calling ``fullname`` builds a sealed value: a sealed class, not a ``NewType`` of
        one (which returns its argument)."""
        info = self._sealed_class(fullname)
        return info is not None and not info.is_newtype

    def _private_object_mro(self) -> tuple[frozenset[str], frozenset[str]]:
        """The short names of the private objects' classes and of their bases (``dict``,
        ``MutableMapping``, ``Mapping`` ...), and the full names of the bases alone
        (``typing.MutableMapping`` ...); ``object`` left out of both. Kept once
        :meth:`_private_object_classes` is."""
        if self._private_bases is not None:
            return self._private_bases
        classes = self._private_object_classes()
        infos: list[TypeInfo] = []
        for fullname in classes:
            node = self.lookup_fully_qualified(fullname)
            if node is not None and isinstance(node.node, TypeInfo):
                infos.extend(base for base in node.node.mro if base.fullname != OBJECT)
        names = frozenset(info.name for info in infos)
        result = (names, frozenset(info.fullname for info in infos) - classes)
        if self._private_classes is not None:
            self._private_bases = result
        return result

    def _private_object_bases(self) -> frozenset[str]:
        """The short names of the private objects' classes and of their bases (``dict``,
        ``MutableMapping``, ``Mapping`` ...): the owners mypy names for an unbound method call."""
        return self._private_object_mro()[0]

    def _private_object_base_classes(self) -> frozenset[str]:
        """The full names of the bases of the private objects' classes (``typing.MutableMapping``,
        ``typing.Mapping`` ...; ``object`` left out), whose methods, called through the base with
        the object as an argument (``MutableMapping.update(_MINTED, ...)``), get
        :func:`_unbound_operand_hook`."""
        return self._private_object_mro()[1]

    def _private_object_classes(self) -> frozenset[str]:
        """The classes of the private objects of ``torchlean.backend.sealed`` (``_MINTED``: dict ...).

        Their methods get :func:`_private_operand_hook`. Kept once every private variable has a type
        (``_GATE = _GateToken()`` has one only after mypy has checked that module); until then
        computed afresh.
        """
        if self._private_classes is not None:
            return self._private_classes
        module = self._module_table.get(SEALED_MODULE)
        if module is None:
            return frozenset()
        classes: set[str] = set()
        complete = True
        for name, symbol in module.names.items():
            if not _is_private_sealed_name(f"{SEALED_MODULE}.{name}") or not isinstance(symbol.node, Var):
                continue
            if symbol.node.type is None:
                complete = False
                continue
            proper = get_proper_type(symbol.node.type)
            if isinstance(proper, Instance):
                classes.add(proper.type.fullname)
        result = frozenset(classes)
        if complete and result:  # an empty table: the module is not analysed yet
            self._private_classes = result
        return result


def _aliased_function(node: object, modules: dict[str, MypyFile]) -> str | None:
    """The function a module-level variable holds (``mint = _mint``), else None.

    An inferred alias carries the function in its type; a declared one
    (``mint: Callable[[Any], None] = _mint``) has only the declared ``Callable``, so the name is
    read from the assignment itself, at the top level of the variable's module.
    """
    if not isinstance(node, Var) or node.type is None:
        return None
    proper = get_proper_type(node.type)
    if isinstance(proper, CallableType) and proper.definition is not None:
        return proper.definition.fullname
    if not node.is_inferred:
        return _assigned_name(node, modules)
    return None


def _assigned_value(var: Var, modules: dict[str, MypyFile]) -> Expression | None:
    """The value assigned to the module-level variable ``var``, if it is assigned exactly once at
    its module's top level (and mypy still holds that module's syntax tree), else None. A bare
    declaration (``x: T``, no value) is no assignment, and a tuple or list target takes the value
    at its position of a tuple or list of as many (``onew, _ = object.__new__, 0``), so that the
    declared-then-assigned and unpacked spellings of an alias are followed too (review217 F1)."""
    module = modules.get(var.fullname.rpartition(".")[0])
    if module is None:
        return None
    assigned: list[Expression] = []
    for statement in module.defs:
        if not isinstance(statement, AssignmentStmt) or (
            isinstance(statement.rvalue, TempNode) and statement.rvalue.no_rhs
        ):
            continue
        for target in statement.lvalues:
            assigned.extend(_values_for(var, target, statement.rvalue))
    return assigned[0] if len(assigned) == 1 else None


def _values_for(var: Var, target: Expression, value: Expression) -> list[Expression]:
    """The values ``target = value`` gives ``var``: ``value`` for a name target, the matching
    element for a tuple or list target over a tuple or list of as many elements (nested alike);
    an unpacking of anything else (a starred target, a tuple held in a variable) counts as an
    assignment whose value is not known (a placeholder no alias reading follows), so the alias is
    not followed (docs/mypy.md lists those spellings as runtime-only)."""
    if isinstance(target, NameExpr):
        return [value] if target.node is var else []
    if isinstance(target, TupleExpr | ListExpr):
        if isinstance(value, TupleExpr | ListExpr) and len(value.items) == len(target.items):
            return [found for item, part in zip(target.items, value.items, strict=True)
                    for found in _values_for(var, item, part)]
        if any(_values_for(var, item, value) for item in target.items):
            return [TempNode(AnyType(TypeOfAny.special_form))]  # assigned, to what is unknown
    return []


def _assigned_name(var: Var, modules: dict[str, MypyFile]) -> str | None:
    """The full name assigned to the module-level variable ``var`` (``x: T = copy.copy``), if it is
    assigned exactly once at its module's top level and that value is a name, else None."""
    value = _assigned_value(var, modules)
    if isinstance(value, RefExpr) and value.fullname:
        return value.fullname
    return None


ALIAS_DEPTH: Final = 8
"""How many module-level aliases of aliases (``again = init``) :func:`_aliased_member` follows."""


def _aliased_member(node: object, modules: dict[str, MypyFile]) -> MemberExpr | None:
    """The attribute a module-level variable holds (``init = AcceptedKernel.__init__``,
    ``clear = _MINTED.clear``), also through module-level aliases of that variable
    (``again = init``), else None. A module attribute (``shallow = copy.copy``) is a name, not a
    member: :func:`_aliased_function` follows those."""
    for _ in range(ALIAS_DEPTH):
        if not isinstance(node, Var):
            return None
        value = _assigned_value(node, modules)
        if isinstance(value, MemberExpr) and not (
            isinstance(value.expr, RefExpr) and isinstance(value.expr.node, MypyFile)
        ):
            return value
        if not isinstance(value, RefExpr):
            return None
        node = value.node
    return None


def _class_named(expression: Expression) -> TypeInfo | None:
    """The class an expression names (``AcceptedKernel``, ``acceptance.AcceptedKernel``, an alias
    ``Forged = AcceptedKernel``), else None."""
    if not isinstance(expression, RefExpr):
        return None
    if isinstance(expression.node, TypeInfo):
        return expression.node
    if isinstance(expression.node, TypeAlias):
        target = get_proper_type(expression.node.target)
        return target.type if isinstance(target, Instance) else None
    return None


def _defining_class(alias: Var) -> TypeInfo | None:
    """The class whose method a module-level alias holds, as mypy records it in the alias's type
    (``object`` for ``type(kernel).__new__``), else None."""
    proper = get_proper_type(alias.type) if alias.type is not None else None
    definition = proper.definition if isinstance(proper, CallableType) else None
    owner = definition.info if isinstance(definition, FuncBase) else None
    # a function defined outside a class (``__new__ = make`` in a class body) has mypy's FakeInfo,
    # an instance of TypeInfo whose attributes raise when read (review189 F1)
    if not isinstance(owner, TypeInfo) or isinstance(owner, FakeInfo):
        return None
    return owner if owner.fullname else None


def _takes_self(alias: Var) -> bool:
    """Whether a module-level alias of a method is unbound (its first parameter is ``self``): then
    the value the call passes first is the one the method acts on."""
    proper = get_proper_type(alias.type) if alias.type is not None else None
    return isinstance(proper, CallableType) and proper.arg_names[:1] == ["self"]


def plugin(version: str) -> type[Plugin]:
    """mypy entry point (``plugins = ["torchlean.mypy_plugin"]``); ``version`` is mypy's version."""
    return TorchLeanPlugin
