"""``ExecApi``: run a command in an AppInst's container (simulated).

The request needs ``app_inst_key`` and a ``command``; the AppInst must exist (NOT_FOUND) and be
READY (FAILED_PRECONDITION naming its state); ``container_id`` must be one of its containers
(NOT_FOUND), and defaults to its first. The reply is the request with ``container_id`` filled in
and ``answer`` set to the simulated resource manager's WebRTC answer: a deterministic SDP-shaped
text naming the container and command, with a session id derived from the request (the same
request always gets the same answer). ``SendLocalRequest`` (upstream: forwarding to the replica
the CRM is connected to) answers the same way here, since every replica reads the same store.
"""

from __future__ import annotations

import hashlib

import grpc

import app.services.edge.kinds as k
from app.services.edge.records import load
from app.services.edge.references import not_found
from app.services.edge.validation import check_app_inst_key
from app.services.status import Rejected, Violations
from app.store import Reader
from gen.edgeproto import common_pb2, exec_pb2

Code = grpc.StatusCode


def simulated_answer(request: exec_pb2.ExecRequest, container: str) -> str:
    """The CRM's WebRTC answer for ``request`` on ``container``."""
    digest = hashlib.sha256(
        f"{k.key_string(request.app_inst_key)}|{container}|{request.command}|{request.offer}".encode()
    ).hexdigest()
    session = int(digest[:12], 16)
    return (
        f"v=0\r\no=portico-crm {session} 1 IN IP4 127.0.0.1\r\ns=exec {container}\r\n"
        f"a=x-portico-command:{request.command}\r\n"
    )


async def run_command(reader: Reader, request: exec_pb2.ExecRequest) -> exec_pb2.ExecRequest:
    """Check the target and answer the request."""
    found = Violations()
    check_app_inst_key(found, request.app_inst_key, "app_inst_key")
    found.check(bool(request.command.strip()), "command", "is required")
    if found:
        raise Rejected.invalid(found)
    inst = await load(reader, k.APP_INST, request.app_inst_key)
    if inst is None:
        raise not_found(k.APP_INST, request.app_inst_key, "app_inst_key")
    if inst.state != common_pb2.READY:
        raise Rejected(
            Code.FAILED_PRECONDITION,
            f"AppInst {k.key_string(request.app_inst_key)} is "
            f"{common_pb2.TrackedState.Name(inst.state)}; commands run once it is READY",
        )
    containers = list(inst.runtime_info.container_ids)
    container = request.container_id or (containers[0] if containers else "")
    if container not in containers:
        raise Rejected(
            Code.NOT_FOUND,
            f"container_id: AppInst {k.key_string(request.app_inst_key)} has no container "
            f"{container!r} (it has {', '.join(containers) or 'none'})",
        )
    reply = exec_pb2.ExecRequest()
    reply.CopyFrom(request)
    reply.container_id = container
    reply.answer = simulated_answer(request, container)
    return reply
