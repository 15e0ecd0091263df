"""review132 F8: file_sha256 refuses a value that is not a path with the library's own error."""

from pathlib import Path

import pytest

from torchlean import provenance
from torchlean.backend.errors import TorchLeanError


@pytest.mark.parametrize("value", [5, None])
def test_non_path_refused(value: object) -> None:
    with pytest.raises(TorchLeanError, match=r"a path must be a str or os.PathLike, got .* of type"):
        provenance.file_sha256(value)  # type: ignore[arg-type]


def test_path_still_digested(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"abc")
    digest = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert provenance.file_sha256(tmp_path / "f") == provenance.file_sha256(str(tmp_path / "f")) == digest
