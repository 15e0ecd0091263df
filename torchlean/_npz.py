"""Reading a numpy ``.npz`` archive that may be hostile: its entry names, then each entry's ``.npy``
header (dtype and shape, from the entry's first bytes), then, only once the caller has checked
those, the data.

``np.load`` of an ``.npz`` reads an entry's data as soon as it is asked for, and a zip entry of a
few kilobytes can inflate to gigabytes; an entry's header says how much it holds without reading
it. Nothing here unpickles: an entry whose header declares an object dtype is refused from the
header, naming it, with numpy's own wording, as ``np.load(..., allow_pickle=False)`` refuses it.
"""

from __future__ import annotations

import contextlib
import io
import re
import tokenize
import warnings
import zipfile
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["MAX_HEADER_BYTES", "SUFFIX", "Entry", "NotAnArray", "header", "members", "read", "repeated_names"]

SUFFIX = ".npy"
"""The suffix of an archive member holding a numpy array (``np.savez`` adds it to each name)."""
_MAGIC = b"\x93NUMPY"
_LENGTH_BYTES = {(1, 0): 2, (2, 0): 4}
"""The size of the header-length field of each ``.npy`` format version read (little-endian)."""
MAX_HEADER_BYTES = 10_000
"""The longest ``.npy`` header read: numpy's own bound (``max_header_size``'s default)."""
_PICKLE_REFUSED = "Object arrays cannot be loaded when allow_pickle=False"
"""numpy's message for an object array read with ``allow_pickle=False``."""


try:
    from lzma import LZMAError
except ImportError:  # a Python built without lzma: zipfile refuses LZMA members itself
    _DECOMPRESSION_ERRORS: tuple[type[Exception], ...] = (zlib.error,)
else:
    _DECOMPRESSION_ERRORS = (zlib.error, LZMAError)
"""What ``zipfile`` lets out of a damaged deflate or LZMA member (bzip2's are ``OSError``s)."""

_PYTHON2_HEADER = "Reading `.npy` or `.npz` file required additional header parsing"
"""The start of numpy's warning for a header it reads only through its Python 2 fallback."""


_PLAIN_HEADER = re.compile(
    rb"\{'descr': '[<>|=]?[biufcUS][0-9]+', 'fortran_order': (?:True|False), "
    rb"'shape': \((?:|[0-9]+,|[0-9]+(?:, [0-9]+)+)\), \} *\n"
)
"""A ``.npy`` header as ``np.save`` writes one for an array of a plain dtype, bool, integer,
float, complex or text (``{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }``, padded
with spaces, then a newline): one numpy parses without a warning (no Python 2 literal, no
escape, no deprecated alias such as ``'a8'``: review238 F3), so it is read outside
:func:`_unusual_header_quiet`'s filters."""


@contextlib.contextmanager
def _damage_refused(name: str) -> Iterator[None]:
    """Within the block, a damaged compressed member (``zlib.error``, ``LZMAError``) or a header
    numpy's parser fails on with other than a ``ValueError`` (``tokenize.TokenError``, a
    ``SyntaxError`` such as ``IndentationError``: numpy retries a header that is no Python literal
    with its Python 2 tokenizer) raises ``ValueError`` naming entry ``name``, as other damage does
    (review207 F1, F2)."""
    try:
        yield
    except _DECOMPRESSION_ERRORS as error:
        raise ValueError(f"entry {name!r}: its compressed data is damaged ({error})") from None
    except (tokenize.TokenError, SyntaxError) as error:
        raise ValueError(f"entry {name!r}: its .npy header cannot be parsed ({type(error).__name__}: "
                         f"{error})") from None


@contextlib.contextmanager
def _unusual_header_quiet(plain: bool) -> Iterator[None]:
    """Within the block, unless the header is ``plain`` (:data:`_PLAIN_HEADER`), numpy's warning
    about a header read through its Python 2 fallback is not shown (a header torchlean never
    writes; the array it declares is checked as any: review207 F5), nor Python's about an invalid
    escape in a header's text (review210 F2).

    ``warnings.catch_warnings`` is not thread-safe: two threads inside it at once can leave its
    filters installed for good (review237 F1: two threads loading checkpoints left an ``ignore``
    of every ``SyntaxWarning``), so a plain header, every one ``np.save`` writes for the arrays
    torchlean reads, is read without it; an unusual one (a Python 2 literal ``(8L,)``, a
    structured or datetime dtype) read in two threads at once may still leave its filters, which
    ignore only these warnings."""
    if plain:
        yield
        return
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_PYTHON2_HEADER, category=UserWarning)
        # a header holding '\\e' (an invalid escape) warns from ast.literal_eval, shown by default
        # from Python 3.12 (review210 F2)
        for category in (SyntaxWarning, DeprecationWarning):
            warnings.filterwarnings("ignore", category=category, message="invalid escape sequence")
        yield


class NotAnArray(ValueError):
    """A member that holds no ``.npy`` array (its name lacks ``.npy``, or its bytes do not start
    as one); ``name`` is the entry's name as ``np.load`` lists it (without ``.npy``)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"entry {name!r} is not a numpy array")
        self.name = name


@dataclass(frozen=True, slots=True)
class Entry:
    """One ``.npy`` member's header: its ``name`` without ``.npy``, its zip ``info``, and the
    ``shape`` and ``dtype`` it declares (its data not read)."""

    name: str
    info: zipfile.ZipInfo
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    plain: bool
    """Whether the header is one ``np.save`` writes (:data:`_PLAIN_HEADER`)."""


def repeated_names(archive: zipfile.ZipFile) -> list[str]:
    """The member names ``archive`` holds more than once (in the order of their first copy): a
    zip may, and readers differ on which copy they take (``zipfile``: the last)."""
    counts = Counter(info.filename for info in archive.infolist())
    return [name for name, count in counts.items() if count > 1]


def members(archive: zipfile.ZipFile) -> dict[str, zipfile.ZipInfo]:
    """``archive``'s members by entry name (``np.load``'s names: the member name without
    ``.npy``), in archive order; nothing is read.

    Raises:
        NotAnArray: a member whose name does not end with ``.npy`` (``np.load`` would hand out its
            raw bytes), the first one.
    """
    found: dict[str, zipfile.ZipInfo] = {}
    for info in archive.infolist():
        if not info.filename.endswith(SUFFIX):
            raise NotAnArray(info.filename)
        found[info.filename[: -len(SUFFIX)]] = info
    return found


def header(archive: zipfile.ZipFile, name: str, info: zipfile.ZipInfo) -> Entry:
    """The ``.npy`` header of member ``info`` (entry ``name``), read from its first bytes only
    (``numpy.lib.format.read_array_header_1_0``/``_2_0``), its length checked against
    :data:`MAX_HEADER_BYTES` before the header is read.

    Raises:
        NotAnArray: the member does not start with the ``.npy`` magic string.
        ValueError: a header longer than :data:`MAX_HEADER_BYTES` (or cut inside its length
            field), a header numpy cannot parse, a ``.npy`` format version other than 1.0 and
            2.0 (3.0 is written only for structured dtypes with non-Latin-1 field names), an
            object dtype (naming the entry, with numpy's words ``Object arrays cannot be loaded
            when allow_pickle=False``), or a compressed member whose data is damaged.
        zipfile.BadZipFile, RuntimeError, NotImplementedError, OSError: what ``ZipFile.open``
            raises for a damaged, encrypted or unsupported member.
    """
    with _damage_refused(name), archive.open(info) as stream:
        start = stream.read(len(_MAGIC) + 2)
        if len(start) < len(_MAGIC) + 2 or start[: len(_MAGIC)] != _MAGIC:
            raise NotAnArray(name)
        version = (start[-2], start[-1])
        if version not in _LENGTH_BYTES:
            raise ValueError(f"entry {name!r}: .npy format version {version[0]}.{version[1]} is not read "
                             "(accepted: 1.0 and 2.0, as np.save writes plain arrays)")
        # the header's length first: numpy reads and decodes a whole header before it applies its
        # bound, so a declared length of 4 GiB, deflated from a few MB, took GBs (review158 F1)
        prefix = stream.read(_LENGTH_BYTES[version])
        length = int.from_bytes(prefix, "little")
        if len(prefix) < _LENGTH_BYTES[version]:  # review161 F7: cut short, not too long
            raise ValueError(f"entry {name!r}: its .npy ends inside its header's length field (the file "
                             "is cut short)")
        if length > MAX_HEADER_BYTES:
            raise ValueError(f"entry {name!r}: its .npy declares a header of {length} bytes (a plain array's "
                             f"takes under 200; accepted: at most {MAX_HEADER_BYTES})")
        raw = stream.read(length)
        plain = _PLAIN_HEADER.fullmatch(raw) is not None
        reader = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                  else np.lib.format.read_array_header_2_0)
        try:
            with _unusual_header_quiet(plain):
                shape, _, dtype = reader(io.BytesIO(prefix + raw))
        except TypeError as error:  # keys numpy cannot sort: b'fortran_order' beside 'descr' (review210 F2)
            raise ValueError(
                f"entry {name!r}: its .npy header cannot be parsed (TypeError: {error})"
            ) from None
    if dtype.hasobject:  # review221 F3: named, as every other refusal of a header names its entry
        raise ValueError(f"entry {name!r}: its .npy declares dtype {dtype}, which only pickle reads "
                         f"({_PICKLE_REFUSED}; accepted: bool, integer, float and text arrays)")
    return Entry(name, info, tuple(int(n) for n in shape), dtype, plain)


def read(archive: zipfile.ZipFile, entry: Entry) -> npt.NDArray[Any]:
    """The array of ``entry`` (``numpy.lib.format.read_array``, ``allow_pickle=False``).

    Raises:
        ValueError, EOFError, MemoryError, OSError, zipfile.BadZipFile: data shorter than the
            header declares, a bad CRC, damaged compressed data, and what :func:`header` raises.
    """
    with _damage_refused(entry.name), _unusual_header_quiet(entry.plain), archive.open(entry.info) as stream:
        array = np.lib.format.read_array(stream, allow_pickle=False)
    if array.shape != entry.shape or array.dtype != entry.dtype:  # the member changed under us
        raise ValueError(f"entry {entry.name!r} changed while it was read")
    return array
