"""The vocabulary of a call that auth and the services share: who is calling (`callers`), how a
call is refused (`refusals`), which calls need which role (`access`), shared in-flight work
(`shared_calls`) and stream positions (`stream_position`).

Neutral ground: imports no transport, service or auth."""
