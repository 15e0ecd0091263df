"""Tied weights and parameter groups: one tensor listed at several positions of
:meth:`~torchlean.optim.Optimizer.step_` is one parameter, so its positions must take one update
rule (review85 F1)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from torchlean.optim._common import OptimizerError
from torchlean.optim._groups import ParamGroup


def refuse_split_ties(
    tensors: Sequence[object],
    rule: Callable[[int], object],
    names: Sequence[str],
    groups: Sequence[ParamGroup],
    membership: Sequence[int | None],
    state_difference: Callable[[int, int], str],
) -> None:
    """Refuse a tensor listed at two positions whose update rules or optimizer states differ.

    ``rule(i)`` is what decides position ``i``'s update, compared with ``==`` (asked only when
    some tensor is listed twice, so an untied step pays one set of ids): for a frozen
    position a marker of its own (every frozen position agrees with every other), else its
    record and its group's ``lr_scale`` (the scale, not the scaled rate, so that agreement does
    not depend on the rate ``set_lr`` sets). ``names`` are the parameters' names (empty when
    ``create`` was given none), ``membership[i]`` the group of position ``i`` or ``None``.

    Positions in different groups with the same settings agree: each computes the same update
    from the same value and the same state, so nothing is resolved. torch has one ``Parameter``
    there, which can be in one group only ("some parameters appear in more than one parameter
    group"); torchlean names the positions apart (``0.weight``, ``2.weight``), so a tie in one
    group takes a pattern that matches both names.

    The same state is checked too (review89 F3): ``state_difference(a, b)`` names what differs
    between positions ``a`` and ``b``'s state (``""`` when nothing does). From equal states, the
    positions of one tensor compute equal updates, so their states stay equal; they differ only
    when the state was made where they were separate parameters (an untied run's
    ``state_dict``), and then each position would update its own moments and the tensor take the
    last position's update. torch cannot get there: a tied module has one parameter.

    Raises:
        OptimizerError: the first tensor (in position order) whose later position's rule
            differs from its first position's, naming both positions, their names and groups, and
            a pattern that selects both; else the first whose positions' states differ, naming
            them and what differs.
    """
    if len({id(tensor) for tensor in tensors}) == len(tensors):
        return
    first: dict[int, int] = {}
    for index, tensor in enumerate(tensors):
        earlier = first.setdefault(id(tensor), index)
        if earlier == index:
            continue
        if rule(earlier) != rule(index):
            raise OptimizerError(_split_tie_message(earlier, index, names, groups, membership))
        difference = state_difference(earlier, index)
        if difference:
            raise OptimizerError(
                f"optimizer: parameters {_position(earlier, names)} and {_position(index, names)} are one "
                f"tensor (tied weights), so one parameter, but their optimizer states differ ({difference}): "
                "a state made where they were separate parameters (an untied run's state_dict) would "
                "update each position's state apart and leave the tensor the last position's update; "
                "create the optimizer afresh for the tied parameters, or load a state saved with the tie"
            )


def _position(index: int, names: Sequence[str]) -> str:
    """Position ``index`` as the messages name it: ``2 ('2.weight')``, or ``2`` without names."""
    return f"{index} ({names[index]!r})" if names else str(index)


def _split_tie_message(
    a: int, b: int, names: Sequence[str], groups: Sequence[ParamGroup], membership: Sequence[int | None]
) -> str:
    """The refusal of positions ``a`` and ``b`` (one tensor) whose groups disagree."""

    def placed(index: int) -> str:
        member = membership[index]
        if member is None:
            return "in no group (the optimizer's own settings)"
        return f"in {groups[member].describe()}"

    if names:
        pattern = f"^({re.escape(names[a])}|{re.escape(names[b])})$"
        both = f"a pattern that matches both, such as {pattern!r}"
    else:
        both = "a pattern that matches both"
    return (
        f"optimizer: parameters {_position(a, names)} and {_position(b, names)} are one tensor (tied "
        f"weights), so one parameter, but their groups disagree: {a} is {placed(a)}, {b} {placed(b)}; "
        f"torch refuses a parameter in two parameter groups: put both names in one group ({both}; a "
        "frozen group to freeze the tensor), or give their groups the same settings"
    )
