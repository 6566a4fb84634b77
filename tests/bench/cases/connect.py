"""(f) and (g): the RPC of (a) over Connect unary, with JSON and with binary protobuf."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.bench.cases import Bench, Case

# Connect unary: a POST of the whole request message (empty here) in the codec's content type.
LUA = """
wrk.method = "POST"
wrk.body = BODY
wrk.headers["Content-Type"] = CONTENT_TYPE
"""
PATH = "/api/cnct.kaas.api.Cluster/GetVersionInformation"


def _connect(content_type: str, body: str) -> Callable[[Bench], dict[str, Any]]:
    script = LUA.replace("CONTENT_TYPE", json.dumps(content_type)).replace("BODY", json.dumps(body))
    return lambda bench: bench.wrk(PATH, script)


CASES = [
    Case("f_connect_json", "(f) Connect unary JSON, RPC of (a)", "main",
         _connect("application/json", "{}")),
    Case("g_connect_proto", "(g) Connect unary binary, RPC of (a)", "main",
         _connect("application/proto", "")),
]  # fmt: skip
