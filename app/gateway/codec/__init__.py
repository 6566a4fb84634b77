"""Messages <-> bytes: the proto3 JSON mapping (`json_mapping`, compiled per type in
`json_reader`/`json_writer`), query and path values (`text_fields`), request messages from HTTP
parts (`transcoding`), whole messages as protocols carry them (`wire_codecs`) and stream frames
(`streaming`). Knows no protocol and no HTTP server."""
