"""``portico proxy`` in front of Echo servers Portico did not write: a grpcio server with
reflection (v1alpha) and a grpc-go server, each a process of its own. Every streaming kind,
errors with details, deadlines, metadata and cancellation, through REST/JSON; each under
uvicorn (calls on grpc.aio channels) and under pyvoy (calls through Envoy's HTTP/2 client)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import grpc
import httpx
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from grpc_status import rpc_status
from websockets.asyncio.client import connect

from tests.harness import eventually, run
from tests.proxy.processes import (
    Process,
    free_port,
    go_echo_binary,
    python_gen,
    start_go_echo,
    start_proxy,
    start_python_echo,
)

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@dataclass
class Proxied:
    upstream: Process
    proxy: Process
    base: str
    server: str  # what the upstream says it is: "python" or "go"
    front: str  # the proxy's HTTP server: "uvicorn" or "pyvoy"


@pytest.fixture(
    scope="module",
    params=[("python", "uvicorn"), ("go", "uvicorn"), ("python", "pyvoy"), ("go", "pyvoy")],
    ids=lambda param: "-".join(param),
)
def proxied(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Proxied]:
    port = free_port()
    kind, front = request.param
    if kind == "go":
        upstream = start_go_echo(go_echo_binary(), port)
    else:
        upstream = start_python_echo(python_gen(tmp_path_factory.mktemp("echo")), port)
    try:
        proxy, base = start_proxy(
            "--upstream", f"127.0.0.1:{port}", "--auth", "none", "--server", front
        )
        try:
            yield Proxied(upstream, proxy, base, kind, front)
            proxy.forget_lines()
            # Nothing failed unseen (a task or a pyvoy callback ending in a traceback).
            assert not [line for line in proxy.said if "Traceback" in line or "panicked" in line]
        finally:
            proxy.stop()
    finally:
        upstream.stop()


def client(proxied: Proxied) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=proxied.base, timeout=10)


def ndjson(response: httpx.Response) -> list[dict]:
    return [json.loads(line) for line in response.text.splitlines() if line.strip()]


def test_a_unary_call_goes_to_the_upstream_with_the_callers_metadata(proxied: Proxied) -> None:
    async def scenario() -> httpx.Response:
        async with client(proxied) as http:
            return await http.get(
                "/v1/say/hello",
                headers={
                    "x-request-id": "req-42",
                    "traceparent": TRACEPARENT,
                    "grpc-metadata-tenant": "blue",
                    "authorization": "Bearer not-for-the-upstream",
                },
            )

    response = run(scenario())
    assert response.status_code == 200, response.text
    reply = response.json()
    assert reply["text"] == "hello"
    assert reply["server"] == proxied.server
    seen = reply["metadata"]
    assert seen["x-request-id"] == "req-42"
    assert seen["traceparent"] == TRACEPARENT
    assert seen["tenant"] == "blue"
    assert "authorization" not in seen  # --auth none forwards no credentials
    # The upstream's response metadata comes back as grpc-metadata-* headers.
    assert response.headers["grpc-metadata-x-echo"] == "said"
    assert response.headers["x-request-id"] == "req-42"


def test_server_streaming_as_ndjson_and_sse(proxied: Proxied) -> None:
    async def scenario() -> tuple[httpx.Response, httpx.Response]:
        async with client(proxied) as http:
            lines = await http.get("/v1/count/3", params={"interval_ms": 1})
            events = await http.get(
                "/v1/count/2", params={"interval_ms": 1}, headers={"accept": "text/event-stream"}
            )
            return lines, events

    lines, events = run(scenario())
    assert lines.status_code == 200
    assert [m["result"]["text"] for m in ndjson(lines)] == ["0", "1", "2"]
    assert events.headers["content-type"].startswith("text/event-stream")
    data = [json.loads(line[5:]) for line in events.text.splitlines() if line.startswith("data:")]
    assert [d["result"]["text"] for d in data] == ["0", "1"]


def test_client_streaming_sums_what_the_client_streams(proxied: Proxied) -> None:
    async def scenario() -> httpx.Response:
        async with client(proxied) as http:
            body = "".join(json.dumps({"value": v}) + "\n" for v in (1, 2, 39))
            return await http.post(
                "/v1/sum", content=body, headers={"content-type": "application/x-ndjson"}
            )

    response = run(scenario())
    assert response.status_code == 200, response.text
    assert response.json() == {"sum": "42", "count": 3}


def test_bidi_streaming_over_ndjson(proxied: Proxied) -> None:
    async def scenario() -> httpx.Response:
        async with client(proxied) as http:
            body = "".join(json.dumps({"text": t}) + "\n" for t in ("ab", "cd"))
            return await http.post(
                "/v1/chat", content=body, headers={"content-type": "application/x-ndjson"}
            )

    response = run(scenario())
    assert response.status_code == 200, response.text
    assert [m["result"]["text"] for m in ndjson(response)] == ["AB", "CD"]


def test_an_upstream_error_keeps_its_code_message_and_details(proxied: Proxied) -> None:
    async def scenario() -> httpx.Response:
        async with client(proxied) as http:
            return await http.post("/v1/fail", json={"text": "hi"})

    response = run(scenario())
    assert response.status_code == 400  # FAILED_PRECONDITION
    body = response.json()
    assert body["code"] == 9
    assert body["message"] == "no echo today"
    assert body["details"] == [
        {
            "@type": "type.googleapis.com/google.rpc.BadRequest",
            "field_violations": [{"field": "text", "description": "'hi' is not welcome"}]
            if proxied.server == "python"
            else [{"field": "text", "description": '"hi" is not welcome'}],
        }
    ]


def test_the_callers_deadline_is_the_upstream_calls(proxied: Proxied) -> None:
    async def scenario() -> httpx.Response:
        async with client(proxied) as http:
            return await http.post(
                "/v1/sleep", json={"millis": 20_000}, headers={"grpc-timeout": "200m"}
            )

    response = run(scenario())
    assert response.status_code == 504
    assert response.json()["code"] == 4  # DEADLINE_EXCEEDED
    assert response.elapsed.total_seconds() < 10


def test_a_client_that_goes_away_cancels_the_upstream_stream(proxied: Proxied) -> None:
    async def scenario() -> None:
        async with client(proxied) as http:
            params = {"interval_ms": 50}
            async with http.stream("GET", "/v1/count/100000", params=params) as response:
                async for line in response.aiter_lines():
                    assert json.loads(line)["result"]["text"] == "0"
                    break
        # The connection is closed: the upstream hears of it.
        proxied.upstream.wait_for("cancelled Count", timeout=30)

    run(scenario())


def test_the_openapi_document_and_connect_cover_the_proxied_methods(proxied: Proxied) -> None:
    async def scenario() -> tuple[httpx.Response, httpx.Response]:
        async with client(proxied) as http:
            document = await http.get("/openapi.json")
            connect = await http.post(
                "/api/portico.echo.v1.Echo/Say",
                json={"text": "via connect"},
                headers={"connect-protocol-version": "1"},
            )
            return document, connect

    document, connect = run(scenario())
    paths = document.json()["paths"]
    assert paths["/v1/say/{text}"]["get"]["x-portico-rpc"] == "portico.echo.v1.Echo.Say"
    assert paths["/portico.echo.v1.Echo/Chat"]["post"]["x-portico-streaming"] == "bidi_streaming"
    assert connect.status_code == 200, connect.text
    assert connect.json()["text"] == "via connect"


def test_the_descriptors_served_are_the_upstreams(proxied: Proxied) -> None:
    async def fetch() -> httpx.Response:
        async with client(proxied) as http:
            return await http.get("/descriptors.binpb")

    reply = run(fetch())
    assert reply.status_code == 200
    pool = descriptor_pool.DescriptorPool()
    for file in descriptor_pb2.FileDescriptorSet.FromString(reply.content).file:
        pool.Add(file)  # each after its imports, as grpcurl and buf read them
    say = pool.FindMethodByName("portico.echo.v1.Echo.Say")
    assert say.input_type.fields_by_name["text"]
    assert pool.FindMessageTypeByName("google.rpc.BadRequest")


def test_readyz_is_green_while_the_upstream_answers(proxied: Proxied) -> None:
    async def ready() -> bool:
        async with client(proxied) as http:
            return (await http.get("/readyz")).status_code == 200

    run(eventually(ready, 30, what="/readyz 200"))


def test_bidi_streaming_over_a_websocket(proxied: Proxied) -> None:
    async def scenario() -> list[str]:
        at = proxied.base.removeprefix("http://")
        async with connect(f"ws://{at}/v1/chat") as socket:
            replies = []
            for text in ("one", "two"):
                await socket.send(json.dumps({"text": text}))
                replies.append(json.loads(await socket.recv())["result"]["text"])
            return replies

    assert run(scenario()) == ["ONE", "TWO"]


def test_a_bad_line_in_a_client_stream_is_refused_naming_its_field(proxied: Proxied) -> None:
    async def scenario() -> httpx.Response:
        async with client(proxied) as http:
            body = '{"value": 1}\n{"value": "many"}\n'
            return await http.post(
                "/v1/sum", content=body, headers={"content-type": "application/x-ndjson"}
            )

    response = run(scenario())
    assert response.status_code == 400, response.text
    violations = response.json()["details"][0]["field_violations"]
    assert [v["field"] for v in violations] == ["value"]


# SleepRequest{millis: 60000} in one gRPC-Web envelope: flags, length, the message.
_SLEEP_MINUTE = b"\x08\xe0\xd4\x03"
_GRPC_WEB_SLEEP = b"\x00" + len(_SLEEP_MINUTE).to_bytes(4, "big") + _SLEEP_MINUTE


@pytest.mark.parametrize(
    ("path", "request_body"),
    [
        ("/v1/sleep", {"json": {"millis": 60_000}}),
        ("/api/portico.echo.v1.Echo/Sleep", {"json": {"millis": 60_000}}),
        (
            "/portico.echo.v1.Echo/Sleep",
            {
                "content": _GRPC_WEB_SLEEP,
                "headers": {"content-type": "application/grpc-web+proto", "x-grpc-web": "1"},
            },
        ),
    ],
    ids=["rest", "connect", "grpc-web"],
)
def test_a_client_that_goes_away_cancels_the_upstreams_unary_call(
    proxied: Proxied, path: str, request_body: dict[str, Any]
) -> None:
    proxied.upstream.forget_lines()
    proxied.proxy.forget_lines()
    said = len(proxied.proxy.said)

    async def scenario() -> httpx.Response:
        async with client(proxied) as http:
            waiting = asyncio.ensure_future(http.post(path, **request_body))
            await asyncio.to_thread(proxied.upstream.wait_for, "sleeping")
            waiting.cancel()  # the client gives up: its connection closes
            with contextlib.suppress(asyncio.CancelledError):
                await waiting
        await asyncio.to_thread(proxied.upstream.wait_for, "cancelled Sleep")
        async with client(proxied) as http:
            return await http.get("/v1/say/after")

    assert run(scenario()).status_code == 200  # the proxy carries on
    proxied.proxy.forget_lines()
    assert not [line for line in proxied.proxy.said[said:] if "Traceback" in line]


def test_metadata_grpc_cannot_carry_is_refused_naming_the_header(proxied: Proxied) -> None:
    async def scenario() -> list[httpx.Response]:
        async with client(proxied) as http:
            return [
                await http.get("/v1/say/x", headers={"grpc-metadata-content-type": "text/x"}),
                await http.get("/v1/say/x", headers={"grpc-metadata-grpc-status": "0"}),
            ]

    for response in run(scenario()):
        assert response.status_code == 400, response.text
        assert "cannot travel as gRPC metadata" in response.json()["message"]


def _echo_classes(proxied: Proxied) -> dict[str, Any]:
    """The Echo messages, from the descriptors the proxy serves (no generated code here)."""
    served = httpx.get(f"{proxied.base}/descriptors.binpb", timeout=10).content
    files = descriptor_pb2.FileDescriptorSet.FromString(served)
    return message_factory.GetMessages(list(files.file))


def test_every_streaming_kind_over_native_grpc_on_the_http_port(proxied: Proxied) -> None:
    """Under pyvoy the proxy's one port serves native gRPC too: a grpc.aio client calls the
    upstream through it, every kind, with metadata both ways and the error's details."""
    if proxied.front != "pyvoy":
        pytest.skip("native gRPC on the HTTP port is served under pyvoy")
    classes = _echo_classes(proxied)
    say_request, say_reply = (
        classes["portico.echo.v1.SayRequest"],
        classes["portico.echo.v1.SayReply"],
    )
    number, total = classes["portico.echo.v1.Number"], classes["portico.echo.v1.Total"]
    count_request = classes["portico.echo.v1.CountRequest"]

    def method(kind: Any, name: str, request: Any, reply: Any) -> Any:
        return kind(
            f"/portico.echo.v1.Echo/{name}",
            request_serializer=request.SerializeToString,
            response_deserializer=reply.FromString,
        )

    async def scenario() -> None:
        async with grpc.aio.insecure_channel(proxied.base.removeprefix("http://")) as channel:
            say = method(channel.unary_unary, "Say", say_request, say_reply)
            call = say(say_request(text="hi"), metadata=[("tenant", "blue")], timeout=10)
            reply = await call
            assert (reply.text, reply.metadata["tenant"]) == ("hi", "blue")
            assert ("x-echo", "said") in list(await call.initial_metadata())
            count = method(channel.unary_stream, "Count", count_request, say_reply)
            replies = count(count_request(count=3, interval_ms=1), timeout=10)
            assert [r.text async for r in replies] == ["0", "1", "2"]
            add = method(channel.stream_unary, "Sum", number, total)
            summed = await add(iter([number(value=v) for v in (1, 2, 39)]), timeout=10)
            assert (summed.sum, summed.count) == (42, 3)
            chat = method(channel.stream_stream, "Chat", say_request, say_reply)
            chatted = chat(iter([say_request(text=t) for t in ("ab", "cd")]), timeout=10)
            assert [r.text async for r in chatted] == ["AB", "CD"]
            fail = method(channel.unary_unary, "Fail", say_request, say_reply)
            with pytest.raises(grpc.aio.AioRpcError) as failed:
                await fail(say_request(text="hi"), timeout=10)
            assert failed.value.code() is grpc.StatusCode.FAILED_PRECONDITION
            assert failed.value.details() == "no echo today"
            status = rpc_status.from_call(failed.value)  # type: ignore[arg-type]
            assert status is not None and status.details[0].type_url.endswith("BadRequest")

    run(scenario())


def _frame(message: dict[str, Any], flags: int = 0) -> bytes:
    data = json.dumps(message).encode()
    return bytes([flags]) + len(data).to_bytes(4, "big") + data


def _frames(body: bytes) -> list[tuple[int, bytes]]:
    found = []
    while body:
        size = int.from_bytes(body[1:5], "big")
        found.append((body[0], body[5 : 5 + size]))
        body = body[5 + size :]
    return found


def test_every_streaming_kind_over_connect_and_grpc_web(proxied: Proxied) -> None:
    """Connect's and gRPC-Web's enveloped streams reach the upstream's streams: the server's,
    the client's and (half-duplex) both, each ending in its protocol's end or trailers."""
    connect_json = {"content-type": "application/connect+json"}
    web_json = {"content-type": "application/grpc-web+json", "x-grpc-web": "1"}
    numbers = b"".join(_frame({"value": v}) for v in (1, 2, 39))
    words = b"".join(_frame({"text": t}) for t in ("ab", "cd"))

    async def scenario() -> dict[str, list[tuple[int, bytes]]]:
        calls = {
            "connect Count": ("/api/portico.echo.v1.Echo/Count", connect_json),
            "connect Sum": ("/api/portico.echo.v1.Echo/Sum", connect_json),
            "connect Chat": ("/api/portico.echo.v1.Echo/Chat", connect_json),
            "web Count": ("/portico.echo.v1.Echo/Count", web_json),
            "web Sum": ("/portico.echo.v1.Echo/Sum", web_json),
        }
        bodies = {"Count": _frame({"count": 3, "interval_ms": 1}), "Sum": numbers, "Chat": words}
        found = {}
        async with client(proxied) as http:
            for name, (path, headers) in calls.items():
                reply = await http.post(path, content=bodies[name.split()[1]], headers=headers)
                assert reply.status_code == 200, (name, reply.text)
                found[name] = _frames(reply.content)
        return found

    found = run(scenario())
    texts = [json.loads(m)["text"] for _, m in found["connect Count"][:-1]]
    assert texts == ["0", "1", "2"]
    assert found["connect Count"][-1] == (2, b"{}")
    assert json.loads(found["connect Sum"][0][1]) == {"sum": "42", "count": 3}
    assert [json.loads(m)["text"] for _, m in found["connect Chat"][:-1]] == ["AB", "CD"]
    assert [json.loads(m)["text"] for _, m in found["web Count"][:-1]] == ["0", "1", "2"]
    assert json.loads(found["web Sum"][0][1]) == {"sum": "42", "count": 3}
    for name in ("web Count", "web Sum"):
        flags, trailer = found[name][-1]
        assert flags == 0x80 and b"grpc-status:0" in trailer.replace(b" ", b""), trailer


def test_the_document_says_where_native_grpc_is_served(proxied: Proxied) -> None:
    """The dashboard's "Copy as grpcurl" points there: the proxy's HTTP port under pyvoy, which
    serves native gRPC too; under uvicorn the proxy serves none, and says none."""
    document = httpx.get(f"{proxied.base}/openapi.json", timeout=10)
    assert document.status_code == 200
    said = document.headers.get("portico-grpc-port")
    assert said == (proxied.base.rsplit(":", 1)[1] if proxied.front == "pyvoy" else None)
