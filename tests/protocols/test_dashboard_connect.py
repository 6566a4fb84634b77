"""The dashboard with ``?protocol=connect``: its unary calls speak Connect under /api, and the
views read the same fields as over REST."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from selenium.webdriver.remote.webdriver import WebDriver

from tests.dashboard.conftest import LiveServer, browser, chromium, live_portico, no_script_errors
from tests.dashboard.pages import logged_in, row_keys, wait

__all__ = ["browser", "chromium", "no_script_errors"]  # the dashboard's browser fixtures


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_portico(tmp_path_factory.mktemp("demo"), demo=True, sim_step_seconds=0.02) as live:
        yield live


def rpc_paths(browser: WebDriver) -> list[str]:
    return browser.execute_script(
        "return performance.getEntriesByType('resource').map((e) => new URL(e.name).pathname)"
    )


def test_storage_and_clusters_over_connect(browser: WebDriver, live_server: LiveServer) -> None:
    logged_in(browser, live_server, "?protocol=connect#/storage")
    wait(browser).until(lambda b: len(row_keys(b, "Storage nodes")) == 4)
    assert "/api/stats.StatsService/GetClusterStats" in rpc_paths(browser)
    assert "/stats.StatsService/GetClusterStats" not in rpc_paths(browser)
    browser.execute_script("location.hash = '#/kaas'")
    wait(browser).until(lambda b: "/api/cnct.kaas.api.Cluster/GetClusterList" in rpc_paths(b))


def test_connect_replies_read_as_the_rest_ones(browser: WebDriver, live_server: LiveServer) -> None:
    logged_in(browser, live_server, "?protocol=connect#/kaas")
    # The page's own call() (Connect here, renamed by the OpenAPI schemas) and a plain REST call.
    found = browser.execute_async_script(
        """
        const done = arguments[arguments.length - 1];
        const rpc = 'cnct.kaas.api.Cluster.GetClusterList';
        import('/dashboard/js/api.js').then(async ({ api, call, authHeaders, PROTOCOL }) => {
          await new Promise((resolve) => {
            const ready = () => (api.methods.size ? resolve() : setTimeout(ready, 20));
            ready();
          });
          const viaConnect = await call(rpc, {});
          const rest = await fetch('/cnct.kaas.api.Cluster/GetClusterList', {
            method: 'POST',
            headers: authHeaders({ 'Content-Type': 'application/json' }),
            body: '{}',
          });
          done({ protocol: PROTOCOL, connect: viaConnect, rest: await rest.json() });
        }).catch((err) => done({ error: String(err) }));
        """
    )
    assert found.get("protocol") == "connect", found
    assert found["rest"]["clusters"], found  # the demo has clusters with snake_case fields
    assert found["connect"] == found["rest"]
