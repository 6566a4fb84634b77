"""The assembled server's working parts that know several rooms: running it (`serving`: uvicorn
and the grpc.aio server in one event loop per worker, signals), the shared listening ports, TLS,
the leader's background jobs and idempotency keys kept in the store.

Imported only by `app.main` and the command line."""
