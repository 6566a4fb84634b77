"""Opening the store at start, waiting for a database that does not answer yet.

A PostgreSQL started together with Portico (a compose file, a pod beside its database, a host
booting) may take seconds to accept connections; a replica started meanwhile used to exit at
once. It now tries again for ``PORTICO_DATABASE_WAIT_SECONDS``, saying so every few seconds, and
only then stops with its one line. A refusal that waiting cannot mend (a wrong password, no such
database) stops it at once, and SQLite (a file of this machine) is never waited for.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from sqlalchemy.engine import make_url

from app.settings.config import Settings
from app.store import ObjectStore, Unavailable, lasting_refusal

log = logging.getLogger("portico")

# Between tries: soon at first (a database restarting is back within a second or two), then
# every couple of seconds.
RETRY_DELAYS = (0.25, 0.5, 1.0, 2.0)
SAY_EVERY_SECONDS = 5.0


async def open_store(settings: Settings, **options: Any) -> ObjectStore:
    """The store of ``settings``, opened once the database answers; Unavailable if it has not
    within the wait (its detail then says for how long it was tried)."""
    url = settings.effective_database_url
    wait = 0.0 if make_url(url).get_backend_name() == "sqlite" else settings.database_wait_seconds
    started = time.monotonic()
    said_at = -SAY_EVERY_SECONDS
    attempt = 0
    while True:
        try:
            return await asyncio.to_thread(ObjectStore.open, url, **options)
        except Unavailable as exc:
            waited = time.monotonic() - started
            if not wait or lasting_refusal(exc):
                raise
            if waited >= wait:
                raise Unavailable(
                    exc.message,
                    detail=f"{_first_line(exc)}; tried for {wait:g} s "
                    "(PORTICO_DATABASE_WAIT_SECONDS)",
                ) from exc
            if waited - said_at >= SAY_EVERY_SECONDS:
                said_at = waited
                log.warning(
                    "the database %s does not answer (%s); trying again for up to %.0f s more "
                    "(PORTICO_DATABASE_WAIT_SECONDS)",
                    make_url(url).render_as_string(hide_password=True),
                    _first_line(exc),
                    wait - waited,
                )
            delay = RETRY_DELAYS[min(attempt, len(RETRY_DELAYS) - 1)]
            attempt += 1
            await asyncio.sleep(min(delay, max(0.0, wait - waited)))


def _first_line(error: Unavailable) -> str:
    said = (error.detail or error.message).strip()
    return said.splitlines()[0][:200] if said else error.message
