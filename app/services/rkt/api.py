"""The container runtime's read-only API as the server runs it: the scheduler's instances seen
as rkt pods."""

from __future__ import annotations

from app.calls.access import AccessRules
from app.services.api import Api, ApiSystem
from app.services.rkt.field_rules import RULES
from app.services.rkt.service import RuntimeService, global_flags
from app.settings.config import Settings
from app.store import ObjectStore


def rkt_system(store: ObjectStore, settings: Settings) -> ApiSystem:
    """``v1alpha.PublicAPI`` over the scheduler's instances."""
    return ApiSystem(
        servicers=[
            RuntimeService(
                store,
                global_flags(settings.tls),
                settings.sim_step_seconds,
                settings.image_retention_seconds,
            )
        ]
    )


# A node agent follows its own node's pods (the servicer shows a node account its node only).
API = Api(
    "rkt",
    rkt_system,
    access=AccessRules(node_services=frozenset({"v1alpha.PublicAPI"})),
    rules=RULES,
)
