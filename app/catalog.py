"""Portico's own APIs: the one list of them, and what the server derives from all of them.

Each API package registers itself in its ``api.py`` (:class:`~app.services.api.Api`: how its
servicers and jobs are built, who may call it, what its request fields may hold); this module
lists the packages. The login (``services.auth``) is the gate's own API and comes from
:mod:`app.auth`. ``portico serve`` (:mod:`app.main`) and ``portico gen`` read the catalog;
``portico proxy`` never does, so it loads none of these APIs.
"""

from __future__ import annotations

from typing import Any

import gen
from app import __version__
from app.auth import field_rules as login_rules
from app.auth.policy import Policy
from app.auth.policy_file import PolicyFile
from app.auth.service import ACCESS as LOGIN_ACCESS
from app.calls.access import AccessRules
from app.gateway.codec.json_mapping import JsonOptions
from app.gateway.openapi.document import openapi_document
from app.gateway.registry import Method, Registry
from app.rules.rule_book import RuleBook
from app.services.api import Api
from app.services.edge.api import API as EDGE
from app.services.kaas.api import API as KAAS
from app.services.koor.api import API as KOOR
from app.services.kudo.api import API as KUDO
from app.services.rkt.api import API as RKT

APIS: tuple[Api, ...] = (KAAS, KOOR, KUDO, RKT, EDGE)

ACCESS = AccessRules.combined((LOGIN_ACCESS, *(api.access for api in APIS)))
RULES = RuleBook.combined((login_rules.RULES, *(api.rules for api in APIS)))
# The generated modules' FileDescriptorSet, with the protos' comments.
DESCRIPTOR_SET = gen.DESCRIPTOR_SET


def registry() -> Registry:
    """Every service of the generated modules: the five APIs and the login."""
    return Registry.from_package("gen")


def policy(served: Registry, file: PolicyFile | None = None) -> Policy:
    """Who may call what of ``served`` (with a policy file, the roles it names; it is checked
    against ``served``); every service and method an API's rules name must be one it serves
    (a misspelt name would leave the method it meant under the name rule)."""
    known = {s.full_name for s in served.services} | {m.full_name for m in served}
    unknown = sorted(ACCESS.names() - known)
    if unknown:
        raise ValueError(f"access rules name what is not served: {', '.join(unknown)}")
    if file is not None:
        file.check(m.full_name for m in served)
    return Policy(ACCESS, file)


def portico_openapi(
    served: Registry | None = None, json_options: JsonOptions | None = None
) -> dict[str, Any]:
    """Portico's OpenAPI document: its public RPCs, its field rules, the protos' comments."""
    served = served or registry()
    public = policy(served)

    def is_public(method: Method) -> bool:
        return public.is_public(method.full_name)

    return openapi_document(
        served,
        json_options or JsonOptions(),
        title="Portico",
        version=__version__,
        public_methods=is_public,
        descriptor_set=DESCRIPTOR_SET,
        rules=RULES,
    )
