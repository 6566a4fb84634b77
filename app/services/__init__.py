"""One package per API (`kaas`, `koor`, `kudo`, `rkt`, `edge`): plain grpc.aio servicers and their
domain, keeping state in `app.store`. They cannot tell which transport called them: no gateway,
gRPC server or web framework import here."""
