"""``/readyz`` says which background loops are not running, and ``/readyz?verbose`` how each is
doing; a loop the store fails is restarted, named meanwhile, and logged once per interval.

Before, ``/readyz`` said only ``ready`` or ``starting``: a loop failing at every restart (or a
leader election that could not reach the database) showed nowhere but in tracebacks, one per
second per loop.
"""

from __future__ import annotations

import asyncio
import logging
import re
from pathlib import Path

import pytest

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
