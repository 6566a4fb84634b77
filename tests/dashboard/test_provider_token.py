"""A token pasted from the identity provider into the dashboard: kept once the server accepts
it, refused with a reason otherwise. Headless Chromium against a Portico that trusts a provider
made in the test."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as visible

from tests.auth.identity_provider import Provider, SigningKey, provider_settings
from tests.dashboard.conftest import LiveServer, live_portico
from tests.dashboard.pages import by_id, css, open_dashboard, row_keys, wait

pytestmark = pytest.mark.chromium


@contextlib.contextmanager
def published(provider: Provider) -> Iterator[Provider]:
    """The provider's discovery document and JWKS on a loopback port, in a thread."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            documents = {
                "/.well-known/openid-configuration": {
                    "issuer": provider.issuer,
                    "jwks_uri": provider.issuer + "/jwks",
                },
                "/jwks": provider.jwks(),
            }
            found = documents.get(self.path)
            body = json.dumps(found).encode()
            self.send_response(200 if found else 404)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    with ThreadingHTTPServer(("127.0.0.1", 0), Handler) as server:
        provider.issuer = f"http://127.0.0.1:{server.server_address[1]}"
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield provider
        finally:
            server.shutdown()
            thread.join()


@pytest.fixture(scope="module")
def provider() -> Iterator[Provider]:
    with published(Provider(keys=[SigningKey("ES256")])) as found:
        yield found


@pytest.fixture(scope="module")
def live_server(
    provider: Provider, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    settings = provider_settings(provider, demo=True)  # clusters to list
    with live_portico(tmp_path_factory.mktemp("portico"), **settings) as live:
        yield live


def paste(browser: Any, token: str) -> None:
    wait(browser).until(visible.visibility_of_element_located((By.ID, "token-login")))
    if not by_id(browser, "token-login").get_attribute("open"):
        css(browser, "#token-login summary")[0].click()
    by_id(browser, "pasted-token").clear()
    by_id(browser, "pasted-token").send_keys(token)
    by_id(browser, "token-submit").click()


def test_a_pasted_provider_token_signs_in_and_a_refused_one_is_refused(
    browser, live_server, provider
):
    open_dashboard(browser, live_server, "#/kaas")
    paste(browser, provider.token(aud="another-app"))
    error = by_id(browser, "token-error")
    wait(browser).until(visible.visibility_of(error))
    assert "does not accept this token" in error.text
    assert not by_id(browser, "app").is_displayed()

    token = provider.token(sub="dana@example")
    paste(browser, f"Bearer {token}")
    wait(browser).until(visible.visibility_of_element_located((By.ID, "app")))
    assert browser.execute_script("return sessionStorage.getItem('portico.token')") == token
    assert by_id(browser, "whoami").text == "dana@example"
    assert by_id(browser, "role").text == "as the identity provider grants"
    # The page's calls carry the token: the clusters list fills (a 401 would log out).
    wait(browser).until(lambda b: "demo-running" in row_keys(b, "Clusters"))
    # Only the server knows what the provider's roles grant: the page offers the actions.
    assert css(browser, "[data-action='cnct.kaas.api.Cluster.CreateCluster']")
