"""HTTP plumbing under every flow, whichever server runs it: swept deadlines for slow bodies,
streamed responses with keepalives and final frames, reply compression and request decoding
(the connections themselves are the server's: app/server)."""
