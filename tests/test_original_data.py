"""The copies of the original systems' documents in tests/data equal the project's shared source.

The source lives beside the checkout in the project's shared folder; where it is present (a
developer's machine, CI), any drift between it and the committed copy fails here.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import ORIGINAL_DIR, ROOT


def _shared_dir() -> Path:
    path = Path(os.environ.get("PORTICO_SHARED_DIR", ROOT.parent / "shared"))
    if not (path / "wire.json").is_file():
        pytest.skip(
            "optional: the project's shared folder (the original systems' wire facts and API "
            f"documents, wire.json and seeds/) is not at {path}, so the copy the tests use, "
            "tests/data/original, is not compared with it; set PORTICO_SHARED_DIR to compare"
        )
    return path


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_the_committed_copy_equals_the_shared_source() -> None:
    shared = _shared_dir()
    source = {"wire.json": (shared / "wire.json").read_bytes()}
    source.update({f"seeds/{name}": data for name, data in _files(shared / "seeds").items()})
    copy = _files(ORIGINAL_DIR)
    assert sorted(copy) == sorted(source), "copy tests/data/original from the shared folder again"
    stale = [name for name in source if copy[name] != source[name]]
    assert not stale, f"tests/data/original is out of date: {stale}"


def test_without_the_shared_folder_the_skip_says_what_is_missing_and_that_it_is_optional(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PORTICO_SHARED_DIR", str(tmp_path))
    with pytest.raises(pytest.skip.Exception) as skipped:
        _shared_dir()
    reason = str(skipped.value)
    assert reason.startswith("optional: ")
    assert "wire facts and API documents" in reason and str(tmp_path) in reason
    assert "PORTICO_SHARED_DIR" in reason
