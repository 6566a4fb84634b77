"""The processes of the proxy tests: Echo servers (Python or Go) and ``portico proxy`` itself.

Each runs as a real process on loopback; a reader thread collects its output lines so that a
test can wait, with a deadline, for the line that says it is ready (or that it saw a
cancellation).
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import google.api
import grpc_tools
import httpx
import pytest
from grpc_tools import protoc

from tests import go_build
from tests.conftest import ROOT

HERE = Path(__file__).parent
PROTO_ROOT = HERE / "protos"
PROTO_FILE = "portico/echo/v1/echo.proto"
GO_SOURCE = HERE / "go" / "main.go"
SERVICE = "portico.echo.v1.Echo"
# The method a "newer" upstream has, where echo.proto says EXTRA.
EXTRA_METHOD = (
    "rpc Shout(SayRequest) returns (SayReply) "
    '{option (google.api.http) = {get: "/v1/shout/{text}"};}'
)
START_SECONDS = 30.0
PROXY_LINE = re.compile(r"proxy: REST/JSON on (?P<base>http://127\.0\.0\.1:\d+) in front of")
# Cheap and quiet proxies: a known admin password, cheap hashes.
PROXY_ENV = {"PORTICO_ADMIN_PASSWORD": "admin-password", "PORTICO_PASSWORD_HASH_COST": "16"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def include_dirs() -> list[str]:
    return [
        str(Path(grpc_tools.__file__).parent / "_proto"),
        str(Path(next(iter(google.api.__path__))).parent.parent),
    ]


def write_proto(root: Path, *, extra: bool, version: str = "v1") -> Path:
    """echo.proto under ``root`` (the extra method in it or not; another ``version`` renames
    its package and routes, for a second, different upstream); ``root`` is its include dir."""
    text = (PROTO_ROOT / PROTO_FILE).read_text().replace("// EXTRA", EXTRA_METHOD if extra else "")
    if version != "v1":
        text = text.replace("package portico.echo.v1;", f"package portico.echo.{version};")
        text = text.replace('"/v1/', f'"/{version}/')
    target = root / PROTO_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    return root


def run_protoc(proto_root: Path, *outputs: str) -> None:
    args = ["protoc", f"-I{proto_root}", *(f"-I{i}" for i in include_dirs()), *outputs, PROTO_FILE]
    if protoc.main(args) != 0:
        raise RuntimeError(f"protoc failed: {args}")


def python_gen(out: Path, *, extra: bool = False, version: str = "v1") -> Path:
    """Generated Python modules of echo.proto in ``out`` (made at test time: nothing to drift)."""
    proto_root = write_proto(out / "protos", extra=extra, version=version)
    gen = out / "gen"
    gen.mkdir(parents=True)
    run_protoc(proto_root, f"--python_out={gen}", f"--grpc_python_out={gen}")
    return gen


def descriptor_set(out: Path, *, comments: bool = False) -> Path:
    """echo.proto compiled into a FileDescriptorSet with its imports (and, with ``comments``,
    its source info: the comments of the .proto)."""
    proto_root = write_proto(out / "set-protos", extra=False)
    target = out / "echo.binpb"
    source_info = ["--include_source_info"] if comments else []
    run_protoc(proto_root, f"--descriptor_set_out={target}", "--include_imports", *source_info)
    return target


def go_echo_binary() -> Path:
    """The Go Echo server, built once per source (main.go, echo.proto, the Go toolchain)."""
    go, plugins = go_build.require_go_grpc(
        "protoc-gen-go", "protoc-gen-go-grpc", install="protoc-gen-go protoc-gen-go-grpc"
    )
    inputs = (GO_SOURCE.read_bytes(), (PROTO_ROOT / PROTO_FILE).read_bytes())
    return go_build.cached_binary(
        go, "go-echo", inputs, lambda cache, binary: _build_go_echo(go, plugins, cache, binary)
    )


def _build_go_echo(go: str, plugins: list[str], cache: Path, binary: Path) -> None:
    gopath = cache / "gopath"
    package = gopath / "src" / "portico.test" / "echo"
    shutil.rmtree(package, ignore_errors=True)
    package.mkdir(parents=True)
    shutil.copy(GO_SOURCE, package / "main.go")
    proto_root = write_proto(cache / "protos", extra=False)
    run_protoc(
        proto_root,
        f"--plugin=protoc-gen-go={plugins[0]}",
        f"--plugin=protoc-gen-go-grpc={plugins[1]}",
        f"--go_out={gopath / 'src'}",
        f"--go-grpc_out={gopath / 'src'}",
    )
    failed = go_build.go_build(go, package, [gopath, go_build.GOCODE.parent], cache, binary)
    if failed:
        pytest.fail(f"go build of the Echo server failed:\n{failed}")


class Process:
    """A child process whose stdout and stderr lines are collected as they come."""

    def __init__(self, command: Sequence[str], env: dict[str, str] | None = None) -> None:
        self.command = list(command)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.said: list[str] = []
        self.process = subprocess.Popen(
            self.command,
            cwd=ROOT,
            env={**os.environ, **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def wait_for(
        self, pattern: str | re.Pattern[str], timeout: float = START_SECONDS
    ) -> re.Match[str]:
        """The first line (from now on) that matches ``pattern``; fails naming what was said."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                line = None
            if line is None:
                pytest.fail(
                    f"{self.command[:3]}: no line like {pattern!r} in:\n{''.join(self.said)}"
                )
            self.said.append(line)
            found = re.search(pattern, line)
            if found:
                return found

    def forget_lines(self) -> None:
        """Pass over what was said so far: ``wait_for`` then hears only what comes next."""
        while True:
            try:
                line = self.lines.get_nowait()
            except queue.Empty:
                return
            if line is None:  # the process has ended: keep saying so
                self.lines.put(None)
                return
            self.said.append(line)

    def signal(self, sig: signal.Signals) -> None:
        self.process.send_signal(sig)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._reader.join(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()


def start_python_echo(
    gen: Path, port: int, reflection: str = "v1alpha", tls: Sequence[str] = ()
) -> Process:
    command = [sys.executable, str(HERE / "echo_server.py"), "--gen", str(gen), "--port", str(port)]
    command += ["--reflection", reflection, *(["--tls", *tls] if tls else [])]
    process = Process(command)
    process.wait_for("listening")
    return process


def start_go_echo(binary: Path, port: int) -> Process:
    process = Process([str(binary), "-port", str(port)])
    process.wait_for("listening")
    return process


def start_proxy(
    *flags: str,
    data_dir: Path | None = None,
    ready: bool = True,
    env: dict[str, str] | None = None,
) -> tuple[Process, str]:
    """``portico proxy`` on a free port, once ``/readyz`` says so (unless not ``ready``); the
    process and its base URL. ``env``: settings beside the test's own."""
    command = [sys.executable, "-m", "app", "proxy", "--http-port", "0", *flags]
    if data_dir is not None:
        command += ["--data-dir", str(data_dir)]
    process = Process(command, env={**PROXY_ENV, **(env or {})})
    try:
        base = process.wait_for(PROXY_LINE)["base"]
        deadline = time.monotonic() + START_SECONDS
        while ready and httpx.get(f"{base}/readyz", timeout=10).status_code != 200:
            if time.monotonic() > deadline:
                pytest.fail(f"the proxy was not ready within {START_SECONDS} s:\n{process.said}")
            time.sleep(0.05)  # between probes of /readyz, which itself waits up to 1 s
    except BaseException:
        # Not left running behind a failed test (one whose start-up line never came included:
        # under pyvoy its Envoy workers ran on for the rest of the suite).
        process.stop()
        raise
    return process, base
