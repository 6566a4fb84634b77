"""The vocabulary of a call that auth and the services share: who is calling (`callers`), how a
call is refused (`refusals`), idempotency keys kept in the store, shared in-flight work and
stream positions; and the close names a refusal suggests (`close_names`, for the gateway and the
command line alike).

Neutral ground: imports no transport, service or auth."""
