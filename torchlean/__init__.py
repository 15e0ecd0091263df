"""torchlean: neural-network training on kernel capsules accepted under explicit contracts.

Public face: tensors (``Tensor``, ``tensor``, ``from_torch``), the ops of :mod:`torchlean.functional`
(re-exported here), eager sessions (``session``, ``Session``) and gradient mode (``no_grad``);
docs/python.md shows them. The error classes users catch are here too (``TorchLeanError``,
the base of all; ``GuardError``, ``GuardTypeError``, ``TensorTypeError``, ``SessionError``,
``BatchError``, ``TrainerError``, ...), and ``__version__`` is the installed distribution's (what
``torchlean --version`` prints).

The package imports lazily (PEP 562): ``import torchlean`` loads nothing heavy, so the mypy
plugin (``torchlean.mypy_plugin``) loads without numpy or torch; the first use of a name imports
the module that defines it. The submodules are such names as well (``torchlean.trainer``,
``torchlean.backend.report``, ...), so a dotted path works after a plain ``import torchlean``.
"""

import importlib as _importlib
import sys as _sys
import types as _types
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

if _TYPE_CHECKING:
    from torchlean import (
        autograd,
        backend,
        checkpoint,
        data,
        functional,
        ir,
        models,
        nn,
        optim,
        shapes,
        spec,
        trainer,
        validation,
    )
    from torchlean.autograd import profiler
    from torchlean.autograd.grad_mode import (
        enable_grad,
        is_grad_enabled,
        no_grad,
        set_grad_enabled,
    )
    from torchlean.autograd.session import (
        Session,
        current_session,
        session,
    )
    from torchlean.autograd.tape import (
        AutogradError,
    )
    from torchlean.backend import profiles
    from torchlean.backend.errors import (
        GuardError,
        GuardTypeError,
        PlanningError,
        SessionError,
        SessionTypeError,
        TorchLeanError,
        UnknownLabelError,
    )
    from torchlean.batches import (
        BatchError,
    )
    from torchlean.functional import (
        abs,
        add,
        avg_pool,
        batch_norm,
        bernoulli_mask,
        broadcast_to,
        clamp,
        concat,
        conv,
        conv_transpose,
        cos,
        cross_entropy,
        div,
        dropout,
        embedding,
        exp,
        gather,
        gelu,
        getitem,
        hard_masked_softmax,
        inv,
        layer_norm,
        linear,
        log,
        log_softmax,
        logsumexp,
        matmul,
        max_pool,
        maximum,
        minimum,
        mse_loss,
        mul,
        neg,
        permute,
        rand_uniform,
        reduce_mean,
        reduce_sum,
        relu,
        reshape,
        safe_log,
        scale,
        scaled_dot_product_attention,
        scatter_add,
        sigmoid,
        sin,
        slice,
        smooth_max_pool,
        softmax,
        softplus,
        sqrt,
        sub,
        tanh,
        transpose,
    )
    from torchlean.shapes import (
        Shape,
    )
    from torchlean.tensor import (
        DeviceError,
        DimensionError,
        Tensor,
        TensorError,
        TensorIndexError,
        TensorTypeError,
        from_torch,
        tensor,
    )
    from torchlean.trainer import (
        ExecutionMode,
        NonFiniteStepError,
        Objective,
        RunConfig,
        Trainer,
        TrainerError,
        TrainerLabelError,
    )

    __version__: str

_ALIASES: dict[str, str] = {  # names for modules deeper down; a plain submodule needs no entry
    "profiler": "torchlean.autograd.profiler",
    "profiles": "torchlean.backend.profiles",
}
_ATTRIBUTES: dict[str, str] = {
    "AutogradError": "torchlean.autograd.tape",
    "BatchError": "torchlean.batches",
    "DeviceError": "torchlean.tensor",
    "DimensionError": "torchlean.tensor",
    "ExecutionMode": "torchlean.trainer",
    "GuardError": "torchlean.backend.errors",
    "GuardTypeError": "torchlean.backend.errors",
    "NonFiniteStepError": "torchlean.trainer",
    "Objective": "torchlean.trainer",
    "PlanningError": "torchlean.backend.errors",
    "RunConfig": "torchlean.trainer",
    "Session": "torchlean.autograd.session",
    "SessionError": "torchlean.backend.errors",
    "SessionTypeError": "torchlean.backend.errors",
    "Shape": "torchlean.shapes",
    "Tensor": "torchlean.tensor",
    "TensorError": "torchlean.tensor",
    "TensorIndexError": "torchlean.tensor",
    "TensorTypeError": "torchlean.tensor",
    "TorchLeanError": "torchlean.backend.errors",
    "Trainer": "torchlean.trainer",
    "TrainerError": "torchlean.trainer",
    "TrainerLabelError": "torchlean.trainer",
    "UnknownLabelError": "torchlean.backend.errors",
    "abs": "torchlean.functional",
    "add": "torchlean.functional",
    "avg_pool": "torchlean.functional",
    "batch_norm": "torchlean.functional",
    "bernoulli_mask": "torchlean.functional",
    "broadcast_to": "torchlean.functional",
    "clamp": "torchlean.functional",
    "concat": "torchlean.functional",
    "conv": "torchlean.functional",
    "conv_transpose": "torchlean.functional",
    "cos": "torchlean.functional",
    "cross_entropy": "torchlean.functional",
    "current_session": "torchlean.autograd.session",
    "div": "torchlean.functional",
    "dropout": "torchlean.functional",
    "embedding": "torchlean.functional",
    "enable_grad": "torchlean.autograd.grad_mode",
    "exp": "torchlean.functional",
    "from_torch": "torchlean.tensor",
    "gather": "torchlean.functional",
    "gelu": "torchlean.functional",
    "getitem": "torchlean.functional",
    "hard_masked_softmax": "torchlean.functional",
    "inv": "torchlean.functional",
    "is_grad_enabled": "torchlean.autograd.grad_mode",
    "set_grad_enabled": "torchlean.autograd.grad_mode",
    "layer_norm": "torchlean.functional",
    "linear": "torchlean.functional",
    "log": "torchlean.functional",
    "log_softmax": "torchlean.functional",
    "logsumexp": "torchlean.functional",
    "matmul": "torchlean.functional",
    "max_pool": "torchlean.functional",
    "maximum": "torchlean.functional",
    "minimum": "torchlean.functional",
    "mse_loss": "torchlean.functional",
    "mul": "torchlean.functional",
    "neg": "torchlean.functional",
    "no_grad": "torchlean.autograd.grad_mode",
    "permute": "torchlean.functional",
    "rand_uniform": "torchlean.functional",
    "reduce_mean": "torchlean.functional",
    "reduce_sum": "torchlean.functional",
    "relu": "torchlean.functional",
    "reshape": "torchlean.functional",
    "safe_log": "torchlean.functional",
    "scale": "torchlean.functional",
    "scaled_dot_product_attention": "torchlean.functional",
    "scatter_add": "torchlean.functional",
    "session": "torchlean.autograd.session",
    "sigmoid": "torchlean.functional",
    "sin": "torchlean.functional",
    "slice": "torchlean.functional",
    "smooth_max_pool": "torchlean.functional",
    "softmax": "torchlean.functional",
    "softplus": "torchlean.functional",
    "sqrt": "torchlean.functional",
    "sub": "torchlean.functional",
    "tanh": "torchlean.functional",
    "tensor": "torchlean.tensor",
    "transpose": "torchlean.functional",
}

__all__ = [
    "AutogradError",
    "BatchError",
    "DeviceError",
    "DimensionError",
    "ExecutionMode",
    "GuardError",
    "GuardTypeError",
    "NonFiniteStepError",
    "Objective",
    "PlanningError",
    "RunConfig",
    "Session",
    "SessionError",
    "SessionTypeError",
    "Shape",
    "Tensor",
    "TensorError",
    "TensorIndexError",
    "TensorTypeError",
    "TorchLeanError",
    "Trainer",
    "TrainerError",
    "TrainerLabelError",
    "UnknownLabelError",
    "abs",
    "add",
    "autograd",
    "avg_pool",
    "backend",
    "batch_norm",
    "bernoulli_mask",
    "broadcast_to",
    "checkpoint",
    "clamp",
    "concat",
    "conv",
    "conv_transpose",
    "cos",
    "cross_entropy",
    "current_session",
    "data",
    "div",
    "dropout",
    "embedding",
    "enable_grad",
    "exp",
    "from_torch",
    "functional",
    "gather",
    "gelu",
    "getitem",
    "hard_masked_softmax",
    "inv",
    "ir",
    "is_grad_enabled",
    "layer_norm",
    "linear",
    "log",
    "log_softmax",
    "logsumexp",
    "matmul",
    "max_pool",
    "maximum",
    "minimum",
    "models",
    "mse_loss",
    "mul",
    "neg",
    "nn",
    "no_grad",
    "optim",
    "permute",
    "profiler",
    "profiles",
    "rand_uniform",
    "reduce_mean",
    "reduce_sum",
    "relu",
    "reshape",
    "safe_log",
    "scale",
    "scaled_dot_product_attention",
    "scatter_add",
    "session",
    "set_grad_enabled",
    "shapes",
    "sigmoid",
    "sin",
    "slice",
    "smooth_max_pool",
    "softmax",
    "softplus",
    "spec",
    "sqrt",
    "sub",
    "tanh",
    "tensor",
    "trainer",
    "transpose",
    "validation",
]


def _version() -> str:
    """The installed distribution's version (``torchlean --version`` prints the same), or
    ``0+unknown`` (a PEP 440 version below every release) when torchlean runs uninstalled."""
    from importlib import metadata

    try:
        return metadata.version("torchlean")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def __getattr__(name: str) -> _Any:
    value: _Any
    if name == "__version__":
        value = _version()
    elif name in _ALIASES:
        value = _importlib.import_module(_ALIASES[name])
    elif name in _ATTRIBUTES:
        value = getattr(_importlib.import_module(_ATTRIBUTES[name]), name)
    else:
        from torchlean.backend._submodules import submodule

        try:
            value = submodule(__name__, name)  # torchlean.trainer, torchlean.batches, ...
        except AttributeError as error:
            from torchlean._module_hints import TORCH_NAMESPACE_HINTS

            if name in TORCH_NAMESPACE_HINTS:  # torch's name: what torchlean spells so
                raise AttributeError(f"{error}; {TORCH_NAMESPACE_HINTS[name]}", name=name, obj=None) from None
            raise
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names (``__all__``, loaded or not), the public submodules (``batches``, ``cli``,
    ...; loaded or not, so tab completion and "Did you mean" see them; not ``mypy_plugin``, which
    needs mypy) and the module's dunder
    attributes (``__version__`` too, read on first use)."""
    import pkgutil

    # not mypy_plugin, which mypy loads: looking it up imports mypy, a development tool, and
    # help(torchlean) and inspect.getmembers look up every listed name (review167 F1)
    submodules = {m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")}
    submodules.discard("mypy_plugin")
    dunders = {name for name in globals() if name.startswith("__")}
    return sorted(set(__all__) | submodules | {"__version__"} | dunders)


class _Package(_types.ModuleType):
    """The package module. Importing the submodule ``torchlean.tensor`` must not replace the
    public function ``torchlean.tensor`` (the import system sets a package attribute named after
    each loaded submodule); the submodule stays available in ``sys.modules``."""

    def __setattr__(self, name: str, value: _Any) -> None:
        if name == "tensor" and isinstance(value, _types.ModuleType):
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package
