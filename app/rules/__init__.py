"""What request fields may hold: one table (`field_rules`, of `field_rule` rules), checked
before every servicer (`field_checks`) and published in the OpenAPI document; its regexes read
alike in Python and JSON Schema (`text_patterns`, and `update_fields` for an edge Update's
``fields``).

Imports nothing of Portico's rooms: the services, the gate and the OpenAPI generator read it."""
