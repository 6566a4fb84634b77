"""ETag and 304 on REST replies: HTTP's validators from the revision a servicer names."""

from __future__ import annotations

from typing import Any

from .conftest import run, serving
from .shelf import RevisionedShelf, pb


def get(headers: dict[str, str], name: str = "a") -> Any:
    async def call() -> Any:
        async with serving(servicer=RevisionedShelf()) as served:
            return await served.http.get(f"/v1/shelves/s/things/{name}", headers=headers)

    return run(call())


def test_the_reply_revision_is_the_etag_and_clients_must_revalidate() -> None:
    response = get({})
    assert response.status_code == 200
    assert response.headers["etag"] == '"42"'
    assert response.headers["cache-control"] == "no-cache"


def test_if_none_match_with_the_current_etag_is_304_without_a_body() -> None:
    response = get({"if-none-match": 'W/"41", "42"'})
    assert response.status_code == 304
    assert response.content == b""
    assert response.headers["etag"] == '"42"'


def test_if_none_match_with_another_etag_gets_the_whole_reply() -> None:
    response = get({"if-none-match": '"41"'})
    assert response.status_code == 200
    assert response.json()["name"] == "shelves/s/things/a"


def test_the_etag_is_in_the_grpc_reply_metadata_too() -> None:
    async def call() -> Any:
        async with serving(servicer=RevisionedShelf()) as served:
            reply = served.stub.GetThing(pb.GetThingRequest(name="shelves/s/things/a"))
            return await reply.initial_metadata()

    assert ("etag", '"42"') in tuple(run(call()))
