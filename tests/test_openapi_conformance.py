"""A standard OpenAPI fuzzer (schemathesis) finds the server doing what openapi.yaml says.

Every operation of the served document gets a few generated requests of each kind, positive
(schema-valid) and negative (schema-violating), sent to the whole server (authenticated as the
admin), once in process (the ASGI app over a real store) and once to a `portico serve` process
over HTTP, and every response passes every schemathesis check: no 5xx, documented statuses,
content types and bodies, no schema-valid request refused, no schema-violating request accepted,
authentication not ignored, an undeclared method answered 405 with ``Allow``.

The fuzzer's configuration allows one outcome, and only where this module names the rule and
why no JSON Schema can say it: a schema-valid request refused for a rule in :data:`UNSAYABLE`
(a password's length in UTF-8 bytes, an App's developer that must be its ClusterInst's, a
Kubernetes version the server is set to offer, ...), the refusal naming that field or an
element of it (a list's rule, such as no two ports with one source, is refused at the element),
or in :data:`PRECONDITIONS` (an If-Match that is not the object's current ETag). Those rules are
the ones with a ``note`` in the rule book, which the document gives as the field's
description; a test keeps the two lists the same. Every other rule is in the schema.

Hypothesis runs derandomized (a fixed seed per test) with a small bound per operation, so the
run is reproducible and costs seconds; a live follow stream is read for at most a second.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import requests
import schemathesis
from google.protobuf import descriptor
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.core.failures import FailureGroup
from schemathesis.python import asgi

from app.catalog import RULES, portico_openapi
from app.gateway.codec import streaming
from app.gateway.openapi.document import NDJSON, SSE
from app.gateway.registry import Registry
from app.main import Portico
from app.settings import limits
from tests.harness import ADMIN_PASSWORD, run, running, settings_for
from tests.serve_process import TEST_ENV, serve_process

pytestmark = pytest.mark.slow  # seconds per test: scheduled first (tests/conftest.py)

EXAMPLES = 2  # per operation and generation mode

# What the server refuses that no schema can say, by the field the refusal names (its full
# name), with why: each is described in the document (the rule's ``note``).
_SAME_KEY = "uniqueItems compares whole elements, not one member of them"
_AFTER = "JSON Schema compares a value with constants, never with another field"
UNSAYABLE: dict[str, str] = {
    "cnct.kaas.api.CreateClusterMsg.k8s_version": "one of the versions the server is set to "
    "offer (PORTICO_K8S_VERSIONS): openapi.yaml is one document for every server, and a client "
    "generated from it must not break where a server offers other versions",
    "cnct.kaas.api.KubernetesLabel.name": f"no two labels of a list with one key: {_SAME_KEY}",
    "cnct.kaas.api.MachineSpec.name": "pool names are unique in the request "
    f"({_SAME_KEY}) and in the cluster (stored state)",
    "cnct.kaas.api.ScaleNodePoolSpec.name": "control-plane only at its own size, which is "
    "stored state",
    "cnct.kaas.api.AddNodePoolMsg.worker_node_pools": "at most 10 worker pools with those the "
    "cluster has (stored state)",
    "scheduler.Instance.ports": f"no two ports with one source: {_SAME_KEY}",
    "scheduler.NodeRegisterRequest.certificate": "required unless the call presents a TLS "
    "client certificate: the transport, not the body",
    "v1alpha.EventFilter.until_time": f"after since_time: {_AFTER}",
    "v1alpha.GetLogsRequest.until_time": f"after since_time: {_AFTER}",
    "edgeproto.Notice.any": "an Any's members are the fields of the type its @type names, "
    "which the server resolves from its type registry at run time",
    "services.auth.LoginRequest.password": "6-70 bytes as UTF-8 (bcrypt reads bytes): JSON "
    "Schema counts characters",
}
# The same for one RPC's own rules (the rule book's ``calls``), by RPC and field path.
UNSAYABLE_CALLS: dict[tuple[str, str], str] = {
    ("edgeproto.NotifyApi.StreamNotice", "action"): "the first notice of a stream is VERSION: "
    "the schema describes one line of a stream, not their order",
    **{
        (f"edgeproto.AppInstApi.{verb}AppInst", "key.cluster_inst_key.developer"): "the App's "
        f"developer (key.app_key.developer_key.name): {_AFTER}"
        for verb in ("Create", "Update")
    },
}
# RPCs no request is right for, so no positive data can be made (the schema says so).
NO_VALID_REQUEST = {
    "edgeproto.OperatorApi.UpdateOperator": "an Operator is its key alone: an Update has no "
    "field it may name",
}
# Headers whose refusal is stored state, by HTTP status: If-Match names the ETag an object must
# still have, 412 when it has another.
PRECONDITIONS = {412: "If-Match"}
STREAM_SECONDS = 1.0  # a silent follow stream is read this long, then cut by the client
STREAMING = ("server_streaming", "bidi_streaming")
LOGOUT = "services.auth.AuthService.Logout"
_INPUTS = {m.full_name: m.descriptor.input_type for m in Registry.from_package("gen")}


@schemathesis.serializer(NDJSON)
def _ndjson(ctx: Any, value: Any) -> bytes:
    # A client stream's body: the generated request message as its one line.
    return json.dumps(value).encode() + b"\n"


class _Served:
    """Portico as one ASGI app whose lifespan starts and stops it: the fuzzer's client runs the
    app (and so the whole server) on its own event loop."""

    def __init__(self, data_dir: Path) -> None:
        self.portico = Portico(settings_for(data_dir))

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] == "lifespan.startup":
                await self.portico.start()
                await send({"type": "lifespan.startup.complete"})
            await self.portico.stop()
            await send({"type": "lifespan.shutdown.complete"})
            return
        assert self.portico.http_app is not None
        await self.portico.http_app(scope, receive, send)


def _with_item_schemas(node: Any) -> Any:
    """The document as an OpenAPI 3.2 reader sees a stream: the 3.1 document describes a
    stream's body as text (for generators) and carries 3.2's ``itemSchema`` as the extension
    ``x-itemSchema``; in 3.2 terms that is the item schema alone, which the fuzzer checks each
    event of an event stream against."""
    if isinstance(node, dict):
        if "x-itemSchema" in node:
            return {"itemSchema": _with_item_schemas(node["x-itemSchema"])}
        return {key: _with_item_schemas(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_with_item_schemas(value) for value in node]
    return node


@contextlib.contextmanager
def _in_process(data_dir: Path) -> Iterator[tuple[Any, list[str]]]:
    """The schema served by the app in this process, and two admin tokens."""
    app = _Served(data_dir)
    try:
        with asgi.get_client(app) as client:
            document = client.get("/openapi.json").json()
            schema = schemathesis.openapi.from_dict(_with_item_schemas(document))
            schema.app = app
            login = {"username": "admin", "password": ADMIN_PASSWORD}
            tokens = [client.post("/v1/auth:login", json=login).json()["token"] for _ in "ab"]
        yield schema, tokens
    finally:
        asgi.shutdown_lifespans()


@contextlib.contextmanager
def _live(data_dir: Path) -> Iterator[tuple[Any, list[str]]]:
    """The schema served by a `portico serve` process, and two admin tokens."""
    with serve_process([sys.executable], data_dir / "data", cwd=data_dir) as [served]:
        schema = schemathesis.openapi.from_url(f"{served.http_base}/openapi.json")
        schema.config.update(base_url=served.http_base)
        login = {"username": "admin", "password": TEST_ENV["PORTICO_ADMIN_PASSWORD"]}
        url = f"{served.http_base}/v1/auth:login"
        yield schema, [httpx.post(url, json=login).json()["token"] for _ in "ab"]


def _field_paths(method: str, path: str) -> Iterator[tuple[str, str]]:
    """(full field name, path without indices) of the field a violation names and of each
    field above it: a rule on a list (no two ports with one source) is refused at an element."""
    plain = re.sub(r"\[[^]]*\]", "", path)
    desc: descriptor.Descriptor | None = _INPUTS[method]
    names = plain.split(".")
    for depth, name in enumerate(names, start=1):
        fd = desc.fields_by_name.get(name) if desc is not None else None
        if fd is None:
            return
        yield fd.full_name, ".".join(names[:depth])
        desc = fd.message_type


def _described(method: str, path: str) -> bool:
    """Whether the field at ``path``, or one above it, has a rule no schema can say."""
    for full, plain in _field_paths(method, path):
        if full in UNSAYABLE or (method, plain) in UNSAYABLE_CALLS:
            return True
    return False


def _only_described_rules(method: str, body: Any) -> bool:
    """Whether a 400 names only fields whose refused rule JSON Schema cannot say."""
    if not isinstance(body, dict):
        return False
    violations = [
        v for d in body.get("details", []) for v in d.get("field_violations", []) if "field" in v
    ]
    return bool(violations) and all(_described(method, v["field"]) for v in violations)


def _run(
    operation: Any, mode: GenerationMode, headers: dict[str, str], found: dict, *, live: bool
) -> None:
    method = operation.definition.raw["x-portico-rpc"]
    # In process, a stream is read as server-sent events: the client keeps the events a follow
    # stream sent when it cuts the stream (after two events or the deadline), and checks each
    # one against the document's item schema. A live server's SSE opens at once (a refusal is
    # then an `error` event under 200), so there streams are read as NDJSON, whose headers wait
    # for the first reply or STREAM_HEADERS_WAIT_SECONDS: a refusal keeps its HTTP status.
    # Either way a follow stream ends: its call carries a deadline (grpc-timeout) a second after
    # its headers, which the server ends it at with a DEADLINE_EXCEEDED error line (a stream
    # that keeps sending never falls silent for a client's read timeout to cut it); the read
    # timeout a second later is the backstop. Other calls need no deadline.
    streaming = operation.definition.raw["x-portico-streaming"] in STREAMING
    call: dict[str, Any] = {"headers": headers}
    if streaming:
        opened = limits.STREAM_HEADERS_WAIT_SECONDS + STREAM_SECONDS
        deadline = {"grpc-timeout": f"{round(opened * 1000)}m"}
        accept = {"Accept": NDJSON if live else SSE}
        call = {"headers": {**headers, **accept, **deadline}, "timeout": opened + STREAM_SECONDS}

    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def check(case: Any) -> None:
        try:
            response = case.call(**call)
        except (requests.Timeout, requests.ConnectionError) as cut:
            # A live follow stream that stayed silent, cut by the client's read deadline
            # (requests reports a deadline met mid-body as a ConnectionError): nothing to check.
            if not (streaming and "timed out" in str(cut)):
                raise
            return
        try:
            case.validate_response(response, headers=call["headers"])
        except FailureGroup as group:
            for failure in group.exceptions:
                kind = type(failure).__name__
                if kind == "RejectedPositiveData" and (
                    _only_described_rules(method, _json(response))
                    or _unmet_precondition(response.status_code, case.headers)
                ):
                    continue
                sent = {"query": case.query, "path": case.path_parameters, "body": case.body}
                found[kind].append(
                    f"{operation.label} ({mode.value}): {failure.message[:300]} "
                    f"sent {str(sent)[:1000]} got {response.status_code} {response.text[:300]}"
                )

    try:
        check()
    except Unsatisfiable:
        if not (mode == GenerationMode.POSITIVE and method in NO_VALID_REQUEST):
            raise


def _unmet_precondition(status: int, headers: Any) -> bool:
    """Whether ``status`` refuses a precondition header the case sent (in PRECONDITIONS)."""
    header = PRECONDITIONS.get(status)
    return header is not None and header in (headers or {})


def _json(response: Any) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _modes(routes: list[Any]) -> Iterator[tuple[Any, GenerationMode]]:
    """Each RPC meets positive and negative data: its routes (a binding and the canonical
    route, which read the same message) take turns, a single route gets both. Generating the
    data is most of the cost, and the routes differ only in where fields travel."""
    if len(routes) == 1:
        yield routes[0], GenerationMode.POSITIVE
        yield routes[0], GenerationMode.NEGATIVE
        return
    for index, operation in enumerate(routes):
        yield operation, (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)[index % 2]


def _fuzz(schema: Any, tokens: list[str], *, live: bool) -> dict[str, list[str]]:
    """Every mismatch the fuzzer finds, by kind. Logout gets its own token: it revokes the
    token it is called with, and every later call would be an anonymous one."""
    found: dict[str, list[str]] = collections.defaultdict(list)
    schema.config.max_stream_events = 2
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == 162
    by_rpc: dict[str, list[Any]] = collections.defaultdict(list)
    for operation in operations:
        by_rpc[operation.definition.raw["x-portico-rpc"]].append(operation)
    for rpc, routes in by_rpc.items():
        token = tokens[1] if rpc == LOGOUT else tokens[0]
        for operation, mode in _modes(routes):
            _run(operation, mode, {"Authorization": f"Bearer {token}"}, found, live=live)
    return found


def _report(found: dict[str, list[str]]) -> str:
    return json.dumps({kind: (len(c), c[:5]) for kind, c in found.items()}, indent=1)


def test_what_no_schema_can_say_is_named_here_and_noted_in_the_document() -> None:
    """The allowances above are exactly the rules with a ``note`` (the field's description in
    the document), each with a reason."""
    noted = {name for name, rule in RULES.fields.items() if rule.note}
    noted_calls = {
        (method, path)
        for method, rules in RULES.calls.items()
        for path, rule in rules.items()
        if rule.note
    }
    assert set(UNSAYABLE) == noted
    assert set(UNSAYABLE_CALLS) == noted_calls
    assert all(UNSAYABLE.values()) and all(UNSAYABLE_CALLS.values())


def test_an_undeclared_method_is_405_with_allow_naming_the_declared_ones(tmp_path: Path) -> None:
    """Schemathesis' unsupported-method check, on every path of the document: a method the
    document does not declare there (GET on a Connect/canonical path, say) is 405 with an Allow
    header, and Allow names exactly the declared methods."""
    document = portico_openapi()

    async def wrong() -> list[tuple[str, str, int, str | None]]:
        found = []
        async with running(tmp_path) as server:
            headers = {"authorization": f"Bearer {await server.login()}"}
            for path, item in document["paths"].items():
                declared = {method.upper() for method in item}
                url = re.sub(r"\{[^}]+\}", "x", path)
                for method in sorted({"GET", "POST", "PUT", "DELETE", "PATCH"} - declared):
                    reply = await server.http.request(method, url, headers=headers)
                    allow = reply.headers.get("allow")
                    named = {m.strip() for m in (allow or "").split(",")} - {"HEAD", "OPTIONS"}
                    if reply.status_code != 405 or named != declared:
                        found.append((method, path, reply.status_code, allow))
        return found

    assert run(wrong()) == []


def test_a_fuzzer_finds_the_server_doing_what_the_document_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An NDJSON stream's headers wait for its first reply (or STREAM_HEADERS_WAIT_SECONDS), so
    # that a refused request gets its HTTP status. SSE opens at once by design (an EventSource
    # reports "open" only on headers), a refusal then being an `error` event under 200; the
    # fuzzer judges refusals by their HTTP status, so here SSE waits as NDJSON does. The checks
    # refuse at once, so a short wait tells a refusal from a silent watch.
    monkeypatch.setattr(streaming, "SSE", dataclasses.replace(streaming.SSE, opening=b""))
    monkeypatch.setattr(limits, "STREAM_HEADERS_WAIT_SECONDS", 0.05)
    with _in_process(tmp_path) as (schema, tokens):
        found = _fuzz(schema, tokens, live=False)
    assert not found, _report(found)


def test_a_fuzzer_finds_a_live_server_doing_what_its_document_says(tmp_path: Path) -> None:
    """The same against `portico serve`: its HTTP server, its settings, its own event loop."""
    with _live(tmp_path) as (schema, tokens):
        found = _fuzz(schema, tokens, live=True)
    assert not found, _report(found)
