"""Every docstring in the package renders as written (review180 F11): an escape such as ``\\n``
or ``\\x1f`` in a docstring that is not raw becomes a real line break or control character, and
a line break at column 0 made ``inspect.getdoc`` indent the whole rest of ``read_csv``'s help."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "torchlean"


def test_no_docstring_line_starts_left_of_its_body() -> None:
    misplaced = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                continue
            doc = ast.get_docstring(node, clean=False)
            body = [line for line in (doc or "").splitlines()[1:] if line.strip()]
            if any(len(line) - len(line.lstrip()) < node.col_offset + 4 for line in body):
                misplaced.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name}")
    assert misplaced == []


def test_no_docstring_holds_a_control_character() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                doc = ast.get_docstring(node, clean=False) or ""
                if any(ord(c) < 32 and c not in "\n" for c in doc):
                    found.append(f"{path.relative_to(PACKAGE.parent)} {getattr(node, 'name', '(module)')}")
    assert found == []
