"""A connect-web page (the original storage dashboard's client) in headless Chromium logs in and
reads the stats from Portico's ``/api``, cross-origin, with nothing changed but the base URL."""

from __future__ import annotations

import functools
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from tests.dashboard.conftest import WAIT_SECONDS, LiveServer, browser, chromium, live_portico
from tests.harness import ADMIN_PASSWORD

from .node_clients import NODE_DIR, prepared_node

__all__ = ["browser", "chromium"]  # the dashboard's browser fixtures, over this module's server


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def page_origin() -> Iterator[str]:
    """The page and its npm modules, served from their own origin (another port)."""
    prepared_node()
    handler = functools.partial(_Quiet, directory=str(NODE_DIR))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="page-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory, page_origin: str) -> Iterator[LiveServer]:
    data_dir = Path(tmp_path_factory.mktemp("portico"))
    with live_portico(data_dir, cors_origins=(page_origin,)) as live:
        yield live


def test_connect_web_page_logs_in_and_reads_the_stats(
    browser: WebDriver, page_origin: str, live_server: LiveServer
) -> None:
    query = urlencode({"base": f"{live_server.url}/api", "password": ADMIN_PASSWORD})
    browser.get(f"{page_origin}/browser.html?{query}")
    result = browser.find_element("id", "result")
    WebDriverWait(browser, WAIT_SECONDS).until(lambda _: result.text != "running")
    found = json.loads(result.text)
    assert "error" not in found, found
    for form in ("json", "binary"):
        assert found[form]["accountId"] and found[form]["clusterId"], found
