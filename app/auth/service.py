"""``services.auth.AuthService``: Login, Logout and CheckToken over the :class:`Gate`."""

from __future__ import annotations

import grpc
from google.protobuf import timestamp_pb2

from app.auth.gate import Gate
from app.calls.access import AccessRules
from app.calls.callers import call_request_id, current_caller
from app.calls.refusals import Rejected
from gen.resources.timestamp import timestamp_pb2 as portico_timestamp
from gen.services.auth import auth_pb2, auth_pb2_grpc

# Login and CheckToken are public; Logout needs the token it revokes, whatever its role.
ACCESS = AccessRules(
    public_methods=frozenset(
        {"services.auth.AuthService.Login", "services.auth.AuthService.CheckToken"}
    ),
    signed_in_methods=frozenset({"services.auth.AuthService.Logout"}),
)


class AuthService(auth_pb2_grpc.AuthServiceServicer):
    """The gate's RPCs; Login and CheckToken are public, Logout needs the token it revokes."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate

    async def Login(
        self, request: auth_pb2.LoginRequest, context: grpc.aio.ServicerContext
    ) -> auth_pb2.LoginResponse:
        try:
            client = self.gate.client_address(context.peer(), context.invocation_metadata() or ())
            token, claims = await self.gate.login(
                request.username, request.password, client, call_request_id(context)
            )
        except Rejected as rejected:
            await context.abort_with_status(rejected.status())
        expires = timestamp_pb2.Timestamp(seconds=claims.expires_at)
        return auth_pb2.LoginResponse(
            token=token,
            expires=portico_timestamp.Timestamp(timestamp=expires),
            account_id=claims.subject,
        )

    async def Logout(
        self, request: auth_pb2.LogoutRequest, context: grpc.aio.ServicerContext
    ) -> auth_pb2.LogoutResponse:
        caller = current_caller.get()
        if caller is None:  # the policy admits only signed-in callers; this guards a miswiring
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing bearer token")
        await self.gate.logout(caller)
        return auth_pb2.LogoutResponse(success=True)

    async def CheckToken(
        self, request: auth_pb2.CheckTokenRequest, context: grpc.aio.ServicerContext
    ) -> auth_pb2.CheckTokenResponse:
        return auth_pb2.CheckTokenResponse(success=await self.gate.check(request.token))
