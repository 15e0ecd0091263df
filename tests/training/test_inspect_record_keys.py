"""review65 F10: the README's table of ``torchlean inspect --report-json`` keys names the record's
keys, in its order, and each row's types are those of a real record (with and without
``--dataset``, of a ``train --save`` checkpoint and of one built in Python)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from _docs import documentation
from cli_runs import cli

from torchlean import checkpoint
from torchlean.checkpoint import Checkpoint

TYPES = {"string": str, "integer": int, "number": float, "boolean": bool, "list": list, "object": dict}


def readme_rows() -> list[tuple[list[str], list[list[str]]]]:
    """The rows of the README's inspect key table: each row's keys and, per key, its type words."""
    text = documentation()
    table = text[text.index("`inspect --report-json PATH` writes one JSON object"):]
    table = table[table.index("| key |"):]
    table = table[: table.index("\n\n")]
    rows = []
    for line in table.splitlines()[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        keys = re.findall(r"`(\w+)`", cells[0])
        types = [part.split() for part in cells[1].split(", ")]
        if len(types) == 1:
            types = types * len(keys)
        assert len(types) == len(keys), line
        rows.append((keys, types))
    return rows


def conforms(value: Any, words: list[str]) -> bool:
    """Whether ``value`` is of the README type ``words`` (``string or null``, ``integer``, ...)."""
    allowed = [TYPES[word] for word in words if word in TYPES]
    if value is None:
        return "null" in words
    return any(isinstance(value, kind) and not (kind is int and isinstance(value, bool)) for kind in allowed)


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    from torchlean.cli import main

    folder = tmp_path_factory.mktemp("keys")
    saved = folder / "m.npz"
    assert main(["train", "--dataset", "iris", "--hidden", "8", "--epochs", "1", "--save", str(saved)]) == 0
    loaded = checkpoint.load(saved)
    bare = folder / "bare.npz"
    fields = {name: getattr(loaded, name) for name in Checkpoint.__slots__}
    unrecorded = {"training": None, "environment": None, "data_sha256": None}
    checkpoint.save(bare, Checkpoint(**{**fields, **unrecorded}))
    found = []
    for argv in ([saved], [saved, "--dataset", "iris"], [bare], [bare, "--dataset", "wine"]):
        out = folder / "r.json"
        assert main(["inspect", *map(str, argv), "--report-json", str(out)]) == 0
        found.append(json.loads(out.read_text()))
    return found


def test_the_table_names_the_record_keys_in_order(records: list[dict[str, Any]]) -> None:
    documented = [key for keys, _ in readme_rows() for key in keys]
    assert list(records[1]) == documented  # with --dataset: every key
    given = ["dataset_given", "dataset_sha256", "data_matches", "data_difference", "dataset_error"]
    assert documented[-len(given):] == given  # only with --dataset
    assert list(records[0]) == documented[:-len(given)]


def test_each_value_has_its_documented_type(records: list[dict[str, Any]]) -> None:
    types = {key: words for keys, rows in readme_rows() for key, words in zip(keys, rows, strict=True)}
    for record in records:
        for key, value in record.items():
            assert conforms(value, types[key]), (key, value, types[key])
    # the nulls the table names are reached: no digest, training or environment recorded, so the
    # data given cannot be compared
    assert records[2]["data_sha256"] is None and records[2]["training"] is None
    assert records[2]["environment"] is None and records[2]["capsule_table_matches"] is None
    assert records[3]["data_matches"] is None and records[1]["data_matches"] is True


def test_inspect_without_report_json_prints_lines(capsys: pytest.CaptureFixture[str],
                                                   records: list[dict[str, Any]]) -> None:
    code, out, err = cli(capsys, "inspect", records[0]["checkpoint"])
    assert code == 0 and err == "" and f"checkpoint_sha256: {records[0]['checkpoint_sha256']}\n" in out
