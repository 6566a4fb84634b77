"""Settings: `config` reads every `PORTICO_*` variable once and checks it with `setting_rules`;
`limits` holds every bound on what one request may cost.

Imports nothing of Portico's rooms: every room may read it."""
