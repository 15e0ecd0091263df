"""review103 F4: a path holding a line break or an escape character was printed raw in the
"not found" errors and the ``saved:``/``wrote`` lines: one error split over two lines, and an
escape sequence reached the terminal (header lines already escaped them). Now such a character
is written as its backslash escape, as Python writes it in a literal, inside bash's ``$'...'``
quoting (review207 F8: apart from a name holding a backslash literally). Oracle: ``repr`` of the
path (which holds no quote or backslash), less its quotes, in ``$'...'``."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runs import cli

NEWLINE, ESCAPE = "a\nb", "c\x1b[31md"


def _shown(path: Path) -> str:
    assert "'" not in str(path) and "\\" not in str(path)
    return "$'" + repr(str(path))[1:-1] + "'"


def test_not_found_errors_are_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for odd in (NEWLINE, ESCAPE):
        missing = tmp_path / f"{odd}.csv"
        code, out, err = cli(capsys, "train", "--dataset", str(missing))
        assert (code, out, err) == (2, "", f"error: dataset file not found: {_shown(missing)}\n")
        checkpoint = tmp_path / f"{odd}.npz"
        code, out, err = cli(capsys, "predict", str(checkpoint), "--dataset", "iris")
        assert (code, out, err) == (2, "", f"error: checkpoint file not found: {_shown(checkpoint)}\n")
        assert "\x1b" not in err and err.count("\n") == 1


def test_saved_and_wrote_lines_are_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    folder = tmp_path / NEWLINE
    saved, output = folder / "m.npz", tmp_path / f"{ESCAPE}.csv"
    code, out, err = cli(capsys, "train", "--dataset", "iris", "--epochs", "1", "--hidden", "4", "--save",
                         str(saved))
    assert code == 0, err
    assert out.splitlines()[-1] == f"saved: {_shown(saved)}" and saved.is_file()
    code, out, err = cli(capsys, "predict", str(saved), "--dataset", "iris", "--output", str(output))
    assert code == 0, err
    assert out.splitlines()[-1] == f"wrote {_shown(output)}" and output.is_file()
    assert "\x1b" not in out


def test_write_refusals_are_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """review104 L1: "cannot write --save ...: it is a directory" and "... name the same file" wrote
    the path raw."""
    folder = tmp_path / f"{NEWLINE}.csv"
    folder.mkdir()
    code, out, err = cli(capsys, "train", "--dataset", "iris", "--epochs", "1", "--save", str(folder))
    assert (code, out, err) == (2, "", f"error: cannot write --save {_shown(folder)}: it is a directory\n")
    both = tmp_path / f"{ESCAPE}.npz"
    code, out, err = cli(capsys, "train", "--dataset", "iris", "--epochs", "1", "--save", str(both),
                         "--report-json", str(both))
    assert code == 2 and "\x1b" not in err and err.count("\n") == 1, err
    assert f"--save {_shown(both)} name the same file" in err


def test_a_name_with_an_escape_reads_apart_from_one_holding_a_backslash(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review207 F8: ``q\\x80`` (a backslash, an ``x``, an ``8``, a ``0``) and ``q`` + the byte
    0x80 printed alike in ``saved:`` and the not-found errors. The escaped name is now in bash's
    ``$'...'`` quoting (which pastes back as the same name), the literal one as it is."""
    import os

    literal, byte = "q\\x80", os.fsdecode(b"q\x80")
    cases = {literal: f"{tmp_path}/q\\x80{{}}", byte: f"$'{tmp_path}/q\\x80{{}}'"}
    for stem, shown in cases.items():
        code, out, err = cli(capsys, "train", "--dataset", str(tmp_path / f"{stem}.csv"))
        assert (code, err) == (2, f"error: dataset file not found: {shown.format('.csv')}\n")
        code, out, err = cli(capsys, "train", "--dataset", "iris", "--epochs", "1", "--hidden", "4",
                             "--save", str(tmp_path / f"{stem}.npz"))
        assert code == 0, err
        assert out.splitlines()[-1] == f"saved: {shown.format('.npz')}"
    assert cases[literal] != cases[byte]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([f"{literal}.npz", f"{byte}.npz"])


def test_the_data_and_checkpoint_readers_name_such_files_alike(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review210 F3: messages that name the file through the CSV reader (``Table.shown_file``)
    and the checkpoint reader printed a line break raw (one error on two lines) and a byte that is
    not UTF-8 as ``\\udc80`` or, for a checkpoint, as the characters ``\\x80``, as a name holding
    them literally prints."""
    import os

    data = tmp_path / "e\nf.csv"
    data.write_text("a,b\n1,x\n2,y\n")
    code, _, err = cli(capsys, "train", "--dataset", str(data), "--epochs", "1")
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"error: $'{tmp_path}/e\\nf.csv': the train split holds only class ")
    byte = tmp_path / os.fsdecode(b"d\x80.csv")
    byte.write_text("a,b\n1,x\n")
    checkpoint = tmp_path / "m.npz"
    assert cli(capsys, "train", "--dataset", "iris", "--epochs", "1", "--hidden", "4", "--save",
               str(checkpoint))[0] == 0
    code, _, err = cli(capsys, "predict", str(checkpoint), "--dataset", str(byte), "--output",
                         str(tmp_path / "p.csv"))
    assert code == 2 and err.startswith(f"error: $'{tmp_path}/d\\x80.csv' has 1 feature column"), err
    for name, shown in ((os.fsdecode(b"bad\x80.npz"), f"$'{tmp_path}/bad\\x80.npz'"),
                        ("bad\\x80.npz", f"{tmp_path}/bad\\x80.npz")):
        (tmp_path / name).write_bytes(checkpoint.read_bytes()[:300])
        code, _, err = cli(capsys, "inspect", str(tmp_path / name))
        assert code == 2 and err.startswith(f"error: {shown}: a truncated or damaged .npz archive"), err


def test_predict_names_such_a_checkpoint_on_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review213 F1: predict's own messages and notes named the checkpoint raw: a line break in its
    name split the feature-count refusal into two ``error:`` lines."""
    checkpoint = tmp_path / "m\nx.npz"
    assert cli(capsys, "train", "--dataset", "iris", "--epochs", "1", "--hidden", "4", "--save",
               str(checkpoint))[0] == 0
    data = tmp_path / "d.csv"
    data.write_text("a,b\n1,x\n")
    code, _, err = cli(capsys, "predict", str(checkpoint), "--dataset", str(data), "--output",
                       str(tmp_path / "p.csv"))
    assert code == 2 and err.count("\n") == 1, err
    assert f"but checkpoint $'{tmp_path}/m\\nx.npz' expects 4 features" in err


def test_a_suggested_command_gives_such_a_name_as_one_shell_word(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review213 (the quoting of review207 F8 in commands a note suggests): ``shlex.quote`` of a
    ``$'...'`` form named another file; the form is one shell word already."""
    import subprocess

    checkpoint = tmp_path / "m\nx.npz"
    assert cli(capsys, "train", "--dataset", "iris", "--epochs", "1", "--hidden", "4", "--save",
               str(checkpoint))[0] == 0
    code, _, err = cli(capsys, "train", "--resume", str(checkpoint), "--epochs", "2")
    assert code == 0, err
    word = f"$'{tmp_path}/m\\nx.npz'"
    assert f"pass --save {word} to update it" in err, err
    done = subprocess.run(["bash", "-c", f"printf %s {word}"], capture_output=True, text=True, check=True)
    assert done.stdout == str(checkpoint)


def test_a_data_name_is_quoted_once_under_an_ascii_stderr(tmp_path: Path) -> None:
    """review218 F2: predict quoted the reader's already-quoted name again where stdout's encoding
    could not write a character of it (``$'$\\'\\u00e9...``, another file); the reader quotes it
    for standard error's encoding, ``\\u00e9`` inside one ``$'...'``."""
    import os
    import subprocess
    import sys

    checkpoint = tmp_path / "m.npz"
    subprocess.run([sys.executable, "-m", "torchlean", "train", "--dataset", "iris", "--epochs", "1",
                    "--hidden", "4", "--save", str(checkpoint)], check=True, capture_output=True)
    data = tmp_path / "\u00e9\nd.csv"
    data.write_text("a,b\n1,x\n")
    done = subprocess.run(
        [sys.executable, "-m", "torchlean", "predict", str(checkpoint), "--dataset", str(data), "--output",
         str(tmp_path / "p.csv")],
        capture_output=True, text=True, env={**os.environ, "PYTHONIOENCODING": "ascii"},
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"error: $'{tmp_path}/\\u00e9\\nd.csv' has 1 feature column"), done.stderr
    bash = subprocess.run(["bash", "-c", f"printf %s {done.stderr.split()[1]}"], capture_output=True,
                          env={**os.environ, "LC_ALL": "C.UTF-8"}, check=True)
    assert bash.stdout == os.fsencode(str(data))


def test_the_swapped_arguments_hint_pastes_back_as_the_same_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review218 F1: the hint's whole command was wrapped in one ``$'...'`` word (so it could not be
    pasted), and resume's advice quoted a ``$'...'`` form with shlex; each word is one shell word."""
    import subprocess

    checkpoint = tmp_path / "m.npz"
    assert cli(capsys, "train", "--dataset", "iris", "--epochs", "1", "--hidden", "4", "--save",
               str(checkpoint))[0] == 0
    data = tmp_path / "q\nr.csv"
    data.write_text("a,b,c,d,y\n1,2,3,4,x\n")
    code, _, err = cli(capsys, "predict", str(data), "--dataset", str(checkpoint), "--output", "p.csv")
    assert code == 2 and err.count("\n") == 1, err
    command = err.rsplit("(", 1)[1].removesuffix(")\n")
    assert command == f"torchlean predict {checkpoint} --dataset $'{tmp_path}/q\\nr.csv' --output p.csv"
    words = subprocess.run(["bash", "-c", f"printf '%s\\0' {command}"], capture_output=True, text=True,
                           check=True).stdout.split("\0")[:-1]
    assert words == ["torchlean", "predict", str(checkpoint), "--dataset", str(data), "--output", "p.csv"]


def test_the_swapped_hint_gives_a_dashed_name_as_a_path() -> None:
    """review219 F4: a swapped name starting with '-' was suggested as it is, which argparse reads
    as an option; it is given as ./-name (the words as typed are found either way)."""
    from torchlean.cli.predict import _swapped_command

    argv = ["torchlean", "predict", "--dataset=-m.npz", "--", "-d.csv"]
    assert _swapped_command(argv, "-d.csv", "-m.npz") == "torchlean predict ./-m.npz --dataset ./-d.csv"
    argv = ["torchlean", "predict", "./-d.csv", "--dataset", "-m.npz", "--output", "p.csv"]
    assert _swapped_command(argv, "./-d.csv", "-m.npz") == (
        "torchlean predict ./-m.npz --dataset ./-d.csv --output p.csv")
