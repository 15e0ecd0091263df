"""Building and loading ``torchlean_native_ext``, the C++/CUDA extension of the native-cuda provider.

The sources ship with the package, in ``csrc/`` beside this module (``native_ops.cu``,
``kernels.cuh``, ``bindings.cpp``; see :func:`sources_dir`); :func:`load_extension` compiles them
with ``torch.utils.cpp_extension.load`` the first time a native kernel runs, and only when
``torch.cuda.is_available()``. Importing this module builds nothing and needs no GPU. Every
failure on the way is a :class:`NativeExtensionError` whose message says what is missing:

* a CPU-only torch build: ``CUDA was requested, but this torch build (...) is not a CUDA build; ...``
  (adapted from the original's CPU-stub probe message, anchor-runtime.md §1.7);
* a CUDA build without a visible device: ``CUDA was requested and this is a CUDA build, but no
  usable CUDA device is visible`` (anchor-backend.md §3.1, verbatim);
* no ``nvcc`` (no CUDA toolkit), no C++ compiler, no ``ninja`` or no Python headers (a
  :class:`NativeToolchainError`), or a failed build.

:func:`host_emulation` selects, for the current context, a second build of the *same* sources
for the CPU (``csrc/emu``): tensors stay on the CPU and torchlean's own kernels run in a
cooperative-thread CUDA emulator. It exists so that machines without a GPU (CI) execute the
kernel code; capsules never select it.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import importlib.resources
import os
import shutil
import sys
import sysconfig
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

from torchlean.backend.errors import TorchLeanError

__all__ = [
    "EMULATION_NAME",
    "EXTENSION_NAME",
    "NO_DEVICE_MESSAGE",
    "SANITIZERS",
    "NativeExtensionError",
    "NativeKernelError",
    "NativeToolchainError",
    "active_module",
    "build_directory",
    "build_lock",
    "expected_device_type",
    "host_emulation",
    "load_extension",
    "load_host_emulation",
    "not_a_cuda_build_message",
    "require_cuda",
    "sources_dir",
    "stream_handle",
]

EXTENSION_NAME = "torchlean_native_ext"
EMULATION_NAME = "torchlean_native_ext_emu"
NO_DEVICE_MESSAGE = "CUDA was requested and this is a CUDA build, but no usable CUDA device is visible"

_SOURCES_ENV = "TORCHLEAN_CSRC"
_CUDA_SOURCES = ("native_ops.cu", "bindings.cpp")
_EMULATION_SOURCES = ("emu/native_ops_emu.cpp", "bindings.cpp")


class NativeExtensionError(TorchLeanError):
    """The native extension cannot be built or loaded here (no CUDA, no toolchain, build failure)."""


class NativeToolchainError(NativeExtensionError):
    """A tool the build needs is missing here (``nvcc``/the CUDA toolkit, a C++ compiler,
    ``ninja``, the Python headers): the sources were never compiled, unlike a build that ran and
    failed."""


class NativeKernelError(TorchLeanError):
    """The native extension raised while running a kernel (after its argument checks passed)."""


def not_a_cuda_build_message(torch_version: str) -> str:
    """The message for a CPU-only torch build, naming the installed version."""
    return (
        f"CUDA was requested, but this torch build ({torch_version}) is not a CUDA build; "
        "install a CUDA build of torch to run on `cuda`"
    )


def require_cuda() -> None:
    """Return when this process can launch CUDA kernels through torch.

    Raises:
        NativeExtensionError: with :func:`not_a_cuda_build_message` for a CPU-only torch build,
            or :data:`NO_DEVICE_MESSAGE` for a CUDA build that sees no device.
    """
    import torch

    if torch.version.cuda is None:
        raise NativeExtensionError(not_a_cuda_build_message(torch.__version__))
    if not torch.cuda.is_available():
        raise NativeExtensionError(NO_DEVICE_MESSAGE)


def sources_dir() -> Path:
    """The directory of the extension's sources: ``$TORCHLEAN_CSRC`` if set (non-empty), else the
    package's own ``csrc`` (``torchlean/backend/providers/native_cuda/csrc``, shipped in the wheel
    and the sdist as package data, found through :mod:`importlib.resources`), the same files in a
    checkout, an editable install and a regular install.

    Raises:
        NativeExtensionError: when the directory or one of its sources is missing, or when the
            package is not on the file system (imported from a zip file), which the compiler
            cannot read; both name ``$TORCHLEAN_CSRC``.
    """
    override = os.environ.get(_SOURCES_ENV)
    if override:
        root = Path(override)
    else:
        shipped = importlib.resources.files("torchlean.backend.providers.native_cuda") / "csrc"
        if not isinstance(shipped, Path):
            raise NativeExtensionError(
                f"the sources of {EXTENSION_NAME} are not on the file system ({shipped}, a package "
                f"imported from a zip file?); set {_SOURCES_ENV} to a directory holding them"
            )
        root = shipped
    checkout = "a checkout's torchlean/backend/providers/native_cuda/csrc"
    for name in (*_CUDA_SOURCES, *_EMULATION_SOURCES, "native_ops.h", "kernels.cuh"):
        if not (root / name).is_file():
            remedy = (
                f"{_SOURCES_ENV}={override}: point it at a directory holding them, such as {checkout}, "
                "or unset it to use the package's own"
                if override
                else f"the installed package lacks them: reinstall torchlean, or set {_SOURCES_ENV} to "
                f"a directory holding them, such as {checkout}"
            )
            raise NativeExtensionError(
                f"the sources of {EXTENSION_NAME} are not available: {root / name} does not exist "
                f"({remedy})"
            )
    return root


def _require_tool(tool: str, purpose: str) -> None:
    if shutil.which(tool) is None:
        raise NativeToolchainError(f"building {EXTENSION_NAME} needs {purpose}: `{tool}` is not on PATH")


def _require_host_compiler() -> None:
    compiler = os.environ.get("CXX", "c++")
    _require_tool(compiler, "a C++ compiler (set CXX to choose one)")
    _require_tool("ninja", "the ninja build tool (pip install ninja)")
    headers = Path(sysconfig.get_paths()["include"])
    if not (headers / "Python.h").is_file():
        raise NativeToolchainError(
            f"building {EXTENSION_NAME} needs the Python development headers: {headers / 'Python.h'} "
            "does not exist (install your Python's headers, e.g. the python3-dev package)"
        )


def build_directory(name: str, root: Path) -> Path:
    """Where the build ``name`` of the sources in ``root`` is compiled and cached: torch's
    extensions directory (``$TORCH_EXTENSIONS_DIR``, else
    ``torch.utils.cpp_extension.get_default_build_root()``) / ``<name>-<digest>``, the digest (12
    hex digits of SHA-256) of root's resolved path, the Python version, torch's version and CUDA
    version, and the GPU architectures the build targets: ``$TORCH_CUDA_ARCH_LIST``, or when it
    is unset the compute capabilities of the visible devices, which torch then builds for (its
    own build versioning ignores both, so a build for other GPU architectures, in a shared
    extensions directory, would be reused and fail at launch with "no kernel image is
    available"). So two checkouts, Pythons or torch installs never share a build: with one shared
    directory each would rebuild over the other's whenever their source paths differ, and torch
    imports the library after releasing its build lock, so a process could load a library that
    another had just built from other sources. Creates nothing."""
    import torch
    from torch.utils import cpp_extension

    base = os.environ.get("TORCH_EXTENSIONS_DIR") or cpp_extension.get_default_build_root()
    architectures = os.environ.get("TORCH_CUDA_ARCH_LIST") or _visible_architectures()
    key = "\0".join(
        (str(root.resolve()), sys.version, torch.__version__, str(torch.version.cuda), architectures)
    )
    return Path(base) / f"{name}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"


def _visible_architectures() -> str:
    """The compute capabilities of the visible CUDA devices (``"8.0;9.0"``), what torch builds for
    without ``$TORCH_CUDA_ARCH_LIST``; empty without CUDA."""
    import torch

    if not torch.cuda.is_available():
        return ""
    found = {torch.cuda.get_device_capability(index) for index in range(torch.cuda.device_count())}
    return ";".join(f"{major}.{minor}" for major, minor in sorted(found))


def _notify_wait(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@contextlib.contextmanager
def build_lock(directory: Path, notify: Callable[[str], None] = _notify_wait) -> Iterator[None]:
    """Hold torchlean's own inter-process lock on the build directory ``directory`` within the
    block, and clear a build lock that a killed process left there.

    torch's ``cpp_extension.load`` guards a build directory with a ``lock`` file (its
    ``FileBaton``) that it removes when the build ends; a process killed mid-build leaves the file
    behind, and every later load of that directory, even of a finished build, then waits for it
    forever. Here each torchlean build of ``directory`` first takes ``fcntl.flock`` on
    ``directory/torchlean.flock``, a lock the operating system drops when its holder dies. So a
    ``lock`` file found while holding it belongs to no live torchlean build (the directories of
    :func:`build_directory` are torchlean's own) and is removed, with a note on stderr. When another
    process holds the lock (building, or loading a finished build, which is quick), ``notify`` is
    called once with a line saying so, and the block waits for it. Where ``fcntl`` does not exist
    (Windows), the block runs without either.

    Raises:
        OSError: when the lock file cannot be created or locked.
    """
    try:
        import fcntl
    except ImportError:  # Windows
        yield
        return
    with open(directory / "torchlean.flock", "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            notify(f"torchlean: waiting for another process that builds or loads {directory}")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            stale = directory / "lock"
            if stale.exists():
                stale.unlink(missing_ok=True)
                notify(f"torchlean: removed {stale}, the build lock of an interrupted build")
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _build(
    name: str, sources: tuple[str, ...], *, cuda: bool, sanitizers: tuple[str, ...] = ()
) -> ModuleType:
    from torch.utils import cpp_extension

    root = sources_dir()
    directory = build_directory(name, root)
    flags = ["-O3"] if cuda else ["-O2", "-DTORCHLEAN_EMULATE=1"]
    link: list[str] = []
    if sanitizers:
        sanitize = f"-fsanitize={','.join(sanitizers)}"
        # -O1 -g1 (ASan's advice; minimal debug info): the build takes about half the time of
        # -O2 -g, the suite's longest step. Reports keep function names and the launch's file:line
        # (a kernel frame may lack its own line).
        flags = [*(flag for flag in flags if not flag.startswith("-O")), "-O1", "-g1"]
        flags += ["-fno-omit-frame-pointer", sanitize]
        link = [sanitize]
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with build_lock(directory):
            module = cpp_extension.load(
                name=name,
                sources=[str(root / source) for source in sources],
                extra_cflags=flags,
                extra_cuda_cflags=["-O3", "-lineinfo"],
                extra_ldflags=link,
                extra_include_paths=[str(root)],
                with_cuda=cuda,
                build_directory=str(directory),
                verbose=False,
            )
    except (RuntimeError, OSError, ImportError) as error:
        raise NativeExtensionError(f"building {name} from {root} failed: {error}") from error
    if not isinstance(module, ModuleType):
        raise NativeExtensionError(f"building {name} returned {type(module).__name__}, not a module")
    return module


_lock = threading.Lock()
_loaded: dict[str, ModuleType] = {}


def load_extension() -> ModuleType:
    """The CUDA build of ``torchlean_native_ext``, compiled on first use and cached per process
    (and across processes in :func:`build_directory`).

    Raises:
        NativeExtensionError: no CUDA (see :func:`require_cuda`), missing sources, or a failed
            build; its subclass :class:`NativeToolchainError` when ``nvcc``, a C++ compiler,
            ``ninja`` or the Python headers are missing.
    """
    require_cuda()
    with _lock:
        if EXTENSION_NAME not in _loaded:
            from torch.utils import cpp_extension

            if cpp_extension.CUDA_HOME is None:
                raise NativeToolchainError(
                    f"building {EXTENSION_NAME} needs the CUDA toolkit: nvcc was not found "
                    "(set CUDA_HOME or put nvcc on PATH)"
                )
            _require_host_compiler()
            _loaded[EXTENSION_NAME] = _build(EXTENSION_NAME, _CUDA_SOURCES, cuda=True)
        return _loaded[EXTENSION_NAME]


SANITIZERS = ("address", "undefined")
"""The compiler sanitizers :func:`load_host_emulation` accepts (GCC/Clang ``-fsanitize=`` names)."""


def load_host_emulation(sanitizers: tuple[str, ...] = ()) -> ModuleType:
    """The host-emulation build (CPU tensors, emulated kernels), compiled on first use and cached.

    ``sanitizers`` (a subset of :data:`SANITIZERS`) builds a separate instrumented copy
    (``-fsanitize=address,undefined``: out-of-bounds reads and writes of device and shared memory,
    undefined arithmetic). Its process must load the sanitizer runtime first, e.g.
    ``LD_PRELOAD=$(gcc -print-file-name=libasan.so)``; ``tests/cuda/sanitized_parity.py`` does so.

    Raises:
        NativeExtensionError: an unknown sanitizer, missing sources, or a failed build; its
            subclass :class:`NativeToolchainError` when a C++ compiler, ``ninja`` or the Python
            headers are missing.
    """
    unknown = [name for name in sanitizers if name not in SANITIZERS]
    if unknown:
        raise NativeExtensionError(f"unknown sanitizers {unknown} (accepted: {list(SANITIZERS)})")
    name = "_".join((EMULATION_NAME, *sanitizers))
    with _lock:
        if name not in _loaded:
            _require_host_compiler()
            _loaded[name] = _build(name, _EMULATION_SOURCES, cuda=False, sanitizers=sanitizers)
        return _loaded[name]


_emulating: contextvars.ContextVar[ModuleType | None] = contextvars.ContextVar(
    "torchlean_native_emulation", default=None
)


@contextlib.contextmanager
def host_emulation(sanitizers: tuple[str, ...] = ()) -> Iterator[ModuleType]:
    """Within the block, native kernels run on the host-emulation build with CPU tensors
    (the instrumented build when ``sanitizers`` is given, see :func:`load_host_emulation`).

    Yields the emulation module. Raises :class:`NativeExtensionError` when it cannot be built.
    """
    module = load_host_emulation(sanitizers)
    token = _emulating.set(module)
    try:
        yield module
    finally:
        _emulating.reset(token)


def active_module() -> ModuleType:
    """The build that kernels launch on in this context (CUDA, or the host emulation)."""
    emulated = _emulating.get()
    return emulated if emulated is not None else load_extension()


def expected_device_type() -> str:
    """``"cuda"``, or ``"cpu"`` inside :func:`host_emulation`."""
    return "cpu" if _emulating.get() is not None else "cuda"


def stream_handle(device_index: int) -> int:
    """The raw handle of torch's current CUDA stream on ``device_index`` (0 under emulation), so
    that torchlean's own kernels are ordered with the ATen work around them."""
    if _emulating.get() is not None:
        return 0
    import torch

    return int(torch.cuda.current_stream(device_index).cuda_stream)
