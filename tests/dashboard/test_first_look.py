"""What a newcomer sees on a first look at the dashboard: pod ids whole or visibly cut, only the
actions the scheduler accepts, a cloudlet's usage as the resource manager keeps it, and a login
form that is not an error before anything is typed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from selenium.webdriver.remote.webdriver import WebDriver

from gen.edgeproto import refs_pb2, refs_pb2_grpc
from gen.scheduler import scheduler_pb2, scheduler_pb2_grpc
from tests.dashboard.conftest import LiveServer, live_portico
from tests.dashboard.pages import by_id, css, logged_in, open_dashboard, row_keys, wait
from tests.services.kudo.world import bearer, instance

pytestmark = pytest.mark.chromium


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_portico(tmp_path_factory.mktemp("demo"), demo=True, sim_step_seconds=0.02) as live:
        yield live


async def _create(live: LiveServer, token: str, name: str, instance_id: str = "") -> str:
    stub = scheduler_pb2_grpc.InstanceServiceStub(live.server.channel)
    request = instance(name)
    request.id = instance_id
    creating = stub.Create(request, metadata=bearer(token))
    first = await anext(creating.__aiter__())
    creating.cancel()
    return first.id


async def _destroy(live: LiveServer, token: str, instance_id: str) -> None:
    stub = scheduler_pb2_grpc.InstanceServiceStub(live.server.channel)
    await stub.Destroy(scheduler_pb2.InstanceIdentifier(id=instance_id), metadata=bearer(token))


def _pod_row(browser: WebDriver, pod: str) -> dict[str, object]:
    return browser.execute_script(
        "const rows = document.querySelectorAll(`table[aria-label='Pods'] tr[data-key]`);"
        "const row = [...rows].find((r) => r.dataset.key === arguments[0]);"
        "if (!row) return null;"
        "const link = row.querySelector('a');"
        "return { text: link.textContent, title: link.querySelector('[title]')?.title || '',"
        "  state: row.querySelector('td[data-label=\"State\"]').textContent,"
        "  actions: [...row.querySelectorAll('button')].map((b) => b.textContent) };",
        pod,
    )


def test_pod_ids_are_whole_or_cut_with_an_ellipsis_and_gone_pods_offer_nothing(
    browser: WebDriver, live_server: LiveServer
) -> None:
    token = live_server.call(live_server.server.login())
    short = live_server.call(_create(live_server, token, "web", "web-7f9c2"))
    long = live_server.call(_create(live_server, token, "cache"))  # a UUID
    logged_in(browser, live_server, "#/runtime")
    wait(browser).until(lambda b: {short, long} <= set(row_keys(b, "Pods")))
    wait(browser).until(lambda b: "RUNNING" in str(_pod_row(b, short)["state"]))
    assert _pod_row(browser, short)["text"] == "web-7f9c2"  # not web-7f9c
    assert _pod_row(browser, short)["actions"] == ["Stop", "Destroy"]
    cut = _pod_row(browser, long)
    assert (cut["text"], cut["title"]) == (f"{long[:8]}…", long)

    live_server.call(_destroy(live_server, token, short))
    wait(browser).until(lambda b: "RUNNING" not in str(_pod_row(b, short)["state"]))
    # Destroying, then destroyed: no Start (the server would refuse it), nothing else either.
    wait(browser).until(lambda b: _pod_row(b, short)["actions"] == [])


def test_a_cloudlet_shows_what_is_used_of_its_capacity(
    browser: WebDriver, live_server: LiveServer
) -> None:
    token = live_server.call(live_server.server.login())

    async def used() -> refs_pb2.CloudletRefs:
        stub = refs_pb2_grpc.CloudletRefsApiStub(live_server.server.channel)
        async for refs in stub.ShowCloudletRefs(refs_pb2.CloudletRefs(), metadata=bearer(token)):
            if refs.used_vcores:
                return refs
        raise AssertionError("the demo cloudlet uses nothing yet")

    logged_in(browser, live_server, "#/edge")

    def capacity(b: WebDriver) -> str:
        cells = css(b, "table[aria-label='Cloudlets'] td[data-label='Used of capacity']")
        return cells[0].text if cells else ""

    wait(browser).until(lambda b: " of 32 vCPU" in capacity(b))
    refs = live_server.call(used())
    wait(browser).until(
        lambda b: (
            capacity(b).startswith(f"{refs.used_vcores} of 32 vCPU · ")
            and f"{refs.used_ram:,} of 65,536 MB" in capacity(b)
        )
    )
    assert "0 vCPU · 0 MB" not in capacity(browser)


def test_the_login_form_is_no_error_before_anything_is_typed(
    browser: WebDriver, live_server: LiveServer
) -> None:
    open_dashboard(browser, live_server)
    username = by_id(browser, "username")
    style = "return getComputedStyle(arguments[0]).backgroundColor"
    untouched = browser.execute_script(style, username)
    by_id(browser, "login-submit").click()  # empty: now the browser says what is missing
    wait(browser).until(lambda b: b.execute_script(style, username) != untouched)
    assert browser.execute_script("return arguments[0].matches(':user-invalid')", username)
