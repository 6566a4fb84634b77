"""The server rides out an outage of its PostgreSQL: restarted (``pg_ctl restart -m fast``) and
then stopped for seconds under a small load of every protocol, on uvicorn (with the grpc.aio
port) and on pyvoy (every protocol on one port).

Before, 13 of 824 calls over three restarts answered 500 (uvicorn's bare-text "Internal Server
Error", a JSON code 13 on instance creates) and 46 tracebacks were logged, most through the
gate's re-check of a token's revocation; with the database stopped 1,363 of 1,406 calls did.
Now every answer is the reply or UNAVAILABLE with a retry delay: HTTP 503 with Retry-After where
the protocol answers with a status line of its own, and a ``google.rpc.Status`` carrying
``RetryInfo`` on every protocol. Nothing is logged as a traceback, and afterwards every
background loop runs again (``/readyz?verbose`` says so), writes work and the leader's
simulation runs an instance created then.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from google.rpc import error_details_pb2, status_pb2

from gen.cnct.kaas.api import api_pb2 as kaas_pb2
from gen.cnct.kaas.api import api_pb2_grpc as kaas_grpc
from gen.edgeproto import flavor_pb2, flavor_pb2_grpc
from tests.gateway.wire import frame, frames
from tests.harness import ADMIN_PASSWORD, eventually, run
from tests.reliability.own_postgres import OwnPostgres, own_postgres
from tests.reliability.server import Server, login, start_server

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

OK, UNAVAILABLE = "ok", "unavailable"
# A caller's answer: OK, UNAVAILABLE, or None for any other; and what it was, to show.
Answer = tuple[str | None, str]
PAUSE_SECONDS = 0.02  # between one caller's calls
CALL_TIMEOUT = 30.0
PHASE_TIMEOUT = 60.0  # generous: the machine may be busy
# UNAVAILABLE answers every caller must have had while the database was stopped: seconds.
OUTAGE_ANSWERS = 5
SERVER_ENV = {
    "PORTICO_SIM_NODES": "1",  # the leader's simulation: a node that runs instances
    "PORTICO_SIM_STEP_SECONDS": "0.05",
    # The rate limiter's buckets are kept in the store too.
    "PORTICO_RATE_LIMIT_PER_SECOND": "10000",
}


@pytest.fixture(scope="module")
def postgres() -> Iterator[OwnPostgres]:
    with own_postgres() as server:
        yield server


def test_every_call_rides_out_a_restart_and_a_stop_of_the_database(
    tmp_path: Path, postgres: OwnPostgres, http_server: str
) -> None:
    url = postgres.create_database(f"outage_{http_server}")
    server = start_server(
        tmp_path / "data", env={**SERVER_ENV, "PORTICO_DATABASE_URL": url}, server=http_server
    )
    try:
        server.wait_ready()
        token = login(server)
        try:
            load = run(_outage(server, postgres, token))
            assert load.wrong == [], f"{len(load.wrong)} wrong answers: {load.wrong[:5]}"
        except AssertionError as failed:
            # The server's traceback says which path answered a wrong status.
            raise AssertionError(f"{failed}\nthe server's log:\n{server.log()[-20000:]}") from None
        run(_everything_runs_again(server, token))
    finally:
        server.stop()
        postgres.start_again()  # for the next test, if this one failed while it was stopped
    log = server.log()
    assert "Traceback" not in log, log
    assert "Internal Server Error" not in log, log


async def _outage(server: Server, postgres: OwnPostgres, token: str) -> Load:
    async with (
        httpx.AsyncClient(base_url=server.base_url, timeout=CALL_TIMEOUT) as http,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel,
    ):
        load = Load(http, channel, token)
        try:
            await load.answered(OK, 1, "every caller answered before the outage")
            await asyncio.to_thread(postgres.restart)
            await load.answered(OK, 1, "every caller answered after the restart")
            await asyncio.to_thread(postgres.stop)
            await load.answered(UNAVAILABLE, OUTAGE_ANSWERS, "every caller met the database down")
            await eventually(
                lambda: _says_no_one_leads(http), PHASE_TIMEOUT, what="/readyz says none leads"
            )
            await asyncio.to_thread(postgres.start)
            await load.answered(OK, 1, "every caller answered once the database was back")
        finally:
            await load.stop()
        return load


async def _says_no_one_leads(http: httpx.AsyncClient) -> bool:
    """Whether /readyz is 503 saying the store does not answer and the leader election cannot
    reach the database (the leader stepped down: its loops stopped with it)."""
    reply = await http.get("/readyz")
    said = reply.json()
    election = said.get("not_running", {}).get("leader_election", "")
    return reply.status_code == 503 and "store" in said and "cannot reach" in election


async def _everything_runs_again(server: Server, token: str) -> None:
    headers = {"authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=server.base_url, timeout=CALL_TIMEOUT) as http:

        async def every_loop_running() -> dict[str, Any] | None:
            ready = (await http.get("/readyz", params={"verbose": ""})).json()
            background = ready["background"]
            loops = background["loops"].values()
            running = all(loop["state"] == "running" for loop in loops)
            settled = background["leader"] and running and "not_running" not in ready
            return ready if settled else None

        ready = await eventually(every_loop_running, PHASE_TIMEOUT, what="every loop runs again")
        assert ready["status"] == "ready"
        # The outage was seen: the loops that met it say how often they failed.
        assert any(loop.get("failures") for loop in ready["background"]["loops"].values()), ready
        flavor = {"key": {"name": "after-the-outage"}, "ram": 1024, "vcpus": 1}
        created = await http.post("/create/flavor", json=flavor, headers=headers)
        assert created.status_code == 200, created.text
        # The leader's scheduling and runtime simulation take an instance created now to
        # running, and the call's stream (a watch of it) follows it there.
        instance = {
            "name": "after-the-outage",
            "uri": "docker.io/library/nginx",
            "resource": {"limit": {"cpu": 1, "memory": 64, "disk": 1}},
        }
        seen: list[str] = []
        try:
            async with asyncio.timeout(PHASE_TIMEOUT):
                async with http.stream(
                    "POST", "/v1/scheduler/instances", json=instance, headers=headers
                ) as stream:
                    async for line in stream.aiter_lines():
                        seen.append(line)
                        result = json.loads(line)["result"] if line.strip() else {}
                        if result.get("status") == "RUNNING":
                            return
        except TimeoutError:
            pass
        ready = (await http.get("/readyz", params={"verbose": ""})).text
        raise AssertionError(f"the instance did not run: {seen}; {ready}")


class Load:
    """Callers of every protocol, each calling in a loop until :meth:`stop`; the answers
    counted by caller and kind, and every answer that was neither kind."""

    def __init__(self, http: httpx.AsyncClient, channel: grpc.aio.Channel, token: str) -> None:
        self.http = http
        self.headers = {"authorization": f"Bearer {token}"}
        self.metadata = (("authorization", f"Bearer {token}"),)
        self.counts: Counter[tuple[str, str]] = Counter()
        self.wrong: list[str] = []
        self._stopping = asyncio.Event()
        self._names = itertools.count()
        clusters = kaas_grpc.ClusterStub(channel)
        flavors = flavor_pb2_grpc.FlavorApiStub(channel)
        self.callers: dict[str, Callable[[], Awaitable[Answer]]] = {
            "REST read (the gate's re-check)": self._rest_read,
            "REST write": lambda: self._rest_write(keyed=False),
            "REST write with an idempotency key": lambda: self._rest_write(keyed=True),
            "REST login (the login throttle)": self._rest_login,
            "REST server stream (NDJSON)": self._rest_stream,
            "Connect": self._connect,
            "gRPC-Web": self._grpc_web,
            "native gRPC": lambda: _grpc_unary(clusters, self.metadata),
            "native gRPC server stream": lambda: _grpc_stream(flavors, self.metadata),
        }
        self._tasks = [
            asyncio.ensure_future(self._calling(name, call)) for name, call in self.callers.items()
        ]

    async def answered(self, kind: str, at_least: int, what: str) -> None:
        """Wait until every caller had ``at_least`` answers of ``kind`` from now on."""
        before = Counter(self.counts)

        async def every_caller() -> bool:
            if self.wrong:  # no need to wait any longer
                raise AssertionError(f"{len(self.wrong)} wrong answers: {self.wrong[:5]}")
            return all(
                self.counts[name, kind] - before[name, kind] >= at_least for name in self.callers
            )

        await eventually(every_caller, PHASE_TIMEOUT, what=what)

    async def stop(self) -> None:
        self._stopping.set()
        await asyncio.gather(*self._tasks)

    async def _calling(self, name: str, call: Callable[[], Awaitable[Answer]]) -> None:
        while not self._stopping.is_set():
            try:
                kind, answered = await call()
            except grpc.aio.AioRpcError as error:
                kind, answered = _grpc_error(error), f"{error.code()} {error.details()}"
            except httpx.HTTPError as error:
                kind, answered = None, repr(error)
            if kind is None:
                self.wrong.append(f"{name}: {answered}")
            else:
                self.counts[name, kind] += 1
            await asyncio.sleep(PAUSE_SECONDS)

    async def _rest_read(self) -> Answer:
        return _http(await self.http.get("/api/v1/cluster/list", headers=self.headers))

    async def _rest_write(self, keyed: bool) -> Answer:
        name = f"flavor-{next(self._names)}"
        headers = {**self.headers, "idempotency-key": name} if keyed else self.headers
        body = {"key": {"name": name}, "ram": 1024, "vcpus": 1}
        return _http(await self.http.post("/create/flavor", json=body, headers=headers))

    async def _rest_login(self) -> Answer:
        body = {"username": "admin", "password": ADMIN_PASSWORD}
        return _http(await self.http.post("/v1/auth:login", json=body))

    async def _rest_stream(self) -> Answer:
        reply = await self.http.post("/show/flavor", json={}, headers=self.headers)
        if reply.status_code != 200:
            return _http(reply)
        # Once the stream's 200 went out, a failure is its last line.
        lines = [json.loads(line) for line in reply.text.splitlines() if line.strip()]
        error = lines[-1].get("error") if lines else None
        if error is None:
            return OK, ""
        retry = any(d.get("@type", "").endswith("RetryInfo") for d in error.get("details", []))
        return (UNAVAILABLE if error.get("code") == 14 and retry else None), reply.text[-300:]

    async def _connect(self) -> Answer:
        headers = {**self.headers, "connect-protocol-version": "1"}
        reply = await self.http.post(
            "/cnct.kaas.api.Cluster/GetClusterList", json={}, headers=headers
        )
        return _http(reply, code="unavailable", detail_type="type")

    async def _grpc_web(self) -> Answer:
        headers = {**self.headers, "content-type": "application/grpc-web+proto"}
        body = frame(kaas_pb2.GetClusterListMsg().SerializeToString())
        reply = await self.http.post(
            "/cnct.kaas.api.Cluster/GetClusterList", content=body, headers=headers
        )
        said = f"{reply.status_code} {reply.headers} {reply.content[-300:]!r}"
        if reply.status_code != 200:
            return None, said
        trailers = dict(reply.headers)  # a refusal may come as headers only
        for flags, payload in frames(reply.content):
            if flags & 0x80:
                for line in payload.decode().split("\r\n"):
                    name, _, value = line.partition(":")
                    trailers[name.strip().lower()] = value.strip()
        if trailers.get("grpc-status") == "0":
            return OK, ""
        details = trailers.get("grpc-status-details-bin", "")
        status = status_pb2.Status.FromString(base64.b64decode(details + "=" * (-len(details) % 4)))
        return (UNAVAILABLE if status.code == 14 and _retry_info(status) else None), said


def _http(reply: httpx.Response, code: object = 14, detail_type: str = "@type") -> Answer:
    """A reply, or UNAVAILABLE as HTTP says it: 503 with Retry-After and a Status body whose
    details carry the retry delay."""
    said = f"{reply.status_code} {reply.headers.get('content-type')} {reply.text[:300]!r}"
    if reply.status_code == 200:
        return OK, ""
    if reply.status_code != 503 or not reply.headers.get("retry-after", "").isdigit():
        return None, said
    body = reply.json()
    details = body.get("details", [])
    retry = any(str(d.get(detail_type, "")).endswith("RetryInfo") for d in details)
    return (UNAVAILABLE if body.get("code") == code and retry else None), said


async def _grpc_unary(clusters: kaas_grpc.ClusterStub, metadata: Any) -> Answer:
    await clusters.GetClusterList(kaas_pb2.GetClusterListMsg(), metadata=metadata)
    return OK, ""


async def _grpc_stream(flavors: flavor_pb2_grpc.FlavorApiStub, metadata: Any) -> Answer:
    async for _ in flavors.ShowFlavor(flavor_pb2.Flavor(), metadata=metadata):
        pass
    return OK, ""


def _grpc_error(error: grpc.aio.AioRpcError) -> str | None:
    """UNAVAILABLE with the server's Status (grpc's own, when no server answered, has none)."""
    if error.code() is not grpc.StatusCode.UNAVAILABLE:
        return None
    for name, value in error.trailing_metadata() or ():
        if name == "grpc-status-details-bin" and isinstance(value, bytes):
            return UNAVAILABLE if _retry_info(status_pb2.Status.FromString(value)) else None
    return None


def _retry_info(status: status_pb2.Status) -> bool:
    return any(detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR) for detail in status.details)
