"""A standard OpenAPI fuzzer (schemathesis) finds the server doing what openapi.yaml says.

Every operation of the served document gets a few generated requests of each kind, positive
(schema-valid) and negative (schema-violating), sent to the whole server (authenticated as the
admin), once in process (the ASGI app over a real store) and once to a `portico serve` process
over HTTP, and every response passes every schemathesis check: no 5xx, documented statuses,
content types and bodies, no schema-valid request refused, no schema-violating request accepted,
authentication not ignored.

Two outcomes are allowed by design. A schema-valid request refused only for rules that JSON
Schema cannot say (a label key given twice, a Kubernetes version the server does not offer, an
App's developer that is not the ClusterInst's): those rules are the ones with a ``note`` in
app.rules.field_rules (the password's length in UTF-8 bytes, an image reference, the fields an
Update names, a node's certificate unless TLS presents one, ...), the note is in the field's
description, and the refusal names the field or an element of it (a list's rule, such as no two
ports with one source, is refused at the element); a refusal naming any other field fails the
test. And a schema-violating request accepted because
its violation is a ``null``, which proto3 JSON reads as the field's default (see ``_has_null``).

Hypothesis runs derandomized (a fixed seed per test) with a small bound per operation, so the
run is reproducible and costs seconds.
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
from schemathesis import GenerationMode
from schemathesis.core.failures import FailureGroup
from schemathesis.python import asgi

from app.gateway.codec import streaming
from app.gateway.openapi.document import NDJSON, SSE
from app.gateway.registry import Registry
from app.main import Portico
from app.rules import field_rules
from app.settings import limits
from tests.harness import ADMIN_PASSWORD, settings_for
from tests.serve_process import TEST_ENV, serve_process

pytestmark = pytest.mark.slow  # seconds per test: scheduled first (tests/conftest.py)

EXAMPLES = 1  # per operation and generation mode
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
    """Whether the field at ``path``, or one above it, has a rule JSON Schema cannot say (a
    ``note`` in app.rules.field_rules, which the document gives as its description)."""
    calls = field_rules.CALL_RULES.get(method, {})
    for full, plain in _field_paths(method, path):
        rule = field_rules.FIELD_RULES.get(full)
        call_rule = calls.get(plain)
        if (rule is not None and rule.note) or (call_rule is not None and call_rule.note):
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
    # Other calls need no deadline.
    streaming = operation.definition.raw["x-portico-streaming"] in STREAMING
    call: dict[str, Any] = {"headers": headers}
    if streaming and live:
        wait = limits.STREAM_HEADERS_WAIT_SECONDS + STREAM_SECONDS
        call = {"headers": {**headers, "Accept": NDJSON}, "timeout": wait}
    elif streaming:
        call = {"headers": {**headers, "Accept": SSE}, "timeout": STREAM_SECONDS}

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
                if kind == "RejectedPositiveData" and _only_described_rules(
                    method, _json(response)
                ):
                    continue
                if kind == "AcceptedNegativeData" and _has_null(case.body):
                    continue
                sent = {"query": case.query, "path": case.path_parameters, "body": case.body}
                found[kind].append(
                    f"{operation.label} ({mode.value}): {failure.message[:300]} "
                    f"sent {str(sent)[:1000]} got {response.status_code} {response.text[:300]}"
                )

    check()


def _has_null(value: Any) -> bool:
    """Whether a JSON value holds a null: proto3 JSON reads null as the field's default (unset),
    as json_format does, and the document leaves null out so that generated clients do not type
    every field as optional-or-None. A negative case whose violation is a null is therefore
    accepted by design."""
    if value is None:
        return True
    if isinstance(value, dict):
        return any(_has_null(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_null(v) for v in value)
    return False


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
