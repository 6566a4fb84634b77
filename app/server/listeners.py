"""The listening ports: one server's workers may share them, nobody else may join.

The workers of one server each bind the same ports with ``SO_REUSEPORT`` (the kernel balances
connections between them). That option would also let a second ``portico serve`` join silently,
splitting requests between two servers with different state. So the process that starts the
workers first claims each port: a lock named after the address in Linux's abstract socket
namespace (per network namespace, gone when the process dies), then a plain bind without
``SO_REUSEPORT``, which fails while anything at all listens there. A single worker binds
without ``SO_REUSEPORT`` at all, so the kernel itself refuses a second one.
"""

from __future__ import annotations

import contextlib
import errno
import socket
import sys
from collections.abc import Iterator

from app.settings.config import ConfigurationError, Settings


class PortBusy(ConfigurationError):
    """A port this server needs is taken; the message names it."""

    def __init__(self, transport: str, host: str, port: int) -> None:
        super().__init__(
            f"{transport} port {port} on {host} is already in use (another Portico server or "
            f"program listens there); stop it or choose another port"
        )


class AddressUnusable(ConfigurationError):
    """A listen address this machine cannot bind (not one of its addresses, or no such name)."""

    def __init__(self, transport: str, host: str, exc: OSError) -> None:
        variable = "PORTICO_GRPC_HOST" if transport == "gRPC" else "PORTICO_HTTP_HOST"
        super().__init__(
            f"{variable}: cannot listen on {host!r} ({exc.strerror or exc}); allowed: an address "
            "of this machine, or a name resolving to one"
        )


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def http_socket(host: str, port: int, *, shared: bool) -> socket.socket:
    """The REST listening socket; ``shared`` lets this server's other workers bind it too."""
    sock = socket.socket(_family(host), socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if shared:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    # Accepted connections inherit this: a reply's head and body go out without waiting for
    # the client's delayed ACK (Nagle's algorithm would hold the second write ~40 ms).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise PortBusy("HTTP", host, port) from None
        raise AddressUnusable("HTTP", host, exc) from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def reserved_free_port(host: str) -> socket.socket:
    """A free port, held for this server's workers: bound with ``SO_REUSEPORT`` so that they can
    bind it too, and never listening, so it takes no connections."""
    sock = socket.socket(_family(host), socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, 0))
    return sock


@contextlib.contextmanager
def claimed_ports(settings: Settings) -> Iterator[None]:
    """Hold the server's ports for its lifetime; PortBusy if another server has one, and
    AddressUnusable for a host this machine cannot listen on (checked before anything starts)."""
    held: list[socket.socket] = []
    try:
        ports = [("HTTP", settings.http_host, settings.http_port)]
        if settings.grpc_listener:
            ports.append(("gRPC", settings.grpc_host, settings.grpc_port))
        for transport, host, port in ports:
            held.extend(_claim(transport, host, port))
        yield
    finally:
        for sock in held:
            sock.close()


def _claim(transport: str, host: str, port: int) -> list[socket.socket]:
    held = []
    # Port 0: the free port picked for the workers is held until they end; only the address
    # is checked here.
    if port != 0 and sys.platform == "linux":
        lock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            lock.bind(f"\0portico-listen-{host}:{port}")
        except OSError:
            lock.close()
            raise PortBusy(transport, host, port) from None
        held.append(lock)
    try:
        with socket.socket(_family(host), socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as exc:
        for sock in held:
            sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise PortBusy(transport, host, port) from None
        raise AddressUnusable(transport, host, exc) from None
    return held
