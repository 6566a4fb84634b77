"""What ``GetVersionInformation`` reports: this build of Portico, not a simulated one.

The document's fields describe a Go binary; Portico fills them with their Python equivalents:

- ``git_version``: the package version (``app.__version__``).
- ``git_commit`` / ``git_tree_state`` (``clean`` or ``dirty``): from ``PORTICO_GIT_COMMIT`` /
  ``PORTICO_GIT_TREE_STATE`` when an image build sets them (the source has no ``.git`` there),
  else from ``git`` in the source checkout, else empty.
- ``build_date``: ``PORTICO_BUILD_DATE``, else when the package files were written (the install
  or image build), RFC 3339 in UTC.
- ``go_version``: the field keeps the original's name but holds the Python runtime,
  ``python3.11.7``, the way Go reports ``go1.22.1``.
- ``compiler``: the Python implementation (``CPython``); ``platform``: ``linux/amd64`` style.

These are facts of the build rather than settings, which is why they are read here and not in
``app/settings/config.py``.
"""

from __future__ import annotations

import functools
import os
import platform
import subprocess
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

import app
from gen.cnct.kaas.api import api_pb2

# Go's names for machine architectures, which the original reported.
_GOARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "i686": "386"}
_SOURCE = Path(app.__file__).resolve().parent


def _git(checkout: Path, *args: str) -> str | None:
    """Output of a git command in ``checkout``, or None when git or the repository is missing."""
    try:
        done = subprocess.run(
            ["git", "-C", str(checkout), *args],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout


def platform_name() -> str:
    """``os/arch`` in Go's spelling, e.g. ``linux/amd64``."""
    machine = platform.machine().lower()
    return f"{sys.platform}/{_GOARCH.get(machine, machine)}"


def detect_build(
    environ: Mapping[str, str] | None = None, source: Path = _SOURCE
) -> api_pb2.GetVersionReply.VersionInformation:
    """The version information of the running build."""
    environ = os.environ if environ is None else environ
    commit = environ.get("PORTICO_GIT_COMMIT", "")
    tree_state = environ.get("PORTICO_GIT_TREE_STATE", "")
    if not commit and (source.parent / ".git").exists():
        head = _git(source.parent, "rev-parse", "HEAD")
        commit = head.strip() if head else ""
        if commit and not tree_state:
            porcelain = _git(source.parent, "status", "--porcelain")
            tree_state = "" if porcelain is None else ("dirty" if porcelain.strip() else "clean")
    build_date = environ.get("PORTICO_BUILD_DATE", "")
    if not build_date:
        written = datetime.fromtimestamp((source / "__init__.py").stat().st_mtime, UTC)
        build_date = written.strftime("%Y-%m-%dT%H:%M:%SZ")
    return api_pb2.GetVersionReply.VersionInformation(
        git_version=app.__version__,
        git_commit=commit,
        git_tree_state=tree_state,
        build_date=build_date,
        go_version=f"python{platform.python_version()}",
        compiler=platform.python_implementation(),
        platform=platform_name(),
    )


@functools.cache
def running_build() -> api_pb2.GetVersionReply.VersionInformation:
    """:func:`detect_build` for this process, computed once."""
    return detect_build()
