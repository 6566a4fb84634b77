"""How the gateway serves the dashboard's files (gateway/pages/dashboard.py), over plain HTTP."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import pytest
from fastapi import FastAPI

from app.gateway.errors import GatewayError
from app.gateway.pages import dashboard
from app.gateway.registry import Registry
from app.gateway.routes import GatewayOptions, create_app
from tests.conftest import ROOT
from tests.harness import run

STATIC = ROOT / "static"


async def _refuse_everyone(method: object, metadata: object, peer: object) -> object:
    raise GatewayError(grpc.StatusCode.UNAUTHENTICATED, "no token")


@pytest.fixture(scope="module")
def app() -> object:
    # Every RPC needs a token here: the dashboard's files must not.
    options = GatewayOptions(authenticate=_refuse_everyone)
    return create_app(Registry.from_package("gen"), {}, options)


def get(app: object, path: str, **kwargs: object) -> httpx.Response:
    async def fetch() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
        async with httpx.AsyncClient(transport=transport, base_url="http://portico") as client:
            return await client.get(path, **kwargs)  # type: ignore[arg-type]

    return run(fetch())


def _static_files() -> Iterator[Path]:
    return (p for p in sorted(STATIC.rglob("*")) if p.is_file() and not p.name.startswith("."))


def _modules() -> list[Path]:
    return sorted((STATIC / "js").rglob("*.js"))


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        ("/dashboard/", "text/html"),
        ("/dashboard/index.html", "text/html"),
        ("/dashboard/js/main.js", "text/javascript"),
        ("/dashboard/js/views/kaas.js", "text/javascript"),
        ("/dashboard/dashboard.css", "text/css"),
        ("/dashboard/favicon.svg", "image/svg+xml"),
    ],
)
def test_files_are_public_with_their_content_type_and_a_strict_policy(app, path, content_type):
    reply = get(app, path)
    assert reply.status_code == 200
    assert reply.headers["content-type"].split(";")[0] == content_type
    policy = reply.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "unsafe" not in policy
    assert reply.headers["x-content-type-options"] == "nosniff"


def test_every_file_in_static_is_served_as_it_is(app):
    for file in _static_files():
        reply = get(app, f"/dashboard/{file.relative_to(STATIC).as_posix()}")
        assert reply.status_code == 200, file
        assert reply.content == file.read_bytes()


def test_an_unchanged_file_is_not_sent_again(app):
    first = get(app, "/dashboard/js/main.js")
    again = get(app, "/dashboard/js/main.js", headers={"if-none-match": first.headers["etag"]})
    assert again.status_code == 304 and again.content == b""


@pytest.mark.parametrize("path", ["/", "/dashboard"])
def test_the_root_leads_to_the_dashboard(app, path):
    reply = get(app, path)
    assert reply.status_code == 307
    assert reply.headers["location"].removeprefix("http://portico") == "/dashboard/"


def test_an_unknown_dashboard_file_is_not_found(app):
    for path in ("/dashboard/missing.js", "/dashboard/../pyproject.toml", "/dashboard/x/"):
        assert get(app, path).status_code == 404, path


def test_the_dashboard_is_not_in_the_openapi_document(app):
    paths = get(app, "/openapi.json").json()["paths"]
    assert "/" not in paths
    assert not [p for p in paths if p.startswith("/dashboard")]


def test_the_page_has_no_inline_script_or_style_and_no_outside_url():
    html = (STATIC / "index.html").read_text()
    assert all('src="' in tag for tag in re.findall(r"<script[^>]*>", html))
    assert "style=" not in html and "<style" not in html
    for file in _static_files():
        text = file.read_text()
        # The SVG namespace is a name, not an address anything fetches.
        urls = set(re.findall(r"\w+://[^\s\"')]+", text)) - {"http://www.w3.org/2000/svg"}
        assert not urls, (file.name, urls)


def test_the_modules_run_as_they_are_with_no_build_step():
    """Plain ES modules: every import names a file that is here, relative, with its extension
    (what a browser needs, with no bundler between), and the page loads the entry module."""
    html = (STATIC / "index.html").read_text()
    assert '<script type="module" src="js/main.js"></script>' in html
    for module in _modules():
        for target in re.findall(r"^import .* from '([^']+)';$", module.read_text(), re.M):
            assert target.startswith("."), (module, target)
            assert (module.parent / target).resolve().is_file(), (module, target)


def test_replies_reach_the_page_as_text_never_as_markup():
    """Nothing from the server is parsed as HTML: no innerHTML, outerHTML, insertAdjacentHTML,
    document.write or eval anywhere in the dashboard's code."""
    for module in _modules():
        text = module.read_text()
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
            assert sink not in text, (module.name, sink)


def test_the_modules_stay_small():
    for module in _modules():
        assert len(module.read_text().splitlines()) <= 400, module


def test_files_come_from_the_checkout_here():
    assert dashboard.find_static_dir() == STATIC


def test_installed_files_are_found_under_the_prefix(tmp_path):
    installed = tmp_path / dashboard.INSTALLED_STATIC
    assert dashboard.find_static_dir([tmp_path / "static", installed]) is None
    installed.mkdir(parents=True)
    (installed / "index.html").write_text("<!doctype html>")
    assert dashboard.find_static_dir([tmp_path / "static", installed]) == installed
    assert Path(sys.prefix) / dashboard.INSTALLED_STATIC in dashboard.static_candidates()


def test_the_image_ships_the_files_where_they_are_looked_for():
    # The image's virtualenv is /opt/portico, its sys.prefix.
    target = Path("/opt/portico") / dashboard.INSTALLED_STATIC
    assert f"COPY static {target}" in (ROOT / "Dockerfile").read_text()


def test_without_its_files_the_dashboard_says_where_it_looked(tmp_path):
    api = FastAPI()
    dashboard.add_dashboard(api, tmp_path)
    reply = get(api, "/dashboard/")
    assert reply.status_code == 404
    assert str(tmp_path) in reply.text
    assert get(api, "/").headers["location"] == "/dashboard/"


def test_the_dashboard_page_shows_each_views_screenshot_and_they_are_committed():
    page = (ROOT / "docs" / "how-to" / "dashboard.md").read_text()
    shown = [f"docs/{p}" for p in re.findall(r"\]\(\.\./(screenshots/[\w-]+\.png)\)", page)]
    made = {p.relative_to(ROOT).as_posix() for p in (ROOT / "docs" / "screenshots").glob("*.png")}
    assert set(shown) == made  # every screenshot made is shown, every one shown exists
    for name in ("clusters", "runtime", "edge", "storage", "explorer", "history"):
        assert f"docs/screenshots/{name}.png" in shown
    for path in made:
        assert (ROOT / path).stat().st_size < 150_000, path  # small enough for a page
