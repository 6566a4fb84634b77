"""/metrics after real calls on both transports: the counters and histograms an operator reads."""

from __future__ import annotations

from typing import Any

import grpc
import httpx
import pytest

import app.main
from app.auth import accounts
from app.gateway.registry import Method, Registry
from app.observe.calls import Telemetry
from app.observe.exposition import serve_metrics
from app.observe.loop_counters import LocalHistogram
from gen.scheduler import scheduler_pb2 as scheduler
from gen.scheduler import scheduler_pb2_grpc as scheduler_grpc
from tests.harness import Running, run, running
from tests.observe.probes import Samples, delta, grpc_unary, parse, value
from tests.services.kudo.world import bearer, eventually, instance

REGISTRY = Registry.from_package("gen")
VERSION = REGISTRY.method("/cnct.kaas.api.Cluster/GetVersionInformation")
TOKEN = "scrape-token-0123456789"


async def scrape(server: Running, token: str = "") -> Samples:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    reply = await server.http.get("/metrics", headers=headers)
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"].startswith("text/plain; version=")
    return parse(reply.text)


def test_rest_and_grpc_calls_move_their_counters_and_histograms(tmp_path):
    async def scenario() -> tuple[Samples, Samples]:
        async with running(tmp_path) as server:
            token = await server.login()
            before = await scrape(server)
            auth = {"authorization": f"Bearer {token}"}
            for _ in range(3):
                assert (await server.http.get("/api/v1/version", headers=auth)).status_code == 200
            assert (await server.http.get("/api/v1/cluster/list", headers=auth)).status_code == 200
            assert (await server.http.get("/api/v1/version")).status_code == 401
            assert (await server.http.get("/no/such/path")).status_code == 404
            for _ in range(2):
                await grpc_unary(server.channel, VERSION, (("authorization", f"Bearer {token}"),))
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await grpc_unary(server.channel, VERSION, (("authorization", "Bearer forged"),))
            assert refused.value.code() is grpc.StatusCode.UNAUTHENTICATED
            # A method nobody serves is counted as over REST (grpc answered it unseen before).
            unknown = server.channel.unary_unary("/no.such.Service/Method")
            with pytest.raises(grpc.aio.AioRpcError) as missing:
                await unknown(b"")
            assert missing.value.code() is grpc.StatusCode.UNIMPLEMENTED
            assert "/no.such.Service/Method" in (missing.value.details() or "")
            bad = await server.http.post(
                "/v1/auth:login", json={"username": "admin", "password": "wrong-password"}
            )
            assert bad.status_code == 401
            # Connect and gRPC-Web record the outcome that went out, not a blanket OK.
            connect = {"content-type": "application/proto", **auth}
            path = f"/api{VERSION.grpc_path}"
            assert (await server.http.post(path, headers=connect)).status_code == 200
            anonymous = await server.http.post(path, headers={"content-type": "application/proto"})
            assert anonymous.status_code == 401
            web = {"content-type": "application/grpc-web+proto"}
            refused_web = await server.http.post(VERSION.grpc_path, content=b"\0" * 5, headers=web)
            assert b"grpc-status: 16" in refused_web.content
            return before, await scrape(server)

    before, after = run(scenario())
    rpc = VERSION.full_name

    def calls(transport: str, code: str, http_status: str, rpc: str = rpc) -> float:
        labels = {"transport": transport, "rpc": rpc, "code": code, "http_status": http_status}
        return delta(before, after, "portico_requests_total", **labels)

    assert calls("rest", "OK", "200") == 3
    assert calls("rest", "UNAUTHENTICATED", "401") == 1
    assert calls("grpc", "OK", "") == 2
    assert calls("grpc", "UNAUTHENTICATED", "") == 1
    assert calls("rest", "NOT_FOUND", "404", rpc="unmatched") == 1
    assert calls("grpc", "UNIMPLEMENTED", "", rpc="unmatched") == 1
    assert calls("connect", "OK", "200") == 1
    assert calls("connect", "UNAUTHENTICATED", "401") == 1
    assert calls("grpc-web", "UNAUTHENTICATED", "200") == 1  # the status is in the trailers
    assert calls("grpc-web", "OK", "200") == 0
    assert delta(before, after, "portico_token_refusals_total", reason="malformed") == 1
    seconds = "portico_request_duration_seconds_count"
    assert delta(before, after, seconds, transport="rest", rpc=rpc) == 4
    assert delta(before, after, seconds, transport="grpc", rpc=rpc) == 3
    # The histogram's buckets moved too, and the slowest bucket holds every call.
    assert delta(before, after, "portico_request_duration_seconds_bucket", transport="grpc",
                 rpc=rpc, le="+Inf") == 3  # fmt: skip
    assert delta(before, after, "portico_request_duration_seconds_sum", transport="grpc", rpc=rpc)
    # The gate's outcomes and the store's operations.
    assert delta(before, after, "portico_logins_total", outcome="failure") == 1
    assert delta(before, after, "portico_token_refusals_total", reason="missing") == 3
    assert delta(before, after, "portico_store_operation_duration_seconds_count", operation="list")
    # Every label value comes from the descriptors or a fixed list: no path, no user name.
    for name, labels in after:
        for label, text in labels:
            assert "/no/such" not in text and "admin" not in text, (name, label, text)
            assert "no.such" not in text, (name, label, text)


def test_streams_count_as_open_while_they_run_and_their_messages_as_sent(tmp_path):
    listen = REGISTRY.method("/v1alpha.PublicAPI/ListenEvents")
    show = REGISTRY.method("/edgeproto.ControllerApi/ShowController")
    open_streams = "portico_open_streams"

    def stream(server: Running, method: Method, token: str) -> Any:
        return server.channel.unary_stream(
            method.grpc_path,
            request_serializer=method.input_type.SerializeToString,
            response_deserializer=method.output_type.FromString,
        )(method.input_type(), metadata=(("authorization", f"Bearer {token}"),))

    async def scenario() -> tuple[int, float]:
        async with running(tmp_path) as server:
            token = await server.login()
            call = stream(server, listen, token)

            async def listening() -> bool:
                now = await scrape(server)
                return value(now, open_streams, transport="grpc", rpc=listen.full_name) == 1

            await eventually(listening)
            call.cancel()

            async def closed() -> bool:
                now = await scrape(server)
                return value(now, open_streams, transport="grpc", rpc=listen.full_name) == 0

            await eventually(closed)

            async def controllers() -> list[Any]:
                before = await scrape(server)
                replies = [reply async for reply in stream(server, show, token)]
                after = await scrape(server)
                sent = delta(
                    before,
                    after,
                    "portico_stream_messages_sent_total",
                    transport="grpc",
                    rpc=show.full_name,
                )
                return [(len(replies), sent)] if replies else []

            (count, sent), *_ = await eventually(controllers)
            return count, sent

    count, sent = run(scenario())
    assert count >= 1
    assert sent == count


def test_the_store_watches_leader_and_simulation_move_their_metrics(tmp_path, monkeypatch):
    # Sampled every 15 s when served; a test cannot wait for that.
    sample = app.main.sample_event_log
    monkeypatch.setattr(app.main, "sample_event_log", lambda store: sample(store, 0.05))

    async def scenario() -> tuple[Samples, Samples, int]:
        async with running(tmp_path, sim_nodes=1) as server:
            token = await server.login()
            before = await scrape(server)
            # Create streams the instance's changes to its caller as they commit: a watch of the
            # event log. The scheduler writes them; the simulated node runs it, step by step.
            stub = scheduler_grpc.InstanceServiceStub(server.channel)
            create = stub.Create(instance("web"), metadata=bearer(token))
            async for reply in create:
                if reply.status == scheduler.RUNNING:
                    break
            create.cancel()
            assert server.portico.store is not None
            _, head = await server.portico.store.event_log_size()

            async def sampled() -> Samples | None:
                # The log's head as sampled, and a step of the simulation woken since `before`:
                # one run of the whole suite saw none by the time the head was sampled (cause not
                # found), so it is waited for; a simulation that never steps still fails here.
                now = await scrape(server)
                lag = delta(before, now, "portico_sim_step_lag_seconds_count")
                return (
                    now if value(now, "portico_event_log_head_revision") >= head and lag else None
                )

            return before, await eventually(sampled), head

    before, after, head = run(scenario())
    assert head > 0
    for lock in ("process", "database"):
        assert delta(before, after, "portico_store_write_lock_wait_seconds_count", lock=lock) > 0
    commits = delta(before, after, "portico_store_group_commits_total")
    assert commits > 0
    assert delta(before, after, "portico_store_group_committed_transactions_total") >= commits
    stored = "portico_store_operation_duration_seconds_count"
    assert delta(before, after, stored, operation="create") > 0
    assert value(after, "portico_event_log_events") >= 1
    assert delta(before, after, "portico_watch_lag_seconds_count") > 0
    assert delta(before, after, "portico_sim_step_lag_seconds_count") > 0
    assert value(after, "portico_leader") == 1


def test_metrics_can_require_a_token(tmp_path):
    async def scenario() -> tuple[int, int, int]:
        async with running(tmp_path, metrics_token=TOKEN) as server:
            missing = (await server.http.get("/metrics")).status_code
            wrong = await server.http.get("/metrics", headers={"authorization": "Bearer nope"})
            await scrape(server, TOKEN)
            return missing, wrong.status_code, len(wrong.text)

    missing, wrong, _ = run(scenario())
    assert missing == 401
    assert wrong == 401


def test_metrics_off_serves_and_records_nothing(tmp_path):
    async def scenario() -> int:
        async with running(tmp_path, metrics=False) as server:
            token = await server.login()
            await server.http.get("/api/v1/version", headers={"authorization": f"Bearer {token}"})
            return (await server.http.get("/metrics")).status_code

    assert run(scenario()) == 404


def test_a_metrics_port_serves_metrics_apart_from_the_api(tmp_path):
    server, port = serve_metrics("127.0.0.1", 0, TOKEN)
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        assert httpx.get(url).status_code == 401
        reply = httpx.get(url, headers={"authorization": f"Bearer {TOKEN}"})
        assert reply.status_code == 200
        assert "portico_requests_total" in reply.text
        assert httpx.get(f"http://127.0.0.1:{port}/other").status_code == 404
    finally:
        server.shutdown()
        server.server_close()


def test_openmetrics_is_served_to_a_scraper_that_asks_for_it(tmp_path):
    """Prometheus asks for OpenMetrics first; it gets it, parseable by the OpenMetrics parser
    (which insists on the ``# EOF`` ending), on the API port and on the metrics port alike;
    a scraper that asks for nothing in particular keeps the text format (see ``scrape``)."""
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    accept = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"

    async def scenario() -> httpx.Response:
        async with running(tmp_path) as server:
            return await server.http.get("/metrics", headers={"accept": accept})

    reply = run(scenario())
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("application/openmetrics-text; version=1.0.0")
    names = {family.name for family in text_string_to_metric_families(reply.text)}
    assert "portico_requests" in names  # OpenMetrics names a counter without its _total

    server, port = serve_metrics("127.0.0.1", 0, "")
    try:
        apart = httpx.get(f"http://127.0.0.1:{port}/metrics", headers={"accept": accept})
    finally:
        server.shutdown()
        server.server_close()
    assert apart.headers["content-type"].startswith("application/openmetrics-text")
    assert apart.text.endswith("# EOF\n")


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"metrics_port": 70000}, "PORTICO_METRICS_PORT"),
        ({"metrics_port": 8080}, "PORTICO_METRICS_PORT"),
        ({"metrics_token": "short"}, "PORTICO_METRICS_TOKEN"),
        ({"metrics_token": "has a space in it, sixteen+"}, "PORTICO_METRICS_TOKEN"),
        ({"metrics": False, "metrics_port": 9100}, "PORTICO_METRICS"),
        ({"log_format": "xml"}, "PORTICO_LOG_FORMAT"),
    ],
)
def test_observability_settings_are_checked_at_start(changes, named):
    from app.settings.config import ConfigurationError, Settings

    with pytest.raises(ConfigurationError, match=named):
        Settings(**changes)


def test_observations_kept_locally_reach_prometheus_as_if_observed_directly():
    from prometheus_client import CollectorRegistry, Histogram

    registry = CollectorRegistry()
    direct = Histogram("direct_seconds", "", registry=registry, buckets=(0.001, 0.01, 0.1))
    kept = Histogram("kept_seconds", "", registry=registry, buckets=(0.001, 0.01, 0.1))
    local = LocalHistogram(kept)
    values = [0.0005, 0.001, 0.002, 0.01, 0.05, 0.1, 0.5, 3.0, 0.0]
    for v in values:
        direct.observe(v)
        local.observe(v)
    assert registry.get_sample_value("kept_seconds_count") == 0  # nothing until the flush
    local.flush()
    local.flush()  # a second flush adds nothing more
    for suffix, labels in [("_count", {}), ("_sum", {})] + [
        ("_bucket", {"le": le}) for le in ("0.001", "0.01", "0.1", "+Inf")
    ]:
        assert registry.get_sample_value(f"kept_seconds{suffix}", labels) == (
            registry.get_sample_value(f"direct_seconds{suffix}", labels)
        ), (suffix, labels)


def test_every_servers_telemetry_records_into_the_same_locals():
    """A process building several servers' telemetry (an embedding, the test suite) flushes one
    local per metric child every second, not one more per server for as long as it runs."""
    first, second = Telemetry(metrics=True), Telemetry(metrics=True)
    rpc = "scheduler.NodeService/Status"
    for name in ("seconds", "messages"):
        assert getattr(first.rpc("grpc", rpc, True), name) is getattr(
            second.rpc("grpc", rpc, True), name
        ), name
    assert first.rpc("grpc", rpc).count("OK", 0) is second.rpc("grpc", rpc).count("OK", 0)


def test_logins_and_refused_tokens_count_by_outcome_and_reason(tmp_path):
    async def scenario() -> tuple[Samples, Samples]:
        async with running(tmp_path) as server:
            store = server.portico.store
            assert store is not None
            before = await scrape(server)
            admin = {"authorization": f"Bearer {await server.login()}"}
            viewer = {"authorization": f"Bearer {await server.add_account('vera', 'viewer')}"}
            # A viewer may read but not write.
            refused = await server.http.post("/api/v1/cluster", json={}, headers=viewer)
            assert refused.status_code == 403
            # A disabled account's token is refused once the gate rechecks it (within a second).
            await accounts.set_enabled(store, "vera", False)

            async def disabled() -> bool:
                reply = await server.http.get("/api/v1/version", headers=viewer)
                return reply.status_code == 401

            await eventually(disabled)
            # A token issued before its account's password changed.
            paula = {"authorization": f"Bearer {await server.add_account('paula', 'viewer')}"}
            assert server.portico.gate is not None
            await accounts.set_password(store, server.portico.gate.hasher, "paula", "new-pass")

            async def password_changed() -> bool:
                reply = await server.http.get("/api/v1/version", headers=paula)
                return reply.status_code == 401

            await eventually(password_changed)
            # A token whose signature is not ours.
            header, claims, _ = admin["authorization"].split(".")
            forged = {"authorization": f"{header}.{claims}.AAAA"}
            assert (await server.http.get("/api/v1/version", headers=forged)).status_code == 401
            # A token after its logout.
            assert (await server.http.post("/v1/auth:logout", headers=admin)).status_code == 200
            assert (await server.http.get("/api/v1/version", headers=admin)).status_code == 401
            return before, await scrape(server)

    before, after = run(scenario())
    assert delta(before, after, "portico_logins_total", outcome="success") == 3
    for reason in ("permission_denied", "account", "invalid", "revoked", "password_changed"):
        assert delta(before, after, "portico_token_refusals_total", reason=reason) == 1, reason


def test_failed_logins_count_and_a_lockout_shows(tmp_path):
    async def scenario() -> tuple[Samples, Samples]:
        async with running(tmp_path) as server:
            before = await scrape(server)
            wrong = {"username": "admin", "password": "wrong-password"}
            statuses = [
                (await server.http.post("/v1/auth:login", json=wrong)).status_code for _ in range(6)
            ]
            assert statuses == [401] * 5 + [429]
            return before, await scrape(server)

    before, after = run(scenario())
    assert delta(before, after, "portico_logins_total", outcome="failure") == 5
    assert delta(before, after, "portico_logins_total", outcome="throttled") == 1
    assert delta(before, after, "portico_login_lockouts_total") >= 1
