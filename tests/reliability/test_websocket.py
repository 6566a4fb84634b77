"""Item: a WebSocket upgrade is authenticated before it is accepted (a refused caller gets HTTP
401/403, never an open socket), every frame is held to the body limit, and input is never echoed
(a 10 MB frame was once parsed in full and echoed in the error)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.harness import run, running, uvicorn_serving

PATH = "/v1/edge/notices:stream"  # edgeproto.NotifyApi.StreamNotice, bidirectional, admin only
LIMIT = 64 * 1024


@pytest.mark.parametrize(("role", "status"), [(None, 401), ("operator", 403)])
def test_a_refused_caller_gets_an_http_answer_not_a_socket(
    tmp_path: Path, role: str | None, status: int
) -> None:
    async def scenario() -> None:
        async with running(tmp_path) as server, uvicorn_serving(server.portico.http_app) as at:
            headers = {}
            if role is not None:
                token = await server.add_account("someone", role)
                headers["authorization"] = f"Bearer {token}"
            with pytest.raises(InvalidStatus) as refused:
                async with connect(f"ws://{at}{PATH}", additional_headers=headers):
                    pass
            response = refused.value.response
            assert response.status_code == status
            assert json.loads(response.body)["code"] in (7, 16)

    run(scenario())


def test_a_frame_over_the_body_limit_is_refused_without_echo(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with (
            running(tmp_path, max_body_bytes=LIMIT) as server,
            uvicorn_serving(server.portico.http_app) as at,
        ):
            token = await server.login()
            headers = {"authorization": f"Bearer {token}"}
            async with connect(
                f"ws://{at}{PATH}", additional_headers=headers, max_size=None
            ) as socket:
                await socket.send(json.dumps({"action": "A" * (4 * LIMIT)}))
                answers = [message async for message in socket]
            assert len(answers) == 1
            assert "AAAAAAAA" not in answers[0]
            assert len(answers[0]) < 2048
            error = json.loads(answers[0])["error"]
            assert error["code"] == 8  # RESOURCE_EXHAUSTED: over the limit

    run(scenario())
