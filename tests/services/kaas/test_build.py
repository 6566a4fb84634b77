"""GetVersionInformation's build facts: from the image build's variables, git, or the files."""

from __future__ import annotations

import re

import app
from app.services.kaas.build import detect_build, platform_name


def test_an_image_build_passes_its_facts_in_variables(tmp_path):
    (tmp_path / "__init__.py").write_text("")
    info = detect_build(
        {
            "PORTICO_GIT_COMMIT": "a" * 40,
            "PORTICO_GIT_TREE_STATE": "clean",
            "PORTICO_BUILD_DATE": "2025-01-02T03:04:05Z",
        },
        source=tmp_path,
    )
    assert (info.git_commit, info.git_tree_state, info.build_date) == (
        "a" * 40,
        "clean",
        "2025-01-02T03:04:05Z",
    )
    assert info.git_version == app.__version__
    assert info.compiler == "CPython"
    assert info.go_version.startswith("python3.")


def test_without_git_or_variables_the_commit_is_empty_and_the_date_is_the_files(tmp_path):
    package = tmp_path / "app"
    package.mkdir()
    (package / "__init__.py").write_text("")
    info = detect_build({}, source=package)
    assert info.git_commit == "" and info.git_tree_state == ""
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", info.build_date)


def test_platform_reads_like_gos():
    assert re.fullmatch(r"[a-z0-9]+/(amd64|arm64|386|[a-z0-9_]+)", platform_name())
