"""The real ``portico serve`` in a subprocess, on free ports, for tests of the whole process."""

from __future__ import annotations

import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import httpx

from tests.harness import ADMIN_PASSWORD

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 60.0


def free_port() -> int:
    """A port nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for(what: str, check: Callable[[], T | None], timeout: float) -> T:
    """Poll ``check`` until it returns something truthy; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(0.05)


@dataclass
class Server:
    """A ``portico serve`` process and where it listens."""

    process: subprocess.Popen[bytes]
    data_dir: Path
    http_port: int
    grpc_port: int
    scheme: str = "http"
    log_path: Path = field(default_factory=Path)
    # The PORTICO_* variables it was started with (so a CLI command can use the same store).
    env: dict[str, str] = field(default_factory=dict)
    # Starts it again on other free ports, where this module picked them (None: given).
    again: Callable[[], Server] | None = None

    @property
    def base_url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.http_port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_ready(self, verify: ssl.SSLContext | bool = True) -> None:
        """Wait until /readyz answers 200 (or fail with the server's output)."""

        def ready() -> bool:
            if self.process.poll() is not None:
                if self.again is not None and "is already in use" in self.log():
                    # A port found free was taken before the server bound it (tests run in
                    # parallel): the same start on ports found free again.
                    self._become(self.again())
                    return False
                raise AssertionError(f"portico exited early:\n{self.log()}")
            try:
                reply = httpx.get(f"{self.base_url}/readyz", verify=verify, timeout=1)
            except httpx.TransportError:
                return False
            return reply.status_code == 200

        wait_for("the server answers /readyz", ready, START_TIMEOUT)

    def _become(self, other: Server) -> None:
        vars(self).update(vars(other))

    def stop(self) -> int:
        """SIGTERM, then wait for the exit; SIGKILL if it hangs. Returns the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.process.returncode

    def kill(self) -> None:
        """SIGKILL the whole process group (every worker), as a crash would."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=20)


def start_server(
    data_dir: Path,
    *,
    http_port: int | None = None,
    grpc_port: int | None = None,
    env: Mapping[str, str] = {},
    args: tuple[str, ...] = (),
    scheme: str = "http",
    server: str = "uvicorn",
) -> Server:
    """Start ``portico serve`` (not waiting for it) on the HTTP ``server`` (under pyvoy, gRPC
    is served on the HTTP port, which ``grpc_port`` then names); its output goes to a file in
    ``data_dir``'s parent."""
    picked = not http_port and not grpc_port

    def again() -> Server:
        return start_server(data_dir, env=env, args=args, scheme=scheme, server=server)

    http_port = http_port or free_port()
    settings = {
        "PORTICO_DATA_DIR": str(data_dir),
        "PORTICO_HTTP_PORT": str(http_port),
        "PORTICO_SERVER": server,
        "PORTICO_ADMIN_PASSWORD": ADMIN_PASSWORD,
        "PORTICO_PASSWORD_HASH_COST": "16",
        "PORTICO_SIM_NODES": "0",
    }
    if server == "pyvoy" and not grpc_port:
        grpc_port = http_port  # one port for every protocol
    else:
        grpc_port = grpc_port or free_port()
        settings["PORTICO_GRPC_PORT"] = str(grpc_port)
    settings.update(env)
    log_path = data_dir.parent / f"{data_dir.name}-{http_port}.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "app", "serve", *args],
            cwd=ROOT,
            env={**os.environ, **settings},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: kill() reaches every worker
        )
    again_on = again if picked else None
    return Server(process, data_dir, http_port, grpc_port, scheme, log_path, settings, again_on)


def login(server: Server) -> str:
    """A token for the bootstrap admin of a server started by :func:`start_server`."""
    reply = httpx.post(
        f"{server.base_url}/v1/auth:login",
        json={"username": "admin", "password": ADMIN_PASSWORD},
        timeout=10,
    )
    assert reply.status_code == 200, reply.text
    return str(reply.json()["token"])
