"""Parameter groups: torch's ``param_groups``, selected by parameter name (:func:`group`)."""

from __future__ import annotations

import inspect
import math
import numbers
import re
from collections.abc import Callable, Iterable, Mapping, Sequence, Sized
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from torchlean._checks import plain_bool, plain_float, shown, shown_briefly
from torchlean.optim._common import (
    OptimizerError,
    _type_name,
    container_name,
    is_single_value,
    listed_entries,
)
from torchlean.tensor import BoolLike, RealLike, _preview

if TYPE_CHECKING:
    from torchlean.optim._records import OptimizerConfig


class GroupSelectionError(OptimizerError):
    """A parameter group selects no parameter (``group``: the group; ``names``: every parameter's
    name, which the message lists)."""

    def __init__(self, message: str, group: ParamGroup, names: Sequence[str]) -> None:
        super().__init__(message)
        self.group = group
        self.names = tuple(names)


def names_shown(names: Sequence[str], limit: int = 40) -> str:
    """``names`` joined by commas for a message: all of them up to ``limit``, else the first
    ``limit // 2`` and how many more."""
    if len(names) <= limit:
        return ", ".join(names)
    return f"{', '.join(names[: limit // 2])}, ... ({len(names) - limit // 2} more)"


Selector = Callable[[str, tuple[int, ...]], bool]
"""A group's selection function: ``(name, shape) -> bool`` for each parameter."""

@dataclass(frozen=True, slots=True)
class ParamGroup:
    r"""Other hyper-parameters for the parameters a group selects: torch's parameter groups
    (``torch.optim.AdamW([{"params": decay}, {"params": no_decay, "weight_decay": 0.0}])``),
    selected by name. Build one with :func:`group`; :meth:`OptimizerConfig.create` (``groups=``)
    and ``RunConfig(param_groups=...)`` take them.

    ``match`` is a regular expression (a string or a compiled ``re.Pattern``) searched in each
    parameter's name (``re.search``: ``r"bias$"`` selects ``0.bias`` and ``2.bias``, ``r"^0\."``
    the first layer's; a layer norm's scale is ``1.weight`` or ``3.ln1.weight``, named by its
    position, not by its kind) or a function ``(name, shape) -> bool`` (nanoGPT's rule, no decay
    for biases and norm scales: ``lambda name, shape: len(shape) < 2``; a lambda or a local
    function cannot be pickled, so a ``RunConfig`` or an unrun ``Trainer`` holding one deep-copies
    but does not pickle: use a module-level function to send it to another process).
    ``overrides`` are ``(field, value)`` pairs of the optimizer record (``weight_decay``,
    ``beta1``, ``momentum``, ``amsgrad``, ...) and ``lr_scale``: the group's learning rate is the
    optimizer's times ``lr_scale`` (torch's groups hold a rate of their own, which its schedulers
    scale with the others; a scale states that).

    ``frozen=True`` freezes the parameters the group selects, as torch's
    ``p.requires_grad_(False)`` (fine-tuning with a fixed backbone): the optimizer never updates
    them, whatever gradient it is given (no step, no weight decay, no moment buffers: their state
    is neither kept nor saved), :meth:`Optimizer.step_` leaves their gradients out of its clipping
    norm, and a ``Trainer`` computes no gradient for them. A frozen group takes no overrides
    (they would never apply), and may select parameters another group selects too, as torch's
    ``requires_grad_(False)`` applies to a parameter of any group: they are frozen (a no-decay
    group for every bias beside a frozen first layer needs no pattern that leaves that layer out).

    Weights tied by passing one tensor at two positions of :meth:`Optimizer.step_` (an embedding
    table and the LM head, ``0.weight`` and ``2.weight``) are one parameter: both names must get
    the same settings (one group whose pattern matches both, groups with the same overrides, or
    both frozen), else ``step_`` refuses the step, as torch refuses a parameter in two groups.

    Raises:
        OptimizerError: ``match`` neither a regular expression nor callable, a class (``int``,
            ``str``: its call builds an instance, not a bool), or a function whose signature
            cannot take ``(name, shape)``; an override named
            ``lr`` (use ``lr_scale``), a name that is not a string, a value that is neither a bool
            nor a real number, ``lr_scale`` not a finite real number >= 0 (bools refused);
            ``frozen`` not a bool, or ``True`` with overrides.
    """

    match: str | re.Pattern[str] | Selector
    overrides: tuple[tuple[str, float | bool], ...] = ()
    frozen: bool = False
    spelled: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    """``(field, as written)`` for an override given in torch's spelling (``(("decay", "alpha"),)``
    for ``optim.group(..., alpha=0.9)``): :meth:`describe` and refusals show the written name."""

    def __post_init__(self) -> None:
        if isinstance(self.match, re.Pattern):
            if not isinstance(self.match.pattern, str):
                raise OptimizerError(f"optimizer: a group pattern must match text, got {self.match!r}")
        elif isinstance(self.match, str):
            try:
                re.compile(self.match)
            except (re.error, OverflowError, RecursionError) as error:  # a{99999999999}, deep nesting
                detail = str(error) if isinstance(error, re.error) else f"{type(error).__name__}: {error}"
                raise OptimizerError(
                    f"optimizer: group pattern {_preview(self.match, 80)} is not a regular expression "
                    f"Python compiles ({detail})"
                ) from None
        elif not callable(self.match):
            raise OptimizerError(
                "optimizer: a group selects by a regular expression (str) or a function (name, shape) "
                f"-> bool, got {self.match!r}"
            )
        else:
            _check_selector(self.match)
        overrides: list[tuple[str, float | bool]] = []
        for key, value in _listed_pairs(self.overrides):
            if not isinstance(key, str):
                raise OptimizerError(f"optimizer: a group override is named by a string, got {key!r}")
            if key == "lr":
                raise OptimizerError(
                    f"optimizer: a group takes lr_scale, not lr (its rate is the optimizer's lr times "
                    f"lr_scale, so schedules scale every group), got lr={value!r}"
                )
            overrides.append((key, _override_value(key, value)))
        object.__setattr__(self, "overrides", tuple(overrides))
        if not isinstance(self.frozen, (bool, np.bool_)):
            raise OptimizerError(f"optimizer: frozen must be a bool, got {self.frozen!r}")
        object.__setattr__(self, "frozen", bool(self.frozen))
        if self.frozen and overrides:
            raise OptimizerError(
                f"optimizer: {self.describe()} freezes its parameters, which are never updated, so it "
                f"takes no hyper-parameters (got {', '.join(key for key, _ in overrides)}): give them to "
                "another group"
            )

    @property
    def lr_scale(self) -> float:
        """The factor of the optimizer's learning rate this group runs at (1.0 unless set)."""
        return float(dict(self.overrides).get("lr_scale", 1.0))

    def selects(self, name: str, shape: tuple[int, ...]) -> bool:
        """Whether this group selects the parameter ``name`` of ``shape``.

        An exception the selection function raises propagates as it is, with a note naming the
        group and the parameter (review239 F14: neither was named).

        Raises:
            OptimizerError: the selection function returns something other than a bool
                (``optimizer: optim.group(f) must return a bool for each parameter, got 1 for
                '0.bias'``).
            Exception: what the selection function raises, noted ``in optim.group(f), selecting
                parameter '0.bias' of shape (3,): called as f('0.bias', (3,))``.
        """
        if isinstance(self.match, str):
            return re.search(self.match, name) is not None
        if isinstance(self.match, re.Pattern):
            return self.match.search(name) is not None
        try:
            chosen = self.match(name, shape)
        except Exception as error:  # the user's function: its error, noting where it was called
            label = getattr(self.match, "__qualname__", "match")
            error.add_note(
                f"in {self.describe()}, selecting parameter {name!r} of shape {shape}: called as "
                f"{label}({name!r}, {shape})"
            )
            raise
        if not isinstance(chosen, (bool, np.bool_)):
            raise OptimizerError(
                f"optimizer: {self.describe()} must return a bool for each parameter, got "
                f"{shown_briefly(chosen)} of type {type(chosen).__name__} for {name!r}"
            )
        return bool(chosen)

    def describe(self) -> str:
        """``optim.group('bias', weight_decay=0.0)``: the group as :func:`group` builds it (a
        function shown by its name)."""
        if isinstance(self.match, str | re.Pattern):
            shown_match = repr(self.match)
        else:
            shown_match = getattr(self.match, "__qualname__", "function")
        written = dict(self.spelled)
        values = dict(self.overrides)
        parts = [shown_match]
        for key, value in self.overrides:
            if written.get(key) == "betas" and {"beta1", "beta2"} <= values.keys():  # one keyword, two fields
                if key == "beta1":
                    parts.append(f"betas=({value!r}, {values['beta2']!r})")
                continue
            parts.append(f"{written.get(key, key) if written.get(key) != 'betas' else key}={value!r}")
        if self.frozen:
            parts.append("frozen=True")
        return f"optim.group({', '.join(parts)})"


def freezing(groups: Sequence[ParamGroup]) -> str:
    """The frozen ones of ``groups`` as the subject of a refusal: ``optim.group('^0', frozen=True)
    freezes``, or ``A and B freeze`` for two."""
    frozen = [g.describe() for g in groups if g.frozen]
    return f"{' and '.join(frozen)} {'freezes' if len(frozen) == 1 else 'freeze'}"


def _listed_pairs(overrides: object) -> list[tuple[object, object]]:
    """``overrides`` as ``(key, value)`` pairs (a mapping's items, or a sequence of pairs)."""
    items = overrides.items() if isinstance(overrides, Mapping) else overrides
    if not isinstance(items, Iterable) or isinstance(items, str | bytes):
        raise OptimizerError(f"optimizer: group overrides must be (name, value) pairs, got {overrides!r}")
    pairs = [tuple(item) if isinstance(item, tuple | list) else item for item in items]
    if any(not isinstance(pair, tuple) or len(pair) != 2 for pair in pairs):
        raise OptimizerError(f"optimizer: group overrides must be (name, value) pairs, got {overrides!r}")
    return pairs


def _override_value(key: str, value: object) -> float | bool:
    """A group override's value: a bool stays a bool (``amsgrad``, ``nesterov``), an int stays an
    int (so a bool field's refusal shows what was written), another real number becomes a float
    (its domain is the record's, checked by :func:`_group_config`); ``lr_scale`` must be a real
    number (not a bool), finite and >= 0."""
    if isinstance(value, (bool, np.bool_)):
        if key == "lr_scale":
            raise OptimizerError(f"optimizer: lr_scale must be a real number, got {value!r}")
        return bool(value)
    if not isinstance(value, numbers.Real):
        raise OptimizerError(
            f"optimizer: group override {key} must be a bool or a real number, got {value!r}"
        )
    try:
        number = float(value) + 0.0
    except OverflowError:
        raise OptimizerError(
            f"optimizer: group override {key} must be finite, got {shown(value)} (beyond the float range)"
        ) from None
    if key == "lr_scale" and not (math.isfinite(number) and number >= 0.0):
        raise OptimizerError(f"optimizer: lr_scale must be finite and nonnegative, got {value!r}")
    return int(value) if isinstance(value, int | np.integer) and key != "lr_scale" else number


def group(
    match: str | re.Pattern[str] | Selector,
    /,
    *,
    betas: tuple[RealLike, RealLike] | None = None,
    alpha: RealLike | None = None,
    frozen: BoolLike = False,
    **overrides: RealLike | BoolLike,
) -> ParamGroup:
    """A parameter group (:class:`ParamGroup`): the parameters ``match`` selects by name (a
    regular expression searched in the name, or a function ``(name, shape) -> bool``) take the
    ``overrides`` of the optimizer's hyper-parameters, and ``lr_scale`` times its rate. torch's

        AdamW([{"params": decay}, {"params": no_decay, "weight_decay": 0.0}], lr=3e-4, weight_decay=0.1)

    is ``optim.adamw(3e-4, weight_decay=0.1)`` with ``groups=[optim.group(lambda name, shape:
    len(shape) < 2, weight_decay=0.0)]`` (biases and norm scales; ``optim.group(r"bias$",
    weight_decay=0.0)`` for the biases alone). ``betas=(b1, b2)`` is torch's spelling of
    ``beta1``/``beta2`` and ``alpha`` RMSprop's of ``decay``. Which overrides the optimizer takes
    and their domains are checked when the optimizer is created.

    ``optim.group(r"^0\\.", frozen=True)`` freezes the first layer's parameters, torch's ``for p in
    model[0].parameters(): p.requires_grad_(False)`` (:class:`ParamGroup`: no update, no state,
    out of the clipping norm, no gradient computed by a ``Trainer``).

    Raises:
        OptimizerError: as :class:`ParamGroup`; ``betas`` not a pair, or given with
            ``beta1``/``beta2``; ``alpha`` given with ``decay``; ``frozen`` not a bool, or with
            overrides.
    """
    spelled: tuple[tuple[str, str], ...] = ()
    if alpha is not None:
        if "decay" in overrides:
            raise OptimizerError(
                f"optimizer: pass alpha or decay, not both (got alpha={alpha!r}, "
                f"decay={overrides['decay']!r})"
            )
        overrides = {**overrides, "decay": alpha}
        spelled = (("decay", "alpha"),)
    if betas is not None:
        pair = betas_pair(betas)
        if "beta1" in overrides or "beta2" in overrides:
            given = {k: overrides[k] for k in ("beta1", "beta2") if k in overrides}
            raise OptimizerError(
                f"optimizer: pass betas or beta1/beta2, not both (got betas={betas!r}, {given})"
            )
        overrides = {**overrides, "beta1": pair[0], "beta2": pair[1]}
        spelled = (*spelled, ("beta1", "betas"), ("beta2", "betas"))
    plain = tuple((key, _plain_override(value)) for key, value in overrides.items())
    return ParamGroup(match, plain, plain_bool(frozen), spelled)


ALPHA_IS_DECAY = "torch's RMSprop alpha, stored as decay"


def betas_pair(betas: object) -> tuple[Any, Any]:
    """Torch's ``betas=`` as its two values: a tuple, list or 1-d numpy array of two entries
    (torch takes ``np.array([0.9, 0.99])`` too: review196 F2), each checked later as ``beta1``
    and ``beta2`` are.

    Raises:
        OptimizerError: anything else (a generator, a string, three values, an array of another
            shape, refused by its shape before any entry is read)."""
    if isinstance(betas, np.ma.MaskedArray) and np.ma.is_masked(betas):  # tolist() gives None
        raise OptimizerError(
            "optimizer: betas must be a pair of numbers, got a masked array with a masked entry"
        )
    # a 1-d array of two entries only: tolist() of a view declaring 2**40 entries raised a bare
    # MemoryError (review239 F2); any other array is refused below as not a pair
    values = betas.tolist() if isinstance(betas, np.ndarray) and betas.shape == (2,) else betas
    if not isinstance(values, tuple | list) or len(values) != 2:
        raise OptimizerError(
            "optimizer: betas must be a pair (beta1, beta2), as torch's: a tuple, list or 1-d array of two "
            f"numbers, got {_shown_pair(betas)}"
        )
    return values[0], values[1]


def _shown_pair(betas: object) -> str:
    """``betas`` as a refusal shows it: an array by its shape and dtype, which its repr may not
    reach within a line (a 2-d view of 2**40 entries, review241 F7, review242 F7)."""
    if isinstance(betas, np.ndarray):
        return f"an array of shape {betas.shape} ({betas.dtype}): {shown_briefly(betas)}"
    return shown_briefly(betas)


def _check_selector(match: Callable[..., object]) -> None:
    """Refuse a selection function that cannot be called as ``match(name, shape)`` (a one-argument
    ``lambda name: ...``), naming the call, when its signature says so (review196 F4: the
    ``TypeError`` escaped from ``create``); a callable without a signature Python can read is
    called as it is.

    A class (``int``, ``str``, ``bool``, a class of one's own) is refused too (review239 F14):
    calling one builds an instance, not a bool, and a builtin's signature cannot be read, so
    ``optim.group(int, ...)`` was taken and ``create`` failed with ``'tuple' object cannot be
    interpreted as an integer``, naming neither the group nor the parameter.

    Raises:
        OptimizerError: ``match`` is a class, or cannot take two positional arguments."""
    if isinstance(match, type):
        raise OptimizerError(
            "optimizer: a group function is called as match(name, shape), name a string and shape a tuple "
            f"of ints, and returns a bool; got the class {match.__qualname__}, whose call builds an "
            f"instance (accepted: a function such as lambda name, shape: len(shape) < 2, or a regular "
            "expression)"
        )
    try:
        signature = inspect.signature(match)
    except (TypeError, ValueError):  # a builtin without a text signature
        return
    try:
        signature.bind("name", (1,))
    except TypeError:
        shown_match = getattr(match, "__qualname__", repr(match))
        raise OptimizerError(
            "optimizer: a group function is called as match(name, shape), name a string and shape a tuple "
            f"of ints, and returns a bool; {shown_match} takes {signature}"
        ) from None


def as_written(error: OptimizerError, stored: str, written: str, note: str) -> OptimizerError:
    """``error`` (a refusal of the field ``stored`` alone) naming it ``written``, as the user spelt
    it, with ``note`` saying what it is here: ``alpha must be ... got 1.5 (torch's RMSprop alpha,
    stored as decay)``."""
    message = re.sub(rf"\b{re.escape(stored)}\b", written, str(error))
    return OptimizerError(f"{message} ({note})")


def _plain_override(value: RealLike | BoolLike) -> float | bool:
    """An override of :func:`group` as :class:`ParamGroup` stores it: a numpy bool or float as the
    Python one (as ``ParamGroup`` converts it), anything else unchanged for its checks."""
    return bool(value) if isinstance(value, np.bool_) else plain_float(value)


def _listed_groups(groups: object) -> list[ParamGroup]:
    """``groups`` as a list of :class:`ParamGroup` (any sequence of them).

    Raises:
        OptimizerError: not a sequence (one group alone included; a 0-d array or tensor, which
            Python cannot iterate though it says it can), more entries than memory holds, or an
            entry that is not a group.
    """
    refusal = (
        f"optimizer: groups must be a sequence of optim.group(...) records, got {container_name(groups)}"
    )
    single = isinstance(groups, ParamGroup) or is_single_value(groups, arrays=False)
    if single or not isinstance(groups, Iterable):
        raise OptimizerError(refusal)
    return listed_entries(groups, refusal, lambda index, entry: None if isinstance(entry, ParamGroup) else (
        f"optimizer: group {index} must be an optim.group(...) record, got {_type_name(entry)}"
    ))


def _checked_names(names: object, count: int, required: bool) -> tuple[str, ...]:
    """The parameters' names for ``create``: one string per parameter, or none at all.

    Raises:
        OptimizerError: groups without names; names that are not a sequence of ``count`` strings
            (a 0-d array or tensor included; a sized one of another length is refused by its
            length before any entry is read, review239 F2).
    """
    if names is None:
        if required:
            raise OptimizerError(
                "optimizer: groups select parameters by name: pass names= (for a model, model.names)"
            )
        return ()
    if is_single_value(names, arrays=False) or not isinstance(names, Iterable):
        raise OptimizerError(f"optimizer: names must be a sequence of strings, got {container_name(names)}")
    if isinstance(names, Sized) and len(names) != count:
        raise OptimizerError(f"optimizer: expected {count} names (one per parameter), got {len(names)}")
    listed = listed_entries(
        names, f"optimizer: names must be a sequence of strings, got {_type_name(names)}",
        lambda _, name: None if isinstance(name, str) else f"optimizer: names must be strings, got {name!r}",
    )
    if len(listed) != count:
        raise OptimizerError(f"optimizer: expected {count} names (one per parameter), got {len(listed)}")
    return tuple(listed)


def _membership(
    groups: Sequence[ParamGroup], names: Sequence[str], shapes: Sequence[tuple[int, ...]]
) -> tuple[int | None, ...]:
    """Per parameter, the index of the one group that selects it, or ``None``. Freezing is not a
    group in torch (``requires_grad_(False)`` on a parameter of any group), so a frozen group may
    select parameters that other groups select too: such a parameter is frozen (its first frozen
    group's), and the other groups' overrides never apply to it.

    Raises:
        OptimizerError: a parameter two groups that are not frozen select (torch refuses a
            parameter in two groups).
        GroupSelectionError: a group that selects none (a misspelt pattern), naming the
            parameters.
    """
    membership: list[int | None] = []
    selecting: set[int] = set()
    for name, shape in zip(names, shapes, strict=True):
        hits = [index for index, g in enumerate(groups) if g.selects(name, tuple(shape))]
        selecting.update(hits)
        warm = [index for index in hits if not groups[index].frozen]
        if len(warm) > 1:
            raise OptimizerError(
                f"optimizer: parameter {name!r} is selected by {groups[warm[0]].describe()} and "
                f"{groups[warm[1]].describe()} (a parameter belongs to one group, as in torch)"
            )
        cold = [index for index in hits if groups[index].frozen]
        chosen = cold or hits
        membership.append(chosen[0] if chosen else None)
    for index, g in enumerate(groups):
        if index not in selecting:
            message = f"optimizer: {g.describe()} selects no parameter (names: {names_shown(names)})"
            raise GroupSelectionError(message, g, names)
    return tuple(membership)


_NOT_PER_GROUP = ("lr", "initial_accumulator_value")
"""Fields a group does not override: the rate (``lr_scale`` scales it) and Adagrad's starting sum
(torch's Adagrad initialises every group's state from the constructor's value)."""


def _group_config(config: OptimizerConfig, g: ParamGroup) -> OptimizerConfig:
    """``config`` with ``g``'s overrides and its learning rate times ``g.lr_scale``, validated.

    Raises:
        OptimizerError: an override ``config`` has no field for, or out of its domain (the
            record's message, then ``(in optim.group(...))``).
    """
    accepted = [f.name for f in fields(config) if f.name not in _NOT_PER_GROUP]  # type: ignore[arg-type]
    changes = {key: value for key, value in g.overrides if key != "lr_scale"}
    if "initial_accumulator_value" in changes:
        raise OptimizerError(
            f"optimizer: {g.describe()} sets initial_accumulator_value, which torch's Adagrad takes "
            "from the optimizer only (it ignores a group's): set it in optim.adagrad(...)"
        )
    unknown = [key for key in changes if key not in accepted]
    if unknown:
        written = dict(g.spelled).get(unknown[0], unknown[0])  # as the user spelt it (review196 F3)
        raise OptimizerError(
            f"optimizer: {g.describe()} sets {written}, which optim.{config.name} does not take "
            f"(accepted: {', '.join([*accepted, 'lr_scale'])})"
        )
    for stored, written in g.spelled:  # refused alone: named as written (alpha, not decay)
        if written != "alpha":  # betas' values are refused as beta1's and beta2's, which they are
            continue
        try:
            replace(config, **{stored: changes[stored]})  # type: ignore[type-var]
        except OptimizerError as error:
            raise OptimizerError(
                f"{as_written(error, stored, written, ALPHA_IS_DECAY)} (in {g.describe()})"
            ) from None
    try:
        return replace(config, lr=config.lr * g.lr_scale, **changes)  # type: ignore[type-var]
    except OptimizerError as error:
        raise OptimizerError(f"{error} (in {g.describe()})") from None
