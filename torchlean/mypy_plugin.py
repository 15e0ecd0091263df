"""Placeholder: replaced by the sealed-acceptance mypy plugin (issue 6)."""

from __future__ import annotations

from mypy.plugin import Plugin


class TorchLeanPlugin(Plugin):
    pass


def plugin(version: str) -> type[Plugin]:
    return TorchLeanPlugin
