"""``/readyz`` says which background loops are not running, and ``/readyz?verbose`` how each is
doing; a loop the store fails is restarted, named meanwhile, and logged once per interval.

Before, ``/readyz`` said only ``ready`` or ``starting``: a loop failing at every restart (or a
leader election that could not reach the database) showed nowhere but in tracebacks, one per
second per loop.
"""

from __future__ import annotations

import asyncio
import http.server
import logging
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from app.gateway.routes import SERVER_PID_HEADER
from app.server.background import BackgroundWork
from app.server.jobs import supervised
from app.store import Unavailable
from tests.harness import eventually, run, running

HEALTH_PAGE = Path(__file__).resolve().parents[2] / "docs" / "operations" / "health.md"


def test_readyz_stays_short_and_verbose_names_every_loop_the_docs_name(tmp_path: Path) -> None:
    async def probe() -> tuple[dict[str, object], dict[str, object]]:
        async with running(tmp_path, demo=True, sim_nodes=1) as server:

            async def leading() -> bool:
                answer = (await server.http.get("/readyz", params={"verbose": ""})).json()
                loops = answer["background"]["loops"].values()
                return answer["background"]["leader"] and all(
                    loop["state"] == "running" for loop in loops
                )

            await eventually(leading, 10, what="every loop runs on the leader")
            short = (await server.http.get("/readyz")).json()
            verbose = (await server.http.get("/readyz", params={"verbose": ""})).json()
            return short, verbose

    short, verbose = run(probe())
    assert short == {"status": "ready"}  # what probes and the quick start read
    background = verbose["background"]
    assert isinstance(background, dict)
    assert background["leader_election"] == {"state": "running"}
    first_cells = re.findall(r"^\| (`.+?) \|", HEALTH_PAGE.read_text(), re.MULTILINE)
    documented = {name for cell in first_cells for name in re.findall(r"`(\w+)`", cell)}
    assert set(background["loops"]) == documented, "docs/operations/health.md's table of loops"


def test_a_loop_the_store_fails_is_named_until_it_runs_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario() -> tuple[dict[str, str], dict[str, str], int]:
        work = BackgroundWork()
        failures = 0
        healthy = asyncio.Event()

        async def keep_the_books() -> None:
            nonlocal failures
            if failures < 5:
                failures += 1
                raise Unavailable("database unavailable; retry shortly")
            healthy.set()
            await asyncio.Event().wait()

        state = work.add(keep_the_books, on_leader=False)
        task = asyncio.ensure_future(supervised(keep_the_books, 0.01, state))

        async def failed_twice() -> bool:
            return failures >= 2 and state.state == "restarting"

        await eventually(failed_twice, 5, what="the loop failed twice")
        while_failing = work.not_running()
        await asyncio.wait_for(healthy.wait(), 5)
        after = work.not_running()
        task.cancel()
        return while_failing, after, failures

    with caplog.at_level(logging.WARNING, logger="portico"):
        while_failing, after, failures = run(scenario())
    assert while_failing["keep_the_books"].startswith(
        "restarting after a failure (database unavailable; retry shortly;"
    )
    assert "keep_the_books" not in after
    # One line for the five failures (a line per loop and 10 s), and no traceback.
    said = [r for r in caplog.records if "keep_the_books" in r.getMessage()]
    assert failures == 5 and len(said) == 1, [r.getMessage() for r in said]
    assert said[0].exc_info is None


def test_portico_ready_says_what_the_server_answered_when_it_never_got_ready() -> None:
    """``portico ready`` timing out said "it answered 503 (starting)", whatever the server's
    reason; it now quotes the answer (the store does not answer, say)."""
    answer = b'{"status":"unavailable","store":"database unavailable; retry shortly"}'

    class NotReady(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(503)
            self.send_header(SERVER_PID_HEADER, str(os.getpid()))  # the server it waits for
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotReady)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        ready = subprocess.run(
            [sys.executable, "-m", "app", "ready", "--pid", str(os.getpid()), "--timeout", "1"],
            env={**os.environ, "PORTICO_HTTP_PORT": str(server.server_address[1])},
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        server.shutdown()
        server.server_close()
    assert ready.returncode == 1
    assert f"it answered 503 {answer.decode()} at http://127.0.0.1:" in ready.stderr, ready.stderr
