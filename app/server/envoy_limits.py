"""What protects the one port under pyvoy, by Envoy's own means: its practices for an edge proxy
facing untrusted clients, added to the configuration pyvoy writes.

- **Buffers and back-pressure.** A connection's read and write buffers have a high watermark of
  :data:`CONNECTION_BUFFER_BYTES`, an HTTP/2 stream's of one stream window
  (:data:`STREAM_WINDOW_BYTES`: Envoy sizes a stream's buffers by it). Past them Envoy stops
  reading the client, and pyvoy holds the app's next piece of a reply until the client has taken
  the last (the app hands large replies over in pieces: :mod:`app.server.pyvoy_app`), so a client
  that reads nothing holds a window and two pieces, not its whole reply. The windows bound what a
  client may send before Envoy reads it.
- **Stalled streams.** A REST call's stream that sees no event for ``PORTICO_STREAM_IDLE_SECONDS``
  (none of its request arrives, no piece of its reply is taken) ends: 504 before its reply
  began, a reset after. gRPC's and Connect's streams are exempt (their deadlines are the
  client's, and their protocols have no keepalive to tell a quiet stream from a stalled one).
  A stream whose whole reply has been handed over, but that the client opens no window for, is
  reset after ``PORTICO_BODY_TIMEOUT_SECONDS`` (Envoy's stream flush timeout), on any protocol.
- **Memory.** The overload manager watches the worker's heap, Envoy's allocator (Envoy's buffers,
  and the app's larger objects: Python's ``malloc`` is Envoy's), against
  ``PORTICO_MAX_HEAP_BYTES``. From :data:`RESET_STREAMS_FROM` of it, the streams holding the most
  unsent bytes are reset, the largest first, up to 50 whenever the heap's share changes (every
  tracked one by :data:`RESET_STREAMS_ALL`); from :data:`DRAIN_AT` kept-alive connections are
  drained; from :data:`REFUSE_AT` new requests are answered 503 and new connections closed.
- **Connections.** At most :data:`MAX_CONNECTIONS` client connections per worker at once, and
  :data:`CONNECTIONS_PER_SECOND` new ones a second (a burst of as many); past them a connection
  is closed as soon as it is accepted.
- **Resets.** A connection is closed once :data:`PREMATURE_RESET_STREAMS` of its streams have
  ended and half of them were reset by the client within :data:`PREMATURE_RESET_SECONDS` of
  their start (or as soon as that half is certain); and Envoy starts one new stream of a
  connection per turn of its loop (:data:`REQUESTS_PER_IO_CYCLE`), so that a stream reset in the
  same read as its headers ends in Envoy and never reaches the app ("rapid reset").
- **Addresses.** The client's address is the socket's (``use_remote_address``), and forwarding
  headers reach the app as the client sent them (``skip_xff_append``), where
  ``PORTICO_TRUSTED_PROXIES`` decides whether they are believed (:mod:`app.auth.client_address`),
  as under uvicorn.
- **HTTP/1.0**, which load balancers' health checks speak (often with no ``Host``), is answered.
"""

from __future__ import annotations

from typing import Any

from app.server.process import url_host
from app.settings.config import Settings
from app.settings.limits import STREAM_HEADERS_WAIT_SECONDS

# A connection's buffers (Envoy's default, 1 MiB, is meant for a mesh; its edge practice, 32 KiB,
# would reset the connection of a request head past the 64 KiB limit before its 431 is read:
# Envoy answers once it has read the limit, and closes on the rest unread).
CONNECTION_BUFFER_BYTES = 128 * 1024
# HTTP/2 flow-control windows Envoy opens to a client (Envoy's edge practice; its defaults are
# 256 MiB): what a client may send on a stream, and on the connection, before Envoy reads it.
STREAM_WINDOW_BYTES = 64 * 1024
CONNECTION_WINDOW_BYTES = 1024 * 1024
# Client connections one worker holds at once (a quarter of a common file descriptor limit,
# leaving room for the store's and upstreams' connections and the files).
MAX_CONNECTIONS = 16_384
# New connections one worker takes a second, and at once; past them a connection is closed as
# soon as it is accepted.
CONNECTIONS_PER_SECOND = 1_000
# Rapid reset: a stream the client resets within this long of its start is premature; a
# connection is closed once this many streams ended, half of them premature (Envoy's defaults:
# 1 s and 500).
PREMATURE_RESET_SECONDS = 1
PREMATURE_RESET_STREAMS = 100
# New streams of one connection Envoy starts per turn of its loop (its default: no limit).
REQUESTS_PER_IO_CYCLE = 1
# Shares of PORTICO_MAX_HEAP_BYTES at which the overload manager acts.
RESET_STREAMS_FROM, RESET_STREAMS_ALL = 0.40, 0.80
SHRINK_HEAP_AT = 0.50
DRAIN_AT = 0.85
REFUSE_AT = 0.95
# Streams holding at least 2**this bytes unsent (4 KiB) are tracked for resetting, in eight
# buckets of powers of two: those holding 512 KiB and more go first (from RESET_STREAMS_FROM),
# those of 4 KiB last (at RESET_STREAMS_ALL).
TRACKED_STREAM_POWER_OF_TWO = 12

_FIXED_HEAP = "envoy.resource_monitors.fixed_heap"
_CONNECTIONS = "envoy.resource_monitors.global_downstream_max_connections"
_TYPES = "type.googleapis.com/envoy.extensions."


def harden_listener(listener: dict[str, Any]) -> None:
    """Each listener's buffers and its rate of new connections."""
    listener["per_connection_buffer_limit_bytes"] = CONNECTION_BUFFER_BYTES
    listener.setdefault("listener_filters", []).append(
        {
            "name": "envoy.filters.listener.local_ratelimit",
            "typed_config": {
                "@type": _TYPES + "filters.listener.local_ratelimit.v3.LocalRateLimit",
                "stat_prefix": "new_connections",
                "token_bucket": {
                    "max_tokens": CONNECTIONS_PER_SECOND,
                    "tokens_per_fill": CONNECTIONS_PER_SECOND,
                    "fill_interval": "1s",
                },
            },
        }
    )


def harden_connection_manager(manager: dict[str, Any], settings: Settings) -> None:
    """The HTTP connection manager's addresses, HTTP/1.0, and the timeouts of stalled streams."""
    manager.update(
        use_remote_address=True,
        skip_xff_append=True,
        http_protocol_options={
            "accept_http_10": True,
            "default_host_for_http_10": url_host(settings.http_host),
        },
        stream_idle_timeout=f"{idle_seconds(settings)}s",
        stream_flush_timeout=f"{settings.body_timeout_seconds}s",
    )
    routes = manager["route_config"]
    # The routes only carry the gRPC and Connect streams' exemption: pyvoy's filter answers
    # every request, and nothing routes to a cluster.
    routes["validate_clusters"] = False
    for host in routes["virtual_hosts"]:
        host.setdefault("routes", []).extend(_quiet_streams())


def idle_seconds(settings: Settings) -> float:
    """How long a REST call's stream may see no event (no part of its request arrives, no piece
    of its reply is taken): ``PORTICO_STREAM_IDLE_SECONDS``, or twice the longest quiet spell of
    a REST stream that is not stalled if that is longer: the heartbeat's, or the wait of an
    NDJSON stream's head for its first reply (:data:`STREAM_HEADERS_WAIT_SECONDS`)."""
    quiet = max(settings.stream_heartbeat_seconds, STREAM_HEADERS_WAIT_SECONDS)
    return max(settings.stream_idle_seconds, 2 * quiet)


def _quiet_streams() -> list[dict[str, Any]]:
    """gRPC's and Connect's streams (always POSTs) may stay quiet as long as their calls: their
    protocols have no keepalive of their own, and their deadlines are the client's."""
    return [
        {
            "match": {
                "prefix": "/",
                "headers": [
                    {"name": ":method", "string_match": {"exact": "POST"}},
                    {
                        "name": "content-type",
                        "string_match": {"prefix": prefix, "ignore_case": True},
                    },
                ],
            },
            "route": {"cluster": "portico", "idle_timeout": "0s"},
        }
        for prefix in ("application/grpc", "application/connect+")
    ]


def http2_options(max_concurrent_streams: int) -> dict[str, Any]:
    """HTTP/2's settings for untrusted clients."""
    return {
        "max_concurrent_streams": max_concurrent_streams,
        "initial_stream_window_size": STREAM_WINDOW_BYTES,
        "initial_connection_window_size": CONNECTION_WINDOW_BYTES,
    }


def harden_bootstrap(config: dict[str, Any], settings: Settings) -> None:
    """The overload manager, and the runtime's limits."""
    runtime = {
        "overload.premature_reset_min_stream_lifetime_seconds": PREMATURE_RESET_SECONDS,
        "overload.premature_reset_total_stream_count": PREMATURE_RESET_STREAMS,
        "http.max_requests_per_io_cycle": REQUESTS_PER_IO_CYCLE,
    }
    config["overload_manager"] = _overload_manager(settings.max_heap_bytes)
    config["layered_runtime"] = {"layers": [{"name": "portico", "static_layer": runtime}]}


def _overload_manager(max_heap_bytes: int) -> dict[str, Any]:
    def at(share: float) -> list[dict[str, Any]]:
        return [{"name": _FIXED_HEAP, "threshold": {"value": share}}]

    scaled = {"scaling_threshold": RESET_STREAMS_FROM, "saturation_threshold": RESET_STREAMS_ALL}
    return {
        "refresh_interval": "0.25s",
        "resource_monitors": [
            {
                "name": _FIXED_HEAP,
                "typed_config": {
                    "@type": _TYPES + "resource_monitors.fixed_heap.v3.FixedHeapConfig",
                    "max_heap_size_bytes": max_heap_bytes,
                },
            },
            {
                "name": _CONNECTIONS,
                "typed_config": {
                    "@type": _TYPES + "resource_monitors.downstream_connections.v3."
                    "DownstreamConnectionsConfig",
                    "max_active_downstream_connections": MAX_CONNECTIONS,
                },
            },
        ],
        "buffer_factory_config": {
            "minimum_account_to_track_power_of_two": TRACKED_STREAM_POWER_OF_TWO
        },
        "actions": [
            {
                "name": "envoy.overload_actions.reset_high_memory_stream",
                "triggers": [{"name": _FIXED_HEAP, "scaled": scaled}],
            },
            {"name": "envoy.overload_actions.shrink_heap", "triggers": at(SHRINK_HEAP_AT)},
            {"name": "envoy.overload_actions.disable_http_keepalive", "triggers": at(DRAIN_AT)},
            {"name": "envoy.overload_actions.stop_accepting_requests", "triggers": at(REFUSE_AT)},
        ],
        "loadshed_points": [
            {"name": "envoy.load_shed_points.tcp_listener_accept", "triggers": at(REFUSE_AT)},
        ],
    }
