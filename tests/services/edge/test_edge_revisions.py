"""Revisions as clients see them: ETag and 304 on Show, If-Match on Update and Delete."""

from __future__ import annotations

import urllib.parse
from typing import Any

import grpc
import pytest

from gen.edgeproto import flavor_pb2, flavor_pb2_grpc
from tests.gateway.wire import frame, frames
from tests.harness import run, running
from tests.services.edge.world import bearer, rest_api

TINY = {"key": {"name": "m1.tiny"}, "ram": 512, "vcpus": 1}


def test_show_by_key_has_an_etag_and_if_none_match_is_304_until_it_changes(tmp_path) -> None:
    async def scenario() -> None:
        async with running(tmp_path) as server:
            api = await rest_api(server)
            await api.ok("/create/flavor", TINY)
            body = {"key": TINY["key"]}
            first = await api.http.post("/show/flavor", json=body, headers=api.headers)
            etag = first.headers["etag"]
            assert first.headers["cache-control"] == "no-cache"
            assert etag.strip('"').isdigit()
            again = await api.http.post(
                "/show/flavor", json=body, headers={**api.headers, "if-none-match": etag}
            )
            assert (again.status_code, again.content) == (304, b"")
            update = {"key": TINY["key"], "fields": ["4"], "vcpus": 2}
            await api.ok("/update/flavor", update)
            changed = await api.http.post(
                "/show/flavor", json=body, headers={**api.headers, "if-none-match": etag}
            )
            assert changed.status_code == 200
            assert changed.headers["etag"] != etag
            # A list's ETag changes when an object joins it.
            whole = await api.http.post("/show/flavor", json={}, headers=api.headers)
            await api.ok("/create/flavor", {**TINY, "key": {"name": "m1.small"}})
            grown = await api.http.post(
                "/show/flavor",
                json={},
                headers={**api.headers, "if-none-match": whole.headers["etag"]},
            )
            assert grown.status_code == 200
            assert len(grown.text.splitlines()) == 2

    run(scenario())


def test_a_show_over_sse_still_answers_though_its_headers_went_out_before_the_etag(tmp_path):
    # SSE sends its headers at once; the etag the servicer names after that has no header left
    # to go in. The stream must answer all the same (it ended in an internal error).
    async def scenario() -> None:
        async with running(tmp_path) as server:
            api = await rest_api(server)
            await api.ok("/create/flavor", TINY)
            sse = {**api.headers, "accept": "text/event-stream"}
            reply = await api.http.post("/show/flavor", json={}, headers=sse)
            assert reply.status_code == 200
            assert "m1.tiny" in reply.text
            assert "error" not in reply.text and "internal" not in reply.text

    run(scenario())


@pytest.mark.parametrize("verb", ["update", "delete"])
def test_a_stale_if_match_is_412_naming_the_current_revision_and_changes_nothing(
    tmp_path, verb
) -> None:
    async def scenario() -> None:
        async with running(tmp_path) as server:
            api = await rest_api(server)
            current = await _tiny_flavor_etag(api)
            body = {"key": TINY["key"], "fields": ["4"], "vcpus": 2}
            stale = await api.http.post(
                f"/{verb}/flavor", json=body, headers={**api.headers, "if-match": '"stale"'}
            )
            assert stale.status_code == 412
            error = stale.json()
            assert error["code"] == grpc.StatusCode.FAILED_PRECONDITION.value[0]
            assert current in error["message"]
            [flavor] = await api.show("flavor", {"key": TINY["key"]})
            assert flavor["vcpus"] in (1, "1")  # nothing changed
            fresh = await api.http.post(
                f"/{verb}/flavor", json=body, headers={**api.headers, "if-match": current}
            )
            assert fresh.status_code == 200, fresh.text
            # Without the header, today's clients see no difference.
            plain = await api.http.post(
                "/create/flavor", json={**TINY, "key": {"name": "m2"}}, headers=api.headers
            )
            assert plain.status_code == 200

    run(scenario())


def test_grpc_reads_the_etag_in_metadata_and_writes_with_if_match(tmp_path) -> None:
    async def scenario() -> None:
        async with running(tmp_path) as server:
            api = await rest_api(server)
            await api.ok("/create/flavor", TINY)
            stub = flavor_pb2_grpc.FlavorApiStub(server.channel)
            key = flavor_pb2.FlavorKey(name="m1.tiny")
            call = stub.ShowFlavor(flavor_pb2.Flavor(key=key), metadata=bearer(api.token))
            etag = dict(await call.initial_metadata())["etag"]
            assert [f.key.name async for f in call] == ["m1.tiny"]
            update = flavor_pb2.Flavor(key=key, vcpus=4, fields=["4"])
            with pytest.raises(grpc.aio.AioRpcError) as failed:
                await stub.UpdateFlavor(update, metadata=(*bearer(api.token), ("if-match", '"1"')))
            assert failed.value.code() is grpc.StatusCode.FAILED_PRECONDITION
            assert etag in (failed.value.details() or "")
            await stub.UpdateFlavor(update, metadata=(*bearer(api.token), ("if-match", etag)))

    run(scenario())


def test_connect_writes_honour_if_match(tmp_path) -> None:
    async def scenario() -> None:
        async with running(tmp_path) as server:
            api = await rest_api(server)
            await api.ok("/create/flavor", TINY)
            path = "/edgeproto.FlavorApi/UpdateFlavor"
            body = {"key": TINY["key"], "fields": ["4"], "vcpus": 3}
            headers = {
                **api.headers,
                "content-type": "application/json",
                "connect-protocol-version": "1",
            }
            stale = await api.http.post(path, json=body, headers={**headers, "if-match": '"1"'})
            assert stale.json()["code"] == "failed_precondition", stale.text
            assert "If-Match" in stale.json()["message"]
            [flavor] = await api.show("flavor", {"key": TINY["key"]})
            assert flavor["vcpus"] in (1, "1")
            plain = await api.http.post(path, json=body, headers=headers)
            assert plain.status_code == 200, plain.text

    run(scenario())


def test_grpc_web_writes_honour_if_match(tmp_path) -> None:
    async def scenario() -> None:
        async with running(tmp_path) as server:
            api = await rest_api(server)
            current = await _tiny_flavor_etag(api)
            path = "/edgeproto.FlavorApi/UpdateFlavor"
            update = flavor_pb2.Flavor(key=flavor_pb2.FlavorKey(name="m1.tiny"), vcpus=3)
            update.fields.append("4")
            headers = {**api.headers, "content-type": "application/grpc-web+proto"}
            body = frame(update.SerializeToString())
            stale = await api.http.post(path, content=body, headers={**headers, "if-match": '"1"'})
            ((flags, trailer),) = frames(stale.content)
            assert flags == 0x80 and b"grpc-status: 9" in trailer  # FAILED_PRECONDITION
            fields = dict(line.split(": ", 1) for line in trailer.decode().split("\r\n") if line)
            # The message (percent-encoded, as gRPC says it) names the current revision.
            assert current in urllib.parse.unquote(fields["grpc-message"])
            [flavor] = await api.show("flavor", {"key": TINY["key"]})
            assert flavor["vcpus"] in (1, "1")  # nothing changed
            fresh = await api.http.post(
                path, content=body, headers={**headers, "if-match": current}
            )
            *_, (end_flags, end) = frames(fresh.content)
            assert end_flags == 0x80 and b"grpc-status: 0" in end, end
            [flavor] = await api.show("flavor", {"key": TINY["key"]})
            assert flavor["vcpus"] in (3, "3")

    run(scenario())


async def _tiny_flavor_etag(api: Any) -> str:
    """Create the tiny flavor; the ETag its Show answers with."""
    await api.ok("/create/flavor", TINY)
    shown = await api.http.post("/show/flavor", json={"key": TINY["key"]}, headers=api.headers)
    return str(shown.headers["etag"])
