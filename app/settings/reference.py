"""The settings reference: every setting's variable, default, allowed values and meaning.

The meanings are here, once; defaults come from :class:`~app.settings.config.Settings` and the
allowed values from the rules the server checks at start. ``portico gen`` writes the table into
``docs/reference/settings.md``, and a test keeps it in sync.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from app.settings.config import OTHER_VARIABLES, Settings, variable
from app.settings.setting_rules import allowed

# What each setting does, by field name.
MEANINGS: dict[str, str] = {
    "http_host": "REST/JSON listen address (an IP or host name)",
    "http_port": "REST/JSON port (0 picks a free port, one for all workers)",
    "grpc_host": "gRPC listen address (an IP or host name)",
    "grpc_port": "gRPC port (0 picks a free port, one for all workers)",
    "data_dir": (
        "state folder (the SQLite database, the generated JWT secret; `node-certs/` of `portico "
        "node-agent`)"
    ),
    "server": (
        "the HTTP server: `uvicorn` (HTTP/1.1), or `pyvoy` (Envoy's HTTP/1.1 and HTTP/2; its HTTP "
        "port also serves native gRPC, so one port serves every protocol; `portico proxy` also "
        "calls its upstreams through Envoy)"
    ),
    "grpc_server": (
        "the separate grpc.aio port: `auto` serves it under uvicorn, and under pyvoy only when a "
        "gRPC port is given; `on` or `off` whatever the server"
    ),
    "workers": (
        "server processes sharing the ports and the store (1-64; `portico proxy` too); background "
        "work runs on one of them"
    ),
    "access_log": "one log line per HTTP request (uvicorn's access log)",
    "request_log": (
        "one structured line per RPC call on either transport (see [Logs](../operations/logs.md))"
    ),
    "log_format": "`text`, or `json`: one JSON object a line, for every log line",
    "metrics": "Prometheus metrics at `/metrics`; `false` records and serves none",
    "metrics_port": (
        "serve `/metrics` on this port of `PORTICO_HTTP_HOST` instead of the HTTP port (`0`: the "
        "HTTP port); not the HTTP or gRPC port; needs metrics on"
    ),
    "metrics_token": (
        "when set (16+ characters, no spaces), `/metrics` wants `Authorization: Bearer <token>`; "
        "needs metrics on"
    ),
    "database_url": (
        "`postgresql://user:pass@host/db` to share state between replicas, or `sqlite:///<file>`"
    ),
    "database_wait_seconds": (
        "how long a start keeps trying to reach a PostgreSQL that does not answer, saying so "
        "every few seconds, before it stops with one line (0 to 3600; `0`: one try); a refusal "
        "that waiting cannot mend (a wrong password, no such database) stops it at once"
    ),
    "group_commit_max_transactions": (
        "at most this many write transactions share one database commit (1 to 10000; `1`: each "
        "commits alone); see [The write path](../concepts/write-path.md)"
    ),
    "group_commit_max_seconds": (
        "a group commits once its first transaction has waited this long for others to join, even"
        " while more queue (0 to 1)"
    ),
    "event_retention_seconds": (
        "events older than this (at least 1) are compacted; a watch from before them gets "
        "`OUT_OF_RANGE`"
    ),
    "admin_password": (
        "password of the bootstrap `admin` account (6-70 bytes); only used while there are no "
        "accounts, and said at start when ignored"
    ),
    "jwt_secret": "HS256 signing secret, at least 32 bytes",
    "token_ttl_seconds": "lifetime of issued tokens (at least 1)",
    "password_hash_cost": (
        "scrypt's N for password hashes, a power of two from 2 to 1048576 (lower it only in tests)"
    ),
    "json_names": "`proto`: field names as in the .proto files; `camel`: lowerCamelCase",
    "unknown_fields": (
        "`reject` answers unknown JSON fields and query parameters, and enum numbers the enum "
        "does not define (on both transports), with 400; `ignore` drops unknown fields and keeps "
        "such numbers"
    ),
    "max_body_bytes": (
        "larger request bodies (as sent, and once decoded from gzip or zstd), NDJSON request "
        "lines and WebSocket frames are refused with 413 (`RESOURCE_EXHAUSTED`) (1 KiB to 1 GiB)"
    ),
    "header_timeout_seconds": (
        "a request's headers must arrive within this (from the connection's opening, or from the "
        "first byte of a later request on it), else `408` and the connection is closed; a "
        "connection idle this long is closed (on the grpc.aio port too, which also closes a "
        "connection whose HTTP/2 handshake takes longer) (0.001 to 86400; checked once a second, "
        "so it may fire up to a second late)"
    ),
    "body_timeout_seconds": (
        "a request body (of any call but a client stream; over gRPC, on either port, a call's "
        "one request message) must arrive within this, else `408` (`DEADLINE_EXCEEDED`) (0.001 "
        "to 86400; checked once a second, so it may fire up to a second late)"
    ),
    "stream_heartbeat_seconds": (
        "no HTTP stream is quiet longer than this: it gets a keepalive (SSE `: keepalive` "
        "comment, NDJSON empty line) (0.001 to 86400)"
    ),
    "stream_idle_seconds": (
        "pyvoy: a REST call's stream that sees nothing of its request arrive and no piece of its "
        "reply taken this long ends (`504` before its reply began, a reset after), a client that "
        "stopped reading included; gRPC and Connect streams are exempt. At least twice "
        "`PORTICO_STREAM_HEARTBEAT_SECONDS` and 4 s (twice an NDJSON stream's wait for its first "
        "reply) (1 to 86400; see [Limits](../operations/limits.md))"
    ),
    "max_heap_bytes": (
        "pyvoy: the heap of each worker's allocator (Envoy's buffers and the app's larger "
        "objects) by whose shares Envoy sheds load: from 40% it resets the streams holding the "
        "most unsent bytes, from 85% it drains kept-alive connections, from 95% it answers new "
        "requests `503` and closes new connections (64 MiB to 1 TiB; see "
        "[Limits](../operations/limits.md))"
    ),
    "shutdown_grace_seconds": (
        "on SIGTERM/SIGINT, how long calls in flight may take to finish before the process exits "
        "(0.001 to 86400)"
    ),
    "cors_origins": "comma-separated origins allowed by CORS (`https://host[:port]`, or `*`)",
    "rpc_prefix": (
        "path prefix for Connect and gRPC-Web besides `/{package}.{Service}/{Method}` (empty: "
        "only that path)"
    ),
    "rate_limit_per_second": (
        "calls a second each signed-in account (each client address, for anonymous calls) may "
        "make, on every transport and across all workers and replicas; over it, `429` with "
        "`Retry-After` (gRPC `RESOURCE_EXHAUSTED` with `RetryInfo`). `0`: unlimited; see [Rate "
        "limits](../operations/rate-limits.md)"
    ),
    "rate_limit_burst": (
        "calls a caller may make at once before the rate applies (`0`: one second of the rate, "
        "at least 1); needs a rate"
    ),
    "rate_limit_methods": (
        "per-method limits instead of the common one, `package.Service/Method=rate[:burst]` "
        "comma-separated (rate `0`: unlimited); each method gets a bucket of its own per caller. "
        "`portico serve` refuses a method it does not serve"
    ),
    "trusted_proxies": (
        "comma-separated addresses or CIDR networks of proxies whose `X-Forwarded-For` / "
        "`Forwarded` name the client (see [Accounts](../how-to/accounts.md))"
    ),
    "tls_cert": (
        "PEM certificate chain and its key: both transports serve TLS (see [TLS](../how-to/tls.md))"
    ),
    "tls_key": (
        "PEM certificate chain and its key: both transports serve TLS (see [TLS](../how-to/tls.md))"
    ),
    "tls_client_ca": (
        "PEM CA certificates: gRPC callers must present a client certificate signed by one"
    ),
    "sim_step_seconds": "wall-clock seconds per step of the simulated infrastructure (up to 3600)",
    "k8s_versions": "Kubernetes versions the cluster manager offers (`X.Y.Z`, at least one)",
    "machine_ip_pool": "addresses of simulated MaaS machines (an IPv4 network, /30 or larger)",
    "sim_failure_ratio": (
        "share of simulated failures (0 to 1), and the seed that picks them: KaaS machines that "
        "fail to deploy, and edge Cloudlet, ClusterInst and AppInst creates, updates and deletes "
        "that fail (each operation draws once)"
    ),
    "sim_seed": (
        "share of simulated failures (0 to 1), and the seed that picks them: KaaS machines that "
        "fail to deploy, and edge Cloudlet, ClusterInst and AppInst creates, updates and deletes "
        "that fail (each operation draws once)"
    ),
    "node_subnet_pool": "each scheduler node gets a /24 out of it (an IPv4 network, /24 or larger)",
    "node_grace_seconds": (
        "a node silent this long after its status stream ended is `FAILED` (up to 86400)"
    ),
    "sim_nodes": "simulated scheduler nodes run in-process (0-1000)",
    "image_retention_seconds": (
        "an image no pod uses is removed from the nodes after this long, with `IMAGE_REMOVED` (0 "
        "to 31536000)"
    ),
    "idempotency_retention_seconds": (
        "how long the outcome of a call made with an idempotency key is kept for its repeats (60 "
        "to 2592000); see [Safe retries](../concepts/idempotency.md)"
    ),
    "test_crash_after_commit": (
        "**tests only**: a full method name (e.g. `edgeproto.OperatorApi.CreateOperator`); after "
        "a keyed call to it commits, the process kills itself (SIGKILL) before replying. Must "
        "name a served method; never set it in production"
    ),
    "demo": (
        "`--demo`: fill every service with a small world on start (demo clusters, nodes, pods, "
        "statistics), once per database; see [the "
        "walkthroughs](../how-to/walkthrough-kubernetes.md)"
    ),
    "upstreams": (
        "`portico proxy` only: comma-separated `host:port` gRPC servers to front (`--upstream`, "
        "repeated); see [Front another gRPC server](../how-to/proxy.md)"
    ),
    "descriptor_set": (
        "`portico proxy` only: a FileDescriptorSet (`protoc --descriptor_set_out "
        "--include_imports`) read instead of server reflection; needs exactly one upstream"
    ),
    "proxy_auth": (
        "`portico proxy` only (`--auth`): `jwt` (Portico's accounts and login, as `serve`), "
        "`none` (no checks, a warning at start) or `passthrough` (the caller's `Authorization` "
        "goes to the upstream)"
    ),
    "upstream_tls": "`portico proxy` only: TLS to the upstreams, verified with the system roots",
    "upstream_ca": (
        "`portico proxy` only: TLS to the upstreams, verified with these PEM CA certificates "
        "(implies TLS)"
    ),
    "upstream_cert": (
        "`portico proxy` only: a PEM client certificate and its key for the upstreams (both or "
        "neither; needs TLS)"
    ),
    "upstream_key": (
        "`portico proxy` only: a PEM client certificate and its key for the upstreams (both or "
        "neither; needs TLS)"
    ),
    "upstream_poll_seconds": (
        "`portico proxy` only: how often each upstream's reflection is asked whether its "
        "descriptors changed (0.1 to 86400)"
    ),
    # -- identity providers and roles by policy --
    "oidc_issuer": (
        "an OpenID Connect provider whose tokens the gate admits beside Portico's own, on every "
        "protocol (its `iss`; `https://`, or `http://` to loopback); see [Identity "
        "providers](../how-to/identity-providers.md)"
    ),
    "oidc_jwks_url": (
        "where the provider's signing keys (JWKS) are; empty: the `jwks_uri` of the issuer's "
        "`/.well-known/openid-configuration`"
    ),
    "oidc_audience": (
        "the `aud` the provider's tokens must carry (Portico's client id or API identifier); "
        "needed with an issuer"
    ),
    "oidc_roles_claim": (
        "the claim holding the caller's role names: a name, or a dotted path such as "
        "`realm_access.roles` (a list of names, or one string of space-separated names)"
    ),
    "oidc_role_map": (
        "provider role names onto Portico's roles, `name=role` comma-separated (a name equal to "
        "a Portico role grants it without an entry); of several, the most powerful applies"
    ),
    "oidc_algorithms": (
        "the algorithms a provider's token may be signed with (never `none` or HS*, whose "
        "secret would be the provider's public key)"
    ),
    "oidc_leeway_seconds": (
        "clock skew allowed when checking a provider token's `exp`, `nbf` and `iat` (0 to 300; "
        "Portico's own tokens allow 30 s)"
    ),
    "oidc_jwks_timeout_seconds": (
        "a fetch of the provider's discovery document and keys ends within this (0.1 to 60); "
        "meanwhile only callers whose key is unknown wait"
    ),
    "oidc_jwks_max_bytes": (
        "the largest JWKS read (1024 to 4194304); a larger one is a failed fetch (at most 100 "
        "keys of it are used)"
    ),
    "oidc_jwks_refresh_seconds": (
        "a token naming an unknown key id fetches the keys again at most once per this interval "
        "(1 to 3600); keys are also fetched again in the background once an hour old"
    ),
    "policy_file": (
        "a YAML file saying which roles may call which methods (full names or globs, per "
        "service), instead of the name rule; checked at start (see `portico policy`)"
    ),
    "proxy_forward_identity": (
        "`portico proxy` only: what the upstream learns of the caller the gate admitted: "
        "`none`, `authorization` (the caller's own header), or `metadata` "
        "(`x-portico-subject`, `x-portico-roles`, `x-portico-issuer`); needs `--auth jwt`"
    ),
}

# Where an empty default means something else than "none".
EMPTY_MEANS = {
    "database_url": "SQLite in the data folder",
    "admin_password": "random, printed once",
    "jwt_secret": "generated once, kept in the data folder (mode 0600)",
}


# The PORTICO_* variables that are no setting of serve or proxy: who reads each, and what for.
OTHER_MEANINGS: dict[str, tuple[str, str]] = {
    "PORTICO_LOGIN_FILE": (
        "`portico login`, `token`, `call`, `list`, `describe`",
        "the file where `portico login` keeps the token and the server's addresses (default: "
        "`$XDG_CONFIG_HOME/portico/login.json`, without it `~/.config/portico/login.json`)",
    ),
    "PORTICO_TOKEN": (
        "`portico call`, `list`, `describe`",
        "a bearer token to send instead of the login's (`--token` wins over it)",
    ),
    "PORTICO_NODE_SERVER": (
        "`portico node-agent`",
        "`--server`: the scheduler's gRPC address `host:port` (default `127.0.0.1:50051`)",
    ),
    "PORTICO_NODE_USERNAME": ("`portico node-agent`", "`--username`: a `node` account"),
    "PORTICO_NODE_PASSWORD": (
        "`portico node-agent`",
        "`--password`: its password (prefer the variable: a flag shows in `ps`)",
    ),
    "PORTICO_NODE_CERT_DIR": (
        "`portico node-agent`",
        "`--cert-dir`: the folder of the node's `<name>.crt`/`<name>.key`, created with mode "
        "0700 (default: `node-certs` in `PORTICO_DATA_DIR`, `./data` without it)",
    ),
    "PORTICO_NODE_TLS_CA": (
        "`portico node-agent`",
        "`--tls-ca`: PEM CA of the server's certificate: the agent connects with TLS",
    ),
    "PORTICO_NODE_TLS_CERT": (
        "`portico node-agent`",
        "`--tls-cert`: PEM client certificate the server's client CA signed",
    ),
    "PORTICO_NODE_TLS_KEY": ("`portico node-agent`", "`--tls-key`: the PEM key of `--tls-cert`"),
    "PORTICO_GIT_COMMIT": (
        "`portico serve` (an image build sets it)",
        "the commit `GetVersionInformation` reports where the source has no `.git`",
    ),
    "PORTICO_GIT_TREE_STATE": (
        "`portico serve` (an image build sets it)",
        "`clean` or `dirty`, reported with the commit",
    ),
    "PORTICO_BUILD_DATE": (
        "`portico serve` (an image build sets it)",
        "the build date reported (default: when the package files were written)",
    ),
    "PORTICO_SUPERVISOR": (
        "the Envoy workers of `--server pyvoy`",
        "set by `serve` for the processes it starts (its socket); never set it yourself",
    ),
    "PORTICO_APPLICATION": (
        "the Envoy workers of `--server pyvoy`",
        "set by `serve` and `proxy` for the processes they start (which server each builds); "
        "never set it yourself",
    ),
    "PORTICO_TEST_DATABASE_URL": (
        "the test suite",
        "a PostgreSQL URL: the tests that need PostgreSQL run against it (else they skip)",
    ),
    "PORTICO_SHARED_DIR": (
        "the test suite",
        "a folder of the original systems' documents to compare `tests/data/original` with",
    ),
    "PORTICO_SCREENSHOTS": (
        "the test suite",
        "a folder: the dashboard's browser tests save their screenshots there",
    ),
}


def other_variables_table() -> str:
    """The variables of :data:`OTHER_MEANINGS` as a Markdown table: variable, read by, meaning."""
    missing = OTHER_VARIABLES ^ OTHER_MEANINGS.keys()
    if missing:
        raise ValueError(f"OTHER_MEANINGS and OTHER_VARIABLES differ: {sorted(missing)}")
    rows = ["| variable | read by | meaning |", "| --- | --- | --- |"]
    for name, (reader, meaning) in OTHER_MEANINGS.items():
        rows.append(f"| `{name}` | {reader} | {meaning} |")
    return "\n".join(rows) + "\n"


def settings_table() -> str:
    """Every setting as a Markdown table row: variable, default, allowed values, meaning."""
    rows = [
        "| variable | default | allowed | meaning |",
        "| --- | --- | --- | --- |",
    ]
    for field in dataclasses.fields(Settings):
        cells = (
            f"`{variable(field.name)}`",
            _default(field),
            _allowed(field).replace("|", "\\|"),
            MEANINGS[field.name].replace("|", "\\|"),
        )
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def _default(field: dataclasses.Field[Any]) -> str:
    value = field.default
    if value in ("", ()):
        return EMPTY_MEANS.get(field.name, "none")
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, Path):
        return f"`./{value}`"
    if isinstance(value, tuple):
        return f"`{','.join(value)}`"
    return f"`{value}`"


def _allowed(field: dataclasses.Field[Any]) -> str:
    rule = field.metadata.get("rule")
    if rule is not None:
        return allowed(rule)
    if field.type in (bool, "bool"):
        return "true, false"
    return "a folder path"
