"""Go programs of the tests, built offline from Debian's Go packages and kept in a cache.

Debian ships grpc-go and its dependencies as sources under /usr/share/gocode; ``go build`` in
GOPATH mode compiles against them with no module proxy. A cold build of grpc-go takes tens of
seconds, so each binary is built once per input (its sources, the Go toolchain) and reused.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

from tests.conftest import require

GOCODE = Path("/usr/share/gocode/src")
INSTALL = (
    "apt-get install golang-go golang-google-grpc-dev golang-google-protobuf-dev "
    "golang-google-genproto-dev"
)


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "portico-tests"


def require_go_grpc(*tools: str, install: str = "") -> tuple[str, list[str]]:
    """The ``go`` command and the paths of ``tools`` (protoc plugins, say); skips the test
    (fails it under CI=true) where Go, Debian's grpc-go sources or a tool are missing."""
    go = shutil.which("go")
    found = [shutil.which(tool) for tool in tools]
    if go is None or not (GOCODE / "google.golang.org/grpc").is_dir() or None in found:
        require("Go's gRPC", " ".join(part for part in (INSTALL, install) if part))
    assert go is not None
    return go, [str(path) for path in found]


def cached_binary(
    go: str, name: str, inputs: Sequence[bytes], build: Callable[[Path, Path], None]
) -> Path:
    """The binary ``name`` built from ``inputs`` (what it is made of) by the Go toolchain
    ``go``: from the cache, else made by ``build(cache, binary)`` in the cache folder ``name``."""
    version = subprocess.run([go, "version"], capture_output=True, text=True, check=True).stdout
    key = hashlib.sha256()
    for part in (*inputs, version.encode()):
        key.update(hashlib.sha256(part).digest())
    cache = cache_dir() / name
    binary = cache / key.hexdigest()[:16] / name
    if binary.is_file():
        return binary
    cache.mkdir(parents=True, exist_ok=True)
    # Test processes side by side (pytest -n) take turns: one builds, the others find it built.
    with open(cache / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not binary.is_file():
            build(cache, binary)
    return binary


def go_build(go: str, package: Path, gopaths: Sequence[Path], cache: Path, binary: Path) -> str:
    """``go build`` of ``package`` into ``binary``, offline in GOPATH mode from ``gopaths``;
    go's complaint if it failed, else nothing."""
    env = {
        **os.environ,
        "GOPATH": ":".join(str(path) for path in gopaths),
        "GO111MODULE": "off",  # Debian's packages, offline: GOPATH mode
        "GOPROXY": "off",
        "GOFLAGS": "",
        "GOCACHE": str(cache / "build-cache"),
    }
    staging = binary.with_suffix(".partial")
    staging.parent.mkdir(parents=True, exist_ok=True)
    built = subprocess.run(
        [go, "build", "-o", str(staging), "."], cwd=package, env=env, capture_output=True, text=True
    )
    if built.returncode != 0:
        return built.stderr or f"go build exited with {built.returncode}"
    staging.rename(binary)  # whole or not at all, should two sessions build at once
    return ""
