"""The `portico` command line: `serve`, `proxy`, `gen`, `users`, `login`, `call`, `node-agent`.

Clients of a running Portico (`client`, `client_calls`) know descriptors only, never a domain;
the commands that start a server hand their settings to `app.main` and `app.server`."""
