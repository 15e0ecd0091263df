"""``torchlean/__main__.py`` runs the command line only as ``python -m torchlean`` (review60 F4):
importing it (pydoc, ``pkgutil.walk_packages`` with ``onerror``, import sweeps) neither prints
nor exits."""

from __future__ import annotations

import subprocess
import sys


def test_importing_the_main_module_runs_no_command() -> None:
    code = "import torchlean.__main__ as m; print('imported', callable(m.console_main))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, "imported True\n", "")


def test_python_m_torchlean_still_runs_the_command_line() -> None:
    done = subprocess.run([sys.executable, "-m", "torchlean"], capture_output=True, text=True, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("error: a command is required") and done.stderr.count("\n") == 1


def test_console_main_loads_nothing_heavy_before_its_ctrl_c_handler() -> None:
    """review198 F1: ``from torchlean.cli import _completion`` went through the package's
    ``__getattr__``, which imported the whole backend (about 0.1 s) before ``console_main``'s
    ``try``: a Ctrl-C then was a traceback. ``main`` is replaced by a probe that reports whether
    the backend was loaded when it was called."""
    probe = (
        "import sys, torchlean.cli as cli\n"
        "cli.main = lambda: print('torchlean.backend' in sys.modules) or 0\n"
        "sys.exit(cli.console_main())\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False,
                          timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (0, "False\n", "")
