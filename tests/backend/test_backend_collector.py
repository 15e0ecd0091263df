"""Python's cyclic collector paused around whole-graph planning (``torchlean.backend.collector``):
it is off during ``plan_graph``/``accept_graph`` and back to its former state after, also when
planning raises; results are unchanged. Oracle: ``gc.isenabled()`` observed inside the planner."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from torchlean import nn
from torchlean.backend import graph as backend_graph
from torchlean.backend import profiles
from torchlean.backend.collector import collector_paused
from torchlean.nn.lowering import lower_model


def _graph():  # type: ignore[no-untyped-def]
    model = nn.build(nn.sequential(nn.linear(3, 4), nn.relu(), nn.linear(4, 2)), seed=0, dtype=np.float32)
    return lower_model(model, (2, 3)).built.graph


@pytest.fixture
def collector_on():  # type: ignore[no-untyped-def]
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_the_pause_restores_the_former_state_also_on_an_exception(collector_on: None) -> None:
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():  # nested: the outer one enables it again
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("planning failed")
    assert gc.isenabled()
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()  # a collector disabled by the caller stays disabled
    gc.enable()


@pytest.mark.parametrize("method", ["plan_graph", "accept_graph"])
def test_graph_planning_runs_with_the_collector_paused(
    method: str, collector_on: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []
    planner = backend_graph.checked_plan_graph

    def spy(*args: object) -> object:
        seen.append(gc.isenabled())
        return planner(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(profiles, "checked_plan_graph", spy)
    profile = profiles.get("checked_cpu")
    result = getattr(profile, method)(_graph())
    assert seen == [False] and gc.isenabled()
    kernels = result.kernels if method == "plan_graph" else result.plan.kernels
    monkeypatch.undo()
    unpaused = profile.plan_graph(_graph()).kernels
    assert [k.capsule.name for k in kernels] == [k.capsule.name for k in unpaused]


def test_a_planning_error_leaves_the_collector_enabled(collector_on: None) -> None:
    with pytest.raises(Exception):  # noqa: B017 - whichever error the bad graph gives
        profiles.get("checked_cpu").accept_graph(object())  # type: ignore[arg-type]
    assert gc.isenabled()
