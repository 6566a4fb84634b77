"""The dashboard in front of a proxied server: its explorer lists the upstream's methods and
calls them; with no login to offer (``--auth none``) it asks for none, and the views of
Portico's own APIs, which the upstream does not serve, are not offered."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from tests.dashboard.conftest import chromium, chromium_session
from tests.dashboard.pages import by_id, css, wait
from tests.proxy.processes import free_port, python_gen, start_proxy, start_python_echo

pytestmark = pytest.mark.chromium
__all__ = ["chromium"]  # the session fixture, shared with the dashboard tests

SAY = "portico.echo.v1.Echo.Say"


@pytest.fixture(scope="module")
def proxy_base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    upstream = start_python_echo(python_gen(tmp_path_factory.mktemp("echo")), port)
    try:
        proxy, base = start_proxy("--upstream", f"127.0.0.1:{port}", "--auth", "none")
        try:
            yield base
        finally:
            proxy.stop()
    finally:
        upstream.stop()


@pytest.fixture(scope="module")
def browser(chromium: tuple[str, str], proxy_base: str) -> Iterator[Any]:
    with chromium_session(chromium) as driver:
        yield driver


def test_the_explorer_lists_and_calls_the_upstreams_methods_without_a_login(
    browser: Any, proxy_base: str, tmp_path: Path
) -> None:
    browser.get(f"{proxy_base}/dashboard/#/explorer")
    wait(browser).until(lambda b: b.find_element(By.TAG_NAME, "body").get_attribute("data-ready"))
    assert not by_id(browser, "login").is_displayed()
    listed = {e.get_attribute("data-rpc") for e in css(browser, "a.method")}
    assert listed == {
        f"portico.echo.v1.Echo.{name}" for name in ("Say", "Count", "Sum", "Chat", "Fail", "Sleep")
    }
    views = {e.get_attribute("data-view") for e in css(browser, "#nav a")}
    assert views == {"explorer", "history"}
    # Under uvicorn the proxy serves no native gRPC: no grpcurl command points at nothing.
    assert not by_id(browser, "copy-grpcurl").is_displayed()
    assert by_id(browser, "copy-curl").get_attribute("hidden") is None
    browser.find_element(By.CSS_SELECTOR, f'a.method[data-rpc="{SAY}"]').click()
    wait(browser).until(lambda b: by_id(b, "method-name").text == SAY)
    by_id(browser, "mode-json").click()
    request = by_id(browser, "request")
    request.clear()
    request.send_keys(json.dumps({"text": "from the dashboard"}))
    by_id(browser, "call").click()
    status = by_id(browser, "response-status")
    wait(browser).until(lambda _: status.get_attribute("data-state") == "done")
    assert status.text.startswith("200")
    assert json.loads(by_id(browser, "response-body").text)["text"] == "from the dashboard"
