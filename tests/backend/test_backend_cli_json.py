"""``--format report|json`` of ``torchlean check``, ``select`` and ``capsules``.

Oracles: the text report of the same command, parsed here line by line (the JSON must carry the
same facts, and the text must not change); the Python API (``BackendProfile.plan_ops``, the
capsules of ``all_modules()``); and hand values (the README's LibTorch example; the evidence rule
of DESIGN.md: only a trusted boundary is rejected, and only under ``checked``).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest

from torchlean.backend import profiles
from torchlean.backend.errors import PlanningError
from torchlean.backend.registry import all_modules
from torchlean.cli import _options_first, main

OBLIGATIONS = ["shape", "layout", "value", "vjp"]
POLICIES = ["checked", "external"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        status = main(list(argv))
    except SystemExit as exit_:
        status = int(exit_.code or 0)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def both(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[str, Any, str]:
    """The report (stdout) and the parsed JSON document of ``argv``; their exit statuses and
    stderr must be equal (returned once)."""
    status, text, err = run(capsys, *argv)
    json_status, out, json_err = run(capsys, *argv, "--format", "json")
    assert (json_status, json_err) == (status, err), argv
    default_status, default_text, _ = run(capsys, *argv, "--format", "report")
    assert (default_status, default_text) == (status, text), argv  # report is the default
    return text, json.loads(out), err


# ---------------------------------------------------------------------------------------- check


def parse_check_report(text: str) -> dict[str, list[tuple[str, str, str]]]:
    """``checked: accepted`` -> ``[]``; ``checked: rejected CAPSULE OBLIGATION`` followed by
    ``  EVIDENCE`` -> ``(capsule, obligation, evidence label)`` entries, per policy."""
    verdicts: dict[str, list[tuple[str, str, str]]] = {}
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        accepted = re.fullmatch(r"(\w+): accepted", lines[index])
        if accepted is not None:
            assert accepted[1] not in verdicts
            verdicts[accepted[1]] = []
            index += 1
            continue
        rejected = re.fullmatch(r"(\w+): rejected (\S+) (\w+)", lines[index])
        assert rejected is not None, lines[index]
        evidence = lines[index + 1]
        assert evidence.startswith("  ")
        verdicts.setdefault(rejected[1], []).append((rejected[2], rejected[3], evidence[2:]))
        index += 2
    return verdicts


def rejected_in_json(document: Any, policy: str) -> list[tuple[str, str, str]]:
    return [
        (row["capsule"], obligation, contract["evidence"]["label"])
        for row in document["ops"]
        if row["capsule"] is not None
        for obligation, contract in row["contracts"].items()
        if contract["verdicts"][policy] == "rejected"
    ]


CHECK_CASES = [
    ("libtorch_forward_cuda", None, ["scaled_dot_product_attention"]),
    ("libtorch_forward_cuda", None, ["add", "scaled_dot_product_attention", "matmul"]),
    (
        "libtorch_forward_cpu",
        None,
        ["scaled_dot_product_attention", "matmul", "scaled_dot_product_attention"],
    ),
    ("libtorch_forward_strict_cpu", None, ["scaled_dot_product_attention", "relu"]),
    ("checked_cpu", None, ["matmul", "relu", "softmax"]),
    ("fast_cpu", None, ["matmul", "gather", "concat", "relu"]),
    ("checked_cuda", None, ["matmul", "selective_scan"]),
    ("checked_cuda", "cpu", ["relu", "linear"]),
]


@pytest.mark.parametrize(("profile", "device", "ops"), CHECK_CASES)
def test_check_json_carries_the_report_and_the_plan(
    capsys: pytest.CaptureFixture[str], profile: str, device: str | None, ops: list[str]
) -> None:
    option = [] if device is None else ["--device", device]
    text, document, _ = both(capsys, "check", "--profile", profile, *option, *ops)
    # the report's facts, read from its lines
    report = parse_check_report(text)
    assert list(report) == POLICIES
    assert document["planned"] is True and "errors" not in document
    assert document["verdicts"] == {p: "rejected" if report[p] else "accepted" for p in POLICIES}
    for policy in POLICIES:
        assert rejected_in_json(document, policy) == report[policy], policy
    # the plan's facts, from the Python API
    chosen = profiles.get(profile)
    assert document["profile"] == profile
    assert document["device"] == (device or chosen.policy.device.label)
    assert document["assurance"] == chosen.policy.assurance.label
    planned = chosen.plan_ops(ops) if device is None else None
    rows = document["ops"]
    assert [row["op"] for row in rows] == ops  # one row per requested op, duplicates kept
    if planned is not None:
        assert [row["capsule"] for row in rows] == list(planned.capsule_names)
        for row, kernel in zip(rows, planned.kernels, strict=True):
            capsule = kernel.capsule
            for obligation, descriptor in zip(OBLIGATIONS, capsule.contracts(), strict=True):
                contract = row["contracts"][obligation]
                assert contract["claim"]["label"] == descriptor[1].claim.label
                assert contract["evidence"]["kind"] == descriptor[1].evidence.kind.label
                assert contract["evidence"]["name"] == descriptor[1].evidence.name
    # the evidence rule (DESIGN.md): a trusted boundary is rejected under checked only
    for row in rows:
        assert list(row["contracts"]) == OBLIGATIONS
        for contract in row["contracts"].values():
            boundary = contract["evidence"]["kind"] == "trustedBoundary"
            assert contract["verdicts"] == {
                "checked": "rejected" if boundary else "accepted",
                "external": "accepted",
            }
        assert row["verdicts"] == {
            p: "rejected"
            if any(c["verdicts"][p] == "rejected" for c in row["contracts"].values())
            else "accepted"
            for p in POLICIES
        }


def test_check_json_of_the_readme_example(capsys: pytest.CaptureFixture[str]) -> None:
    """README "Command line": ``checked: rejected libtorch.sdpa_forward value`` /
    ``  trusted boundary: LibTorch/CUDA SDPA implementation`` / ``external: accepted``."""
    status, out, err = run(
        capsys,
        "check",
        "--profile",
        "libtorch_forward_cuda",
        "--format",
        "json",
        "scaled_dot_product_attention",
    )
    assert (status, err) == (0, "")
    document = json.loads(out)
    assert {key: document[key] for key in ("profile", "device", "assurance", "planned", "verdicts")} == {
        "profile": "libtorch_forward_cuda",
        "device": "cuda",
        "assurance": "external",
        "planned": True,
        "verdicts": {"checked": "rejected", "external": "accepted"},
    }
    (row,) = document["ops"]
    assert (row["op"], row["capsule"]) == ("scaled_dot_product_attention", "libtorch.sdpa_forward")
    assert row["verdicts"] == {"checked": "rejected", "external": "accepted"}
    value = row["contracts"]["value"]
    assert value["evidence"] == {
        "kind": "trustedBoundary",
        "name": "LibTorch/CUDA SDPA implementation",
        "label": "trusted boundary: LibTorch/CUDA SDPA implementation",
    }
    assert value["verdicts"] == {"checked": "rejected", "external": "accepted"}
    assert value["claim"]["label"] == "scaled_dot_product_attention forward refines its TorchLean semantics"
    for obligation in ("shape", "layout", "vjp"):
        assert row["contracts"][obligation]["verdicts"] == {"checked": "accepted", "external": "accepted"}


@pytest.mark.parametrize(
    ("profile", "device", "ops"),
    [
        ("checked_cpu", None, ["relu", "fft_fno", "matmul", "selective_scan", "relu"]),
        ("checked_cpu", "cuda", ["matmul", "relu", "matmul"]),
        ("libtorch_forward_cpu", None, ["scaled_dot_product_attention", "fft_fno"]),
    ],
)
def test_a_failed_check_in_json_names_each_missing_op_and_checks_the_others(
    capsys: pytest.CaptureFixture[str], profile: str, device: str | None, ops: list[str]
) -> None:
    option = [] if device is None else ["--device", device]
    status, text, err = run(capsys, "check", "--profile", profile, *option, *ops)
    assert (status, text) == (1, "")
    json_status, out, json_err = run(capsys, "check", "--profile", profile, *option, "--format", "json", *ops)
    assert (json_status, json_err) == (1, err)  # the same refusals and explain notes on stderr
    document = json.loads(out)
    messages = [line for line in err.splitlines() if not line.startswith("note: ")]
    assert document["planned"] is False and document["errors"] == messages
    assert "verdicts" not in document  # no whole-plan verdict for a plan that does not exist
    rows = document["ops"]
    assert [row["op"] for row in rows] == ops
    missing = {row["op"]: row["error"] for row in rows if row["capsule"] is None}
    assert sorted(set(missing.values())) == sorted(messages)
    for op, message in missing.items():
        assert message == f"no admissible kernel capsule for op {op} on device {document['device']}"
    planned = [row for row in rows if row["capsule"] is not None]
    assert all(set(row) == {"op", "capsule", "verdicts", "contracts"} for row in planned)
    if planned:  # the rows that planned are what check says of those ops alone
        alone = [row["op"] for row in planned]
        status, text, _ = run(capsys, "check", "--profile", profile, *option, *alone)
        assert status == 0
        report = parse_check_report(text)
        for policy in POLICIES:
            assert rejected_in_json({"ops": planned}, policy) == report[policy]


# --------------------------------------------------------------------------------------- select


def parse_select_report(text: str) -> dict[str, tuple[list[str], list[str]]]:
    """``NAME: [cap, cap]; message; message`` -> ``(capsules, messages)`` per profile."""
    parsed: dict[str, tuple[list[str], list[str]]] = {}
    for line in text.splitlines():
        name, _, rest = line.partition(": ")
        parts = rest.split("; ")
        capsules = parts.pop(0).strip("[]").split(", ") if parts[0].startswith("[") else []
        parsed[name] = (capsules, parts)
    return parsed


@pytest.mark.parametrize(
    ("names", "ops"),
    [
        (
            ["checked_cuda", "libtorch_forward_cuda", "libtorch_forward_strict"],
            ["scaled_dot_product_attention"],
        ),
        (["checked_cpu", "fast_cpu"], ["matmul", "fft_fno", "relu", "selective_scan"]),
        (["checked_cpu", "checked_cuda"], ["selective_scan"]),
        (
            ["libtorch_forward_cpu", "libtorch_forward_strict_cpu", "fast_cpu"],
            ["scaled_dot_product_attention", "gelu"],
        ),
        (["checked_cpu"], ["fft_fno"]),
    ],
)
def test_select_json_carries_the_report_and_the_plans(
    capsys: pytest.CaptureFixture[str], names: list[str], ops: list[str]
) -> None:
    text, document, _ = both(capsys, "select", "--profiles", *names, *ops)
    report = parse_select_report(text)
    assert [entry["profile"] for entry in document["profiles"]] == names == list(report)
    for entry in document["profiles"]:
        name = entry["profile"]
        profile = profiles.get(name)
        assert (entry["device"], entry["assurance"]) == (
            profile.policy.device.label,
            profile.policy.assurance.label,
        )
        assert [row["op"] for row in entry["ops"]] == ops
        # the report's line: the capsules of the ops that plan, then the refusals
        capsules, messages = report[name]
        assert [row["capsule"] for row in entry["ops"] if row["capsule"] is not None] == capsules
        assert [row["error"] for row in entry["ops"] if row["capsule"] is None] == messages
        assert entry["planned"] is (not messages)
        # the Python API, op by op
        for row in entry["ops"]:
            try:
                (expected,) = profile.plan_ops([row["op"]]).capsule_names
            except PlanningError as error:
                assert row == {"op": row["op"], "capsule": None, "error": error.messages[0]}
            else:
                assert row == {"op": row["op"], "capsule": expected}


def test_select_json_status_and_notes_match_the_report(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "select", "--profiles", "checked_cpu", "checked_cuda", "selective_scan")
    assert status == 1
    json_status, out, json_err = run(
        capsys, "select", "--profiles", "checked_cpu", "checked_cuda", "--format", "json", "selective_scan"
    )
    assert (json_status, json_err) == (1, err)
    assert err == "note: torchlean explain --profile checked_cpu selective_scan says why\n"
    assert [entry["planned"] for entry in json.loads(out)["profiles"]] == [False, True]


EXPECTED_SELECTION = {
    "profiles": [
        {
            "profile": "checked_cpu",
            "device": "cpu",
            "provider": "auto",
            "assurance": "checked",
            "vjp": "torchlean-tape",
            "planned": True,
            "ops": [
                {"op": "relu", "capsule": "reference.relu"},
                {"op": "matmul", "capsule": "reference.matmul"},
            ],
        },
        {
            "profile": "fast_cpu",
            "device": "cpu",
            "provider": "prefer aten",
            "assurance": "checked",
            "vjp": "torchlean-tape",
            "planned": True,
            "ops": [{"op": "relu", "capsule": "aten.relu"}, {"op": "matmul", "capsule": "aten.matmul"}],
        },
    ]
}


@pytest.mark.parametrize(
    "argv",
    [
        ["--profiles", "checked_cpu", "fast_cpu", "--format", "json", "relu", "matmul"],
        ["--format", "json", "--profiles", "checked_cpu", "fast_cpu", "relu", "matmul"],
        ["--profiles", "checked_cpu", "fast_cpu", "relu", "matmul", "--format", "json"],
        ["--profiles", "checked_cpu", "--format", "json", "fast_cpu", "relu", "matmul"],  # a profile after it
        [
            "relu",
            "--profiles",
            "checked_cpu",
            "fast_cpu",
            "--format",
            "json",
            "matmul",
        ],  # an op before and after
        ["relu", "--profiles", "checked_cpu", "--format=json", "fast_cpu", "matmul"],
        [
            "--profiles",
            "checked_cpu",
            "relu",
            "--form",
            "json",
            "fast_cpu",
            "matmul",
        ],  # a prefix, as argparse takes
        ["--profiles", "checked_cpu", "--format", "report", "fast_cpu", "--format", "json", "relu", "matmul"],
    ],
)
def test_select_reads_format_wherever_it_stands(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    """``select --profiles fast_cpu --format json relu`` read ``json`` as a profile and refused
    ``--format``; the words around ``--format`` stay profiles and ops, in their order."""
    status, out, err = run(capsys, "select", *argv)
    assert (status, err) == (0, "")
    assert json.loads(out) == EXPECTED_SELECTION


def test_select_format_between_its_words_keeps_the_report(capsys: pytest.CaptureFixture[str]) -> None:
    expected = run(capsys, "select", "--profiles", "checked_cpu", "fast_cpu", "relu", "matmul")
    assert expected[0] == 0
    given = run(
        capsys, "select", "relu", "--profiles", "checked_cpu", "--format", "report", "fast_cpu", "matmul"
    )
    assert given == expected


@pytest.mark.parametrize("command", ["check", "plan"])
def test_check_and_plan_read_format_between_their_ops(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    front = run(capsys, command, "--profile", "fast_cpu", "--format", "json", "relu", "matmul")
    between = run(capsys, command, "--profile", "fast_cpu", "relu", "--format", "json", "matmul")
    assert front[0] == 0 and between == front


# ------------------------------------------------------------------------------------- capsules


def parse_capsule_table(text: str) -> tuple[str, int, list[list[str]]]:
    """The title (before ``: N capsules``), N and the table's rows split into cells (no cell holds
    a blank; the header's ``value evidence`` is skipped)."""
    lines = text.splitlines()
    title = re.fullmatch(r"(.*): (\d+) capsules", lines[0])
    assert title is not None
    assert lines[1].split() == [
        "capsule", "module", "op", "provider", "device", "trust", "vjp", "reduction", "value", "evidence",
    ]  # fmt: skip
    return title[1], int(title[2]), [line.split() for line in lines[2:]]


COLUMNS = ["capsule", "module", "op", "provider", "device", "trust", "vjp", "reduction"]


@pytest.mark.parametrize(
    "options",
    [
        [],
        ["--device", "cpu"],
        ["--device", "cuda:0"],
        ["--device", "tpu"],
        ["--profile", "fast_cpu"],
        ["--profile", "libtorch_forward_cuda"],
        ["--profile", "libtorch_forward_strict_cpu"],
        ["--profile", "checked_cuda", "--device", "cpu"],
        ["--profile", "checked_cpu", "--device", "cuda"],  # selects nothing: the note on stderr
    ],
)
def test_capsules_json_carries_the_table(capsys: pytest.CaptureFixture[str], options: list[str]) -> None:
    text, document, err = both(capsys, "capsules", *options)
    title, count, table = parse_capsule_table(text)
    rows = document["capsules"]
    assert len(rows) == count == len(table)
    assert [[row[column] for column in COLUMNS] + [row["value_evidence"]["kind"]] for row in rows] == table
    assert (err != "") is (count == 0 and "--profile" in options)
    # the head: the filters the title names
    head = {key: value for key, value in document.items() if key != "capsules"}
    if "--profile" in options:
        summary = re.fullmatch(
            r"admissible under profile=(\S+) device=(\S+) assurance=(\S+) vjp=(\S+) provider=(.+)", title
        )
        assert summary is not None
        assert head == dict(
            zip(["profile", "device", "assurance", "vjp", "provider"], summary.groups(), strict=True)
        )
    elif "--device" in options:
        device = re.fullmatch(r"catalog for device (\S+)", title)
        assert device is not None
        assert head == {
            "profile": None,
            "device": device[1],
            "provider": None,
            "assurance": None,
            "vjp": None,
        }
    else:
        assert title == "catalog"
        assert head == dict.fromkeys(["profile", "device", "provider", "assurance", "vjp"])
    # the value evidence is the capsule's own (Python API)
    catalog = {(m.name, c.name, c.device.label): c for m in all_modules() for c in m.capsules}
    for row in rows:
        evidence = catalog[row["module"], row["capsule"], row["device"]].value_contract.evidence
        assert row["value_evidence"] == {
            "kind": evidence.kind.label,
            "name": evidence.name,
            "label": evidence.label,
        }


def test_capsules_json_of_the_whole_catalog_lists_every_capsule(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "capsules", "--format", "json")
    assert status == 0
    rows = json.loads(out)["capsules"]
    assert [(row["module"], row["capsule"], row["device"]) for row in rows] == [
        (m.name, c.name, c.device.label) for m in all_modules() for c in m.capsules
    ]
    assert len(rows) == 135  # 93 maintained + 2 libtorch + 40 aten, as the table's title


# ------------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("argv", "accepted"),
    [
        (["check", "--profile", "checked_cpu", "--format", "xml", "relu"], ["report", "json"]),
        (["check", "--profile", "checked_cpu", "--format", "rows", "relu"], ["report", "json"]),
        (["select", "--profiles", "checked_cpu", "relu", "--format", "JSON"], ["report", "json"]),
        (["select", "--format", "", "--profiles", "checked_cpu", "relu"], ["report", "json"]),
        (["capsules", "--format=yaml"], ["report", "json"]),
        (["capsules", "--profile", "fast_cpu", "--format", "rows"], ["report", "json"]),
        (["plan", "--profile", "checked_cpu", "relu", "--format", "csv"], ["report", "rows", "json"]),
    ],
)
def test_a_bad_format_is_one_line_exit_2_naming_the_accepted_ones(
    capsys: pytest.CaptureFixture[str], argv: list[str], accepted: list[str]
) -> None:
    status, out, err = run(capsys, *argv)
    assert (status, out) == (2, "")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("error: argument --format: invalid choice: ")
    choices = err.split("(choose from ", 1)[1].rstrip(")\n")
    assert re.findall(r"\w+", choices) == accepted


def test_a_bad_format_through_the_console_script_has_no_traceback() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "torchlean", "select", "--profiles", "fast_cpu", "--format", "xml", "relu"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("error: argument --format: invalid choice: 'xml'")
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (
            ["select", "--profiles", "fast_cpu", "relu", "--format"],
            "argument --format: expected one argument",
        ),
        (["check", "--profile", "fast_cpu", "--format", "relu"], "argument --format: invalid choice: 'relu'"),
        (["select", "--profiles", "fast_cpu", "--format", "json", "nope"], "unknown profile nope"),
    ],
)
def test_format_mistakes_are_usage_errors(
    capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str
) -> None:
    status, out, err = run(capsys, *argv)
    assert (status, out) == (2, "")
    assert err.startswith("error: ") and fragment in err and err.count("\n") == 1


# ------------------------------------------------------------------------------- the reordering


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["--profiles", "a", "--format", "json", "b"], ["--format", "json", "--profiles", "a", "b"]),
        (["a", "--format=json", "b"], ["--format=json", "a", "b"]),
        (["a", "--form", "json", "b"], ["--form", "json", "a", "b"]),  # a prefix naming --format alone
        (["a", "--fo", "json", "b"], ["a", "--fo", "json", "b"]),  # --fo also names --foo: left to argparse
        (["a", "--format"], ["a", "--format"]),  # no value: argparse refuses it where it stands
        (["a", "--format", "-x", "b"], ["a", "--format", "-x", "b"]),
        (["a", "--", "--format", "json"], ["a", "--", "--format", "json"]),  # after --: not an option
        (["-format", "json", "a"], ["-format", "json", "a"]),
        (
            ["a", "--format", "report", "b", "--format", "json"],
            ["--format", "report", "--format", "json", "a", "b"],
        ),
    ],
)
def test_options_first_moves_the_option_with_its_value_and_keeps_the_order(
    words: list[str], expected: list[str]
) -> None:
    assert _options_first(words, ("--format",), ("-h", "--help", "--format", "--foo")) == expected
