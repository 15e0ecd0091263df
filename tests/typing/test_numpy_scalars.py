"""numpy scalars are typed as the run time takes them (review129 F1, F2; a group index, F8).

``torchlean.functional``'s docstring: integer parameters "must be Python or numpy integers", flags
"must be bools (Python or numpy)" and real parameters "real numbers"; README says the same of the
types. ``examples/mypy/numpy_scalars.py`` passes a numpy integer, bool or float to every such
parameter: mypy reports nothing there (here, and in test_mypy_examples.py's marker comparison) and
the program runs, so each widened annotation is one the run time accepts. The signature test
keeps new parameters from coming back as plain ``int``/``bool``/``float``.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import re
import runpy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from test_mypy_examples import EXAMPLES, run_mypy

import torchlean.functional as F
from torchlean import Tensor, nn, optim
from torchlean.lr_schedules import warmup_cosine
from torchlean.models import build_model
from torchlean.trainer import RunConfig, Trainer

EXAMPLE = EXAMPLES / "numpy_scalars.py"

# A bare int, bool or float in an annotation: not IntLike, BoolLike, RealLike, np.integer[...],
# nor part of a longer name.
PLAIN = re.compile(r"(?<![\w.])(int|bool|float)(?![\w\[])")
# The aliases written out (as nn.build's seed is) count as the aliases.
SPELLED_OUT = {
    "int | np.integer[Any]": "IntLike",
    "bool | np.bool_": "BoolLike",
    "float | np.floating[Any]": "RealLike",
}


def plain_parameters(functions: Iterator[tuple[str, Callable[..., object]]]) -> list[str]:
    """``name(parameter: annotation)`` for each parameter annotated with a bare int, bool or float
    (an alias written out counts as the alias)."""
    found = []
    for name, function in functions:
        for parameter in inspect.signature(function).parameters.values():
            text = str(parameter.annotation)
            for spelled, alias in SPELLED_OUT.items():
                text = text.replace(spelled, alias)
            if PLAIN.search(text):
                found.append(f"{name}({parameter.name}: {parameter.annotation})")
    return found


def public_functional() -> Iterator[tuple[str, Callable[..., object]]]:
    for name in F.__all__:
        yield f"functional.{name}", getattr(F, name)


def public_tensor_methods() -> Iterator[tuple[str, Callable[..., object]]]:
    """The Tensor methods a user calls, ``__init__`` included (the other dunders are protocols:
    ``__array__(copy: bool | None)`` is numpy's), and the ``requires_grad`` setter."""
    for name, member in vars(Tensor).items():
        if inspect.isfunction(member) and (not name.startswith("_") or name == "__init__"):
            yield f"Tensor.{name}", member
    setter = vars(Tensor)["requires_grad"].fset
    assert setter is not None
    yield "Tensor.requires_grad (setter)", setter


def test_no_functional_or_tensor_parameter_is_a_bare_int_bool_or_float() -> None:
    assert plain_parameters(public_functional()) == []
    assert plain_parameters(public_tensor_methods()) == []


def builders() -> Iterator[tuple[str, Callable[..., object]]]:
    """The functions and methods that take real numbers beside the functional ops: the ``nn``
    layer builders, the optimizers' builders and clipping, the schedule, ``Optimizer``'s methods,
    ``RunConfig``, ``Trainer`` and ``build_model``. Not the records they build (``optim.SGD``,
    ``nn.layers.Dropout``, ``nn.ParamSpec``): their fields say what they store, a float."""
    for module in (nn, optim):
        for name in module.__all__:
            member = getattr(module, name)
            if inspect.isfunction(member):
                yield f"{module.__name__}.{name}", member
    for cls in (optim.Optimizer, RunConfig, Trainer):
        for name, member in vars(cls).items():
            if inspect.isfunction(member) and (not name.startswith("_") or name == "__init__"):
                yield f"{cls.__name__}.{name}", member
    yield "warmup_cosine", warmup_cosine
    yield "build_model", build_model


def test_no_real_parameter_of_a_builder_is_a_bare_float() -> None:
    """review129 F2 (sizes and the layers' own flags stay ``int``/``bool``: README says so; a
    callback's ``float``, ``Trainer.fit(on_batch=, lr_schedule=)``, is what torchlean passes to it
    or takes from it, not an argument)."""
    bare_float = re.compile(r"\(\w+: .*(?<![\w.])float(?![\w\[])")
    found = [entry for entry in plain_parameters(builders()) if bare_float.search(entry)]
    assert [entry for entry in found if "Callable[" not in entry] == []


def test_the_signature_check_sees_a_bare_int() -> None:
    """Control: the check reports what it is meant to report."""

    def axis_only(x: Tensor, axis: int, keep: bool, eps: float, seed: int | None) -> None: ...

    def widened(
        x: Tensor, dim: int | np.integer[Any], keep: bool | np.bool_, eps: float | np.floating[Any] | None
    ) -> None: ...

    assert plain_parameters(iter([("f", axis_only)])) == [
        "f(axis: int)",
        "f(keep: bool)",
        "f(eps: float)",
        "f(seed: int | None)",
    ]
    assert plain_parameters(iter([("g", widened)])) == []


def test_the_example_passes_strict_mypy(tmp_path: Path) -> None:
    reports, stray = run_mypy([EXAMPLE], tmp_path)
    assert stray == []
    assert sorted(r.render() for r in reports) == []


def test_the_example_runs() -> None:
    """Every numpy scalar the example passes is accepted at run time, with the results' shapes of
    the Python values."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        runpy.run_path(str(EXAMPLE), run_name="__main__")
    shapes, flags, *stored = out.getvalue().splitlines()
    assert shapes == str(
        [(2, 3, 4)] * 5 + [(2, 6, 4)] * 2 + [(2, 1, 4)] * 2 + [(2, 3, 4)] * 2
        + [(2, 4, 3), (3, 2, 4), (24,), (2, 2, 3, 4), (2, 2, 2), (2, 3), (2, 3)]
        + [(2, 3, 4)] * 2 + [(2, 1, 4), (2,), (1, 3, 4), (2, 1, 4), (2, 1, 4)] + [(2, 3, 4)] * 7
        + [(), (), (2, 2), (1, 2, 3, 3), (1, 2, 7, 7), (1, 2, 2, 2)]
        + [(2, 3, 4), (2, 3, 4), (2, 1, 3, 4), (2, 4, 3), (2, 12), (6, 4), (2, 3, 4), (2, 3, 4)]
        + [(2, 1, 4), (2,), (2, 1, 4), (2, 3, 4), (2, 1, 4), (2, 1, 4), (4,), (2, 3, 4), (2, 3, 4)]
    )
    assert flags == "bool False True"  # the setter stored a Python bool; backward ran
    # the records store Python floats and bools (converted as before), the trainer a float
    assert stored == ["float 0.25 float 0.25", "float False True float", "2 2 0.0 float 2", "True"]
