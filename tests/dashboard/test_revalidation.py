"""The polling views revalidate instead of fetching again: after its first reply, a view's
refresh sends the reply's ETag in If-None-Match and, while nothing changed, gets 304 with no body
and leaves the page as it is; a change still shows up at the next refresh. Seen from inside the
page, by wrapping its ``fetch``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from selenium.webdriver.remote.webdriver import WebDriver

from tests.dashboard.conftest import LiveServer, live_portico
from tests.dashboard.pages import go, logged_in, row_keys, texts, wait
from tests.harness import eventually
from tests.services.kudo.world import headers

pytestmark = pytest.mark.chromium

LIST = "/cnct.kaas.api.Cluster/GetClusterList"
NODES = "/cnct.kaas.api.Cluster/GetClusterNodesStatus"

# Every request the page makes from now on, with what it sent and what came back.
WATCH_FETCH = """
window.seen = [];
const original = window.fetch;
window.fetch = async (input, init = {}) => {
  const response = await original(input, init);
  window.seen.push({
    path: new URL(String(input), location.href).pathname,
    ifNoneMatch: new Headers(init.headers || {}).get('If-None-Match'),
    status: response.status,
    etag: response.headers.get('etag'),
  });
  return response;
};
"""


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A Portico with no demo data (only the clusters made here), on a fast simulated clock."""
    with live_portico(tmp_path_factory.mktemp("revalidation"), sim_step_seconds=0.02) as live:
        yield live


def create_cluster(live: LiveServer, name: str) -> None:
    """Make a cluster over REST, as another client would, and wait until it is RUNNING: from
    then on it stays as it is, so the list's ETag holds."""
    body = {
        "name": name,
        "k8s_version": "1.31.2",
        "control_plane_nodes": {"count": 1, "instanceType": "standard"},
        "worker_node_pools": [{"name": "workers", "instanceType": "standard", "count": 1}],
    }

    async def create() -> None:
        auth = headers(await live.server.login())
        created = await live.server.http.post("/api/v1/cluster", json=body, headers=auth)
        assert created.status_code == 200, created.text

        async def running() -> bool:
            reply = await live.server.http.get(
                "/api/v1/cluster", params={"name": name}, headers=auth
            )
            return reply.json()["cluster"]["status"] == "RUNNING"

        await eventually(running, 10.0, what=f"{name} RUNNING")

    live.call(create())


def seen(browser: WebDriver, path: str) -> list[dict[str, Any]]:
    return [r for r in browser.execute_script("return window.seen") if r["path"] == path]


def mark_table(browser: WebDriver) -> None:
    """Mark the drawn table: a redraw makes a new one, without the mark."""
    browser.execute_script(
        "document.querySelector(\"table[aria-label='Clusters']\").dataset.drawn = 'before'"
    )


def table_marked(browser: WebDriver) -> bool:
    return bool(
        browser.execute_script(
            "const t = document.querySelector(\"table[aria-label='Clusters']\");"
            "return t !== null && t.dataset.drawn === 'before'"
        )
    )


def test_the_clusters_view_revalidates_its_list_and_still_shows_a_change(browser, live_server):
    create_cluster(live_server, "first")
    logged_in(browser, live_server, "#/history")  # a view that does not poll clusters
    browser.execute_script(WATCH_FETCH)
    go(browser, "#/kaas")
    wait(browser).until(lambda b: row_keys(b, "Clusters") == ["first"])

    # The first ask has nothing to revalidate: a whole reply, with the list's ETag.
    first = seen(browser, LIST)[0]
    assert first["ifNoneMatch"] is None and first["status"] == 200 and first["etag"]
    mark_table(browser)

    # The next ones send that ETag back and, nothing having changed, get 304 (no body).
    def unchanged_twice(b: WebDriver) -> bool:
        return sum(r["status"] == 304 for r in seen(b, LIST)) >= 2

    wait(browser).until(unchanged_twice)
    asked = seen(browser, LIST)
    assert all(r["ifNoneMatch"] == first["etag"] for r in asked[1:]), asked
    assert table_marked(browser)  # a 304 leaves the page as it was drawn
    assert row_keys(browser, "Clusters") == ["first"]
    # Each cluster's machines, asked for on every refresh, revalidate the same way.
    wait(browser).until(lambda b: any(r["status"] == 304 for r in seen(b, NODES)))
    first_nodes, *later = seen(browser, NODES)
    assert first_nodes["etag"] and all(r["ifNoneMatch"] == first_nodes["etag"] for r in later)

    # Another client's change: the next refresh's If-None-Match no longer holds, so the whole
    # new list comes back and is drawn.
    create_cluster(live_server, "second")
    wait(browser).until(lambda b: row_keys(b, "Clusters") == ["first", "second"])
    changed = [r for r in seen(browser, LIST) if r["status"] == 200][1]
    assert changed["ifNoneMatch"] == first["etag"] and changed["etag"] != first["etag"]

    # What the view remembered goes with it: coming back starts with a whole reply again.
    go(browser, "#/history")
    wait(browser).until(lambda b: not row_keys(b, "Clusters"))
    browser.execute_script("window.seen = []")
    go(browser, "#/kaas")
    wait(browser).until(lambda b: seen(b, LIST))
    again = seen(browser, LIST)[0]
    assert again["ifNoneMatch"] is None and again["status"] == 200


def test_the_edge_view_revalidates_its_show_streams(browser, live_server):
    logged_in(browser, live_server, "#/history")
    browser.execute_script(WATCH_FETCH)
    go(browser, "#/edge")
    show = "/edgeproto.DeveloperApi/ShowDeveloper"

    def revalidated(b: WebDriver) -> bool:
        return any(r["ifNoneMatch"] and r["status"] == 304 for r in seen(b, show))

    wait(browser).until(revalidated)
    assert seen(browser, show)[0]["ifNoneMatch"] is None
    # The remembered (empty) list is what the view still shows.
    assert texts(browser, "table[aria-label='Developers'] tbody td") == ["No developers."]
