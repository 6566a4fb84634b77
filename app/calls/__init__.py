"""The vocabulary of a call that auth and the services share: who is calling (`callers`), how a
call is refused (`refusals`), idempotency keys kept in the store, shared in-flight work and
stream positions.

Neutral ground: imports no transport, service or auth."""
