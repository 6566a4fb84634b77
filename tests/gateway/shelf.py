"""The test proto (compiled at import into a temporary directory) and a servicer implementing it."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import google.api
import grpc
import grpc_tools
from google.protobuf import any_pb2, empty_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status
from grpc_tools import protoc

PROTO_ROOT = Path(__file__).parent / "protos"
PROTO_FILE = "portico/test/v1/shelf.proto"


def compile_test_proto(out_dir: Path) -> None:
    """Generate ``*_pb2.py`` and ``*_pb2_grpc.py`` for the test proto into ``out_dir``."""
    includes = [
        str(PROTO_ROOT),
        str(Path(grpc_tools.__file__).parent / "_proto"),
        str(Path(next(iter(google.api.__path__))).parent.parent),
    ]
    args = ["protoc", *(f"-I{i}" for i in includes)]
    args += [f"--python_out={out_dir}", f"--grpc_python_out={out_dir}", PROTO_FILE]
    if protoc.main(args) != 0:
        raise RuntimeError(f"protoc failed for {PROTO_FILE}")


# Generated per session, so nothing generated is committed and nothing can drift from the .proto.
_GEN_DIR = Path(tempfile.mkdtemp(prefix="portico-test-gen-"))
atexit.register(shutil.rmtree, _GEN_DIR, True)
compile_test_proto(_GEN_DIR)
sys.path.insert(0, str(_GEN_DIR))
pb = importlib.import_module("portico.test.v1.shelf_pb2")
pb_grpc = importlib.import_module("portico.test.v1.shelf_pb2_grpc")
SERVICE = "portico.test.v1.Shelf"


def bad_request_status(code: int, message: str) -> status_pb2.Status:
    """A Status carrying one BadRequest field violation on ``name``."""
    detail = any_pb2.Any()
    detail.Pack(
        error_details_pb2.BadRequest(
            field_violations=[
                error_details_pb2.BadRequest.FieldViolation(field="name", description="too short")
            ]
        )
    )
    return status_pb2.Status(code=code, message=message, details=[detail])


class ShelfServicer(pb_grpc.ShelfServicer):
    """Records what it was asked and answers predictably; it cannot see the transport."""

    def __init__(self) -> None:
        self.requests: list[Any] = []
        self.stream_cancelled = asyncio.Event()
        self.stream_done = False

    async def EchoThing(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        self.requests.append(request)
        return request

    async def GetThing(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        self.requests.append(request)
        return pb.Thing(name=request.name, kind=request.kind, tags=request.tags)

    async def UpdateThing(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        self.requests.append(request)
        return request.thing

    async def DeleteThing(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        self.requests.append(request)
        if request.name.endswith("/missing"):
            await context.abort(grpc.StatusCode.NOT_FOUND, f"thing {request.name} not found")
        return empty_pb2.Empty()

    async def CancelThing(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        self.requests.append(request)
        return pb.Thing(name=request.name, display_name=request.reason)

    async def ViewThing(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        self.requests.append(request)
        return pb.ThingView(thing=pb.Thing(name=request.name, size=7), etag="e1")

    async def Fail(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        if request.crash:
            raise RuntimeError("secret database password in this message")
        code = _code(request.code)
        if request.rich:
            status = bad_request_status(request.code, request.message)
            await context.abort_with_status(rpc_status.to_status(status))
        if request.via_set_code:
            context.set_code(code)
            context.set_details(request.message)
            return empty_pb2.Empty()
        await context.abort(code, request.message)

    async def InspectContext(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.send_initial_metadata([("x-initial", "yes")])
        context.set_trailing_metadata([("x-trailing", "done"), ("x-blob-bin", b"\x00\x01")])
        metadata = {
            key: value.hex() if isinstance(value, bytes) else value
            for key, value in context.invocation_metadata() or ()
        }
        remaining = context.time_remaining()
        return pb.ContextReport(
            metadata=metadata,
            peer=context.peer(),
            has_deadline=remaining is not None,
            time_remaining=remaining or 0.0,
        )

    async def ListThings(
        self, request: Any, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[Any]:
        try:
            for index in range(request.count):
                if request.fail and index == request.fail_after:
                    await context.abort(grpc.StatusCode.FAILED_PRECONDITION, f"stopped at {index}")
                if request.delay_ms:
                    await asyncio.sleep(request.delay_ms / 1000)
                yield pb.Thing(name=f"{request.parent}/things/{index}", count=index)
            self.stream_done = True
        except (asyncio.CancelledError, GeneratorExit):
            # Cancelled while sleeping, or closed at a yield: the caller ended the stream.
            self.stream_cancelled.set()
            raise

    async def CollectThings(self, request_iterator: Any, context: grpc.aio.ServicerContext) -> Any:
        names = [thing.name async for thing in request_iterator]
        return pb.ThingSummary(count=len(names), names=names)

    async def ChatThings(
        self, request_iterator: Any, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[Any]:
        async for thing in request_iterator:
            if thing.name == "fail":
                await context.abort(grpc.StatusCode.ABORTED, "asked to fail")
            yield pb.Thing(name=thing.name.upper())


def _code(number: int) -> grpc.StatusCode:
    return next(c for c in grpc.StatusCode if c.value[0] == number)


class WritingShelfServicer(ShelfServicer):
    """The same API in grpc.aio's other style: replies sent with ``context.write()`` by handlers
    that return, client streams taken with ``context.read()``."""

    async def ListThings(self, request: Any, context: grpc.aio.ServicerContext) -> None:  # type: ignore[override]
        async with contextlib.aclosing(super().ListThings(request, context)) as things:
            async for thing in things:
                await context.write(thing)

    async def CollectThings(self, request_iterator: Any, context: grpc.aio.ServicerContext) -> Any:
        names = []
        while (thing := await context.read()) is not grpc.aio.EOF:
            names.append(thing.name)
        return pb.ThingSummary(count=len(names), names=names)

    async def ChatThings(self, request_iterator: Any, context: grpc.aio.ServicerContext) -> None:  # type: ignore[override]
        while (thing := await context.read()) is not grpc.aio.EOF:
            if thing.name == "fail":
                await context.abort(grpc.StatusCode.ABORTED, "asked to fail")
            await context.write(pb.Thing(name=thing.name.upper()))


class RevisionedShelf(ShelfServicer):
    """Names its reply's revision in the ``etag`` metadata, as the store-backed servicers do."""

    async def GetThing(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.send_initial_metadata((("etag", '"42"'),))
        return await super().GetThing(request, context)
