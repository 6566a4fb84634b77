"""Every server ``PORTICO_SERVER`` accepts has a backend, and every backend is a choice."""

from __future__ import annotations

from app.server.backends import BACKENDS, backend
from app.settings.config import SERVERS


def test_every_server_the_settings_accept_is_a_backend():
    assert set(BACKENDS) == set(SERVERS)
    for name in SERVERS:
        assert callable(backend(name))
