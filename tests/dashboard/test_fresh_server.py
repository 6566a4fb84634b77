"""The dashboard of a server just started, without ``--demo``, as a newcomer meets it: empty
panels say what will show there, the runtime's nodes are nodes (no pseudo-node "none" for the
instances no node holds, and a node stays listed when its pod is gone), History says what it
records, and a heading that takes focus when its view opens wears no focus ring."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver

from tests.dashboard.conftest import LiveServer, live_portico
from tests.dashboard.pages import by_id, css, go, logged_in, open_dashboard, row_keys, texts, wait
from tests.dashboard.test_first_look import _create, _destroy
from tests.harness import ADMIN_PASSWORD
from tests.services.kudo.world import bearer, instance

pytestmark = pytest.mark.chromium


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_portico(tmp_path_factory.mktemp("fresh"), sim_step_seconds=0.02) as live:
        yield live


def _node_rows(browser: WebDriver) -> list[str]:
    return row_keys(browser, "Nodes")


def test_the_runtime_view_says_what_is_empty_and_lists_only_nodes(browser, live_server):
    logged_in(browser, live_server, "#/runtime")
    wait(browser).until(lambda b: css(b, "#view .live-badge[data-state='live']"))
    # No event in the last hour: the panel says so, and what will show there.
    assert texts(browser, "#events li") == [
        "No runtime events in the last hour. Pods starting, stopping and exiting show here as "
        "they happen."
    ]
    token = live_server.call(live_server.server.login())

    # An instance no node can hold: its pod is on node "none", which is no node.
    async def huge() -> str:
        from gen.scheduler import scheduler_pb2_grpc

        stub = scheduler_pb2_grpc.InstanceServiceStub(live_server.server.channel)
        creating = stub.Create(instance("huge", cpu=512), metadata=bearer(token))
        first = await anext(creating.__aiter__())
        creating.cancel()
        return first.id

    waiting = live_server.call(huge())
    wait(browser).until(lambda b: css(b, "#waiting-pods"))
    assert by_id(browser, "waiting-pods").text.startswith("1 instance waits for a node")
    assert "none" not in _node_rows(browser)

    # One that runs: its node is listed with its state, and its events replace the placeholder.
    pod = live_server.call(_create(live_server, token, "runs-somewhere"))
    wait(browser).until(lambda b: css(b, f"#events li[data-id='{pod}']"))
    assert not css(browser, "#no-events")
    wait(browser).until(lambda b: _node_rows(b))
    [node] = _node_rows(browser)
    assert node != "none"
    state = "table[aria-label='Nodes'] td[data-label='State'] .pill"
    wait(browser).until(lambda b: texts(b, state) == ["READY"])

    # Destroyed, its pod is on no node; the node the events named stays listed.
    live_server.call(_destroy(live_server, token, pod))
    live_server.call(_destroy(live_server, token, waiting))
    wait(browser).until(lambda b: not css(b, "#waiting-pods"))
    wait(browser).until(
        lambda b: texts(b, "table[aria-label='Nodes'] td[data-label='Pods']") == ["0"]
    )
    assert _node_rows(browser) == [node]


def test_history_says_what_it_records(browser, live_server):
    logged_in(browser, live_server, "#/kaas")
    for view in ("#/runtime", "#/edge", "#/storage", "#/kaas"):  # the views' reads are not calls
        go(browser, view)
        wait(browser).until(lambda b, v=view: b.execute_script("return location.hash") == v)
    go(browser, "#/history")
    wait(browser).until(lambda b: css(b, "table[aria-label='History']"))
    [empty] = texts(browser, "table[aria-label='History'] td")
    assert "Explorer" in empty and "action" in empty
    assert "explorer" in texts(browser, "#view > p.muted")[0]


def test_a_heading_given_focus_wears_no_ring(browser, live_server):
    """After a login by keyboard, Chromium shows the focus of what script focuses next (the
    view's heading): it is no control, so no ring; a control's ring is kept."""
    open_dashboard(browser, live_server, "#/kaas")
    wait(browser).until(lambda b: by_id(b, "username").is_displayed())
    by_id(browser, "username").send_keys("admin")
    by_id(browser, "password").send_keys(ADMIN_PASSWORD, Keys.ENTER)
    ringed = (
        "const a = document.activeElement;"
        "return [a.tagName, a.textContent, a.matches(':focus-visible'),"
        "  getComputedStyle(a).outlineStyle]"
    )
    wait(browser).until(lambda b: b.execute_script(ringed)[:2] == ["H2", "KaaS clusters"])
    assert browser.execute_script(ringed) == ["H2", "KaaS clusters", True, "none"]
    go(browser, "#/storage")
    wait(browser).until(lambda b: b.execute_script(ringed)[1] == "Storage")
    assert browser.execute_script(ringed)[2:] == [True, "none"]
    browser.switch_to.active_element.send_keys(Keys.SHIFT, Keys.TAB)  # a link: its ring stays
    assert browser.execute_script(ringed)[2:] == [True, "solid"]
