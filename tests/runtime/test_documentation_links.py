"""Every link of the documentation (README.md and docs/*.md) to a file of the repository or to a
heading resolves: the file exists, and the heading's anchor is one its page defines (GitHub's
rule: lower case, punctuation other than ``-`` and ``_`` dropped, spaces as ``-``).

Oracle: the anchors written out by hand for two headings, and the pages' own headings."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _docs import PAGES, ROOT

LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchors(page: Path) -> set[str]:
    """The anchors of ``page``'s headings (outside code blocks)."""
    found, fenced = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#+ ", line):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


def test_the_anchor_rule() -> None:
    anchors = _anchors(ROOT / "docs" / "command-line.md")
    assert {"the-run-record---report-json", "why-was-my-op-or-run-refused"} <= anchors


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_link_resolves(page: Path) -> None:
    broken = []
    prose = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    prose = re.sub(r"``.*?``|`[^`]*`", "", prose, flags=re.S)  # code spans hold no links
    for target in LINK.findall(prose):
        if re.match(r"[a-z]+://", target):
            continue
        path, _, anchor = target.partition("#")
        linked = page if not path else (page.parent / path).resolve()
        if not linked.exists():
            broken.append(f"{target}: no file {path}")
        elif anchor and anchor not in _anchors(linked):
            broken.append(f"{target}: no heading #{anchor} in {linked.name}")
    assert broken == []
