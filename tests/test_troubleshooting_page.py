"""The troubleshooting page names every error message a new user met in their first hour, with
its cause and fix. Each message the code says is looked up in the code too: reword one there
and this test asks for the page to follow."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT

PAGE = ROOT / "docs" / "operations" / "troubleshooting.md"

# As the code words them (a literal of app/), and the page must quote them.
SAID_BY_THE_CODE = [
    "login refused: ",
    "this call needs a token: run `portico login -u USERNAME` first",
    "the token has expired; log in again",
    "the token was not signed by this server",
    "speaks HTTP/1.1 only, not gRPC: it is a REST port",
    "no complete answer within",
    "cannot use that port",
    "was not ready in",
    "; stop it, or give this server a ",
    "is not allowed; allowed: ",
    "no route for ",
    "no such field",
    "upstream unavailable",
]
# What older releases or other tools said: a search for the words a user saw finds the entry.
SAID_ELSEWHERE = [
    "invalid username or password",
    "Signature has expired.",
    "Signature verification failed",
    "Failed parsing HTTP/2 (Expected SETTINGS frame as the first frame, got frame type 80)",
    "PORTICO_HTTP_PORT: 99999 is not allowed",
    "--http-port: 99999 is not allowed",
    "did you mean /api/v1/cluster/list?",
    "grpcurl: command not found",
    "KeyError",
    "`/redoc` answers 404",
]


def _page() -> str:
    # The entries wrap lines; a message is matched with its spaces as one.
    return " ".join(PAGE.read_text().split())


def _code() -> str:
    return "\n".join(path.read_text() for path in sorted((ROOT / "app").rglob("*.py")))


@pytest.mark.parametrize("message", SAID_BY_THE_CODE)
def test_a_message_of_the_code_is_on_the_page(message: str) -> None:
    assert message in _code(), f"the code no longer says {message!r}: update the page and here"
    assert message in _page(), message


@pytest.mark.parametrize("message", SAID_ELSEWHERE)
def test_a_message_a_user_met_is_on_the_page(message: str) -> None:
    assert message in _page(), message
