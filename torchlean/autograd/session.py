"""The eager session: every op runs on a kernel the acceptance gate accepted for it.

Source: anchor-runtime.md §1.4, §1.6, §1.8, §1.9; anchor-backend.md §3.1 and §7 (``EagerSession``).

Opening a session (``torchlean.session(profile="checked_cpu", show_backend=False)``) resolves the
profile and runs :func:`validate_for_execution`; a failure is a :class:`SessionError`
``torch eager session: <message>``. On the first use of an op (per gradient mode) the session

1. plans the op under its *effective* profile (policy VJP mode ``none`` inside ``no_grad()``);
   failure → ``torch: kernel selection failed for `<op>`: <message>``;
2. runs the full acceptance gate on the planned kernel under the same policy; failure →
   ``torch: kernel selection failed for `<op>`: backend profile <name> rejected `<op>`: <failures>``;
3. validates the eager request (capsule op, then device); failure →
   ``torch: invalid backend selection during eager execution: <message>``;
4. picks the linked kernel with the capsule's op, provider and device (none → the verbatim
   "no matching executable handler is linked" message; no fallback) and binds it, refusing a
   capsule whose claims are not those of the handler's own capsule;
5. appends the :class:`AcceptedKernel` to :attr:`Session.selected` the first time a capsule with
   that identity ``(name, op, provider, device)`` is bound, printing its five report lines when
   ``show_backend`` is on (the banner ``[TorchLean] backend capsules used:`` prints when the
   session opens) — it records the capsule the runtime binds, as the original "records the
   capsule it actually used" (anchor-runtime.md §1.8): one refused by steps 1-4 is not listed, one
   whose runtime guard then rejects the operands stays listed.

The linked kernel is bound to the accepted kernel once
(:func:`~torchlean.autograd.dispatch.bind_linked`); later uses of the op reuse that
:class:`~torchlean.autograd.dispatch.BoundKernel` and only execute it (operand and device checks,
the mint check of the sealed kernels, the kernel, the tape node).

Ops called outside any ``with session(...)`` block run in a module-level default ``checked_cpu``
session created on first use. Each session keeps a random-op counter that advances once per
random op invocation (anchor-runtime.md §1.6).
"""

from __future__ import annotations

import io
import sys
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from types import TracebackType
from typing import Any, Never, NoReturn, TextIO

import numpy as np

from torchlean._checks import is_builtin_or_numpy_int, shown_briefly, shown_safely
from torchlean.autograd._entries import EntryRecord, ExitOutcome
from torchlean.autograd.dispatch import BoundKernel, bind_linked, execute_bound, linked_kernels, select_linked
from torchlean.autograd.grad_mode import is_grad_enabled
from torchlean.backend import profiles, report
from torchlean.backend.acceptance import AcceptanceError, AcceptedKernel, accept
from torchlean.backend.binding import validate_eager_request
from torchlean.backend.errors import BindingError, PlanningError, SessionError, SessionTypeError
from torchlean.backend.profiles import BackendProfile
from torchlean.backend.vocabulary import BackendOp, Device, Provider, VJPMode
from torchlean.tensor import Tensor

__all__ = [
    "BANNER",
    "Session",
    "current_session",
    "default_session",
    "run_op",
    "session",
    "validate_for_execution",
]

BANNER = "[TorchLean] backend capsules used:"


def _cuda_probe() -> str | None:
    """The reason CUDA cannot execute here, or None when a CUDA device is usable.

    The probe and its messages are the native extension's
    (:func:`torchlean.backend.providers.native_cuda.extension.require_cuda`): a CPU-only torch
    build (``CUDA was requested, but this torch build (V) is not a CUDA build; ...``) or
    ``CUDA was requested and this is a CUDA build, but no usable CUDA device is visible``
    (anchor-backend.md §3.1). It only asks torch; nothing is built or launched.
    """
    from torchlean.backend.providers.native_cuda import extension

    try:
        extension.require_cuda()
    except extension.NativeExtensionError as exc:
        return str(exc)
    return None


def validate_for_execution(profile: BackendProfile) -> None:
    """Check that ``profile`` can execute on this machine (anchor-backend.md §7).

    The profile must register a capsule for its device; ``cpu`` then always executes; ``cuda``
    needs a CUDA build of torch with a visible device; every other device has no linked runtime.
    Then (beyond the original) the profile must be able to select some capsule on its device:
    :meth:`~torchlean.backend.profiles.BackendProfile.selection_fault`.

    Raises:
        SessionError: ``torch eager session: backend profile `P` has no capsule for device `D```,
            ``torch eager session: device `metal` has no linked TorchLean execution runtime``,
            ``torch eager session: CUDA was requested and this is a CUDA build, but no usable CUDA
            device is visible``, or the CPU-only-build message (:func:`_cuda_probe`), or
            ``torch eager session: backend profile `P` refuses every capsule its availability
            admits for device `cpu` (trust: ...)``
            (:meth:`~torchlean.backend.profiles.BackendProfile.selection_fault`); raised when
            the session opens, before anything is planned, built or launched.
    """
    device = profile.policy.device
    if not profile.has_device_capsule():
        reason: str | None = f"backend profile `{profile.name}` has no capsule for device `{device.label}`"
    elif device is Device.CPU:
        reason = None
    elif device is Device.CUDA:
        reason = _cuda_probe()
    else:
        reason = f"device `{device.label}` has no linked TorchLean execution runtime"
    if reason is None:  # beyond the original: a profile under which no op can be planned
        fault = profile.selection_fault()
        if fault is not None:  # review224 F2: where each capsule's verdict is read
            reason = f"{fault}; profile.explain(op) names each capsule of an op and why it is refused"
    if reason is not None:
        raise SessionError(f"torch eager session: {reason}")


def _resolve_profile(profile: object) -> BackendProfile:
    """``profile`` as a :class:`BackendProfile`: a profile name is looked up, a profile is kept.

    Raises:
        UnknownLabelError: an unknown profile name.
        SessionTypeError: anything else, naming the value and the accepted ones.
    """
    if isinstance(profile, str):
        return profiles.get(profile)
    if isinstance(profile, BackendProfile):
        return profile
    raise SessionTypeError(
        f"torch eager session: profile {profile!r} of type {type(profile).__name__} is not accepted "
        f"(accepted: a profile name, one of {' | '.join(profiles.names())}, or a BackendProfile)"
    )


def _stream_refusal(stream: object) -> SessionError | None:
    """Why ``print(..., file=stream)`` would fail, as the error to raise, or None.

    Not a text stream (a class, an object without a callable ``write``, or a binary stream such as
    ``sys.stdout.buffer`` or ``io.BytesIO``): a :class:`SessionTypeError`. A text stream that is
    closed ("I/O operation on closed file" at the first print) or not writable (``writable()`` is
    False, e.g. a file opened for reading: "not writable"): a :class:`SessionError`, a fault of the
    value rather than of its type.
    """
    shown = f"torch eager session: stream {shown_briefly(stream)} of type {type(stream).__name__}"
    accepted = "a text stream with .write, or None for sys.stdout"
    if isinstance(stream, io.BufferedIOBase | io.RawIOBase):
        return SessionTypeError(
            f"{shown} is a binary stream (accepted: {accepted}; wrap it as io.TextIOWrapper(stream))"
        )
    if isinstance(stream, type) or not callable(getattr(stream, "write", None)):
        return SessionTypeError(f"{shown} is not accepted (accepted: {accepted})")
    fault = None
    if getattr(stream, "closed", False) is True:
        fault = "is closed"
    elif callable(writable := getattr(stream, "writable", None)):
        try:
            if writable() is False:
                fault = "is not writable (writable() is False: opened for reading?)"
        except (OSError, ValueError) as exc:
            fault = f"is not writable (writable() raised {type(exc).__name__}: {exc})"
    if fault is None:
        return None
    return SessionError(f"{shown} {fault} (accepted: an open, writable text stream, or None for sys.stdout)")


def _explain_cli(profile: BackendProfile, op: BackendOp) -> str:
    """`` (CLI: torchlean explain --profile fast_cpu relu)`` for a shipped profile, which the CLI
    can load by its name; "" for a profile of your own (review108 F1: the note said ``NAME``)."""
    if profile.name in profiles.names() and profiles.get(profile.name) == profile:
        return f" (CLI: torchlean explain --profile {profile.name} {op.label})"
    return ""


def gradient_acceptance_of(listed: AcceptedKernel, accepted: AcceptedKernel) -> bool:
    """Whether ``accepted`` (a later acceptance of ``listed``'s capsule) should take its place in a
    list of selections: ``listed`` was accepted without gradients (VJP mode none) and ``accepted``
    with them, so its policy is the one the capsule's backward ran under (review147 F4)."""
    return listed.policy.vjp_mode is VJPMode.NONE and accepted.policy.vjp_mode is not VJPMode.NONE


def _spelling(value: object) -> str:
    """How to pass ``value`` to ``torchlean.session``: a shipped profile's name (given as the name,
    or as the shipped profile itself), else the profile object (a changed copy keeps its shipped
    name: review154 L4)."""
    if isinstance(value, str) and value in profiles.names():
        return repr(value)
    if isinstance(value, BackendProfile) and value.name in profiles.names():
        return repr(value.name) if profiles.get(value.name) == value else "<your BackendProfile>"
    return "<your BackendProfile>"


_WHY_FIXED = {
    "profile": "the kernels it accepted were accepted under it, and trainers, checkpoints and "
    "environment records name it",
    "seed": "its random ops drew from it, and trainers and checkpoints record it",
}


def _fixed_at_open(setting: str, value: object, instead: str) -> str:
    """The refusal of an assignment to a session setting fixed when it opens (review152 F1)."""
    named = repr(value.name) if isinstance(value, BackendProfile) else shown_safely(value)
    return (
        f"Session.{setting} is fixed when the session opens ({_WHY_FIXED[setting]}), so {named} "
        f"was not assigned; open a new session instead: {instead}"
    )


class Session:
    """An eager session over one backend profile (see the module docstring).

    Args:
        profile: a profile name (``torchlean.backend.profiles.names()``) or a ``BackendProfile``.
        show_backend: print the banner now and each newly selected capsule's report lines.
        seed: the default seed of random ops called without one (dropout). Seeds ``s`` and
            ``s + 1`` give the same draws one call apart (``torchlean.functional.rand_uniform``);
            use seeds far apart for independent runs.
        stream: where ``show_backend`` prints (default: ``sys.stdout`` at print time).

    Raises:
        UnknownLabelError: an unknown profile name.
        SessionTypeError: ``profile`` is neither a name nor a ``BackendProfile`` (a
            ``SessionError`` that is also a ``TypeError``), ``seed`` is not an integer in
            ``[0, 2**64)``, ``show_backend`` not a bool, or ``stream`` neither None nor a text
            stream (an object with a callable ``write``; a class or a binary stream such as
            ``sys.stdout.buffer`` is refused).
        SessionError: the profile cannot execute here (:func:`validate_for_execution`), or
            ``stream`` is a text stream that is closed or not writable (``writable()`` False, e.g.
            ``open(path)`` for reading), checked here rather than at the first print (which would
            raise ``ValueError``/``io.UnsupportedOperation``).
    """

    def __init__(
        self,
        profile: str | BackendProfile = "checked_cpu",
        *,
        show_backend: bool = False,
        seed: int = 0,
        stream: TextIO | None = None,
    ) -> None:
        if not is_builtin_or_numpy_int(seed) or not 0 <= int(seed) < 2**64:
            raise SessionTypeError(
                f"torch eager session: seed {seed!r} is not accepted (accepted: an integer in [0, 2**64 - 1])"
            )
        if not isinstance(show_backend, bool | np.bool_):
            raise SessionTypeError(f"torch eager session: show_backend must be a bool, got {show_backend!r}")
        refusal = None if stream is None else _stream_refusal(stream)
        if refusal is not None:
            raise refusal
        resolved = _resolve_profile(profile)
        validate_for_execution(resolved)
        self._profile = resolved
        self.show_backend = bool(show_backend)
        self._seed = int(seed)
        self._stream = stream
        self._inference_profile = resolved.with_vjp_mode(VJPMode.NONE)
        self._selected: list[AcceptedKernel] = []
        self._reported: set[tuple[str, BackendOp, Provider, Device]] = set()
        self._resolved: dict[tuple[BackendOp, bool], BoundKernel] = {}
        self._random_counter = 0
        if show_backend:
            self._print(BANNER)

    @property
    def profile(self) -> BackendProfile:
        """The backend profile the session opened with, fixed for its life: the kernels it accepted
        were accepted under it, and its no-grad twin (VJP mode none) was derived from it at open.

        Raises (on assignment):
            AttributeError: ``Session.profile is fixed when the session opens ...``: another
                profile assigned would leave the kernels accepted under this one running while
                ``Trainer.profile``, checkpoints and environment records named the new one
                (review152 F1); open a new session instead. mypy refuses the assignment too.
        """
        return self._profile

    @profile.setter
    def profile(self, value: Never) -> None:
        raise AttributeError(_fixed_at_open("profile", value, f"torchlean.session({_spelling(value)})"))

    @property
    def seed(self) -> int:
        """The default seed of random ops called without one, fixed for the session's life (the
        trainer records it; ``random_counter`` is the part of the random stream that moves).

        Raises (on assignment):
            AttributeError: ``Session.seed is fixed when the session opens ...``; open a new
                session, or set ``random_counter`` to move along this one's stream.
        """
        return self._seed

    @seed.setter
    def seed(self, value: Never) -> None:
        valid = is_builtin_or_numpy_int(value) and 0 <= int(value) < 2**64
        seed = repr(int(value)) if valid else "<an integer in [0, 2**64)>"
        raise AttributeError(
            _fixed_at_open("seed", value, f"torchlean.session(..., seed={seed})")
            + " (to move along this session's random stream, set its random_counter)"
        )

    def __repr__(self) -> str:
        return f"Session(profile={self.profile.name!r}, selected={[k.capsule.name for k in self._selected]})"

    def __reduce_ex__(self, protocol: object) -> NoReturn:
        """``pickle``, ``copy.copy`` and ``copy.deepcopy`` refuse a session (review61 F6): it holds
        this process's accepted kernels and bound handlers, which cannot cross process boundaries
        (a spawn worker given one failed on ``_thread._local``).

        Raises:
            TypeError: ``Session cannot be copied or pickled ...; open one in the worker ...``.
        """
        name = self.profile.name
        profile = repr(name) if name in profiles.names() else f"<the BackendProfile {name!r}>"
        raise TypeError(
            "Session cannot be copied or pickled: it holds the kernels this process accepted and "
            "their bound handlers, which cannot cross process boundaries; send the profile and seed "
            f"instead and open a session in the worker: torchlean.session({profile}, seed={self.seed}) "
            "(set its random_counter to continue this one's random stream)"
        )

    # ------------------------------------------------------------------ context management

    def __enter__(self) -> Session:
        _ENTRIES.enter(self, self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Make current again the session this object's last ``__enter__`` in this thread or
        asyncio task found.

        Raises:
            SessionError: this session is not entered in this thread or task (never entered here,
                already exited), is not the innermost one, or was entered by the task's creator.
        """
        if _CURRENT.get() is not self:
            entered = any(owner is self for owner in _ENTRIES.owners())
            raise SessionError(
                "torch eager session: exiting a session that is not the innermost active one in this "
                "thread or asyncio task (exit sessions in the reverse order they were entered; use "
                "`with` blocks)"
                if entered
                else _NOT_ACTIVE
            )
        outcome = _ENTRIES.exit(self)
        if outcome is ExitOutcome.NOT_ENTERED:
            raise SessionError(_NOT_ACTIVE)
        if outcome is ExitOutcome.OTHER_CONTEXT:
            raise SessionError(
                "torch eager session: exiting a session in another asyncio task or context than the one "
                "that entered it (sessions are per thread and task; use `with` blocks)"
            )

    # ------------------------------------------------------------------ records

    @property
    def selected(self) -> list[AcceptedKernel]:
        """The accepted kernels this session selected, in first-selection order (a copy). As in
        the original, a kernel is listed when selected and bound: one whose first call was then
        refused by its guard stays listed; one the binding refused (no handler, or claims its
        handler does not keep) is not, as nothing of it ran. Each capsule is listed once, where it
        was first selected, with the policy of its first selection with gradients when it had one:
        a capsule first used under ``no_grad`` (``policy.vjp_mode`` none), then with gradients, is
        listed with the acceptance whose VJP mode its backward ran under (review147 F4; its capsule
        fields, which the reports print, are the same either way)."""
        return list(self._selected)

    @property
    def random_counter(self) -> int:
        """How many random-op invocations this session has served: the counter the next one
        draws with (its key is ``splitmix64(seed + counter)``).

        Settable, to continue a saved run's random stream (``torchlean train --resume``): a
        session given the counter another session of the same seed had reached draws what that
        one would have drawn next, as torch's ``Generator.set_state`` does.

        Raises:
            SessionTypeError: (on setting) not an integer (Python or numpy; bools refused) in
                ``[0, 2**64)``.
        """
        return self._random_counter

    @random_counter.setter
    def random_counter(self, counter: int) -> None:
        if not is_builtin_or_numpy_int(counter) or not 0 <= int(counter) < 2**64:
            raise SessionTypeError(
                f"torch eager session: random_counter {counter!r} is not accepted (accepted: an integer "
                "in [0, 2**64 - 1])"
            )
        self._random_counter = int(counter)

    def next_random_counter(self) -> int:
        """The counter for the next random op invocation; advances it by one."""
        counter = self._random_counter
        self._random_counter += 1
        return counter

    def effective_profile(self, grad_enabled: bool | None = None) -> BackendProfile:
        """The session profile, with policy VJP mode ``none`` when gradients are disabled."""
        enabled = is_grad_enabled() if grad_enabled is None else grad_enabled
        return self.profile if enabled else self._inference_profile

    def _print(self, line: str) -> None:
        """Print one report line; a stream closed (or otherwise failing) since the session was
        opened is a :class:`SessionError` naming it, rather than the report being lost."""
        stream = self._stream if self._stream is not None else sys.stdout
        try:
            print(line, file=stream)
        except (ValueError, OSError) as exc:
            raise SessionError(
                f"torch eager session: cannot print the backend report to stream {shown_briefly(stream)} "
                f"({type(exc).__name__}: {exc}; was it closed while the session was open?)"
            ) from exc

    # ------------------------------------------------------------------ selection

    def plan_backend_op(self, op: BackendOp, grad_enabled: bool | None = None) -> AcceptedKernel:
        """Plan ``op`` under the effective profile and run the full gate (``planBackendOp``).

        Raises:
            PlanningError: ``no admissible kernel capsule for op <op> on device <device>``.
            SessionError: ``backend profile <name> rejected `<op>`: <failures>`` or an empty plan.
        """
        profile = self.effective_profile(grad_enabled)
        plan = profile.plan_ops([op])
        if not plan.kernels:
            raise SessionError(f"backend profile {profile.name} returned no capsule for {op.label}")
        try:
            return accept(plan.kernels[0], profile.policy)
        except AcceptanceError as exc:
            failures = "; ".join(failure.message for failure in exc.failures)
            raise SessionError(f"backend profile {profile.name} rejected `{op.label}`: {failures}") from exc

    def resolve(self, op: BackendOp) -> BoundKernel:
        """The accepted kernel for ``op`` bound to its linked implementation (cached per gradient mode).

        Raises:
            SessionError: the selection, validation or no-handler messages of the module docstring.
        """
        grad = is_grad_enabled()
        hit = self._resolved.get((op, grad))
        if hit is not None:
            return hit
        accepted, bound = self._bind(op, grad)
        self._record(accepted)  # only once bound: a capsule binding refuses never ran (review55 F1)
        self._resolved[(op, grad)] = bound
        return bound

    def preflight(self, op: BackendOp, grad_enabled: bool) -> None:
        """Select, accept and bind ``op``'s kernel as :meth:`resolve` would with gradients
        ``grad_enabled``, recording and caching nothing: a caller that will run ``op`` later (the
        typed-graph trainer, batch norm's running-statistics update after each step's graph)
        refuses before any kernel runs (review93 M1).

        Raises:
            SessionError: as :meth:`resolve`.
        """
        self._bind(op, grad_enabled)

    def _bind(self, op: BackendOp, grad: bool) -> tuple[AcceptedKernel, BoundKernel]:
        """:meth:`resolve`'s selection, acceptance and binding, with gradients ``grad``."""
        try:
            accepted = self.plan_backend_op(op, grad)
        except (PlanningError, SessionError) as exc:
            failed = SessionError(f"torch: kernel selection failed for `{op.label}`: {exc}")
            failed.add_note(  # the original's message names neither; a traceback shows this note
                f"under profile {self.profile.name}; profile.explain({op.label!r})"
                f"{_explain_cli(self.profile, op)} says why each capsule was not admissible or is refused"
            )
            if isinstance(exc, PlanningError):  # no capsule: each candidate's reason, as explain gives
                failed.add_note(self.effective_profile(grad).explain(op))
            raise failed from exc
        try:
            validate_eager_request(accepted.capsule, op, self.profile.policy.device)
        except BindingError as exc:
            raise SessionError(f"torch: invalid backend selection during eager execution: {exc}") from exc
        return accepted, bind_linked(accepted, select_linked(op, accepted.capsule, linked_kernels(op)))

    def _record(self, accepted: AcceptedKernel) -> None:
        identity = accepted.capsule.identity
        for index, listed in enumerate(self._selected):
            if listed.capsule.identity == identity:
                if gradient_acceptance_of(listed, accepted):
                    self._selected[index] = accepted
                return
        self.report(accepted)  # printed first: a report that cannot be written records nothing
        self._selected.append(accepted)

    def report(self, accepted: AcceptedKernel) -> None:
        """With ``show_backend``, print ``accepted``'s report lines, once per capsule: the
        typed-graph trainer reports its graph's kernels here too, so a capsule both a graph and
        an eager op use (batch norm's running-statistics update) is reported once (review95).

        Raises:
            SessionError: the stream cannot be written (as the banner's).
        """
        identity = accepted.capsule.identity
        if not self.show_backend or identity in self._reported:
            return
        for line in report.detailed_report_lines(accepted.audit()):
            self._print(line)
        self._reported.add(identity)

    def run(self, op: BackendOp, inputs: Sequence[Tensor | None], params: Mapping[str, Any]) -> Tensor:
        """Execute ``op`` on ``inputs`` with its accepted kernel and record the tape node."""
        return execute_bound(self.resolve(op), inputs, params)


_CURRENT: ContextVar[Session | None] = ContextVar("torchlean_session", default=None)
_ENTRIES: EntryRecord[Session | None] = EntryRecord(_CURRENT, "torchlean_session_entries")
_NOT_ACTIVE = (
    "torch eager session: exiting a session that is not active in this thread or asyncio task (never "
    "entered here, or already exited; sessions are per thread and task: a session is exited once per "
    "entry, in the thread or task that entered it; use `with` blocks)"
)
_DEFAULT: list[Session] = []


def default_session() -> Session:
    """The module-level ``checked_cpu`` session used outside any ``with session(...)`` block."""
    if not _DEFAULT:
        _DEFAULT.append(Session("checked_cpu"))
    return _DEFAULT[0]


def current_session() -> Session:
    """The innermost active session, or the default one."""
    active = _CURRENT.get()
    return active if active is not None else default_session()


def session(
    profile: str | BackendProfile = "checked_cpu",
    *,
    show_backend: bool = False,
    seed: int = 0,
    stream: TextIO | None = None,
) -> Session:
    """Open an eager session; use it as ``with torchlean.session(...) as s:``.

    The active session is a context variable, as the gradient mode is: a thread started inside the
    block does not inherit it (its ops run in the default ``checked_cpu`` session) unless it
    enters the session itself or runs in a copied context (``contextvars.copy_context().run``);
    an asyncio task inherits it. See :class:`Session` for arguments and errors.
    """
    return Session(profile, show_backend=show_backend, seed=seed, stream=stream)


def run_op(op: BackendOp, inputs: Sequence[Tensor | None], params: Mapping[str, Any]) -> Tensor:
    """Run ``op`` in the current session (the entry point of :mod:`torchlean.functional`): the
    kernel its plan bound for the current grad mode, on ``inputs`` (None for an absent optional
    input) and the kernel ``params``.

    Raises:
        SessionError: no kernel can be selected, validated or bound for ``op`` under the session's
            profile (:meth:`Session.resolve`), or the bound kernel belongs to another op.
        GuardError, DeviceError, ...: whatever the bound kernel's guards and dispatch raise for
            these inputs.
    """
    active = _CURRENT.get()
    s = active if active is not None else default_session()
    bound = s._resolved.get((op, is_grad_enabled()))
    if bound is None:
        bound = s.resolve(op)
    if bound.accepted.op is not op:
        raise SessionError(
            f"torch: the session's kernel for `{op.label}` is bound to capsule "
            f"`{bound.accepted.capsule.name}` of op `{bound.accepted.op.label}`; refusing to run it"
        )
    return execute_bound(bound, inputs, params)
