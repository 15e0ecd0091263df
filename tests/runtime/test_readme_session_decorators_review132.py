"""review132 F11: the README says which objects decorate (the grad modes), and that a Session does
not, and both halves are true."""

import pytest
from _docs import documentation

import torchlean as tl

README = documentation()


def test_readme_names_the_decorators() -> None:
    assert "As decorators they run" not in README
    assert "A `Session` is a context manager only (not a decorator" in README
    assert "`no_grad()`, `enable_grad()` and `set_grad_enabled(mode)` are decorators too" in README


def test_claims_hold() -> None:
    with pytest.raises(TypeError):
        tl.session("fast_cpu")(lambda: None)  # type: ignore[operator]

    @tl.no_grad()
    def off() -> bool:
        return tl.is_grad_enabled()

    @tl.set_grad_enabled(False)
    def off2() -> bool:
        return tl.is_grad_enabled()

    assert off() is False and off2() is False
