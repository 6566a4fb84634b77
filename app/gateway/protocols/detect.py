"""Which protocol a request to an RPC's path speaks: REST, Connect, gRPC-Web or native gRPC.

Every RPC has the canonical path ``/package.Service/Method``, and the same path below the RPC
prefix (``/api`` by default, as connect-go servers were mounted). There:

- ``application/grpc-web*`` is gRPC-Web; ``application/grpc`` (``+proto``, ``+json``) is
  native gRPC; each (and Connect, by its header or content types) also answers a method nobody
  serves (UNIMPLEMENTED, "Method not found", as a gRPC server does);
- below the prefix, everything else is Connect;
- on the bare canonical path, Connect's own content types (``application/proto``,
  ``application/connect+*``), a ``Connect-Protocol-Version`` header, or a ``GET`` of a method
  without side effects is Connect; a plain JSON ``POST`` stays the REST canonical route, whose
  JSON and errors are REST's.

Any other path goes to the REST flow unchanged.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from app.gateway.codec.json_mapping import JsonOptions
from app.gateway.codec.transcoding import Transcoder
from app.gateway.codec.wire_codecs import JsonCodec, ProtoCodec
from app.gateway.http_rules import BindingPlan
from app.gateway.protocols.connect import ConnectFlow
from app.gateway.protocols.grpc_web import CONTENT_TYPE_PREFIX, GrpcWebFlow
from app.gateway.protocols.native_grpc import NativeGrpcFlow, is_native_grpc
from app.gateway.stages import Stages

_GRPC_WEB = CONTENT_TYPE_PREFIX.encode()
_CONNECT_ONLY = (b"application/proto", b"application/connect+")


class ProtocolSwitch:
    """ASGI app: RPC paths to the flow of their protocol, everything else to ``rest``."""

    def __init__(self, stages: Stages, rest: ASGIApp, prefix: str) -> None:
        self.rest = rest
        self._canonical = {
            plan.method.grpc_path: plan for plan in stages.routes.plans if plan.template is None
        }
        self._prefixed = {prefix + path: plan for path, plan in self._canonical.items()}
        # Connect and gRPC-Web JSON names fields as protojson does, whatever REST emits.
        options = JsonOptions(proto_names=False, ignore_unknown=stages.options.json.ignore_unknown)
        codec = JsonCodec(Transcoder(options))
        # Binary requests pass the gRPC port's checks; enum numbers as unknown fields are.
        proto = ProtoCodec(strict=not options.ignore_unknown)
        self.connect = ConnectFlow(stages, proto, codec)
        self.grpc_web = GrpcWebFlow(stages, proto, codec)
        self.grpc = NativeGrpcFlow(stages, proto, codec)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"]
        plan = self._canonical.get(path)
        prefixed = False
        if plan is None:
            plan = self._prefixed.get(path)
            if plan is None:
                await self._no_rpc(scope, receive, send)
                return
            prefixed = True
        # By name, as the flows read them too (the last of a repeated header counts).
        headers = dict(scope["headers"])
        content_type = headers.get(b"content-type", b"").lower()
        if is_native_grpc(content_type):
            await self.grpc(plan, scope, headers, receive, send)
        elif content_type.startswith(_GRPC_WEB):
            await self.grpc_web(plan, scope, headers, receive, send)
        elif (
            prefixed
            or b"connect-protocol-version" in headers
            or content_type.startswith(_CONNECT_ONLY)
            or _get(scope, plan)
        ):
            await self.connect(plan, scope, headers, receive, send)
        else:
            await self.rest(scope, receive, send)

    async def _no_rpc(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A path no RPC has: REST's routes decide, but an RPC client hears its protocol's
        answer."""
        path = scope["path"]
        if scope["method"] == "POST" and path.count("/") == 2:  # like /package.Service/Method
            headers = dict(scope["headers"])
            content_type = headers.get(b"content-type", b"").lower()
            if is_native_grpc(content_type):
                await self.grpc.unmatched(path, headers, send)
                return
            if content_type.startswith(_GRPC_WEB):
                await self.grpc_web.unmatched(path, headers, send)
                return
            if b"connect-protocol-version" in headers or content_type.startswith(_CONNECT_ONLY):
                await self.connect.unmatched(path, headers, send)
                return
        await self.rest(scope, receive, send)


def _get(scope: Scope, plan: BindingPlan) -> bool:
    """A GET of a method without side effects: Connect's cacheable unary call."""
    return scope["method"] == "GET" and plan.method.side_effect_free
