"""``display.path_shown``: a file name as given when every character prints as itself, else in
bash's ANSI-C quoting ``$'...'`` (review207 F8). Oracle: bash itself, which must read each
``$'...'`` back as the same name (its bytes under UTF-8), where bash is on the PATH; and hand
values."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from torchlean.backend.display import path_shown

CASES = [
    ("plain.csv", "utf-8", "plain.csv"),
    ("q\\x80.npz", "utf-8", "q\\x80.npz"),  # a literal backslash prints as is
    ("it's.csv", "utf-8", "it's.csv"),
    ("caf\u00e9.csv", "utf-8", "caf\u00e9.csv"),
    (os.fsdecode(b"q\x80.npz"), "utf-8", "$'q\\x80.npz'"),  # a byte that is not UTF-8
    ("a\nb", "utf-8", "$'a\\nb'"),
    ("c\x1b[31md", "utf-8", "$'c\\x1b[31md'"),
    ("tab\t'q'\\", "utf-8", "$'tab\\t\\'q\\'\\\\'"),  # its quotes and backslash escaped inside
    ("caf\u00e9.csv", "ascii", "$'caf\\u00e9.csv'"),
    ("\U0001f600\u202e", "utf-8", "$'\U0001f600\\u202e'"),
    ("\U0001f600", "ascii", "$'\\U0001f600'"),
    ("nel\x85", "utf-8", "$'nel\\u0085'"),
]


@pytest.mark.parametrize(("name", "encoding", "shown"), CASES)
def test_path_shown(name: str, encoding: str, shown: str) -> None:
    assert path_shown(name, encoding) == shown
    assert path_shown(name, encoding).isprintable()


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize(("name", "encoding", "shown"), [case for case in CASES if case[2].startswith("$'")])
def test_bash_reads_the_quoting_back_as_the_name(name: str, encoding: str, shown: str) -> None:
    done = subprocess.run(["bash", "-c", f"printf %s {shown}"], capture_output=True, check=True,
                          env={**os.environ, "LC_ALL": "C.UTF-8"})
    assert done.stdout == os.fsencode(name)
