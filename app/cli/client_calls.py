"""Calling one RPC of a running Portico as JSON, over gRPC or REST: what ``portico call`` uses.

Requests and replies are proto3 JSON objects (dicts) on both transports, so the command prints
the same thing whichever it used. Replies are yielded as they arrive: a server stream's items
come out one by one, and a follow stream (``ListenEvents``) never ends by itself. A failure is
:class:`CallFailed` carrying the ``google.rpc.Status`` as JSON, from either transport.

REST calls use the canonical route ``POST /package.Service/Method`` (the whole request as the
body; NDJSON for client streams) with the standard library's HTTP client, so the command needs
nothing the server does not.
"""

from __future__ import annotations

import http.client
import json
import math
import re
import ssl
import urllib.parse
from collections.abc import Iterable, Iterator
from typing import Any

import grpc
from google.protobuf import json_format
from google.rpc import error_details_pb2  # noqa: F401  (Status details decode by type URL)
from grpc_status import rpc_status

from app.calls.close_names import close_names, did_you_mean
from app.gateway.registry import Method

JsonObject = dict[str, Any]
Metadata = list[tuple[str, str]]
TIMEOUT_SECONDS = 30.0  # to connect and for each read; a follow stream waits longer (below)


class CallFailed(Exception):
    """The server answered with an error: ``status`` is its ``google.rpc.Status`` as JSON."""

    def __init__(self, status: JsonObject) -> None:
        super().__init__(f"{status.get('code')}: {status.get('message', '')}")
        self.status = status


class RequestInvalid(ValueError):
    """A request the method's message cannot hold (says which field), refused before sending."""


class NotGrpc(ConnectionError):
    """The address answers HTTP/1.1 only: a REST port (uvicorn's), not a gRPC one."""

    def __init__(self, target: str) -> None:
        super().__init__(f"{target} speaks HTTP/1.1 only, not gRPC")
        self.target = target


# json_format's words for a name the message does not have.
_NO_FIELD = re.compile(r'Message type "([^"]+)" has no field named "([^"]+)"(?: at "([^"]*)")?')


def to_message(method: Method, request: JsonObject) -> Any:
    """``request`` as the method's request message; RequestInvalid naming the problem."""
    message = method.input_type()
    try:
        return json_format.ParseDict(request, message)
    except json_format.ParseError as exc:
        unknown = _NO_FIELD.search(str(exc))
        if unknown is None:
            raise RequestInvalid(f"{method.descriptor.input_type.full_name}: {exc}") from None
        type_name, field, where = unknown.groups()
        raise RequestInvalid(_no_such_field(message, type_name, field, where or "")) from None


def _no_such_field(message: Any, type_name: str, field: str, where: str) -> str:
    """``no field "nme" in GetClusterMsg; did you mean "name"? Its fields: name``."""
    try:
        found = message.DESCRIPTOR.file.pool.FindMessageTypeByName(type_name)
    except KeyError:
        return f'{type_name} has no field named "{field}"'
    names = sorted({name for f in found.fields for name in (f.name, f.json_name)})
    close = close_names(field, names, n=1)
    place = where.split(".", 1)[1] if "." in where else ""
    said = f'no field "{field}" in {found.name}' + (f" (at {place})" if place else "")
    said += did_you_mean(close, lambda name: f'"{name}"')
    fields = ", ".join(f.name for f in found.fields)
    return said + (f" Its fields: {fields}" if fields else " It has no fields")


def to_json(message: Any) -> JsonObject:
    """A reply as the REST side renders it: proto field names, default values included."""
    return json_format.MessageToDict(
        message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )


# -- gRPC ---------------------------------------------------------------------------------------


def grpc_channel(target: str, root_certificates: bytes | None = None) -> grpc.Channel:
    """A channel to ``target`` (``host:port``); TLS when given the server's CA certificates."""
    if root_certificates is None:
        return grpc.insecure_channel(target)
    return grpc.secure_channel(target, grpc.ssl_channel_credentials(root_certificates))


def call_grpc(
    target: str,
    method: Method,
    requests: Iterable[JsonObject],
    metadata: Metadata,
    root_certificates: bytes | None = None,
    timeout: float | None = None,
) -> Iterator[JsonObject]:
    """Call ``method`` on the gRPC server at ``target``; ``timeout`` seconds for the whole call
    (default: 30 s for a unary reply, none for a stream)."""
    with grpc_channel(target, root_certificates) as channel:
        kinds = {
            "unary": channel.unary_unary,
            "server_streaming": channel.unary_stream,
            "client_streaming": channel.stream_unary,
            "bidi_streaming": channel.stream_stream,
        }
        stub: Any = kinds[method.kind](
            method.grpc_path,
            request_serializer=_serialize,
            response_deserializer=method.output_type.FromString,
        )
        messages = (to_message(method, r) for r in requests)
        argument: Any = messages if method.client_streaming else next(iter(messages))
        try:
            if method.server_streaming:
                for reply in stub(argument, metadata=metadata, timeout=timeout):
                    yield to_json(reply)
            else:
                deadline = TIMEOUT_SECONDS if timeout is None else timeout
                yield to_json(stub(argument, metadata=metadata, timeout=deadline))
        except grpc.RpcError as exc:
            raise unreachable_or_failed(exc, target) from None


def unreachable_or_failed(error: grpc.RpcError, target: str) -> Exception:
    """What a failed call says: the server was not reached (ConnectionError, NotGrpc) or it
    answered with an error (CallFailed)."""
    if _not_grpc(error):
        return NotGrpc(target)
    if _unreachable(error):
        return ConnectionError(f"{target}: {_last_error(error)}")
    return CallFailed(_grpc_status(error))


def _serialize(message: Any) -> bytes:
    data: bytes = message.SerializeToString()
    return data


def _not_grpc(error: grpc.RpcError) -> bool:
    # grpc-core's words when the first frame is not HTTP/2's SETTINGS: "Failed parsing HTTP/2
    # (Expected SETTINGS frame ...) (Trying to connect an http1.x server (HTTP status 400))".
    details = error.details() or ""
    return error.code() is grpc.StatusCode.UNAVAILABLE and "http1.x server" in details


def _unreachable(error: grpc.RpcError) -> bool:
    """Whether the call failed before reaching any server (as the REST side's OSError does)."""
    code = error.code()
    details = error.details() or ""
    return code is grpc.StatusCode.UNAVAILABLE and "failed to connect" in details


def _last_error(error: grpc.RpcError) -> str:
    """gRPC's ``failed to connect to all addresses; last error: UNKNOWN: ipv4:...: Failed to
    connect to remote host: connect: Connection refused (111)`` as ``Connection refused``."""
    details: str = error.details() or ""
    last = details.rsplit(": ", 1)[-1]
    return re.sub(r"\s*\(\d+\)$", "", last) or details


def _grpc_status(error: grpc.RpcError) -> JsonObject:
    status = rpc_status.from_call(error)  # type: ignore[arg-type]  # a failed call is a Call
    if status is not None:
        return json_format.MessageToDict(status, preserving_proto_field_name=True)
    code = error.code()
    return {"code": code.value[0], "message": error.details() or code.name}


# -- REST ---------------------------------------------------------------------------------------


def call_rest(
    base_url: str,
    method: Method,
    requests: Iterable[JsonObject],
    headers: Metadata,
    cafile: str | None = None,
    timeout: float | None = None,
) -> Iterator[JsonObject]:
    """Call ``method`` on its canonical route under ``base_url`` (``http(s)://host:port[/prefix]``);
    ``timeout`` seconds for the whole call, as the server's deadline (``grpc-timeout``)."""
    url = urllib.parse.urlsplit(base_url)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise RequestInvalid(f"{base_url!r} is not an http:// or https:// URL")
    if method.client_streaming:
        lines = [json.dumps(to_json(to_message(method, r))) for r in requests]
        body, content_type = "".join(f"{line}\n" for line in lines), "application/x-ndjson"
    else:
        body = json.dumps(to_json(to_message(method, next(iter(requests)))))
        content_type = "application/json"
    connection = _connection(url, cafile, follow=method.server_streaming, timeout=timeout)
    sent = {**dict(headers), "content-type": content_type}
    if timeout is not None:
        sent["grpc-timeout"] = f"{max(1, math.ceil(timeout * 1000))}m"
    try:
        try:
            connection.request(
                "POST", url.path.rstrip("/") + method.grpc_path, body=body.encode(), headers=sent
            )
            response = connection.getresponse()
        except ConnectionError as exc:  # said as the gRPC side says it
            raise ConnectionError(f"{base_url}: {exc.strerror or exc}") from None
        if response.status != 200:
            raise CallFailed(_rest_status(response.status, response.read()))
        if not method.server_streaming:
            yield json.loads(response.read())
            return
        while line := response.readline():
            if not line.strip():
                continue
            item = json.loads(line)
            if "error" in item:
                raise CallFailed(item["error"])
            yield item["result"]
    finally:
        connection.close()


def _connection(
    url: urllib.parse.SplitResult, cafile: str | None, *, follow: bool, timeout: float | None
) -> http.client.HTTPConnection:
    # A stream may stay quiet for as long as nothing happens; a unary reply may not. With a
    # deadline the server ends the call then: the socket waits a little longer for its answer.
    if timeout is not None:
        timeout += 5.0
    elif not follow:
        timeout = TIMEOUT_SECONDS
    host = url.hostname or ""
    if url.scheme == "https":
        context = ssl.create_default_context(cafile=cafile)
        return http.client.HTTPSConnection(host, url.port, timeout=timeout, context=context)
    return http.client.HTTPConnection(host, url.port, timeout=timeout)


def _rest_status(http_status: int, body: bytes) -> JsonObject:
    try:
        status = json.loads(body)
    except ValueError:
        status = None
    if isinstance(status, dict) and "code" in status:
        return status
    # Not Portico's answer (a proxy's error page): say what came back.
    return {"code": 2, "message": f"HTTP {http_status}: {body[:200].decode('latin-1')}"}
