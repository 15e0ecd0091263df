"""review239 F2, F4, F8: list arguments of the backend profiles and of ``torchlean.provenance``
(a 0-d array or tensor, a non-iterable, a set, a stride-0 view of 2**40 entries), and the
provenance functions' and ``near_profile``'s argument types, are refused with torchlean errors
naming the function, the argument and the value, at once."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator

import numpy as np
import pytest
import torch

from torchlean import provenance
from torchlean.backend import profiles
from torchlean.backend.errors import TorchLeanError, UnknownLabelError
from torchlean.backend.fields import MOST_ITEMS, BackendTypeError, BackendValueError, ordered_items

HUGE = np.broadcast_to(np.int64(1), (2**40,))  # 8 bytes of memory, 2**40 entries
HUGE_OPS = np.broadcast_to(np.str_("relu"), (2**40,))  # each entry a valid op label
PROFILE = profiles.get("checked_cpu")
OPS = "a sequence of ops (BackendOp members or op labels)"
MODULES = "an ordered iterable of CapsuleModule"
ZERO_D = "(a 0-d array or tensor holds one value, not a sequence)"


def _quickly(call: Callable[[], object], error: type[Exception], message: str) -> None:
    start = time.perf_counter()
    with pytest.raises(error) as info:
        call()
    assert time.perf_counter() - start < 2.0
    assert isinstance(info.value, TorchLeanError)
    assert str(info.value) == message


@pytest.mark.parametrize("method", ["plan_ops", "plan_report"])
def test_plan_refuses_0d_arrays_and_tensors(method: str) -> None:
    call = getattr(PROFILE, method)
    _quickly(lambda: call(np.array(2)), BackendTypeError,
             f"ops must be {OPS}, got array(2) (ndarray) {ZERO_D}")
    _quickly(lambda: call(torch.tensor(2)), BackendTypeError,
             f"ops must be {OPS}, got tensor(2) (Tensor) {ZERO_D}")


@pytest.mark.parametrize("method", ["plan_ops", "plan_report"])
def test_plan_refuses_a_huge_view_by_its_length(method: str) -> None:
    call = getattr(PROFILE, method)
    shown = re.sub(r"\n\s*", " ", repr(HUGE_OPS))[:77] + "..."  # review241 F7: one line
    assert "\n" in repr(HUGE_OPS) and "\n" not in shown
    _quickly(lambda: call(HUGE_OPS), BackendValueError,
             f"ops must have at most {MOST_ITEMS} entries, got {2**40}: {shown} (ndarray) (accepted: {OPS})")


def test_plan_refuses_an_endless_generator_after_a_bounded_read() -> None:
    def endless() -> Iterator[str]:
        while True:
            yield "relu"

    refused = r"^ops must have at most 5 entries, got more: .* \(accepted: a sequence"
    with pytest.raises(BackendValueError, match=refused):
        ordered_items(endless(), "ops", OPS, "a plan keeps the ops' order", limit=5)
    assert ordered_items(iter(["relu", "add"]), "ops", OPS, "why", limit=2) == ("relu", "add")


def test_a_len_that_raises_still_reads_a_bounded_number_of_entries() -> None:
    class BadLen:
        def __len__(self) -> int:
            raise RuntimeError("hostile __len__")

        def __iter__(self) -> Iterator[str]:
            while True:
                yield "relu"

    with pytest.raises(BackendValueError, match=r"^ops must have at most 3 entries, got more: "):
        ordered_items(BadLen(), "ops", OPS, "why", limit=3)


def test_with_capsule_modules_refuses_0d_huge_and_sets() -> None:
    what = "with_capsule_modules: modules"
    _quickly(lambda: PROFILE.with_capsule_modules(np.array(2)), BackendTypeError,
             f"{what} must be {MODULES}, got array(2) (ndarray) {ZERO_D}")
    _quickly(lambda: PROFILE.with_capsule_modules(torch.tensor(2)), BackendTypeError,
             f"{what} must be {MODULES}, got tensor(2) (Tensor) {ZERO_D}")
    shown = repr(HUGE)  # array([1, 1, 1, ..., 1, 1, 1], shape=(1099511627776,)): short enough
    _quickly(lambda: PROFILE.with_capsule_modules(HUGE), BackendValueError,
             f"{what} must have at most {MOST_ITEMS} entries, got {2**40}: {shown} (ndarray) "
             f"(accepted: {MODULES})")
    module = PROFILE.capsule_modules[0]
    with pytest.raises(BackendTypeError, match=r"^with_capsule_modules: modules must be an ordered iterable "
                       r"of CapsuleModule, got a set of 1 \(their order decides"):
        PROFILE.with_capsule_modules({module})
    assert PROFILE.with_capsule_modules(np.array([module], dtype=object)).capsule_modules[0] is module


def test_environment_argv_is_checked() -> None:
    accepted = "environment: argv must be a sequence of strings, got"
    _quickly(lambda: provenance.environment(np.array(2)), BackendTypeError,  # type: ignore[arg-type]
             f"{accepted} array(2) (ndarray) {ZERO_D}")
    _quickly(lambda: provenance.environment(True), BackendTypeError,  # type: ignore[arg-type]
             f"{accepted} True (bool)")
    _quickly(lambda: provenance.environment(["train", 3]), BackendTypeError,  # type: ignore[list-item]
             f"{accepted} argv[1] = 3 (int)")
    set_refused = rf"^{accepted} a set of 2 \(a command line's words are in order"
    with pytest.raises(BackendTypeError, match=set_refused):
        provenance.environment({"train", "--seed"})  # type: ignore[arg-type]
    with pytest.raises(BackendTypeError, match=rf"^{accepted} a mapping of 1 \(dict\), which would be read"):
        provenance.environment({"train": 1})  # type: ignore[arg-type]
    shown = repr(HUGE)  # array([1, 1, 1, ..., 1, 1, 1], shape=(1099511627776,)): short enough
    _quickly(lambda: provenance.environment(HUGE), BackendValueError,  # type: ignore[arg-type]
             f"environment: argv must have at most {2**24} entries, got {2**40}: {shown} (ndarray) "
             "(accepted: a sequence of strings)")
    argv = provenance.environment(np.array(["torchlean", "train"]))["argv"]  # type: ignore[arg-type]
    assert argv == ["torchlean", "train"] and all(type(word) is str for word in argv)
    assert provenance.environment(word for word in ("a", "b"))["argv"] == ["a", "b"]


KNOWN = " | ".join(profiles.names())


@pytest.mark.parametrize("function", ["runs_torch", "runs_torch_on_cpu", "torch_cpu_capability"])
@pytest.mark.parametrize(("value", "shown"), [
    (None, "None (NoneType)"), (True, "True (bool)"), (3, "3 (int)")])
def test_profile_arguments_are_checked(function: str, value: object, shown: str) -> None:
    call = getattr(provenance, function)
    if value is None and function == "torch_cpu_capability":
        assert call(None) is None  # documented: None for none
        return
    _quickly(lambda: call(value), BackendTypeError,
             f"{function}: profile must be a BackendProfile or a shipped profile's name ({KNOWN}), "
             f"got {shown}")


def test_profile_arguments_take_a_name_as_capsule_table_does() -> None:
    assert provenance.runs_torch("fast_cpu") is provenance.runs_torch(profiles.get("fast_cpu")) is True
    assert provenance.runs_torch_on_cpu("checked_cuda") is False
    assert provenance.torch_cpu_capability("checked_cpu") is None
    with pytest.raises(UnknownLabelError, match=r"^unknown profile nope \(known: "):
        provenance.runs_torch("nope")


@pytest.mark.parametrize(("block", "fault"), [
    (None, "the environment block must be a mapping with the keys of provenance.environment(), got None "
           "of type NoneType"),
    (np.int64(2), "the environment block must be a mapping with the keys of provenance.environment(), got "
                  "np.int64(2) of type int64"),
    ([("torchlean", "0.1.0")], "the environment block must be a mapping with the keys of "
                               "provenance.environment(), got [('torchlean', '0.1.0')] of type list"),
])
def test_environment_fault_names_a_block_that_is_not_a_mapping(block: object, fault: str) -> None:
    assert provenance.environment_fault(block) == fault  # type: ignore[arg-type]


def test_environment_fault_names_missing_keys() -> None:
    keys = ", ".join(provenance.ENVIRONMENT_KEYS)
    assert provenance.environment_fault({}) == (
        f"the environment block lacks the keys {', '.join(map(repr, provenance.ENVIRONMENT_KEYS))} "
        f"(accepted: a mapping with the keys {keys})"
    )
    block = provenance.environment([])
    assert provenance.environment_fault(block) is None
    del block["utc"]
    assert provenance.environment_fault(block) == (
        f"the environment block lacks the key 'utc' (accepted: a mapping with the keys {keys})"
    )


def test_environment_fault_shortens_a_huge_value() -> None:
    block = provenance.environment([])
    block["cwd"] = "x" * 10**6
    assert provenance.environment_fault(block) is None  # a long string is a string
    block["cwd"] = ["x" * 10**6]
    fault = provenance.environment_fault(block)
    prefix = "'cwd' must be a string or None, got ['xxxxxxxxxx"
    assert fault is not None and fault.startswith(prefix) and fault.endswith("...")
    assert len(fault) == len("'cwd' must be a string or None, got ") + 200  # the list's repr cut to 200


@pytest.mark.parametrize(("name", "shown"), [
    (None, "None (NoneType)"), (b"x", "b'x' (bytes)"), (7, "7 (int)")])
def test_near_profile_checks_its_argument(name: object, shown: str) -> None:
    _quickly(lambda: profiles.near_profile(name), BackendTypeError,  # type: ignore[arg-type]
             f"near_profile: name must be a string (a profile name as typed), got {shown}")


def test_near_profile_of_a_long_name_is_quick_and_empty() -> None:
    start = time.perf_counter()
    assert profiles.near_profile("x" * 10**6) == ""
    with pytest.raises(UnknownLabelError, match=r"^unknown profile x+ \(known: [^;]*\)$"):
        profiles.get("x" * 10**6)
    assert time.perf_counter() - start < 2.0
    assert profiles.near_profile("checked-cpu") == "; did you mean checked_cpu?"
