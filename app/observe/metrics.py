"""Every Prometheus metric Portico exports, defined once, with bounded label sets.

No label ever holds user input: ``rpc`` is a full method name from the descriptors (or
``unmatched`` for a path no RPC binds), ``code`` a gRPC status code name, ``http_status`` one of
the few statuses the gateway answers with, ``operation`` an :class:`ObjectStore` method name,
``reason`` and ``outcome`` come from fixed lists below.

With several workers (``--workers N``) each process writes its numbers to files in
``PROMETHEUS_MULTIPROC_DIR`` (set by the parent before the workers start), and a scrape of any
worker adds them up: ``prometheus_client``'s multiprocess mode. Gauges say how they combine.
"""

from __future__ import annotations

import os

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.multiprocess import MultiProcessCollector

MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"


class _Recording:
    """Whether the store, the gate and the simulation record (``PORTICO_METRICS``)."""

    on = True


RECORDING = _Recording()

# Latency buckets from 250 µs (a cached small call) to 10 s (a slow write under contention).
LATENCY_BUCKETS = (
    0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)  # fmt: skip
STORE_BUCKETS = (
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1.0, 5.0,
)  # fmt: skip
LAG_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

# -- calls, on both transports ----------------------------------------------------------------

REQUESTS = Counter(
    "portico_requests_total",
    "RPC calls that ended, by transport, RPC, gRPC code and HTTP status (empty on the gRPC port).",
    ["transport", "rpc", "code", "http_status"],
)
REQUEST_SECONDS = Histogram(
    "portico_request_duration_seconds",
    "Time from a call's arrival to its last byte handed to the transport.",
    ["transport", "rpc"],
    buckets=LATENCY_BUCKETS,
)
OPEN_STREAMS = Gauge(
    "portico_open_streams",
    "Streaming calls open now.",
    ["transport", "rpc"],
    multiprocess_mode="livesum",
)
STREAM_MESSAGES = Counter(
    "portico_stream_messages_sent_total",
    "Messages sent on server-streaming calls.",
    ["transport", "rpc"],
)

# -- the gate ---------------------------------------------------------------------------------

LOGINS = Counter("portico_logins_total", "Login attempts by outcome.", ["outcome"])
LOCKOUTS = Counter("portico_login_lockouts_total", "Lockouts started by repeated failed logins.")
TOKEN_REFUSALS = Counter(
    "portico_token_refusals_total", "Calls the gate refused, by reason.", ["reason"]
)
RATE_LIMITED = Counter(
    "portico_rate_limited_total",
    "Calls refused by the per-caller rate limit, by method and by whom the bucket counts "
    "(account or address).",
    ["method", "caller"],
)
# The identity provider's keys (app/auth/oidc.py): fetches, whether the last worked, how many.
OIDC_KEY_FETCHES = Counter(
    "portico_oidc_key_fetches_total",
    "Fetches of the identity provider's keys (JWKS), by outcome (ok, error).",
    ["outcome"],
)
OIDC_PROVIDER_UP = Gauge(
    "portico_oidc_provider_up",
    "1 while the last fetch of the identity provider's keys worked (the lowest of the workers).",
    multiprocess_mode="livemin",
)
OIDC_KEYS = Gauge(
    "portico_oidc_keys",
    "Signing keys of the identity provider known now.",
    multiprocess_mode="livemax",
)

# -- the store --------------------------------------------------------------------------------

STORE_SECONDS = Histogram(
    "portico_store_operation_duration_seconds",
    "Time of one store operation, by operation.",
    ["operation"],
    buckets=STORE_BUCKETS,
)
WRITE_LOCK_SECONDS = Histogram(
    "portico_store_write_lock_wait_seconds",
    "Time a write waited for the write lock: this process's, then the database's.",
    ["lock"],
    buckets=STORE_BUCKETS,
)
# Group commit: their ratio is how many write transactions share a commit (one fsync).
GROUP_COMMITS = Counter(
    "portico_store_group_commits", "Database commits of write transactions (one fsync each)."
)
GROUP_COMMITTED = Counter(
    "portico_store_group_committed_transactions", "Write transactions those commits held."
)
EVENT_LOG_HEAD = Gauge(
    "portico_event_log_head_revision",
    "The newest committed revision of the event log.",
    multiprocess_mode="max",
)
EVENT_LOG_EVENTS = Gauge(
    "portico_event_log_events",
    "Events kept in the log (newest revision minus the revision compacted through).",
    multiprocess_mode="max",
)
WATCH_LAG_SECONDS = Histogram(
    "portico_watch_lag_seconds",
    "Time from an event's commit to its delivery to a watcher.",
    buckets=LAG_BUCKETS,
)
LEADER = Gauge(
    "portico_leader",
    "1 while this server runs the background work (one process of all replicas does).",
    multiprocess_mode="livemax",
)

# -- the simulation ---------------------------------------------------------------------------

SIM_STEP_LAG_SECONDS = Histogram(
    "portico_sim_step_lag_seconds",
    "How late simulation work woke after the step it waited for began.",
    buckets=LAG_BUCKETS,
)


def exposition(accept: str | None = None) -> tuple[bytes, str]:
    """The current metrics in the format the ``Accept`` header asks for, and its content type.

    ``application/openmetrics-text`` gets OpenMetrics (the format that carries exemplars and
    ``_created`` samples); anything else the Prometheus text format, as before. The choice is
    ``prometheus_client``'s own negotiation, so it follows the client library's rules for
    versions and quality values. In multiprocess mode the files of every worker are read and
    added up on each scrape.
    """
    from prometheus_client import REGISTRY
    from prometheus_client.exposition import choose_encoder

    encoder, content_type = choose_encoder(accept or "")
    if os.environ.get(MULTIPROCESS_ENV):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)
        return encoder(registry), content_type
    return encoder(REGISTRY), content_type
