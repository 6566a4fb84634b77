"""What one connection and one call may cost on the grpc.aio port: the HTTP port's bounds.

grpc core takes a connection's limits as channel options (:func:`server_options`); the rest is
the body timeout. grpc.aio calls a unary (or server-streaming) handler only once its request
message has arrived, and never if it does not: a call whose message never comes (or whose body
ends without one) would wait for ever. So every method is served with a request-streaming
handler, and the guard reads the one message under ``PORTICO_BODY_TIMEOUT_SECONDS`` as the HTTP
port does (:func:`app.gateway.http_io.only_message`); the wire is the same, the client cannot
tell.
"""

from __future__ import annotations

from app.settings import limits


def server_options(header_timeout: float) -> list[tuple[str, int]]:
    """grpc core's limits for every connection, those of the HTTP port."""
    millis = max(1, round(header_timeout * 1000))
    metadata_bytes = limits.MAX_REQUEST_HEAD_BYTES
    return [
        # Streams past it are refused (RST_STREAM REFUSED_STREAM), counted before the client
        # has acknowledged the setting too (grpc's overload protection, on by default).
        ("grpc.max_concurrent_streams", limits.MAX_CONCURRENT_STREAMS),
        # A connection that has not sent its HTTP/2 preface and settings (or finished its TLS
        # handshake) within the header timeout is closed (grpc's default: 120 s).
        ("grpc.server_handshake_timeout_ms", millis),
        # A connection without a call for as long is closed (a GOAWAY, which grpc clients
        # answer by connecting again at their next call), as the HTTP port's keep-alive is.
        ("grpc.max_connection_idle_ms", millis),
        # One limit on metadata instead of grpc's two (8 KB, above which some calls are
        # refused at random, and 16 KB): the HTTP port's head limit.
        ("grpc.max_metadata_size", metadata_bytes),
        ("grpc.absolute_max_metadata_size", metadata_bytes),
    ]
