"""A create whose reply was lost to a crash is safe to retry with its idempotency key: the real
``portico serve`` is SIGKILLed between committing a keyed create and replying (placed exactly
by PORTICO_TEST_CRASH_AFTER_COMMIT), and the retry on the restarted server answers the
committed result instead of creating again or refusing its own first attempt. On SQLite and on
PostgreSQL."""

from __future__ import annotations

import httpx
import pytest

from tests.reliability.server import login, start_server

pytestmark = pytest.mark.slow  # seconds per test: scheduled first (tests/conftest.py)

CREATE = "edgeproto.OperatorApi.CreateOperator"


def test_a_retry_after_a_crash_between_commit_and_reply_gets_the_committed_result(
    tmp_path, store_url: str
):
    env = {"PORTICO_DATABASE_URL": store_url}
    body = {"key": {"name": "Acme"}}
    crashing = start_server(
        tmp_path / "data", env={**env, "PORTICO_TEST_CRASH_AFTER_COMMIT": CREATE}
    )
    try:
        crashing.wait_ready()
        headers = {"authorization": f"Bearer {login(crashing)}", "idempotency-key": "acme-1"}
        with pytest.raises(httpx.TransportError):  # no reply: the client cannot tell
            httpx.post(f"{crashing.base_url}/create/operator", json=body, headers=headers)
        assert crashing.process.wait(timeout=20) == -9  # SIGKILL, as the fault says
    finally:
        crashing.kill()

    restarted = start_server(tmp_path / "data", env=env)
    try:
        restarted.wait_ready()
        token = login(restarted)
        retry = httpx.post(
            f"{restarted.base_url}/create/operator",
            json=body,
            headers={"authorization": f"Bearer {token}", "idempotency-key": "acme-1"},
            timeout=10,
        )
        assert retry.status_code == 200, retry.text  # the committed create, not ALREADY_EXISTS
        # The create had committed: the same request without the key meets it.
        plain = httpx.post(
            f"{restarted.base_url}/create/operator",
            json=body,
            headers={"authorization": f"Bearer {token}"},
            timeout=10,
        )
        assert plain.status_code == 409, plain.text
        shown = httpx.post(
            f"{restarted.base_url}/show/operator",
            json={},
            headers={"authorization": f"Bearer {token}"},
            timeout=10,
        )
        assert shown.status_code == 200, shown.text
        assert shown.text.count('"Acme"') == 1
    finally:
        assert restarted.stop() == 0
