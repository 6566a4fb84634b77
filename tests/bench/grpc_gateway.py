"""grpc-gateway in front of the Echo upstream of tests/proxy, for (p3) of the proxy case.

Debian packages grpc-gateway v1 (1.6) only: its generator (``golang-grpc-gateway``) installs,
but its runtime sources (``golang-github-grpc-ecosystem-grpc-gateway-dev``) cannot, since they
depend on the golang/protobuf 1.3 generator, which conflicts with the APIv2 ``protoc-gen-go``
the Echo server is built with. So both .debs are fetched with ``apt-get download`` (Debian's
archive, no Go module proxy) and unpacked with ``dpkg -x`` into the tests' build cache, once.
The gateway's messages are generated with that v1 generator: the v1 runtime marshals with
golang/protobuf 1.3, which cannot handle APIv2 messages. The binary (go/gateway.go and the
generated code) is built once per source, like the Echo server.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests import go_build
from tests.proxy import processes as echo

SOURCE = Path(__file__).parent / "go" / "gateway.go"
DEBS = ("golang-github-grpc-ecosystem-grpc-gateway-dev", "protoc-gen-go-1-3")
GOCODE = Path("/usr/share/gocode/src")
INSTALL = "apt-get install golang-go golang-google-grpc-dev golang-grpc-gateway"


class Unavailable(Exception):
    """grpc-gateway cannot be built here; the message says why."""


def binary() -> Path:
    """The grpc-gateway of the Echo API, built if need be (tens of seconds the first time)."""
    go, generator = shutil.which("go"), shutil.which("protoc-gen-grpc-gateway")
    if go is None or generator is None or not (GOCODE / "google.golang.org/grpc").is_dir():
        raise Unavailable(f"no Go, grpc-go or protoc-gen-grpc-gateway here ({INSTALL})")
    inputs = (
        SOURCE.read_bytes(),
        (echo.PROTO_ROOT / echo.PROTO_FILE).read_bytes(),
        Path(generator).read_bytes(),
    )
    return go_build.cached_binary(
        go, "grpc-gateway", inputs, lambda cache, target: _build(go, generator, cache, target)
    )


def _unpacked_debs(cache: Path) -> Path:
    """The root into which the .debs are unpacked (fetched and unpacked the first time)."""
    root = cache / "debs" / "root"
    if (root / "usr/bin/protoc-gen-go").is_file():
        return root
    if shutil.which("apt-get") is None or shutil.which("dpkg") is None:
        raise Unavailable(f"no apt-get and dpkg here to fetch {' '.join(DEBS)} from Debian")
    debs = cache / "debs"
    shutil.rmtree(debs, ignore_errors=True)
    debs.mkdir(parents=True)
    fetched = subprocess.run(["apt-get", "download", *DEBS], cwd=debs, capture_output=True)
    files = sorted(debs.glob("*.deb"))
    if fetched.returncode != 0 or len(files) != len(DEBS):
        why = fetched.stderr.decode(errors="replace").strip()
        raise Unavailable(f"apt-get download {' '.join(DEBS)} failed: {why}")
    partial = debs / "partial"
    for deb in files:
        unpacked = subprocess.run(["dpkg", "-x", str(deb), str(partial)], capture_output=True)
        if unpacked.returncode != 0:
            raise Unavailable(f"dpkg -x {deb.name} failed: {unpacked.stderr.decode().strip()}")
    partial.rename(root)  # whole or not at all
    return root


def _build(go: str, generator: str, cache: Path, target: Path) -> None:
    debs = _unpacked_debs(cache)
    gopath = cache / "gopath"
    shutil.rmtree(gopath / "src", ignore_errors=True)
    package = gopath / "src" / "portico.test" / "gateway"
    package.mkdir(parents=True)
    shutil.copy(SOURCE, package / "main.go")
    proto_root = echo.write_proto(cache / "protos", extra=False)
    echo.run_protoc(
        proto_root,
        f"--plugin=protoc-gen-go={debs / 'usr/bin/protoc-gen-go'}",
        f"--plugin=protoc-gen-grpc-gateway={generator}",
        f"--go_out=plugins=grpc:{gopath / 'src'}",
        f"--grpc-gateway_out={gopath / 'src'}",
    )
    failed = go_build.go_build(
        go, package, [gopath, debs / "usr/share/gocode", GOCODE.parent], cache, target
    )
    if failed:
        raise Unavailable(f"go build of grpc-gateway failed: {failed}")
