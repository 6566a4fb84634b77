"""HTTP connection plumbing under every flow: connections a slow client cannot hold open,
replies written in batches, streamed responses with keepalives and final frames."""
