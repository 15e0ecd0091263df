"""review103 F2: memory that ran out while a CSV file was read was reported as the model's
("try smaller sizes (--hidden 64, --batch-size 32)", options never given and of no help). Now
loading names the file and its size (``DataMemoryError``, also a ``MemoryError``). The memory
is made to run out here by a reader that raises ``MemoryError``, as numpy and Python do."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_runs import cli

from torchlean import data


@pytest.fixture
def csv(tmp_path: Path) -> Path:
    path = tmp_path / "rows.csv"
    path.write_text("a,b,y\n" + "".join(f"{i},{i % 3},{i % 2}\n" for i in range(40)))
    return path


@pytest.fixture
def no_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    def exhausted(*args: object, **kwargs: object) -> None:
        raise MemoryError

    monkeypatch.setattr(data, "read_csv", exhausted)


def _message(path: Path) -> str:
    return (f"loading {path} ({os.path.getsize(path) / 1e6:.1f} MB) ran out of memory: its rows are held as "
            "text, then as float64 arrays, several times the file's size; load a smaller file (fewer rows or "
            "columns) or give the process more memory")


def test_loading_names_the_file_and_its_size(csv: Path, no_memory: None) -> None:
    with pytest.raises(data.DataMemoryError) as caught:
        data.load(csv)
    assert str(caught.value) == _message(csv)
    assert isinstance(caught.value, MemoryError) and isinstance(caught.value, data.DataError)


def test_the_commands_say_the_data_ran_out_of_memory(
    capsys: pytest.CaptureFixture[str], csv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torchlean.cli import main

    model = tmp_path / "m.npz"
    assert main(["train", "--dataset", str(csv), "--epochs", "1", "--hidden", "4", "--save", str(model)]) == 0
    capsys.readouterr()

    def exhausted(*args: object, **kwargs: object) -> None:
        raise MemoryError

    monkeypatch.setattr(data, "read_csv", exhausted)
    for argv in (("train", "--dataset", str(csv), "--epochs", "1"),
                 ("predict", str(model), "--dataset", str(csv)),
                 ("inspect", str(model), "--dataset", str(csv))):
        code, out, err = cli(capsys, *argv)
        if argv[0] == "inspect":  # inspect reports the data it cannot load, as for other failures
            assert code == 0 and "data_matches: unknown" in out.splitlines(), err
            assert "ran out of memory" in err
            continue
        assert (code, err) == (2, f"error: {_message(csv)}\n"), argv
        assert "--hidden" not in err


def test_standard_input_is_named_as_such(no_memory: None) -> None:
    """review104 M4: "loading /dev/stdin (0.0 MB)": a pipe has no size, and messages call it
    standard input (-)."""
    with pytest.raises(data.DataMemoryError) as caught:
        data.load(data.STDIN)
    assert str(caught.value).startswith("loading standard input (-) ran out of memory: its rows are held")
