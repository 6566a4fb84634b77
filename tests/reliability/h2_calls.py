"""gRPC calls as raw HTTP/2 frames (the h2 package), for what no grpc client sends: a request
whose message never comes, malformed headers, more streams than a connection may open."""

from __future__ import annotations

import base64
import select
import socket
import time
from dataclasses import dataclass, field
from urllib.parse import unquote

import h2.config
import h2.connection
import h2.events
import h2.exceptions
from google.rpc import status_pb2
from h2.settings import SettingCodes

EMPTY_MESSAGE = b"\x00\x00\x00\x00\x00"  # one envelope: uncompressed, zero bytes long


@dataclass
class Answer:
    """What a stream got back: its headers and trailers together, its data, how it ended."""

    headers: dict[bytes, bytes] = field(default_factory=dict)
    data: bytes = b""
    reset: int | None = None  # the RST_STREAM error code, if the server reset the stream
    ended: bool = False

    @property
    def code(self) -> int | None:
        status = self.headers.get(b"grpc-status")
        return None if status is None else int(status)

    @property
    def message(self) -> str:
        return unquote(self.headers.get(b"grpc-message", b"").decode())

    @property
    def status(self) -> status_pb2.Status | None:
        """The ``google.rpc.Status`` of grpc-status-details-bin, if sent."""
        raw = self.headers.get(b"grpc-status-details-bin")
        if raw is None:
            return None
        return status_pb2.Status.FromString(base64.b64decode(raw + b"=" * (-len(raw) % 4)))

    @property
    def request_id(self) -> str | None:
        found = self.headers.get(b"x-request-id")
        return None if found is None else found.decode()


class Connection:
    """One HTTP/2 connection with prior knowledge, frames sent as they are written here."""

    def __init__(self, port: int) -> None:
        self.socket = socket.create_connection(("127.0.0.1", port), timeout=10)
        config = h2.config.H2Configuration(
            client_side=True,
            header_encoding=None,
            validate_outbound_headers=False,
            normalize_outbound_headers=False,
            validate_inbound_headers=False,
        )
        self.h2 = h2.connection.H2Connection(config)
        self.h2.initiate_connection()
        self.answers: dict[int, Answer] = {}
        self.goaway: int | None = None  # the GOAWAY error code, once one came
        self.closed = False  # the server closed the connection
        self._settings = False  # the server's settings came (and were acknowledged)
        self._flush()

    def settle(self, timeout: float = 10.0) -> None:
        """Wait for the server's settings (acknowledged at once): the handshake is over."""
        deadline = time.monotonic() + timeout
        while not self._settings:
            left = deadline - time.monotonic()
            if left <= 0 or self.closed:
                raise AssertionError(f"no settings from the server within {timeout} s")
            self._read(left)

    def ignore_stream_limit(self) -> None:
        """Open streams past the server's MAX_CONCURRENT_STREAMS, as an attacker would (h2
        itself refuses to)."""
        self.h2.remote_settings.update({SettingCodes.MAX_CONCURRENT_STREAMS: 2**31 - 1})
        self.h2.remote_settings.acknowledge()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.socket.close()

    def call(
        self,
        path: str,
        metadata: tuple[tuple[str, str], ...] = (),
        body: bytes | None = EMPTY_MESSAGE,
        *,
        end: bool = True,
        send: bool = True,
    ) -> int:
        """Start a call (``end``: and half-close it after ``body``); its stream id."""
        stream = self.h2.get_next_available_stream_id()
        headers = [
            (b":method", b"POST"),
            (b":scheme", b"http"),
            (b":path", path.encode()),
            (b":authority", b"127.0.0.1"),
            (b"content-type", b"application/grpc"),
            (b"te", b"trailers"),
            *((key.encode(), value.encode()) for key, value in metadata),
        ]
        self.h2.send_headers(stream, headers, end_stream=end and body is None)
        if body is not None:
            self.h2.send_data(stream, body, end_stream=end)
        self.answers[stream] = Answer()
        if send:
            self._flush()
        return stream

    def flush(self) -> None:
        """Send what the calls made without ``send`` wrote."""
        self._flush()

    def wait(
        self, streams: list[int], timeout: float, *, until_closed: bool = False
    ) -> list[Answer]:
        """The answers of ``streams`` once each has ended (or been reset), or (``until_closed``)
        the server closed the connection; AssertionError saying how many had not after
        ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while not all(self._over(stream) for stream in streams):
            if self.closed and until_closed:
                break
            left = deadline - time.monotonic()
            if left <= 0 or self.closed:
                waiting = sum(not self._over(stream) for stream in streams)
                raise AssertionError(
                    f"{waiting} of {len(streams)} streams not answered within {timeout} s"
                    + (" (the connection was closed)" if self.closed else "")
                )
            self._read(left)
        return [self.answers[stream] for stream in streams]

    def wait_goaway(self, timeout: float) -> float:
        """Seconds until the server said it ends the connection (a GOAWAY, or the close
        itself); fails after ``timeout``."""
        began = time.monotonic()
        while self.goaway is None and not self.closed:
            left = began + timeout - time.monotonic()
            if left <= 0:
                raise AssertionError(f"the connection is still open after {timeout} s")
            self._read(left)
        return time.monotonic() - began

    def _over(self, stream: int) -> bool:
        answer = self.answers[stream]
        return answer.ended or answer.reset is not None

    def _read(self, timeout: float) -> None:
        ready, _, _ = select.select([self.socket], [], [], timeout)
        if not ready:
            return
        try:
            data = self.socket.recv(1 << 16)
        except ConnectionResetError:
            data = b""
        if not data:
            self.closed = True
            return
        try:
            events = self.h2.receive_data(data)
        except h2.exceptions.ProtocolError:  # frames after the server's GOAWAY
            self.closed = True
            return
        for event in events:
            stream = getattr(event, "stream_id", 0)
            answer = self.answers.get(stream)
            if isinstance(event, h2.events.ResponseReceived | h2.events.TrailersReceived):
                assert answer is not None
                answer.headers.update(dict(event.headers))
            elif isinstance(event, h2.events.DataReceived):
                assert answer is not None
                answer.data += event.data
                self.h2.acknowledge_received_data(event.flow_controlled_length, stream)
            elif isinstance(event, h2.events.StreamEnded) and answer is not None:
                answer.ended = True
            elif isinstance(event, h2.events.StreamReset) and answer is not None:
                answer.reset = event.error_code
            elif isinstance(event, h2.events.ConnectionTerminated):
                self.goaway = event.error_code
            elif isinstance(event, h2.events.RemoteSettingsChanged):
                self._settings = True
        self._flush()

    def _flush(self) -> None:
        data = self.h2.data_to_send()
        if data:
            try:
                self.socket.sendall(data)
            except (BrokenPipeError, ConnectionResetError):
                self.closed = True
