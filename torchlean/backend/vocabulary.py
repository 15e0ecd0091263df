"""The closed vocabularies of the capsule system (anchor-backend.md §1; seed chapter).

Each enum member is UPPER_CASE and carries its stable string in ``.label``
(``BackendOp.SCALED_DOT_PRODUCT_ATTENTION.label == "scaled_dot_product_attention"``).
``Enum.parse(label)`` is the inverse and raises :class:`UnknownLabelError` naming the accepted
labels; it returns a member of its own enum as it is and refuses any other non-string with a
``BackendTypeError`` naming its type (review121 F3). Catalog/enumeration order is the original's
Generation-B order.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Self

from torchlean.backend.display import name_shown
from torchlean.backend.errors import UnknownLabelError

_CUDA_ORDINAL = re.compile(r"cuda:[0-9]+", re.ASCII)
"""A CUDA device with an ordinal as torch spells it (``cuda:1``): not a :class:`Device` label."""

__all__ = [
    "BackendOp",
    "ContractObligation",
    "Device",
    "LabelledEnum",
    "Provider",
    "ReductionPolicy",
    "TensorLayout",
    "TrustLevel",
    "VJPMode",
    "did_you_mean",
]


def did_you_mean(
    word: str, known: Iterable[str], *, close: bool = False, devices: Mapping[str, str] | None = None
) -> str:
    """``; did you mean <name>?`` when ``word`` is one of ``known`` with ``-`` and ``_`` swapped
    (the objective ``cross_entropy`` for ``cross-entropy``, the op ``log-softmax`` for
    ``log_softmax``, the profile ``checked-cpu`` for ``checked_cpu``: review123 F6, review126 F5),
    in another case (``Relu``), or with a typing slip: two neighbouring letters swapped (``rleu``)
    or one letter doubled (``matmull``); else ``""``: the suffix of an unknown-label message.

    With ``close`` (profile and command names), also the closest name of
    :func:`difflib.get_close_matches` at ratio 0.75, case ignored (``checkd_cpu``, ``trian``:
    review197 F3), unless the word names another device than the name's (``fast_cuda`` is no typo
    of ``fast_cpu``), the name's device being ``devices[name]`` where given (a profile's, which
    its name need not say), else the device word in it. Op labels take no such guess: torch's own
    names sit one letter from other ops (``sign`` and ``sin``, ``tan`` and ``tanh``, ``elu`` and
    ``relu``: review200 F1), and :data:`_NOT_SLIPS` are torch's names that look like slips."""
    names = list(known)
    folded = {name.lower(): name for name in names}
    lowered = word.lower()
    near = next((folded[k] for k in (lowered, lowered.replace("-", "_"), lowered.replace("_", "-"))
                 if k in folded), None)
    if near is None and lowered not in _NOT_SLIPS:
        near = next((folded[k] for k in _slips(lowered) if k in folded), None)
    if near is None and close:
        import difflib  # only on a refusal's path

        typed = _devices(lowered)  # a device the word names must be the name's (no device: no conflict)
        for found in difflib.get_close_matches(lowered, list(folded), n=3, cutoff=0.75):
            name = folded[found]
            named = {devices[name]} if devices is not None and name in devices else _devices(found)
            if not typed or typed == named:
                near = name
                break
    return "" if near is None else f"; did you mean {near}?"


_NOT_SLIPS = frozenset({"rrelu"})
"""torch's names that a typing slip of an op label would also give (``rrelu``, randomized leaky
ReLU, is no ``relu`` with a doubled ``r``: review201 F3, review203 F7)."""


def _slips(word: str) -> Iterator[str]:
    """``word`` with two neighbouring letters swapped, or one doubled letter single: the typing
    slips :func:`did_you_mean` undoes."""
    for i in range(len(word) - 1):
        if word[i] != word[i + 1]:
            yield word[:i] + word[i + 1] + word[i] + word[i + 2:]
        else:
            yield word[:i] + word[i + 1:]


def _devices(name: str) -> set[str]:
    """The device words (``cpu``, ``cuda``, and others' ``gpu``, ``tpu``, ``mps``, ``xla``) among
    ``name``'s ``_``/``-``-separated parts."""
    words = ("cpu", "cuda", "gpu", "tpu", "mps", "xla")
    return {part for part in name.replace("-", "_").split("_") if part in words}


class LabelledEnum(enum.Enum):
    """An enum whose members carry a stable, user-visible ``label`` string."""

    @property
    def label(self) -> str:
        value = self._value_  # the member's value; ``self.value`` is a slower enum property
        assert isinstance(value, str)
        return value

    @classmethod
    def kind(cls) -> str:
        """Human name of the vocabulary, used in error messages (``"op"``, ``"device"``...)."""
        return cls.__name__

    @classmethod
    def labels(cls) -> list[str]:
        return [member.label for member in cls]

    @classmethod
    def parse(cls, label: str | Self) -> Self:
        """Return the member whose label is exactly ``label`` (case-sensitive); a member of this
        very enum is returned as it is.

        Raises:
            UnknownLabelError: ``unknown <kind> <label> (known: a | b | ...)``.
            BackendTypeError: neither a string nor a member of this enum (a member of another
                enum included): ``<kind> must be a <Enum> or one of its labels (a | b | ...), got
                None (NoneType)``.
        """
        if not isinstance(label, str):
            return cls._member(label, cls.kind())
        for member in cls:
            if member.label == label:
                return member
        known = " | ".join(cls.labels())
        near = did_you_mean(label, cls.labels())
        raise UnknownLabelError(f"unknown {cls.kind()} {name_shown(label)} (known: {known}){near}")

    @classmethod
    def _member(cls, value: object, what: str) -> Self:
        """:meth:`parse` of what is not a string: a member of this enum, returned as it is.

        Raises:
            BackendTypeError: anything else: ``{what} must be a {Enum} or one of its labels
                (a | b | ...), got {value} ({type})``.
        """
        from torchlean.backend.fields import parse_member  # fields imports this module

        return parse_member(cls, value, what)

    def __str__(self) -> str:
        return self.label


class Device(LabelledEnum):
    """Execution targets (anchor-backend.md §1.1). ``label`` is the original's ``cliName``."""

    CPU = "cpu"
    CUDA = "cuda"
    ROCM = "rocm"
    METAL = "metal"
    WASM = "wasm"
    TPU = "tpu"
    TRAINIUM = "trainium"
    CUSTOM = "custom"
    EXTERNAL = "external"

    @classmethod
    def parse(cls, label: str | Device) -> Device:
        """Parse a device name (a :class:`Device` is returned as it is); the error text is the
        original's verbatim for a non-empty name without blanks at its ends (others are shown as
        their literal, e.g. ``''``).

        A ``Device`` names the kind of target only, so a CUDA device with an ordinal (``cuda:1``)
        is refused, with a note after the original's text: such a device string is accepted where
        one is taken (``Tensor.to``, ``torchlean.tensor(device=...)``, the command line's
        ``--device``), and its target here is ``cuda``.

        Raises:
            UnknownLabelError: ``unknown device {value} (known targets: cpu | cuda | ...)``.
            BackendTypeError: neither a string nor a ``Device``: ``device must be a Device or one
                of its labels (cpu | cuda | ...), got None (NoneType)``.
        """
        if not isinstance(label, str):
            return cls._member(label, "device")
        for member in cls:
            if member.label == label:
                return member
        known = " | ".join(cls.labels())
        message = f"unknown device {name_shown(label)} (known targets: {known})"
        if isinstance(label, str) and _CUDA_ORDINAL.fullmatch(label):
            message += (
                f"; a Device names the kind of target only ({label} is target cuda, Device.CUDA); a "
                "device string with an ordinal is accepted by Tensor.to, torchlean.tensor(device=...) "
                "and the command line's --device"
            )
        raise UnknownLabelError(message)


class Provider(LabelledEnum):
    """Who implements a capsule (Generation B: 14 providers, anchor-backend.md §1.2)."""

    REFERENCE = "reference"
    TORCHLEAN = "torchlean"
    NATIVE_CUDA = "native-cuda"
    LIBTORCH = "libtorch"
    ATEN = "aten"
    MPS = "mps"
    WEBGPU = "webgpu"
    CUBLAS = "cublas"
    CUDNN = "cudnn"
    CUFFT = "cufft"
    XLA = "xla"
    NEURON = "neuron"
    CUSTOM_CHIP = "custom-chip"
    EXTERNAL = "external"

    @classmethod
    def kind(cls) -> str:
        return "provider"


class BackendOp(LabelledEnum):
    """Semantic operation families (47, anchor-backend.md §1.3).

    Rank, axes, padding, strides and index tensors stay in the graph payload, not in the op.
    """

    RAND_UNIFORM = "rand_uniform"
    BERNOULLI_MASK = "bernoulli_mask"
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    SCALE = "scale"
    ABS = "abs"
    SQRT = "sqrt"
    CLAMP = "clamp"
    MAX = "max"
    MIN = "min"
    RELU = "relu"
    GELU = "gelu"
    SIGMOID = "sigmoid"
    TANH = "tanh"
    SOFTPLUS = "softplus"
    EXP = "exp"
    LOG = "log"
    SIN = "sin"
    COS = "cos"
    INV = "inv"
    SAFE_LOG = "safe_log"
    LOG_SOFTMAX = "log_softmax"
    SOFTMAX = "softmax"
    HARD_MASKED_SOFTMAX = "hard_masked_softmax"
    REDUCE_SUM = "reduce_sum"
    REDUCE_MEAN = "reduce_mean"
    RESHAPE = "reshape"
    PERMUTE = "permute"
    BROADCAST = "broadcast"
    CONCAT = "concat"
    SLICE = "slice"
    GATHER = "gather"
    SCATTER_ADD = "scatter_add"
    MATMUL = "matmul"
    LINEAR = "linear"
    MSE_LOSS = "mse_loss"
    LAYER_NORM = "layer_norm"
    BATCH_NORM = "batch_norm"
    CONV = "conv"
    CONV_TRANSPOSE = "conv_transpose"
    MAX_POOL = "max_pool"
    SMOOTH_MAX_POOL = "smooth_max_pool"
    AVG_POOL = "avg_pool"
    FFT_FNO = "fft_fno"
    SELECTIVE_SCAN = "selective_scan"
    SCALED_DOT_PRODUCT_ATTENTION = "scaled_dot_product_attention"

    @classmethod
    def kind(cls) -> str:
        return "op"

    @property
    def requires_vjp(self) -> bool:
        """False only for the two seeded random sources, which create non-differentiable values."""
        return self not in (BackendOp.RAND_UNIFORM, BackendOp.BERNOULLI_MASK)


class TrustLevel(LabelledEnum):
    """``checked``: maintained guards and tests; ``trusted-external``: an assumed boundary."""

    CHECKED = "checked"
    TRUSTED_EXTERNAL = "trusted-external"

    @classmethod
    def kind(cls) -> str:
        return "trust level"


class VJPMode(LabelledEnum):
    """Who owns a capsule's local VJP (seed chapter, "Forward And Backward Ownership").

    The tape drives every backward traversal; the mode says what computes the local rule.
    ``torchlean-tape``: torchlean composes it from runtime operations (numpy under ``reference``,
    torch ops such as ``matmul`` under ``aten``; a step of the composition may be a fused kernel,
    as the softmax step of ``aten``'s unmasked attention VJP). ``backend-vjp``: the local VJP is a
    backend kernel, as ``native-cuda``'s C++ ``<op>_backward`` entry points and the ``aten``
    capsules whose VJP is ATen's own backward kernel of that op (``convolution_backward``,
    ``native_layer_norm_backward``, ...).
    ``none``: no VJP. As a policy, ``torchlean-tape`` admits capsules of either mode and
    ``backend-vjp`` only ``backend-vjp`` ones (anchor-backend.md §1.6).
    """

    NONE = "none"
    TORCHLEAN_TAPE = "torchlean-tape"
    BACKEND_VJP = "backend-vjp"

    @classmethod
    def kind(cls) -> str:
        return "vjp mode"


class TensorLayout(LabelledEnum):
    """Storage layouts a capsule can claim compatibility with (anchor-backend.md §1.10)."""

    CANONICAL_TENSOR = "canonical-tensor"
    FLAT_ROW_MAJOR = "flat-row-major"
    LIBTORCH_CUDA_VIEW = "libtorch-cuda-view"

    @classmethod
    def kind(cls) -> str:
        return "tensor layout"


class ContractObligation(LabelledEnum):
    """The four obligations every capsule carries, in their fixed report order."""

    SHAPE = "shape"
    LAYOUT = "layout"
    VALUE = "value"
    VJP = "vjp"

    @classmethod
    def kind(cls) -> str:
        return "obligation"


class ReductionPolicy(LabelledEnum):
    """Order in which a capsule adds products (seed chapter, "NumericalPolicy")."""

    FIXED_LEFT = "fixed-left"
    IMPLEMENTATION_DEFINED = "implementation-defined"
    NOT_APPLICABLE = "n/a"

    @classmethod
    def kind(cls) -> str:
        return "reduction policy"
