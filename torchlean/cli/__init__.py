"""The ``torchlean`` command.

Each subcommand lives in its own module of this package and exposes
``register(subparsers) -> None``; the parser it registers sets ``func`` to a callable taking the
parsed namespace and returning the exit status; it may also set ``refuse_extras``, a callable
taking the namespace and the words argparse did not recognize after the command and returning the
command's own one-line refusal of them (or ``None`` for the generic ``unrecognized arguments``).
A command's parser may name in ``options_first`` options taking one value that it reads wherever
they stand among its words (see :func:`_options_first`).
Errors a user can cause (unknown op, profile,
device, bad numbers) are reported as one ``error: ...`` line on stderr with exit status 2.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import itertools
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any, NoReturn

if _TYPE_CHECKING:
    from _typeshed import SupportsWrite

COMMAND_MODULES: tuple[str, ...] = (
    "backend_commands",
    "attention_check",
    "graph",
    "train",
    "predict",
    "inspect_command",
)


def negative_number(parser: argparse.ArgumentParser, word: str) -> bool:
    """Whether ``parser`` reads ``word`` as a negative number (a value or a positional) rather than
    as an option: argparse's own rule, which differs across Python versions (3.11 takes ``-1`` and
    ``-.5``; later releases also ``-1e-3``: review203 F9, review204 F4)."""
    return parser._negative_number_matcher.match(word) is not None


def _shown_words(words: Sequence[str]) -> str:
    """An option's value as it was written, for a note (quoted when empty or holding a blank)."""
    return " ".join(repr(word) if not word or any(c.isspace() for c in word) else word for word in words)


class _StoreNoted(argparse._StoreAction):
    """argparse's store action (the last value given applies, as in argparse and most tools), which
    notes a file option (``--save``, ``--resume``, ``--output``, ``--report-json``, ``--json``:
    argparse ``type`` ``file_path`` or ``output_path``) given again with another value (review123
    F2: ``--save a.npz --save b.npz`` wrote ``b.npz`` only, without a word): :func:`_run` prints
    the notes once the command line parses, before the command runs. Other options given twice
    are not noted: overriding an earlier value (a shell alias's ``--epochs``, a script's base
    options) is how the last-wins rule is used."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        from torchlean.cli._output import file_path, output_path

        noted = self.type in (file_path, output_path)
        if noted and option_string is not None and isinstance(parser, _Parser):
            written = _shown_words(parser.value_words)
            earlier = parser.given.get(self.dest)
            if earlier is not None and earlier[0] != values:
                parser.repeated.append(f"note: {option_string} is given more than once; the last value "
                                       f"applies ({written}, not {earlier[1]})")
            parser.given[self.dest] = (values, written)
        super().__call__(parser, namespace, values, option_string)


class _Parser(argparse.ArgumentParser):
    """argparse parser whose usage errors are one line, exit status 2, and which notes a file
    option given twice with different values (:class:`_StoreNoted`)."""

    commands: tuple[str, ...] = ()
    """The subcommand names, in registration order (set by :func:`build_parser`)."""

    known: Mapping[str, str] = MappingProxyType({})
    """Accepted values per required argument's metavar (``{"OP": "relu | matmul | ..."}``), named
    when that argument is missing (argparse names only the metavar)."""

    words: tuple[str, ...] = ()
    """The words this parser was last asked to parse (its command's part of the command line),
    after :attr:`options_first` moved its options ahead."""

    options_first: tuple[str, ...] = ()
    """Options taking one value that are moved, with their values, ahead of the command's other
    words before parsing (:func:`_options_first`), so that they parse wherever they stand."""

    children: tuple[_Parser, ...] = ()
    """The subcommands' parsers (set by :func:`build_parser`), whose :attr:`repeated` notes
    :meth:`repeated_notes` gathers."""

    by_command: Mapping[str, _Parser] = MappingProxyType({})
    """Each subcommand's parser by its name (set by :func:`build_parser`), whose options
    :func:`~torchlean.cli._command_words.option_before_command` looks up."""

    top: _Parser | None = None
    """The ``torchlean`` parser (set by :func:`build_parser` on it and on each subcommand's
    parser), whose :attr:`words` every usage error reads for a command's option given before the
    command's name (:meth:`error`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", None, _StoreNoted)
        self.register("action", "store", _StoreNoted)
        self.given: dict[str, tuple[object, str]] = {}
        self.repeated: list[str] = []
        self.value_words: list[str] = []

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        """argparse's, without swallowing a failed write: ``--help > /dev/full`` printed nothing
        and exited 0 (review163 F7); :func:`main` reports it as any output it cannot write."""
        if not message:
            return
        if file is None and sys.stdout is None:  # --help or --version with stdout closed (review164 F10)
            raise OSError(errno.EBADF, "standard output is closed")
        (file or sys.stderr).write(message)

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> Any:
        """argparse's conversion of an argument's words, which are kept as written (for
        :class:`_StoreNoted`, whose action argparse calls next with the converted value)."""
        self.value_words = list(arg_strings)
        return super()._get_values(action, arg_strings)

    def repeated_notes(self) -> list[str]:
        """The notes of file options given more than once with different values, in the last
        parse of this parser and its subcommands'."""
        return [*self.repeated, *(note for child in self.children for note in child.repeated)]

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self.given, self.repeated = {}, []
        words = list(sys.argv[1:] if args is None else args)
        if self.options_first:
            words = _options_first(words, self.options_first, tuple(self._option_string_actions))
        self.words = tuple(words)
        return super().parse_known_args(words, namespace)

    def _misread_option(self, message: str) -> tuple[str, str] | None:
        """The unknown option whose value argparse read as the positional that ``message``
        refuses, with that value: the first word of :attr:`words` that looks like an option
        (``--device``, ``-d``, not a negative number) this command's parser does not define
        (argparse also takes unique prefixes of its options), followed by a word argparse reads as
        a positional (one that does not start with ``-``, or a negative number) that ``message``
        names."""
        if self.commands or not re.match(r"argument [^-\s]\S*: ", message):
            return None  # the top-level parser (its words hold the command's options), or no positional
        for word, following in zip(self.words, self.words[1:], strict=False):
            if word == "--":
                return None
            if (
                word.startswith("-")
                and len(word) > 1
                and "=" not in word
                and not negative_number(self, word)
                and not any(option.startswith(word) for option in self._option_string_actions)
                and (not following.startswith("-") or negative_number(self, following))
                and re.search(rf"(?<![\w.-]){re.escape(following)}(?![\w.-])", message)
            ):
                return word, following
        return None

    def _dash_value(self, message: str) -> bool:
        """Whether the option that argparse's ``message`` (``argument --lr: expected one
        argument``) names is followed, at one of its places in :attr:`words`, by a word that starts
        with ``-`` and is none of this parser's options nor an abbreviation of one, nor a number
        argparse reads as a value (``-1``, ``-.5``): ``-1e-3``, ``-inf``, which argparse read as an
        option rather than its value; an abbreviation (``--pro``) counts as the option (review200
        F5)."""
        options = message.split()[1].rstrip(":").split("/")
        words = self.words[: self.words.index("--")] if "--" in self.words else self.words
        return any(
            _abbreviates(word, options) and following.startswith("-")
            # argparse took it as the value, by its own rule, which differs across Python versions
            # (review201 F2, review203 F9)
            and not negative_number(self, following)
            and not _abbreviates(following.split("=", 1)[0], self._option_string_actions)
            for word, following in itertools.pairwise(words)
        )

    def _dash_word_hint(self) -> str:
        """For a missing CHECKPOINT: the first word of :attr:`words` argparse set aside as an
        unknown option (``predict -m.npz``: a file whose name starts with ``-``), with how to give
        it as a path (review163 F9); empty when there is none."""
        for word in self.words:
            if word == "--":
                break
            if (  # one dash: ``--name`` is more likely a mistyped option than a file
                word.startswith("-")
                and not word.startswith("--")
                and len(word) > 1
                and "=" not in word
                and not negative_number(self, word)
                and not any(option.startswith(word) for option in self._option_string_actions)
            ):
                return (f" ({word} was read as an unknown option: write ./{word} for a path that starts "
                        "with '-')")
        return ""

    def error(self, message: str) -> NoReturn:
        """Exit with status 2 and ``message`` as one line, ``error: ...``, on stderr. Whatever
        argparse met first (the option's value read as the command, the command's required
        argument missing, an unrecognized argument), an option given before the command's name
        is the mistake reported (review128 F7, review131 F3:
        :func:`~torchlean.cli._command_words.option_before_command`). Characters that are not
        printable are escaped (:func:`~torchlean.backend.display.escaped`: a typed ``$'a\\nb'``
        stays one line, and an escape sequence does not reach the terminal)."""
        from torchlean.backend.display import escaped
        from torchlean.cli import _command_words

        top = self.top
        before = None if top is None else _command_words.option_before_command(
            top.words, top.by_command, top
        )
        if before is not None:
            self.exit(2, f"error: {escaped(before)}\n")
        misread = self._misread_option(message)
        if misread is not None:
            # argparse sets an unknown option aside and reads its value as the next positional
            # (``select ... --device cuda relu``: "unknown op cuda"); the option is the mistake,
            # named with its value (review224 F5: ``explain --format json``)
            unknown, value = misread
            lacks = f"{self.prog} has no {unknown}; " if unknown == "--format" else ""
            message = (f"unrecognized arguments: {unknown} {value} ({lacks}{self.prog} --help lists the "
                       "accepted ones)")
        if self.commands:  # a mistyped command name: the nearest one (``; did you mean train?``)
            message = _command_words.command_refusal(message, self.commands)
        missing = re.fullmatch(r"the following arguments are required: (.*)", message)
        if missing is not None:
            names = missing[1].split(", ")
            message = "the following arguments are required: " + ", ".join(
                f"{name} (known: {self.known[name]})" if name in self.known else name for name in names
            ) + (self._dash_word_hint() if "CHECKPOINT" in names else "")
        elif (flag := re.fullmatch(r"argument (-\S+): ignored explicit argument (.*)", message)) is not None:
            # ``--kernel-times=yes``: argparse's words do not say that the option takes no value
            names = " or ".join(flag[1].split("/"))
            message = (f"argument {flag[1]}: a flag takes no value, got {flag[2]} (write {names} alone, "
                       "without =VALUE)")
        elif re.fullmatch(r"argument (-\S+): expected one argument", message) and self._dash_value(message):
            # argparse reads a value that starts with '-' (``--lr -inf``, ``--lr -1e-3``) as an option;
            # an option given last has no value at all, and no such hint (review197 F4)
            option = message.split()[1].rstrip(":")
            message += f" (write {option}=VALUE for a value that starts with '-')"
        self.exit(2, f"error: {escaped(message)}\n")


def _abbreviates(word: str, options: Iterable[str]) -> bool:
    """Whether ``word`` is one of ``options`` or, as argparse reads ``--form`` for ``--format``, a
    ``--`` prefix of one."""
    return any(word == option or (word.startswith("--") and option.startswith(word)) for option in options)


def _options_first(words: Sequence[str], options: tuple[str, ...], defined: tuple[str, ...]) -> list[str]:
    """``words`` with each of ``options`` given with its value (``--format json``,
    ``--format=json``, or a prefix that names only that option among the ``defined`` ones, as
    argparse reads ``--form json``) moved ahead of the other words; both parts keep their order.

    argparse ends an ``nargs="+"`` option's words (``--profiles NAME... OP...``) at the next
    option, and reads a positional's words once, so a value-taking option standing among them
    splits them: ``select --profiles fast_cpu --format json relu`` read ``relu`` as an unknown op
    or an unrecognized argument. Ahead of them, the option splits nothing. Words after ``--`` stay
    where they are, and so does an option without a value (the last word, or one followed by a word
    that starts with ``-``, which argparse does not read as its value): argparse refuses it there.
    """
    moved: list[str] = []
    kept: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        if word == "--":
            kept.extend(words[index:])
            break
        name, equals, _ = word.partition("=")
        named = _names_option(name, options, defined)
        if named and equals:
            moved.append(word)
        elif named and index + 1 < len(words) and not words[index + 1].startswith("-"):
            moved += [word, words[index + 1]]
            index += 1
        else:
            kept.append(word)
        index += 1
    return moved + kept


def _names_option(name: str, options: tuple[str, ...], defined: tuple[str, ...]) -> bool:
    """Whether ``name`` (a word up to its ``=``) is one of ``options``, or a ``--`` prefix that
    names only one of the ``defined`` options and that one is among ``options``."""
    if not name.startswith("--"):
        return False
    matches = [option for option in defined if option.startswith(name)]
    return name in options or (len(matches) == 1 and matches[0] in options)


def _version() -> str:
    """``torchlean <version> (numpy <version>, torch <version>)``, read from the installed
    distributions' metadata (nothing is imported; a missing one is ``not installed``)."""
    from importlib import metadata

    def installed(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "not installed"

    return f"torchlean {installed('torchlean')} (numpy {installed('numpy')}, torch {installed('torch')})"


_SIZE_OPTIONS = ("hidden", "batch_size", "mlp")
"""The options of a command that size its memory, named (with their values) by the out-of-memory
error of a command that took them (``try smaller sizes (--hidden 4096, --batch-size 32)``,
``(--mlp 4,8,1)``)."""


ERROR_LINE_LIMIT = 2000
"""The longest ``error:`` line a command prints for a refusal: a longer one (a name of 100 000
characters read from a crafted checkpoint, review229 F2) is cut in the middle, keeping its start
and its end (where the accepted values are named)."""


def _error_line(line: str) -> str:
    """``line`` cut to about :data:`ERROR_LINE_LIMIT` characters when longer: its first 1400 and
    last 400 characters around ``... (N characters left out) ...``."""
    if len(line) <= ERROR_LINE_LIMIT:
        return line
    return f"{line[:1400]} ... ({len(line) - 1800} characters left out) ... {line[-400:]}"


def _shown_size(value: object) -> str:
    """A size option's value as typed: a list of widths comma-joined (``--mlp 4,8,1``)."""
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


def build_parser() -> _Parser:
    """The ``torchlean`` parser with every command of :data:`COMMAND_MODULES` registered."""
    parser = _Parser(
        prog="torchlean",
        description="Plan, check and run neural-network kernels under explicit capsule contracts.",
    )
    parser.add_argument("--version", action="version", version=_version())
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"torchlean.cli.{name}")
        module.register(subparsers)
    parser.commands = tuple(subparsers.choices)
    parser.by_command = MappingProxyType(dict(subparsers.choices))
    parser.children = tuple(child for child in subparsers.choices.values() if isinstance(child, _Parser))
    for each in (parser, *parser.children):
        each.top = parser
    return parser


def _after_command(words: list[str], command: str | None, extra: str) -> bool:
    """Whether the unrecognized word ``extra`` came after the command name (a command option)."""
    if command is None or command not in words or extra not in words:
        return command is not None
    return words.index(extra) > words.index(command)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; returns the exit status (the ``torchlean`` process runs it through
    :func:`console_main`).

    No command (``torchlean`` alone) is a usage error like any other: one line ``error: a command
    is required (choose from 'capsules', ...; torchlean --help describes them)`` on stderr, exit
    status 2 (``torchlean --help`` prints the help, exit status 0). Ctrl-C at any point after this
    module is imported, the commands' own imports included, is ``error: interrupted``, exit
    status 130, until the command marks its status final (:func:`_completion.completed`, once its
    outputs are written): a Ctrl-C after that returns the status (review128 F3). An output that
    cannot take the writes (``> /dev/full``, or standard output closed,
    ``>&-``, checked before the command runs; a character its encoding cannot write) is
    ``error: cannot write the output: <reason>``, exit status 2. Standard error is best effort:
    where it cannot be written (``2>&-``, ``2>/dev/full``) the notes, progress bars and error
    lines are dropped and the command goes on, writing its files and ending with its own status.

    Called in-process (``torchlean.cli.main(["train", ...])``, as the tests do) it acts as the
    process would, on process-wide state (review76 F1, F5): it redirects ``sys.stdout`` while a
    command runs, so calls from several threads at once interleave and may leave ``sys.stdout``
    wrapped (run concurrent commands in subprocesses); ``train`` and ``predict`` set torch's thread
    count and export ``OMP_NUM_THREADS`` (``--torch-threads``), which stay set for the process and
    its children; a reader of stdout that goes away leaves file descriptor 1 on ``/dev/null``, as
    Python's documentation advises for SIGPIPE; Ctrl-C becomes the return value 130, and with
    ``--save`` SIGINT, SIGTERM and SIGHUP are handled by the run while it trains (the previous
    handlers restored after).
    """
    import torchlean.cli._completion as _completion
    from torchlean.cli._stderr import best_effort_stderr

    _completion.reset()
    with best_effort_stderr():  # 2>&- or 2>/dev/full: the run still writes its results (review103 F1)
        try:
            return _run(argv)
        except KeyboardInterrupt:
            final = _completion.final_status()
            if final is not None:  # the command's outputs were all written (review128 F3)
                return final
            print("error: interrupted", file=sys.stderr)
            return 130


def console_main() -> int:
    """The ``torchlean`` process (the console script and ``python -m torchlean``): :func:`main`,
    then SIGINT ignored for the interpreter's shutdown, where a Ctrl-C after the command's last
    line printed a ``KeyboardInterrupt`` traceback from an ``atexit`` handler or killed the
    process by the signal (review128 F3), and SIGTERM and SIGHUP too where they have their
    default action (review139 F1: one after ``saved:`` ended a complete run with status 143).
    Called in a process that goes on (a test), it leaves those three signals ignored there too.
    Its exit status is ``main``'s; a Ctrl-C that stops ``main`` before its own handler is set up
    is ``error: interrupted``, exit status 130. Nothing heavy is imported before that ``try``:
    ``from torchlean.cli import _completion`` went through this package's ``__getattr__``, which
    loaded the whole backend (about 0.1 s) where a Ctrl-C was a traceback (review198 F1)."""
    import torchlean.cli._completion as _completion  # the module itself: signal and threading only

    status: int | None = None
    try:
        status = main()
        _completion.ignore_stopping_signals()
    except KeyboardInterrupt:
        _completion.ignore_stopping_signals()
        if status is None:  # main itself was stopped before its handler (its first import)
            print("error: interrupted", file=sys.stderr)
            return 130
    return status


def _run(argv: Sequence[str] | None) -> int:
    from torchlean._data_errors import DataMemoryError  # imported here, under main's Ctrl-C handler
    from torchlean.backend.errors import TorchLeanError
    from torchlean.cli._spelling import cli_spelling
    from torchlean.cli._stdout import silence_stdout

    parser = build_parser()
    words = list(sys.argv[1:] if argv is None else argv)
    try:
        args, extras = parser.parse_known_args(words)
    except BrokenPipeError:  # --help | head -1: as the commands' output (review163 F7)
        silence_stdout()
        return 141
    except OSError as error:  # --help or --version into a full device, or with stdout closed
        print(f"error: cannot write the output: {error.strerror or error}", file=sys.stderr)
        if sys.stdout is not None:
            silence_stdout()
        return 2
    if extras:  # one before the command's name: parser.error refuses that option (review131 F3)
        command = getattr(args, "command", None)
        where = "torchlean --help"
        if _after_command(words, command, extras[0]):
            where = f"torchlean {command} --help"
            refuse: Callable[[argparse.Namespace, list[str]], str | None] | None = getattr(
                args, "refuse_extras", None
            )
            own = None if refuse is None else refuse(args, extras)
            if own is not None:  # the command words the refusal itself (``explain`` of two ops)
                parser.error(own)
        lacks = ""  # review228 F6: a command without --format says so, whatever the spelling and place
        formats = any(word == "--format" or word.startswith("--format=") for word in extras)
        if formats and where != "torchlean --help":
            lacks = f"torchlean {command} has no --format; "
        parser.error(f"unrecognized arguments: {' '.join(extras)} ({lacks}{where} lists the accepted ones)")
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
    if func is None:
        parser.error(
            f"a command is required (choose from {', '.join(map(repr, parser.commands))}; "
            "torchlean --help describes them)"
        )
    args.argv = ["torchlean", *words]  # the command line, for the records' environment block
    for note in parser.repeated_notes():
        print(note, file=sys.stderr)
    if sys.stdout is None:
        # started with file descriptor 1 closed (``>&-``): print() would drop every line silently
        print("error: cannot write the output: standard output is closed", file=sys.stderr)
        return 2
    try:
        return func(args)
    except MemoryError as error:  # before TorchLeanError: a KernelMemoryError is both
        if isinstance(error, DataMemoryError):  # the data's size, not the model's (review103 F2)
            print(f"error: {_error_line(cli_spelling(str(error)))}", file=sys.stderr)
            return 2
        text = str(error) or "allocation failed"  # Python's own MemoryError carries no text
        sizes = [f"--{dest.replace('_', '-')} {_shown_size(getattr(args, dest))}" for dest in _SIZE_OPTIONS
                 if getattr(args, dest, None) is not None]
        named = f" ({', '.join(sizes)})" if sizes else ""
        checkpoint = getattr(args, "checkpoint", None)  # predict, inspect: no size of theirs to lower
        from torchlean.cli._output import shown_path
        advice = (f" with checkpoint {shown_path(checkpoint)}: its model or the data read with it need more "
                  "memory than this process may use" if checkpoint is not None and not sizes  # review158 F10
                  else f"; try smaller sizes{named}")
        print(f"error: out of memory ({text}){advice}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as error:  # a --no-deps install without torch (review96 L4, review97 M1)
        if error.name != "torch":
            raise
        print("error: this command needs torch, which is not installed (torchlean depends on it: pip "
              "install torch)", file=sys.stderr)
        return 2
    except TorchLeanError as error:  # the data layer's hints, worded for the CLI (--task regression)
        for line in cli_spelling(str(error)).splitlines() or [type(error).__name__]:
            print(f"error: {_error_line(line)}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # the reader went away (``torchlean graph | head``): stop quietly, as other CLIs do
        silence_stdout()
        return 141
    except OSError as error:  # an output that cannot take the writes (``> /dev/full``)
        where = f" ({error.filename})" if error.filename else ""
        print(f"error: cannot write the output: {error.strerror or error}{where}", file=sys.stderr)
        silence_stdout()
        return 2
    except UnicodeEncodeError as error:  # a character stdout's strict encoding lacks (PYTHONIOENCODING=ascii)
        encoding = getattr(sys.stdout, "encoding", None) or error.encoding
        print(f"error: cannot write the output: {error} (standard output's encoding is {encoding}; a file "
              "is written as UTF-8: predict --output FILE, or set PYTHONIOENCODING=utf-8)",
              file=sys.stderr)  # review163 F8: name the way out (review164 F5: --report-json is none)
        return 2


if not _TYPE_CHECKING:  # mypy resolves submodules itself; at run time each loads on first use

    def __getattr__(name: str) -> object:
        """``torchlean.cli.<name>`` for a public submodule, imported on first use (PEP 562); the
        helper is imported here, as ``import torchlean.cli`` loads the standard library only."""
        from torchlean.backend._submodules import submodule

        return submodule(__name__, name)

    def __dir__() -> list[str]:
        """This module's attributes and its public submodules, loaded or not."""
        from torchlean.backend._submodules import module_dir

        return module_dir(__name__)()


if __name__ == "__main__":
    raise SystemExit(main())
