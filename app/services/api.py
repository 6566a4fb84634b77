"""What an API package registers with the server: its servicers and background work as the
settings build them, who may call it, and what its request fields may hold.

Each package says it once, in its own ``api.py`` (``API = Api(...)``); the server's catalog
(:mod:`app.catalog`) lists the packages, and nothing else names an API.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from app.calls.access import AccessRules
from app.rules.rule_book import RuleBook
from app.settings.config import Settings
from app.store import ObjectStore

# A background loop: run on the leader (or on every replica) and run again if it returns.
Job = Callable[[], Awaitable[None]]


@dataclass
class ApiSystem:
    """One API as a server runs it."""

    # grpc.aio servicers, each bound to its service by the generated class it derives from.
    servicers: list[object] = field(default_factory=list)
    jobs: list[Job] = field(default_factory=list)  # on the leader only
    replica_jobs: list[Job] = field(default_factory=list)  # on every replica


@dataclass(frozen=True)
class Api:
    """One API package's registration."""

    name: str  # its package, as logs and the docs name it
    build: Callable[[ObjectStore, Settings], ApiSystem]
    access: AccessRules = field(default_factory=AccessRules)
    rules: RuleBook = field(default_factory=RuleBook)
