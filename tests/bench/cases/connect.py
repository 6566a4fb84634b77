"""(f) and (g): the RPC of (a) over Connect unary, with JSON and with binary protobuf. Their
target is a ratio to (a), so they are measured in turns with it (see ``compared``)."""

from __future__ import annotations

import json

# Connect unary: a POST of the whole request message (empty here) in the codec's content type.
LUA = """
wrk.method = "POST"
wrk.body = BODY
wrk.headers["Content-Type"] = CONTENT_TYPE
"""
PATH = "/api/cnct.kaas.api.Cluster/GetVersionInformation"
# key: (label, content type, body)
ROWS = {
    "f_connect_json": ("(f) Connect unary JSON, RPC of (a)", "application/json", "{}"),
    "g_connect_proto": ("(g) Connect unary binary, RPC of (a)", "application/proto", ""),
}


# (a) as a GET carrying the two headers (g)'s POST adds: every header costs each request its
# parsing (in uvicorn and in the gateway), so (g) against this row compares the protocols' paths.
SAME_HEADERS_LUA = """
wrk.headers["Content-Type"] = "application/proto"
wrk.headers["Content-Length"] = "0"
"""


def script(content_type: str, body: str) -> str:
    """The wrk script of a Connect unary call with ``body`` in ``content_type``."""
    return LUA.replace("CONTENT_TYPE", json.dumps(content_type)).replace("BODY", json.dumps(body))
