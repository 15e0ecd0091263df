"""A kernel that cannot allocate memory raises ``MemoryError`` (``KernelMemoryError``, also a
``TorchLeanError``) under every profile, naming the op and keeping the allocator's text
(``torchlean.autograd.dispatch.execute_bound`` and the tape rules of its nodes).

The requests are far beyond any address space (hundreds of TiB), so numpy's and torch's allocators
refuse them at once, whatever the overcommit setting, without touching memory; each test checks
that the process's peak resident size did not grow."""

from __future__ import annotations

import dataclasses
import resource
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch

import torchlean as tl
from torchlean.autograd import dispatch
from torchlean.autograd.dispatch import KernelMemoryError
from torchlean.backend.errors import TorchLeanError
from torchlean.backend.vocabulary import BackendOp

HUGE = (10**7, 10**6, 3)  # 3e13 float64 values: 218 TiB
PROFILES = {"checked_cpu": "reference", "fast_cpu": "aten"}


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


@pytest.fixture
def no_real_allocation() -> Iterator[None]:
    """Fails the test when the peak resident size grew by more than 64 MiB during it."""
    before = _peak_rss_mib()
    yield
    assert _peak_rss_mib() - before < 64.0


def _torch_allocator_failure() -> RuntimeError:
    """The error torch's CPU allocator really raises for an impossible request."""
    try:
        torch.empty(HUGE, dtype=torch.float64)
    except RuntimeError as exc:
        return exc
    raise AssertionError("torch allocated 218 TiB")


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_an_impossible_broadcast_is_a_memory_error_under_every_profile(
    profile: str, no_real_allocation: None
) -> None:
    x = tl.tensor(np.ones(3))
    with tl.session(profile):
        tl.broadcast_to(x, (2, 3))  # plan and bind first, so the fixture measures only the failure
        with pytest.raises(MemoryError) as info:
            tl.broadcast_to(x, HUGE)
    error = info.value
    assert isinstance(error, KernelMemoryError) and isinstance(error, TorchLeanError)
    provider = PROFILES[profile]
    assert str(error).startswith(
        f"torch: `broadcast` forward on capsule `{provider}.broadcast` ({provider}/cpu) could not "
        "allocate memory: "
    )
    cause = error.__cause__
    assert cause is not None and str(cause) in str(error)  # the allocator's text is kept
    if profile == "checked_cpu":  # numpy's own MemoryError
        assert isinstance(cause, MemoryError) and "Unable to allocate 218. TiB" in str(cause)
    else:  # torch's CPU allocator: a plain RuntimeError
        assert type(cause) is RuntimeError and "DefaultCPUAllocator: can't allocate memory" in str(cause)


def test_a_torch_out_of_memory_error_is_recognised_by_its_type(no_real_allocation: None) -> None:
    x = tl.tensor(np.ones(3))
    with tl.session("fast_cpu") as s:
        bound = s.resolve(BackendOp.RELU)
        original = torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

        def exhausted(*args: Any) -> Any:
            raise original

        failing = dispatch.bind_linked(bound.accepted, dataclasses.replace(bound.linked, forward=exhausted))
        with pytest.raises(KernelMemoryError, match=r"`relu` forward .* CUDA out of memory\. Tried") as info:
            dispatch.execute_bound(failing, (x,), {})
    assert info.value.__cause__ is original


def test_other_runtime_errors_of_a_kernel_pass_unchanged() -> None:
    x = tl.tensor(np.ones(3))
    with tl.session("fast_cpu") as s:
        bound = s.resolve(BackendOp.RELU)
        original = RuntimeError("shape '[2]' is invalid for input of size 3")

        def broken(*args: Any) -> Any:
            raise original

        failing = dispatch.bind_linked(bound.accepted, dataclasses.replace(bound.linked, forward=broken))
        with pytest.raises(RuntimeError) as info:
            dispatch.execute_bound(failing, (x,), {})
    assert info.value is original


@pytest.mark.parametrize("needs_every_input", [True, False], ids=["plain-rule", "vjp-needs-rule"])
def test_a_vjp_that_cannot_allocate_is_a_memory_error(
    needs_every_input: bool, no_real_allocation: None
) -> None:
    x = tl.tensor(np.ones((2, 3)), requires_grad=needs_every_input)
    w = tl.tensor(np.ones((4, 3)), requires_grad=True)
    b = tl.tensor(np.ones(4), requires_grad=True)
    failure = _torch_allocator_failure()
    called: list[str] = []

    def exhausted(*args: Any) -> Any:
        called.append("vjp")
        raise failure

    def exhausted_needs(*args: Any) -> Any:
        called.append("vjp_needs")
        raise failure

    with tl.session("fast_cpu") as s:
        bound = s.resolve(BackendOp.LINEAR)
        linked = dataclasses.replace(bound.linked, vjp=exhausted, vjp_needs=exhausted_needs)
        y = dispatch.execute_bound(dispatch.bind_linked(bound.accepted, linked), (x, w, b), {})
        with pytest.raises(MemoryError) as info:
            tl.reduce_sum(y).backward()
    assert called == (["vjp"] if needs_every_input else ["vjp_needs"])
    assert isinstance(info.value, KernelMemoryError)
    assert str(info.value).startswith(
        "torch: `linear` VJP on capsule `aten.linear` (aten/cpu) could not allocate memory: "
    )
    assert info.value.__cause__ is failure


def test_the_native_extension_boundary_lets_an_out_of_memory_error_through() -> None:
    """``native_cuda`` turns the extension's RuntimeErrors into NativeKernelError, but not torch's
    OutOfMemoryError (a RuntimeError): it must reach the dispatcher, which reports it as the
    KernelMemoryError of every provider; other runtime errors are still NativeKernelError."""
    from torchlean.backend.providers.native_cuda import extension, kernels

    with pytest.raises(torch.OutOfMemoryError), kernels._launch("matmul"):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    refused = pytest.raises(extension.NativeKernelError, match=r"^native_cuda\.matmul: CUBLAS_STATUS")
    with refused, kernels._launch("matmul"):
        raise RuntimeError("CUBLAS_STATUS_EXECUTION_FAILED")


def test_the_cli_keeps_its_out_of_memory_hint_for_a_kernel_memory_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """KernelMemoryError is a TorchLeanError and a MemoryError: the CLI's out-of-memory line wins."""
    from torchlean.cli import main
    from torchlean.cli import train as train_command

    message = "torch: `linear` forward on capsule `aten.linear` could not allocate"

    def failing(args: Any) -> int:
        raise dispatch.KernelMemoryError(message)

    monkeypatch.setattr(train_command, "run", failing)  # register() reads it when the parser is built
    assert main(["train", "--dataset", "iris"]) == 2
    err = capsys.readouterr().err
    # review56 F4: the line names the size options the command took, with their values
    assert err == f"error: out of memory ({message}); try smaller sizes (--hidden 64, --batch-size 32)\n"


def test_the_cli_names_an_out_of_memory_error_without_text(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Python's own MemoryError (a list that cannot grow, a file read whole) carries no text."""
    from torchlean.cli import main
    from torchlean.cli import train as train_command

    def failing(args: Any) -> int:
        raise MemoryError

    monkeypatch.setattr(train_command, "run", failing)
    assert main(["train", "--dataset", "iris", "--hidden", "512"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "error: out of memory (allocation failed); try smaller sizes (--hidden 512, --batch-size 32)\n"
    )


@pytest.mark.parametrize("command", ["predict", "inspect"])
def test_out_of_memory_with_a_checkpoint_names_it_not_size_options(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """review158 F10: predict and inspect, which take no size option, advised "try smaller sizes"."""
    from torchlean.cli import inspect_command, main
    from torchlean.cli import predict as predict_command

    module = predict_command if command == "predict" else inspect_command

    def failing(args: Any) -> int:
        raise MemoryError("Unable to allocate 256. MiB for an array with shape (8192, 8192)")

    monkeypatch.setattr(module, "run", failing)
    argv = [command, "big model.npz", *(["--dataset", "iris"] if command == "predict" else [])]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        "error: out of memory (Unable to allocate 256. MiB for an array with shape (8192, 8192)) with "
        "checkpoint big model.npz: its model or the data read with it need more memory than this process may "
        "use\n"
    )
