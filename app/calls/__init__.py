"""The vocabulary of a call that auth and the services share: who is calling (`callers`), how a
call is refused (`refusals`), which calls need which role (`access`), shared in-flight work
(`shared_calls`) and stream positions (`stream_position`); and the close names a refusal
suggests (`close_names`, for the gateway and the command line alike).

Neutral ground: imports no transport, service or auth."""
