"""The user documentation as the tests read it: README.md and the pages of docs/.

``documentation()`` is all of it, one page after another; ``section(title)`` one top-level
section: a page of docs/ whose first line is ``# title``, else README.md's ``## title`` up to the
next ``## `` heading; ``python_blocks(title)`` that section's ``python`` code blocks, in order.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = (README, *sorted((ROOT / "docs").glob("*.md")))


def documentation() -> str:
    """Every page's text, README.md first, separated by a blank line."""
    return "\n\n".join(page.read_text(encoding="utf-8") for page in PAGES)


def section(title: str) -> str:
    """The top-level section ``title`` (a page of docs/, or one of README.md's ``## `` sections);
    ValueError when there is none."""
    for page in PAGES[1:]:
        text = page.read_text(encoding="utf-8")
        if text.startswith(f"# {title}\n"):
            return text
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def python_blocks(title: str) -> list[str]:
    """The ``python`` code blocks of :func:`section` ``title``, in order."""
    return re.findall(r"```python\n(.*?)```", section(title), re.S)
