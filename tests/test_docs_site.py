"""The documentation site builds with ``mkdocs build --strict``: every page in the navigation
exists, every link between pages and every anchor resolves, and nothing is fetched (no web fonts
or scripts from elsewhere), so it builds and reads offline."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


def _mkdocs() -> str:
    found = shutil.which("mkdocs", path=str(Path(sys.executable).parent)) or shutil.which("mkdocs")
    if found is None:
        pytest.fail("mkdocs is missing: install the test extra (it includes the docs extra)")
    return found


def test_the_site_builds_strictly_and_offline(tmp_path: Path) -> None:
    site = tmp_path / "site"
    built = subprocess.run(
        [_mkdocs(), "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=False,
    )
    assert built.returncode == 0, built.stdout[-4000:] + built.stderr[-4000:]
    pages = list(site.rglob("*.html"))
    assert len(pages) > 25
    for page in pages:
        html = page.read_text()
        outside = re.findall(r'<(?:script|link)[^>]+(?:src|href)="(https?://[^"]+)"', html)
        assert not outside, f"{page.relative_to(site)} loads {outside}"


def test_every_page_is_in_the_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    docs = ROOT / "docs"
    pages = {p.relative_to(docs).as_posix() for p in docs.rglob("*.md")}
    assert {page for page in pages if page not in nav} == set()


def test_the_readme_is_a_landing_page_that_links_into_the_site() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    linked = set(re.findall(r"\]\(docs/([\w/-]+\.md)", readme))
    for page in ("getting-started.md", "concepts/architecture.md", "reference/settings.md"):
        assert page in linked, page
    for page in linked:
        assert (ROOT / "docs" / page).is_file(), page


def test_the_development_page_says_how_to_build_the_site_as_the_tests_do() -> None:
    page = (ROOT / "docs" / "development.md").read_text()
    assert "mkdocs build --strict" in page
    assert "mkdocs serve" in page


def test_every_page_that_runs_grpcurl_says_where_it_comes_from() -> None:
    """grpcurl is in no Debian package: a page that shows a grpcurl command says where to get it
    (its releases, or go install) beside it."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    using = [page for page in pages if "grpcurl -" in page.read_text()]
    assert using  # the docs do show it
    for page in using:
        assert "go install github.com/fullstorydev/grpcurl/cmd/grpcurl@latest" in " ".join(
            page.read_text().split()
        ), page.relative_to(ROOT)
