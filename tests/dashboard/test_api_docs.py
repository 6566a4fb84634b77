"""Swagger UI renders the OpenAPI document in headless Chromium with every request
going to Portico itself: the pages work offline (the test machine reaches no CDN either)."""

from __future__ import annotations

from typing import Any

import pytest
from selenium.webdriver.remote.webdriver import WebDriver

from tests.dashboard.conftest import LiveServer
from tests.dashboard.pages import wait

pytestmark = pytest.mark.chromium


def loaded_from(browser: WebDriver) -> Any:
    """Every URL the page fetched (documents, scripts, styles, images, XHR)."""
    return browser.execute_script(
        "return [location.href, ...performance.getEntriesByType('resource').map(e => e.name)]"
    )


def test_swagger_ui_renders_offline(browser: WebDriver, live_server: LiveServer) -> None:
    browser.get(live_server.url + "/docs")
    # One block per operation.
    operations = "return document.querySelectorAll('.opblock').length"
    wait(browser).until(lambda b: b.execute_script(operations) > 100)
    assert "services.auth.AuthService" in browser.page_source
    # Nothing came from elsewhere: the page's policy allows this origin only (the autouse
    # fixture fails a scenario that trips it), and every fetch went to Portico.
    fetched = loaded_from(browser)
    assert any(url.endswith("/openapi.json") for url in fetched)
    assert all(url.startswith(live_server.url + "/") for url in fetched), fetched


def test_redoc_renders_offline(browser: WebDriver, live_server: LiveServer) -> None:
    """pyproject.toml says fastapi-offline's ReDoc is served: at /redoc, from Portico alone."""
    browser.get(live_server.url + "/redoc")
    # ReDoc lists each operation in its menu once it has read the document.
    operations = "return document.querySelectorAll('[data-item-id*=\"/operation/\"]').length"
    wait(browser).until(lambda b: b.execute_script(operations) > 100)
    assert "CreateCluster" in browser.page_source
    fetched = loaded_from(browser)
    assert any(url.endswith("/openapi.json") for url in fetched)
    assert all(url.startswith(live_server.url + "/") for url in fetched), fetched
    # The footer keeps its text but not the vendor's logo (no broken image, nothing the policy
    # refused: the autouse fixture fails the scenario on a refusal).
    wait(browser).until(lambda b: "API docs by Redocly" in b.page_source)
    images = "return [...document.images].map((i) => i.getAttribute('src'))"
    assert browser.execute_script(images) == []
